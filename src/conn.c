// SPDX-License-Identifier: GPL-2.0
/*
 * conn.c - the TCP connection of one mount: submit requests, match replies
 * by tag, and one kernel thread that receives, and when the connection
 * breaks, reconnects with backoff, re-authenticates the session and
 * replays every unanswered request (non-idempotent ones with their
 * original sequence numbers, so the server's reply cache applies them
 * exactly once).
 */
#include <linux/kthread.h>
#include <linux/llist.h>
#include <linux/net.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "compat.h"
#include "conn.h"

/*
 * Connecting and the handshake wait timeo (the mount's, default 60 s),
 * but never less than this: a server busy for a few seconds (a loaded
 * machine, a long fsync) must not fail a mount that would have worked.
 */
#define POHMEL_CONNECT_TIMEO_MIN	(10 * HZ)
#define POHMEL_BACKOFF_MIN	(HZ / 10)
#define POHMEL_BACKOFF_MAX	(5 * HZ)
/*
 * Nothing received for idle_ping_s seconds while requests wait: send a
 * PING. On a sealed stream a message lost on the way (a relay that drops
 * it) only shows when the next one fails its counter; a hard mount whose
 * callers all wait for that lost reply would otherwise send nothing
 * again. Read at each connect; lowered only by tests that drop messages.
 */
static unsigned int idle_ping_s = 15;
module_param(idle_ping_s, uint, 0644);
MODULE_PARM_DESC(idle_ping_s, "seconds without a reply before a PING (default 15; testing)");

static long idle_ping_jiffies(void)
{
	return (long)clamp_t(unsigned int, READ_ONCE(idle_ping_s), 1, 3600) * HZ;
}

static int send_kvec(struct socket *sock, const void *buf, size_t len,
		     int flags)
{
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | flags };
	int ret;

	while (iov.iov_len) {
		ret = kernel_sendmsg(sock, &msg, &iov, 1, iov.iov_len);
		if (ret <= 0)
			return ret ? ret : -EPIPE;
		iov.iov_base += ret;
		iov.iov_len -= ret;
	}
	return 0;
}

int pohmel_conn_send_all(struct socket *sock, const void *buf, size_t len)
{
	return send_kvec(sock, buf, len, 0);
}

/* The start of a message whose pages follow (pohmel_conn_send_pages). */
int pohmel_conn_send_more(struct socket *sock, const void *buf, size_t len)
{
	return send_kvec(sock, buf, len, MSG_MORE);
}

/*
 * The pages that end a message, by reference: the socket's buffers hold
 * the pages, not a copy. They are page cache pages under writeback until
 * the reply comes, which the server sends only after reading them all.
 */
int pohmel_conn_send_pages(struct socket *sock, const struct pohmel_pages *pg)
{
	return pohmel_sock_send_pages(sock, pg->bv, pg->nr, pg->len);
}

int pohmel_conn_recv_all(struct socket *sock, void *buf, size_t len)
{
	return pohmel_conn_recv_msg(sock, buf, len, false);
}

/*
 * Receive exactly @len bytes. The socket's receive timeout ends the wait
 * (-EAGAIN) unless @patient and part of the message has come: then it
 * waits for the rest (a fatal signal, as at unmount, still ends it).
 */
int pohmel_conn_recv_msg(struct socket *sock, void *buf, size_t len,
			 bool patient)
{
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = 0 };
	int ret;

	while (iov.iov_len) {
		ret = kernel_recvmsg(sock, &msg, &iov, 1, iov.iov_len,
				     MSG_WAITALL);
		if (ret == -EAGAIN && patient && iov.iov_len < len)
			continue;
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
		iov.iov_base += ret;
		iov.iov_len -= ret;
	}
	return 0;
}

/*
 * Give up @req's tag. A request on the current socket that was not
 * answered may still get its reply: its tag stays reserved
 * (POHMEL_TAG_GONE) until then or until the socket goes.
 */
static void put_tag_locked(struct pohmel_conn *c, struct pohmel_req *req,
			   bool answered)
{
	lockdep_assert_held(&c->lock);
	if (!answered && req->state == POHMEL_RS_SENT)
		xa_store(&c->tags, req->tag, POHMEL_TAG_GONE, GFP_ATOMIC);
	else
		xa_erase(&c->tags, req->tag);
}

