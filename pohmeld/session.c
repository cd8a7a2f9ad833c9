// SPDX-License-Identifier: MIT
/*
 * session.c - client sessions.
 *
 * A session is named by the client's (uuid, boot_gen) from HELLO and
 * outlives its connections: after a reconnect the client finds its reply
 * cache, open handles and locks again. A session ends on BYE, when the
 * same uuid comes back with another boot_gen (the client rebooted), or
 * when no connection has used it for session-timeout seconds.
 *
 * Memory per session is bounded: the reply cache keeps at most
 * POHMEL_REPLY_CACHE replies, each the reply to a non-idempotent request
 * (at most an entry reply, 240 bytes, plus the cache slot), so about
 * 300 KiB; open handles are limited to MAX_HANDLES.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "pohmeld.h"

#define MAX_HANDLES	4096
#define MAX_SESSIONS	1024	/* x ~300 KiB worst case each */

struct cache_ent {
	uint64_t seq;		/* 0: empty */
	bool busy;		/* being executed; waiters sleep on cv */
	uint32_t status;
	uint32_t plen;
	uint8_t *payload;
};

struct handle_ent {
	int fd;			/* -1: free slot */
	uint32_t gen;
	unsigned int flags;
	struct woid oid;
};

struct session {
	/* Under sess_mu: */
	struct session *next;
	bool listed;
	int refs;		/* connections, lock waiters, the list */
	int nconns;
	time_t idle_since;	/* when nconns dropped to 0 */

	/* Immutable after creation: */
	uint8_t uuid[16];
	uint64_t boot_gen;
	uint64_t id;

	/* Under mu: */
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* a busy cache entry finished */
	uint64_t max_seq;
	struct cache_ent cache[POHMEL_REPLY_CACHE];
	struct handle_ent *handles;
	uint32_t nhandles;
	uint32_t hgen;
};

static pthread_mutex_t sess_mu = PTHREAD_MUTEX_INITIALIZER;
static struct session *sessions;	/* under sess_mu */
static int nsessions;			/* under sess_mu */
static uint64_t next_id = 1;		/* under sess_mu */

uint64_t session_id(const struct session *s)
{
	return s->id;
}

int sessions_count(void)
{
	int n;

	pthread_mutex_lock(&sess_mu);
	n = nsessions;
	pthread_mutex_unlock(&sess_mu);
	return n;
}

