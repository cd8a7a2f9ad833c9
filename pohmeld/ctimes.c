// SPDX-License-Identifier: MIT
/*
 * ctimes.c - times chosen by clients (POHMEL_CREATE_TIME, IO_TIMES).
 *
 * A client that creates or writes an object locally (write-back) shows
 * its own clock's times at once; the object is made or written on the
 * server later, and a ctime cannot be set (nor an mtime, by a writer who
 * is not the owner). So pohmeld remembers, per object id, the client's
 * ctime (and mtime) and the times the disk had right after pohmeld's
 * change, and reports the client's for as long as the disk still has
 * those: the next change of the object (through pohmeld or in the
 * export) moves the disk's ctime, and from then on the real ones are
 * reported, and the entry is dropped. A client's time further than
 * POHMEL_TIMES_WINDOW from the server's clock is not taken: a client
 * cannot make a file look months old or new to the others.
 *
 * Memory: at most CT_MAX entries (32 bytes each and a pointer); when the
 * table is full it is emptied, and the objects in it show their disk
 * ctime from then on (a few milliseconds to seconds later than the
 * client's: the delay of its write-back). The table lives in memory
 * only: after a restart of pohmeld, the same happens.
 *
 * Lock rules: ct_mu protects the table and its count; it is a leaf lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "pohmeld.h"

#define CT_BUCKETS	4096
#define CT_MAX		(1U << 16)

struct ct_ent {
	struct ct_ent *next;
	uint64_t id;
	bool has_m;			/* mtime reported too (IO_TIMES) */
	struct wtime client_c, client_m;
	struct timespec disk_c, disk_m;
};

static pthread_mutex_t ct_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ct_ent *ct_tab[CT_BUCKETS];	/* under ct_mu */
/* under ct_mu; read without it only to skip the lock when 0 */
static unsigned int ct_count;

static struct ct_ent **ct_slot(uint64_t id)
{
	struct ct_ent **pp = &ct_tab[(id * 0x9e3779b97f4a7c15ULL) >> 52];

	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next;
	return pp;
}

static void ct_clear_locked(void)
{
	for (size_t i = 0; i < CT_BUCKETS; i++) {
		while (ct_tab[i]) {
			struct ct_ent *e = ct_tab[i];

			ct_tab[i] = e->next;
			free(e);
		}
	}
	__atomic_store_n(&ct_count, 0, __ATOMIC_RELAXED);
}

/* Unlink and free *pp (ct_mu held). */
static void drop_locked(struct ct_ent **pp)
{
	struct ct_ent *e = *pp;

	*pp = e->next;
	free(e);
	__atomic_store_n(&ct_count, ct_count - 1, __ATOMIC_RELAXED);
}

static bool same_ts(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* A client's time not too far from ours (a wrong clock, or a lie). */
static bool plausible(const struct wtime *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return t->sec > now.tv_sec - POHMEL_TIMES_WINDOW &&
	       t->sec < now.tv_sec + POHMEL_TIMES_WINDOW;
}

/*
 * Object @id, as @st shows it now, is to be reported with the client's
 * ctime @c (and mtime @mt, unless NULL) until its disk times move.
 */
void ctime_note(uint64_t id, const struct wtime *c, const struct wtime *mt,
		const struct stat *st)
{
	struct ct_ent **pp, *e;

	if (!plausible(c) || (mt && !plausible(mt)))
		return;		/* the disk's times are reported */
	pthread_mutex_lock(&ct_mu);
	pp = ct_slot(id);
	e = *pp;
	if (!e) {
		if (ct_count >= CT_MAX)
			ct_clear_locked();
		e = calloc(1, sizeof(*e));
		if (!e)
			goto out;	/* the disk's times: still true */
		e->id = id;
		pp = ct_slot(id);
		*pp = e;
		__atomic_store_n(&ct_count, ct_count + 1, __ATOMIC_RELAXED);
	}
	e->client_c = *c;
	e->disk_c = st->st_ctim;
	e->has_m = mt != NULL;
	if (mt) {
		e->client_m = *mt;
		e->disk_m = st->st_mtim;
	}
out:
	pthread_mutex_unlock(&ct_mu);
}

/*
 * The times to report for object @id whose disk times @st has: *ct (and
 * *mt, if not NULL) are replaced by a client's while they hold.
 */
void ctime_report(uint64_t id, const struct stat *st, struct wtime *ct,
		  struct wtime *mt)
{
	struct ct_ent **pp, *e;

	if (!__atomic_load_n(&ct_count, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ct_mu);
	pp = ct_slot(id);
	e = *pp;
	if (e && same_ts(&e->disk_c, &st->st_ctim) &&
	    (!e->has_m || same_ts(&e->disk_m, &st->st_mtim))) {
		*ct = e->client_c;
		if (e->has_m && mt)
			*mt = e->client_m;
	} else if (e) {
		drop_locked(pp);	/* changed since: the real times */
	}
	pthread_mutex_unlock(&ct_mu);
}

/* A change seen in the export (inotify): the disk's times from now on. */
void ctime_forget(uint64_t id)
{
	struct ct_ent **pp;

	if (!__atomic_load_n(&ct_count, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ct_mu);
	pp = ct_slot(id);
	if (*pp)
		drop_locked(pp);
	pthread_mutex_unlock(&ct_mu);
}

void ctime_fini(void)
{
	pthread_mutex_lock(&ct_mu);
	ct_clear_locked();
	pthread_mutex_unlock(&ct_mu);
}