/*
 * Whether @op may leave a change the server holds only in memory: every
 * op but those that only read or end a session's own state (so an op
 * added later counts until it is listed here).
 */
static bool op_changes(u16 op)
{
	switch (op) {
	case POHMEL_OP_HELLO:
	case POHMEL_OP_AUTH:
	case POHMEL_OP_PING:
	case POHMEL_OP_LOOKUP:
	case POHMEL_OP_GETATTR:
	case POHMEL_OP_READDIR:
	case POHMEL_OP_READLINK:
	case POHMEL_OP_OPEN:
	case POHMEL_OP_CLOSE:
	case POHMEL_OP_READ:
	case POHMEL_OP_FSYNC:
	case POHMEL_OP_STATFS:
	case POHMEL_OP_GETXATTR:
	case POHMEL_OP_LISTXATTR:
	case POHMEL_OP_LOCK:
	case POHMEL_OP_RECALL_ACK:
	case POHMEL_OP_BYE:
	case POHMEL_OP_STATS:
	case POHMEL_OP_RELEASE:
	case POHMEL_OP_GRANT:
		return false;
	default:
		return true;
	}
}

static void complete_req_locked(struct pohmel_conn *c, struct pohmel_req *req,
				int err)
{
	lockdep_assert_held(&c->lock);
	if (op_changes(req->op))
		atomic64_inc(&c->changes_done);
	pohmel_stats_req_end(&c->stats, req, err);
	list_del_init(&req->list);
	req->err = err;
	req->state = POHMEL_RS_DONE;
	complete_all(&req->done);
	if (req->end)
		queue_work(c->io_wq, &req->end_work);
	if (req->seq)
		wake_up(&c->seq_wq);
}

/* Take @req off the queue and fail it with @err. Must hold c->lock. */
static void finish_req_locked(struct pohmel_conn *c, struct pohmel_req *req,
			      int err)
{
	put_tag_locked(c, req, false);
	complete_req_locked(c, req, err);
}

/* @req got its reply: finish it with @err. Must hold c->lock. */
void pohmel_conn_answer_locked(struct pohmel_conn *c, struct pohmel_req *req,
			       int err)
{
	put_tag_locked(c, req, true);
	complete_req_locked(c, req, err);
}

/* Write @req to the socket. Must hold c->send_mutex. */
int pohmel_conn_send_req(struct pohmel_conn *c, struct pohmel_req *req)
{
	struct pohmel_hdr *h = (struct pohmel_hdr *)req->sbuf;
	int err;

	lockdep_assert_held(&c->send_mutex);
	h->tag = cpu_to_be32(req->tag);
	h->seq = cpu_to_be64(req->seq);
	err = pohmel_seal_send(c->seal, c->sock, req->sbuf, req->slen,
			       req->data.len ? &req->data : NULL);
	if (err == -EKEYEXPIRED)
		pr_info_ratelimited("%s (%pISpc): keys used up on this connection: reconnecting for new ones\n",
				    c->name, &c->addr);
	if (err) {
		/* the stream is now unframed: let the thread start over */
		kernel_sock_shutdown(c->sock, SHUT_RDWR);
		return err;
	}
	atomic64_add(req->slen + req->data.len, &c->stats.bytes_sent);
	/* unsealed, by reference; a record holds a copy (seal.c) */
	if (!c->seal)
		atomic64_add(req->data.len, &c->stats.bytes_sent_pages);
	pr_debug("send op %u tag %u seq %llu len %u%s\n", req->op, req->tag,
		 req->seq, req->slen, req->resent ? " (replay)" : "");
	req->resent = true;
	return 0;
}

