// SPDX-License-Identifier: GPL-2.0
/*
 * conn_grants.c - the connection's side of grants: the recall ring (a
 * reply's grant is capped by every RECALL of its object that arrived
 * after its request left, and by our own ends of a grant: a removal's
 * POHMEL_REMOVE_RELEASE), each RECALL handled by a work item that lets
 * the layer above flush and drop, then acknowledges it, and the RELEASE
 * of evicted inodes' grants. What a grant means for an inode is in
 * inode.c (take_grant, pohmel_grant).
 *
 * Lock rules (conn.h): recall_lock protects recall_seq and recall_ring;
 * release_lock the release list; a RECALL_ACK or RELEASE goes onto the
 * socket under send_mutex.
 */
#include <linux/sched.h>
#include <linux/slab.h>

#include "conn.h"

/* One RECALL, handled on c->recall_wq and acknowledged from there. */
struct pohmel_recall_work {
	struct work_struct work;
	struct pohmel_conn *c;
	u32 gen;			/* the connection it came on */
	ktime_t arrived;
	u8 body[POHMEL_RECALL_SIZE];
};

/* The RECALLs seen so far: a grant made now is capped by later ones. */
u64 pohmel_conn_stamp(struct pohmel_conn *c)
{
	u64 v;

	spin_lock(&c->recall_lock);
	v = c->recall_seq;
	spin_unlock(&c->recall_lock);
	return v;
}

/*
 * Our grant on @id ended by a request of ours (a removal's
 * POHMEL_REMOVE_RELEASE): a reply to a request submitted before now is
 * capped to NONE, as if a RECALL had come.
 */
void pohmel_conn_grant_ended(struct pohmel_conn *c, u64 id)
{
	struct pohmel_recall_rec *r;

	spin_lock(&c->recall_lock);
	c->recall_seq++;
	r = &c->recall_ring[c->recall_seq % POHMEL_RECALL_RING];
	r->id = id;
	r->seq = c->recall_seq;
	r->to = POHMEL_GRANT_NONE;
	spin_unlock(&c->recall_lock);
}

/*
 * The highest grant a reply may give on object @id when its request was
 * submitted at @stamp: capped by every RECALL of @id that arrived since.
 */
u32 pohmel_conn_grant_cap(struct pohmel_conn *c, u64 id, u64 stamp,
			  u32 grant)
{
	const struct pohmel_recall_rec *r;
	u64 s;

	spin_lock(&c->recall_lock);
	if (c->recall_seq - stamp >= POHMEL_RECALL_RING) {
		grant = POHMEL_GRANT_NONE;
	} else {
		for (s = stamp + 1; s <= c->recall_seq; s++) {
			r = &c->recall_ring[s % POHMEL_RECALL_RING];
			if (r->id == id && r->to < grant)
				grant = r->to;
		}
	}
	spin_unlock(&c->recall_lock);
	return grant;
}

static void recall_work(struct work_struct *work)
{
	struct pohmel_recall_work *w = container_of(work,
						    struct pohmel_recall_work,
						    work);
	struct pohmel_conn *c = w->c;
	const struct pohmel_conn_ops *ops;
	struct pohmel_req *ack;
	bool same;
	s64 ns;

	/* a recall from a lost connection: its grants are gone anyway */
	if (READ_ONCE(c->gen) != w->gen)
		goto out;
	atomic_inc(&c->recalls_active);
	/* count, then read ops: pairs with pohmel_conn_stop_recalls() */
	smp_mb__after_atomic();
	ops = READ_ONCE(c->ops);
	if (ops && ops->recall)
		ops->recall(c->priv, (const void *)w->body);
	if (atomic_dec_and_test(&c->recalls_active))
		wake_up_all(&c->recalls_idle);
	/* fire and forget: the empty reply finds no tag and is dropped */
	ack = pohmel_req_alloc(c, POHMEL_OP_RECALL_ACK, POHMEL_RECALL_SIZE,
			       false);
	if (!ack)
		goto out;
	memcpy(pohmel_req_append(ack, POHMEL_RECALL_SIZE), w->body,
	       POHMEL_RECALL_SIZE);
	pohmel_req_set_hdr(ack);
	ack->tag = POHMEL_TAG_NOWAIT;
	mutex_lock(&c->send_mutex);
	spin_lock(&c->lock);
	same = c->sock && c->gen == w->gen;
	spin_unlock(&c->lock);
	if (same && !pohmel_conn_send_req(c, ack)) {
		atomic64_inc(&c->stats.ops[POHMEL_OP_RECALL_ACK]);
		atomic64_inc(&c->stats.recall_acks);
		ns = ktime_to_ns(ktime_sub(ktime_get(), w->arrived));
		atomic64_add(ns, &c->stats.recall_ns);
		pohmel_update_max(&c->stats.recall_max_ns, ns);
	}
	mutex_unlock(&c->send_mutex);
	pohmel_req_put(ack);
out:
	atomic_dec(&c->nr_recalls);
	kfree(w);
}

/* ---- grants given back ------------------------------------------------ */

struct pohmel_release_ent {
	struct list_head list;
	u64 id;
	u64 oid_gen;
	u32 gen;			/* the connection's */
};

/*
 * The inode of (@id, @gen), granted on connection @conn_gen, was evicted:
 * give the grant back, so that the server neither keeps watching the
 * object nor recalls it from us. Called from eviction (perhaps in
 * reclaim): no sleeping, no waiting for the network; lost if memory is
 * short (the server then keeps a grant we do not use, which costs only a
 * needless RECALL later).
 */
