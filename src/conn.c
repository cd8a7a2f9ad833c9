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

#define POHMEL_CONNECT_TIMEO	(10 * HZ)
#define POHMEL_BACKOFF_MIN	(HZ / 10)
#define POHMEL_BACKOFF_MAX	(5 * HZ)

int pohmel_conn_send_all(struct socket *sock, const void *buf, size_t len)
{
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
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

int pohmel_conn_recv_all(struct socket *sock, void *buf, size_t len)
{
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = 0 };
	int ret;

	while (iov.iov_len) {
		ret = kernel_recvmsg(sock, &msg, &iov, 1, iov.iov_len,
				     MSG_WAITALL);
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

static void complete_req_locked(struct pohmel_conn *c, struct pohmel_req *req,
				int err)
{
	list_del_init(&req->list);
	req->err = err;
	req->state = POHMEL_RS_DONE;
	complete_all(&req->done);
}

/* Take @req off the queue and fail it with @err. Must hold c->lock. */
static void finish_req_locked(struct pohmel_conn *c, struct pohmel_req *req,
			      int err)
{
	put_tag_locked(c, req, false);
	complete_req_locked(c, req, err);
}

/* @req got its reply: finish it with @err. Must hold c->lock. */
static void answer_req_locked(struct pohmel_conn *c, struct pohmel_req *req,
			      int err)
{
	put_tag_locked(c, req, true);
	complete_req_locked(c, req, err);
}

/* Write @req to the socket. Must hold c->send_mutex. */
static int send_req(struct pohmel_conn *c, struct pohmel_req *req)
{
	struct pohmel_hdr *h = (struct pohmel_hdr *)req->sbuf;
	int err;

	lockdep_assert_held(&c->send_mutex);
	if (req->needs_seq && !req->seq)
		req->seq = atomic64_inc_return(&c->sess.next_seq);
	h->tag = cpu_to_be32(req->tag);
	h->seq = cpu_to_be64(req->seq);
	err = pohmel_conn_send_all(c->sock, req->sbuf, req->slen);
	if (err) {
		/* the stream is now unframed: let the thread start over */
		kernel_sock_shutdown(c->sock, SHUT_RDWR);
		return err;
	}
	atomic64_add(req->slen, &c->stats.bytes_sent);
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
	if (go && send_req(c, req)) {
		spin_lock(&c->lock);
		if (req->state == POHMEL_RS_SENT)
			req->state = POHMEL_RS_QUEUED;
		spin_unlock(&c->lock);
	}
	mutex_unlock(&c->send_mutex);
}

static int submit(struct pohmel_conn *c, struct pohmel_req *req)
{
	u32 tag;
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
	kref_get(&req->ref);		/* the queue's reference */
	spin_lock(&c->lock);
	if (c->dying) {
		spin_unlock(&c->lock);
		xa_erase(&c->tags, tag);
		pohmel_req_put(req);
		return -EIO;
	}
	req->state = POHMEL_RS_QUEUED;
	list_add_tail(&req->list, &c->queue);
	spin_unlock(&c->lock);
	atomic64_inc(&c->stats.ops[req->op]);
	try_send(c, req);
	return 0;
}

/* The waiter gives up: take the request back unless it was answered. */
static int cancel(struct pohmel_conn *c, struct pohmel_req *req, int err)
{
	bool owned = false;

	spin_lock(&c->lock);
	if (req->state == POHMEL_RS_DONE) {
		err = req->err;
	} else {
		list_del_init(&req->list);
		put_tag_locked(c, req, false);
		req->state = POHMEL_RS_CANCELLED;
		owned = true;
	}
	spin_unlock(&c->lock);
	if (owned)
		pohmel_req_put(req);	/* the queue's reference */
	return err;
}

/*
 * Send @req and wait for its reply. Returns 0 with req->rbuf/rlen holding
 * the reply payload, or -errno (the server's status, -ETIMEDOUT on a soft
 * mount, -EINTR-like when killed, -EIO when unmounting). Hard mounts wait
 * for as long as it takes, but a fatal signal always ends the wait.
 */
int pohmel_conn_call(struct pohmel_conn *c, struct pohmel_req *req)
{
	long t;
	int err;

	err = submit(c, req);
	if (err)
		return err;
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
 * Send @req without waiting (CLOSE): the queue keeps it, replays it after
 * a reconnect, and drops it when answered or at unmount.
 */
int pohmel_conn_call_async(struct pohmel_conn *c, struct pohmel_req *req)
{
	int err = submit(c, req);

	pohmel_req_put(req);
	return err;
}

/* ---- the receive thread ---------------------------------------------- */

static int conn_connect(struct pohmel_conn *c, struct socket **sockp)
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
	sock->sk->sk_sndtimeo = POHMEL_CONNECT_TIMEO;
	sock->sk->sk_rcvtimeo = POHMEL_CONNECT_TIMEO;
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
	err = pohmel_session_handshake(c, sock);
	if (err)
		goto err_sock;
	sock->sk->sk_rcvtimeo = MAX_SCHEDULE_TIMEOUT;
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

/*
 * Install a fresh socket and replay everything unanswered, in order,
 * before anyone else may send.
 */
static void conn_up(struct pohmel_conn *c, struct socket *sock)
{
	struct pohmel_req *req;

	mutex_lock(&c->send_mutex);
	spin_lock(&c->lock);
	c->sock = sock;
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
		if (send_req(c, req)) {
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
	struct socket *sock;
	unsigned long tag;
	LIST_HEAD(done);
	void *entry;

	mutex_lock(&c->send_mutex);
	spin_lock(&c->lock);
	c->up = false;
	sock = c->sock;
	c->sock = NULL;
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

/* Returns -EPROTO when the server floods us with more than we can ack. */
static int queue_recall(struct pohmel_conn *c, const void *body)
{
	struct pohmel_req *ack;

	atomic64_inc(&c->stats.recalls);
	/* RECALL_ACK carries the same body; it is sent by the work item */
	ack = pohmel_req_alloc(c, POHMEL_OP_RECALL_ACK, POHMEL_RECALL_SIZE,
			       false);
	if (!ack)
		return 0;
	memcpy(pohmel_req_append(ack, POHMEL_RECALL_SIZE), body,
	       POHMEL_RECALL_SIZE);
	spin_lock(&c->lock);
	if (c->nr_recalls >= POHMEL_MAX_RECALLS) {
		/* dropping the connection ends every grant anyway */
		spin_unlock(&c->lock);
		pohmel_req_put(ack);
		return -EPROTO;
	}
	c->nr_recalls++;
	list_add_tail(&ack->list, &c->recalls);
	spin_unlock(&c->lock);
	schedule_work(&c->recall_work);
	return 0;
}

static void recall_work(struct work_struct *work)
{
	struct pohmel_conn *c = container_of(work, struct pohmel_conn,
					     recall_work);
	struct pohmel_req *ack;

	for (;;) {
		spin_lock(&c->lock);
		ack = list_first_entry_or_null(&c->recalls, struct pohmel_req,
					       list);
		if (ack) {
			list_del_init(&ack->list);
			c->nr_recalls--;
		}
		spin_unlock(&c->lock);
		if (!ack)
			break;
		if (c->ops && c->ops->recall)
			c->ops->recall(c->priv, (const void *)(ack->sbuf +
							    POHMEL_HDR_SIZE));
		/* fire and forget: recv_one drops its reply by the tag */
		pohmel_req_set_hdr(ack);
		ack->tag = POHMEL_TAG_RECALL_ACK;
		mutex_lock(&c->send_mutex);
		if (c->sock && !send_req(c, ack))
			atomic64_inc(&c->stats.ops[POHMEL_OP_RECALL_ACK]);
		mutex_unlock(&c->send_mutex);
		pohmel_req_put(ack);
	}
}

/* Receive one message. Returns 0, or -errno to drop the connection. */
static int recv_one(struct pohmel_conn *c, struct socket *sock)
{
	struct pohmel_hdr h;
	struct pohmel_req *req;
	u8 *buf = NULL;
	u32 len, status, tag;
	void *entry;
	int err;

	err = pohmel_conn_recv_all(sock, &h, sizeof(h));
	if (err)
		return err;
	err = pohmel_check_hdr(&h, c->sess.max_msg);
	if (err)
		goto proto;
	len = be32_to_cpu(h.len);
	if (len) {
		buf = kvmalloc(len, GFP_NOFS);
		if (!buf)
			return -ENOMEM;
		err = pohmel_conn_recv_all(sock, buf, len);
		if (err)
			goto out_free;
	}
	atomic64_add(POHMEL_HDR_SIZE + len, &c->stats.bytes_recv);
	if (be16_to_cpu(h.flags) & POHMEL_HF_SERVER) {
		err = pohmel_check_recall((const void *)buf) ?:
		      queue_recall(c, buf);
		if (err)
			goto proto;
		goto out_free;
	}

	tag = be32_to_cpu(h.tag);
	spin_lock(&c->lock);
	entry = xa_load(&c->tags, tag);
	if (xa_is_value(entry)) {
		/* late: the waiter gave up */
		xa_erase(&c->tags, tag);
		spin_unlock(&c->lock);
		goto out_free;
	}
	req = entry;
	if (!req || req->state != POHMEL_RS_SENT) {
		spin_unlock(&c->lock);
		/* the answer to an ack the recall work sent and forgot */
		if (tag == POHMEL_TAG_RECALL_ACK &&
		    be16_to_cpu(h.op) == POHMEL_OP_RECALL_ACK && !len)
			goto out_free;
		/* a tag never sent on this socket, or answered already */
		goto proto;
	}
	status = be32_to_cpu(h.status);
	pr_debug("reply op %u tag %u status %u len %u\n", be16_to_cpu(h.op),
		 req->tag, status, len);
	if (be16_to_cpu(h.op) != req->op) {
		answer_req_locked(c, req, -EIO);
		err = -EPROTO;
	} else if (status) {
		answer_req_locked(c, req, pohmel_status_to_errno(status));
	} else if (pohmel_check_reply(req, buf, len)) {
		answer_req_locked(c, req, -EIO);
		err = -EPROTO;
	} else {
		req->rbuf = buf;
		req->rlen = len;
		buf = NULL;
		answer_req_locked(c, req, 0);
	}
	spin_unlock(&c->lock);
	pohmel_req_put(req);		/* the queue's reference */
	if (err)
		goto proto;
out_free:
	kvfree(buf);
	return err;

proto:
	atomic64_inc(&c->stats.proto_errors);
	pr_warn_ratelimited("%pISpc: malformed message (op %u tag %u len %u): dropping the connection\n",
			    &c->addr, be16_to_cpu(h.op), be32_to_cpu(h.tag),
			    be32_to_cpu(h.len));
	kvfree(buf);
	return -EPROTO;
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

static int conn_thread(void *data)
{
	struct pohmel_conn *c = data;
	unsigned long backoff = POHMEL_BACKOFF_MIN;
	unsigned int nofs = memalloc_nofs_save();
	struct socket *sock;
	int logged = 0;		/* 1: lost said, 2: reason said too */
	int err;

	allow_signal(SIGKILL);
	while (!kthread_should_stop()) {
		spin_lock(&c->lock);
		sock = c->sock;
		spin_unlock(&c->lock);
		while (sock && !kthread_should_stop()) {
			err = recv_one(c, sock);
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
			pr_notice("%pISpc: connection lost, reconnecting\n",
				  &c->addr);
		err = conn_connect(c, &sock);
		if (err && c->why && logged < 2) {
			pr_warn("%pISpc: reconnect failed: %s\n", &c->addr,
				c->why);
			logged = 2;
		}
		logged = max(logged, 1);
		if (err) {
			schedule_timeout_interruptible(backoff);
			backoff = min(backoff * 2, (unsigned long)POHMEL_BACKOFF_MAX);
			continue;
		}
		pr_notice("%pISpc: reconnected\n", &c->addr);
		logged = 0;
		backoff = POHMEL_BACKOFF_MIN;
		atomic64_inc(&c->stats.reconnects);
		conn_up(c, sock);
	}
	memalloc_nofs_restore(nofs);
	return 0;
}

int pohmel_conn_init(struct pohmel_conn *c)
{
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->queue);
	INIT_LIST_HEAD(&c->recalls);
	xa_init_flags(&c->tags, XA_FLAGS_ALLOC1);
	mutex_init(&c->send_mutex);
	mutex_init(&c->sock_mutex);
	INIT_WORK(&c->recall_work, recall_work);
	pohmel_session_init(&c->sess);
	return 0;
}

/* First connection, in the mounter's context so errors reach mount(2). */
int pohmel_conn_start(struct pohmel_conn *c)
{
	struct socket *sock;
	int err;

	err = conn_connect(c, &sock);
	if (err)
		return err;
	conn_up(c, sock);
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
	fail_all(c, -EIO);
	if (c->task) {
		send_sig(SIGKILL, c->task, 1);
		kthread_stop(c->task);
		c->task = NULL;
	}
	conn_down(c);
	cancel_work_sync(&c->recall_work);
	fail_all(c, -EIO);
	xa_destroy(&c->tags);
}
