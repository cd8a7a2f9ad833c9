/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * pohmel_proto.h - the POHMELFS wire protocol, shared by the kernel client
 * (src/) and the server (pohmeld/). This file is the only definition of
 * what crosses the network; both sides include it unchanged.
 *
 * Conventions
 * -----------
 * - Every integer is big-endian (network order), annotated __be16/32/64 so
 *   that sparse checks every conversion in the kernel.
 * - Every struct is padded explicitly to a multiple of 8 bytes; sizes are
 *   asserted in both builds (POHMEL_*_SIZE below, BUILD_BUG_ON in the
 *   module, _Static_assert in pohmeld/proto_check.c).
 * - A message is a struct pohmel_hdr followed by hdr.len payload bytes.
 *   hdr.len never exceeds the max_msg negotiated at HELLO (and never
 *   POHMEL_MAX_MSG). The payload of each opcode starts with a fixed body
 *   struct; variable parts (names, data) follow it, their lengths given by
 *   fields of the body. Every length is checked before use; a message whose
 *   lengths do not add up exactly to hdr.len is a protocol error and the
 *   receiver drops the connection.
 * - Names are not NUL-terminated on the wire. A name is 1..POHMEL_NAME_MAX
 *   bytes, contains no '/' and no NUL, and is neither "." nor "..".
 *   Receivers reject anything else with EINVAL (ENAMETOOLONG if too long).
 * - Errors: hdr.status in a reply is 0 or a positive Linux errno. A reply
 *   with a non-zero status carries no body (hdr.len == 0).
 * - Unknown opcodes get ENOSYS; unknown flag bits in hdr.flags or in any
 *   body flags field get EOPNOTSUPP (never silently ignored).
 * - Times are signed 64-bit seconds plus 32-bit nanoseconds (y2038 safe).
 * - Object IDs: an object is named by (id, gen). id is 64-bit, never 0,
 *   stable across server restarts and renames; gen distinguishes a removed
 *   and re-created object that reuses an id. A request whose gen does not
 *   match the live object gets ESTALE. POHMEL_ROOT_ID names the export
 *   root (its gen is learnt from the HELLO reply). (1.2, clarified for
 *   every server that offers POHMEL_FEAT_IDRANGE:) ids are the server's
 *   own numbers, not the export's inode numbers, and an id is never
 *   handed out twice, across server restarts and crashes too; see
 *   "Delegated object ids" below.
 *
 * Connection life cycle
 * ---------------------
 *   client                                 server
 *   HELLO (nonce_c, uuid, boot gen, key name) ->
 *                                       <- HELLO reply (nonce_s, mac_s)
 *   AUTH  (mac_c)                   ->      (sealed from here on, 1.3)
 *                                       <- AUTH reply (status, root attr)
 *   ...requests, each with its own tag; replies in any order...
 *                                       <- RECALL (unsolicited, tag 0)
 *   RECALL_ACK                      ->
 * Only HELLO and AUTH are accepted before authentication completes; any
 * other opcode closes the connection. AUTH is always sent: its reply
 * carries the export root's attributes. Without a key configured on either
 * side, mac fields are zero and POHMEL_FEAT_AUTH is not negotiated; a
 * server that has a key refuses (EACCES, then close) a client without one.
 *
 * Authentication and protection (1.3; pre-shared key K, 16..64 bytes)
 * ------------------------------------------------------------------
 * A server holds several named keys; the HELLO request names one
 * (hello.key_len bytes of name after the body: 1..POHMEL_KEYNAME_MAX of
 * [A-Za-z0-9._-]; key_len 0 without a key). With TH the SHA-256 of the
 * whole HELLO request as sent (header, body, key name) followed by the
 * whole HELLO reply (header, body) with its mac field zeroed:
 *   mac_s = HMAC-SHA256(K, "pohmel-s" || TH)
 *   mac_c = HMAC-SHA256(K, "pohmel-c" || TH)
 * so nothing in either HELLO (features, max_msg, boot_gen, uuid, nonces,
 * key name) can be changed undetected. The client checks mac_s before it
 * sends AUTH, so it never proves itself to an impostor. Session keys, one
 * per direction, are HKDF-SHA256 (RFC 5869) of K with TH as salt:
 *   PRK   = HMAC-SHA256(TH, K)
 *   k_c2s = HMAC-SHA256(PRK, "pohmel c2s" || 0x01)   (32 bytes)
 *   k_s2c = HMAC-SHA256(PRK, "pohmel s2c" || 0x01)
 * The client offers the AEADs it can use (POHMEL_FEAT_SEAL_AES for
 * AES-256-GCM, POHMEL_FEAT_SEAL_CHACHA for ChaCha20-Poly1305) and, for
 * integrity without encryption (sec=auth), POHMEL_FEAT_SIGN as well. The
 * reply's features keep at most one AEAD bit (the server prefers AES)
 * and FEAT_SIGN only with it. Without an AEAD bit in the reply, messages
 * after HELLO are plain (sec=none: the key is checked once, nothing after
 * it is protected). A server whose export requires more than was
 * negotiated answers AUTH with EACCES and closes.
 * With an AEAD negotiated, every message after the HELLO reply, AUTH
 * and RECALL included, is a record:
 *   outer header: len = n + POHMEL_TAG_LEN (the bytes after it, as for
 *                 any message), flags = POHMEL_HF_SEALED, all else 0
 *   n bytes:      the inner message (a whole header and its payload),
 *                 encrypted; with POHMEL_FEAT_SIGN in clear
 *   tag:          POHMEL_TAG_LEN bytes
 * AEAD(k_dir, nonce, aad, plaintext): nonce = 4 zero bytes || be64
 * counter of that direction (0 for the first record, +1 for each),
 * aad = the outer header (with FEAT_SIGN: the outer header and the inner
 * message, and no plaintext). The inner message obeys every rule of an
 * unsealed one, its len against max_msg. A record whose tag does not
 * verify (a changed, dropped, repeated, reordered or injected message),
 * a plain message where a record is due, or an outer header with any
 * other field set, drops the connection; the reconnect and replay rules
 * below recover without applying anything twice. A sender closes the
 * connection before its counter reaches POHMEL_SEAL_MSGS_MAX (a new
 * connection has new keys). A failed AUTH is still a sealed record: a
 * client that cannot open it reports EACCES.
 * A 1.2 client (minor 2, no key name) gets the 1.2 handshake: mac_s =
 * HMAC-SHA256(K, "pohmel-s" || nonce_c || nonce_s || uuid), mac_c the
 * same with "pohmel-c" and the nonces swapped, K the key named
 * "default", nothing sealed; a server only accepts it where the export's
 * minimum is sec=none. Without a key (keyless server or client) nothing
 * is negotiated beyond 1.2's keyless mode: no AEAD bit, mac fields zero.
 * Sizes: a record's outer len is at least POHMEL_HDR_SIZE +
 * POHMEL_TAG_LEN (an inner header alone) and at most that plus max_msg.
 *
 * Tags and sequence numbers
 * -------------------------
 * hdr.tag is chosen by the sender of a request (any value but 0, unique
 * among its requests in flight) and echoed in the reply. Server-initiated
 * messages use tag 0 and POHMEL_HF_SERVER.
 * hdr.seq is 0 for idempotent requests. Non-idempotent requests (CREATE,
 * MKDIR, MKNOD, SYMLINK, LINK, UNLINK, RMDIR, RENAME, SETATTR, WRITE,
 * XATTR_SET/REMOVE, LOCK) carry a per-session sequence number, strictly
 * increasing from 1. The server keeps, per client session, the replies to
 * the last POHMEL_REPLY_CACHE sequence numbers; a request whose seq it has
 * already executed is answered from that cache and not executed again.
 * This makes a replay after reconnect apply exactly once. A request older
 * than the cache window gets status POHMEL_ERR_SEQ_OLD and the client fails
 * that call with EIO (it cannot know whether it was applied). So a client
 * sends seq S only once every seq up to S - POHMEL_REPLY_CACHE has been
 * answered (clarified). A LOCK with POHMEL_LOCK_WAIT and type RD or WR
 * may carry seq 0: it can wait without end, and running it again for the
 * same owner leaves the same lock (clarified, no layout change).
 * (Clarified, no layout change.) Sessions survive a restart of the server
 * (a crash as well as a clean stop): the server keeps each session's reply
 * cache and open handles on stable state and loads them at start, so a
 * client whose HELLO reply shows a new server boot_gen still replays
 * with its old sequence numbers and handles; it need not reopen. Only a
 * request the server was executing when it died is run again, and the
 * server answers it as done where its second run can only fail because
 * the first took effect (EEXIST of a create, ENOENT of an unlink). An
 * OPEN handle of an object removed meanwhile gets ESTALE; locks and
 * grants do not survive (the client revalidates, as after any reconnect).
 *
 * Durability (POHMEL_FEAT_STABLE, 1.1)
 * ------------------------------------
 * A reply to a WRITE without POHMEL_IO_STABLE, and to every namespace
 * change (CREATE, MKDIR, MKNOD, SYMLINK, LINK, UNLINK, RMDIR, RENAME,
 * SETATTR, XATTR_SET/REMOVE), means "applied": visible to every client,
 * kept across a restart of pohmeld, but lost if the server machine goes
 * down before something makes it stable. These make it stable before
 * their reply:
 * - WRITE with POHMEL_IO_STABLE: the bytes written (fdatasync).
 * - FSYNC of a regular file: its data (and, without DATAONLY, its
 *   metadata); of a directory: its entries, i.e. the names created,
 *   removed or renamed in it (fsync(2) of the directory).
 * - FSYNC with POHMEL_FSYNC_FS: everything in the export (syncfs(2));
 *   oid is any object of the export (the client sends the root).
 * Every FSYNC also makes stable, before its reply, the server's own
 * state that the client needs to reach what it names: object ids
 * handed out so far, the session's reply cache and its open handles.
 * The HELLO reply's uuid field carries the server's write verifier, 16
 * opaque bytes compared for equality: it changes whenever the server
 * machine may have lost unstable writes (it is derived from the
 * machine's boot). A connection has one verifier, so a reply carries
 * the verifier of the connection it came on. The client keeps the data
 * of unstable WRITEs until an FSYNC reply with the same verifier as the
 * WRITE's, and sends it again when they differ. A WRITE whose reply
 * came on another connection than the one it was first sent on counts
 * as written under the first connection's verifier (after a crash the
 * server may answer a replayed WRITE from its reply cache although the
 * bytes were lost).
 *
 * Delegated object ids (POHMEL_FEAT_IDRANGE, 1.2)
 * -----------------------------------------------
 * IDRANGE asks for count (1..POHMEL_IDRANGE_MAX) ids in advance; the
 * reply gives [start, start + count) (count may be smaller than asked,
 * never 0) and the gen every object created under them will have. The
 * ids belong to the session (they survive reconnects and server
 * restarts with it); a session holds at most POHMEL_IDRANGE_HELD ranges
 * with ids left (one more: EDQUOT). The client creates objects under
 * them locally and names the id in CREATE/MKDIR/MKNOD/SYMLINK with
 * POHMEL_CREATE_ID: the object made gets exactly (id, range gen), and
 * its entry reply says so. Ids of one range must be used in increasing
 * order, each at most once: an id that is not in the session's ranges,
 * or not above the last one used from its range, gets EINVAL (nothing
 * is created). A create that fails (EEXIST...) uses up nothing. When
 * the session ends, what is left of its ranges goes back to the server.
 * IDRANGE is sequenced (hdr.seq): a replay gets the same range.
 *
 * Changelog
 * ---------
 * 1.0  first version.
 * 1.1  POHMEL_FEAT_STABLE: write verifier in the HELLO reply,
 *      POHMEL_FSYNC_FS, FSYNC makes the server's state stable too.
 *      POHMEL_FEAT_FD_ACCESS: an open file's access is decided at OPEN,
 *      as on a local fs: POHMEL_OPEN_CREATED (open(O_CREAT, 0) that
 *      made the file) and POHMEL_SET_HANDLE (ftruncate through a handle).
 * 1.2  POHMEL_FEAT_IDRANGE: IDRANGE, POHMEL_CREATE_ID; ids are the
 *      server's own numbers, never reused. POHMEL_FEAT_ASK_GRANT:
 *      GRANT, and with it the directory write grant. With IDRANGE too:
 *      POHMEL_CREATE_TIME and POHMEL_IO_TIMES (the times a client
 *      showed for what it created or wrote locally are reported by the
 *      server until the object changes again).
 * 1.3  Named keys, the transcript-bound handshake, HKDF session keys and
 *      sealed records (POHMEL_FEAT_SEAL_AES, _SEAL_CHACHA, _SIGN).
 * 1.4  POHMEL_FEAT_FORGET: an UNLINK or RMDIR closes the client's idle
 *      handles of what it removes and ends its grant on it
 *      (POHMEL_REMOVE_CLOSE, POHMEL_REMOVE_RELEASE): no CLOSE or RELEASE
 *      follows a removal.
 * 1.5  POHMEL_FEAT_WB_DATA: POHMEL_IO_CREATED (a WRITE by object from
 *      the owner who made the file, checked as through the fd its
 *      create returned), so that a new file's data travels in its
 *      create's BATCH.
 */
