// SPDX-License-Identifier: MIT
/*
 * session.c - client sessions and their lifetime.
 *
 * A session is named by the client's (uuid, boot_gen) from HELLO and
 * outlives its connections: after a reconnect the client finds its reply
 * cache (session_cache.c), open handles (session_handles.c) and locks
 * again. A session ends on BYE, when the same uuid comes back with
 * another boot_gen (the client rebooted), or when no connection has used
 * it for session-timeout seconds. Sessions also outlive pohmeld itself:
 * session_rec.c keeps each in a file and loads the files at start.
 *
 * Memory per session is bounded: the reply cache keeps at most
 * POHMEL_REPLY_CACHE replies, each the reply to a non-idempotent request
 * (at most an entry reply, 240 bytes, plus the cache slot), so about
 * 300 KiB; open handles are limited to MAX_HANDLES. The file is
 * rewritten from that state every REWRITE_RECS records.
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
 * sessions locks out *new* clients until session-timeout passes, unless
 * max-sessions-per-key bounds what one key's holders may make (then a
 * flood only locks out that key's new sessions; without keys every
 * client is the one identity "no key").
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
 * session. With named keys (protocol 1.3) the fingerprint is the key
 * name's: a session may only be attached by the key in its owner field
 * (else EACCES), and max-sessions-per-key is the per-identity quota, so
 * that one client can neither claim another's session nor fill the
 * table for everyone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "session_int.h"

static pthread_mutex_t sess_mu = PTHREAD_MUTEX_INITIALIZER;
static struct session *sessions;	/* under sess_mu */
static int nsessions;			/* under sess_mu */
static uint64_t next_id = 1;		/* under sess_mu */

/*
 * Files are loaded at start, under the policy of the start (policy.c):
 * a file's owner must be one of its keys (zeros: no key). A file
 * without an owner record gets the owner of the key named "default".
 */
static struct policy *load_pol;
static pthread_once_t owner_once = PTHREAD_ONCE_INIT;

static void owner_init(void)
{
	load_pol = policy_get();
}

const uint8_t *sess_owner_id(void)
{
	static const uint8_t zero[OWNER_LEN];
	const struct keyent *k;

	pthread_once(&owner_once, owner_init);
	if (!load_pol)
		return zero;
	k = keys_find(&load_pol->keys, "default", 7);
	return k ? k->owner : zero;
}

