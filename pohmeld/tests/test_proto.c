// SPDX-License-Identifier: MIT
/*
 * Encode/decode round trips for every message: requests encoded by
 * libpohmel are decoded by pohmeld's proto.c; replies encoded as pohmeld
 * does are decoded by libpohmel (over a socketpair). Plus the framing
 * and content errors proto.c must catch.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include "../pohmeld.h"
#include "../client/libpohmel.h"
#include "tap.h"

struct server srv;
static uint8_t raw[POHMEL_HDR_SIZE + POHMEL_MAX_MSG + 64];
static struct msg m;

static int parse_flags(uint16_t op, const uint8_t *body, uint32_t blen,
		       uint16_t flags, uint32_t ngroups)
{
	uint32_t g = ngroups ? pohmel_groups_size(ngroups) : 0, i;
	struct whdr h = { .len = g + blen, .op = op, .flags = flags,
			  .tag = 7, .seq = 99, .uid = 1000, .gid = 100 };

	if (ngroups)
		h.flags |= POHMEL_HF_GROUPS;
	whdr_put(raw, &h);
	memset(raw + POHMEL_HDR_SIZE, 0, g);
	if (ngroups) {
		put32(raw + POHMEL_HDR_SIZE, ngroups);
		for (i = 0; i < ngroups && i < POHMEL_MAX_GROUPS; i++)
			put32(raw + POHMEL_HDR_SIZE + 4 + 4 * i, 500 + i);
	}
	memmove(raw + POHMEL_HDR_SIZE + g, body, blen);
	return proto_parse(&m, raw, POHMEL_HDR_SIZE + g + blen);
}

static int parse(uint16_t op, const uint8_t *body, uint32_t blen)
{
	return parse_flags(op, body, blen, 0, 0);
}

static bool oid_eq(const struct woid *a, uint64_t id, uint64_t gen)
{
	return a->id == id && a->gen == gen;
}

/* Every fixed-size body one byte short or long is a protocol error. */
static void framing(uint16_t op, const uint8_t *body, uint32_t blen,
		    const char *name)
{
	uint8_t b[512];

	memcpy(b, body, blen);
	CHECK(parse(op, b, blen - 1) == PROTO_DROP, "%s: short body drops",
	      name);
	b[blen] = 0;
	CHECK(parse(op, b, blen + 1) == PROTO_DROP, "%s: long body drops",
	      name);
}

