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
 * Sessions also outlive pohmeld itself (sessfile.c): every change of the
 * reply cache and of the open handles is appended to the session's file
 * before the reply that depends on it is sent, and at start pohmeld
 * loads the files back, as in NFSv4.1's persistent sessions. So after a
 * crash, SIGKILL or clean stop, a client that replays finds:
 * - replies to what was executed: answered from the cache, not re-run;
 * - a request that was running when pohmeld died ("in doubt": its BEGIN
 *   record has no REPLY): run again, and where the re-run can only fail
 *   because the first run succeeded (EEXIST of a create, ENOENT of an
 *   unlink, rename or rmdir), answered as done (dispatch.c);
 * - its open handles: kept by number and reopened by object id on first
 *   use (as root, with the access the OPEN was granted). An object that
 *   was unlinked while open is gone with the old process: ESTALE.
 * Locks are not persisted: they end with the process (see README.md).
 * That is after a crash of pohmeld (the appends are in the page cache).
 * After a crash of the machine the file holds at least what it held at
 * the session's last FSYNC or STABLE WRITE reply (session_sync), and
 * every object id handed out by then (oid_sync): what the client was
 * told is stable stays reachable; a later request may be run again.
 *
 * Memory per session is bounded: the reply cache keeps at most
 * POHMEL_REPLY_CACHE replies, each the reply to a non-idempotent request
 * (at most an entry reply, 240 bytes, plus the cache slot), so about
 * 300 KiB; open handles are limited to MAX_HANDLES. The file is
 * rewritten from that state every REWRITE_RECS records.
 *
 * File descriptors (issue 14): a session may hold at most
 * srv.handles_per_session open handles (max-handles-per-session; OPEN
 * beyond it answers EMFILE), and all sessions together at most
 * srv.fd_budget fds in handles (main.c keeps that below RLIMIT_NOFILE;
 * beyond it OPEN, or the first use of a handle restored from a session
 * file, answers ENFILE). Each refusal is counted in STATS and logged
 * (log_limited). So one client cannot take the fds
 * that accept() and the other clients' requests need.
 *
 * The number of sessions is bounded by max-sessions (pohmeld.conf(5)).
 * A session without connections is never evicted to make room for
 * another: it ends only when it has been idle for session-timeout
 * seconds (each end logged with its uuid and idle time), on BYE, or
 * when its client comes back with another boot_gen. When the table is
 * full of sessions that may not end yet, a new session is refused
 * (AUTH answers EAGAIN: the client retries with backoff) and the
 * refusal is logged (log_limited) with the peer's address; STATS
 * counts sessions_refused and sessions_expired.
 * So strangers cannot push a client's session out (and make its replay
 * of a CREATE EXCL answer EEXIST); the price is that a flood of new
 * sessions locks out *new* clients until session-timeout passes.
 *
 * Identity (issue 14): a session is bound to the identity that created
 * it, as far as one exists today. With the single pre-shared key the
 * only identity is "holds this key" (or "anyone" with key-file none):
 * the session records a fingerprint of the key (HMAC-SHA256 of a label
 * under the key; zeros without a key) in memory and as the first record
 * of its file, and a file written under another key is refused at load
 * (a key change does not hand the old key holders' reply caches and
 * open handles to the new ones). Between holders of the same key the
 * session's name, (uuid, boot_gen), is the only binding: any key holder
 * that knows a uuid may claim, or (with another boot_gen) end, that
 * session, and max-sessions is one pool for all of them. What waits for
 * per-client keys (issue 16): the fingerprint becomes the client's key
 * id, a session may only be attached by the identity in its owner
 * field (else EACCES), and max-sessions becomes a per-identity quota,
 * so one client can neither claim another's session nor fill the table
 * for everyone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "pohmeld.h"

#define MAX_HANDLES	4096
#define REWRITE_RECS	(4 * POHMEL_REPLY_CACHE)
#define OWNER_LEN	32