/* Send @req now if the connection is up; else the thread replays it. */
static void try_send(struct pohmel_conn *c, struct pohmel_req *req)
{
	bool go;

	/* killed while a send is stuck: the waiter gives up at once */
	if (mutex_lock_killable(&c->send_mutex))
		return;
	spin_lock(&c->lock);
	go = c->up && c->sock && req->state == POHMEL_RS_QUEUED;
	if (go)
		req->state = POHMEL_RS_SENT;
	spin_unlock(&c->lock);
	if (go && pohmel_conn_send_req(c, req)) {
		spin_lock(&c->lock);
		if (req->state == POHMEL_RS_SENT)
			req->state = POHMEL_RS_QUEUED;
		spin_unlock(&c->lock);
	}
	mutex_unlock(&c->send_mutex);
}

/*
 * May the next sequence number go out (see seq_mutex)? Rescans the queue
 * for the lowest unanswered seq only when the bound it keeps says no.
 */
static bool seq_window_open(struct pohmel_conn *c, u32 n)
{
	/* the last of the n seqs the request takes */
	u64 next = atomic64_read(&c->sess.next_seq) + n;
	struct pohmel_req *req;
	bool open;

	spin_lock(&c->lock);
	open = c->dying || next - c->seq_low < POHMEL_REPLY_CACHE;
	if (!open) {
		c->seq_low = next;
		list_for_each_entry(req, &c->queue, list)
			if (req->seq && req->seq < c->seq_low)
				c->seq_low = req->seq;
		open = next - c->seq_low < POHMEL_REPLY_CACHE;
	}
	spin_unlock(&c->lock);
	return open;
}

/*
 * A non-idempotent request waits for the reply-cache window (on a soft
 * mount no longer than timeo, like a call), then gets its seq and its
 * place on the queue under seq_mutex (held on return 0).
 */
static int seq_wait(struct pohmel_conn *c, u32 n)
{
	int err;

	err = mutex_lock_killable(&c->seq_mutex);
	if (err)
		return err;
	if (!seq_window_open(c, n)) {
		atomic64_inc(&c->stats.seq_waits);
		if (c->soft) {
			long t = wait_event_killable_timeout(c->seq_wq,
							     seq_window_open(c, n),
							     c->timeo);

			if (t == 0) {
				atomic64_inc(&c->stats.timeouts);
				err = -ETIMEDOUT;
			} else if (t < 0) {
				err = (int)t;
			}
		} else {
			err = wait_event_killable(c->seq_wq,
						  seq_window_open(c, n));
		}
		if (err) {
			mutex_unlock(&c->seq_mutex);
			return err;
		}
	}
	return 0;
}

static int submit(struct pohmel_conn *c, struct pohmel_req *req,
		  bool send_now)
{
	bool seq = (req->needs_seq || req->nseq) && !req->seq;
	u32 nseq = req->nseq ?: 1;
	u32 tag, i;
	int err;

	if (req->overflow)
		return -EOVERFLOW;
	pohmel_req_set_hdr(req);
	err = xa_alloc_cyclic(&c->tags, &tag, req,
			      XA_LIMIT(1, POHMEL_TAG_MAX), &c->next_tag,
			      GFP_NOFS);
	if (err < 0)
		return err;
	req->tag = tag;
	if (seq) {
		err = seq_wait(c, nseq);
		if (err)
			goto erase_tag;
	}
	kref_get(&req->ref);		/* the queue's reference */
	spin_lock(&c->lock);
	if (c->dying || c->refused) {
		err = c->dying ? -EIO : -EACCES;
		spin_unlock(&c->lock);
		pohmel_req_put(req);
		goto unlock_seq;
	}
	/*
	 * Ours until we are done with it below: once queued it may be sent
	 * (try_send, a replay), answered and ended at once, and a submitted
	 * request's end_work then puts the caller's reference, its last but
	 * the queue's. Without this, try_send wrote to a freed request
	 * (found by slub_debug under the hostile group).
	 */
	kref_get(&req->ref);
	if (seq) {
		req->seq = atomic64_add_return(nseq, &c->sess.next_seq) -
			   nseq + 1;
		if (req->nseq)
			pohmel_batch_set_seqs(req);
	}
	/* before it is queued: the thread may send it, and it end, at once */
	req->t_queued = ktime_get_ns();
	pohmel_update_max(&c->stats.in_flight_max,
			  atomic_inc_return(&c->stats.in_flight));
	req->state = POHMEL_RS_QUEUED;
	list_add_tail(&req->list, &c->queue);
	spin_unlock(&c->lock);
	if (seq)
		mutex_unlock(&c->seq_mutex);
	spin_lock(&c->recall_lock);
	req->stamp = c->recall_seq;
	spin_unlock(&c->recall_lock);
	atomic64_inc(&c->stats.ops[req->op]);
	for (i = 0; i < req->bn; i++)		/* a BATCH's inner ops */
		atomic64_inc(&c->stats.ops[req->bops[i]]);
	if (send_now)
		try_send(c, req);
	pohmel_req_put(req);		/* ours */
	return 0;

unlock_seq:
	if (seq)
		mutex_unlock(&c->seq_mutex);
erase_tag:
	xa_erase(&c->tags, tag);
	return err;
}

