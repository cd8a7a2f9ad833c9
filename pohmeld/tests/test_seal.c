// SPDX-License-Identifier: MIT
/*
 * test_seal - protocol 1.3 against a running pohmeld: named keys, the
 * transcript-bound handshake (every HELLO field covered by the MACs),
 * negotiation of the AEADs, sealed and signed records (each kind of
 * damage closes the connection and is counted), sec= and keys= of the
 * export, sessions bound to their key name and counted against its
 * quota, 1.2 clients, sealed RECALLs, and SIGHUP rotation and
 * revocation.
 */
#include <sys/stat.h>
#include <time.h>
#include "integ_lib.h"

#define NFIELDS(a)	(sizeof(a) / sizeof((a)[0]))

#define HEX_A	"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define HEX_B	"ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
#define HEX_D	"0123456789abcdef0123456789abcdef"

static char exp_dir[300], kpath[300], conf_buf[2048];
static struct srvproc s_none, s_seal;

static const char *conf(const char *opts)
{
	snprintf(conf_buf, sizeof(conf_buf),
		 "export / %s rw no_root_squash %s\nstate-dir %s/state-%s\n"
		 "key-file %s\ngrant-lease 3\n", exp_dir, opts, base,
		 opts[0] ? "seal" : "none", kpath);
	return conf_buf;
}

/*
 * A client with the key named name (from kpath) asking for sec, as the
 * session uuid if not NULL (else a new one): the handshake's result.
 */
static int keyed_as(struct pc *c, const struct srvproc *s, const char *name,
		    int sec, uint64_t aeads, const uint8_t *uuid)
{
	if (pc_init(c))
		return -ENOMEM;
	c->timeout_ms = 10000;
	snprintf(c->keyname, sizeof(c->keyname), "%s", name);
	if (pc_load_key(c, kpath))
		return -ENOENT;
	c->sec = sec;
	c->aeads = aeads;
	if (uuid)
		memcpy(c->uuid, uuid, 16);
	if (pc_connect(c, "127.0.0.1", s->port))
		return -ECONNREFUSED;
	return pc_handshake(c);
}

static int keyed(struct pc *c, const struct srvproc *s, const char *name,
		 int sec, uint64_t aeads)
{
	return keyed_as(c, s, name, sec, aeads, NULL);
}

static unsigned long long stat_of(const struct srvproc *s, const char *name)
{
	char buf[8192], *p, key[64];
	struct pc c;
	unsigned long long v = ~0ULL;

	snprintf(key, sizeof(key), "\n%s ", name);
	if (!keyed(&c, s, "k1", PC_SEC_SEAL, 0) &&
	    !pc_stats(&c, buf, sizeof(buf) - 1)) {
		buf[sizeof(buf) - 1] = 0;
		p = strstr(buf, key);
		if (p)
			v = strtoull(p + strlen(key), NULL, 10);
	}
	pc_disconnect(&c);
	return v;
}

/* The server closed c: the next read ends (within the timeout). */
static bool closed(struct pc *c)
{
	uint8_t b[64];
	struct whdr h;

	return pc_recv(c, &h, b, sizeof(b)) == -ECONNRESET;
}