static void requests(void)
{
	struct woid o = { 0x1122334455667788ULL, 0x99aabbccddeeff00ULL };
	struct woid o2 = { 42, 43 };
	struct wtime at = { -5, 999999999 }, mt = { 5000000000LL, 1 };
	uint8_t b[2048], uuid[16], nonce[32];
	char longname[300];
	uint32_t n;

	memset(uuid, 0x5a, 16);
	memset(nonce, 0xa5, 32);
	n = pc_enc_hello(b, POHMEL_FEAT_AUTH, 65536, uuid, 77, nonce);
	CHECK(parse(POHMEL_OP_HELLO, b, n) == 0 && m.blen == 112 &&
	      get32(m.body) == POHMEL_MAGIC && get64(m.body + 40) == 77 &&
	      !memcmp(m.body + 24, uuid, 16), "HELLO round trip");
	framing(POHMEL_OP_HELLO, b, n, "HELLO");
	memset(b, 1, 32);
	CHECK(parse(POHMEL_OP_AUTH, b, 32) == 0 && m.blen == 32 &&
	      m.hdr.seq == 99, "AUTH round trip");
	framing(POHMEL_OP_AUTH, b, 32, "AUTH");
	CHECK(parse(POHMEL_OP_PING, b, 0) == 0, "PING");
	CHECK(parse(POHMEL_OP_STATS, b, 0) == 0, "STATS");
	CHECK(parse(POHMEL_OP_BYE, b, 0) == 0, "BYE");
	CHECK(parse(POHMEL_OP_PING, b, 1) == PROTO_DROP, "PING with body drops");
	memset(b, 2, POHMEL_OID_SIZE * (POHMEL_RELEASE_MAX + 1));
	CHECK(parse(POHMEL_OP_RELEASE, b, POHMEL_OID_SIZE) == 0 && m.count == 1,
	      "RELEASE of one oid");
	CHECK(parse(POHMEL_OP_RELEASE, b, POHMEL_OID_SIZE * POHMEL_RELEASE_MAX) == 0 &&
	      m.count == POHMEL_RELEASE_MAX, "RELEASE of POHMEL_RELEASE_MAX oids");
	CHECK(parse(POHMEL_OP_RELEASE, b, 0) == PROTO_DROP &&
	      parse(POHMEL_OP_RELEASE, b, POHMEL_OID_SIZE + 1) == PROTO_DROP &&
	      parse(POHMEL_OP_RELEASE, b, POHMEL_OID_SIZE - 1) == PROTO_DROP &&
	      parse(POHMEL_OP_RELEASE, b, POHMEL_OID_SIZE * (POHMEL_RELEASE_MAX + 1)) == PROTO_DROP,
	      "RELEASE: empty, ragged or too many oids drops");

	n = pc_enc_oid(b, &o);
	CHECK(parse(POHMEL_OP_GETATTR, b, n) == 0 &&
	      oid_eq(&m.oid, o.id, o.gen) && m.hdr.uid == 1000 &&
	      m.cr.uid == 1000 && m.cr.gid == 100 && m.hdr.tag == 7,
	      "GETATTR round trip");
	framing(POHMEL_OP_GETATTR, b, n, "GETATTR");
	CHECK(parse(POHMEL_OP_READLINK, b, n) == 0 &&
	      oid_eq(&m.oid, o.id, o.gen), "READLINK round trip");
	CHECK(parse(POHMEL_OP_STATFS, b, n) == 0 &&
	      oid_eq(&m.oid, o.id, o.gen), "STATFS round trip");
	CHECK(parse_flags(POHMEL_OP_GETATTR, b, n, 0, 3) == 0 &&
	      m.cr.ngroups == 3 && m.cr.groups[0] == 500 &&
	      m.cr.groups[2] == 502 && oid_eq(&m.oid, o.id, o.gen),
	      "groups block round trip");
	CHECK(parse_flags(POHMEL_OP_GETATTR, b, n, 0, 33) == PROTO_DROP,
	      "33 groups drop");

	for (int op = POHMEL_OP_LOOKUP; op; op = op == POHMEL_OP_LOOKUP ?
	     POHMEL_OP_UNLINK : op == POHMEL_OP_UNLINK ? POHMEL_OP_RMDIR : 0) {
		n = pc_enc_name_req(b, &o, "hello.txt", 9);
		CHECK(parse((uint16_t)op, b, n) == 0 &&
		      oid_eq(&m.oid, o.id, o.gen) &&
		      !strcmp(m.name, "hello.txt"), "%s round trip",
		      op_name((unsigned)op));
		CHECK(parse((uint16_t)op, b, n - 1) == PROTO_DROP,
		      "%s: name longer than body drops", op_name((unsigned)op));
	}
	{
		const uint64_t hs[2] = { 0x1122334455667788ULL, 42 };
		const struct woid obj = { 77, 5 };

		n = pc_enc_remove(b, &o, "gone", 4, POHMEL_REMOVE_CLOSE |
				  POHMEL_REMOVE_RELEASE, &obj, hs, 2);
		CHECK(n == POHMEL_NAME_REQ_SIZE + POHMEL_REMOVE_EXT_SIZE + 16 + 4 &&
		      parse(POHMEL_OP_UNLINK, b, n) == 0 &&
		      oid_eq(&m.oid, o.id, o.gen) && oid_eq(&m.oid2, 77, 5) &&
		      m.count == 2 && m.dlen == 16 &&
		      get64(m.data) == hs[0] && get64(m.data + 8) == 42 &&
		      !strcmp(m.name, "gone"),
		      "UNLINK with CLOSE and RELEASE (1.4) round trip");
		CHECK(parse(POHMEL_OP_UNLINK, b, n - 1) == PROTO_DROP &&
		      parse(POHMEL_OP_UNLINK, b, n + 8) == PROTO_DROP,
		      "... a body 1 short or 8 long drops");
		n = pc_enc_remove(b, &o, "d", 1, POHMEL_REMOVE_RELEASE, &obj,
				  NULL, 0);
		CHECK(parse(POHMEL_OP_RMDIR, b, n) == 0 &&
		      oid_eq(&m.oid2, 77, 5) && m.count == 0 &&
		      !strcmp(m.name, "d"), "RMDIR with RELEASE round trip");
		put16(b + 18, 1);	/* a handle, but no CLOSE */
		CHECK(parse(POHMEL_OP_RMDIR, b, n) == EINVAL,
		      "handles without CLOSE: EINVAL");
		n = pc_enc_remove(b, &o, "d", 1, POHMEL_REMOVE_CLOSE, &obj, hs,
				  2);
		put16(b + 18, POHMEL_REMOVE_HANDLES_MAX + 1);
		CHECK(parse(POHMEL_OP_UNLINK, b, n) == EINVAL,
		      "more than %d handles: EINVAL", POHMEL_REMOVE_HANDLES_MAX);
		n = pc_enc_remove(b, &o, "d", 1, 0x80, &obj, NULL, 0);
		CHECK(parse(POHMEL_OP_UNLINK, b, n) == EINVAL,
		      "an unknown removal flag: EINVAL");
		n = pc_enc_remove(b, &o, "d", 1, POHMEL_REMOVE_RELEASE, &obj,
				  NULL, 0);
		CHECK(parse(POHMEL_OP_LOOKUP, b, n) == EINVAL,
		      "LOOKUP with a removal flag: EINVAL");
	}
	n = pc_enc_name_req(b, &o, "a/b", 3);
	CHECK(parse(POHMEL_OP_LOOKUP, b, n) == EINVAL, "name with / EINVAL");
	n = pc_enc_name_req(b, &o, "a\0b", 3);
	CHECK(parse(POHMEL_OP_LOOKUP, b, n) == EINVAL, "name with NUL EINVAL");
	n = pc_enc_name_req(b, &o, ".", 1);
	CHECK(parse(POHMEL_OP_LOOKUP, b, n) == EINVAL, "name . EINVAL");
	n = pc_enc_name_req(b, &o, "..", 2);
	CHECK(parse(POHMEL_OP_LOOKUP, b, n) == EINVAL, "name .. EINVAL");
	n = pc_enc_name_req(b, &o, "", 0);
	CHECK(parse(POHMEL_OP_LOOKUP, b, n) == EINVAL, "empty name EINVAL");
	memset(longname, 'x', 256);
	n = pc_enc_name_req(b, &o, longname, 256);
	CHECK(parse(POHMEL_OP_LOOKUP, b, n) == ENAMETOOLONG,
	      "256-byte name ENAMETOOLONG");
	n = pc_enc_name_req(b, &o, longname, 255);
	CHECK(parse(POHMEL_OP_LOOKUP, b, n) == 0, "255-byte name ok");

	n = pc_enc_setattr(b, &o, POHMEL_SET_ALL, 04755, 1, 2, 1ULL << 40,
			   &at, &mt);
	CHECK(parse(POHMEL_OP_SETATTR, b, n) == 0 && m.valid == 0xff &&
	      m.mode == 04755 && m.uid == 1 && m.gid == 2 &&
	      m.size == 1ULL << 40 && m.atime.sec == -5 &&
	      m.atime.nsec == 999999999 && m.mtime.sec == 5000000000LL &&
	      m.mtime.nsec == 1, "SETATTR round trip (64-bit, negative secs)");
	framing(POHMEL_OP_SETATTR, b, n, "SETATTR");
	n = pc_enc_setattr(b, &o, 0x200, 0, 0, 0, 0, NULL, NULL);
	CHECK(parse(POHMEL_OP_SETATTR, b, n) == EOPNOTSUPP,
	      "SETATTR unknown valid bit EOPNOTSUPP");
	/* 1.1: SET_HANDLE brings an 8-byte handle after the body */
	n = pc_enc_setattr(b, &o, POHMEL_SET_SIZE | POHMEL_SET_HANDLE, 0, 0, 0,
			   5, NULL, NULL);
	put64(b + n, 0x1234);
	CHECK(parse(POHMEL_OP_SETATTR, b, n) == PROTO_DROP,
	      "SETATTR SET_HANDLE without the handle drops");
	CHECK(parse(POHMEL_OP_SETATTR, b, n + POHMEL_SETATTR_FH_SIZE) == 0 &&
	      m.handle == 0x1234 && m.size == 5,
	      "SETATTR SET_HANDLE round trip");
	framing(POHMEL_OP_SETATTR, b, n + POHMEL_SETATTR_FH_SIZE,
		"SETATTR SET_HANDLE");
	n = pc_enc_setattr(b, &o, POHMEL_SET_MODE | POHMEL_SET_HANDLE, 0, 0, 0,
			   0, NULL, NULL);
	put64(b + n, 0x1234);
	CHECK(parse(POHMEL_OP_SETATTR, b, n + POHMEL_SETATTR_FH_SIZE) == EINVAL,
	      "SETATTR SET_HANDLE without SET_SIZE EINVAL");
	at.nsec = 1000000000;
	n = pc_enc_setattr(b, &o, POHMEL_SET_ATIME, 0, 0, 0, 0, &at, NULL);
	CHECK(parse(POHMEL_OP_SETATTR, b, n) == EINVAL, "nsec >= 1e9 EINVAL");

	n = pc_enc_readdir(b, &o, 0xfedcba9876543210ULL >> 1, 4096);
	CHECK(parse(POHMEL_OP_READDIR, b, n) == 0 &&
	      m.cookie == 0xfedcba9876543210ULL >> 1 && m.count == 4096,
	      "READDIR round trip");
	framing(POHMEL_OP_READDIR, b, n, "READDIR");

	n = pc_enc_create(b, &o, 0100644, 0, POHMEL_CREATE_EXCL, 5, 6, "f", 1,
			  NULL, 0);
	CHECK(parse(POHMEL_OP_CREATE, b, n) == 0 && m.mode == 0100644 &&
	      m.flags == 1 && m.uid == 5 && m.gid == 6 &&
	      !strcmp(m.name, "f"), "CREATE round trip");
	n = pc_enc_create(b, &o, 2, 0, 0x10, 5, 6, "f", 1, NULL, 0);
	CHECK(parse(POHMEL_OP_CREATE, b, n) == EOPNOTSUPP,
	      "CREATE unknown flag EOPNOTSUPP");
	n = pc_enc_create(b, &o, 040755, 0, 0, 0, 0, "d", 1, NULL, 0);
	CHECK(parse(POHMEL_OP_MKDIR, b, n) == 0 && m.mode == 040755,
	      "MKDIR round trip");
	n = pc_enc_create(b, &o, 020644, wire_encode_dev(259, 70000), 0, 0,
			  0, "c", 1, NULL, 0);
	CHECK(parse(POHMEL_OP_MKNOD, b, n) == 0 &&
	      wire_dev_major(m.rdev) == 259 && wire_dev_minor(m.rdev) == 70000,
	      "MKNOD round trip (big minor)");
	n = pc_enc_create(b, &o, 0777, 0, 0, 0, 0, "l", 1, "../t", 4);
	CHECK(parse(POHMEL_OP_SYMLINK, b, n) == 0 && m.dlen == 4 &&
	      !memcmp(m.data, "../t", 4), "SYMLINK round trip");
	CHECK(parse(POHMEL_OP_SYMLINK, b, n - 1) == PROTO_DROP,
	      "SYMLINK short target drops");
	n = pc_enc_create(b, &o, 0777, 0, 0, 0, 0, "l", 1, NULL, 0);
	CHECK(parse(POHMEL_OP_SYMLINK, b, n) == EINVAL,
	      "SYMLINK empty target EINVAL");
	n = pc_enc_create(b, &o, 0644, 0, 0, 0, 0, "l", 1, "x", 1);
	CHECK(parse(POHMEL_OP_CREATE, b, n) == EINVAL,
	      "CREATE with a target EINVAL");

	n = pc_enc_link(b, &o, &o2, "ln", 2);
	CHECK(parse(POHMEL_OP_LINK, b, n) == 0 &&
	      oid_eq(&m.oid, o.id, o.gen) && oid_eq(&m.oid2, 42, 43) &&
	      !strcmp(m.name, "ln"), "LINK round trip");
	n = pc_enc_rename(b, &o, "old", 3, &o2, "new", 3,
			  POHMEL_RENAME_NOREPLACE);
	CHECK(parse(POHMEL_OP_RENAME, b, n) == 0 && !strcmp(m.name, "old") &&
	      !strcmp(m.name2, "new") && m.flags == 1 &&
	      oid_eq(&m.oid2, 42, 43), "RENAME round trip");
	CHECK(parse(POHMEL_OP_RENAME, b, n + 1) == PROTO_DROP,
	      "RENAME long drops");
	n = pc_enc_rename(b, &o, "old", 3, &o2, "..", 2, 0);
	CHECK(parse(POHMEL_OP_RENAME, b, n) == EINVAL, "RENAME to .. EINVAL");
	n = pc_enc_rename(b, &o, "old", 3, &o2, "n", 1, 4);
	CHECK(parse(POHMEL_OP_RENAME, b, n) == EOPNOTSUPP,
	      "RENAME unknown flag EOPNOTSUPP");
	n = pc_enc_rename(b, &o, "old", 3, &o2, "n", 1, 3);
	CHECK(parse(POHMEL_OP_RENAME, b, n) == EINVAL,
	      "RENAME NOREPLACE|EXCHANGE EINVAL");

	n = pc_enc_open(b, &o, POHMEL_OPEN_ALL);
	CHECK(parse(POHMEL_OP_OPEN, b, n) == 0 && m.flags == 3,
	      "OPEN round trip");
	framing(POHMEL_OP_OPEN, b, n, "OPEN");
	n = pc_enc_open(b, &o, POHMEL_OPEN_WRITE | POHMEL_OPEN_CREATED);
	CHECK(parse(POHMEL_OP_OPEN, b, n) == 0 && m.flags == 6,
	      "OPEN CREATED (1.1) accepted");
	n = pc_enc_open(b, &o, 8);
	CHECK(parse(POHMEL_OP_OPEN, b, n) == EOPNOTSUPP, "OPEN bad flag");
	n = pc_enc_handle(b, &o, 0xabcdef);
	CHECK(parse(POHMEL_OP_CLOSE, b, n) == 0 && m.handle == 0xabcdef,
	      "CLOSE round trip");
	framing(POHMEL_OP_CLOSE, b, n, "CLOSE");

	n = pc_enc_io(b, &o, 9, 1ULL << 40, 65536, 0, NULL);
	CHECK(parse(POHMEL_OP_READ, b, n) == 0 && m.handle == 9 &&
	      m.offset == 1ULL << 40 && m.count == 65536, "READ round trip");
	framing(POHMEL_OP_READ, b, n, "READ");
	n = pc_enc_io(b, &o, 0, 0, POHMEL_MAX_DATA + 1, 0, NULL);
	CHECK(parse(POHMEL_OP_READ, b, n) == EINVAL, "READ > 1 MiB EINVAL");
	n = pc_enc_io(b, &o, 0, 5, 3, POHMEL_IO_STABLE, "abc");
	CHECK(parse(POHMEL_OP_WRITE, b, n) == 0 && m.dlen == 3 &&
	      !memcmp(m.data, "abc", 3) && m.flags == 1 && m.offset == 5,
	      "WRITE round trip");
	CHECK(parse(POHMEL_OP_WRITE, b, n - 1) == PROTO_DROP,
	      "WRITE count > data drops");
	n = pc_enc_io(b, &o, 0, 0, 0, 8, NULL);
	CHECK(parse(POHMEL_OP_WRITE, b, n) == EOPNOTSUPP, "WRITE bad flag");
	n = pc_enc_io(b, &o, 0, 0, 0, POHMEL_IO_TIMES, NULL);
	CHECK(parse(POHMEL_OP_WRITE, b, n) == PROTO_DROP,
	      "WRITE with IO_TIMES but without its two times drops");
	n = pc_enc_io(b, &o, 0, 0, 0, POHMEL_IO_TIMES, NULL);
	CHECK(parse(POHMEL_OP_READ, b, n) == EINVAL, "READ with IO_TIMES: EINVAL");
	n = pc_enc_io(b, &o, 0, 0, 0, POHMEL_IO_CREATED, NULL);
	CHECK(parse(POHMEL_OP_READ, b, n) == EINVAL,
	      "READ with IO_CREATED: EINVAL");
	n = pc_enc_fsync(b, &o, 3, POHMEL_FSYNC_DATAONLY);
	CHECK(parse(POHMEL_OP_FSYNC, b, n) == 0 && m.handle == 3 &&
	      m.flags == 1, "FSYNC round trip");
	framing(POHMEL_OP_FSYNC, b, n, "FSYNC");

	n = pc_enc_xattr(b, &o, 0, 100, "user.k", 6, NULL, 0);
	CHECK(parse(POHMEL_OP_GETXATTR, b, n) == 0 && m.count == 100 &&
	      !strcmp(m.name, "user.k"), "GETXATTR round trip");
	n = pc_enc_xattr(b, &o, POHMEL_XATTR_CREATE, 3, "user.k", 6, "v\0w",
			 3);
	CHECK(parse(POHMEL_OP_SETXATTR, b, n) == 0 && m.dlen == 3 &&
	      !memcmp(m.data, "v\0w", 3) && m.flags == 1,
	      "SETXATTR round trip (binary value)");
	CHECK(parse(POHMEL_OP_SETXATTR, b, n - 1) == PROTO_DROP,
	      "SETXATTR short value drops");
	n = pc_enc_xattr(b, &o, 0, 4096, NULL, 0, NULL, 0);
	CHECK(parse(POHMEL_OP_LISTXATTR, b, n) == 0 && m.count == 4096,
	      "LISTXATTR round trip");
	n = pc_enc_xattr(b, &o, 0, 0, "user.k", 6, NULL, 0);
	CHECK(parse(POHMEL_OP_REMOVEXATTR, b, n) == 0 &&
	      !strcmp(m.name, "user.k"), "REMOVEXATTR round trip");
	n = pc_enc_xattr(b, &o, 8, 0, "user.k", 6, NULL, 0);
	CHECK(parse(POHMEL_OP_REMOVEXATTR, b, n) == EOPNOTSUPP,
	      "xattr bad flag");

	n = pc_enc_lock(b, &o, 0xdead, 10, 20, POHMEL_LOCK_WR,
			POHMEL_LOCK_WAIT, 1234);
	CHECK(parse(POHMEL_OP_LOCK, b, n) == 0 && m.owner == 0xdead &&
	      m.start == 10 && m.len == 20 && m.type == 2 && m.flags == 1 &&
	      m.pid == 1234, "LOCK round trip");
	framing(POHMEL_OP_LOCK, b, n, "LOCK");
	n = pc_enc_lock(b, &o, 0, 0, 0, 3, 0, 0);
	CHECK(parse(POHMEL_OP_LOCK, b, n) == EINVAL, "LOCK bad type EINVAL");
	n = pc_enc_lock(b, &o, 0, 0, 0, 1, 0x8, 0);
	CHECK(parse(POHMEL_OP_LOCK, b, n) == EOPNOTSUPP, "LOCK bad flag");

	memset(b, 0, 32);
	woid_put(b, &o);
	CHECK(parse(POHMEL_OP_RECALL_ACK, b, 32) == 0 &&
	      oid_eq(&m.oid, o.id, o.gen), "RECALL_ACK round trip");
	CHECK(parse(POHMEL_OP_BATCH, b, 0) == 0, "empty BATCH parses");
	CHECK(parse(POHMEL_OP_MAX, b, 0) == ENOSYS, "unknown op ENOSYS");
	CHECK(parse(0, b, 0) == ENOSYS, "op 0 ENOSYS");
	CHECK(parse(POHMEL_OP_RECALL, b, 32) == ENOSYS, "client RECALL ENOSYS");
	CHECK(parse_flags(POHMEL_OP_PING, b, 0, POHMEL_HF_SEALED, 0) ==
	      EOPNOTSUPP, "SEALED flag EOPNOTSUPP");
	CHECK(parse_flags(POHMEL_OP_PING, b, 0, 0x100, 0) == EOPNOTSUPP,
	      "unknown hdr flag EOPNOTSUPP");

	{
		struct whdr h = { .len = POHMEL_MAX_MSG + 1, .op = 3, .tag = 1 };
		struct whdr out;

		whdr_put(raw, &h);
		CHECK(proto_hdr(raw, &out, POHMEL_MAX_MSG) == PROTO_DROP,
		      "len > max_msg drops");
		h.len = 0;
		h.tag = 0;
		whdr_put(raw, &h);
		CHECK(proto_hdr(raw, &out, POHMEL_MAX_MSG) == PROTO_DROP,
		      "tag 0 drops");
	}
}