/* Records of a session file (sessfile.c frames them). */
enum {
	SR_BEGIN = 1,	/* seq: executing; in doubt if no REPLY follows */
	SR_REPLY,	/* seq, status, payload: executed, this was the reply */
	SR_ABORT,	/* seq: not executed after all */
	SR_OPEN,	/* slot, gen, flags, oid: a handle */
	SR_CLOSE,	/* slot, gen: closed */
	SR_OWNER,	/* owner fingerprint (OWNER_LEN): who created it */
	SR_RANGE,	/* a delegated id range and how much of it is used
			 * (idrange.c; the latest record per start wins) */
};

struct cache_ent {
	uint64_t seq;		/* 0: empty */
	bool busy;		/* being executed; waiters sleep on cv */
	bool indoubt;		/* loaded: was executing when pohmeld died */
	uint32_t status;
	uint32_t plen;
	uint8_t *payload;
};

struct handle_ent {
	int fd;			/* -1: free slot, or restored */
	bool restored;		/* loaded from the file, not reopened yet */
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
	uint8_t owner[OWNER_LEN];	/* identity that created it */

	/* sync_mu serializes session_sync (taken before mu). */
	pthread_mutex_t sync_mu;

	/* Under mu: */
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* a busy cache entry finished */
	int sfd;		/* session file (appends), -1: none */
	uint32_t nrecs;		/* records appended since the last rewrite */
	uint64_t app_gen;	/* records appended to the file(s), ever */
	uint64_t synced_gen;	/* app_gen on disk (session_sync, rewrite) */
	uint64_t name_gen;	/* sfile_dir_gen() after the file's name
				 * was last created or renamed */
	uint64_t max_seq;
	struct cache_ent cache[POHMEL_REPLY_CACHE];
	struct handle_ent *handles;
	uint32_t nhandles;
	uint32_t hgen;
	struct idr_set idr;	/* delegated ids (IDRANGE) */
};

static pthread_mutex_t sess_mu = PTHREAD_MUTEX_INITIALIZER;
static struct session *sessions;	/* under sess_mu */
static int nsessions;			/* under sess_mu */
static uint64_t next_id = 1;		/* under sess_mu */
static atomic_int handle_fds;		/* fds held in handles, all sessions */

static void fd_give(void)
{
	atomic_fetch_sub(&handle_fds, 1);
}

/* The identity of this server's clients: see the comment at the top. */
static uint8_t our_owner[OWNER_LEN];
static pthread_once_t owner_once = PTHREAD_ONCE_INIT;

static void owner_init(void)
{
	static const char label[] = "pohmeld session owner v1";

	if (srv.keylen)
		hmac_sha256(srv.key, srv.keylen, label, sizeof(label) - 1,
			    our_owner);
}

static const uint8_t *owner_id(void)
{
	pthread_once(&owner_once, owner_init);
	return our_owner;
}

static void uuid_hex(char out[33], const uint8_t uuid[16])
{
	static const char hx[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 16; i++) {
		out[2 * i] = hx[uuid[i] >> 4];
		out[2 * i + 1] = hx[uuid[i] & 15];
	}
	out[32] = 0;
}

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

/* ---- the session file (framing in sessfile.c) ---- */

static uint32_t enc_seq(uint8_t *b, uint64_t seq)
{
	put64(b, seq);
	return 8;
}

static uint32_t enc_reply(uint8_t *b, const struct cache_ent *e)
{
	put64(b, e->seq);
	put32(b + 8, e->status);
	put32(b + 12, 0);
	return 16;
}

static uint32_t enc_open(uint8_t *b, uint32_t slot, const struct handle_ent *h)
{
	put32(b, slot);
	put32(b + 4, h->gen);
	put32(b + 8, h->flags);
	put32(b + 12, 0);
	put64(b + 16, h->oid.id);
	put64(b + 24, h->oid.gen);
	return 32;
}