#ifndef POHMEL_PROTO_H
#define POHMEL_PROTO_H

#include <linux/types.h>

#define POHMEL_MAGIC		0x504f484dU	/* "POHM" */
#define POHMEL_PROTO_MAJOR	1
#define POHMEL_PROTO_MINOR	5
#define POHMEL_DEFAULT_PORT	7349

#define POHMEL_NAME_MAX		255
#define POHMEL_PATH_MAX		4096		/* symlink targets */
#define POHMEL_XATTR_NAME_MAX	255
#define POHMEL_XATTR_SIZE_MAX	65536
#define POHMEL_MAX_DATA		(1U << 20)	/* READ/WRITE payload */
#define POHMEL_MAX_MSG		(POHMEL_MAX_DATA + 4096)
#define POHMEL_NONCE_LEN	32
#define POHMEL_MAC_LEN		32
#define POHMEL_KEY_MIN		16
#define POHMEL_KEY_MAX		64
#define POHMEL_KEYNAME_MAX	64
#define POHMEL_TAG_LEN		16		/* AEAD tag of a record */
#define POHMEL_SEAL_MSGS_MAX	(1ULL << 32)	/* records per direction */
#define POHMEL_REPLY_CACHE	1024
#define POHMEL_ROOT_ID		1ULL

