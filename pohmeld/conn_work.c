// SPDX-License-Identifier: MIT
/*
 * conn_work.c - a connection's worker pool.
 *
 * The connection's thread (conn.c: serve) reads the requests and runs
 * most of them at once. It hands to the pool (conn_defer) those that
 * would hold up the requests behind them:
 * - one that waits for other clients' RECALL acks (grants.c);
 * - an FSYNC, and a READ of WORK_READ_MIN bytes or more (work_slow);
 * - and any request that must keep its order with one handed over
 *   before (order.c: they name a common object, or one of them reaches
 *   beyond the objects it names).
 * Up to WORKERS_MAX threads per connection run the pool's queue. Each
 * takes the oldest request that no older one (queued or running) orders
 * with, so requests on unrelated objects run side by side, and those on
 * one object in the order they came. READs and FSYNCs order with no
 * other READ or FSYNC (order.c: shared), so a stream's READs run in
 * parallel. RECALL_ACK never queues. A worker with nothing to run
 * waits WORK_LINGER_MS for more, then exits; replies go out through
 * outbox_reply_rf like any other. After the connection closed, queued
 * requests are dropped unexecuted (a client replays them).
 *
 * The queue is bounded (issue 14 item 5): a client that pipelines
 * requests behind one that waits for a recall must not make pohmeld
 * copy them all (300 x 1 MiB WRITEs: 300 MiB). Past DQ_MAX_REQS queued
 * requests or DQ_MAX_BYTES of them, the connection's thread keeps the
 * next request in its receive buffer and waits (drain_cv) until the
 * workers have taken enough off the queue; meanwhile it does not read
 * the socket, so the client is held back by TCP's flow control.
 *
 * Why this cannot deadlock: the reader waits only while its workers run
 * a non-empty queue, and a worker never waits for its own connection's
 * reader. What a queued request can wait for is (1) the RECALL_ACKs of
 * *other* connections (grants_begin never recalls the requester's own
 * connection), each wait ending at the latest when the holder's lease
 * (grant-lease) runs out and its grant is revoked anyway; (2) the client
 * reading its replies (its own doing, as for any request); (3) a
 * reply-cache slot busy with a request that is executing (a parked LOCK
 * WAIT holds none: dispatch.c); (4) the disk, for an FSYNC. So the queue
 * drains in bounded time and the reader resumes. The price: while it
 * waits, the reader does not see this client's RECALL_ACKs either, and a
 * request of another connection that recalled this client's grant may
 * wait out the lease (two clients doing this to each other both do,
 * then both proceed) - bounded, never stuck, and only for clients that
 * pipeline megabytes behind a recall. Reading on and keeping only the
 * acks is impossible: the stream is ordered, an ack behind a request can
 * only be read after that request has been stored somewhere.
 *
 * Memory: a worker has its own send buffer (max_msg; only what a reply
 * touched is resident) and a 256 KiB stack; at most WORKERS_MAX per
 * connection, and none once the connection is idle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include "pohmeld.h"

#define WORKERS_MAX	4
#define WORK_LINGER_MS	200
#define WORK_READ_MIN	(64U << 10)
#define DQ_MAX_REQS	64
#define DQ_MAX_BYTES	(8U << 20)

struct work {
	struct work *next;		/* c->dq_head, under c->defer_mu */
	struct order ord;		/* what later requests wait for */
	bool running;			/* a worker runs it; under defer_mu */
	uint32_t len;
	uint8_t raw[];
};

struct worker {
	struct conn *c;			/* a reference */
	struct session *s;		/* a reference */
};

static pthread_mutex_t drain_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t drain_cv = PTHREAD_COND_INITIALIZER;
static int drain_waiters;		/* under drain_mu */

void conn_work_init(struct conn *c)
{
	pthread_condattr_t a;

	pthread_mutex_init(&c->defer_mu, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&c->dq_cv, &a);
	pthread_condattr_destroy(&a);
}

void conn_work_fini(struct conn *c)
{
	pthread_cond_destroy(&c->dq_cv);
	pthread_mutex_destroy(&c->defer_mu);
}

/* The connection's reading ended: idle workers exit now. */
void conn_work_gone(struct conn *c)
{
	pthread_mutex_lock(&c->defer_mu);
	pthread_cond_broadcast(&c->dq_cv);
	pthread_mutex_unlock(&c->defer_mu);
}