static uint32_t enc_close(uint8_t *b, uint32_t slot, uint32_t gen)
{
	put32(b, slot);
	put32(b + 4, gen);
	return 8;
}

/*
 * Write the live state (cache window, handles) to a fresh file and make
 * it the session's file. Must hold s->mu. Running entries are written as
 * BEGIN: their REPLY follows in the new file.
 */
static int rewrite(struct session *s)
{
	uint8_t b[32];
	uint32_t i;
	int fd, err = 0;

	fd = sfile_start_rewrite(s->uuid, s->boot_gen);
	if (fd < 0)
		return errno ? errno : EIO;
	err = sfile_append(fd, SR_OWNER, s->owner, OWNER_LEN, NULL, 0);
	for (i = 0; i < POHMEL_REPLY_CACHE && !err; i++) {
		const struct cache_ent *e = &s->cache[i];

		if (!e->seq)
			continue;
		if (e->busy || e->indoubt)
			err = sfile_append(fd, SR_BEGIN, b, enc_seq(b, e->seq),
					   NULL, 0);
		else
			err = sfile_append(fd, SR_REPLY, b, enc_reply(b, e),
					   e->payload, e->plen);
	}
	for (i = 0; i < s->nhandles && !err; i++) {
		const struct handle_ent *h = &s->handles[i];

		if (h->fd >= 0 || h->restored)
			err = sfile_append(fd, SR_OPEN, b, enc_open(b, i, h),
					   NULL, 0);
	}
	for (i = 0; i < s->idr.n && !err; i++)
		err = sfile_append(fd, SR_RANGE, b, idr_enc(b, &s->idr.r[i]),
				   NULL, 0);
	/* A machine crash must not leave an empty file behind a rename. */
	if (!err && fdatasync(fd))
		err = errno;
	if (!err)
		err = sfile_commit(s->uuid, s->boot_gen);
	if (err) {
		close(fd);
		return err;
	}
	if (s->sfd >= 0)
		close(s->sfd);
	s->sfd = fd;
	s->nrecs = 0;
	/* All of the state is in the synced file; its name is not yet
	 * durable (session_sync syncs the directory). */
	s->synced_gen = s->app_gen;
	s->name_gen = sfile_dir_gen();
	return 0;
}

/*
 * Append one record before the reply that relies on it goes out. Must
 * hold s->mu. If the file cannot be written it is removed: a file with
 * a hole would answer a replay wrongly, no file only re-executes it.
 * A failed rewrite leaves the old file, complete: it grows on.
 */
static void rec_put(struct session *s, uint32_t type, const uint8_t *a,
		    uint32_t alen, const uint8_t *b, uint32_t blen)
{
	int err, rerr;

	if (s->sfd < 0)
		return;
	err = sfile_append(s->sfd, type, a, alen, b, blen);
	if (!err)
		s->app_gen++;
	if (!err && ++s->nrecs >= REWRITE_RECS) {
		rerr = rewrite(s);
		if (rerr) {
			log_warn("session %llu: cannot rewrite its state file: %s",
				 (unsigned long long)s->id, strerror(rerr));
			s->nrecs = 0;	/* try again later */
		}
	}
	if (err) {
		log_warn("session %llu: state file: %s: not kept across a restart",
			 (unsigned long long)s->id, strerror(err));
		close(s->sfd);
		s->sfd = -1;
		sfile_remove(s->uuid, s->boot_gen);
	}
}