/* ---- replies: pohmeld's encoders -> libpohmel's decoders ---- */

static int sv[2];
static struct pc pc;

static void reply(uint16_t op, uint32_t status, const uint8_t *p,
		  uint32_t n)
{
	uint8_t h[POHMEL_HDR_SIZE];
	struct whdr w = { .len = n, .op = op, .flags = POHMEL_HF_REPLY,
			  .tag = pc.tag + 1, .status = status };

	whdr_put(h, &w);
	if (write(sv[1], h, sizeof(h)) != sizeof(h) ||
	    (n && write(sv[1], p, n) != (ssize_t)n))
		abort();
}

static void drain(void)
{
	uint8_t b[65536];

	while (recv(sv[1], b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}

static struct wattr sample(uint64_t id)
{
	struct wattr a = {
		.oid = { id, ~id }, .size = 1ULL << 50, .blocks = 77,
		.change = 0x123456789ULL,
		.atime = { -1, 5 }, .mtime = { 1LL << 40, 999999999 },
		.ctime = { 0, 0 }, .mode = 0100755, .nlink = 3,
		.uid = 65534, .gid = 4000000000U, .rdev = 0x12345,
		.blksize = 4096, .grant = 0,
	};
	return a;
}

static bool time_eq(const struct wtime *a, const struct wtime *b)
{
	return a->sec == b->sec && a->nsec == b->nsec;
}

static bool attr_eq(const struct wattr *a, const struct wattr *b)
{
	return a->oid.id == b->oid.id && a->oid.gen == b->oid.gen &&
	       a->size == b->size && a->blocks == b->blocks &&
	       a->change == b->change && time_eq(&a->atime, &b->atime) &&
	       time_eq(&a->mtime, &b->mtime) && time_eq(&a->ctime, &b->ctime) &&
	       a->mode == b->mode && a->nlink == b->nlink &&
	       a->uid == b->uid && a->gid == b->gid && a->rdev == b->rdev &&
	       a->blksize == b->blksize && a->grant == b->grant;
}

static int collect(void *arg, const char *name, const struct wattr *a,
		   uint64_t cookie)
{
	char *s = arg;

	sprintf(s + strlen(s), "%s:%llu:%llu;", name,
		(unsigned long long)a->oid.id, (unsigned long long)cookie);
	return 0;
}

static void replies(void)
{
	struct wattr a = sample(5), b2 = sample(6), x, y;
	uint8_t p[4096], *q;
	struct woid o = { 5, 6 };
	struct pc_statfs sf;
	struct pc_lock lk;
	uint64_t h, next;
	uint32_t n;
	char s[512] = "";
	bool eof;

	memset(&x, 0, sizeof(x));
	wattr_put(p, &a);
	wattr_get(p, &x);
	CHECK(attr_eq(&a, &x), "attr encode/decode identity");

	wattr_put(p, &a);
	reply(POHMEL_OP_GETATTR, 0, p, POHMEL_ATTR_SIZE);
	CHECK(pc_getattr(&pc, &o, &x) == 0 && attr_eq(&a, &x),
	      "GETATTR reply decodes");
	reply(POHMEL_OP_GETATTR, ESTALE, NULL, 0);
	CHECK(pc_getattr(&pc, &o, &x) == ESTALE, "error reply decodes");
	reply(POHMEL_OP_GETATTR, ESTALE, p, 8);
	CHECK(pc_getattr(&pc, &o, &x) == -EPROTO,
	      "error reply with a body is a protocol error");
	drain();

	wattr_put(p, &a);
	wattr_put(p + POHMEL_ATTR_SIZE, &b2);
	reply(POHMEL_OP_MKDIR, 0, p, POHMEL_ENTRY_REPLY_SIZE);
	CHECK(pc_mkobj(&pc, POHMEL_OP_MKDIR, &o, "d", 0755, 0, 0, NULL, &x,
		       &y) == 0 && attr_eq(&x, &a) && attr_eq(&y, &b2),
	      "entry reply decodes");

	/* READDIR: two entries, names padded to 8. */
	memset(p, 0, sizeof(p));
	wattr_put(p, &a);
	put32(p + POHMEL_ATTR_SIZE, 2);
	put32(p + POHMEL_ATTR_SIZE + 4, POHMEL_READDIR_EOF);
	q = p + POHMEL_READDIR_REPLY_SIZE;
	wattr_put(q, &b2);
	put64(q + POHMEL_ATTR_SIZE, 100);
	put16(q + POHMEL_ATTR_SIZE + 8, 9);
	memcpy(q + POHMEL_DIRENT_SIZE, "ninechars", 9);
	q += POHMEL_DIRENT_SIZE + 16;
	wattr_put(q, &a);
	put64(q + POHMEL_ATTR_SIZE, 200);
	put16(q + POHMEL_ATTR_SIZE + 8, 1);
	memcpy(q + POHMEL_DIRENT_SIZE, "z", 1);
	q += POHMEL_DIRENT_SIZE + 8;
	reply(POHMEL_OP_READDIR, 0, p, (uint32_t)(q - p));
	CHECK(pc_readdir(&pc, &o, 0, 4096, collect, s, &eof, &next) == 0 &&
	      eof && next == 200 && !strcmp(s, "ninechars:6:100;z:5:200;"),
	      "READDIR reply decodes (%s)", s);
	reply(POHMEL_OP_READDIR, 0, p, (uint32_t)(q - p) - 8);
	CHECK(pc_readdir(&pc, &o, 0, 4096, NULL, NULL, &eof, &next) ==
	      -EPROTO, "truncated READDIR reply rejected");
	drain();

	wattr_put(p, &a);
	put64(p + POHMEL_ATTR_SIZE, 0x1234567800000001ULL);
	reply(POHMEL_OP_OPEN, 0, p, POHMEL_OPEN_REPLY_SIZE);
	CHECK(pc_open(&pc, &o, 1, &h, &x) == 0 &&
	      h == 0x1234567800000001ULL && attr_eq(&x, &a),
	      "OPEN reply decodes");

	wattr_put(p, &a);
	put32(p + POHMEL_ATTR_SIZE, 5);
	put32(p + POHMEL_ATTR_SIZE + 4, 0);
	memcpy(p + POHMEL_IO_REPLY_SIZE, "hello", 5);
	reply(POHMEL_OP_READ, 0, p, POHMEL_IO_REPLY_SIZE + 5);
	{
		char buf[16] = "";

		CHECK(pc_read(&pc, &o, 0, 0, buf, 16, &n) == 0 && n == 5 &&
		      !memcmp(buf, "hello", 5), "READ reply decodes");
	}
	put32(p + POHMEL_ATTR_SIZE, 3);
	reply(POHMEL_OP_WRITE, 0, p, POHMEL_IO_REPLY_SIZE);
	CHECK(pc_write(&pc, &o, 0, 0, "abc", 3, 0, &n) == 0 && n == 3,
	      "WRITE reply decodes");

	memset(p, 0, 48);
	put64(p, 1000);
	put64(p + 8, 900);
	put64(p + 16, 800);
	put64(p + 24, 70);
	put64(p + 32, 60);
	put32(p + 40, 4096);
	put32(p + 44, 255);
	reply(POHMEL_OP_STATFS, 0, p, POHMEL_STATFS_SIZE);
	CHECK(pc_statfs(&pc, &o, &sf) == 0 && sf.blocks == 1000 &&
	      sf.bfree == 900 && sf.bavail == 800 && sf.files == 70 &&
	      sf.ffree == 60 && sf.bsize == 4096 && sf.namelen == 255,
	      "STATFS reply decodes");

	put32(p, 3);
	put32(p + 4, 0);
	memcpy(p + 8, "v\0w", 3);
	reply(POHMEL_OP_GETXATTR, 0, p, 11);
	{
		char v[8];

		CHECK(pc_getxattr(&pc, &o, "user.x", v, 8, &n) == 0 &&
		      n == 3 && !memcmp(v, "v\0w", 3), "GETXATTR reply decodes");
	}
	reply(POHMEL_OP_GETXATTR, 0, p, 8);
	CHECK(pc_getxattr(&pc, &o, "user.x", NULL, 0, &n) == 0 && n == 3,
	      "GETXATTR size-only reply decodes");

	pc_enc_lock(p, &o, 77, 10, 0, POHMEL_LOCK_RD, 0, 4321);
	reply(POHMEL_OP_LOCK, 0, p, POHMEL_LOCK_SIZE);
	CHECK(pc_lock(&pc, &o, 1, 0, 0, POHMEL_LOCK_WR, POHMEL_LOCK_TEST, 0,
		      &lk) == 0 && lk.owner == 77 && lk.start == 10 &&
	      lk.len == 0 && lk.type == POHMEL_LOCK_RD && lk.pid == 4321,
	      "LOCK TEST reply decodes");

	reply(POHMEL_OP_READLINK, 0, (const uint8_t *)"../x", 4);
	{
		char t[64];

		CHECK(pc_readlink(&pc, &o, t, sizeof(t)) == 0 &&
		      !strcmp(t, "../x"), "READLINK reply decodes");
	}
	{
		char st[256];
		size_t k = stats_format(st, sizeof(st));

		reply(POHMEL_OP_STATS, 0, (uint8_t *)st, (uint32_t)k);
		char got[512];

		CHECK(pc_stats(&pc, got, sizeof(got)) == 0 &&
		      !strncmp(got, "clients ", 8) && strlen(got) == k,
		      "STATS reply decodes");
	}
	reply(POHMEL_OP_PING, 0, NULL, 0);
	CHECK(pc_ping(&pc) == 0, "PING reply decodes");
	drain();
}

/* Seed corpus for fuzz_msg: each file is a mode byte then messages. */
static int seeds(const char *dir)
{
	struct woid r = { POHMEL_ROOT_ID, 0 };
	uint8_t b[1024], f[4096], uuid[16] = { 9 }, nonce[32] = { 0 };
	char path[512];
	uint32_t n, fl, k = 0;
	FILE *fp;

#define ADD(OP, ENC) do { \
	n = ENC; \
	fl = 1; \
	f[0] = 1; \
	struct whdr h = { .len = n, .op = OP, .tag = 1, .seq = ++k }; \
	whdr_put(f + fl, &h); \
	memcpy(f + fl + 32, b, n); \
	fl += 32 + n; \
	snprintf(path, sizeof(path), "%s/seed-%02u", dir, k); \
	fp = fopen(path, "w"); \
	if (!fp) return 1; \
	fwrite(f, 1, fl, fp); \
	fclose(fp); \
} while (0)
	ADD(POHMEL_OP_LOOKUP, pc_enc_name_req(b, &r, "file", 4));
	ADD(POHMEL_OP_GETATTR, pc_enc_oid(b, &r));
	ADD(POHMEL_OP_READDIR, pc_enc_readdir(b, &r, 0, 4096));
	ADD(POHMEL_OP_CREATE, pc_enc_create(b, &r, 0644, 0, 1, 0, 0, "n", 1,
					    NULL, 0));
	ADD(POHMEL_OP_MKDIR, pc_enc_create(b, &r, 0755, 0, 0, 0, 0, "d", 1,
					   NULL, 0));
	ADD(POHMEL_OP_SYMLINK, pc_enc_create(b, &r, 0777, 0, 0, 0, 0, "l", 1,
					     "file", 4));
	ADD(POHMEL_OP_MKNOD, pc_enc_create(b, &r, 010644, 0, 0, 0, 0, "p", 1,
					   NULL, 0));
	ADD(POHMEL_OP_RENAME, pc_enc_rename(b, &r, "file", 4, &r, "f2", 2, 0));
	ADD(POHMEL_OP_UNLINK, pc_enc_name_req(b, &r, "file", 4));
	ADD(POHMEL_OP_RMDIR, pc_enc_name_req(b, &r, "sub", 3));
	ADD(POHMEL_OP_UNLINK, pc_enc_remove(b, &r, "file", 4,
					    POHMEL_REMOVE_CLOSE |
					    POHMEL_REMOVE_RELEASE, &r,
					    (const uint64_t[]){ 1, 2 }, 2));
	ADD(POHMEL_OP_RMDIR, pc_enc_remove(b, &r, "sub", 3,
					   POHMEL_REMOVE_RELEASE, &r, NULL, 0));
	ADD(POHMEL_OP_SETATTR, pc_enc_setattr(b, &r, POHMEL_SET_MODE, 0755, 0,
					      0, 0, NULL, NULL));
	ADD(POHMEL_OP_STATFS, pc_enc_oid(b, &r));
	ADD(POHMEL_OP_OPEN, pc_enc_open(b, &r, 1));
	ADD(POHMEL_OP_READ, pc_enc_io(b, &r, 0, 0, 100, 0, NULL));
	ADD(POHMEL_OP_WRITE, pc_enc_io(b, &r, 0, 0, 3, 0, "abc"));
	ADD(POHMEL_OP_FSYNC, pc_enc_fsync(b, &r, 0, 0));
	ADD(POHMEL_OP_SETXATTR, pc_enc_xattr(b, &r, 0, 1, "user.a", 6, "v", 1));
	ADD(POHMEL_OP_GETXATTR, pc_enc_xattr(b, &r, 0, 64, "user.a", 6, NULL,
					     0));
	ADD(POHMEL_OP_LISTXATTR, pc_enc_xattr(b, &r, 0, 64, NULL, 0, NULL, 0));
	ADD(POHMEL_OP_LOCK, pc_enc_lock(b, &r, 1, 0, 10, 2, 0, 1));
	ADD(POHMEL_OP_LOCK, pc_enc_lock(b, &r, 1, 0, 10, 2, 2, 1));
	ADD(POHMEL_OP_STATS, 0);
	ADD(POHMEL_OP_PING, 0);
	ADD(POHMEL_OP_LINK, pc_enc_link(b, &r, &r, "x", 1));
	ADD(POHMEL_OP_HELLO, pc_enc_hello(b, 5, 65536, uuid, 1, nonce));
	f[0] = 0;	/* unauthenticated start */
	fp = fopen(path, "w");
	if (!fp)
		return 1;
	fwrite(f, 1, fl, fp);
	fclose(fp);
#undef ADD
	return 0;
}

/*
 * src/pohmel_vectors.h (gen_vectors) against pohmeld's own do_hello:
 * the vector HELLO request, answered by dispatch() under the key "vec",
 * gives the vector reply (but for the server's random nonce_s) whose
 * mac is mac_s over TH as libpohmel and the kernel compute it; and the
 * vector records open with the vector k_c2s.
 */
typedef uint8_t u8;
#include "../../src/pohmel_vectors.h"

static void vectors(void)
{
	struct keyring kr = { .n = 1, .cap = 1 };
	uint8_t out[4096], th[32], mac[32], c2s[32], s2c[32];
	uint8_t rec[sizeof(pohmel_vec_rec_aes)];
	static const struct {
		const u8 *rec;
		uint64_t alg;
		bool sign;
		const char *name;
	} recs[] = {
		{ pohmel_vec_rec_aes, POHMEL_FEAT_SEAL_AES, false, "AES-256-GCM" },
		{ pohmel_vec_rec_chacha, POHMEL_FEAT_SEAL_CHACHA, false,
		  "ChaCha20-Poly1305" },
		{ pohmel_vec_rec_sign, POHMEL_FEAT_SEAL_AES, true, "signed" },
	};
	struct policy *pol;
	struct aead a;
	struct conn *c;
	uint32_t outlen = 0;
	int fds[2], ret;
	size_t i;

	kr.k = calloc(1, sizeof(*kr.k));
	if (!kr.k || socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
		return;
	snprintf(kr.k->name, sizeof(kr.k->name), "vec");
	memcpy(kr.k->key, pohmel_vec_key, sizeof(pohmel_vec_key));
	kr.k->len = sizeof(pohmel_vec_key);
	pol = policy_new(&srv.cfg.ex, &kr);
	c = calloc(1, sizeof(*c));
	if (!pol || !c || conn_init_struct(c, fds[0], pol))
		return;
	policy_put(pol);		/* c holds it */
	snprintf(c->peer, sizeof(c->peer), "vectors");
	memcpy(srv.verifier, pohmel_vec_hello_rep + POHMEL_HDR_SIZE + 24, 16);
	srv.boot_gen = get64(pohmel_vec_hello_rep + POHMEL_HDR_SIZE + 40);
	ret = dispatch(c, pohmel_vec_hello_req, sizeof(pohmel_vec_hello_req),
		       out, sizeof(out), &outlen);
	CHECK(ret == DISPATCH_OK && outlen == sizeof(pohmel_vec_hello_rep),
	      "vectors: pohmeld answers the vector HELLO (%d, %u bytes)", ret,
	      outlen);
	CHECK(!memcmp(out, pohmel_vec_hello_rep, POHMEL_HDR_SIZE + 48),
	      "vectors: its reply is the vector's up to nonce_s");
	CHECK(c->seal_next && c->key && !strcmp(c->key->name, "vec"),
	      "vectors: AES-256-GCM negotiated under the key 'vec'");
	auth_th(pohmel_vec_hello_req, sizeof(pohmel_vec_hello_req), out, th);
	auth_mac13(pohmel_vec_key, sizeof(pohmel_vec_key), "pohmel-s", th, mac);
	CHECK(!memcmp(out + POHMEL_HDR_SIZE + HELLO_MAC_OFF, mac, 32),
	      "vectors: its mac_s is HMAC(K, \"pohmel-s\" || TH) of its own reply");
	auth_mac13(pohmel_vec_key, sizeof(pohmel_vec_key), "pohmel-c", th, mac);
	auth_session_keys(pohmel_vec_key, sizeof(pohmel_vec_key), th, c2s,
			  s2c);
	CHECK(!memcmp(c->mac_c, mac, 32) && !memcmp(c->k_c2s, c2s, 32) &&
	      !memcmp(c->k_s2c, s2c, 32),
	      "vectors: it expects the same mac_c and derives the same keys");
	/* the vector's own TH, MACs and keys, from its bytes */
	auth_th(pohmel_vec_hello_req, sizeof(pohmel_vec_hello_req),
		pohmel_vec_hello_rep, th);
	auth_mac13(pohmel_vec_key, 32, "pohmel-s", th, mac);
	auth_session_keys(pohmel_vec_key, 32, th, c2s, s2c);
	CHECK(!memcmp(th, pohmel_vec_th, 32) &&
	      !memcmp(mac, pohmel_vec_mac_s, 32) &&
	      !memcmp(c2s, pohmel_vec_k_c2s, 32) &&
	      !memcmp(s2c, pohmel_vec_k_s2c, 32),
	      "vectors: TH, mac_s and keys follow from the vector's bytes");
	for (i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		memcpy(rec, recs[i].rec, sizeof(rec));
		CHECK(aead_init(&a, recs[i].alg, pohmel_vec_k_c2s, false) == 0 &&
		      rec_open(&a, POHMEL_VEC_COUNTER, recs[i].sign, rec,
			       sizeof(pohmel_vec_inner)) == 0 &&
		      !memcmp(rec + POHMEL_HDR_SIZE, pohmel_vec_inner,
			      sizeof(pohmel_vec_inner)) &&
		      get32(recs[i].rec) == sizeof(rec) - POHMEL_HDR_SIZE &&
		      get16(recs[i].rec + 6) == POHMEL_HF_SEALED,
		      "vectors: the %s record opens to the inner message",
		      recs[i].name);
		aead_fini(&a);
	}
	CHECK(sizeof(pohmel_vec_hello_req) == POHMEL_HDR_SIZE +
	      POHMEL_HELLO_SIZE + 3 && get16(pohmel_vec_hello_req +
					     POHMEL_HDR_SIZE + 20) == 3,
	      "vectors: the request carries key_len 3 and \"vec\"");
	if (c->features & POHMEL_FEAT_GRANTS)
		atomic_fetch_sub(&grant_conns, 1);
	conn_put(c);
	close(fds[1]);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--seeds"))
		return seeds(argv[2]);
	requests();
	vectors();
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pc_init(&pc))
		return 1;
	{
		int big = 4 << 20;

		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	}
	pc_connect_fd(&pc, sv[0]);
	replies();
	pc_disconnect(&pc);
	return tap_done();
}