bool sess_owner_known(const uint8_t *owner)
{
	static const uint8_t zero[OWNER_LEN];
	int i;

	pthread_once(&owner_once, owner_init);
	if (!load_pol || !load_pol->keys.n)
		return !memcmp(owner, zero, OWNER_LEN);
	for (i = 0; i < load_pol->keys.n; i++)
		if (!memcmp(owner, load_pol->keys.k[i].owner, OWNER_LEN))
			return true;
	return false;
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

/* Drop handles and cached replies; locks go through lock.c. */
static void release(struct session *s)
{
	lock_session_end(s->id);
	pthread_mutex_lock(&s->mu);
	if (s->sfd >= 0) {
		close(s->sfd);
		s->sfd = -1;
	}
	sess_handles_drop(s);
	sess_cache_drop(s);
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
static struct session *session_new(const uint8_t uuid[16], uint64_t boot_gen,
				   const uint8_t *owner)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	memcpy(s->uuid, uuid, 16);
	s->boot_gen = boot_gen;
	memcpy(s->owner, owner, OWNER_LEN);
	s->id = next_id++;
	s->sfd = -1;
	pthread_mutex_init(&s->sync_mu, NULL);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->refs = 1;
	s->listed = true;
	s->idle_since = time(NULL);
	s->created = s->idle_since;
	s->next = sessions;
	sessions = s;
	nsessions++;
	return s;
}

/* The sessions made under @owner. Must hold sess_mu. */
static int owned_by(const uint8_t *owner)
{
	struct session *x;
	int n = 0;

	for (x = sessions; x; x = x->next)
		if (!memcmp(x->owner, owner, OWNER_LEN))
			n++;
	return n;
}

/*
 * peer: the client's address, keyname: its key's name ("-": none), both
 * for the log. NULL with *err = EAGAIN when the table, or the key's
 * share of it (max-sessions-per-key), is full of sessions that may not
 * end yet, ENOMEM without memory, EACCES for a session made under
 * another owner (key).
 */
struct session *session_attach(const uint8_t uuid[16], uint64_t boot_gen,
			       const char *peer, const uint8_t *owner,
			       const char *keyname, int *err)
{
	static struct ratelimit rl = RATELIMIT_INIT, rl_key = RATELIMIT_INIT;
	int n = 0, idle = 0, quota = srv.cfg.max_sessions_per_key;
	struct session *s, *dead = NULL;
	time_t next_end = 0, now;
	bool full = false, over = false;

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
	if (s && memcmp(s->owner, owner, OWNER_LEN)) {
		/*
		 * Made under a key that a reload (SIGHUP) has replaced:
		 * its reply cache and handles are not handed to the new
		 * key's holders, as a file of another key is not at load.
		 */
		unsigned long long id = s->id;

		pthread_mutex_unlock(&sess_mu);
		release_dead(dead);
		log_warn("%s: session %llu was made under another key (another key name, or replaced by a reload): refused",
			 peer ? peer : "?", id);
		*err = EACCES;
		return NULL;
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
	} else if (!s && quota && (n = owned_by(owner)) >= quota) {
		over = true;
		stats.sessions_refused_key++;
	} else if (!s) {
		s = session_new(uuid, boot_gen, owner);
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
		snprintf(s->keyname, sizeof(s->keyname), "%s", keyname);
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
	if (over)
		log_limited(&rl_key, LOG_WARNING, "%s: new session refused: key '%s' has all its %d sessions (max-sessions-per-key) in use",
			    peer ? peer : "?", keyname, n);
	if (!s)
		*err = full || over ? EAGAIN : ENOMEM;
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

/* ---- delegated ids (idrange.c) ---- */

/* IDRANGE: a new range for s, recorded before the reply. */
int session_idrange(struct session *s, uint32_t want, struct idr_range *got)
{
	uint8_t b[IDR_REC_LEN];
	int err;

	pthread_mutex_lock(&s->mu);
	err = idr_add(&s->idr, want, got);
	if (!err)
		sess_rec_put(s, SR_RANGE, b, idr_enc(b, got), NULL, 0);
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
		sess_rec_put(s, SR_RANGE, b, idr_enc(b, &s->idr.r[i]), NULL, 0);
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

/*
 * At start (restore, session_rec.c): a new session for a loaded file,
 * listed, without connections; NULL, with why set, if it may not be.
 */
struct session *sess_new_restored(const uint8_t uuid[16], uint64_t boot_gen,
				  char *why, size_t wl)
{
	struct session *s, *x;

	pthread_mutex_lock(&sess_mu);
	for (x = sessions; x; x = x->next)
		if (!memcmp(x->uuid, uuid, 16))
			break;
	if (x) {
		pthread_mutex_unlock(&sess_mu);
		snprintf(why, wl, "a file of the same client uuid (boot_gen %016llx) is loaded already",
			 (unsigned long long)x->boot_gen);
		return NULL;
	}
	if (nsessions >= srv.cfg.max_sessions) {
		pthread_mutex_unlock(&sess_mu);
		snprintf(why, wl, "more session files than max-sessions (%d)",
			 srv.cfg.max_sessions);
		return NULL;
	}
	s = session_new(uuid, boot_gen, sess_owner_id());
	pthread_mutex_unlock(&sess_mu);
	if (!s)
		snprintf(why, wl, "out of memory");
	return s;
}

/* One request of s answered: in and out are its body and reply bytes. */
void session_account(struct session *s, uint32_t in, uint32_t out)
{
	atomic_fetch_add_explicit(&s->nreq, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->bytes_in, in, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->bytes_out, out, memory_order_relaxed);
}

/*
 * Up to max sessions into out, newest first (pohmel clients). Each is
 * referenced under sess_mu and read after it is dropped: its handles
 * are under its own mu, never taken under sess_mu here.
 */
int sessions_info(struct sess_info *out, int max)
{
	struct session **held, *s;
	time_t now = time(NULL);
	int n = 0, i;

	held = calloc((size_t)(max > 0 ? max : 1), sizeof(*held));
	if (!held)
		return -ENOMEM;
	pthread_mutex_lock(&sess_mu);
	for (s = sessions; s && n < max; s = s->next) {
		struct sess_info *si = &out[n];

		s->refs++;
		held[n++] = s;
		si->id = s->id;
		si->nconns = s->nconns;
		si->age = now - s->created;
		si->idle = s->nconns ? 0 : now - s->idle_since;
		snprintf(si->keyname, sizeof(si->keyname), "%s",
			 s->keyname[0] ? s->keyname : "?");
	}
	pthread_mutex_unlock(&sess_mu);
	for (i = 0; i < n; i++) {
		s = held[i];
		out[i].handles = sess_handles_open(s);
		out[i].requests = atomic_load(&s->nreq);
		out[i].bytes_in = atomic_load(&s->bytes_in);
		out[i].bytes_out = atomic_load(&s->bytes_out);
		session_unref(s);
	}
	free(held);
	return n;
}