/* defer_mu held: may one more request of len bytes be queued? */
static bool dq_room(struct conn *c, uint32_t len)
{
	const struct work *w;
	size_t bytes = len;
	int n = 0;

	for (w = c->dq_head; w; w = w->next) {
		n++;
		bytes += w->len;
	}
	return !n || (n < DQ_MAX_REQS && bytes <= DQ_MAX_BYTES);
}

/* The connection's thread: wait until its queue has room for len. */
static void dq_wait_room(struct conn *c, uint32_t len)
{
	bool room;

	pthread_mutex_lock(&drain_mu);
	for (;;) {
		pthread_mutex_lock(&c->defer_mu);
		room = dq_room(c, len);
		pthread_mutex_unlock(&c->defer_mu);
		if (room)
			break;
		drain_waiters++;
		pthread_cond_wait(&drain_cv, &drain_mu);
		drain_waiters--;
	}
	pthread_mutex_unlock(&drain_mu);
}

/* A worker took a request off c's queue (defer_mu not held). */
static void dq_drained(void)
{
	pthread_mutex_lock(&drain_mu);
	if (drain_waiters)
		pthread_cond_broadcast(&drain_cv);
	pthread_mutex_unlock(&drain_mu);
}

/* defer_mu held: the oldest queued request no older one orders with. */
static struct work *dq_runnable(struct conn *c)
{
	struct work *w, *e;

	for (w = c->dq_head; w; w = w->next) {
		if (w->running)
			continue;
		for (e = c->dq_head; e != w; e = e->next)
			if (order_overlap(&e->ord, &w->ord))
				break;
		if (e == w)
			return w;
	}
	return NULL;
}

/* defer_mu held: w leaves the queue. */
static void dq_unlink(struct conn *c, struct work *w)
{
	struct work **pp, *prev = NULL;

	for (pp = &c->dq_head; *pp != w; pp = &(*pp)->next)
		prev = *pp;
	*pp = w->next;
	if (c->dq_tail == w)
		c->dq_tail = prev;
}

/* Run w (or drop it: the connection is gone) and send its reply. */
static void work_run(struct worker *wk, struct work *w, uint8_t *tx,
		     uint32_t cap)
{
	struct conn *c = wk->c;
	struct reply_file rf = { .fd = -1 };
	uint32_t outlen = 0;
	int ret = DISPATCH_OK;

	if (!tx)
		ret = DISPATCH_DROP;	/* the client replays */
	else if (!atomic_load(&c->gone))
		ret = dispatch_wait(c, wk->s, w->raw, w->len, tx, cap,
				    &outlen, c->sealed ? NULL : &rf);
	if (ret == DISPATCH_DROP)
		stats.proto_errors++;
	else if (outlen)
		outbox_reply_rf(c, tx, outlen, &rf);
	if (rf.fd >= 0)
		close(rf.fd);
	if (ret == DISPATCH_DROP || ret == DISPATCH_CLOSE)
		shutdown(c->fd, SHUT_RDWR);	/* BYE, bad message */
}

