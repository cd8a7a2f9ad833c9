/* SPDX-License-Identifier: GPL-2.0 */
/*
 * conn.h - the transport: one authenticated TCP connection per mount,
 * many requests in flight matched by tag, a receive thread that also
 * reconnects and replays. Nothing here knows about inodes or dentries.
 */
#ifndef POHMEL_CONN_H
#define POHMEL_CONN_H

#include <linux/bvec.h>
#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "compat.h"
#include "pohmel_proto.h"
#include "seal.h"

struct socket;
struct task_struct;

/*
 * Pages a request sends after its buffer, a reference each while the
 * request lives: page cache pages under writeback until the reply.
 */
struct pohmel_pages {
	struct bio_vec *bv;
	u32 nr;
	u32 len;
};

enum pohmel_req_state {
	POHMEL_RS_NEW,		/* built, not submitted */
	POHMEL_RS_QUEUED,	/* on conn->queue, not on the current socket */
	POHMEL_RS_SENT,		/* written to the current socket */
	POHMEL_RS_DONE,		/* answered (or failed); off the queue */
	POHMEL_RS_CANCELLED,	/* waiter gave up; off the queue */
};

/*
 * One request and, once answered, its reply. The submitter holds one
 * reference; membership in conn->queue holds another, dropped by whoever
 * takes the request off the queue (the receive thread on a reply, a
 * canceller, or the shutdown path).
 */
struct pohmel_req {
	struct kref ref;
	struct list_head list;		/* conn->queue; conn->lock */
	struct completion done;
	enum pohmel_req_state state;	/* conn->lock */
	u32 tag;			/* 0 until submitted */
	u16 op;
	bool needs_seq;			/* non-idempotent: gets a session seq */
	bool resent;			/* written to some socket already */
	u64 seq;			/* 0, or assigned at first send */
	u32 xflags;			/* op-specific hint for reply checks */
	u64 stamp;			/* conn->recall_seq when submitted */
	u64 t_queued;			/* ktime_get_ns() when submitted */
	u32 gen;			/* conn->gen the reply arrived on */
	u64 rseq;			/* conn->reply_seq: arrival order */
	u32 want;			/* READ: bytes asked */
	int err;			/* result once DONE: 0 or -errno */
	struct llist_node anode;	/* conn->async_reqs */
	/*
	 * Submitted by pohmel_conn_submit (nobody waits): end(req) runs on
	 * conn->io_wq once the request ended (req->err; answered or failed)
	 * and the submitter's reference goes after it. Never cancelled.
	 */
	void (*end)(struct pohmel_req *req);
	void *end_priv;
	struct pohmel_conn *end_conn;
	/*
	 * A READ with end set may give the pages its data goes to: the
	 * receive thread then puts the data there as it arrives (direct: its
	 * bytes; rbuf holds only the reply's fixed part), with no message
	 * buffer.
	 */
	struct iov_iter *dest;
	u32 direct;
	struct work_struct end_work;
	/* request: header + payload; hdr.tag/seq are patched when sent */
	u8 *sbuf;
	u32 slen;
	u32 scap;
	/*
	 * A WRITE of page cache pages: its data, on the wire after sbuf
	 * (counted in the header's len), sent from the pages themselves.
	 */
	struct pohmel_pages data;
	bool overflow;			/* an encoder ran out of room */
	/*
	 * BATCH: its bn inner requests (ops bops[], tags 1..bn) take nseq
	 * consecutive seqs, seq the first, written into their headers when
	 * assigned (pohmel_batch_set_seqs); the reply is checked against
	 * them (pohmel_check_reply).
	 */
	u32 nseq;
	u32 bn;
	u16 *bops;
	/* reply payload, owned by the request once DONE */
	u8 *rbuf;
	u32 rlen;
};

/*
 * Per request type, counted as each request ends (stats.c shows them in
 * mountstats; pohmelstat reads them): like NFS's per-op statistics.
 */
struct pohmel_op_stats {
	atomic64_t done;		/* answered, or failed */
	atomic64_t errors;		/* ended with an error */
	atomic64_t bytes_sent;		/* the request (once, not replays) */
	atomic64_t bytes_recv;		/* the reply's payload */
	atomic64_t exec_ns;		/* queued to ended, summed */
	atomic64_t exec_max_ns;		/* the longest */
};

