// SPDX-License-Identifier: MIT
/*
 * grants_local.c - telling pohmeld's own changes from local ones.
 *
 * A modifying request marks the objects it changes in flight
 * (grants_begin, grants.c); notify.c skips events of marked objects, and
 * a reply to another connection gets no grant on one. The marks stay
 * until notify.c has read every event the request caused (grants_end),
 * and go before the reply, so a local change after it is always seen.
 * A change notify.c reports of an unmarked object was made in the
 * export directly: its holders are recalled (grants_local_change).
 *
 * Lock rules: grants_mu (grants.c) protects the marks, as the gobj they
 * are on.
 */
#include <stdlib.h>
#include "grants_int.h"

/*
 * After the handler: while the modified objects are still marked in
 * flight, let notify.c read every event the request caused (they are
 * pohmeld's own, not local changes: it skips objects in flight), then
 * drop the marks. The request reads the queue itself (notify_sync), with
 * no other thread to wake or wait for.
 */
void grants_end(struct req *r)
{
	bool watched = false;
	int i;

	pthread_mutex_lock(&grants_mu);
	for (i = 0; i < r->ngm; i++)
		if (r->gm[i].obj && r->gm[i].obj->wd >= 0)
			watched = true;
	pthread_mutex_unlock(&grants_mu);
	if (watched)
		notify_sync();
	pthread_mutex_lock(&grants_mu);
	for (i = 0; i < r->ngm; i++) {
		struct grant_mark *g = &r->gm[i], **pp;
		struct gobj *o = g->obj;

		if (!o)
			continue;
		for (pp = &o->busy; *pp; pp = &(*pp)->next) {
			if (*pp == g) {
				*pp = g->next;
				break;
			}
		}
		gobj_maybe_free(o);
		g->obj = NULL;
	}
	pthread_mutex_unlock(&grants_mu);
	r->ngm = 0;
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