/* Replayed request older than the server's reply cache window. */
#define POHMEL_ERR_SEQ_OLD	0x10000

/* Feature bits, negotiated at HELLO: the result is the AND of both sides. */
#define POHMEL_FEAT_AUTH	(1ULL << 0)	/* HMAC challenge-response */
#define POHMEL_FEAT_GRANTS	(1ULL << 1)	/* coherent cache grants + RECALL */
#define POHMEL_FEAT_BATCH	(1ULL << 2)	/* POHMEL_OP_BATCH */
#define POHMEL_FEAT_RELEASE	(1ULL << 3)	/* POHMEL_OP_RELEASE */
#define POHMEL_FEAT_STABLE	(1ULL << 4)	/* verifier, FSYNC_FS (1.1) */
#define POHMEL_FEAT_FD_ACCESS	(1ULL << 5)	/* OPEN_CREATED, SET_HANDLE (1.1) */
#define POHMEL_FEAT_IDRANGE	(1ULL << 6)	/* IDRANGE, CREATE_ID (1.2) */
#define POHMEL_FEAT_ASK_GRANT	(1ULL << 7)	/* POHMEL_OP_GRANT (1.2) */
#define POHMEL_FEAT_SEAL_AES	(1ULL << 8)	/* AES-256-GCM records (1.3) */
#define POHMEL_FEAT_SEAL_CHACHA	(1ULL << 9)	/* ChaCha20-Poly1305 (1.3) */
#define POHMEL_FEAT_SIGN	(1ULL << 10)	/* records not encrypted (1.3) */
#define POHMEL_FEAT_FORGET	(1ULL << 11)	/* POHMEL_REMOVE_* (1.4) */
#define POHMEL_FEAT_WB_DATA	(1ULL << 12)	/* POHMEL_IO_CREATED (1.5) */
#define POHMEL_FEAT_AEAD	(POHMEL_FEAT_SEAL_AES | POHMEL_FEAT_SEAL_CHACHA)
#define POHMEL_FEAT_ALL		(POHMEL_FEAT_AUTH | POHMEL_FEAT_GRANTS | \
				 POHMEL_FEAT_BATCH | POHMEL_FEAT_RELEASE | \
				 POHMEL_FEAT_STABLE | POHMEL_FEAT_FD_ACCESS | \
				 POHMEL_FEAT_IDRANGE | POHMEL_FEAT_ASK_GRANT | \
				 POHMEL_FEAT_AEAD | POHMEL_FEAT_SIGN | \
				 POHMEL_FEAT_FORGET | POHMEL_FEAT_WB_DATA)