static void t_negotiate(void)
{
	struct pc c;
	uint8_t data[100000];
	uint32_t got;
	size_t i;

	CHECK(keyed(&c, &s_none, "k1", PC_SEC_SEAL, 0) == 0 &&
	      (c.features & POHMEL_FEAT_AEAD) == POHMEL_FEAT_SEAL_AES &&
	      !(c.features & POHMEL_FEAT_SIGN) && c.sealed,
	      "both AEADs offered: AES-256-GCM chosen, records on");
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	CHECK(pc_ping(&c) == 0, "sealed PING");
	{
		unsigned long long sf = stat_of(&s_none, "bytes_sendfile");
		struct wattr f, d;
		uint8_t back[sizeof(data)];

		CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &c.root.oid, "sealed",
			       0644, 0, 0, NULL, &f, &d) == 0 &&
		      pc_write(&c, &f.oid, 0, 0, data, sizeof(data), 0,
			       &got) == 0 && got == sizeof(data) &&
		      pc_read(&c, &f.oid, 0, 0, back, sizeof(back), &got) == 0 &&
		      got == sizeof(back) && !memcmp(back, data, sizeof(data)),
		      "sealed create, 100 kB write and read back");
		/* a record is sealed whole: its data cannot be sendfile's */
		CHECK(stat_of(&s_none, "bytes_sendfile") == sf,
		      "sealed READ: no bytes sent by sendfile");
	}
	pc_bye(&c);
	pc_disconnect(&c);

	CHECK(keyed(&c, &s_none, "k1", PC_SEC_SEAL,
		    POHMEL_FEAT_SEAL_CHACHA) == 0 &&
	      (c.features & POHMEL_FEAT_AEAD) == POHMEL_FEAT_SEAL_CHACHA &&
	      pc_ping(&c) == 0, "ChaCha20-Poly1305 alone: chosen, PING");
	pc_disconnect(&c);
	CHECK(keyed(&c, &s_none, "k1", PC_SEC_AUTH, 0) == 0 &&
	      (c.features & (POHMEL_FEAT_AEAD | POHMEL_FEAT_SIGN)) ==
	      (POHMEL_FEAT_SEAL_AES | POHMEL_FEAT_SIGN) && pc_ping(&c) == 0,
	      "sec=auth: AES-256-GCM and FEAT_SIGN, signed PING");
	{
		struct wattr f;
		uint8_t back[16];

		CHECK(pc_lookup(&c, &c.root.oid, "sealed", &f) == 0 &&
		      pc_read(&c, &f.oid, 0, 0, back, sizeof(back), &got) == 0 &&
		      !memcmp(back, data, sizeof(back)), "signed read");
	}
	pc_disconnect(&c);
	CHECK(keyed(&c, &s_none, "k1", PC_SEC_AUTH,
		    POHMEL_FEAT_SEAL_CHACHA) == 0 &&
	      (c.features & (POHMEL_FEAT_AEAD | POHMEL_FEAT_SIGN)) ==
	      (POHMEL_FEAT_SEAL_CHACHA | POHMEL_FEAT_SIGN) && pc_ping(&c) == 0,
	      "sec=auth with ChaCha20-Poly1305: signed PING");
	pc_disconnect(&c);
	CHECK(keyed(&c, &s_none, "k1", PC_SEC_NONE, 0) == 0 &&
	      !(c.features & (POHMEL_FEAT_AEAD | POHMEL_FEAT_SIGN)) &&
	      (c.features & POHMEL_FEAT_AUTH) && !c.sealed && pc_ping(&c) == 0,
	      "sec=none with a key: authenticated, nothing sealed");
	pc_disconnect(&c);
	pc_init(&c);
	c.want_features = POHMEL_FEAT_BATCH | POHMEL_FEAT_SIGN;
	c.keylen = 0;
	CHECK(pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&c) == EACCES, "no key: refused by a keyed server");
	pc_disconnect(&c);
}

static void t_wrong_keys(void)
{
	char err1[256];
	struct pc c;

	CHECK(keyed(&c, &s_none, "nosuch", PC_SEC_SEAL, 0) == -ENOENT,
	      "(the client cannot load an unknown name)");
	pc_disconnect(&c);

	/* k1 with the wrong bytes */
	pc_init(&c);
	snprintf(c.keyname, sizeof(c.keyname), "k1");
	pc_load_key(&c, kpath);
	c.key[3] ^= 1;
	c.sec = PC_SEC_SEAL;
	CHECK(pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&c) == EACCES, "wrong key: the client sees mac_s fail");
	snprintf(err1, sizeof(err1), "%s", c.err);
	pc_disconnect(&c);

	/* an unknown name: the HELLO is answered all the same */
	pc_init(&c);
	pc_load_key(&c, kpath);
	snprintf(c.keyname, sizeof(c.keyname), "nosuch");
	c.sec = PC_SEC_SEAL;
	CHECK(pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&c) == EACCES && !strcmp(c.err, err1),
	      "unknown name: HELLO answered, fails as a wrong key does (%s)",
	      c.err);
	pc_disconnect(&c);
	pc_init(&c);
	pc_load_key(&c, kpath);
	snprintf(c.keyname, sizeof(c.keyname), "nosuch");
	c.sec = PC_SEC_SEAL;
	c.test_skip_server_proof = true;
	CHECK(pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&c) == EACCES &&
	      server_log_has("none", "(key 'nosuch'): unknown key name"),
	      "unknown name: AUTH refused, logged with the name");
	pc_disconnect(&c);

	pc_init(&c);
	snprintf(c.keyname, sizeof(c.keyname), "k1");
	pc_load_key(&c, kpath);
	c.key[0] ^= 0x80;
	c.sec = PC_SEC_NONE;
	c.test_skip_server_proof = true;
	CHECK(pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&c) == EACCES &&
	      server_log_has("none", "(key 'k1'): wrong MAC"),
	      "wrong key, sec=none: mac_c refused, logged");
	pc_disconnect(&c);
	pc_init(&c);
	snprintf(c.keyname, sizeof(c.keyname), "k1");
	pc_load_key(&c, kpath);
	c.key[0] ^= 0x80;
	c.sec = PC_SEC_SEAL;
	c.test_skip_server_proof = true;
	CHECK(pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&c) == EACCES &&
	      server_log_has("none", "AUTH record does not open"),
	      "wrong key, sealed: the AUTH record does not open, logged");
	pc_disconnect(&c);
}

