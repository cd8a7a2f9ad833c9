// SPDX-License-Identifier: MIT
/*
 * session_handles.c - a session's open handles (OPEN ... CLOSE).
 *
 * A handle is a slot in the session's table and a generation, naming
 * an fd held for the client. Each OPEN and CLOSE is recorded in the
 * session file (session_rec.c) before its reply; a handle loaded from
 * it at start is reopened by object id on first use.
 *
 * File descriptors (issue 14): a session may hold at most
 * srv.handles_per_session open handles (max-handles-per-session; OPEN
 * beyond it answers EMFILE), and all sessions together at most
 * srv.fd_budget fds in handles (main.c keeps that below RLIMIT_NOFILE;
 * beyond it OPEN, or the first use of a handle restored from a session
 * file, answers ENFILE). Each refusal is counted in STATS and logged
 * (log_limited). So one client cannot take the fds
 * that accept() and the other clients' requests need.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "session_int.h"

static atomic_int handle_fds;		/* fds held in handles, all sessions */

static void fd_give(void)
{
	atomic_fetch_sub(&handle_fds, 1);
}

int session_handle_fds(void)
{
	return atomic_load(&handle_fds);
}

/* Take one fd of the budget: false (and counted, logged) if none left. */
static bool fd_take(const struct session *s)
{
	static struct ratelimit rl = RATELIMIT_INIT;
	int n = atomic_fetch_add(&handle_fds, 1);

	if (srv.fd_budget <= 0 || n < srv.fd_budget)
		return true;
	atomic_fetch_sub(&handle_fds, 1);
	stats.handles_refused_budget++;
	log_limited(&rl, LOG_WARNING, "session %llu: OPEN refused (ENFILE): "
		    "open handles hold the whole fd budget (%d fds)",
		    (unsigned long long)s->id, srv.fd_budget);
	return false;
}

/* Must hold s->mu. The handles s holds open (or restored). */
static int handles_used(const struct session *s)
{
	uint32_t i;
	int used = 0;

	for (i = 0; i < s->nhandles; i++)
		used += s->handles[i].fd >= 0 || s->handles[i].restored;
	return used;
}

int sess_handles_open(struct session *s)
{
	int n;

	pthread_mutex_lock(&s->mu);
	n = handles_used(s);
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Must hold s->mu. Whether s may open one more handle (else counted
 * and logged). */
static bool quota_ok(const struct session *s)
{
	static struct ratelimit rl = RATELIMIT_INIT;
	int max = srv.handles_per_session > 0 ? srv.handles_per_session :
						 MAX_HANDLES;
	int used = handles_used(s);

	if (used < max)
		return true;
	stats.handles_refused_session++;
	log_limited(&rl, LOG_WARNING, "session %llu: OPEN refused (EMFILE): "
		    "it holds max-handles-per-session (%d) open handles",
		    (unsigned long long)s->id, max);
	return false;
}

/* Must hold s->mu. Room for at least n slots. */
int sess_handles_grow(struct session *s, uint32_t n)
{
	struct handle_ent *h;
	uint32_t want = s->nhandles ? s->nhandles : 16, j;

	while (want < n)
		want *= 2;
	if (want <= s->nhandles)
		return 0;
	if (want > MAX_HANDLES)
		return EMFILE;
	h = realloc(s->handles, want * sizeof(*h));
	if (!h)
		return ENOMEM;
	for (j = s->nhandles; j < want; j++) {
		h[j].fd = -1;
		h[j].restored = false;
	}
	s->handles = h;
	s->nhandles = want;
	return 0;
}

int session_handle_add(struct session *s, int fd, const struct woid *o,
		       unsigned int flags, uint64_t *handle)
{
	struct handle_ent *h;
	uint8_t b[32];
	uint32_t i;
	int err;

	pthread_mutex_lock(&s->mu);
	if (!quota_ok(s)) {
		pthread_mutex_unlock(&s->mu);
		return EMFILE;
	}
	if (!fd_take(s)) {
		pthread_mutex_unlock(&s->mu);
		return ENFILE;
	}
	for (i = 0; i < s->nhandles; i++)
		if (s->handles[i].fd < 0 && !s->handles[i].restored)
			break;
	if (i == s->nhandles) {
		err = sess_handles_grow(s, s->nhandles + 1);
		if (err) {
			fd_give();
			pthread_mutex_unlock(&s->mu);
			return err;
		}
	}
	h = &s->handles[i];
	h->fd = fd;
	h->gen = ++s->hgen;
	h->flags = flags;
	h->oid = *o;
	*handle = (uint64_t)h->gen << 32 | (i + 1);
	sess_rec_put(s, SR_OPEN, b, enc_open(b, i, h), NULL, 0);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/*
 * A handle loaded from the session file: open its object again, with the
 * access its OPEN was granted then (permission was checked at OPEN, as
 * a local open file keeps its access after a chmod). Must hold s->mu.
 */
static int handle_reopen(const struct session *s, struct handle_ent *h)
{
	unsigned int acc;
	struct stat st;
	char path[64];
	int pfd, fd, err;

	if (!fd_take(s))
		return ENFILE;
	err = oid_open(&h->oid, &pfd, &st);
	if (err) {
		fd_give();
		return err;
	}
	if (!h->flags) {
		fd = pfd;	/* OPEN without access: keeps it alive only */
		goto done;
	}
	acc = h->flags == POHMEL_OPEN_ALL ? O_RDWR :
	      h->flags & POHMEL_OPEN_WRITE ? O_WRONLY : O_RDONLY;
	if (S_ISDIR(st.st_mode) && acc == O_RDONLY) {
		acc |= O_DIRECTORY;
	} else if (!S_ISREG(st.st_mode)) {
		close(pfd);
		fd_give();
		return ESTALE;
	}
	proc_path(path, sizeof(path), pfd);
	fd = open(path, (int)acc | O_CLOEXEC | O_NOCTTY);
	err = errno;
	close(pfd);
	if (fd < 0) {
		fd_give();
		return err;
	}
done:
	h->fd = fd;
	h->restored = false;
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
	if ((h->fd < 0 && !h->restored) || h->gen != handle >> 32 ||
	    h->oid.id != o->id || h->oid.gen != o->gen)
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
	if (!h)
		err = EBADF;
	else if (h->restored)
		err = handle_reopen(s, h);
	if (!err) {
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
 * once the kernel no longer resolves its file handle. (A restored handle
 * cannot help: its object did not outlive the old process.)
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
	uint8_t b[8];
	int fd = -1;
	bool found = false;

	pthread_mutex_lock(&s->mu);
	h = handle_find(s, handle, o);
	if (h) {
		found = true;
		fd = h->fd;
		h->fd = -1;
		h->restored = false;
		sess_rec_put(s, SR_CLOSE, b,
			     enc_close(b, (uint32_t)(h - s->handles),
				       h->gen), NULL, 0);
	}
	pthread_mutex_unlock(&s->mu);
	if (!found)
		return EBADF;
	if (fd >= 0) {
		close(fd);
		fd_give();
	}
	return 0;
}

/* Must hold s->mu: the session ends; every handle closed and freed. */
void sess_handles_drop(struct session *s)
{
	uint32_t i;

	for (i = 0; i < s->nhandles; i++) {
		if (s->handles[i].fd >= 0) {
			close(s->handles[i].fd);
			fd_give();
		}
	}
	free(s->handles);
	s->handles = NULL;
	s->nhandles = 0;
}
