// SPDX-License-Identifier: MIT
/*
 * ctimes.c - ctimes chosen by clients (POHMEL_CREATE_TIME).
 *
 * A client that creates an object locally (write-back) shows its own
 * clock's time as the object's ctime at once; the object is made on the
 * server later, and a ctime cannot be set. So pohmeld remembers, per
 * object id, the client's ctime and the ctime the disk had right after
 * pohmeld made the object, and reports the client's for as long as the
 * disk still has that one: the next change of the object (through
 * pohmeld or in the export) moves the disk's ctime, and from then on the
 * real one is reported, and the entry is dropped.
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
#include "pohmeld.h"

#define CT_BUCKETS	4096
#define CT_MAX		(1U << 16)

struct ct_ent {
	struct ct_ent *next;
	uint64_t id;
	struct wtime client, disk;
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

static bool same_time(const struct wtime *a, const struct timespec *b)
{
	return a->sec == (int64_t)b->tv_sec && a->nsec == (uint32_t)b->tv_nsec;
}

void ctime_note(uint64_t id, const struct wtime *client,
		const struct timespec *disk)
{
	struct ct_ent **pp, *e;

	pthread_mutex_lock(&ct_mu);
	pp = ct_slot(id);
	e = *pp;
	if (!e) {
		if (ct_count >= CT_MAX)
			ct_clear_locked();
		e = calloc(1, sizeof(*e));
		if (!e)
			goto out;	/* the disk's ctime is shown: still true */
		e->id = id;
		pp = ct_slot(id);
		*pp = e;
		__atomic_store_n(&ct_count, ct_count + 1, __ATOMIC_RELAXED);
	}
	e->client = *client;
	e->disk.sec = disk->tv_sec;
	e->disk.nsec = (uint32_t)disk->tv_nsec;
out:
	pthread_mutex_unlock(&ct_mu);
}

void ctime_report(uint64_t id, const struct timespec *disk, struct wtime *out)
{
	struct ct_ent **pp, *e;

	if (!__atomic_load_n(&ct_count, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ct_mu);
	pp = ct_slot(id);
	e = *pp;
	if (e) {
		if (same_time(&e->disk, disk)) {
			*out = e->client;
		} else {
			/* changed since: the real ctime from now on */
			*pp = e->next;
			free(e);
			__atomic_store_n(&ct_count, ct_count - 1,
					 __ATOMIC_RELAXED);
		}
	}
	pthread_mutex_unlock(&ct_mu);
}

void ctime_fini(void)
{
	pthread_mutex_lock(&ct_mu);
	ct_clear_locked();
	pthread_mutex_unlock(&ct_mu);
}
