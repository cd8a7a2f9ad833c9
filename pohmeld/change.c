// SPDX-License-Identifier: MIT
/*
 * change.c - the change attribute (pohmel_attr.change).
 *
 * A client compares the value with the one it cached: any difference
 * means "drop what you cached". The file's ctime alone is not enough:
 * it moves once per kernel tick, so two writes within one tick would
 * look like no change. The value is therefore a 64-bit mix of
 *
 *   epoch  - per pohmeld start (boot time in ns and random bits): a
 *            client that cached a value before a restart never sees it
 *            again after it, whatever happened meanwhile;
 *   resets - how often this table was emptied (see below);
 *   id     - the object;
 *   ctime  - in ns: catches every change made outside pohmeld;
 *   tag    - 0, or a number from a per-start counter that is never
 *            handed out twice: set for an object each time pohmeld
 *            modifies it (after the syscall, before the reply's attrs
 *            are taken: change_bump) and each time inotify reports a
 *            local change of a watched object (grants.c).
 *
 * So the value moves with every modification made through pohmeld
 * and with every local one that moves ctime or is seen by inotify, and
 * stays put while nothing happens. For a fixed tag the mix is a
 * bijection of ctime, so two ctimes never give one value; between
 * different tags a repeat has odds of 2^-64. Forgetting a tag could
 * bring an old value back, so tags are only forgotten all at once
 * (the table is full), and `resets` moves with that: every value
 * changes, clients re-read once.
 *
 * Tags also order modifications in time (grants.c): a request notes
 * change_now() before it reads anything, and change_moved() later says
 * whether an object was bumped since, by anyone but the request itself.
 * A reset forgets which, so it counts as a bump of every object.
 *
 * Lock rules: change_mu protects the table, its count, next_tag,
 * resets and reset_at; it is a leaf lock (taken under grants_mu, never
 * the other way round).
 */
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>
#include "pohmeld.h"

#define CHANGE_BUCKETS	65536
#define CHANGE_MAX	(1U << 18)	/* tagged objects before a reset */

struct change_ent {
	struct change_ent *next;
	uint64_t id;
	uint64_t tag;
};

static pthread_mutex_t change_mu = PTHREAD_MUTEX_INITIALIZER;
static struct change_ent *ctab[CHANGE_BUCKETS];	/* under change_mu */
static unsigned int count;			/* under change_mu */
static uint64_t next_tag = 1;			/* under change_mu */
static uint64_t resets;				/* under change_mu */
static uint64_t reset_at;			/* under change_mu: the
						 * tag of the last reset */
static uint64_t epoch;				/* set before any request */

/* splitmix64's finaliser: a bijection with good avalanche. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static size_t cbucket(uint64_t id)
{
	return (size_t)(mix(id) % CHANGE_BUCKETS);
}

/* Must hold change_mu. id's entry, or NULL. */
static struct change_ent *find_locked(uint64_t id)
{
	struct change_ent *e;

	for (e = ctab[cbucket(id)]; e; e = e->next)
		if (e->id == id)
			break;
	return e;
}

void change_init(uint64_t boot_gen)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint64_t)getpid() << 32;
	epoch = mix(boot_gen) ^ r;
}

/* Must hold change_mu. */
static void reset_locked(void)
{
	struct change_ent *e, *next;
	size_t i;

	for (i = 0; i < CHANGE_BUCKETS; i++) {
		for (e = ctab[i]; e; e = next) {
			next = e->next;
			free(e);
		}
		ctab[i] = NULL;
	}
	count = 0;
	resets++;
	reset_at = next_tag++;
}

/*
 * id was modified: give it a new tag, returned (0 if it could not be
 * remembered: a reset then moved every value). *prev (if prev) is the
 * tag it replaced, 0 if none.
 */
uint64_t change_bump(uint64_t id, uint64_t *prev)
{
	struct change_ent *e;
	uint64_t tag = 0;

	pthread_mutex_lock(&change_mu);
	e = find_locked(id);
	if (prev)
		*prev = e ? e->tag : 0;
	if (!e) {
		if (count >= CHANGE_MAX)
			reset_locked();
		e = malloc(sizeof(*e));
		if (!e) {
			/* Cannot remember this tag: move every value. */
			reset_locked();
			goto out;
		}
		e->id = id;
		e->next = ctab[cbucket(id)];
		ctab[cbucket(id)] = e;
		count++;
	}
	e->tag = tag = next_tag++;
out:
	pthread_mutex_unlock(&change_mu);
	return tag;
}

/* A point in time: every bump (or reset) after it has a tag >= it. */
uint64_t change_now(void)
{
	uint64_t t;

	pthread_mutex_lock(&change_mu);
	t = next_tag;
	pthread_mutex_unlock(&change_mu);
	return t;
}

/*
 * Was id bumped at or after point `since`, other than by the bump whose
 * tag is `own` (0: none)? A later bump replaces `own`, so it is seen.
 */
bool change_moved(uint64_t id, uint64_t since, uint64_t own)
{
	struct change_ent *e;
	bool moved;

	pthread_mutex_lock(&change_mu);
	e = find_locked(id);
	moved = reset_at >= since ||
		(e && e->tag >= since && e->tag != own);
	pthread_mutex_unlock(&change_mu);
	return moved;
}

uint64_t change_of(uint64_t id, const struct stat *st)
{
	uint64_t tag = 0, gen, ct;
	struct change_ent *e;

	pthread_mutex_lock(&change_mu);
	e = find_locked(id);
	if (e)
		tag = e->tag;
	gen = resets;
	pthread_mutex_unlock(&change_mu);
	ct = (uint64_t)st->st_ctim.tv_sec * 1000000000ULL +
	     (uint64_t)st->st_ctim.tv_nsec;
	return mix(epoch ^ mix(gen ^ mix(id ^ mix(ct ^ mix(tag)))));
}

void change_fini(void)
{
	pthread_mutex_lock(&change_mu);
	reset_locked();
	pthread_mutex_unlock(&change_mu);
}
