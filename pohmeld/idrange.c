// SPDX-License-Identifier: MIT
/*
 * idrange.c - object ids delegated to a session in advance (IDRANGE,
 * POHMEL_CREATE_ID; pohmel_proto.h "Delegated object ids").
 *
 * A client holding a directory write grant creates objects locally and
 * must know their final ids at once: it asks for a range of ids ahead
 * of time and names one in each create it flushes. The ranges belong to
 * the session: they are recorded in its state file (session_rec.c) and so
 * survive reconnects and restarts of pohmeld with it.
 *
 * What keeps one id naming one object:
 * - a range comes from the counter (idspace.c), which never repeats;
 * - its gen is random: a range given back at a session's end and handed
 *   out again gets a new gen, so (id, gen) still never repeats;
 * - ids of a range are used in increasing order (used: how many from
 *   start are spent), and an id is bound only if no object has it
 *   (oid_bind); a create that names an id it may not use creates
 *   nothing.
 */
#include <errno.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "pohmeld.h"

static uint64_t random_gen(void)
{
	uint64_t g = 0;

	while (!g) {
		if (getrandom(&g, sizeof(g), 0) != sizeof(g))
			g = ((uint64_t)time(NULL) << 20) ^ (uint64_t)clock();
	}
	return g;
}

int idr_add(struct idr_set *set, uint32_t want, struct idr_range *out)
{
	unsigned int i, n = 0;
	uint64_t start;
	uint32_t got;
	int err;

	if (!want || want > POHMEL_IDRANGE_MAX)
		return EINVAL;
	/* Spent ranges need not be kept: their ids can never be used. */
	for (i = 0; i < set->n; i++)
		if (set->r[i].used < set->r[i].count)
			set->r[n++] = set->r[i];
	set->n = n;
	if (set->n >= POHMEL_IDRANGE_HELD)
		return EDQUOT;
	err = idspace_alloc_range(want, &start, &got);
	if (err)
		return err;
	out->start = start;
	out->count = got;
	out->gen = random_gen();
	out->used = 0;
	set->r[set->n++] = *out;
	return 0;
}

/*
 * The range of set holding id: its index, or -1. With allow_used an id
 * already spent is accepted (a request run again after a restart: the
 * first run may have spent it).
 */
int idr_find(const struct idr_set *set, uint64_t id, bool allow_used)
{
	unsigned int i;

	for (i = 0; i < set->n; i++) {
		const struct idr_range *r = &set->r[i];

		if (id < r->start || id - r->start >= r->count)
			continue;
		if (!allow_used && id - r->start < r->used)
			return -1;
		return (int)i;
	}
	return -1;
}

void idr_use(struct idr_set *set, int i, uint64_t id)
{
	struct idr_range *r = &set->r[i];
	uint32_t used = (uint32_t)(id - r->start) + 1;

	if (used > r->used)
		r->used = used;
}

void idr_give_back(struct idr_set *set)
{
	unsigned int i;

	for (i = 0; i < set->n; i++)
		idspace_give_back(set->r[i].start + set->r[i].used,
				  set->r[i].count - set->r[i].used);
	set->n = 0;
}

const char *idr_check_rec(const struct idr_range *r)
{
	if (!r->start || !r->gen || !r->count || r->count > POHMEL_IDRANGE_MAX)
		return "range start, gen or count out of bounds";
	if (r->used > r->count)
		return "more ids used than the range holds";
	/* Ids at or above the counter were never handed out. */
	if (r->start + r->count > idspace_next() ||
	    r->start + r->count < r->start)
		return "range of ids never handed out";
	return NULL;
}

void idr_restore(struct idr_set *set, const struct idr_range *r)
{
	unsigned int i;

	for (i = 0; i < set->n; i++) {
		if (set->r[i].start == r->start) {
			if (set->r[i].gen == r->gen && r->used > set->r[i].used)
				set->r[i].used = r->used;
			return;
		}
	}
	if (set->n < POHMEL_IDRANGE_HELD)
		set->r[set->n++] = *r;
}

uint32_t idr_enc(uint8_t *b, const struct idr_range *r)
{
	put64(b, r->start);
	put64(b + 8, r->gen);
	put32(b + 16, r->count);
	put32(b + 20, r->used);
	return IDR_REC_LEN;
}

void idr_dec(const uint8_t *b, struct idr_range *r)
{
	r->start = get64(b);
	r->gen = get64(b + 8);
	r->count = get32(b + 16);
	r->used = get32(b + 20);
}

int op_idrange(struct req *r)
{
	const struct msg *m = r->m;
	struct idr_range got;
	uint8_t *p;
	int err;

	if (!(r->c->features & POHMEL_FEAT_IDRANGE) || !r->s)
		return EOPNOTSUPP;
	if (!m->hdr.seq)
		return EINVAL;	/* a replay must find the same range */
	err = session_idrange(r->s, m->count, &got);
	if (err)
		return err;
	p = req_put(r, POHMEL_IDRANGE_SIZE);
	if (!p)
		return EOVERFLOW;
	put64(p, got.start);
	put64(p + 8, got.gen);
	put32(p + 16, got.count);
	put32(p + 20, 0);
	return 0;
}

/*
 * CREATE_ID: the id the request names, checked against the session's
 * ranges, into *want. With POHMEL_CREATE_ID the object must be new
 * (EEXIST otherwise): a delegated id never renames an existing object.
 */
int idr_create_check(struct req *r, struct woid *want)
{
	static struct ratelimit rl = RATELIMIT_INIT;
	const struct msg *m = r->m;
	int err;

	if (!(r->c->features & POHMEL_FEAT_IDRANGE) || !r->s)
		return EOPNOTSUPP;
	want->id = m->cid;
	err = session_id_check(r->s, m->cid, r->redo, &want->gen);
	if (err)
		log_limited(&rl, LOG_WARNING,
			    "%s: a create with id %llu refused: not in a range delegated to the session, or spent (ids of a range are used in increasing order)",
			    r->c->peer, (unsigned long long)m->cid);
	return err;
}

/* After the create: bind the delegated id to what is now at name. */
int idr_create_bind(struct req *r, int dirfd, const char *name,
		    const struct woid *want, uint64_t min_seq)
{
	struct stat st;
	int fd, err;

	err = child_open(dirfd, name, &fd);
	if (err)
		return err;
	err = fstat(fd, &st) ? errno : oid_bind(fd, &st, want, min_seq);
	close(fd);
	if (!err)
		session_id_used(r->s, want->id);
	return err;
}