/* Tampering with the HELLO request on its way (after TH took it in). */
static size_t tamper_at;

static void tamper(uint8_t *req, size_t len)
{
	if (tamper_at < len)
		req[tamper_at] ^= 0x01;
}

static void t_tamper(void)
{
	static const struct { const char *what; size_t off; } f[] = {
		{ "features", POHMEL_HDR_SIZE + 13 },
		{ "max_msg", POHMEL_HDR_SIZE + 19 },
		{ "uuid", POHMEL_HDR_SIZE + 24 },
		{ "boot_gen", POHMEL_HDR_SIZE + 47 },
		{ "nonce", POHMEL_HDR_SIZE + 48 },
		/* "k1" -> "k0": no such key; "k2" has k1's bytes */
		{ "key name", POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE + 1 },
	};
	unsigned long long before = stat_of(&s_none, "auth_failures");
	struct pc c;
	size_t i;

	for (i = 0; i < NFIELDS(f); i++) {
		tamper_at = f[i].off;
		pc_init(&c);
		snprintf(c.keyname, sizeof(c.keyname), "k1");
		pc_load_key(&c, kpath);
		c.sec = PC_SEC_SEAL;
		c.test_hello_hook = tamper;
		CHECK(pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
		      pc_handshake(&c) == EACCES &&
		      strstr(c.err, "failed to prove"),
		      "HELLO %s changed on the way: mac_s fails at the client",
		      f[i].what);
		pc_disconnect(&c);
		pc_init(&c);
		snprintf(c.keyname, sizeof(c.keyname), "k1");
		pc_load_key(&c, kpath);
		c.sec = i % 2 ? PC_SEC_NONE : PC_SEC_SEAL;
		c.test_hello_hook = tamper;
		c.test_skip_server_proof = true;
		CHECK(pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
		      pc_handshake(&c) == EACCES,
		      "HELLO %s changed on the way: the server refuses AUTH (%s)",
		      f[i].what, c.sec ? "sealed" : "sec=none");
		pc_disconnect(&c);
	}
	/* each field twice: a client that gave up after HELLO, one refused */
	CHECK(stat_of(&s_none, "auth_failures") == before + 2 * NFIELDS(f),
	      "each abandoned HELLO and each refused AUTH counted once (%llu -> %llu)",
	      before, stat_of(&s_none, "auth_failures"));
	CHECK(server_log_has("none", "handshake given up after our HELLO reply"),
	      "a client that gave up after HELLO is logged");
}

/* The key name in a tampered HELLO: k1 -> k0 is unknown; check that a
 * known name with the same key bytes is refused too (TH binds it). */
static void tamper_name(uint8_t *req, size_t len)
{
	/* "k2" -> "k1": a known name with the same bytes */
	if (len > POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE + 1)
		req[POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE + 1] = '1';
}

static void t_tamper_name(void)
{
	struct pc c;

	pc_init(&c);
	snprintf(c.keyname, sizeof(c.keyname), "k2");
	pc_load_key(&c, kpath);
	c.sec = PC_SEC_SEAL;
	c.test_hello_hook = tamper_name;
	CHECK(pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&c) == EACCES && strstr(c.err, "failed to prove"),
	      "key name k2 -> k1 (same key bytes) on the way: mac_s fails");
	pc_disconnect(&c);
}

static void t_v12(void)
{
	struct pc c;

	pc_init(&c);
	pc_load_key(&c, kpath);		/* "default" */
	c.test_v12 = true;
	c.sec = PC_SEC_SEAL;
	CHECK(!strcmp(c.keyname, "default") &&
	      pc_connect(&c, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&c) == 0 && !c.sealed &&
	      (c.features & POHMEL_FEAT_AUTH) && pc_ping(&c) == 0,
	      "a 1.2 client: the 1.2 handshake with 'default' (sec=none export)");
	pc_disconnect(&c);
	pc_init(&c);
	pc_load_key(&c, kpath);
	c.test_v12 = true;
	CHECK(pc_connect(&c, "127.0.0.1", s_seal.port) == 0 &&
	      pc_handshake(&c) == EACCES &&
	      server_log_has("seal", "below the export's minimum: sec=none negotiated, sec=seal required (a 1.2 client)"),
	      "a 1.2 client refused where the export wants sec=seal");
	pc_disconnect(&c);
}

