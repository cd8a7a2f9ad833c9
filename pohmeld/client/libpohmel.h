/* SPDX-License-Identifier: MIT */
/*
 * libpohmel.h - userspace POHMELFS client: connect, HELLO/AUTH, one typed
 * call per operation. Synchronous: one request in flight per call, but
 * pc_send()/pc_recv() give raw access for tests that pipeline or wait.
 * Typed calls return 0, a positive errno from the server, or a negative
 * errno when the connection failed (c->err says why).
 *
 * Grants (want_features |= POHMEL_FEAT_GRANTS): the server may send a
 * RECALL at any time. Whatever reads the connection (every call, pc_recv,
 * pc_next_recall) takes it in: it is queued (the oldest are dropped past
 * PC_RECALLS), passed to on_recall if set, and acked at once if auto_ack
 * is set. Otherwise pc_recall_ack() acks it (without waiting: the reply
 * to an ack is skipped like any reply nobody waits for).
 */
#ifndef LIBPOHMEL_H
#define LIBPOHMEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../crypto.h"

struct pc_recall {
	struct woid oid;
	uint32_t to;		/* POHMEL_GRANT_NONE or _SHARED */
	uint64_t recall_id;
};
#define PC_RECALLS	64

struct pc;
typedef void (*pc_recall_fn)(struct pc *c, const struct pc_recall *r,
			     void *arg);

struct pc {
	int fd;
	uint32_t tag;		/* last tag used */
	uint64_t seq;		/* last sequence number used */
	uint32_t max_msg;
	uint64_t features;
	uint8_t uuid[16];	/* session identity; random if left zero */
	uint64_t boot_gen;
	uint64_t server_boot;
	uint8_t verifier[16];	/* write verifier (FEAT_STABLE), else 0 */
	uint8_t key[64];
	size_t keylen;		/* 0: no key */
	/* 1.3: the key's name (pc_load_key sets it, or picks the key of
	 * that name if set before), what to ask for (PC_SEC_*), and which
	 * AEADs to offer (POHMEL_FEAT_SEAL_* bits; 0: both) */
	char keyname[POHMEL_KEYNAME_MAX + 1];
	int sec;
	uint64_t aeads;
	uint64_t want_features;	/* 0: the library's default */
	/* > 0: connect, and every send or receive after it, fails with
	 * -ETIMEDOUT past this many milliseconds; 0: wait for ever (tests) */
	unsigned int timeout_ms;
	bool test_skip_server_proof;	/* tests: AUTH even if mac_s is bad */
	bool test_v12;			/* tests: a 1.2 client's handshake */
	uint64_t test_ctr_start;	/* tests: first record counter */
	/* tests: change the HELLO request after TH took it in */
	void (*test_hello_hook)(uint8_t *req, size_t len);
	/* the record layer (1.3), once the HELLO reply negotiated an AEAD */
	bool sealed, sign;
	struct aead tx, rx;
	uint64_t tx_ctr, rx_ctr;
	uint8_t th[32], k_c2s[32], k_s2c[32];	/* of the last handshake */
	uint8_t hello_req[POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE +
			  POHMEL_KEYNAME_MAX + 8 + 4 * POHMEL_MAX_GROUPS];
	size_t hello_req_len;
	uint8_t hello_rep[POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE];
	/* credentials sent in every request header */
	uint32_t uid, gid, ngroups;
	uint32_t groups[POHMEL_MAX_GROUPS];
	struct wattr root;
	/* RECALLs received: queue[(qhead + i) % PC_RECALLS], i < qlen */
	pc_recall_fn on_recall;
	void *recall_arg;
	bool auto_ack;
	struct pc_recall queue[PC_RECALLS];
	unsigned int qhead, qlen;
	uint64_t recalls_seen;
	uint8_t *sbuf, *rbuf;
	uint8_t *wbuf, *ibuf;	/* a record out, a message or record in */
	char err[256];
};

#define PC_SEC_NONE	0	/* the key checked once (1.2's mode) */
#define PC_SEC_AUTH	1	/* every message signed (FEAT_SIGN) */
#define PC_SEC_SEAL	2	/* every message encrypted */

struct pc_statfs {
	uint64_t blocks, bfree, bavail, files, ffree;
	uint32_t bsize, namelen;
};