/*
 * Take @req back unless it has ended (or its READ data is arriving, off
 * the queue: recv_direct): true if taken, and then nothing will end it.
 */
bool pohmel_conn_take_back(struct pohmel_conn *c, struct pohmel_req *req)
{
	bool owned = false;

	spin_lock(&c->lock);
	if ((req->state == POHMEL_RS_QUEUED || req->state == POHMEL_RS_SENT) &&
	    !list_empty(&req->list)) {
		list_del_init(&req->list);
		put_tag_locked(c, req, false);
		req->state = POHMEL_RS_CANCELLED;
		owned = true;
		atomic_dec(&c->stats.in_flight);
		/* the server may still apply it: the next syncfs commits */
		if (op_changes(req->op))
			atomic64_inc(&c->changes_done);
		if (req->seq)
			wake_up(&c->seq_wq);
	}
	spin_unlock(&c->lock);
	if (owned)
		pohmel_req_put(req);	/* the queue's reference */
	return owned;
}

/* The waiter gives up: take the request back unless it was answered. */
static int cancel(struct pohmel_conn *c, struct pohmel_req *req, int err)
{
	return pohmel_conn_take_back(c, req) ? err : req->err;
}

/*
 * Wait for the reply of @req, sent by pohmel_conn_send. Returns 0 with
 * req->rbuf/rlen holding the reply payload, or -errno (the server's
 * status, -ETIMEDOUT on a soft mount, -EINTR-like when killed, -EIO when
 * unmounting). Hard mounts wait for as long as it takes, but a fatal
 * signal always ends the wait.
 */
int pohmel_conn_wait(struct pohmel_conn *c, struct pohmel_req *req)
{
	long t;
	int err;

	if (c->soft) {
		t = wait_for_completion_killable_timeout(&req->done, c->timeo);
		if (t == 0) {
			atomic64_inc(&c->stats.timeouts);
			return cancel(c, req, -ETIMEDOUT);
		}
		if (t < 0)
			return cancel(c, req, (int)t);
	} else {
		err = wait_for_completion_killable(&req->done);
		if (err)
			return cancel(c, req, err);
	}
	atomic64_inc(&c->stats.round_trips);
	return req->err;
}

/*
 * Send @req; pohmel_conn_wait() then waits for its reply (a caller may
 * send several first: pipelined O_DIRECT). Every request sent is waited
 * for, whatever happens to the others.
 */
int pohmel_conn_send(struct pohmel_conn *c, struct pohmel_req *req)
{
	return submit(c, req, true);
}

/* Send @req and wait for its reply (pohmel_conn_wait). */
int pohmel_conn_call(struct pohmel_conn *c, struct pohmel_req *req)
{
	int err = submit(c, req, true);

	return err ?: pohmel_conn_wait(c, req);
}

/*
 * Send @req without waiting (CLOSE): the queue keeps it, replays it after
 * a reconnect, and drops it when answered or at unmount.
 */
int pohmel_conn_call_async(struct pohmel_conn *c, struct pohmel_req *req)
{
	int err = submit(c, req, false);

	if (!err) {
		kref_get(&req->ref);	/* async_reqs' reference */
		llist_add(&req->anode, &c->async_reqs);
		queue_work(c->recall_wq, &c->async_work);
	}
	pohmel_req_put(req);
	return err;
}