static void t_policy(void)
{
	struct pc c;

	CHECK(keyed(&c, &s_seal, "k1", PC_SEC_SEAL, 0) == 0 &&
	      pc_ping(&c) == 0, "keys=k1,default sec=seal: k1 sealed accepted");
	pc_disconnect(&c);
	CHECK(keyed(&c, &s_seal, "k2", PC_SEC_SEAL, 0) == EACCES &&
	      server_log_has("seal", "(key 'k2'): key not allowed for the export"),
	      "keys=: k2 refused, logged");
	pc_disconnect(&c);
	CHECK(keyed(&c, &s_seal, "k1", PC_SEC_AUTH, 0) == EACCES &&
	      server_log_has("seal", "sec=auth negotiated, sec=seal required"),
	      "sec=seal: a signed-only client refused");
	pc_disconnect(&c);
	CHECK(keyed(&c, &s_seal, "k1", PC_SEC_NONE, 0) == EACCES,
	      "sec=seal: a sec=none client refused");
	pc_disconnect(&c);
}

static void t_bound(void)
{
	uint8_t uuid[16];
	struct pc c;

	CHECK(keyed(&c, &s_none, "k1", PC_SEC_SEAL, 0) == 0,
	      "a session made with k1");
	memcpy(uuid, c.uuid, 16);
	pc_disconnect(&c);		/* no BYE: the session stays */
	CHECK(keyed_as(&c, &s_none, "k2", PC_SEC_SEAL, 0, uuid) == EACCES &&
	      server_log_has("none", "(key 'k2'): session bound to another key"),
	      "resumed with k2 (same bytes, another name): EACCES, logged");
	pc_disconnect(&c);
	CHECK(keyed_as(&c, &s_none, "k1", PC_SEC_AUTH, 0, uuid) == 0 &&
	      pc_ping(&c) == 0, "resumed with k1: accepted");
	pc_bye(&c);
	pc_disconnect(&c);
}

/* A sealed connection, and a PING message (not sent) in msg. */
static int victim(struct pc *c, uint8_t msg[POHMEL_HDR_SIZE], int sec)
{
	struct whdr h = { .op = POHMEL_OP_PING, .tag = 77 };

	whdr_put(msg, &h);
	return keyed(c, &s_none, "k1", sec, 0);
}

