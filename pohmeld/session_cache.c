// SPDX-License-Identifier: MIT
/*
 * session_cache.c - a session's reply cache.
 *
 * Non-idempotent requests with seq != 0 are executed once: the replies
 * to the last POHMEL_REPLY_CACHE of them, by seq, are kept in the
 * session (slot seq % POHMEL_REPLY_CACHE), so a duplicate, also on
 * another connection, is answered from the cache and an older seq gets
 * SEQ_OLD. Every change is recorded in the session file (session_rec.c)
 * before the reply that depends on it goes out.
 */
#include <stdlib.h>
#include "session_int.h"

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
			sess_rec_put(s, SR_BEGIN, b, enc_seq(b, seq), NULL, 0);
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
			sess_rec_put(s, SR_REPLY, b, enc_reply(b, e),
				     e->payload, e->plen);
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
		sess_rec_put(s, SR_ABORT, b, enc_seq(b, seq), NULL, 0);
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

/* Must hold s->mu: the session ends (the caller wakes waiters). */
void sess_cache_drop(struct session *s)
{
	uint32_t i;

	for (i = 0; i < POHMEL_REPLY_CACHE; i++) {
		free(s->cache[i].payload);
		s->cache[i].payload = NULL;
		s->cache[i].seq = 0;
		s->cache[i].busy = false;
	}
}
