// SPDX-License-Identifier: GPL-2.0
/*
 * conn_recv.c - the receive thread's half of a message: its record opened
 * and checked, the request it answers found by tag and ended, a READ's
 * data put straight into the pages waiting for it, a RECALL passed on.
 */
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "compat.h"
#include "conn.h"

/* @req's reply came and passed its checks: it owns @buf from now on. */
static void answered(struct pohmel_conn *c, struct pohmel_req *req, u8 *buf,
		     u32 len)
{
	lockdep_assert_held(&c->lock);
	req->rbuf = buf;
	req->rlen = len;
	req->gen = c->gen;
	req->rseq = ++c->reply_seq;
	pohmel_conn_answer_locked(c, req, 0);
}

/*
 * Receive exactly @len bytes into @it. Part of a message has come, so a
 * receive timeout only waits on (as pohmel_conn_recv_msg when patient).
 */
static int recv_iter(struct socket *sock, struct iov_iter *it, size_t len)
{
	struct msghdr msg = { .msg_flags = 0 };
	int ret;

	msg.msg_iter = *it;
	iov_iter_truncate(&msg.msg_iter, len);
	while (iov_iter_count(&msg.msg_iter)) {
		ret = sock_recvmsg(sock, &msg, MSG_WAITALL);
		if (ret == -EAGAIN)
			continue;
		if (ret <= 0)
			return ret ? ret : -ECONNRESET;
	}
	return 0;
}

/*
 * A READ's reply whose request gave its pages (req->dest) goes straight
 * into them: from the socket (@src NULL) or from the opened record, with
 * no message buffer between. Such a request has nobody waiting (never
 * cancelled); it is taken off the queue while its data arrives, so that
 * neither fail_all nor a replay can end it and free its pages meanwhile.
 * Returns 1 when done (the request answered), 0 when the message is not
 * such a reply (nothing consumed), or -errno to drop the connection.
 */
static int recv_direct(struct pohmel_conn *c, struct socket *sock,
		       const struct pohmel_hdr *h, const u8 *src)
{
	u32 len = be32_to_cpu(h->len), n = 0;
	const u32 fixed = POHMEL_IO_REPLY_SIZE;
	struct pohmel_io_reply *r;
	struct pohmel_req *req;
	void *entry;
	int err;

	if ((be16_to_cpu(h->flags) & POHMEL_HF_SERVER) || be32_to_cpu(h->status) ||
	    be16_to_cpu(h->op) != POHMEL_OP_READ || len < fixed)
		return 0;
	spin_lock(&c->lock);
	entry = xa_load(&c->tags, be32_to_cpu(h->tag));
	req = xa_is_value(entry) ? NULL : entry;
	if (!req || req->state != POHMEL_RS_SENT || !req->dest ||
	    req->op != POHMEL_OP_READ) {
		spin_unlock(&c->lock);
		return 0;
	}
	list_del_init(&req->list);
	spin_unlock(&c->lock);

	r = kmalloc(fixed, GFP_NOFS);
	err = r ? 0 : -ENOMEM;
	if (!err && src)
		memcpy(r, src, fixed);
	else if (!err)
		err = pohmel_conn_recv_msg(sock, r, fixed, true);
	if (!err) {
		n = be32_to_cpu(r->count);
		if (pohmel_check_attr(&r->attr) || n > req->want ||
		    len != fixed + n)
			err = -EPROTO;
	}
	if (!err && src) {
		if (copy_to_iter(src + fixed, n, req->dest) != n)
			err = -EFAULT;
	} else if (!err) {
		err = recv_iter(sock, req->dest, n);
	}

	spin_lock(&c->lock);
	if (!err) {
		atomic64_add(n, &c->stats.bytes_recv_direct);
		req->direct = n;
		answered(c, req, (u8 *)r, fixed);
		r = NULL;
	} else {
		/* the pages stay !uptodate: the reader asks again */
		pohmel_conn_answer_locked(c, req, -EIO);
	}
	spin_unlock(&c->lock);
	pohmel_req_put(req);		/* the queue's reference */
	kfree(r);
	return err ?: 1;
}

/* Receive one message. Returns 0, or -errno to drop the connection. */
int pohmel_conn_recv_one(struct pohmel_conn *c, struct socket *sock,
			 struct pohmel_seal *seal)
{
	struct pohmel_hdr h = {};
	struct pohmel_req *req;
	const u8 *src;
	u8 *buf = NULL;
	u32 len, status, tag;
	void *entry;
	int err;

	err = pohmel_seal_recv_hdr(seal, sock, &h, &src, c->sess.max_msg,
				   true);
	if (err == -EAGAIN)
		return err;	/* idle: see idle_ping_s */
	if (err == -EBADMSG) {
		atomic64_inc(&c->stats.seal_failures);
		pr_warn_ratelimited("%s (%pISpc): a record failed its integrity check (changed, lost, repeated or forged on the way): dropping the connection\n",
				    c->name, &c->addr);
		return -EPROTO;
	}
	if (err == -EKEYEXPIRED) {
		pr_info_ratelimited("%s (%pISpc): keys used up on this connection: reconnecting for new ones\n",
				    c->name, &c->addr);
		return err;
	}
	if (err == -EPROTO)
		goto proto;
	if (err)
		return err;
	len = be32_to_cpu(h.len);
	atomic64_add(POHMEL_HDR_SIZE + len, &c->stats.bytes_recv);
	err = recv_direct(c, sock, &h, src);
	if (err > 0)
		return 0;
	if (err == -EPROTO)
		goto proto;
	if (err)
		return err;
	err = pohmel_seal_recv_payload(sock, &h, src, &buf, true);
	if (err)
		return err;
	if (be16_to_cpu(h.flags) & POHMEL_HF_SERVER) {
		err = pohmel_conn_queue_recall(c, &h, buf, len);
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
		/* the answer to an ack or RELEASE sent and forgotten */
		if (tag == POHMEL_TAG_NOWAIT && !len &&
		    (be16_to_cpu(h.op) == POHMEL_OP_RECALL_ACK ||
		     be16_to_cpu(h.op) == POHMEL_OP_RELEASE ||
		     be16_to_cpu(h.op) == POHMEL_OP_PING))
			goto out_free;
		/* a tag never sent on this socket, or answered already */
		goto proto;
	}
	status = be32_to_cpu(h.status);
	pr_debug("reply op %u tag %u status %u len %u\n", be16_to_cpu(h.op),
		 req->tag, status, len);
	if (be16_to_cpu(h.op) != req->op) {
		pohmel_conn_answer_locked(c, req, -EIO);
		err = -EPROTO;
	} else if (status) {
		pohmel_conn_answer_locked(c, req, pohmel_status_to_errno(status));
	} else if (pohmel_check_reply(req, buf, len)) {
		pohmel_conn_answer_locked(c, req, -EIO);
		err = -EPROTO;
	} else {
		answered(c, req, buf, len);
		buf = NULL;
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
	pr_warn_ratelimited("%s (%pISpc): malformed message (op %u tag %u len %u): dropping the connection\n",
			    c->name, &c->addr, be16_to_cpu(h.op),
			    be32_to_cpu(h.tag), be32_to_cpu(h.len));
	kvfree(buf);
	return -EPROTO;
}