struct pohmel_conn_stats {
	atomic64_t ops[POHMEL_OP_MAX];
	struct pohmel_op_stats op[POHMEL_OP_MAX];
	atomic_t in_flight;		/* queued or sent, not ended */
	atomic64_t in_flight_max;	/* the most in_flight has been */
	atomic64_t bytes_recv_direct;	/* READ data received into pages */
	atomic64_t bytes_sent_pages;	/* WRITE data sent from pages */
	atomic64_t round_trips;
	atomic64_t bytes_sent;
	atomic64_t bytes_recv;
	atomic64_t reconnects;
	atomic64_t replays;
	atomic64_t timeouts;
	atomic64_t proto_errors;
	atomic64_t recalls;		/* RECALLs received */
	atomic64_t recall_acks;		/* RECALL_ACKs sent */
	atomic64_t recall_ns;		/* sum of arrival-to-ack times */
	atomic64_t recall_max_ns;	/* the longest of them */
	atomic64_t releases;		/* grants given back (oids in RELEASE) */
	atomic64_t seq_waits;		/* held back by the reply-cache window */
	atomic64_t auth_failures;	/* handshakes refused either way */
	atomic64_t seal_failures;	/* records that failed their tag */
	atomic64_t idle_pings;		/* PINGs for replies overdue */
};

/*
 * The last POHMEL_RECALL_RING recalls, so that a reply to a request sent
 * before a RECALL arrived carries at most that recall's target for its
 * object (pohmel_proto.h: the per-object recall counter). A request
 * older than the ring is treated as recalled to NONE on every object.
 */
#define POHMEL_RECALL_RING	64
struct pohmel_recall_rec {
	u64 id;
	u64 seq;
	u32 to;
};

struct pohmel_session {
	u8 uuid[16];
	u64 boot_gen;			/* ours, fixed for the mount */
	u64 server_boot_gen;		/* learnt at HELLO */
	/*
	 * The server's write verifier (FEAT_STABLE, from the HELLO reply)
	 * and verf_gen, bumped when a new connection shows another one (or,
	 * from a server without FEAT_STABLE, another boot_gen): a WRITE is
	 * only made stable by an FSYNC answered under the verf_gen it was
	 * submitted under. Both written by the handshake only, before any
	 * request goes out on the new connection.
	 */
	u8 verf[16];
	atomic_t verf_gen;
	bool proto10;			/* the server refused the 1.1 bits */
	atomic64_t next_seq;		/* last seq handed out */
	u64 features;			/* negotiated */
	u32 max_msg;			/* negotiated */
	u8 key[POHMEL_KEY_MAX];
	unsigned int keylen;		/* 0: no authentication */
	char keyname[POHMEL_KEYNAME_MAX + 1];
	unsigned int keyname_len;
	enum pohmel_sec sec;		/* what the mount requires */
	u64 ciphers;			/* cipher=: AEADs it may offer */
	u8 root_attr[POHMEL_ATTR_SIZE];	/* wire copy from the AUTH reply */
};

/*
 * Tags: 1..POHMEL_TAG_MAX for requests that wait for their reply;
 * POHMEL_TAG_NOWAIT for what is sent and forgotten: the recall work's
 * acks, the release work's RELEASEs.
 * A request given up while on the wire leaves POHMEL_TAG_GONE in the tag
 * table until its reply comes or the socket goes, so that a reply to a
 * tag never sent (or answered twice) can be told from a late one.
 */
#define POHMEL_TAG_MAX		0xfffffffeU
#define POHMEL_TAG_NOWAIT	0xffffffffU
#define POHMEL_TAG_GONE		xa_mk_value(0)

/* Unacknowledged RECALLs one connection may queue before it is dropped. */
#define POHMEL_MAX_RECALLS	1024

struct pohmel_conn;

/* What the layer above wants to hear about. */
struct pohmel_conn_ops {
	/*
	 * Server-initiated RECALL; called from a work item, may sleep, but
	 * must not wait for requests to the server that could be held up
	 * behind this recall. RECALL_ACK is sent when it returns.
	 */
	void (*recall)(void *priv, const struct pohmel_recall *rec);
};

struct pohmel_conn {
	/*
	 * lock protects: queue, every queued request's state/list, up,
	 * dying, refused, sock and seal (pointer publication).
	 */
	spinlock_t lock;
	struct list_head queue;		/* unanswered requests, submit order */
	struct xarray tags;		/* tag -> request (own xa_lock) */
	u32 next_tag;			/* xa_alloc_cyclic cursor */
	bool up;			/* authenticated, replay finished */
	bool dying;			/* unmounting: fail everything */
	bool refused;			/* the server refused our key */

