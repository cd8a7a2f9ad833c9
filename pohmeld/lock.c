// SPDX-License-Identifier: MIT
/*
 * lock.c - LOCK: flock and POSIX byte-range locks arbitrated by pohmeld
 * itself, across all clients.
 *
 * The server cannot hold kernel locks on behalf of remote owners (an OFD
 * lock belongs to an open file, a POSIX lock to a process), so it keeps
 * its own table: per object id, the granted locks and a FIFO of waiters.
 * An owner is (session id, client's owner value). flock and POSIX locks
 * never conflict with each other, as on Linux.
 *
 * A LOCK with WAIT that conflicts is parked; its reply is pushed to the
 * waiter's outbox by the thread whose unlock (or session end) makes it
 * grantable (outbox.c: written at once as far as the socket takes it,
 * else by the waiter's own connection threads, which cut it off if it
 * does not take it within a lease), so a waiter that stopped reading
 * never holds up the unlocker's connection, and no thread waits for it.
 *
 * Lock records are bounded: MAX_LOCKS in all, and max-locks-per-session
 * for one session (pohmeld.conf(5)), so that one client cannot take them
 * all: a LOCK (or an unlock that splits a range) that would go beyond
 * either answers ENOLCK, to that session only; each kind is counted in
 * STATS and logged (log_limited: a few lines per 10 s, then a count).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "pohmeld.h"

#ifndef SYS_faccessat2
#define SYS_faccessat2	439	/* Linux 5.8, one number on every arch */
#endif

#define NBUCKETS	1024
#define MAX_LOCKS	100000
#define END_MAX		((uint64_t)INT64_MAX)

struct lk {
	struct lk *next;
	uint64_t sess, owner;
	uint64_t start, end;	/* inclusive */
	uint32_t type, pid;
	bool flock;
};

struct waiter {
	struct waiter *next;
	struct lk want;
	uint64_t obj;
	struct conn *c;		/* referenced */
	struct session *s;	/* referenced */
	uint32_t tag;
	uint64_t seq;
	uint32_t status;	/* set when taken off the queue */
};

struct lobj {
	struct lobj *next;
	uint64_t id;
	struct lk *locks;
	struct waiter *waiters;	/* FIFO */
};

/* lk_mu protects the whole table: buckets, every lobj, lk and waiter. */
static pthread_mutex_t lk_mu = PTHREAD_MUTEX_INITIALIZER;
static struct lobj *buckets[NBUCKETS];
static long nlocks;

/* Lock records per session, under lk_mu; an entry exists while > 0. */
struct lcount {
	struct lcount *next;
	uint64_t sess;
	long n;
};
static struct lcount *lcounts[NBUCKETS];

/* Must hold lk_mu. */
static struct lcount *lcount_get(uint64_t sess, bool create)
{
	struct lcount **pp = &lcounts[sess % NBUCKETS], *e;

	for (e = *pp; e; e = e->next)
		if (e->sess == sess)
			return e;
	if (!create)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->sess = sess;
	e->next = *pp;
	*pp = e;
	return e;
}

/* Must hold lk_mu. Frees e once its session holds no lock record. */
static void lcount_trim(struct lcount *e)
{
	struct lcount **pp;

	if (!e || e->n > 0)
		return;
	for (pp = &lcounts[e->sess % NBUCKETS]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			free(e);
			return;
		}
	}
}

long lock_count(void)
{
	long n;

	pthread_mutex_lock(&lk_mu);
	n = nlocks;
	pthread_mutex_unlock(&lk_mu);
	return n;
}

/* Lock records session sess holds (pohmel clients). */
long lock_count_session(uint64_t sess)
{
	struct lcount *e;
	long n;

	pthread_mutex_lock(&lk_mu);
	e = lcount_get(sess, false);
	n = e ? (long)e->n : 0;
	pthread_mutex_unlock(&lk_mu);
	return n;
}