/* Drop handles and cached replies; locks go through lock.c. */
static void release(struct session *s)
{
	uint32_t i;

	lock_session_end(s->id);
	pthread_mutex_lock(&s->mu);
	if (s->sfd >= 0) {
		close(s->sfd);
		s->sfd = -1;
	}
	for (i = 0; i < s->nhandles; i++) {
		if (s->handles[i].fd >= 0) {
			close(s->handles[i].fd);
			fd_give();
		}
	}
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
	pthread_mutex_destroy(&s->sync_mu);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

/*
 * Must hold sess_mu. Takes s off the list; returns true if now unused.
 * forget: the session ended, its file goes now (under sess_mu, before a
 * new session of the same name may create one; closing sfd under s->mu
 * stops a rewrite from bringing it back). Stopping pohmeld keeps them.
 */
static bool unlist(struct session *s, bool forget)
{
	if (forget) {
		pthread_mutex_lock(&s->mu);
		if (s->sfd >= 0) {
			close(s->sfd);
			s->sfd = -1;
		}
		sfile_remove(s->uuid, s->boot_gen);
		/* After the file is gone: its ranges are no one's now. */
		idr_give_back(&s->idr);
		pthread_mutex_unlock(&s->mu);
	}
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

/*
 * Must hold sess_mu. Moves expired sessions onto *dead: the only way a
 * session without connections is evicted (not to make room).
 */
static void reap(struct session **dead)
{
	time_t now = time(NULL);
	struct session *s, *next;
	char hex[33];

	for (s = sessions; s; s = next) {
		next = s->next;
		if (s->nconns == 0 &&
		    now - s->idle_since >= srv.cfg.session_timeout) {
			uuid_hex(hex, s->uuid);
			log_info("session %llu (client %s-%016llx) expired: idle %lld s (session-timeout %d)",
				 (unsigned long long)s->id, hex,
				 (unsigned long long)s->boot_gen,
				 (long long)(now - s->idle_since),
				 srv.cfg.session_timeout);
			stats.sessions_expired++;
			s->refs++;	/* keep it alive for release() */
			unlist(s, true);
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

/* Must hold sess_mu. A new, listed session with the list's reference. */
static struct session *session_new(const uint8_t uuid[16], uint64_t boot_gen)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	memcpy(s->uuid, uuid, 16);
	s->boot_gen = boot_gen;
	memcpy(s->owner, owner_id(), OWNER_LEN);
	s->id = next_id++;
	s->sfd = -1;
	pthread_mutex_init(&s->sync_mu, NULL);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->refs = 1;
	s->listed = true;
	s->idle_since = time(NULL);
	s->next = sessions;
	sessions = s;
	nsessions++;
	return s;
}

/*
 * peer: the client's address, for the log. NULL with *err = EAGAIN when
 * the table is full of sessions that may not end yet, ENOMEM without
 * memory.
 */
struct session *session_attach(const uint8_t uuid[16], uint64_t boot_gen,
			       const char *peer, int *err)
{
	static struct ratelimit rl = RATELIMIT_INIT;
	struct session *s, *dead = NULL;
	int n = 0, idle = 0;
	time_t next_end = 0, now;
	bool full = false;

	pthread_mutex_lock(&sess_mu);
	reap(&dead);
	for (s = sessions; s; s = s->next)
		if (!memcmp(s->uuid, uuid, 16))
			break;
	if (s && s->boot_gen != boot_gen) {
		/* The client rebooted: its old state is void. */
		log_info("session %llu ended: its client came back with another boot_gen (%s)",
			 (unsigned long long)s->id, peer ? peer : "?");
		s->refs++;
		unlist(s, true);
		s->next = dead;
		dead = s;
		s = NULL;
	}
	if (!s && nsessions >= srv.cfg.max_sessions) {
		/*
		 * Full. Whatever had been idle for session-timeout went in
		 * reap(); the rest may not be evicted: refuse.
		 */
		struct session *x;

		full = true;
		now = time(NULL);
		for (x = sessions; x; x = x->next) {
			time_t end = x->idle_since + srv.cfg.session_timeout;

			if (x->nconns)
				continue;
			idle++;
			if (!next_end || end < next_end)
				next_end = end;
		}
		n = nsessions;
		stats.sessions_refused++;
		next_end = next_end ? next_end - now : -1;
	} else if (!s) {
		s = session_new(uuid, boot_gen);
		if (s) {
			/* a file left by an earlier session of that name
			 * would mix in; start it empty */
			sfile_remove(uuid, boot_gen);
			s->sfd = sfile_open(uuid, boot_gen);
			s->name_gen = sfile_dir_gen();
			if (s->sfd >= 0 &&
			    sfile_append(s->sfd, SR_OWNER, s->owner, OWNER_LEN,
					 NULL, 0)) {
				close(s->sfd);
				s->sfd = -1;
				sfile_remove(uuid, boot_gen);
			} else if (s->sfd >= 0) {
				s->app_gen = 1;
			}
		}
	}
	if (s) {
		s->refs++;
		s->nconns++;
	}
	pthread_mutex_unlock(&sess_mu);
	release_dead(dead);
	if (full) {
		char when[64];

		if (next_end >= 0)
			snprintf(when, sizeof(when), "the first may expire in %lld s",
				 (long long)next_end);
		else
			snprintf(when, sizeof(when), "none may expire while connected");
		log_limited(&rl, LOG_WARNING, "%s: new session refused: all %d sessions (max-sessions) in use, %d of them without connections; %s",
			    peer ? peer : "?", n, idle, when);
	}
	if (!s)
		*err = full ? EAGAIN : ENOMEM;
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

/*
 * Make the session's file stable (pohmel_proto.h "Durability": every
 * FSYNC makes the reply cache and open handles stable before its reply):
 * fdatasync if records were appended since the last sync, and the
 * sessions directory if the file's name is newer than its last fsync.
 * Concurrent callers queue on sync_mu and the later ones usually find
 * their records synced already; with nothing new this costs two
 * compares. The fd is dup'ed under mu: a rewrite may replace the file
 * meanwhile, and syncing the old one is still enough (until the rename
 * is durable the old name is what a crash leaves; the new file was
 * synced whole before it). 0, or errno if the disk failed. A session
 * without a file (it could not be written, logged then) has nothing to
 * sync: it is not kept across a restart at all.
 */
int session_sync(struct session *s)
{
	uint64_t want, ngen;
	int fd = -1, err = 0;

	pthread_mutex_lock(&s->sync_mu);
	pthread_mutex_lock(&s->mu);
	want = s->app_gen;
	ngen = s->name_gen;
	if (s->sfd >= 0 && want > s->synced_gen) {
		fd = fcntl(s->sfd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			err = errno;
	}
	pthread_mutex_unlock(&s->mu);
	if (fd >= 0) {
		if (fdatasync(fd)) {
			err = errno;
			log_warn("session %llu: syncing its state file: %s",
				 (unsigned long long)s->id, strerror(err));
		}
		close(fd);
	}
	if (!err)
		err = sfile_sync_dir(ngen);
	if (!err) {
		pthread_mutex_lock(&s->mu);
		if (want > s->synced_gen)
			s->synced_gen = want;
		pthread_mutex_unlock(&s->mu);
	}
	pthread_mutex_unlock(&s->sync_mu);
	return err;
}

/* ---- delegated ids (idrange.c) ---- */

/* IDRANGE: a new range for s, recorded before the reply. */
int session_idrange(struct session *s, uint32_t want, struct idr_range *got)
{
	uint8_t b[IDR_REC_LEN];
	int err;

	pthread_mutex_lock(&s->mu);
	err = idr_add(&s->idr, want, got);
	if (!err)
		rec_put(s, SR_RANGE, b, idr_enc(b, got), NULL, 0);
	pthread_mutex_unlock(&s->mu);
	return err;
}

/* CREATE_ID: may s use id now? Its range's gen into *gen; EINVAL if not. */
int session_id_check(struct session *s, uint64_t id, bool allow_used,
		     uint64_t *gen)
{
	int i;

	pthread_mutex_lock(&s->mu);
	i = idr_find(&s->idr, id, allow_used);
	if (i >= 0)
		*gen = s->idr.r[i].gen;
	pthread_mutex_unlock(&s->mu);
	return i >= 0 ? 0 : EINVAL;
}

/* CREATE_ID done: id and those below it in its range are spent. */
void session_id_used(struct session *s, uint64_t id)
{
	uint8_t b[IDR_REC_LEN];
	int i;

	pthread_mutex_lock(&s->mu);
	i = idr_find(&s->idr, id, true);
	if (i >= 0) {
		idr_use(&s->idr, i, id);
		rec_put(s, SR_RANGE, b, idr_enc(b, &s->idr.r[i]), NULL, 0);
	}
	pthread_mutex_unlock(&s->mu);
}

/* BYE: end the session now; the caller still holds its attach ref. */
void session_end(struct session *s)
{
	bool listed;

	pthread_mutex_lock(&sess_mu);
	listed = s->listed;
	if (listed)
		unlist(s, true);	/* never the last ref: the caller's remains */
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
		unlist(s, false);	/* stopping: the files stay */
		s->next = dead;
		dead = s;
	}
	pthread_mutex_unlock(&sess_mu);
	release_dead(dead);
}

/* ---- reply cache ---- */

/*
 * SEQ_NEW: run it; SEQ_INDOUBT: run it, but a run of pohmeld before
 * this one died while running it, so it may have taken effect already;
 * SEQ_CACHED: the reply is in *status, payload; SEQ_OLD: below the
 * window. intent: write a BEGIN record first, for requests whose re-run
 * can tell that it was done (dispatch.c F_REDO); for the others (WRITE,
 * SETATTR, LOCK) a re-run after a crash is what SEQ_NEW does anyway, so
 * they cost one record, not two.
 */
enum seq_state session_seq_begin(struct session *s, uint64_t seq,
				 bool intent, uint32_t *status,
				 uint8_t *payload, uint32_t *plen, uint32_t cap)
{
	struct cache_ent *e = &s->cache[seq % POHMEL_REPLY_CACHE];
	enum seq_state ret;
	uint8_t b[8];

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
		if (e->seq == seq && !e->indoubt) {
			*status = e->status;
			*plen = MIN(e->plen, cap);
			if (*plen)
				memcpy(payload, e->payload, *plen);
			ret = SEQ_CACHED;
			break;
		}
		ret = e->seq == seq ? SEQ_INDOUBT : SEQ_NEW;
		free(e->payload);
		e->payload = NULL;
		e->plen = 0;
		e->seq = seq;
		e->indoubt = false;
		e->busy = true;
		if (seq > s->max_seq)
			s->max_seq = seq;
		if (intent)
			rec_put(s, SR_BEGIN, b, enc_seq(b, seq), NULL, 0);
		break;
	}
	pthread_mutex_unlock(&s->mu);
	return ret;
}

void session_seq_end(struct session *s, uint64_t seq, uint32_t status,
		     const uint8_t *payload, uint32_t plen)
{
	struct cache_ent *e = &s->cache[seq % POHMEL_REPLY_CACHE];
	uint8_t b[16];

	pthread_mutex_lock(&s->mu);
	if (e->seq == seq && e->busy) {
		e->status = status;
		e->payload = plen ? malloc(plen) : NULL;
		if (e->payload)
			memcpy(e->payload, payload, plen);
		e->plen = e->payload ? plen : 0;
		e->busy = false;
		if (plen && !e->payload) {
			/* no memory: forget, don't lie (in doubt on disk) */
			e->seq = 0;
		} else {
			rec_put(s, SR_REPLY, b, enc_reply(b, e), e->payload,
				e->plen);
		}
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

/* The request was not executed after all: a replay may run it. */
void session_seq_abort(struct session *s, uint64_t seq)
{
	struct cache_ent *e = &s->cache[seq % POHMEL_REPLY_CACHE];
	uint8_t b[8];

	pthread_mutex_lock(&s->mu);
	if (e->seq == seq && e->busy) {
		e->seq = 0;
		e->busy = false;
		rec_put(s, SR_ABORT, b, enc_seq(b, seq), NULL, 0);
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

/* ---- open handles ---- */

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

/* Must hold s->mu. Whether s may open one more handle (else counted
 * and logged). */
static bool quota_ok(const struct session *s)
{
	static struct ratelimit rl = RATELIMIT_INIT;
	int max = srv.handles_per_session > 0 ? srv.handles_per_session :
						 MAX_HANDLES;
	uint32_t i;
	int used = 0;

	for (i = 0; i < s->nhandles; i++)
		used += s->handles[i].fd >= 0 || s->handles[i].restored;
	if (used < max)
		return true;
	stats.handles_refused_session++;
	log_limited(&rl, LOG_WARNING, "session %llu: OPEN refused (EMFILE): "
		    "it holds max-handles-per-session (%d) open handles",
		    (unsigned long long)s->id, max);
	return false;
}

/* Must hold s->mu. Room for at least n slots. */
static int handles_grow(struct session *s, uint32_t n)
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
		err = handles_grow(s, s->nhandles + 1);
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
	rec_put(s, SR_OPEN, b, enc_open(b, i, h), NULL, 0);
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
		rec_put(s, SR_CLOSE, b, enc_close(b, (uint32_t)(h - s->handles),
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

/* ---- loading the session files at start ---- */

/*
 * Every record of a session file is hostile input (a damaged disk, a
 * crafted file): NULL if the record is one pohmeld could have written,
 * else what is wrong with it. Lengths are checked before anything is
 * read from the body.
 */
static const char *rec_check(uint32_t type, const uint8_t *b, uint32_t n)
{
	switch (type) {
	case SR_BEGIN:
	case SR_ABORT:
		if (n != 8)
			return "length is not 8";
		return get64(b) ? NULL : "sequence number 0";
	case SR_REPLY:
		if (n < 16)
			return "shorter than 16 bytes";
		if (!get64(b))
			return "sequence number 0";
		return get32(b + 12) ? "reserved field not zero" : NULL;
	case SR_OPEN:
		if (n != 32)
			return "length is not 32";
		if (get32(b) >= MAX_HANDLES)
			return "handle slot out of range";
		if (!get32(b + 4))
			return "handle generation 0";
		return get32(b + 12) ? "reserved field not zero" : NULL;
	case SR_CLOSE:
		if (n != 8)
			return "length is not 8";
		return get32(b) >= MAX_HANDLES ? "handle slot out of range" :
		       NULL;
	case SR_OWNER:
		if (n != OWNER_LEN)
			return "owner length is wrong";
		return memcmp(b, owner_id(), OWNER_LEN) ?
		       "written for a client of another key" : NULL;
	case SR_RANGE: {
		struct idr_range r;

		if (n != IDR_REC_LEN)
			return "length is not 24";
		idr_dec(b, &r);
		return idr_check_rec(&r);
	}
	default:
		return "unknown record type";
	}
}

/* Apply one record, checked by rec_check(), to a session being loaded. */
static void restore_rec(struct session *s, uint32_t type, const uint8_t *b,
			uint32_t n)
{
	struct cache_ent *e;
	struct handle_ent *h;
	uint64_t seq;
	uint32_t slot;

	if (rec_check(type, b, n))
		return;		/* never: restore() refused the file */
	switch (type) {
	case SR_BEGIN:
	case SR_REPLY:
	case SR_ABORT:
		seq = get64(b);
		e = &s->cache[seq % POHMEL_REPLY_CACHE];
		if (e->seq > seq)
			return;	/* never written in this order; ignore */
		if (type == SR_ABORT) {
			if (e->seq == seq)
				e->seq = 0;
			return;
		}
		free(e->payload);
		e->payload = NULL;
		e->plen = 0;
		e->seq = seq;
		e->indoubt = type == SR_BEGIN;
		e->status = type == SR_REPLY ? get32(b + 8) : 0;
		if (type == SR_REPLY && n > 16) {
			e->payload = malloc(n - 16);
			if (!e->payload) {
				e->seq = 0;
				return;
			}
			memcpy(e->payload, b + 16, n - 16);
			e->plen = n - 16;
		}
		if (seq > s->max_seq)
			s->max_seq = seq;
		return;
	case SR_OPEN:
	case SR_CLOSE:
		slot = get32(b);
		if (handles_grow(s, slot + 1))
			return;
		h = &s->handles[slot];
		if (type == SR_CLOSE) {
			if (h->gen == get32(b + 4))
				h->restored = false;
			return;
		}
		h->restored = true;
		h->gen = get32(b + 4);
		h->flags = get32(b + 8) & POHMEL_OPEN_ALL;
		h->oid.id = get64(b + 16);
		h->oid.gen = get64(b + 24);
		if (h->gen > s->hgen)
			s->hgen = h->gen;
		return;
	case SR_RANGE: {
		struct idr_range r;

		idr_dec(b, &r);
		idr_restore(&s->idr, &r);
		return;
	}
	}
}

/*
 * One session file (sfile_scan): false refuses it (the caller logs why
 * and removes it), true keeps it, with a warning if why[0]. The whole
 * file is checked before anything of it is used: a file with one bad
 * record is not half loaded.
 */
static bool restore(const uint8_t uuid[16], uint64_t boot_gen,
		    const uint8_t *data, size_t len, char *why, size_t wl)
{
	const uint8_t *p = data, *body;
	size_t left = len, off;
	struct session *s, *x;
	uint32_t type, blen, nrec = 0;
	const char *bad;
	int err;

	for (;;) {
		off = len - left;
		if (!sfile_next(&p, &left, &type, &body, &blen))
			break;
		bad = rec_check(type, body, blen);
		if (bad) {
			snprintf(why, wl, "record %u at offset %zu (type %u, %u bytes): %s",
				 nrec, off, type, blen, bad);
			return false;
		}
		nrec++;
	}
	if (left)
		snprintf(why, wl, "damaged or torn record at offset %zu (%zu bytes to the end) ignored, %u records before it kept",
			 len - left, left, nrec);

	pthread_mutex_lock(&sess_mu);
	for (x = sessions; x; x = x->next)
		if (!memcmp(x->uuid, uuid, 16))
			break;
	if (x) {
		pthread_mutex_unlock(&sess_mu);
		snprintf(why, wl, "a file of the same client uuid (boot_gen %016llx) is loaded already",
			 (unsigned long long)x->boot_gen);
		return false;
	}
	if (nsessions >= srv.cfg.max_sessions) {
		pthread_mutex_unlock(&sess_mu);
		snprintf(why, wl, "more session files than max-sessions (%d)",
			 srv.cfg.max_sessions);
		return false;
	}
	s = session_new(uuid, boot_gen);
	pthread_mutex_unlock(&sess_mu);
	if (!s) {
		snprintf(why, wl, "out of memory");
		return false;
	}
	p = data;
	left = len;
	while (sfile_next(&p, &left, &type, &body, &blen))
		restore_rec(s, type, body, blen);
	/* Rewritten at once: appends after a damaged tail would be lost. */
	pthread_mutex_lock(&s->mu);
	err = rewrite(s);
	pthread_mutex_unlock(&s->mu);
	if (err)
		log_warn("session %llu: state file: %s: not kept across another restart",
			 (unsigned long long)s->id, strerror(err));
	return true;
}

/*
 * At start, before the first connection: every session file becomes a
 * session without connections, kept for session-timeout from now.
 */
void sessions_load(void)
{
	int n;

	sfile_scan(restore);
	n = sessions_count();
	if (n)
		log_info("%d client session%s restored", n, n == 1 ? "" : "s");
}
