/* SPDX-License-Identifier: MIT */
/*
 * pohmeld.h - what the server's files call in each other. Each section is
 * owned by the .c file named in its heading.
 */
#ifndef POHMELD_H
#define POHMELD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <syslog.h>

#include "wire.h"
#include "crypto.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#ifndef MIN
#define MIN(a, b)	((a) < (b) ? (a) : (b))
#endif

/*
 * ---- log.c: one log API: structured journal entries under systemd,
 * else stderr with <N> priority prefixes. Each line carries its call's
 * file, line and function, and the client of the thread that logs it.
 */
extern int log_level;		/* LOG_INFO, or LOG_DEBUG with -d */
void log_journal(bool on);	/* entries with fields, or stderr */
void log_set_export(const char *path);
/* This thread serves that client (both strings outlive the thread). */
void log_set_client(const char *peer, const char *key);
void log_at(const char *file, int line, const char *func, int prio,
	    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define log_msg(prio, ...) \
	log_at(__FILE__, __LINE__, __func__, prio, __VA_ARGS__)
#define log_err(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

/* One per kind of line a client can cause at will; rl->mu protects it. */
struct ratelimit {
	pthread_mutex_t mu;
	bool started;
	time_t start;		/* CLOCK_MONOTONIC second of the window */
	int lines;		/* logged in this window */
	unsigned long dropped;	/* not logged since the last line */
};
#define RATELIMIT_INIT	{ .mu = PTHREAD_MUTEX_INITIALIZER }
void log_limited_at(const char *file, int line, const char *func,
		    struct ratelimit *rl, int prio, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
#define log_limited(rl, prio, ...) \
	log_limited_at(__FILE__, __LINE__, __func__, rl, prio, __VA_ARGS__)

/* ---- config.c ---- */
struct cidr {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t addr[16];
	int prefix;
};

#define MAX_ALLOW	32
#define MAX_EXPORT_KEYS	32
struct export_cfg {
	char path[4096];
	bool ro;
	bool root_squash;
	bool all_squash;
	uint32_t anon_uid;
	uint32_t anon_gid;
	bool trusted_xattrs;	/* trusted.*, security.* for unsquashed root */
	int nallow;		/* 0: every address allowed */
	struct cidr allow[MAX_ALLOW];
	int sec;		/* SEC_*: the least a client must use */
	int nkeys;		/* 0: every key of the key file */
	char keys[MAX_EXPORT_KEYS][POHMEL_KEYNAME_MAX + 1];
	int nadmin;		/* admin=: may list sessions (clients.c) */
	char admin[MAX_EXPORT_KEYS][POHMEL_KEYNAME_MAX + 1];
};
enum { SEC_NONE, SEC_AUTH, SEC_SEAL };
const char *sec_name(int sec);
int sec_parse(const char *s);
bool export_key_allowed(const struct export_cfg *ex, const char *name);
bool export_key_admin(const struct export_cfg *ex, const char *name);

struct config {
	bool have_export;
	struct export_cfg ex;
	int port;
	char key_file[4096];
	bool key_file_set;
	char state_dir[4096];
	int max_conns;
	int max_conns_per_addr;	/* per client address (IPv4 /32, IPv6 /128) */
	int handshake_timeout;	/* seconds to finish HELLO and AUTH */
	int session_timeout;	/* seconds a detached session is kept */
	int max_sessions;	/* sessions kept at once (session.c) */
	int max_sessions_per_key;	/* of them made under one key; 0: all */
	int grant_lease;	/* seconds a RECALL may go unacked */
	int fd_reserve;		/* fds kept out of the handle budget */
	int max_handles_per_session;	/* 0: min(4096, budget / 8) */
	int max_locks_per_session;	/* lock records of one session */
	int max_grants_per_conn;	/* objects granted (so watched); 0:
					 * a quarter of max_user_watches */
	/* For messages (config_at): the file read ("" for none) and the
	 * line each setting came from; 0 a default, -1 the command line. */
	char file[4096];
	int line_export, line_key, line_state, line_port;
};
void config_defaults(struct config *cf);
int config_load(struct config *cf, const char *path, char *err,
		size_t errlen);
int config_export_line(struct export_cfg *ex, char *args, char *err,
		       size_t errlen);
int cidr_parse(const char *s, struct cidr *c);
bool cidr_match(const struct cidr *c, const struct sockaddr *sa);
bool export_allows(const struct export_cfg *ex, const struct sockaddr *sa);
const char *config_at(const struct config *cf, int line, const char *opt,
		      char *buf, size_t n);
int config_restart_only(const struct config *a, const struct config *b,
			char *buf, size_t n);

/* ---- policy.c: what SIGHUP replaces; connections hold a reference --- */
struct policy {
	atomic_int refs;
	struct export_cfg ex;
	struct keyring keys;	/* none: authentication off */
};
struct policy *policy_new(const struct export_cfg *ex, struct keyring *keys);
bool policy_has_owner(const struct policy *p, const uint8_t owner[32]);
struct policy *policy_get(void);
void policy_put(struct policy *p);
void policy_install(struct policy *p);

/* ---- check.c: what a start checks, shared by -n, start and SIGHUP ---- */
struct checked {
	int rootfd;		/* the export root, open (see struct server) */
	dev_t rootdev;
	struct keyring keys;
};
void cfg_say(bool plain, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int config_check(const struct config *cf, bool activated, bool plain,
		 struct checked *out);

/* ---- main.c: process-wide state ---- */
struct server {
	struct config cfg;	/* as at start; SIGHUP changes only policy */
	int rootfd;		/* the export root, O_RDONLY directory */
	dev_t rootdev;
	uint64_t boot_gen;
	uint8_t verifier[16];	/* write verifier (verifier.c), never 0 */
	atomic_bool stopping;
	bool activated;		/* listening sockets from systemd */
	int fd_budget;		/* open handles' fds, all sessions (main.c) */
	int handles_per_session;	/* the effective quota */
	int grants_per_conn;	/* the effective quota (grants.c) */
};
extern struct server srv;

/* ---- verifier.c: the write verifier of POHMEL_FEAT_STABLE ---- */
void verifier_init(void);

/* ---- stats.c: counters readable by STATS ---- */
struct stats {
	atomic_ullong ops[POHMEL_OP_MAX];
	atomic_ullong errors[POHMEL_OP_MAX];
	atomic_ullong bytes_read;
	atomic_ullong bytes_sendfile;	/* of bytes_read: sent by sendfile */
	atomic_ullong bytes_written;
	atomic_ullong conns_total;
	atomic_int conns_now;
	atomic_ullong proto_errors;
	atomic_ullong auth_failures;	/* refused or failed handshakes */
	atomic_ullong seal_failures;	/* records refused: conn closed */
	atomic_ullong keys_revoked;	/* conns closed: key gone (SIGHUP) */
	atomic_ullong replays;
	atomic_ullong sessions_refused;	/* max-sessions reached */
	atomic_ullong sessions_refused_key;	/* max-sessions-per-key */
	atomic_ullong sessions_expired;	/* idle for session-timeout */
	atomic_ullong refused;
	atomic_ullong refused_max_conns;	/* max-connections reached */
	atomic_ullong refused_per_addr;	/* max-connections-per-address */
	atomic_ullong handshake_timeouts;
	atomic_ullong handles_refused_session;	/* EMFILE: session quota */
	atomic_ullong handles_refused_budget;	/* ENFILE: fd budget */
	atomic_ullong locks_refused_session;	/* ENOLCK: session quota */
	atomic_ullong locks_refused_total;	/* ENOLCK: MAX_LOCKS */
	atomic_ullong grants_refused_quota;	/* max-grants-per-connection */
	atomic_ullong outbox_cut_stalled;	/* took nothing for a lease */
	atomic_ullong outbox_cut_full;		/* outbox over its bound */
	atomic_ullong grants_lease_expired;	/* revoked: RECALL not acked */
};
extern struct stats stats;
const char *op_name(unsigned int op);
size_t stats_format(char *buf, size_t cap);

/* ---- creds.c: per-thread filesystem credentials ---- */
struct creds {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngroups;
	uint32_t groups[POHMEL_MAX_GROUPS];
	bool priv;	/* unsquashed root: keeps capabilities (creds_squash) */
};
void creds_squash(const struct export_cfg *ex, struct creds *cr);
int creds_enter(const struct creds *cr);
void creds_leave(void);
int creds_init(void);

/* ---- oid.c, oid_log.c: object IDs <-> file handles, persisted ---- */
int oid_init(int rootfd, const char *state_dir);
void oid_fini(void);
int oid_of_fd(int fd, const struct stat *st, struct woid *out);
int oid_open(const struct woid *o, int *fd, struct stat *st);
size_t oid_count(void);
uint64_t oid_gen_of(uint64_t id);
uint64_t oid_id_of_ino(uint64_t ino);
int oid_bind(int fd, const struct stat *st, const struct woid *want,
	     uint64_t min_seq);
uint64_t oid_seq(void);
int oid_sync(void);

/* ---- idspace.c: the object id counter, persisted ---- */
int idspace_init(const char *state_dir);
void idspace_floor(uint64_t id);
int idspace_start(void);
int idspace_alloc(uint64_t *id);
int idspace_alloc_range(uint32_t count, uint64_t *start, uint32_t *got);
void idspace_give_back(uint64_t start, uint32_t count);
uint64_t idspace_next(void);
void idspace_fini(void);

/* ---- sessfile.c: session state files under STATEDIR/sessions ---- */
int sfile_init(const char *state_dir);
void sfile_fini(void);
bool sfile_enabled(void);
int sfile_open(const uint8_t uuid[16], uint64_t boot_gen);
void sfile_remove(const uint8_t uuid[16], uint64_t boot_gen);
int sfile_append(int fd, uint32_t type, const void *a, uint32_t alen,
		 const void *b, uint32_t blen);
int sfile_start_rewrite(const uint8_t uuid[16], uint64_t boot_gen);
int sfile_commit(const uint8_t uuid[16], uint64_t boot_gen);
uint64_t sfile_dir_gen(void);
int sfile_sync_dir(uint64_t gen);
bool sfile_next(const uint8_t **p, size_t *left, uint32_t *type,
		const uint8_t **body, uint32_t *blen);
void sfile_scan(bool (*fn)(const uint8_t uuid[16], uint64_t boot_gen,
			   const uint8_t *data, size_t len, char *why,
			   size_t wl));

/* ---- change.c: the change attribute ---- */
void change_init(uint64_t boot_gen);
void change_fini(void);

/* ---- ctimes.c ---- */
void ctime_note(uint64_t id, const struct wtime *c, const struct wtime *mt,
		const struct stat *st);
void ctime_report(uint64_t id, const struct stat *st, struct wtime *ct,
		  struct wtime *mt);
void ctime_forget(uint64_t id);
void ctime_fini(void);
uint64_t change_bump(uint64_t id, uint64_t *prev);
uint64_t change_now(void);
bool change_moved(uint64_t id, uint64_t since, uint64_t own);
uint64_t change_of(uint64_t id, const struct stat *st);

/* ---- session*.c: sessions, reply cache, open handles ---- */
struct session;
struct session *session_attach(const uint8_t uuid[16], uint64_t boot_gen,
			       const char *peer, const uint8_t *owner,
			       const char *keyname, int *err);
void session_detach(struct session *s);
void session_end(struct session *s);
uint64_t session_id(const struct session *s);
void session_ref(struct session *s);
void session_unref(struct session *s);
int session_sync(struct session *s);
struct idr_range;
int session_idrange(struct session *s, uint32_t want, struct idr_range *got);
int session_id_check(struct session *s, uint64_t id, bool allow_used,
		     uint64_t *gen);
void session_id_used(struct session *s, uint64_t id);
int sessions_count(void);
void session_account(struct session *s, uint32_t in, uint32_t out);
/* What pohmel clients lists of a session (clients.c). */
struct sess_info {
	uint64_t id;
	int nconns;
	long long age, idle;		/* seconds */
	char keyname[POHMEL_KEYNAME_MAX + 1];
	int handles;
	unsigned long long requests, bytes_in, bytes_out;
};
int sessions_info(struct sess_info *out, int max);
void sessions_fini(void);

void sessions_load(void);

enum seq_state { SEQ_NEW, SEQ_INDOUBT, SEQ_CACHED, SEQ_OLD };
enum seq_state session_seq_begin(struct session *s, uint64_t seq,
				 bool intent, uint32_t *status,
				 uint8_t *payload, uint32_t *plen, uint32_t cap);
void session_seq_end(struct session *s, uint64_t seq, uint32_t status,
		     const uint8_t *payload, uint32_t plen);
void session_seq_abort(struct session *s, uint64_t seq);

#define HANDLE_READ	POHMEL_OPEN_READ
#define HANDLE_WRITE	POHMEL_OPEN_WRITE
int session_handle_add(struct session *s, int fd, const struct woid *o,
		       unsigned int flags, uint64_t *handle);
int session_handle_get(struct session *s, uint64_t handle,
		       const struct woid *o, int *fd, unsigned int *flags);
int session_handle_any(struct session *s, const struct woid *o, int *fd);
int session_handle_close(struct session *s, uint64_t handle,
			 const struct woid *o);
int session_handle_fds(void);	/* handle fds held, all sessions */

/* ---- outbox.c: what is written to a connection's socket ---- */
struct conn;
struct ob_msg;
struct outbox {
	/* Held by the one thread writing to the socket, for whole
	 * messages; taken before mu. Pushers only trylock it. */
	pthread_mutex_t write_mu;
	/* Protects the rest; a leaf, never held across a blocking call.
	 * head and off change only with write_mu held as well. */
	pthread_mutex_t mu;
	struct ob_msg *head, *tail;	/* server messages, in order */
	size_t off;			/* of head, already written */
	size_t bytes;			/* charged against the bound */
	unsigned int count;		/* messages queued */
	struct timespec since;		/* CLOCK_MONOTONIC: became non-empty
					 * or last sent bytes of it */
	bool closed;			/* its reader is done: no pushes */
	bool dead;			/* cut or failed: nothing is written */
	int wake_fd;			/* eventfd: the reader polls POLLOUT;
					 * set at init, no lock */
	/* The record layer's sending side (1.3), under mu: counters are
	 * taken in the order messages reach the socket. */
	bool sealed;
	bool sign;
	struct aead tx;
	uint64_t tx_ctr;
};
void outbox_setup(void);
int outbox_init(struct outbox *ob);
void outbox_fini(struct outbox *ob);
int outbox_push(struct conn *c, const void *buf, size_t len);
/*
 * Bytes of a file that follow a reply on the wire, sent from the file by
 * sendfile(2) (no copy through pohmeld): a READ's data on an unsealed
 * connection. fd -1: none; else the sender closes fd.
 */
struct reply_file {
	int fd;
	uint64_t off;
	uint32_t len;
};

int outbox_reply(struct conn *c, const void *buf, size_t len);
int outbox_reply_rf(struct conn *c, const void *buf, size_t len,
		    struct reply_file *rf);
int outbox_poll(struct conn *c, int ms);
int outbox_seal(struct conn *c, uint64_t alg, bool sign,
		const uint8_t key[32], uint64_t ctr);
void outbox_expire(struct conn *c);
void outbox_close(struct conn *c);

/* ---- conn.c: one thread per connection ---- */
enum conn_state { CONN_NEW, CONN_HELLO, CONN_AUTHED };
/* one recv takes a small request whole, header and body */
#define CONN_RA_SIZE	4096
struct conn {
	int fd;
	atomic_int refs;
	struct policy *pol;		/* referenced: the rules it was
					 * accepted under (policy.c) */
	char peer[64];
	struct outbox ob;		/* every write to fd (outbox.c) */

	/* Owned by the connection's thread; others never touch these. */
	enum conn_state state;
	/* Read ahead of the message being read (conn_read): bytes
	 * [ra_off, ra_end) of ra came with an earlier recv. */
	uint32_t ra_off, ra_end;
	uint8_t ra[CONN_RA_SIZE];
	uint32_t max_msg;
	uint32_t max_nego;		/* max_msg from HELLO, used after AUTH */
	uint64_t features;
	uint8_t uuid[16];
	uint64_t boot_gen;
	uint8_t nonce_c[POHMEL_NONCE_LEN];
	uint8_t nonce_s[POHMEL_NONCE_LEN];
	struct session *sess;

	/* The handshake (dispatch.c) and the record layer (conn.c). */
	char keyname[POHMEL_KEYNAME_MAX + 1];	/* as the client named it */
	bool hs_refused;		/* auth_refused() said why already */
	const struct keyent *key;	/* in pol; NULL: unknown name */
	uint8_t fake_key[32];		/* unknown name: MACs from this */
	bool v12;			/* a 1.2 client (1.2 handshake) */
	uint8_t mac_c[POHMEL_MAC_LEN];	/* what AUTH must carry */
	uint32_t auth_tag;		/* of the AUTH request, if read */
	uint8_t k_c2s[32], k_s2c[32];	/* until the record layer starts */
	bool seal_next;			/* start it after the HELLO reply */
	bool sealed;			/* records only, both ways */
	struct aead rx;
	uint64_t rx_ctr;
	atomic_bool keyed;		/* owner is set (conns_revoke) */
	uint8_t owner[32];		/* the key's fingerprint (policy.c) */

	bool grants_gone;		/* under grants_mu (grants.c) */
	int ngrants;			/* objects it holds a grant on, ditto */
	atomic_bool gone;		/* its thread is done reading */
	pthread_mutex_t defer_mu;	/* protects dq_*: the worker pool */
	struct work *dq_head, *dq_tail;	/* queued and running, in order */
	pthread_cond_t dq_cv;		/* a request queued or done */
	int dq_workers;			/* its worker threads */
	int dq_idle;			/* of them, waiting on dq_cv */
	struct conn *next, *prev;	/* conns list, under conns_mu */
	struct timespec hs_deadline;	/* CLOCK_MONOTONIC: AUTH by then */
	uint8_t addr[16];		/* client address, v4 as v4-mapped */
	bool addr_counted;		/* in the per-address table */
	/* Set once at AUTH, read by conns_info under conns_mu: */
	_Atomic uint64_t shown_sess;	/* its session's id; 0: not authed */
	atomic_int shown_sec;		/* SEC_* it uses */
};
/* peer: conn_peer_name() of sa, as the accept loop logged it */
int conn_start(int fd, const struct sockaddr *sa, const char *peer,
	       struct policy *pol);
void conn_get(struct conn *c);
void conn_peer_name(const struct sockaddr *sa, char *buf, size_t n);
void conn_put(struct conn *c);
bool conns_shutdown(void);
int conns_revoke(const struct policy *p);
/* An authenticated connection as pohmel clients lists it (clients.c). */
struct conn_info {
	uint64_t sess_id;
	char peer[64];
	int sec;			/* SEC_* */
	int grants;
};
int conns_info(struct conn_info *out, int max);

/* ---- clients.c: STATS's session listing, for administrators ---- */
bool clients_may_list(const struct conn *c);
long clients_format(char *buf, size_t n, size_t cap);
#define READ_TIMEOUT	(-1)
int conn_read(struct conn *c, uint8_t *p, size_t n);

/* ---- conn_rec.c: the record layer, receiving ---- */
int conn_seal_start(struct conn *c);
int conn_read_msg(struct conn *c, uint8_t *rx, uint8_t *tx,
		  const uint8_t **msg, uint32_t *len, struct whdr *h);
int conn_init_struct(struct conn *c, int fd, struct policy *pol);
void conns_worker_count(int delta);
#define THREAD_STACK	(256 * 1024)	/* a connection's threads' */

/* ---- conn_work.c: a connection's worker pool ---- */
struct order;
void conn_work_init(struct conn *c);
void conn_work_fini(struct conn *c);
void conn_work_gone(struct conn *c);
bool conn_must_queue(struct conn *c, const uint8_t *raw, uint32_t len,
		     const struct whdr *h, struct order *o);
int conn_defer(struct conn *c, const uint8_t *raw, uint32_t rawlen,
	       const struct order *o);

/* ---- proto.c: the one place every length is validated ---- */
struct msg {
	struct whdr hdr;
	struct creds cr;		/* hdr uid/gid + groups block */
	const uint8_t *body;		/* after the groups block */
	uint32_t blen;

	/* decoded body fields; which are set depends on hdr.op */
	struct woid oid, oid2;
	char name[POHMEL_NAME_MAX + 1];
	char name2[POHMEL_NAME_MAX + 1];
	uint16_t namelen, namelen2;
	const uint8_t *data;		/* WRITE data, SETXATTR value, target */
	uint32_t dlen;
	uint32_t mode, rdev, flags, uid, gid, valid, count, type, pid;
	uint64_t handle, offset, cookie, size, owner, start, len;
	uint64_t cid;			/* CREATE_ID: the delegated id */
	struct wtime ctime;		/* CREATE_TIME: the client's */
	struct wtime atime, mtime;
};
#define PROTO_DROP	(-1)
int proto_hdr(const uint8_t *raw, struct whdr *h, uint32_t max_msg);
const char *proto_record(const uint8_t *raw, uint32_t max_msg, uint32_t *n);
const char *proto_inner(const uint8_t *inner, uint32_t n, struct whdr *h,
			uint32_t max_msg);
int proto_parse(struct msg *m, const uint8_t *raw, uint32_t rawlen);
int proto_name_check(const char *name, uint32_t len);

/* ---- order.c: which requests of a connection keep their order ---- */
#define ORDER_IDS	8
struct order {
	bool all;			/* orders with every request */
	bool shared;			/* READ, FSYNC: orders with neither */
	uint32_t count;			/* a READ: bytes asked */
	uint8_t n;
	uint64_t id[ORDER_IDS];		/* objects it names */
};
void order_of(const uint8_t *raw, uint32_t rawlen, uint32_t max_msg,
	      struct order *o);
bool order_overlap(const struct order *a, const struct order *b);

/* ---- dispatch.c ---- */
/* An object a request reads or modifies (grants.c). */
struct grant_mark {
	struct grant_mark *next;	/* gobj's in-flight list, grants_mu */
	struct conn *c;
	struct gobj *obj;		/* set while marked in flight */
	uint64_t id;
	bool write;
	bool bumped;			/* change_bump done (dispatch.c) */
	uint64_t tag;			/* that bump's tag; 0: none, or
					 * another's bump came first */
};
#define GRANT_MARKS	4

struct req {
	struct conn *c;
	struct session *s;
	const struct msg *m;
	struct creds cr;	/* after squashing */
	bool as_caller;		/* creds_enter() done */
	uint8_t *out;		/* reply payload goes here */
	uint32_t cap;
	uint32_t len;
	bool deferred;		/* reply sent later (LOCK WAIT) */
	bool close_after;	/* BYE */
	bool in_batch;		/* no LOCK WAIT inside a BATCH */
	bool redo;		/* in doubt: a run before a restart died */
	int ngm;
	struct grant_mark gm[GRANT_MARKS];
	uint64_t since;		/* change_now() as grants_begin let r run */
	struct reply_file *rf;	/* NULL: a READ's data goes in out */
	/* A directory grants.c resolved for the request's targets, kept
	 * for req_obj (saves the handler a second open and stat). */
	bool has_pre;
	int pre_fd;
	struct woid pre_oid;
	struct stat pre_st;
};
enum { DISPATCH_OK = 0, DISPATCH_DROP = -1, DISPATCH_CLOSE = 1,
       DISPATCH_DEFER = 2 };
int dispatch(struct conn *c, const uint8_t *raw, uint32_t rawlen,
	     uint8_t *out, uint32_t cap, uint32_t *outlen);
int dispatch_rf(struct conn *c, const uint8_t *raw, uint32_t rawlen,
		uint8_t *out, uint32_t cap, uint32_t *outlen,
		struct reply_file *rf);
int auth_refused(struct conn *c, const char *why, uint8_t *out,
		 uint32_t *outlen);
/* On a worker thread: may wait for recalls; s is the worker's reference. */
int dispatch_wait(struct conn *c, struct session *s, const uint8_t *raw,
		  uint32_t rawlen, uint8_t *out, uint32_t cap,
		  uint32_t *outlen, struct reply_file *rf);
void reply_finish(struct req *r, uint32_t status, uint8_t *hdrp);
bool req_bump(struct req *r, uint64_t id);

/* ---- ops_*.c helpers (ops_attr.c) ---- */
void *req_put(struct req *r, uint32_t n);
int req_obj(struct req *r, const struct woid *o, int *fd, struct stat *st);
void req_keep_pre(struct req *r, const struct woid *o, int fd,
		  const struct stat *st);
void req_drop_pre(struct req *r);
int req_caller(struct req *r);
int attr_of_fd(int fd, const struct stat *st, const struct woid *known,
	       struct wattr *a);
int attr_put(struct req *r, int fd);
int attr_put_known(struct req *r, int fd, const struct woid *known);
int child_open(int dirfd, const char *name, int *fd);
void child_open_init(void);
void proc_path(char *buf, size_t n, int fd);

int op_getattr(struct req *r);
int op_setattr(struct req *r);
int op_statfs(struct req *r);
int op_lookup(struct req *r);
int op_readdir(struct req *r);
int op_create(struct req *r);	/* CREATE, MKDIR, MKNOD, SYMLINK */
int op_readlink(struct req *r);
int op_link(struct req *r);
int op_remove(struct req *r);	/* UNLINK, RMDIR */
int op_rename(struct req *r);
int op_redo_done(struct req *r, int status);
int op_open(struct req *r);
int op_close(struct req *r);
int op_read(struct req *r);
int op_write(struct req *r);
int op_fsync(struct req *r);
int op_xattr(struct req *r);	/* GET/SET/LIST/REMOVEXATTR */
int op_stats(struct req *r);

/* ---- lock.c: byte-range and flock arbitration ---- */
int op_lock(struct req *r);
void lock_session_end(uint64_t sess_id);
void lock_conn_gone(struct conn *c);
void lock_close(uint64_t sess_id, uint64_t obj_id);
void lock_shutdown(void);
long lock_count(void);
long lock_count_session(uint64_t sess);

/* ---- grants.c: coherence grants, RECALL ---- */
#define GRANTS_DEFER	(-2)
extern atomic_int grant_conns;
void grants_init(void);
int grants_begin(struct req *r, bool may_wait);
void grants_end(struct req *r);
void grant_fill(struct req *r, int fd, struct wattr *a);
int op_recall_ack(struct req *r);
int op_release(struct req *r);

/* ---- idrange.c: ids delegated to a session (IDRANGE, CREATE_ID) ---- */
struct idr_range {
	uint64_t start;
	uint64_t gen;
	uint32_t count;
	uint32_t used;		/* ids from start spent (in order) */
};
/* A session's ranges with ids left; under the session's mu. */
struct idr_set {
	struct idr_range r[POHMEL_IDRANGE_HELD];
	unsigned int n;
};
#define IDR_REC_LEN	24
int idr_add(struct idr_set *set, uint32_t want, struct idr_range *out);
int idr_find(const struct idr_set *set, uint64_t id, bool allow_used);
void idr_use(struct idr_set *set, int i, uint64_t id);
void idr_give_back(struct idr_set *set);
const char *idr_check_rec(const struct idr_range *r);
void idr_restore(struct idr_set *set, const struct idr_range *r);
uint32_t idr_enc(uint8_t *b, const struct idr_range *r);
void idr_dec(const uint8_t *b, struct idr_range *r);
int op_idrange(struct req *r);
int op_grant(struct req *r);
bool grant_precheck(const struct req *r);
int idr_create_check(struct req *r, struct woid *want);
int idr_create_bind(struct req *r, int dirfd, const char *name,
		    const struct woid *want, uint64_t min_seq);
void grants_counts(size_t *holders, size_t *watched);
int grants_held(struct conn *c);
void grants_conn_gone(struct conn *c);
void grants_local_change(uint64_t id);
void grants_watch_gone(uint64_t id, int wd);
void grants_release(struct conn *c, const struct woid *o);
void grants_recall_all(void);
void grants_shutdown(void);

/* ---- notify.c: local changes in the export (inotify) ---- */
int notify_init(const char *state_dir);
int notify_watch(int fd, uint64_t id, bool dir);
void notify_unwatch(int wd);
void notify_sync(void);
void *notify_thread(void *arg);

/* ---- listen.c: sockets and systemd ---- */
bool listen_activated(void);
int listen_fds(int *fds, int max);
int listen_bind(int port, int *fds, int max);
void notify_ready(const char *state);

/* ---- watchdog.c: WATCHDOG=1 after a walk of the shared locks ---- */
int watchdog_setup(void);	/* poll() timeout in ms, -1: none */
void watchdog_tick(void);	/* the accept loop, every wakeup */

#endif /* POHMELD_H */