static void end_work(struct work_struct *work)
{
	struct pohmel_req *req = container_of(work, struct pohmel_req,
					      end_work);

	atomic64_inc(&req->end_conn->stats.round_trips);
	req->end(req);
	pohmel_req_put(req);		/* the submitter's, handed over */
}

/*
 * Send @req (req->end set) and return without waiting: req->end runs on
 * io_wq when it ends, however it ends, and the reference the caller had
 * goes with it. On an error here, nothing runs and the reference is put.
 * Hard mounts only: nothing gives such a request up after timeo.
 */
int pohmel_conn_submit(struct pohmel_conn *c, struct pohmel_req *req)
{
	int err;

	INIT_WORK(&req->end_work, end_work);
	req->end_conn = c;
	err = submit(c, req, true);
	if (err)
		pohmel_req_put(req);
	return err;
}

/* Send what call_async queued, oldest first (see async_reqs). */
static void async_work(struct work_struct *work)
{
	struct pohmel_conn *c = container_of(work, struct pohmel_conn,
					     async_work);
	struct llist_node *list = llist_del_all(&c->async_reqs);
	struct pohmel_req *req, *tmp;

	list = llist_reverse_order(list);
	llist_for_each_entry_safe(req, tmp, list, anode) {
		try_send(c, req);
		pohmel_req_put(req);
	}
}

/* ---- the receive thread ---------------------------------------------- */

static int connect_once(struct pohmel_conn *c, struct socket **sockp,
			struct pohmel_seal **sealp)
{
	struct socket *sock;
	int err;

	c->why = NULL;
	err = sock_create_kern(c->net, c->addr.ss_family, SOCK_STREAM,
			       IPPROTO_TCP, &sock);
	if (err)
		return err;
	sock->sk->sk_allocation = GFP_NOFS;
	pohmel_sk_no_task_frag(sock->sk);
	sock->sk->sk_sndtimeo = max_t(long, c->timeo, POHMEL_CONNECT_TIMEO_MIN);
	sock->sk->sk_rcvtimeo = sock->sk->sk_sndtimeo;
	tcp_sock_set_nodelay(sock->sk);
	sock_set_keepalive(sock->sk);
	tcp_sock_set_keepidle(sock->sk, 30);
	tcp_sock_set_keepintvl(sock->sk, 10);
	tcp_sock_set_keepcnt(sock->sk, 3);
	err = kernel_connect(sock, pohmel_connect_addr(&c->addr), c->addrlen,
			     0);
	if (err == -EINPROGRESS || err == -EAGAIN)
		err = -ETIMEDOUT;
	if (err)
		goto err_sock;
	err = pohmel_session_handshake(c, sock, sealp);
	if (err)
		goto err_sock;
	sock->sk->sk_rcvtimeo = idle_ping_jiffies();
	/*
	 * A server that stops reading must not hold a soft mount's sender
	 * (and everyone queued on send_mutex behind it) past timeo: the
	 * failed send drops the connection.
	 */
	sock->sk->sk_sndtimeo = c->soft ? c->timeo : MAX_SCHEDULE_TIMEOUT;
	*sockp = sock;
	return 0;

err_sock:
	kernel_sock_shutdown(sock, SHUT_RDWR);
	sock_release(sock);
	return err;
}

static int conn_connect(struct pohmel_conn *c, struct socket **sockp,
			struct pohmel_seal **sealp)
{
	bool proto10 = c->sess.proto10;
	int err = connect_once(c, sockp, sealp);

	/* the handshake learnt that the server is 1.0: once more without */
	if (err == -EAGAIN && !proto10 && c->sess.proto10) {
		pr_warn("%s (%pISpc): %s\n", c->name, &c->addr, c->why);
		err = connect_once(c, sockp, sealp);
	}
	return err;
}

/*
 * Install a fresh socket and replay everything unanswered, in order,
 * before anyone else may send.
 */
static void conn_up(struct pohmel_conn *c, struct socket *sock,
		    struct pohmel_seal *seal)
{
	struct pohmel_req *req;