void pohmel_conn_release(struct pohmel_conn *c, u64 id, u64 gen, u32 conn_gen)
{
	struct pohmel_release_ent *e;

	if (!(READ_ONCE(c->sess.features) & POHMEL_FEAT_RELEASE) ||
	    conn_gen != READ_ONCE(c->gen))
		return;
	e = kmalloc(sizeof(*e), GFP_NOWAIT | __GFP_NOWARN);
	if (!e)
		return;
	e->id = id;
	e->oid_gen = gen;
	e->gen = conn_gen;
	spin_lock(&c->release_lock);
	list_add_tail(&e->list, &c->release_list);
	spin_unlock(&c->release_lock);
	queue_work(c->recall_wq, &c->release_work);
}

/*
 * Send what eviction queued, POHMEL_RELEASE_MAX oids per RELEASE. Each
 * object goes into the recall ring (to NONE) and the RELEASE onto the
 * socket under one hold of send_mutex: a request stamped before that
 * (the ring caps its reply's grant) was stamped before the RELEASE went
 * out, and one stamped after goes out after it, so the server, which
 * runs a connection's requests in order, runs it after the RELEASE and
 * its grant stands.
 */
void pohmel_conn_release_work(struct work_struct *work)
{
	struct pohmel_conn *c = container_of(work, struct pohmel_conn,
					     release_work);
	struct pohmel_release_ent *e, *tmp;
	struct pohmel_recall_rec *r;
	struct pohmel_oid *w;
	struct pohmel_req *req;
	LIST_HEAD(batch);
	bool more = true;
	unsigned int n;
	u32 gen;

	while (more) {
		req = pohmel_req_alloc(c, POHMEL_OP_RELEASE,
				       POHMEL_RELEASE_MAX * POHMEL_OID_SIZE,
				       false);
		if (!req)
			return;		/* the next eviction tries again */
		mutex_lock(&c->send_mutex);
		spin_lock(&c->lock);
		gen = c->sock ? c->gen : 0;
		spin_unlock(&c->lock);
		n = 0;
		spin_lock(&c->release_lock);
		list_for_each_entry_safe(e, tmp, &c->release_list, list) {
			if (n == POHMEL_RELEASE_MAX)
				break;
			list_move_tail(&e->list, &batch);
			/* a lost connection took its grants with it */
			if (e->gen == gen)
				n++;
		}
		more = !list_empty(&c->release_list);
		spin_unlock(&c->release_lock);
		if (n) {
			spin_lock(&c->recall_lock);
			list_for_each_entry(e, &batch, list) {
				if (e->gen != gen)
					continue;
				c->recall_seq++;
				r = &c->recall_ring[c->recall_seq %
						    POHMEL_RECALL_RING];
				r->id = e->id;
				r->seq = c->recall_seq;
				r->to = POHMEL_GRANT_NONE;
				w = pohmel_req_append(req, POHMEL_OID_SIZE);
				w->id = cpu_to_be64(e->id);
				w->gen = cpu_to_be64(e->oid_gen);
			}
			spin_unlock(&c->recall_lock);
			pohmel_req_set_hdr(req);
			req->tag = POHMEL_TAG_NOWAIT;
			if (!pohmel_conn_send_req(c, req)) {
				atomic64_inc(&c->stats.ops[POHMEL_OP_RELEASE]);
				atomic64_add(n, &c->stats.releases);
			}
		}
		mutex_unlock(&c->send_mutex);
		pohmel_req_put(req);
		list_for_each_entry_safe(e, tmp, &batch, list) {
			list_del(&e->list);
			kfree(e);
		}
	}
}

void pohmel_conn_release_drop_all(struct pohmel_conn *c)
{
	struct pohmel_release_ent *e, *tmp;
	LIST_HEAD(all);

	spin_lock(&c->release_lock);
	list_splice_init(&c->release_list, &all);
	spin_unlock(&c->release_lock);
	list_for_each_entry_safe(e, tmp, &all, list) {
		list_del(&e->list);
		kfree(e);
	}
}

/*
 * A RECALL arrived (receive thread): note it in the ring before any later
 * reply is looked at, then let a work item flush, drop and ack, so that
 * this thread goes on receiving the replies the flush waits for.
 */
int pohmel_conn_queue_recall(struct pohmel_conn *c, const struct pohmel_hdr *h,
			     const void *body, u32 len)
{
	const struct pohmel_recall *rec = body;
	struct pohmel_recall_rec *r;
	struct pohmel_recall_work *w;

	if (be16_to_cpu(h->op) != POHMEL_OP_RECALL ||
	    len != POHMEL_RECALL_SIZE || pohmel_check_recall(rec))
		return -EPROTO;
	/* More unacked recalls than we can ack: a flood. Dropping the
	 * link ends every grant anyway.
	 */
	if (atomic_inc_return(&c->nr_recalls) > POHMEL_MAX_RECALLS) {
		atomic_dec(&c->nr_recalls);
		return -EPROTO;
	}
	atomic64_inc(&c->stats.recalls);
	spin_lock(&c->recall_lock);
	c->recall_seq++;
	r = &c->recall_ring[c->recall_seq % POHMEL_RECALL_RING];
	r->id = be64_to_cpu(rec->oid.id);
	r->seq = c->recall_seq;
	r->to = min_t(u32, be32_to_cpu(rec->to), POHMEL_GRANT_SHARED);
	spin_unlock(&c->recall_lock);

	w = kzalloc(sizeof(*w), GFP_NOFS);
	if (!w) {	/* no ack: the server's lease ends the grant */
		atomic_dec(&c->nr_recalls);
		return 0;
	}
	INIT_WORK(&w->work, recall_work);
	w->c = c;
	w->gen = c->gen;
	w->arrived = ktime_get();
	memcpy(w->body, body, POHMEL_RECALL_SIZE);
	queue_work(c->recall_wq, &w->work);
	return 0;
}