static void linger_deadline(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_nsec += WORK_LINGER_MS * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static void *work_thread(void *arg)
{
	struct worker *wk = arg;
	struct conn *c = wk->c;
	uint32_t cap = POHMEL_HDR_SIZE + c->max_msg;
	uint8_t *tx = malloc(cap);
	struct timespec until;
	bool expired = false;
	struct work *w;

	log_set_client(c->peer, c->keyname);
	pthread_mutex_lock(&c->defer_mu);
	for (;;) {
		w = dq_runnable(c);
		if (w) {
			expired = false;
			w->running = true;
			pthread_mutex_unlock(&c->defer_mu);
			work_run(wk, w, tx, cap);
			pthread_mutex_lock(&c->defer_mu);
			dq_unlink(c, w);
			/* what waited for w may run now */
			pthread_cond_broadcast(&c->dq_cv);
			pthread_mutex_unlock(&c->defer_mu);
			free(w);
			dq_drained();
			pthread_mutex_lock(&c->defer_mu);
			continue;
		}
		/*
		 * Nothing to run: wait for more, or for what runs to end (as
		 * long as that takes: its worker then runs what waited for
		 * it); on an empty queue, WORK_LINGER_MS. Once the
		 * connection is gone, the running ones' workers drop the
		 * rest.
		 */
		if (atomic_load(&c->gone) || (expired && !c->dq_head))
			break;
		linger_deadline(&until);
		c->dq_idle++;
		expired = pthread_cond_timedwait(&c->dq_cv, &c->defer_mu,
						 &until) == ETIMEDOUT;
		c->dq_idle--;
	}
	c->dq_workers--;
	pthread_mutex_unlock(&c->defer_mu);
	free(tx);
	session_unref(wk->s);
	conns_worker_count(-1);
	conn_put(c);
	free(wk);
	return NULL;
}

/* defer_mu held: start one more worker for c. */
static int work_spawn(struct conn *c)
{
	pthread_attr_t attr;
	struct worker *wk;
	pthread_t th;
	int err;

	wk = malloc(sizeof(*wk));
	if (!wk)
		return ENOMEM;
	wk->c = c;
	wk->s = c->sess;
	conn_get(c);
	session_ref(c->sess);
	conns_worker_count(1);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, work_thread, wk);
	pthread_attr_destroy(&attr);
	if (!err) {
		c->dq_workers++;
		return 0;
	}
	conns_worker_count(-1);
	session_unref(c->sess);
	conn_put(c);
	free(wk);
	return err;
}

/* Does the request (its header h) hold up those behind it? */
static bool work_slow(const struct whdr *h, const struct order *o)
{
	return h->op == POHMEL_OP_FSYNC ||
	       (h->op == POHMEL_OP_READ && o->count >= WORK_READ_MIN);
}

/*
 * The connection's thread: must the request raw (header h) go to the
 * pool? Yes if it is slow, or if it must keep its order with one queued
 * or running there. RECALL_ACK never does (the caller's test). *o is
 * what it orders with, set (for conn_defer) when it must go.
 */
bool conn_must_queue(struct conn *c, const uint8_t *raw, uint32_t len,
		     const struct whdr *h, struct order *o)
{
	const struct work *w;
	bool q;

	pthread_mutex_lock(&c->defer_mu);
	q = c->dq_head != NULL;
	pthread_mutex_unlock(&c->defer_mu);
	if (!q && h->op != POHMEL_OP_FSYNC && h->op != POHMEL_OP_READ)
		return false;
	order_of(raw, len, c->max_msg, o);
	if (work_slow(h, o))
		return true;
	q = false;
	pthread_mutex_lock(&c->defer_mu);
	for (w = c->dq_head; w && !q; w = w->next)
		q = order_overlap(&w->ord, o);
	/* the workers may have finished meanwhile: nothing to wait for */
	pthread_mutex_unlock(&c->defer_mu);
	return q;
}

/*
 * 0: the request is queued for the pool; else run it here. o: what it
 * orders with if conn_must_queue found it, else NULL.
 */
int conn_defer(struct conn *c, const uint8_t *raw, uint32_t rawlen,
	       const struct order *o)
{
	struct work *w;
	int err = 0;

	if (!c->sess)
		return EINVAL;
	dq_wait_room(c, rawlen);	/* bounded; see DQ_MAX_REQS */
	w = malloc(sizeof(*w) + rawlen);
	if (!w)
		return ENOMEM;
	memcpy(w->raw, raw, rawlen);
	w->len = rawlen;
	w->next = NULL;
	w->running = false;
	if (o)
		w->ord = *o;
	else
		order_of(raw, rawlen, c->max_msg, &w->ord);
	pthread_mutex_lock(&c->defer_mu);
	/* a worker to run it: an idle one, else a new one if allowed */
	if (!c->dq_idle && c->dq_workers < WORKERS_MAX)
		err = work_spawn(c);
	if (err && !c->dq_workers) {
		pthread_mutex_unlock(&c->defer_mu);
		free(w);
		return err;	/* no worker at all: run it here */
	}
	if (c->dq_tail)
		c->dq_tail->next = w;
	else
		c->dq_head = w;
	c->dq_tail = w;
	pthread_cond_signal(&c->dq_cv);
	pthread_mutex_unlock(&c->defer_mu);
	return 0;
}