	mutex_lock(&c->send_mutex);
	spin_lock(&c->lock);
	c->sock = sock;
	c->seal = seal;
	spin_unlock(&c->lock);
	for (;;) {
		bool found = false;

		spin_lock(&c->lock);
		list_for_each_entry(req, &c->queue, list) {
			if (req->state == POHMEL_RS_QUEUED) {
				req->state = POHMEL_RS_SENT;
				kref_get(&req->ref);
				found = true;
				break;
			}
		}
		spin_unlock(&c->lock);
		if (!found)
			break;
		if (req->resent)	/* it went out on an earlier socket */
			atomic64_inc(&c->stats.replays);
		if (pohmel_conn_send_req(c, req)) {
			pohmel_req_put(req);
			break;
		}
		pohmel_req_put(req);
	}
	spin_lock(&c->lock);
	c->up = true;
	spin_unlock(&c->lock);
	mutex_unlock(&c->send_mutex);
}

/* The socket broke: everything sent on it goes back to QUEUED. */
static void conn_down(struct pohmel_conn *c)
{
	struct pohmel_req *req, *tmp;
	struct pohmel_seal *seal;
	struct socket *sock;
	unsigned long tag;
	LIST_HEAD(done);
	void *entry;

	mutex_lock(&c->send_mutex);
	spin_lock(&c->lock);
	c->up = false;
	sock = c->sock;
	c->sock = NULL;
	seal = c->seal;
	c->seal = NULL;
	if (sock)	/* grants end with their connection */
		WRITE_ONCE(c->gen, c->gen + 1);
	list_for_each_entry_safe(req, tmp, &c->queue, list) {
		if (req->state != POHMEL_RS_SENT)
			continue;
		if (req->op == POHMEL_OP_BYE) {
			/*
			 * The server ends the session and closes after BYE;
			 * a close is as good as the reply (which it may have
			 * overtaken). Replaying BYE would only loop.
			 */
			finish_req_locked(c, req, 0);
			list_add(&req->list, &done);
			continue;
		}
		req->state = POHMEL_RS_QUEUED;
	}
	/* replies to requests given up can no longer come */
	xa_for_each(&c->tags, tag, entry)
		if (xa_is_value(entry))
			xa_erase(&c->tags, tag);
	spin_unlock(&c->lock);
	mutex_unlock(&c->send_mutex);
	pohmel_seal_free(seal);	/* its receiver is this thread, or gone */
	list_for_each_entry_safe(req, tmp, &done, list) {
		list_del_init(&req->list);
		pohmel_req_put(req);	/* the queue's reference */
	}
	if (sock) {
		mutex_lock(&c->sock_mutex);	/* conn_shutdown() is done */
		kernel_sock_shutdown(sock, SHUT_RDWR);
		sock_release(sock);
		mutex_unlock(&c->sock_mutex);
	}
}

/* Break the current socket from outside: stuck senders and recv fail. */
static void conn_shutdown(struct pohmel_conn *c)
{
	struct socket *sock;

	mutex_lock(&c->sock_mutex);
	spin_lock(&c->lock);
	sock = c->sock;
	spin_unlock(&c->lock);
	if (sock)
		kernel_sock_shutdown(sock, SHUT_RDWR);
	mutex_unlock(&c->sock_mutex);
}

/*
 * A reply that parsed but contradicts what the client knows (see
 * check_new_object() in dir.c): the connection it came on (@gen) is not
 * trusted any more, as after a malformed message; a newer one stays.
 */
void pohmel_conn_proto_error(struct pohmel_conn *c, u32 gen, const char *what)
{
	bool same;

	atomic64_inc(&c->stats.proto_errors);
	pr_warn_ratelimited("%s (%pISpc): %s: dropping the connection\n",
			    c->name, &c->addr, what);
	spin_lock(&c->lock);
	same = c->gen == gen;
	spin_unlock(&c->lock);
	if (same)
		conn_shutdown(c);
}