/* hdr.flags */
#define POHMEL_HF_REPLY		0x0001	/* this is a reply to hdr.tag */
#define POHMEL_HF_SERVER	0x0002	/* server-initiated (RECALL) */
#define POHMEL_HF_GROUPS	0x0004	/* payload starts with a groups block */
#define POHMEL_HF_SEALED	0x0008	/* a record (1.3): outer header only */
#define POHMEL_HF_ALL		(POHMEL_HF_REPLY | POHMEL_HF_SERVER | \
				 POHMEL_HF_GROUPS)

enum pohmel_op {
	POHMEL_OP_HELLO		= 1,
	POHMEL_OP_AUTH		= 2,
	POHMEL_OP_PING		= 3,	/* empty body both ways */
	POHMEL_OP_LOOKUP	= 4,
	POHMEL_OP_GETATTR	= 5,
	POHMEL_OP_SETATTR	= 6,
	POHMEL_OP_READDIR	= 7,
	POHMEL_OP_CREATE	= 8,	/* regular file */
	POHMEL_OP_MKDIR		= 9,
	POHMEL_OP_MKNOD		= 10,	/* fifo, socket, chr, blk */
	POHMEL_OP_SYMLINK	= 11,
	POHMEL_OP_READLINK	= 12,
	POHMEL_OP_LINK		= 13,
	POHMEL_OP_UNLINK	= 14,
	POHMEL_OP_RMDIR		= 15,
	POHMEL_OP_RENAME	= 16,
	POHMEL_OP_OPEN		= 17,
	POHMEL_OP_CLOSE		= 18,
	POHMEL_OP_READ		= 19,
	POHMEL_OP_WRITE		= 20,
	POHMEL_OP_FSYNC		= 21,
	POHMEL_OP_STATFS	= 22,
	POHMEL_OP_GETXATTR	= 23,
	POHMEL_OP_SETXATTR	= 24,
	POHMEL_OP_LISTXATTR	= 25,
	POHMEL_OP_REMOVEXATTR	= 26,
	POHMEL_OP_LOCK		= 27,
	POHMEL_OP_BATCH		= 28,
	POHMEL_OP_RECALL	= 29,	/* server -> client */
	POHMEL_OP_RECALL_ACK	= 30,
	POHMEL_OP_BYE		= 31,	/* client ends its session cleanly */
	POHMEL_OP_STATS		= 32,	/* server counters, as text */
	POHMEL_OP_RELEASE	= 33,	/* client gives grants back */
	POHMEL_OP_IDRANGE	= 34,	/* ids in advance (FEAT_IDRANGE) */
	POHMEL_OP_GRANT		= 35,	/* ask for a grant (FEAT_ASK_GRANT) */
	POHMEL_OP_MAX			/* new opcodes go above this line */
};

/* Every message starts with this. */
struct pohmel_hdr {
	__be32 len;		/* payload bytes after this header */
	__be16 op;		/* enum pohmel_op */
	__be16 flags;		/* POHMEL_HF_* */
	__be32 tag;
	__be32 status;		/* reply: 0 or positive errno */
	__be64 seq;		/* 0, or session sequence number */
	__be32 uid;		/* request: caller's fsuid; reply: 0 */
	__be32 gid;		/* request: caller's fsgid; reply: 0 */
};

#define POHMEL_HDR_SIZE		32

/*
 * With POHMEL_HF_GROUPS in a request, the payload starts with the caller's
 * supplementary groups: __be32 count (<= POHMEL_MAX_GROUPS), then count
 * __be32 gids, then zero padding to a multiple of 8 bytes. The opcode's
 * body follows. Both hdr.uid/gid and the groups are what the request runs
 * with on the server (before squashing).
 */
#define POHMEL_MAX_GROUPS	32
static inline __u32 pohmel_groups_size(__u32 count)
{
	return (4 + 4 * count + 7) & ~7U;
}

/* (id, gen) names one object. */
struct pohmel_oid {
	__be64 id;
	__be64 gen;
};

#define POHMEL_OID_SIZE		16

struct pohmel_time {
	__be64 sec;		/* signed */
	__be32 nsec;		/* 0..999999999 */
	__be32 pad;
};

#define POHMEL_TIME_SIZE	16

/*
 * Grants (attr.grant): what the client may serve from its cache.
 * (Clarified, no layout change; pohmeld implements this from 1.0.)
 * Only a connection that negotiated POHMEL_FEAT_GRANTS gets anything but
 * GRANT_NONE. Grants belong to the connection: they end when it closes,
 * and after a reconnect (same session or not) the client holds nothing
 * and revalidates its cache (GETATTR/LOOKUP/READDIR give new grants).
 * - attr.grant in a reply is the connection's grant on that object as of
 *   that reply; it replaces what the client had (it may be lower).
 * - SHARED comes with every attr of a reply (LOOKUP, GETATTR, READDIR and
 *   each entry, OPEN, READ, FSYNC, both attrs of an entry reply,
 *   UNLINK/RMDIR's directory), unless another connection holds EXCL or
 *   is modifying the object at that moment, or the server cannot watch
 *   the object for local changes (then NONE). AUTH's root attr is NONE.
 * - EXCL comes with the reply to a WRITE or SETATTR of the object: before
 *   it runs, every other holder was recalled to NONE, so the writer is
 *   the sole holder (SHARED instead if someone got SHARED meanwhile).
 *   A holder keeps EXCL on later replies until recalled.
 * - Conflicts: a modifying request from another connection (SETATTR,
 *   WRITE, SET/REMOVEXATTR, LINK on the object; CREATE, MKDIR, MKNOD,
 *   SYMLINK, LINK, UNLINK, RMDIR, RENAME on the directory and the entry
 *   named) recalls every holder to NONE; any reading request recalls an
 *   EXCL holder to SHARED. The requester is answered only after every
 *   holder acked or its lease (server config grant-lease, default 10 s)
 *   ran out; a holder that did not ack in time has lost the grant.
 * - Changes made in the export directly on the server recall every
 *   holder of the object (a directory: entries created, removed or
 *   renamed in it) to NONE within 1 s.
 * - While a recall is pending for the connection, replies carry at most
 *   the recall's target for that object. A RECALL also caps grants in
 *   replies to requests the client sent before the RECALL arrived: the
 *   client stamps each request with a per-object recall counter and
 *   treats a reply whose object saw a RECALL since as carrying at most
 *   that RECALL's target.
 * - The client acks each RECALL (flush first, then ack); an ack whose
 *   recall_id is not the pending one is ignored (empty reply anyway).
 */
