// SPDX-License-Identifier: MIT
/*
 * order.c - which requests of one connection must run in the order they
 * came. A request that waits (for another client's RECALL_ACK) or takes
 * long runs on the connection's worker pool (conn_work.c); a later
 * request waits behind it only if the two name a common object (READs
 * and FSYNCs never wait for each other: none changes what another
 * sees), or if either is one whose effect reaches beyond the objects
 * it names (BYE ends the session, RELEASE drops grants, IDRANGE hands
 * out ids, a message that does not parse).
 * Queueing everything behind one waiting request made a client's
 * unrelated requests, its own RECALL work included, wait for another
 * client's acks, long enough for leases to expire and grants to be
 * revoked under unwritten data (issue 15).
 */
#include <stdlib.h>
#include <string.h>

#include "pohmeld.h"

static void add(struct order *o, uint64_t id)
{
	unsigned int i;

	if (o->all || !id)
		return;
	for (i = 0; i < o->n; i++)
		if (o->id[i] == id)
			return;
	if (o->n == ORDER_IDS) {
		o->all = true;	/* too many to track: order with everything */
		return;
	}
	o->id[o->n++] = id;
}

/* The objects of one parsed message (not a BATCH). */
static void add_msg(struct order *o, const struct msg *m)
{
	switch (m->hdr.op) {
	case POHMEL_OP_PING:
	case POHMEL_OP_STATS:
		return;
	case POHMEL_OP_BYE:
	case POHMEL_OP_RELEASE:
	case POHMEL_OP_IDRANGE:
	case POHMEL_OP_HELLO:
	case POHMEL_OP_AUTH:
	case POHMEL_OP_BATCH:	/* nested: refused later, order it fully */
		o->all = true;
		return;
	case POHMEL_OP_READ:
		o->count = m->count;
		/* fall through */
	case POHMEL_OP_FSYNC:
		o->shared = true;
		add(o, m->oid.id);
		return;
	default:
		add(o, m->oid.id);
		add(o, m->oid2.id);
		add(o, m->cid);
	}
}

/*
 * What the request raw (a whole message, rawlen bytes, its header
 * already accepted by proto_hdr) must stay ordered with.
 */
void order_of(const uint8_t *raw, uint32_t rawlen, uint32_t max_msg,
	      struct order *o)
{
	struct msg *m = malloc(sizeof(*m));
	uint32_t off;
	struct whdr h;

	memset(o, 0, sizeof(*o));
	if (!m || proto_parse(m, raw, rawlen)) {
		o->all = true;	/* it will be answered or dropped: in order */
		goto out;
	}
	if (m->hdr.op != POHMEL_OP_BATCH) {
		add_msg(o, m);
		goto out;
	}
	/* a BATCH: the union of its inner messages' objects, in order */
	for (off = 0; off < m->blen && !o->all; off += POHMEL_HDR_SIZE + h.len) {
		const uint8_t *in = m->body + off;
		struct msg *im;

		if (m->blen - off < POHMEL_HDR_SIZE ||
		    proto_hdr(in, &h, max_msg) ||
		    h.len > m->blen - off - POHMEL_HDR_SIZE) {
			o->all = true;
			break;
		}
		im = malloc(sizeof(*im));
		if (!im || proto_parse(im, in, POHMEL_HDR_SIZE + h.len))
			o->all = true;
		else
			add_msg(o, im);
		free(im);
	}
	o->shared = false;	/* only a READ or FSYNC alone */
	o->count = 0;
out:
	free(m);
}

/* Must a request of b wait for one of a (or the reverse)? */
bool order_overlap(const struct order *a, const struct order *b)
{
	unsigned int i, j;

	if (a->all || b->all)
		return true;
	if (a->shared && b->shared)
		return false;	/* READs, FSYNCs: any order */
	for (i = 0; i < a->n; i++)
		for (j = 0; j < b->n; j++)
			if (a->id[i] == b->id[j])
				return true;
	return false;
}
