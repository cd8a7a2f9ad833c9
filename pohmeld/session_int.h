/* SPDX-License-Identifier: MIT */
/*
 * session_int.h - what the files of client sessions share (session.c:
 * lifetime; session_cache.c: the reply cache; session_handles.c: open
 * handles; session_rec.c: the session file's records and their load at
 * start); nothing else includes it.
 */
#ifndef POHMELD_SESSION_INT_H
#define POHMELD_SESSION_INT_H

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
	/* Under sess_mu (session.c): */
	struct session *next;
	bool listed;
	int refs;		/* connections, lock waiters, the list */
	int nconns;
	time_t idle_since;	/* when nconns dropped to 0 */
	time_t created;
	char keyname[POHMEL_KEYNAME_MAX + 1];	/* its last connection's
						 * key, "-": none; "": not
						 * attached since restored */

	/* Counted by run_one (session_account), read by the listing: */
	atomic_ullong nreq, bytes_in, bytes_out;

	/* Immutable after creation: */
	uint8_t uuid[16];
	uint64_t boot_gen;
	uint64_t id;
	uint8_t owner[OWNER_LEN];	/* identity that created it */

	/* sync_mu serializes session_sync (session_rec.c; taken before mu). */
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

/* Record bodies (session_rec.c checks and applies them at load). */
static inline uint32_t enc_seq(uint8_t *b, uint64_t seq)
{
	put64(b, seq);
	return 8;
}

static inline uint32_t enc_reply(uint8_t *b, const struct cache_ent *e)
{
	put64(b, e->seq);
	put32(b + 8, e->status);
	put32(b + 12, 0);
	return 16;
}

static inline uint32_t enc_open(uint8_t *b, uint32_t slot,
				const struct handle_ent *h)
{
	put32(b, slot);
	put32(b + 4, h->gen);
	put32(b + 8, h->flags);
	put32(b + 12, 0);
	put64(b + 16, h->oid.id);
	put64(b + 24, h->oid.gen);
	return 32;
}

static inline uint32_t enc_close(uint8_t *b, uint32_t slot, uint32_t gen)
{
	put32(b, slot);
	put32(b + 4, gen);
	return 8;
}

/* session.c */
const uint8_t *sess_owner_id(void);
bool sess_owner_known(const uint8_t *owner);
struct session *sess_new_restored(const uint8_t uuid[16], uint64_t boot_gen,
				  char *why, size_t wl);

/* session_cache.c; must hold s->mu */
void sess_cache_drop(struct session *s);

/* session_handles.c; must hold s->mu */
int sess_handles_grow(struct session *s, uint32_t n);
int sess_handles_open(struct session *s);	/* takes s->mu */
void sess_handles_drop(struct session *s);

/* session_rec.c; must hold s->mu */
void sess_rec_put(struct session *s, uint32_t type, const uint8_t *a,
		  uint32_t alen, const uint8_t *b, uint32_t blen);

#endif