/* Must hold lk_mu: ENOLCK, counted and (rate-limited) logged. */
static int refuse(uint64_t sess, bool total)
{
	static struct ratelimit rl = RATELIMIT_INIT;

	if (total) {
		stats.locks_refused_total++;
		log_limited(&rl, LOG_WARNING, "session %llu: LOCK refused "
			    "(ENOLCK): all %d lock records are taken",
			    (unsigned long long)sess, MAX_LOCKS);
	} else {
		stats.locks_refused_session++;
		log_limited(&rl, LOG_WARNING, "session %llu: LOCK refused "
			    "(ENOLCK): it holds max-locks-per-session (%d) "
			    "lock records", (unsigned long long)sess,
			    srv.cfg.max_locks_per_session);
	}
	return ENOLCK;
}

/* Must hold lk_mu. */
static struct lobj *lobj_get(uint64_t id, bool create)
{
	struct lobj **pp = &buckets[id % NBUCKETS], *o;

	for (o = *pp; o; o = o->next)
		if (o->id == id)
			return o;
	if (!create)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->id = id;
	o->next = *pp;
	*pp = o;
	return o;
}

/* Must hold lk_mu. Frees o if nothing references it any more. */
static void lobj_trim(struct lobj *o)
{
	struct lobj **pp;

	if (o->locks || o->waiters)
		return;
	for (pp = &buckets[o->id % NBUCKETS]; *pp; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			free(o);
			return;
		}
	}
}

static bool same_owner(const struct lk *a, const struct lk *b)
{
	return a->sess == b->sess && a->owner == b->owner;
}

/* Must hold lk_mu. */
static struct lk *conflict(struct lobj *o, const struct lk *w)
{
	struct lk *l;

	for (l = o->locks; l; l = l->next) {
		if (l->flock != w->flock || same_owner(l, w))
			continue;
		if (l->end < w->start || w->end < l->start)
			continue;
		if (l->type == POHMEL_LOCK_WR || w->type == POHMEL_LOCK_WR)
			return l;
	}
	return NULL;
}

/*
 * Must hold lk_mu. Set w's range to w->type for its owner: cut the
 * owner's locks of the same kind out of [start, end] (splitting one that
 * spans it), then add the new lock unless it is an unlock.
 */
static int apply(struct lobj *o, const struct lk *w)
{
	struct lk **pp = &o->locks, *l, *split = NULL, *nl = NULL;
	long need = w->type != POHMEL_LOCK_UN, quota;
	struct lcount *cnt;

	/* Records it adds: the new lock, one per lock it splits, less the
	 * owner's locks it covers (so one at its quota may still change a
	 * lock's type). */
	for (l = o->locks; l; l = l->next) {
		if (l->flock != w->flock || !same_owner(l, w) ||
		    l->end < w->start || w->end < l->start)
			continue;
		if (l->start < w->start && l->end > w->end)
			need++;
		else if (l->start >= w->start && l->end <= w->end)
			need--;
	}
	quota = srv.cfg.max_locks_per_session > 0 ?
		srv.cfg.max_locks_per_session : MAX_LOCKS;
	cnt = lcount_get(w->sess, need > 0);
	if (need > 0 && !cnt)
		return ENOLCK;
	if (need > 0 && nlocks + need > MAX_LOCKS) {
		lcount_trim(cnt);
		return refuse(w->sess, true);
	}
	if (need > 0 && cnt->n + need > quota) {
		lcount_trim(cnt);
		return refuse(w->sess, false);
	}
	if (w->type != POHMEL_LOCK_UN) {
		nl = malloc(sizeof(*nl));
		split = malloc(sizeof(*split));
		if (!nl || !split) {
			free(nl);
			free(split);
			lcount_trim(cnt);
			return ENOLCK;
		}
	} else {
		split = malloc(sizeof(*split));
		if (!split) {
			lcount_trim(cnt);
			return ENOLCK;
		}
	}
	while ((l = *pp)) {
		if (l->flock != w->flock || !same_owner(l, w) ||
		    l->end < w->start || w->end < l->start) {
			pp = &l->next;
			continue;
		}
		if (l->start < w->start && l->end > w->end) {
			/* w is strictly inside l: l becomes two pieces. */
			*split = *l;
			split->start = w->end + 1;
			l->end = w->start - 1;
			split->next = l->next;
			l->next = split;
			split = NULL;
			nlocks++;
			if (cnt)
				cnt->n++;
			pp = &l->next->next;
		} else if (l->start < w->start) {
			l->end = w->start - 1;
			pp = &l->next;
		} else if (l->end > w->end) {
			l->start = w->end + 1;
			pp = &l->next;
		} else {
			*pp = l->next;
			free(l);
			nlocks--;
			if (cnt)
				cnt->n--;
		}
	}
	free(split);
	if (nl) {
		*nl = *w;
		nl->next = o->locks;
		o->locks = nl;
		nlocks++;
		if (cnt)
			cnt->n++;
	}
	lcount_trim(cnt);
	return 0;
}