#define POHMEL_GRANT_NONE	0
#define POHMEL_GRANT_SHARED	1	/* attrs, dir contents, data */
#define POHMEL_GRANT_EXCL	2	/* + buffered changes */

/*
 * attr.change (clarified, no layout change): an opaque value, compared
 * for equality only. Any difference from the value a client cached means
 * the object's data or attributes may have changed: drop the cached
 * data, mapped pages included. It is not ordered and not a ctime.
 * pohmeld moves it with every modification it makes (WRITE, SETATTR,
 * SET/REMOVEXATTR; LINK, UNLINK, RENAME for the object and for the
 * directories; entry changes for a directory), even several within one
 * tick of ctime; with every local change that moves ctime, or that
 * inotify reports for an object the server watches; and never gives
 * an object a value it had before a server restart. While nothing
 * changes it stays the same.
 */
struct pohmel_attr {
	struct pohmel_oid oid;
	__be64 size;
	__be64 blocks;		/* 512-byte units */
	__be64 change;		/* opaque: differs after any change (above) */
	struct pohmel_time atime;
	struct pohmel_time mtime;
	struct pohmel_time ctime;
	__be32 mode;		/* S_IFMT | permission bits */
	__be32 nlink;
	__be32 uid;
	__be32 gid;
	__be32 rdev;		/* new_encode_dev() format */
	__be32 blksize;
	__be32 grant;		/* POHMEL_GRANT_* */
	__be32 pad;
};

#define POHMEL_ATTR_SIZE	120

/*
 * HELLO request: body, then key_len bytes of key name (1.3; a 1.2
 * request has key_len 0 and nothing after the body).
 * HELLO reply: struct pohmel_hello, with mac = mac_s (zero without AUTH),
 * features = the negotiated set, max_msg = min of both.
 */
struct pohmel_hello {
	__be32 magic;
	__be16 major;
	__be16 minor;
	__be64 features;
	__be32 max_msg;
	__be16 key_len;		/* request (1.3): key name bytes after body */
	__be16 pad;
	/* client identity (request); reply: write verifier (FEAT_STABLE) */
	__u8 uuid[16];
	__be64 boot_gen;	/* client boot generation; server's in reply */
	__u8 nonce[POHMEL_NONCE_LEN];
	__u8 mac[POHMEL_MAC_LEN];
};

#define POHMEL_HELLO_SIZE	112

/*
 * AUTH request: struct pohmel_auth (mac = mac_c).
 * AUTH reply: status 0 and a struct pohmel_attr of the export root, or
 * status EACCES and the connection is closed.
 * The request's hdr.seq carries the highest sequence number the client has
 * seen answered, so the server can trim its reply cache; a new session
 * (unknown uuid or changed boot_gen) starts with an empty cache.
 */
struct pohmel_auth {
	__u8 mac[POHMEL_MAC_LEN];
};

#define POHMEL_AUTH_SIZE	32

/* GETATTR, READLINK, STATFS, FSYNC: body is a pohmel_oid (+ below). */
/*
 * READLINK reply (was unspecified; clarified by the kernel client): the
 * payload is the target itself, 1..POHMEL_PATH_MAX bytes, no NUL, no
 * body struct (hdr.len is its length).
 */

/*
 * LOOKUP, UNLINK, RMDIR: struct pohmel_name_req, then namelen bytes.
 * nhandles and flags are 0 but in an UNLINK or RMDIR on a connection
 * with POHMEL_FEAT_FORGET (1.4), whose flags may take:
 *   POHMEL_REMOVE_CLOSE    the client drops the nhandles (1..
 *                          POHMEL_REMOVE_HANDLES_MAX) handles of obj
 *                          that follow: closed as by CLOSE;
 *   POHMEL_REMOVE_RELEASE  the client drops its cache of obj: the
 *                          connection's grant on it ends, as by RELEASE
 *                          (replies to requests sent before are capped
 *                          by the client, as after a RECALL);
 * and then struct pohmel_remove_ext (obj: what the client believes it
 * removes) and nhandles __be64 handles come before the name. Both take
 * effect only if the removal does (a re-run found it done included);
 * handles that are not the session's open handles of obj are skipped.
 */
struct pohmel_name_req {
	struct pohmel_oid dir;
	__be16 namelen;
	__be16 nhandles;
	__be32 flags;
};

#define POHMEL_NAME_REQ_SIZE	24
#define POHMEL_REMOVE_CLOSE	0x1
#define POHMEL_REMOVE_RELEASE	0x2
#define POHMEL_REMOVE_ALL	(POHMEL_REMOVE_CLOSE | POHMEL_REMOVE_RELEASE)
#define POHMEL_REMOVE_HANDLES_MAX	16

struct pohmel_remove_ext {
	struct pohmel_oid obj;
};