	/*
	 * send_mutex serialises writes to the socket; the receive thread
	 * holds it while it (re)connects, swaps sock and replays, so new
	 * requests go out only after the replayed ones.
	 */
	struct mutex send_mutex;
	struct socket *sock;		/* send_mutex (and lock to publish) */
	/*
	 * What protects sock's records (NULL: plain): set and freed with
	 * sock; its tx half used under send_mutex, its rx half by the
	 * receive thread only (seal.c).
	 */
	struct pohmel_seal *seal;
	/*
	 * sock_mutex lets umount -f shut the socket down without
	 * send_mutex, which a sender stuck on a server that stopped reading
	 * may hold for ever; conn_down takes it to release the socket.
	 */
	struct mutex sock_mutex;

	/*
	 * The server keeps the replies of the last POHMEL_REPLY_CACHE
	 * sequence numbers, so seq S goes out only once every seq up to
	 * S - POHMEL_REPLY_CACHE is answered: a replay never finds its
	 * reply evicted, and a slow request never has a newer one wait on
	 * its slot. seq_mutex orders handing out a seq with putting its
	 * request on the queue; seq_wq wakes a submitter held back when a
	 * sequenced request leaves the queue. seq_low (lock) is a lower
	 * bound of the lowest unanswered seq: it only grows.
	 */
	struct mutex seq_mutex;
	wait_queue_head_t seq_wq;
	u64 seq_low;

	struct task_struct *task;	/* receive / reconnect thread */
	struct workqueue_struct *recall_wq;	/* one work item per RECALL */
	/*
	 * The ends of requests nobody waits for (readahead's READs): apart
	 * from recall_wq, whose work may wait on the folios they unlock.
	 */
	struct workqueue_struct *io_wq;
	atomic_t nr_recalls;		/* queued or running, < POHMEL_MAX_RECALLS */
	atomic_t recalls_active;	/* work items inside ops->recall */
	wait_queue_head_t recalls_idle;	/* ... woken when none is */
	/*
	 * gen counts connections: it moves when a socket is lost, which
	 * ends every grant given on it (written under lock by the receive
	 * thread; read locklessly to test a grant).
	 */
	u32 gen;
	u64 reply_seq;			/* replies received, ever; lock */
	/*
	 * Requests that may have changed the server's state (every op but
	 * the read-only ones) that ended, answered or not: syncfs needs no
	 * FSYNC_FS when none ended since its last one (pohmel_commit_fs).
	 */
	atomic64_t changes_done;
	bool grants;			/* FEAT_GRANTS wanted (mount option) */
	bool writeback;			/* FEAT_IDRANGE, _ASK_GRANT wanted */
	atomic_t wb_pending;		/* write-back log entries (wb.c) */
	/* recall_lock protects recall_seq and recall_ring */
	spinlock_t recall_lock;
	u64 recall_seq;			/* RECALLs received, ever */
	struct pohmel_recall_rec recall_ring[POHMEL_RECALL_RING];
	/*
	 * Grants to give back (evicted inodes), sent by release_work on
	 * recall_wq. release_lock protects release_list and its entries;
	 * taken alone (under no other lock of the conn).
	 */
	spinlock_t release_lock;
	struct list_head release_list;
	struct work_struct release_work;
	/*
	 * Requests nobody waits for (CLOSE), queued by submit but sent by
	 * async_work on recall_wq, never by the submitter: eviction (from
	 * reclaim, perhaps kswapd) must not block on a full socket.
	 */
	struct llist_head async_reqs;
	struct work_struct async_work;
	struct work_struct ping_work;	/* the idle PING, on recall_wq */

	struct sockaddr_storage addr;
	int addrlen;
	/* the mount's source as written (HOST:/PATH), for log lines; fixed */
	char name[64];
	struct net *net;		/* mounter's netns, referenced; fixed */
	bool soft;
	unsigned long timeo;		/* soft: per-call limit, jiffies */

	struct pohmel_session sess;
	struct pohmel_conn_stats stats;

	const struct pohmel_conn_ops *ops;
	void *priv;
	const char *why;		/* reason of the last handshake failure */
};

/* stats.c: a request ended with err (conn.c, under c->lock). */
void pohmel_update_max(atomic64_t *max, s64 v);
void pohmel_stats_req_end(struct pohmel_conn_stats *cs,
			  const struct pohmel_req *req, int err);

/* Connected and authenticated right now (a hint: may change at once). */
static inline bool pohmel_conn_is_up(struct pohmel_conn *c)
{
	return READ_ONCE(c->up);
}