/* Drop handles and cached replies; locks go through lock.c. */
static void release(struct session *s)
{
	uint32_t i;

	lock_session_end(s->id);
	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->nhandles; i++)
		if (s->handles[i].fd >= 0)
			close(s->handles[i].fd);
	free(s->handles);
	s->handles = NULL;
	s->nhandles = 0;
	for (i = 0; i < POHMEL_REPLY_CACHE; i++) {
		free(s->cache[i].payload);
		s->cache[i].payload = NULL;
		s->cache[i].seq = 0;
		s->cache[i].busy = false;
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void destroy(struct session *s)
{
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

/* Must hold sess_mu. Takes s off the list; returns true if now unused. */
static bool unlist(struct session *s)
{
	struct session **pp;

	for (pp = &sessions; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	s->listed = false;
	nsessions--;
	return --s->refs == 0;
}

/* Must hold sess_mu. Moves expired sessions onto *dead. */
static void reap(struct session **dead)
{
	time_t now = time(NULL);
	struct session *s, *next;

	for (s = sessions; s; s = next) {
		next = s->next;
		if (s->nconns == 0 &&
		    now - s->idle_since >= srv.cfg.session_timeout) {
			s->refs++;	/* keep it alive for release() */
			unlist(s);
			s->next = *dead;
			*dead = s;
		}
	}
}

static void release_dead(struct session *dead)
{
	struct session *s, *next;

	for (s = dead; s; s = next) {
		next = s->next;
		log_debug("session %llu ended", (unsigned long long)s->id);
		release(s);
		pthread_mutex_lock(&sess_mu);
		if (--s->refs == 0) {
			pthread_mutex_unlock(&sess_mu);
			destroy(s);
		} else {
			pthread_mutex_unlock(&sess_mu);
		}
	}
}

struct session *session_attach(const uint8_t uuid[16], uint64_t boot_gen)
{
	struct session *s, *dead = NULL;

	pthread_mutex_lock(&sess_mu);
	reap(&dead);
	for (s = sessions; s; s = s->next)
		if (!memcmp(s->uuid, uuid, 16))
			break;
	if (s && s->boot_gen != boot_gen) {
		/* The client rebooted: its old state is void. */
		s->refs++;
		unlist(s);
		s->next = dead;
		dead = s;
		s = NULL;
	}
	if (!s && nsessions >= MAX_SESSIONS) {
		/* Full: the longest idle session without connections goes. */
		struct session *x, *old = NULL;

		for (x = sessions; x; x = x->next)
			if (x->nconns == 0 &&
			    (!old || x->idle_since < old->idle_since))
				old = x;
		if (old) {
			old->refs++;
			unlist(old);
			old->next = dead;
			dead = old;
		}
	}
	if (!s && nsessions < MAX_SESSIONS) {
		s = calloc(1, sizeof(*s));
		if (s) {
			memcpy(s->uuid, uuid, 16);
			s->boot_gen = boot_gen;
			s->id = next_id++;
			pthread_mutex_init(&s->mu, NULL);
			pthread_cond_init(&s->cv, NULL);
			s->refs = 1;
			s->listed = true;
			s->next = sessions;
			sessions = s;
			nsessions++;
		}
	}
	if (s) {
		s->refs++;
		s->nconns++;
	}
	pthread_mutex_unlock(&sess_mu);
	release_dead(dead);
	return s;
}

void session_detach(struct session *s)
{
	bool last;

	pthread_mutex_lock(&sess_mu);
	if (--s->nconns == 0)
		s->idle_since = time(NULL);
	last = --s->refs == 0;
	pthread_mutex_unlock(&sess_mu);
	if (last)
		destroy(s);
}

/* Extra references: a waiting LOCK keeps its session for the reply. */
void session_ref(struct session *s)
{
	pthread_mutex_lock(&sess_mu);
	s->refs++;
	pthread_mutex_unlock(&sess_mu);
}

void session_unref(struct session *s)
{
	bool last;

	pthread_mutex_lock(&sess_mu);
	last = --s->refs == 0;
	pthread_mutex_unlock(&sess_mu);
	if (last)
		destroy(s);
}

/* BYE: end the session now; the caller still holds its attach ref. */
void session_end(struct session *s)
{
	bool listed;

	pthread_mutex_lock(&sess_mu);
	listed = s->listed;
	if (listed)
		unlist(s);	/* never the last ref: the caller's remains */
	pthread_mutex_unlock(&sess_mu);
	if (listed)
		release(s);
}

void sessions_fini(void)
{
	struct session *dead = NULL, *s;

	pthread_mutex_lock(&sess_mu);
	while ((s = sessions)) {
		s->refs++;
		unlist(s);
		s->next = dead;
		dead = s;
	}
	pthread_mutex_unlock(&sess_mu);
	release_dead(dead);
}

/* ---- reply cache ---- */

enum seq_state session_seq_begin(struct session *s, uint64_t seq,
				 uint32_t *status, uint8_t *payload,
				 uint32_t *plen, uint32_t cap)
{
	struct cache_ent *e = &s->cache[seq % POHMEL_REPLY_CACHE];
	enum seq_state ret;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (s->max_seq >= POHMEL_REPLY_CACHE &&
		    seq <= s->max_seq - POHMEL_REPLY_CACHE) {
			ret = SEQ_OLD;
			break;
		}
		if (e->seq > seq) {
			ret = SEQ_OLD;
			break;
		}
		if (e->busy) {
			/* The same request is running on another connection
			 * (a replay raced the original): wait for its reply. */
			pthread_cond_wait(&s->cv, &s->mu);
			continue;
		}
		if (e->seq == seq) {
			*status = e->status;
			*plen = MIN(e->plen, cap);
			if (*plen)
				memcpy(payload, e->payload, *plen);
			ret = SEQ_CACHED;
			break;
		}
		free(e->payload);
		e->payload = NULL;
		e->plen = 0;
		e->seq = seq;
		e->busy = true;
		if (seq > s->max_seq)
			s->max_seq = seq;
		ret = SEQ_NEW;
		break;
	}
	pthread_mutex_unlock(&s->mu);
	return ret;
}

void session_seq_end(struct session *s, uint64_t seq, uint32_t status,
		     const uint8_t *payload, uint32_t plen)
{
	struct cache_ent *e = &s->cache[seq % POHMEL_REPLY_CACHE];

	pthread_mutex_lock(&s->mu);
	if (e->seq == seq && e->busy) {
		e->status = status;
		e->payload = plen ? malloc(plen) : NULL;
		if (e->payload)
			memcpy(e->payload, payload, plen);
		e->plen = e->payload ? plen : 0;
		if (plen && !e->payload)
			e->seq = 0;	/* no memory: forget, don't lie */
		e->busy = false;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

/* The request was not executed after all: a replay may run it. */
void session_seq_abort(struct session *s, uint64_t seq)
{
	struct cache_ent *e = &s->cache[seq % POHMEL_REPLY_CACHE];

	pthread_mutex_lock(&s->mu);
	if (e->seq == seq && e->busy) {
		e->seq = 0;
		e->busy = false;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

/* ---- open handles ---- */

int session_handle_add(struct session *s, int fd, const struct woid *o,
		       unsigned int flags, uint64_t *handle)
{
	struct handle_ent *h;
	uint32_t i;

	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->nhandles; i++)
		if (s->handles[i].fd < 0)
			break;
	if (i == s->nhandles) {
		uint32_t n = s->nhandles ? s->nhandles * 2 : 16, j;

		if (s->nhandles >= MAX_HANDLES) {
			pthread_mutex_unlock(&s->mu);
			return EMFILE;
		}
		h = realloc(s->handles, n * sizeof(*h));
		if (!h) {
			pthread_mutex_unlock(&s->mu);
			return ENOMEM;
		}
		for (j = s->nhandles; j < n; j++)
			h[j].fd = -1;
		s->handles = h;
		s->nhandles = n;
	}
	h = &s->handles[i];
	h->fd = fd;
	h->gen = ++s->hgen;
	h->flags = flags;
	h->oid = *o;
	*handle = (uint64_t)h->gen << 32 | (i + 1);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* Must hold s->mu. */
static struct handle_ent *handle_find(struct session *s, uint64_t handle,
				      const struct woid *o)
{
	uint32_t i = (uint32_t)handle - 1;
	struct handle_ent *h;

	if (i >= s->nhandles)
		return NULL;
	h = &s->handles[i];
	if (h->fd < 0 || h->gen != handle >> 32 || h->oid.id != o->id ||
	    h->oid.gen != o->gen)
		return NULL;
	return h;
}

/* Returns a dup of the handle's fd: CLOSE may run meanwhile. */
int session_handle_get(struct session *s, uint64_t handle,
		       const struct woid *o, int *fd, unsigned int *flags)
{
	struct handle_ent *h;
	int err = 0;

	pthread_mutex_lock(&s->mu);
	h = handle_find(s, handle, o);
	if (!h) {
		err = EBADF;
	} else {
		*fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 3);
		if (*fd < 0)
			err = errno;
		*flags = h->flags;
	}
	pthread_mutex_unlock(&s->mu);
	return err;
}

/*
 * Any open handle of object o (a dup of its fd): how an unlinked but open
 * object stays reachable by (id, gen) for GETATTR, SETATTR and friends
 * once the kernel no longer resolves its file handle.
 */
int session_handle_any(struct session *s, const struct woid *o, int *fd)
{
	uint32_t i;
	int err = ESTALE;

	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->nhandles; i++) {
		struct handle_ent *h = &s->handles[i];

		if (h->fd >= 0 && h->oid.id == o->id && h->oid.gen == o->gen) {
			*fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 3);
			err = *fd < 0 ? errno : 0;
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return err;
}

int session_handle_close(struct session *s, uint64_t handle,
			 const struct woid *o)
{
	struct handle_ent *h;
	int fd = -1;

	pthread_mutex_lock(&s->mu);
	h = handle_find(s, handle, o);
	if (h) {
		fd = h->fd;
		h->fd = -1;
	}
	pthread_mutex_unlock(&s->mu);
	if (fd < 0)
		return EBADF;
	close(fd);
	return 0;
}