#define POHMEL_REMOVE_EXT_SIZE	16
/*
 * LOOKUP reply: struct pohmel_attr of the object.
 * UNLINK/RMDIR reply: struct pohmel_attr of the directory afterwards.
 */

/* CREATE, MKDIR, MKNOD, SYMLINK: struct pohmel_create, then (with
 * POHMEL_CREATE_ID) a __be64 delegated id, then (with POHMEL_CREATE_TIME)
 * a struct pohmel_time, then name, then (SYMLINK only) the target of
 * tgtlen bytes.
 * POHMEL_CREATE_TIME (only with CREATE_ID): the time the client created
 * the object locally, and showed as its atime, mtime and ctime. The new
 * object's atime and mtime are set to it, and its ctime is reported as
 * it until the object next changes (a ctime cannot be set; pohmeld
 * reports the client's while the disk's is the one its create left), so
 * every client sees the times the creator saw.
 * Reply: struct pohmel_entry_reply.
 */
#define POHMEL_CREATE_EXCL	0x1	/* fail with EEXIST if it exists */
#define POHMEL_CREATE_ID	0x2	/* FEAT_IDRANGE: the new object's id */
#define POHMEL_CREATE_TIME	0x4	/* FEAT_IDRANGE: the client's time */
#define POHMEL_CREATE_ALL	(POHMEL_CREATE_EXCL | POHMEL_CREATE_ID | \
				 POHMEL_CREATE_TIME)
struct pohmel_create {
	struct pohmel_oid dir;
	__be32 mode;		/* including S_IFMT for MKNOD */
	__be32 rdev;		/* MKNOD of chr/blk */
	__be32 flags;		/* POHMEL_CREATE_* */
	__be32 uid;		/* caller's fsuid / fsgid: the owner asked for */
	__be32 gid;
	__be16 namelen;
	__be16 tgtlen;		/* SYMLINK */
};

#define POHMEL_CREATE_SIZE	40

/* Reply to CREATE/MKDIR/MKNOD/SYMLINK/LINK/RENAME. */
struct pohmel_entry_reply {
	struct pohmel_attr obj;		/* the new or moved object */
	struct pohmel_attr dir;		/* (new) parent directory after */
};

#define POHMEL_ENTRY_REPLY_SIZE	240

/* LINK: struct pohmel_link, then name. Reply: pohmel_entry_reply. */
struct pohmel_link {
	struct pohmel_oid obj;
	struct pohmel_oid dir;
	__be16 namelen;
	__be16 pad0;
	__be32 pad1;
};

#define POHMEL_LINK_SIZE	40

/*
 * RENAME: struct pohmel_rename, then oldname, then newname.
 * flags take RENAME_NOREPLACE (1) and RENAME_EXCHANGE (2) as in Linux.
 * Reply: pohmel_entry_reply (obj = moved object, dir = new parent).
 */
#define POHMEL_RENAME_NOREPLACE	0x1
#define POHMEL_RENAME_EXCHANGE	0x2
#define POHMEL_RENAME_ALL	(POHMEL_RENAME_NOREPLACE | POHMEL_RENAME_EXCHANGE)
struct pohmel_rename {
	struct pohmel_oid olddir;
	struct pohmel_oid newdir;
	__be32 flags;
	__be16 oldlen;
	__be16 newlen;
};

#define POHMEL_RENAME_SIZE	40

/* SETATTR: struct pohmel_setattr. Reply: struct pohmel_attr. */
#define POHMEL_SET_MODE		0x01
#define POHMEL_SET_UID		0x02
#define POHMEL_SET_GID		0x04
#define POHMEL_SET_SIZE		0x08
#define POHMEL_SET_ATIME	0x10	/* to atime */
#define POHMEL_SET_MTIME	0x20	/* to mtime */
#define POHMEL_SET_ATIME_NOW	0x40
#define POHMEL_SET_MTIME_NOW	0x80
#define POHMEL_SET_ALL		0xff	/* the bits of 1.0 */
/*
 * With POHMEL_FEAT_FD_ACCESS (1.1): a struct pohmel_setattr_fh follows
 * the body, and the size change (POHMEL_SET_SIZE, required with it) is
 * made through that handle, which must be open for writing: the access
 * was checked at OPEN, as ftruncate(2) on a local filesystem, not
 * against the file's mode now. The other changes are checked as always.
 */
#define POHMEL_SET_HANDLE	0x100
struct pohmel_setattr {
	struct pohmel_oid oid;
	__be32 valid;		/* POHMEL_SET_* */
	__be32 mode;
	__be32 uid;
	__be32 gid;
	__be64 size;
	struct pohmel_time atime;
	struct pohmel_time mtime;
};

#define POHMEL_SETATTR_SIZE	72

struct pohmel_setattr_fh {
	__be64 handle;
};

#define POHMEL_SETATTR_FH_SIZE	8

/*
 * READDIR: struct pohmel_readdir. cookie 0 starts at the beginning; each
 * entry carries the cookie that resumes after it. Cookies stay valid while
 * the directory changes (an entry added or removed meanwhile may or may not
 * be returned, but none is returned twice or skipped otherwise).
 * Reply: struct pohmel_readdir_reply, then count entries, each a struct
 * pohmel_dirent followed by namelen bytes padded with zeros to 8.
 * "." and ".." are never sent.
 */
struct pohmel_readdir {
	struct pohmel_oid dir;
	__be64 cookie;
	__be32 maxbytes;	/* reply payload limit */
	__be32 pad;
};

#define POHMEL_READDIR_SIZE	32

#define POHMEL_READDIR_EOF	0x1
struct pohmel_readdir_reply {
	struct pohmel_attr dir;
	__be32 count;
	__be32 flags;		/* POHMEL_READDIR_EOF */
};

