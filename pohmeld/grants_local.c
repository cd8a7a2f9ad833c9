// SPDX-License-Identifier: MIT
/*
 * grants_local.c - telling pohmeld's own changes from local ones.
 *
 * A modifying request marks the objects it changes in flight
 * (grants_begin, grants.c); notify.c skips events of marked objects, and
 * a reply to another connection gets no grant on one. The marks must
 * outlast the request until notify.c has read every event it caused,
 * but the reply does not wait for that: grants_end takes a ticket from
 * notify.c and moves the marks onto the late list (copies: the request's
 * own go with it), and notify.c drops them with grants_synced() once the
 * events before the ticket are read. A change notify.c reports of an
 * unmarked object was made in the export directly: its holders are
 * recalled (grants_local_change).
 *
 * Lock rules: grants_mu (grants.c) protects the late list and the marks
 * on it, as the gobj they are on.
 */
#include <stdlib.h>
#include "grants_int.h"

struct late_mark {
	struct late_mark *next;
	uint64_t ticket;
	struct grant_mark m;		/* m.c is a reference */
};

static struct late_mark *late;		/* under grants_mu */

/* Must hold grants_mu. Take mark g off its object's in-flight list. */
static void unmark(struct grant_mark *g)
{
	struct gobj *o = g->obj;
	struct grant_mark **pp;

	for (pp = &o->busy; *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	}
	gobj_maybe_free(o);
	g->obj = NULL;
}

/*
 * After the handler. Marks of objects without a watch go at once (no
 * event of theirs is read); the others stay, as late marks, until
 * notify.c has read what the request caused. Without a ticket (no
 * notify thread) or memory for the copy, they go at once too: an event
 * of ours may then be taken for a local change, which costs a needless
 * recall, never a stale cache.
 */
void grants_end(struct req *r)
{
	bool watched = false;
	uint64_t t = 0;
	int i;

	pthread_mutex_lock(&grants_mu);
	for (i = 0; i < r->ngm; i++)
		if (r->gm[i].obj && r->gm[i].obj->wd >= 0)
			watched = true;
	pthread_mutex_unlock(&grants_mu);
	if (watched)
		t = notify_ticket();
	pthread_mutex_lock(&grants_mu);
	for (i = 0; i < r->ngm; i++) {
		struct grant_mark *g = &r->gm[i];
		struct late_mark *lm;

		if (!g->obj)
			continue;
		lm = t ? malloc(sizeof(*lm)) : NULL;
		if (lm) {
			lm->ticket = t;
			lm->m = *g;
			conn_get(lm->m.c);
			lm->m.next = g->obj->busy;
			g->obj->busy = &lm->m;
			lm->next = late;
			late = lm;
		}
		unmark(g);
	}
	pthread_mutex_unlock(&grants_mu);
	r->ngm = 0;
}

/* notify.c: every event queued before ticket was taken has been read. */
void grants_synced(uint64_t ticket)
{
	struct late_mark *lm, **pp, *done = NULL;

	pthread_mutex_lock(&grants_mu);
	for (pp = &late; (lm = *pp);) {
		if (lm->ticket > ticket) {
			pp = &lm->next;
			continue;
		}
		*pp = lm->next;
		unmark(&lm->m);
		lm->next = done;
		done = lm;
	}
	pthread_mutex_unlock(&grants_mu);
	for (; (lm = done); free(lm)) {
		done = lm->next;
		conn_put(lm->m.c);
	}
}

/*
 * notify.c saw object id change. Unless pohmeld is modifying it right now
 * (its own change: the mark stays until notify.c read the request's
 * events), the change was made outside pohmeld: recall every holder to
 * NONE, without waiting for the acks.
 */
void grants_local_change(uint64_t id)
{
	struct recall_msg *rm = NULL;
	struct gobj *o;

	pthread_mutex_lock(&grants_mu);
	o = gobj_find(id, false);
	if (o && !o->busy) {
		/* Even within ctime's tick, its change attribute moves. */
		change_bump(id, NULL);
		/* and so do its times: a creating client's are over */
		ctime_forget(id);
		recall_holders(o, &rm);
		log_debug("object %llu changed locally",
			  (unsigned long long)id);
	}
	pthread_mutex_unlock(&grants_mu);
	send_recalls(rm);
}

/*
 * notify.c: the kernel dropped watch wd of object id (IN_IGNORED): the
 * inode is gone (its last link removed; any local change before that
 * was reported and recalled). What the holders cache of it cannot change
 * any more, so they are dropped without a message, and its number may
 * now name a new object (another gen, which clients keep apart): its
 * first grant adds a new watch. Until then no grant stands on the id.
 */
void grants_watch_gone(uint64_t id, int wd)
{
	struct gobj *o;

	pthread_mutex_lock(&grants_mu);
	o = gobj_find(id, false);
	if (o && o->wd == wd) {
		o->wd = -1;
		while (o->holders)
			holder_del(o, o->holders);
		gobj_maybe_free(o);
		pthread_cond_broadcast(&grants_cv);
	}
	pthread_mutex_unlock(&grants_mu);
}