static void t_records(void)
{
	unsigned long long before = stat_of(&s_none, "seal_failures");
	uint8_t msg[POHMEL_HDR_SIZE], r0[POHMEL_HDR_SIZE + REC_OVERHEAD];
	uint8_t r1[sizeof(r0)], two[2 * sizeof(r0)];
	int n = 0, sec;
	struct pc c;

	for (sec = PC_SEC_AUTH; sec <= PC_SEC_SEAL; sec++) {
		const char *k = sec == PC_SEC_SEAL ? "sealed" : "signed";
		struct whdr h;
		uint8_t b[8];

		CHECK(victim(&c, msg, sec) == 0 && pc_seal(&c, msg, sizeof(msg), r0) == 0 &&
		      pc_send_wire(&c, r0, sizeof(r0)) == 0 &&
		      pc_recv(&c, &h, b, sizeof(b)) == 0 && h.tag == 77 &&
		      pc_send_wire(&c, r0, sizeof(r0)) == 0 && closed(&c),
		      "%s: a replayed record closes the connection", k);
		n++;
		pc_disconnect(&c);
		CHECK(victim(&c, msg, sec) == 0 && pc_seal(&c, msg, sizeof(msg), r0) == 0 &&
		      pc_seal(&c, msg, sizeof(msg), r1) == 0 &&
		      pc_send_wire(&c, r1, sizeof(r1)) == 0 &&
		      pc_send_wire(&c, r0, sizeof(r0)) == 0 && closed(&c),
		      "%s: reordered records close the connection", k);
		n++;
		pc_disconnect(&c);
		CHECK(victim(&c, msg, sec) == 0 && pc_seal(&c, msg, sizeof(msg), r0) == 0 &&
		      (r0[POHMEL_HDR_SIZE + 4] ^= 0x02, 1) &&
		      pc_send_wire(&c, r0, sizeof(r0)) == 0 && closed(&c),
		      "%s: a flipped bit in the inner message closes it", k);
		n++;
		pc_disconnect(&c);
		CHECK(victim(&c, msg, sec) == 0 && pc_seal(&c, msg, sizeof(msg), r0) == 0 &&
		      (r0[sizeof(r0) - 1] ^= 0x40, 1) &&
		      pc_send_wire(&c, r0, sizeof(r0)) == 0 && closed(&c),
		      "%s: a flipped bit in the tag closes it", k);
		n++;
		pc_disconnect(&c);
	}
	CHECK(victim(&c, msg, PC_SEC_SEAL) == 0 &&
	      pc_seal(&c, msg, sizeof(msg), r0) == 0 && (r0[9] ^= 0x01, 1) &&
	      pc_send_wire(&c, r0, sizeof(r0)) == 0 && closed(&c) &&
	      server_log_has("none", "a record's outer header with a field set"),
	      "a flipped bit in the outer header (tag) closes it, logged");
	n++;
	pc_disconnect(&c);
	CHECK(victim(&c, msg, PC_SEC_SEAL) == 0 &&
	      pc_seal(&c, msg, sizeof(msg), r0) == 0 && (r0[7] |= 0x01, 1) &&
	      pc_send_wire(&c, r0, sizeof(r0)) == 0 && closed(&c),
	      "outer flags other than SEALED close it");
	n++;
	pc_disconnect(&c);
	/* truncated: one byte short, so the next record is read askew */
	CHECK(victim(&c, msg, PC_SEC_SEAL) == 0 &&
	      pc_seal(&c, msg, sizeof(msg), two) == 0 &&
	      pc_seal(&c, msg, sizeof(msg), two + sizeof(r0) - 1) == 0 &&
	      pc_send_wire(&c, two, 2 * sizeof(r0) - 1) == 0 && closed(&c),
	      "a truncated record closes it");
	n++;
	pc_disconnect(&c);
	CHECK(victim(&c, msg, PC_SEC_SEAL) == 0 &&
	      pc_send_wire(&c, msg, sizeof(msg)) == 0 && closed(&c) &&
	      server_log_has("none", "a plain message where a record is due"),
	      "a plain message after AUTH closes it, logged");
	n++;
	pc_disconnect(&c);
	CHECK(victim(&c, msg, PC_SEC_SEAL) == 0 &&
	      pc_seal(&c, msg, sizeof(msg), r0) == 0 &&
	      (put32(r0, POHMEL_HDR_SIZE + POHMEL_TAG_LEN - 1), 1) &&
	      pc_send_wire(&c, r0, sizeof(r0)) == 0 && closed(&c) &&
	      server_log_has("none", "a record's length out of bounds"),
	      "outer len below 32 + 16 (an inner header and a tag) closes it");
	n++;
	pc_disconnect(&c);
	CHECK(victim(&c, msg, PC_SEC_SEAL) == 0 &&
	      pc_seal(&c, msg, sizeof(msg), r0) == 0 &&
	      (put32(r0, POHMEL_HDR_SIZE + POHMEL_TAG_LEN + c.max_msg + 1),
	       1) && pc_send_wire(&c, r0, sizeof(r0)) == 0 && closed(&c),
	      "outer len above 32 + 16 + max_msg closes it");
	n++;
	pc_disconnect(&c);
	/* a record whose inner length does not match the record */
	{
		uint8_t bad[POHMEL_HDR_SIZE + 8];
		struct whdr h = { .op = POHMEL_OP_PING, .tag = 5, .len = 0 };

		whdr_put(bad, &h);
		memset(bad + POHMEL_HDR_SIZE, 0, 8);
		CHECK(victim(&c, msg, PC_SEC_SEAL) == 0 &&
		      pc_send_raw(&c, bad, sizeof(bad)) == 0 && closed(&c) &&
		      server_log_has("none", "inner length does not match"),
		      "an inner length that disagrees with the record closes it");
		n++;
		pc_disconnect(&c);
	}
	CHECK(stat_of(&s_none, "seal_failures") == before + (unsigned)n,
	      "each counted in seal_failures (%llu -> %llu, %d cases)", before,
	      stat_of(&s_none, "seal_failures"), n);
}

/*
 * The end of the counters (POHMEL_SEAL_MSGS_MAX), reached from near it
 * (POHMELD_TEST_SEAL_CTR on the server, test_ctr_start here).
 */
static void t_counter_end(void)
{
	uint8_t msg[POHMEL_HDR_SIZE], rec[POHMEL_HDR_SIZE + REC_OVERHEAD];
	struct whdr h = { .op = POHMEL_OP_PING, .tag = 99 };
	struct srvproc s;
	struct pc c;
	char env[32];

	snprintf(env, sizeof(env), "%llu", POHMEL_SEAL_MSGS_MAX - 2);
	setenv("POHMELD_TEST_SEAL_CTR", env, 1);
	snprintf(conf_buf, sizeof(conf_buf),
		 "export / %s rw no_root_squash\nstate-dir %s/state-ctr\n"
		 "key-file %s\n", exp_dir, base, kpath);
	if (start_server("ctr", conf_buf, &s)) {
		unsetenv("POHMELD_TEST_SEAL_CTR");
		CHECK(0, "a server with counters near their end starts");
		return;
	}
	unsetenv("POHMELD_TEST_SEAL_CTR");
	pc_init(&c);
	snprintf(c.keyname, sizeof(c.keyname), "k1");
	pc_load_key(&c, kpath);
	c.sec = PC_SEC_SEAL;
	c.timeout_ms = 10000;
	c.test_ctr_start = POHMEL_SEAL_MSGS_MAX - 2;
	CHECK(pc_connect(&c, "127.0.0.1", s.port) == 0 &&
	      pc_handshake(&c) == 0 && pc_ping(&c) == 0 &&
	      c.tx_ctr == POHMEL_SEAL_MSGS_MAX,
	      "AUTH and a PING at counters 2^32 - 2 and - 1");
	CHECK(pc_ping(&c) == -EPIPE && strstr(c.err, "counter used up"),
	      "the client sends nothing at 2^32");
	whdr_put(msg, &h);
	CHECK(rec_seal(&c.tx, POHMEL_SEAL_MSGS_MAX, false, msg, sizeof(msg),
		       rec) == 0 && pc_send_wire(&c, rec, sizeof(rec)) == 0 &&
	      closed(&c) &&
	      server_log_has("ctr", "the receive counter is used up"),
	      "the server takes no record at 2^32: closed, logged");
	pc_disconnect(&c);
	CHECK(stop_server(&s) == 0, "and stops cleanly");
}