#define POHMEL_READDIR_REPLY_SIZE 128

struct pohmel_dirent {
	struct pohmel_attr attr;
	__be64 cookie;		/* resumes after this entry */
	__be16 namelen;
	__be16 pad0;
	__be32 pad1;
};

#define POHMEL_DIRENT_SIZE	136

/*
 * OPEN: struct pohmel_open; reply struct pohmel_open_reply. The handle
 * keeps the object alive on the server (an unlinked-but-open file stays
 * readable and writable through it) until CLOSE or the session ends.
 * CLOSE: struct pohmel_handle_req; empty reply.
 */
#define POHMEL_OPEN_READ	0x1
#define POHMEL_OPEN_WRITE	0x2
#define POHMEL_OPEN_ALL		(POHMEL_OPEN_READ | POHMEL_OPEN_WRITE)
/*
 * With POHMEL_FEAT_FD_ACCESS (1.1): the caller's CREATE just made this
 * regular file (open(2) with O_CREAT that created it, which a local fs
 * opens whatever the new mode). The server then does not check the
 * mode if the caller owns the file (who could chmod it anyway); for
 * anyone else the flag changes nothing.
 */
#define POHMEL_OPEN_CREATED	0x4
struct pohmel_open {
	struct pohmel_oid oid;
	__be32 flags;		/* POHMEL_OPEN_* */
	__be32 pad;
};

#define POHMEL_OPEN_SIZE	24

struct pohmel_open_reply {
	struct pohmel_attr attr;
	__be64 handle;
};

#define POHMEL_OPEN_REPLY_SIZE	128

struct pohmel_handle_req {
	struct pohmel_oid oid;
	__be64 handle;
};

#define POHMEL_HANDLE_REQ_SIZE	24

/*
 * READ: struct pohmel_io (count <= max data); reply struct pohmel_io_reply
 * then count bytes (fewer at end of file).
 * WRITE: struct pohmel_io then count bytes; reply struct pohmel_io_reply
 * (count written) with no data.
 * handle is 0 or an OPEN handle (required once the file is unlinked).
 */
#define POHMEL_IO_STABLE	0x1	/* WRITE: on stable storage before reply */
/*
 * WRITE (FEAT_IDRANGE, 1.2): two struct pohmel_time, mtime then ctime,
 * follow struct pohmel_io, before the data: the times the client showed
 * for the file after this write (write-back: written locally, sent
 * later). pohmeld reports them for the file until it changes again, as
 * for POHMEL_CREATE_TIME; times further than POHMEL_TIMES_WINDOW seconds
 * from the server's clock are ignored.
 */
#define POHMEL_IO_TIMES		0x2
/*
 * WRITE with handle 0 (FEAT_WB_DATA, 1.5): the caller made this regular
 * file with its CREATE and owns it, and writes it as through the fd
 * open(2) with O_CREAT returned: the mode is not checked (the owner
 * could chmod it anyway). For anyone else the flag changes nothing.
 */
#define POHMEL_IO_CREATED	0x4
#define POHMEL_IO_ALL		(POHMEL_IO_STABLE | POHMEL_IO_TIMES | \
				 POHMEL_IO_CREATED)
#define POHMEL_TIMES_WINDOW	600
struct pohmel_io {
	struct pohmel_oid oid;
	__be64 handle;
	__be64 offset;
	__be32 count;
	__be32 flags;		/* POHMEL_IO_* */
};

#define POHMEL_IO_SIZE		40

struct pohmel_io_reply {
	struct pohmel_attr attr;	/* after the operation */
	__be32 count;
	__be32 pad;
};

#define POHMEL_IO_REPLY_SIZE	128

/* FSYNC: struct pohmel_fsync; reply struct pohmel_attr. */
#define POHMEL_FSYNC_DATAONLY	0x1
#define POHMEL_FSYNC_FS		0x2	/* FEAT_STABLE: the whole export */
#define POHMEL_FSYNC_ALL	(POHMEL_FSYNC_DATAONLY | POHMEL_FSYNC_FS)
struct pohmel_fsync {
	struct pohmel_oid oid;
	__be64 handle;
	__be32 flags;
	__be32 pad;
};

#define POHMEL_FSYNC_SIZE	32

/* STATFS: body pohmel_oid; reply struct pohmel_statfs. */
struct pohmel_statfs {
	__be64 blocks;
	__be64 bfree;
	__be64 bavail;
	__be64 files;
	__be64 ffree;
	__be32 bsize;
	__be32 namelen;
};

#define POHMEL_STATFS_SIZE	48

/*
 * GETXATTR: struct pohmel_xattr (valuelen = caller's buffer size, 0 to ask
 * the size) then name; reply struct pohmel_xattr_reply then the value
 * (or nothing when only the size was asked).
 * LISTXATTR: struct pohmel_xattr with namelen 0; reply as GETXATTR with
 * the NUL-separated name list as value.
 * SETXATTR: struct pohmel_xattr then name then valuelen bytes; flags take
 * XATTR_CREATE (1) / XATTR_REPLACE (2). Empty reply.
 * REMOVEXATTR: struct pohmel_xattr then name. Empty reply.
 * Names are full ("user.x", "system.posix_acl_access"); ACL values use the
 * Linux xattr encoding, which is little-endian by its own definition.
 */
#define POHMEL_XATTR_CREATE	0x1
#define POHMEL_XATTR_REPLACE	0x2
#define POHMEL_XATTR_ALL	(POHMEL_XATTR_CREATE | POHMEL_XATTR_REPLACE)
struct pohmel_xattr {
	struct pohmel_oid oid;
	__be32 flags;
	__be32 valuelen;
	__be16 namelen;
	__be16 pad0;
	__be32 pad1;
};