struct pc_lock {
	struct woid oid;
	uint64_t owner, start, len;
	uint32_t type, flags, pid;
};

int pc_init(struct pc *c);
int pc_connect(struct pc *c, const char *host, int port);
int pc_connect_fd(struct pc *c, int fd);
int pc_set_timeout(struct pc *c, unsigned int timeout_ms);
int pc_handshake(struct pc *c);
void pc_disconnect(struct pc *c);
int pc_load_key(struct pc *c, const char *path);

/* raw messages */
int pc_send(struct pc *c, uint16_t op, uint32_t tag, uint64_t seq,
	    const void *body, uint32_t blen);
/* One whole message: as a record once the record layer is on. */
int pc_send_raw(struct pc *c, const void *buf, size_t len);
/* Bytes as they are, whatever the record layer (tests). */
int pc_send_wire(struct pc *c, const void *buf, size_t len);
/* The next record of msg into out (len + REC_OVERHEAD bytes): takes a
 * send counter (tests send it, changed or not, with pc_send_wire). */
int pc_seal(struct pc *c, const void *msg, size_t len, uint8_t *out);
int pc_sec_parse(const char *s);
int pc_recv(struct pc *c, struct whdr *h, uint8_t *payload, uint32_t cap);
int pc_call_seq(struct pc *c, uint16_t op, uint64_t seq, const void *body,
		uint32_t blen, uint8_t *rep, uint32_t cap, uint32_t *rlen);
int pc_call(struct pc *c, uint16_t op, const void *body, uint32_t blen,
	    uint8_t *rep, uint32_t cap, uint32_t *rlen);
bool pc_op_has_seq(uint16_t op);
int pc_recall_ack(struct pc *c, const struct pc_recall *r);
/* The next RECALL (queued or read within timeout_ms; -1: forever):
 * 0, -ETIMEDOUT, or a connection error. Other messages read meanwhile
 * are dropped: call it with no request of one's own in flight. */
int pc_next_recall(struct pc *c, int timeout_ms, struct pc_recall *r);

/* body encoders (return the body length) */
uint32_t pc_enc_oid(uint8_t *b, const struct woid *o);
uint32_t pc_enc_name_req(uint8_t *b, const struct woid *dir,
			 const char *name, uint32_t nl);
uint32_t pc_enc_remove(uint8_t *b, const struct woid *dir, const char *name,
		       uint32_t nl, uint32_t flags, const struct woid *obj,
		       const uint64_t *h, uint32_t n);
uint32_t pc_enc_setattr(uint8_t *b, const struct woid *o, uint32_t valid,
			uint32_t mode, uint32_t uid, uint32_t gid,
			uint64_t size, const struct wtime *at,
			const struct wtime *mt);
uint32_t pc_enc_readdir(uint8_t *b, const struct woid *dir, uint64_t cookie,
			uint32_t maxbytes);
uint32_t pc_enc_create(uint8_t *b, const struct woid *dir, uint32_t mode,
		       uint32_t rdev, uint32_t flags, uint32_t uid,
		       uint32_t gid, const char *name, uint32_t nl,
		       const char *tgt, uint32_t tl);
uint32_t pc_enc_link(uint8_t *b, const struct woid *obj,
		     const struct woid *dir, const char *name, uint32_t nl);
uint32_t pc_enc_rename(uint8_t *b, const struct woid *od, const char *on,
		       uint32_t onl, const struct woid *nd, const char *nn,
		       uint32_t nnl, uint32_t flags);
uint32_t pc_enc_open(uint8_t *b, const struct woid *o, uint32_t flags);
uint32_t pc_enc_handle(uint8_t *b, const struct woid *o, uint64_t handle);
uint32_t pc_enc_io(uint8_t *b, const struct woid *o, uint64_t handle,
		   uint64_t off, uint32_t count, uint32_t flags,
		   const void *data);
uint32_t pc_enc_fsync(uint8_t *b, const struct woid *o, uint64_t handle,
		      uint32_t flags);
uint32_t pc_enc_xattr(uint8_t *b, const struct woid *o, uint32_t flags,
		      uint32_t valuelen, const char *name, uint32_t nl,
		      const void *val, uint32_t vl);