/* The connection negotiated grants (a hint, like pohmel_conn_is_up). */
static inline bool pohmel_conn_grants(struct pohmel_conn *c)
{
	return READ_ONCE(c->sess.features) & POHMEL_FEAT_GRANTS;
}

/* conn.c */
int pohmel_conn_init(struct pohmel_conn *c);
void pohmel_conn_release(struct pohmel_conn *c, u64 id, u64 gen, u32 conn_gen);
/* conn.c, for conn_grants.c and conn_recv.c */
int pohmel_conn_send_req(struct pohmel_conn *c, struct pohmel_req *req);
void pohmel_conn_answer_locked(struct pohmel_conn *c, struct pohmel_req *req,
			       int err);
/* conn_recv.c */
int pohmel_conn_recv_one(struct pohmel_conn *c, struct socket *sock,
			 struct pohmel_seal *seal);
/* conn_grants.c */
int pohmel_conn_queue_recall(struct pohmel_conn *c, const struct pohmel_hdr *h,
			     const void *body, u32 len);
void pohmel_conn_release_work(struct work_struct *work);
void pohmel_conn_release_drop_all(struct pohmel_conn *c);
u64 pohmel_conn_stamp(struct pohmel_conn *c);
void pohmel_conn_grant_ended(struct pohmel_conn *c, u64 id);
u32 pohmel_conn_grant_cap(struct pohmel_conn *c, u64 id, u64 stamp,
			  u32 grant);
int pohmel_conn_start(struct pohmel_conn *c);
void pohmel_conn_stop(struct pohmel_conn *c);
void pohmel_conn_abort(struct pohmel_conn *c);
void *pohmel_msg_alloc(size_t size, gfp_t extra);	/* kvfree() it */
void pohmel_conn_proto_error(struct pohmel_conn *c, u32 gen, const char *what);
void pohmel_conn_stop_recalls(struct pohmel_conn *c);
int pohmel_conn_call(struct pohmel_conn *c, struct pohmel_req *req);
int pohmel_conn_send(struct pohmel_conn *c, struct pohmel_req *req);
int pohmel_conn_wait(struct pohmel_conn *c, struct pohmel_req *req);
int pohmel_conn_call_async(struct pohmel_conn *c, struct pohmel_req *req);
int pohmel_conn_submit(struct pohmel_conn *c, struct pohmel_req *req);
bool pohmel_conn_take_back(struct pohmel_conn *c, struct pohmel_req *req);
int pohmel_conn_send_all(struct socket *sock, const void *buf, size_t len);
int pohmel_conn_send_more(struct socket *sock, const void *buf, size_t len);
int pohmel_conn_send_pages(struct socket *sock, const struct pohmel_pages *pg);
int pohmel_conn_recv_all(struct socket *sock, void *buf, size_t len);
int pohmel_conn_recv_msg(struct socket *sock, void *buf, size_t len,
			 bool patient);

/* wb.c: the mount's write-back, told the connection came back */
void pohmel_wb_reconnected(struct pohmel_conn *c);

/* session.c */
void pohmel_session_init(struct pohmel_session *s);
int pohmel_session_handshake(struct pohmel_conn *c, struct socket *sock,
			     struct pohmel_seal **sealp);
u64 pohmel_session_acked_seq(struct pohmel_conn *c);

/* proto.c: request building and reply validation */
struct pohmel_req *pohmel_req_alloc(struct pohmel_conn *c, u16 op,
				    u32 payload, bool creds);
void pohmel_req_put(struct pohmel_req *req);
void *pohmel_req_append(struct pohmel_req *req, u32 len);
int pohmel_req_append_name(struct pohmel_req *req, const char *name,
			   u32 len);
void pohmel_req_set_hdr(struct pohmel_req *req);
int pohmel_req_attach_folios(struct pohmel_req *req, struct folio **folios,
			     unsigned int nr, u32 len);
void pohmel_batch_set_seqs(struct pohmel_req *req);
int pohmel_check_hdr(const struct pohmel_hdr *h, u32 max_msg);
int pohmel_check_reply(const struct pohmel_req *req, const u8 *p, u32 len);
int pohmel_check_attr(const struct pohmel_attr *a);
int pohmel_check_recall(const struct pohmel_recall *r);
int pohmel_check_name(const u8 *name, u32 len);
bool pohmel_op_needs_seq(u16 op);
int pohmel_status_to_errno(u32 status);

#endif /* POHMEL_CONN_H */