#define POHMEL_XATTR_SIZE	32

struct pohmel_xattr_reply {
	__be32 valuelen;	/* size of the value (sent or not) */
	__be32 pad;
};

#define POHMEL_XATTR_REPLY_SIZE	8

/*
 * LOCK: struct pohmel_lock. type is POHMEL_LOCK_RD/WR/UN; kind FLOCK
 * (whole file, owner-based) or POSIX (byte range [start, start+len),
 * len 0 = to end). With POHMEL_LOCK_WAIT the reply comes when granted
 * (or EINTR-like cancel on CLOSE/BYE); without it a conflict is EAGAIN.
 * POHMEL_LOCK_TEST returns the conflicting lock (type UN if none) in a
 * struct pohmel_lock reply; every other LOCK reply is empty (clarified:
 * 1.0 did not say). Owners are opaque client values; the server scopes
 * them per session.
 */
#define POHMEL_LOCK_UN		0
#define POHMEL_LOCK_RD		1
#define POHMEL_LOCK_WR		2
#define POHMEL_LOCK_WAIT	0x1
#define POHMEL_LOCK_TEST	0x2
#define POHMEL_LOCK_FLOCK	0x4	/* else POSIX byte range */
#define POHMEL_LOCK_ALL		(POHMEL_LOCK_WAIT | POHMEL_LOCK_TEST | \
				 POHMEL_LOCK_FLOCK)
struct pohmel_lock {
	struct pohmel_oid oid;
	__be64 owner;
	__be64 start;
	__be64 len;
	__be32 type;
	__be32 flags;
	__be32 pid;		/* reported back by TEST */
	__be32 pad;
};

#define POHMEL_LOCK_SIZE	56

/*
 * BATCH: payload is a sequence of complete messages (header + body), each
 * with its own op, tag and seq; no BATCH, HELLO or AUTH inside. The reply
 * is a BATCH whose payload holds the replies in the same order. Each inner
 * message is validated as if it arrived alone; a malformed inner message
 * makes the whole batch a protocol error.
 */

/*
 * RECALL (server -> client, tag 0): struct pohmel_recall. The client
 * flushes dirty state of the object, drops (to NONE) or downgrades (to
 * SHARED) its cache as asked, then sends RECALL_ACK with the same body:
 * a request with its own tag, answered with an empty reply (clarified:
 * 1.0 did not say).
 * A client that has not acked within the lease loses the grant anyway.
 */
struct pohmel_recall {
	struct pohmel_oid oid;
	__be32 to;		/* POHMEL_GRANT_NONE or _SHARED */
	__be32 pad;
	__be64 recall_id;
};

#define POHMEL_RECALL_SIZE	32

/*
 * STATS: reply is NUL-free text "name value\n" lines. An empty request
 * asks for the counters; a 4-byte body (__be32) with POHMEL_STATS_SESSIONS
 * adds one "session ID key=value ..." line per session (pohmel clients).
 * That listing names other clients' addresses and keys: it is answered
 * only to an administrator (pohmeld.conf(5) admin=), others get EACCES.
 * Unknown bits are EINVAL. Older servers drop a STATS with a body.
 */
#define POHMEL_STATS_SESSIONS	1
#define POHMEL_STATS_SIZE	4

/*
 * RELEASE (with POHMEL_FEAT_RELEASE and _GRANTS): 1..POHMEL_RELEASE_MAX
 * struct pohmel_oid, objects whose cache the client dropped (an evicted
 * inode): the connection's grant on each ends, as if recalled to NONE and
 * acked (a pending recall of it counts as acked). Answered with an empty
 * reply the client need not wait for. The server executes a connection's
 * requests in order, so a grant given by a reply to a request sent after
 * the RELEASE stands; the client caps replies to requests it sent before
 * it (they may carry grants the RELEASE ended), as after a RECALL.
 */
#define POHMEL_RELEASE_MAX	32

/*
 * IDRANGE (with POHMEL_FEAT_IDRANGE; sequenced): struct pohmel_idrange
 * with count asked, start and gen zero. Reply: struct pohmel_idrange,
 * the range given. See "Delegated object ids" above.
 */
#define POHMEL_IDRANGE_MAX	4096
#define POHMEL_IDRANGE_HELD	4
struct pohmel_idrange {
	__be64 start;
	__be64 gen;
	__be32 count;
	__be32 pad;
};

#define POHMEL_IDRANGE_SIZE	24

/*
 * GRANT (with POHMEL_FEAT_ASK_GRANT and _GRANTS): struct
 * pohmel_grant_req. The client asks for a grant instead of waiting for
 * one to come with a reply. Reply: struct pohmel_attr of the object,
 * whose grant is what was given: never above want, and lower (ask again
 * later) while another connection holds it or changes it at that
 * moment, as for any reply.
 * want EXCL needs write access to the object (else EACCES; EROFS on a
 * read-only export); before it is given every other holder is recalled
 * to NONE, as for a WRITE. Asking changes nothing: attr.change stays.
 * A directory held EXCL is a directory write grant: its holder may
 * create, link, remove and rename entries in it locally (new objects
 * under ids from IDRANGE) and send the changes later. Any other
 * connection's request that reads the directory or an entry of it
 * (LOOKUP, READDIR, GETATTR...) recalls the holder to SHARED, and one
 * that changes it recalls it to NONE, as for every grant; the holder
 * sends every change it made to the directory before it acks, so the
 * requester, answered only after the ack, sees them.
 */
struct pohmel_grant_req {
	struct pohmel_oid oid;
	__be32 want;		/* POHMEL_GRANT_SHARED or _EXCL */
	__be32 pad;
};

#define POHMEL_GRANT_REQ_SIZE	24

#endif /* POHMEL_PROTO_H */