static void send_reply(struct waiter *w)
{
	uint8_t buf[POHMEL_HDR_SIZE];
	struct whdr h = {
		.op = POHMEL_OP_LOCK, .flags = POHMEL_HF_REPLY, .tag = w->tag,
		.status = w->status, .seq = w->seq,
	};

	if (w->seq && w->s)
		session_seq_end(w->s, w->seq, w->status, NULL, 0);
	whdr_put(buf, &h);
	outbox_push(w->c, buf, sizeof(buf));
}

static void free_waiter(struct waiter *w, bool reply)
{
	if (reply)
		send_reply(w);
	else if (w->seq && w->s)
		session_seq_abort(w->s, w->seq);	/* may be replayed */
	if (w->s)
		session_unref(w->s);
	conn_put(w->c);
	free(w);
}

/* Must hold lk_mu. Grant what can be granted, FIFO; onto *done. */
static void regrant(struct lobj *o, struct waiter **done)
{
	struct waiter **pp = &o->waiters, *w;

	while ((w = *pp)) {
		if (conflict(o, &w->want)) {
			pp = &w->next;
			continue;
		}
		w->status = (uint32_t)apply(o, &w->want);
		*pp = w->next;
		w->next = *done;
		*done = w;
	}
}

static void finish(struct waiter *done, bool reply)
{
	struct waiter *w, *next;

	for (w = done; w; w = next) {
		next = w->next;
		free_waiter(w, reply);
	}
}

/*
 * A lock needs the access its mode implies, as in NFSv4: reading for a
 * read lock, writing for a write lock, either for a test. An unlock
 * needs none: it only ever drops the owner's own locks. The check is the
 * kernel's, for the caller's fsuid (AT_EACCESS), ACLs included.
 */
static int lock_access(struct req *r, int fd, uint32_t type, bool test)
{
	int err, mode = type == POHMEL_LOCK_WR ? W_OK : R_OK;

	if (type == POHMEL_LOCK_UN && !test)
		return 0;
	err = req_caller(r);
	if (err)
		return err;
	if (test)
		mode = R_OK;
	if (!syscall(SYS_faccessat2, fd, "", mode, AT_EACCESS | AT_EMPTY_PATH))
		return 0;
	err = errno;
	if (test &&
	    !syscall(SYS_faccessat2, fd, "", W_OK, AT_EACCESS | AT_EMPTY_PATH))
		return 0;
	return err;
}