uint32_t pc_enc_lock(uint8_t *b, const struct woid *o, uint64_t owner,
		     uint64_t start, uint64_t len, uint32_t type,
		     uint32_t flags, uint32_t pid);
uint32_t pc_enc_hello(uint8_t *b, uint64_t features, uint32_t max_msg,
		      const uint8_t uuid[16], uint64_t boot_gen,
		      const uint8_t *nonce);
uint32_t pc_enc_hello13(uint8_t *b, uint64_t features, uint32_t max_msg,
			const uint8_t uuid[16], uint64_t boot_gen,
			const uint8_t *nonce, const char *keyname);

/* typed calls */
int pc_ping(struct pc *c);
int pc_stats(struct pc *c, char *buf, size_t cap);
/* what: POHMEL_STATS_SESSIONS adds the session listing (admins only) */
int pc_stats_what(struct pc *c, uint32_t what, char *buf, size_t cap);
int pc_bye(struct pc *c);
int pc_lookup(struct pc *c, const struct woid *dir, const char *name,
	      struct wattr *a);
int pc_getattr(struct pc *c, const struct woid *o, struct wattr *a);
int pc_setattr(struct pc *c, const struct woid *o, uint32_t valid,
	       uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size,
	       const struct wtime *at, const struct wtime *mt,
	       struct wattr *a);
int pc_setattr_fh(struct pc *c, const struct woid *o, uint64_t size,
		  uint64_t handle, struct wattr *a);
typedef int (*pc_dirent_fn)(void *arg, const char *name,
			    const struct wattr *a, uint64_t cookie);
int pc_readdir(struct pc *c, const struct woid *dir, uint64_t cookie,
	       uint32_t maxbytes, pc_dirent_fn fn, void *arg, bool *eof,
	       uint64_t *next);
int pc_readdir_all(struct pc *c, const struct woid *dir, pc_dirent_fn fn,
		   void *arg);
int pc_mkobj(struct pc *c, uint16_t op, const struct woid *dir,
	     const char *name, uint32_t mode, uint32_t rdev, uint32_t flags,
	     const char *target, struct wattr *obj, struct wattr *dira);
int pc_readlink(struct pc *c, const struct woid *o, char *buf, size_t cap);
int pc_link(struct pc *c, const struct woid *obj, const struct woid *dir,
	    const char *name, struct wattr *a);
int pc_remove(struct pc *c, uint16_t op, const struct woid *dir,
	      const char *name);
int pc_rename(struct pc *c, const struct woid *od, const char *on,
	      const struct woid *nd, const char *nn, uint32_t flags,
	      struct wattr *obj);
int pc_open(struct pc *c, const struct woid *o, uint32_t flags,
	    uint64_t *handle, struct wattr *a);
int pc_close(struct pc *c, const struct woid *o, uint64_t handle);
int pc_read(struct pc *c, const struct woid *o, uint64_t handle,
	    uint64_t off, void *buf, uint32_t count, uint32_t *got);
int pc_write(struct pc *c, const struct woid *o, uint64_t handle,
	     uint64_t off, const void *buf, uint32_t count, uint32_t flags,
	     uint32_t *done);
int pc_fsync(struct pc *c, const struct woid *o, uint64_t handle,
	     uint32_t flags);
int pc_statfs(struct pc *c, const struct woid *o, struct pc_statfs *s);
int pc_getxattr(struct pc *c, const struct woid *o, const char *name,
		void *buf, uint32_t cap, uint32_t *len);
int pc_listxattr(struct pc *c, const struct woid *o, void *buf,
		 uint32_t cap, uint32_t *len);
int pc_setxattr(struct pc *c, const struct woid *o, const char *name,
		const void *val, uint32_t len, uint32_t flags);
int pc_removexattr(struct pc *c, const struct woid *o, const char *name);
int pc_lock(struct pc *c, const struct woid *o, uint64_t owner,
	    uint64_t start, uint64_t len, uint32_t type, uint32_t flags,
	    uint32_t pid, struct pc_lock *test);

/* "/a/b/c" from the root; also the parent and last component. */
int pc_walk(struct pc *c, const char *path, struct wattr *a);
int pc_walk_parent(struct pc *c, const char *path, struct wattr *dir,
		   const char **last);

#endif /* LIBPOHMEL_H */