/* A RECALL pushed by another connection's request arrives sealed. */
static void t_recall(void)
{
	struct wattr f, a;
	struct pc_recall r;
	struct pc x, y;
	struct whdr h;
	uint8_t rep[POHMEL_IO_REPLY_SIZE];
	uint32_t got;

	pc_init(&x);
	snprintf(x.keyname, sizeof(x.keyname), "k1");
	pc_load_key(&x, kpath);
	x.want_features = POHMEL_FEAT_BATCH | POHMEL_FEAT_GRANTS;
	x.sec = PC_SEC_SEAL;
	x.timeout_ms = 10000;
	CHECK(pc_connect(&x, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&x) == 0 && (x.features & POHMEL_FEAT_GRANTS),
	      "a sealed holder with grants");
	CHECK(pc_lookup(&x, &x.root.oid, "sealed", &f) == 0 &&
	      f.grant == POHMEL_GRANT_SHARED, "it holds a SHARED grant");
	CHECK(keyed(&y, &s_none, "k2", PC_SEC_AUTH, 0) == 0, "a signed writer");
	pc_enc_io(y.sbuf + 1024, &f.oid, 0, 0, 4, 0, "abcd");
	CHECK(pc_send(&y, POHMEL_OP_WRITE, 9, ++y.seq, y.sbuf + 1024,
		      POHMEL_IO_SIZE + 4) == 0, "its WRITE sent");
	CHECK(pc_next_recall(&x, 5000, &r) == 0 && r.oid.id == f.oid.id &&
	      r.to == POHMEL_GRANT_NONE, "the RECALL arrives sealed and opens");
	CHECK(pc_recall_ack(&x, &r) == 0, "acked (sealed)");
	CHECK(pc_recv(&y, &h, rep, sizeof(rep)) == 0 && h.tag == 9 &&
	      h.status == 0 && get32(rep + POHMEL_ATTR_SIZE) == 4,
	      "the WRITE completes after the ack");
	CHECK(pc_getattr(&x, &f.oid, &a) == 0 && pc_read(&x, &f.oid, 0, 0,
							  rep, 4, &got) == 0 &&
	      !memcmp(rep, "abcd", 4), "the holder goes on (counters agree)");
	pc_disconnect(&x);
	pc_disconnect(&y);
}

/*
 * n sessions with key name, each left without BYE (so it stays): how many
 * were made, how many refused EAGAIN; uuid gets the first one's.
 */
static void sessions(const struct srvproc *s, const char *name, int n,
		     int *ok, int *again, uint8_t uuid[16])
{
	struct pc c;
	int i, rc;

	*ok = *again = 0;
	for (i = 0; i < n; i++) {
		rc = keyed(&c, s, name, PC_SEC_SEAL, 0);
		if (!rc && !*ok && uuid)
			memcpy(uuid, c.uuid, 16);
		*ok += !rc;
		*again += rc == EAGAIN;
		pc_disconnect(&c);
	}
}

/*
 * max-sessions-per-key: one key's holders cannot fill the session table
 * for the others. The control first: without it, k1's sessions take all
 * six and the key "default" gets EAGAIN.
 */