int op_lock(struct req *r)
{
	const struct msg *m = r->m;
	struct lk want = {
		.sess = r->s ? session_id(r->s) : 0, .owner = m->owner,
		.type = m->type, .pid = m->pid,
		.flock = !!(m->flags & POHMEL_LOCK_FLOCK),
	};
	struct waiter *done = NULL, *w;
	struct lobj *o;
	struct stat st;
	struct lk *l;
	int fd, err = 0;

	if (want.flock) {
		want.start = 0;
		want.end = END_MAX;
	} else {
		want.start = m->start;
		want.end = m->len ? m->start + m->len - 1 : END_MAX;
	}
	if (m->flags & POHMEL_LOCK_WAIT &&
	    (r->in_batch || m->flags & POHMEL_LOCK_TEST))
		return EINVAL;
	err = req_obj(r, &m->oid, &fd, &st);	/* ESTALE for a bad gen */
	if (err)
		return err;
	err = lock_access(r, fd, want.type, m->flags & POHMEL_LOCK_TEST);
	close(fd);
	if (err)
		return err;

	pthread_mutex_lock(&lk_mu);
	o = lobj_get(m->oid.id, want.type != POHMEL_LOCK_UN ||
				!!(m->flags & POHMEL_LOCK_TEST));
	if (!o) {
		pthread_mutex_unlock(&lk_mu);
		if (m->flags & POHMEL_LOCK_TEST)
			return ENOLCK;
		return want.type == POHMEL_LOCK_UN ? 0 : ENOLCK;
	}
	if (m->flags & POHMEL_LOCK_TEST) {
		uint8_t *p = req_put(r, POHMEL_LOCK_SIZE);

		l = conflict(o, &want);
		if (p) {
			const struct lk *x = l ? l : &want;

			memset(p, 0, POHMEL_LOCK_SIZE);
			woid_put(p, &m->oid);
			put64(p + 16, x->owner);
			put64(p + 24, x->start);
			put64(p + 32, x->end == END_MAX ? 0 :
				      x->end - x->start + 1);
			put32(p + 40, l ? l->type : POHMEL_LOCK_UN);
			put32(p + 44, l && l->flock ? POHMEL_LOCK_FLOCK : 0);
			put32(p + 48, x->pid);
		} else {
			err = E2BIG;
		}
		goto out_trim;
	}
	if (want.type != POHMEL_LOCK_UN && conflict(o, &want)) {
		if (!(m->flags & POHMEL_LOCK_WAIT)) {
			err = EAGAIN;
			goto out_trim;
		}
		if (atomic_load(&srv.stopping)) {
			err = EINTR;	/* shutting down: no new waits */
			goto out_trim;
		}
		w = calloc(1, sizeof(*w));
		if (!w) {
			err = ENOLCK;
			goto out_trim;
		}
		w->want = want;
		w->obj = m->oid.id;
		w->c = r->c;
		conn_get(r->c);
		w->s = r->s;
		if (w->s)
			session_ref(w->s);
		w->tag = m->hdr.tag;
		w->seq = m->hdr.seq;
		/* Append: waiters are served in arrival order. */
		{
			struct waiter **pp = &o->waiters;

			while (*pp)
				pp = &(*pp)->next;
			*pp = w;
		}
		r->deferred = true;
		pthread_mutex_unlock(&lk_mu);
		return 0;
	}
	err = apply(o, &want);
	if (!err)
		regrant(o, &done);
out_trim:
	lobj_trim(o);
	pthread_mutex_unlock(&lk_mu);
	finish(done, true);
	return err;
}

/*
 * Take waiters matching (c, sess, obj) (zero/NULL: any) off the queues,
 * optionally drop sess's locks, regrant, then reply outside lk_mu.
 */
static void sweep(struct conn *c, uint64_t sess, uint64_t obj,
		  bool drop_locks, uint32_t cancel_status, bool cancel_reply)
{
	struct waiter *cancelled = NULL, *granted = NULL, **wp, *w;
	struct lobj *o, *onext;
	struct lcount *lc;
	struct lk **lp, *l;
	int i;

	pthread_mutex_lock(&lk_mu);
	for (i = 0; i < NBUCKETS; i++) {
		for (o = buckets[i]; o; o = onext) {
			onext = o->next;
			if (obj && o->id != obj)
				continue;
			for (wp = &o->waiters; (w = *wp);) {
				if ((c && w->c != c) ||
				    (sess && w->want.sess != sess)) {
					wp = &w->next;
					continue;
				}
				*wp = w->next;
				w->status = cancel_status;
				w->next = cancelled;
				cancelled = w;
			}
			for (lp = &o->locks; drop_locks && (l = *lp);) {
				if (l->sess != sess) {
					lp = &l->next;
					continue;
				}
				*lp = l->next;
				free(l);
				nlocks--;
				lc = lcount_get(sess, false);
				if (lc && --lc->n <= 0)
					lcount_trim(lc);
			}
			regrant(o, &granted);
			lobj_trim(o);
		}
	}
	pthread_mutex_unlock(&lk_mu);
	finish(cancelled, cancel_reply);
	finish(granted, true);
}

void lock_session_end(uint64_t sess_id)
{
	sweep(NULL, sess_id, 0, true, 0, false);
}

void lock_conn_gone(struct conn *c)
{
	sweep(c, 0, 0, false, 0, false);
}

/* CLOSE cancels the session's waits on the object (EINTR, as a signal
 * would locally). */
void lock_close(uint64_t sess_id, uint64_t obj_id)
{
	sweep(NULL, sess_id, obj_id, false, EINTR, true);
}

void lock_shutdown(void)
{
	sweep(NULL, 0, 0, false, EINTR, true);
}