/* The idle PING (idle_ping_s), sent and forgotten from recall_wq. */
static void ping_work(struct work_struct *work)
{
	struct pohmel_conn *c = container_of(work, struct pohmel_conn,
					     ping_work);
	struct pohmel_req *req;

	req = pohmel_req_alloc(c, POHMEL_OP_PING, 0, false);
	if (!req)
		return;
	pohmel_req_set_hdr(req);
	req->tag = POHMEL_TAG_NOWAIT;
	mutex_lock(&c->send_mutex);
	if (c->sock && !pohmel_conn_send_req(c, req))
		atomic64_inc(&c->stats.idle_pings);
	mutex_unlock(&c->send_mutex);
	pohmel_req_put(req);
}

/* Nothing came for idle_ping_s: ping if anyone waits for a reply. */
static void idle_ping(struct pohmel_conn *c)
{
	struct pohmel_req *req;
	bool waiting = false;

	spin_lock(&c->lock);
	list_for_each_entry(req, &c->queue, list) {
		if (req->state == POHMEL_RS_SENT) {
			waiting = true;
			break;
		}
	}
	spin_unlock(&c->lock);
	if (waiting)
		queue_work(c->recall_wq, &c->ping_work);
}

static void fail_all(struct pohmel_conn *c, int err)
{
	struct pohmel_req *req, *tmp;
	LIST_HEAD(done);

	spin_lock(&c->lock);
	list_for_each_entry_safe(req, tmp, &c->queue, list) {
		finish_req_locked(c, req, err);
		list_add(&req->list, &done);
	}
	spin_unlock(&c->lock);
	list_for_each_entry_safe(req, tmp, &done, list) {
		list_del_init(&req->list);
		pohmel_req_put(req);
	}
}

/*
 * The server refused our key on a reconnect (revoked, or no longer
 * allowed for this export): what waits fails with EACCES, and so does
 * every new call until a reconnect succeeds, on a hard mount too, since
 * waiting would hang the callers for as long as the revocation lasts.
 */
static void refuse(struct pohmel_conn *c, bool refused)
{
	bool was;

	spin_lock(&c->lock);
	was = c->refused;
	c->refused = refused;
	spin_unlock(&c->lock);
	if (refused && !was) {
		pr_warn("%s (%pISpc): the server refuses our key: calls fail with EACCES until it accepts it again\n",
			c->name, &c->addr);
		fail_all(c, -EACCES);
	}
}

static int conn_thread(void *data)
{
	struct pohmel_conn *c = data;
	unsigned long backoff = POHMEL_BACKOFF_MIN;
	unsigned int nofs = memalloc_nofs_save();
	struct pohmel_seal *seal;
	struct socket *sock;
	int logged = 0;		/* 1: lost said, 2: reason said too */
	int err;

	allow_signal(SIGKILL);
	while (!kthread_should_stop()) {
		spin_lock(&c->lock);
		sock = c->sock;
		seal = c->seal;
		spin_unlock(&c->lock);
		while (sock && !kthread_should_stop()) {
			err = pohmel_conn_recv_one(c, sock, seal);
			if (err == -EAGAIN) {
				idle_ping(c);
				continue;
			}
			if (err)
				break;
			cond_resched();	/* a flood must not hog the CPU */
		}
		conn_down(c);
		if (kthread_should_stop())
			break;
		if (READ_ONCE(c->dying)) {
			/* unmounting: kthread_stop() is on its way */
			cond_resched();
			continue;
		}
		if (!logged)
			pr_notice("%s (%pISpc): connection lost, reconnecting\n",
				  c->name, &c->addr);
		err = conn_connect(c, &sock, &seal);
		if (err == -EACCES)
			refuse(c, true);
		if (err && c->why && logged < 2) {
			pr_warn("%s (%pISpc): reconnect failed: %s\n",
				c->name, &c->addr, c->why);
			logged = 2;
		}
		logged = max(logged, 1);
		if (err) {
			schedule_timeout_interruptible(backoff);
			backoff = min(backoff * 2, (unsigned long)POHMEL_BACKOFF_MAX);
			continue;
		}
		refuse(c, false);
		pr_notice("%s (%pISpc): reconnected\n", c->name, &c->addr);
		logged = 0;
		backoff = POHMEL_BACKOFF_MIN;
		atomic64_inc(&c->stats.reconnects);
		conn_up(c, sock, seal);
		pohmel_wb_reconnected(c);
	}
	memalloc_nofs_restore(nofs);
	return 0;
}