static void t_session_quota(void)
{
	struct srvproc q = { 0, 0 }, p = { 0, 0 };
	int ok, again, ok2, again2;
	uint8_t uuid[16];
	char cf[1024];
	struct pc c;

	snprintf(cf, sizeof(cf),
		 "export / %s rw no_root_squash\nstate-dir %s/state-pool\n"
		 "key-file %s\nmax-sessions 6\n", exp_dir, base, kpath);
	CHECK(start_server("pool", cf, &p) == 0, "pohmeld with max-sessions 6");
	sessions(&p, "k1", 6, &ok, &again, NULL);
	sessions(&p, "default", 1, &ok2, &again2, NULL);
	CHECK(ok == 6 && again == 0 && ok2 == 0 && again2 == 1,
	      "one pool: k1 takes all 6 sessions (%d, %d refused), default is refused EAGAIN (%d made)",
	      ok, again, ok2);
	CHECK(stop_server(&p) == 0, "(stopped)");

	snprintf(cf, sizeof(cf),
		 "export / %s rw no_root_squash\nstate-dir %s/state-quota\n"
		 "key-file %s\nmax-sessions 6\nmax-sessions-per-key 3\n",
		 exp_dir, base, kpath);
	CHECK(start_server("quota", cf, &q) == 0,
	      "pohmeld with max-sessions 6, max-sessions-per-key 3");
	sessions(&q, "k1", 5, &ok, &again, uuid);
	CHECK(ok == 3 && again == 2,
	      "k1: 3 sessions made, 2 refused EAGAIN (%d, %d)", ok, again);
	CHECK(server_log_has("quota", "key 'k1' has all its 3 sessions (max-sessions-per-key) in use"),
	      "the refusal is logged with the key's name");
	sessions(&q, "default", 3, &ok, &again, NULL);
	CHECK(ok == 3 && again == 0,
	      "default still makes its 3 sessions (%d, %d refused)", ok, again);
	CHECK(keyed_as(&c, &q, "k1", PC_SEC_SEAL, 0, uuid) == 0 && pc_ping(&c) == 0,
	      "k1 at its quota resumes a session of its own");
	pc_disconnect(&c);
	CHECK(stop_server(&q) == 0, "(stopped)");
}

/* line: the "session ..." line of rep whose key= is name (NULL: none) */
static const char *session_of(const char *rep, const char *name, char *line,
			      size_t cap)
{
	char want[80];
	const char *p = rep;

	snprintf(want, sizeof(want), " key=%s ", name);
	while ((p = strstr(p, "session "))) {
		size_t n = strcspn(p, "\n");

		if ((p == rep || p[-1] == '\n') && n < cap) {
			memcpy(line, p, n);
			line[n] = 0;
			if (strstr(line, want))
				return line;
		}
		p += n;
	}
	return NULL;
}

/* pohmel clients: the listing is an admin's (admin=), and true */
static void t_clients(void)
{
	static char rep[1 << 20];
	struct srvproc q = { 0, 0 };
	struct pc a, b;
	struct wattr f;
	char cf[1024], line[1024];
	uint64_t h = 0;
	bool ok;
	int err;

	snprintf(cf, sizeof(cf),
		 "export / %s rw no_root_squash admin=k1\n"
		 "state-dir %s/state-adm\nkey-file %s\n", exp_dir, base, kpath);
	CHECK(start_server("adm", cf, &q) == 0, "pohmeld with admin=k1");
	ok = keyed(&b, &q, "k2", PC_SEC_SEAL, 0) == 0 &&
	     pc_mkobj(&b, POHMEL_OP_CREATE, &b.root.oid, "adm.f", 0644, 0, 0,
		      NULL, &f, NULL) == 0 &&
	     pc_open(&b, &f.oid, POHMEL_OPEN_READ | POHMEL_OPEN_WRITE, &h,
		     NULL) == 0 &&
	     pc_lock(&b, &f.oid, 7, 0, 10, POHMEL_LOCK_WR, 0, 1, NULL) == 0;
	CHECK(ok, "k2 (sealed) creates a file, holds it open and locked");
	CHECK(keyed(&a, &q, "k1", PC_SEC_AUTH, 0) == 0 &&
	      pc_stats_what(&a, POHMEL_STATS_SESSIONS, rep, sizeof(rep)) == 0,
	      "k1, named by admin=, gets the listing");
	ok = session_of(rep, "k2", line, sizeof(line)) &&
	     (strstr(line, " peer=127.0.0.1:") ||
	      strstr(line, " peer=[::ffff:127.0.0.1]:")) &&
	     strstr(line, " sec=seal conns=1 ") &&
	     strstr(line, " handles=1 locks=1 ") &&
	     !strstr(line, " requests=0 ") && !strstr(line, " bytes_in=0 ");
	CHECK(ok, "k2's line: its address, sec=seal, one connection, one handle, one lock, requests and bytes ('%s')",
	      session_of(rep, "k2", line, sizeof(line)) ? line : "none");
	CHECK(session_of(rep, "k1", line, sizeof(line)) &&
	      strstr(line, " sec=auth conns=1 "),
	      "the admin's own session is listed (sec=auth)");
	CHECK(strstr(rep, "\nsessions 2\n") != NULL,
	      "the counters come first, as for a plain STATS");
	CHECK(pc_stats_what(&b, POHMEL_STATS_SESSIONS, rep, sizeof(rep)) ==
	      EACCES && server_log_has("adm", "session listing refused (key 'k2')"),
	      "k2 is refused EACCES, logged with its key");
	err = pc_stats(&b, rep, sizeof(rep));
	CHECK(!err && !strstr(rep, "\nsession ") && strstr(rep, "\nsessions "),
	      "k2 still reads the counters, without the listing (%d)", err);
	CHECK(pc_stats_what(&a, 2, rep, sizeof(rep)) == EINVAL,
	      "an unknown listing bit is EINVAL");
	pc_disconnect(&b);
	usleep(200000);
	CHECK(pc_stats_what(&a, POHMEL_STATS_SESSIONS, rep, sizeof(rep)) == 0 &&
	      session_of(rep, "k2", line, sizeof(line)) &&
	      strstr(line, " peer=- sec=- conns=0 ") &&
	      strstr(line, " locks=1 "),
	      "k2 gone without BYE: its session stays, idle, with no address, its lock kept ('%s')",
	      session_of(rep, "k2", line, sizeof(line)) ? line : "none");
	pc_disconnect(&a);
	CHECK(stop_server(&q) == 0, "(stopped)");
}

static void write_keys(const char *text)
{
	char tmp[320];

	snprintf(tmp, sizeof(tmp), "%s.new", kpath);
	write_file(tmp, text);
	chmod(tmp, 0600);
	rename(tmp, kpath);
}

static void t_revoke(void)
{
	struct pc a, b, c;
	int i, n = log_count("none", "reloaded: serving");

	CHECK(keyed(&a, &s_none, "k2", PC_SEC_SEAL, 0) == 0 &&
	      keyed(&b, &s_none, "k1", PC_SEC_NONE, 0) == 0,
	      "live connections with k2 (sealed) and k1");
	write_keys("k1 " HEX_A "\nk9 " HEX_B "\ndefault " HEX_D "\n");
	kill(s_none.pid, SIGHUP);
	for (i = 0; i < 500 && log_count("none", "reloaded: serving") <= n; i++)
		usleep(10000);
	CHECK(log_count("none", "reloaded: serving") > n, "SIGHUP: reloaded");
	CHECK(closed(&a) &&
	      server_log_has("none", "key 'k2' revoked (no longer in the key file)"),
	      "k2 removed: its live connection is closed, logged");
	CHECK(pc_ping(&b) == 0, "k1 kept: its connection goes on");
	pc_disconnect(&a);
	CHECK(keyed(&a, &s_none, "k2", PC_SEC_SEAL, 0) == -ENOENT ||
	      a.keylen == 0, "(k2 gone from the file)");
	pc_disconnect(&a);
	pc_init(&a);
	memcpy(a.key, b.key, 32);	/* k2 had k1's bytes */
	a.keylen = 32;
	snprintf(a.keyname, sizeof(a.keyname), "k2");
	a.sec = PC_SEC_SEAL;
	CHECK(pc_connect(&a, "127.0.0.1", s_none.port) == 0 &&
	      pc_handshake(&a) == EACCES, "k2 refused from then on");
	pc_disconnect(&a);
	CHECK(keyed(&c, &s_none, "k9", PC_SEC_SEAL, 0) == 0 &&
	      pc_ping(&c) == 0, "k9 added: accepted from then on (rotation)");
	pc_disconnect(&c);
	CHECK(stat_of(&s_none, "keys_revoked") == 1, "keys_revoked 1");
	cl_close(&b);
}

int main(int argc, char **argv)
{
	int fd = setup_base(argc, argv, "seal", exp_dir, sizeof(exp_dir));

	if (fd)
		return fd;
	snprintf(kpath, sizeof(kpath), "%s/keys", base);
	write_keys("# test keys\nk1 " HEX_A "\nk2 " HEX_A "\n\ndefault " HEX_D
		   "\n");
	CHECK(start_server("none", conf(""), &s_none) == 0,
	      "pohmeld starts (sec=none, three keys)");
	CHECK(start_server("seal", conf("sec=seal keys=k1,default"),
			   &s_seal) == 0,
	      "pohmeld starts (sec=seal keys=k1,default)");
	if (tap_fail)
		return finish_base();
	t_negotiate();
	t_wrong_keys();
	t_tamper();
	t_tamper_name();
	t_v12();
	t_policy();
	t_bound();
	t_records();
	t_recall();
	t_counter_end();
	t_session_quota();
	t_clients();
	t_revoke();
	CHECK(stop_server(&s_none) == 0 && stop_server(&s_seal) == 0,
	      "both stop cleanly");
	return finish_base();
}