int pohmel_conn_init(struct pohmel_conn *c)
{
	spin_lock_init(&c->lock);
	spin_lock_init(&c->recall_lock);
	spin_lock_init(&c->release_lock);
	INIT_LIST_HEAD(&c->release_list);
	INIT_WORK(&c->release_work, pohmel_conn_release_work);
	init_llist_head(&c->async_reqs);
	INIT_WORK(&c->async_work, async_work);
	INIT_WORK(&c->ping_work, ping_work);
	init_waitqueue_head(&c->recalls_idle);
	atomic_set(&c->recalls_active, 0);
	INIT_LIST_HEAD(&c->queue);
	xa_init_flags(&c->tags, XA_FLAGS_ALLOC1);
	mutex_init(&c->send_mutex);
	mutex_init(&c->sock_mutex);
	mutex_init(&c->seq_mutex);
	init_waitqueue_head(&c->seq_wq);
	c->gen = 1;
	c->grants = true;
	pohmel_session_init(&c->sess);
	c->recall_wq = alloc_workqueue("pohmelfs-recall",
				       WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!c->recall_wq)
		return -ENOMEM;
	c->io_wq = alloc_workqueue("pohmelfs-io", WQ_UNBOUND | WQ_MEM_RECLAIM,
				   0);
	if (!c->io_wq) {
		destroy_workqueue(c->recall_wq);
		c->recall_wq = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* First connection, in the mounter's context so errors reach mount(2). */
int pohmel_conn_start(struct pohmel_conn *c)
{
	struct pohmel_seal *seal;
	struct socket *sock;
	int err;

	err = conn_connect(c, &sock, &seal);
	if (err)
		return err;
	conn_up(c, sock, seal);
	c->task = kthread_run(conn_thread, c, "pohmelfs-conn");
	if (IS_ERR(c->task)) {
		err = PTR_ERR(c->task);
		c->task = NULL;
		conn_down(c);
		return err;
	}
	return 0;
}

/*
 * umount -f: fail whatever waits now and start over on a new connection
 * (a sender may be stuck on a server that stopped reading); new requests
 * still queue.
 */
void pohmel_conn_abort(struct pohmel_conn *c)
{
	fail_all(c, -EIO);
	conn_shutdown(c);
}

/* Unmount: fail whatever still waits, stop the thread, close. */
void pohmel_conn_stop(struct pohmel_conn *c)
{
	spin_lock(&c->lock);
	c->dying = true;
	spin_unlock(&c->lock);
	wake_up_all(&c->seq_wq);
	fail_all(c, -EIO);
	if (c->task) {
		send_sig(SIGKILL, c->task, 1);
		kthread_stop(c->task);
		c->task = NULL;
	}
	conn_down(c);
	if (c->recall_wq) {
		destroy_workqueue(c->recall_wq);	/* drains it first */
		c->recall_wq = NULL;
	}
	async_work(&c->async_work);	/* nothing is queued after the drain */
	pohmel_conn_release_drop_all(c);
	fail_all(c, -EIO);
	/* last: every request has ended, its end queued; drains them */
	if (c->io_wq) {
		destroy_workqueue(c->io_wq);
		c->io_wq = NULL;
	}
	xa_destroy(&c->tags);
}

/*
 * The layer above goes away (unmount): recalls from now on are only
 * acknowledged, and none is still inside ops->recall on return.
 */
void pohmel_conn_stop_recalls(struct pohmel_conn *c)
{
	WRITE_ONCE(c->ops, NULL);
	/* clear ops, then read the count: pairs with recall_work() */
	smp_mb();
	/*
	 * A recall may be writing back through a server that is gone: while
	 * the connection is down, fail what waits (as umount -f would), or
	 * a hard mount could never be unmounted.
	 */
	while (!wait_event_timeout(c->recalls_idle,
				   !atomic_read(&c->recalls_active), HZ))
		if (!pohmel_conn_is_up(c))
			fail_all(c, -EIO);
}
