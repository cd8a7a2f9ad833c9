// SPDX-License-Identifier: MIT
/*
 * test_outbox - outbox.c on a socketpair, with messages of its own
 * framing (length, source, sequence number, a pattern of both), so that
 * any interleaving or loss shows:
 *   - replies (one thread, outbox_reply) and pushed messages (another,
 *     outbox_push) share the socket while a reader thread drains the
 *     outbox (outbox_poll) and the peer reads in bursts with pauses:
 *     both arrive whole and in order, pushes never wait, messages that
 *     went out in part are completed first;
 *   - a peer that stops reading is cut a lease after a message was
 *     queued: by a writer blocked on its reply, or by the reader; and
 *     at once when a requester's lease ran out (outbox_expire);
 *   - an outbox beyond its bound cuts the connection;
 *   - after outbox_close pushes are refused.
 *   test_outbox
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "../pohmeld.h"
#include "tap.h"

struct server srv;
struct stats stats;

#define HDR		12
#define NPUSH		3000
#define NREPLY		300
#define PUSH_MAX	20000	/* > half the send buffer: partial writes */
#define REPLY_MAX	65536
#define QUEUE_SOFT	(128 * 1024)	/* the pusher waits above it */
#define SNDBUF		16384

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t pattern(uint32_t src, uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 31 + src * 7 + i);
}

/* A message of len bytes (>= HDR) from src, number seq. */
static uint8_t *frame(uint32_t len, uint32_t src, uint32_t seq)
{
	uint8_t *b = malloc(len);
	uint32_t i;

	if (!b)
		abort();
	put32(b, len);
	put32(b + 4, src);
	put32(b + 8, seq);
	for (i = HDR; i < len; i++)
		b[i] = pattern(src, seq, i);
	return b;
}

/* The peer's view: messages parsed from the byte stream as it comes. */
struct parser {
	uint8_t hdr[HDR];
	uint32_t have;		/* of the current message */
	uint32_t len, src, seq;
	uint32_t next[2];	/* expected seq per source */
	bool bad;
};

static void parse(struct parser *p, const uint8_t *b, size_t n)
{
	for (; n && !p->bad; b++, n--) {
		if (p->have < HDR) {
			p->hdr[p->have++] = *b;
			if (p->have < HDR)
				continue;
			p->len = get32(p->hdr);
			p->src = get32(p->hdr + 4);
			p->seq = get32(p->hdr + 8);
			if (p->len < HDR || p->src > 1 ||
			    p->seq != p->next[p->src]) {
				p->bad = true;
				return;
			}
		} else {
			if (*b != pattern(p->src, p->seq, p->have)) {
				p->bad = true;
				return;
			}
			p->have++;
		}
		if (p->have == p->len) {
			p->next[p->src]++;
			p->have = 0;
		}
	}
}

static struct conn *conn_new(int *peer)
{
	struct conn *c = calloc(1, sizeof(*c));
	int sv[2], sz = SNDBUF;

	if (!c || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
	    outbox_init(&c->ob))
		abort();
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	c->fd = sv[0];
	snprintf(c->peer, sizeof(c->peer), "test");
	*peer = sv[1];
	return c;
}

static void conn_free(struct conn *c, int peer)
{
	outbox_fini(&c->ob);
	close(c->fd);
	close(peer);
	free(c);
}

static size_t queued(struct conn *c)
{
	size_t b;

	pthread_mutex_lock(&c->ob.mu);
	b = c->ob.bytes;
	pthread_mutex_unlock(&c->ob.mu);
	return b;
}

/* ---- threads ---- */

struct run {
	struct conn *c;
	int peer;
	bool sealed;		/* records: opened in order by the peer */
	struct aead rx;
	uint64_t ctr;
	uint8_t *rec;		/* the record being read */
	size_t rhave;
	atomic_bool stop;	/* the drainer's */
	int derr, rerr;		/* the drainer's, the replier's */
	struct parser p;	/* the peer reader's, until joined */
	atomic_bool peer_done;	/* it stopped reading */
	long bytes;		/* ditto: read by the peer */
};

/* The connection's reader: drains while "waiting for input". */
static void *drainer(void *arg)
{
	struct run *r = arg;

	while (!atomic_load(&r->stop))
		if (outbox_poll(r->c, 20) < 0)
			r->derr = errno;
	return NULL;
}

static void *replier(void *arg)
{
	struct run *r = arg;
	uint32_t i;

	for (i = 0; i < NREPLY && !r->rerr; i++) {
		uint32_t len = HDR + (uint32_t)(random() % (REPLY_MAX - HDR));
		uint8_t *b = frame(len, 1, i);

		r->rerr = outbox_reply(r->c, b, len);
		free(b);
	}
	return NULL;
}

/*
 * A sealed outbox's stream: records, each opened with the next counter
 * (so one sealed out of the order it was written in does not open),
 * their inner bytes parsed as the plain stream is.
 */
static void rec_feed(struct run *r, const uint8_t *b, size_t n)
{
	uint32_t len, take;

	while (n && !r->p.bad) {
		take = r->rhave < POHMEL_HDR_SIZE ?
		       POHMEL_HDR_SIZE - (uint32_t)r->rhave : 0;
		if (!take) {
			/* len: the bytes after the outer header */
			len = POHMEL_HDR_SIZE + get32(r->rec);
			if (len < REC_OVERHEAD + HDR ||
			    len > REC_OVERHEAD + REPLY_MAX) {
				r->p.bad = true;
				return;
			}
			take = len - (uint32_t)r->rhave;
		}
		take = (uint32_t)MIN((size_t)take, n);
		memcpy(r->rec + r->rhave, b, take);
		r->rhave += take;
		b += take;
		n -= take;
		if (r->rhave < POHMEL_HDR_SIZE ||
		    r->rhave < POHMEL_HDR_SIZE + get32(r->rec))
			continue;
		len = get32(r->rec) - POHMEL_TAG_LEN;
		if (rec_open(&r->rx, r->ctr++, false, r->rec, len)) {
			r->p.bad = true;
			return;
		}
		parse(&r->p, r->rec + POHMEL_HDR_SIZE, len);
		r->rhave = 0;
	}
}

/* The peer reads in bursts of up to 1 MiB, then pauses 50 ms, so that
 * the socket fills and the outbox holds messages now and then; until
 * it has every message, or for at most a minute. */
static void *peer_reader(void *arg)
{
	struct run *r = arg;
	static uint8_t buf[65536];
	double end = now() + 60;
	long burst = 0;
	ssize_t n;

	while ((r->p.next[0] < NPUSH || r->p.next[1] < NREPLY) &&
	       !r->p.bad && now() < end) {
		struct pollfd p = { .fd = r->peer, .events = POLLIN };

		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(r->peer, buf, sizeof(buf));
		if (n <= 0)
			break;
		if (r->sealed)
			rec_feed(r, buf, (size_t)n);
		else
			parse(&r->p, buf, (size_t)n);
		r->bytes += n;
		burst += n;
		if (burst > (1 << 20)) {
			burst = 0;
			usleep(50000);
		}
	}
	atomic_store(&r->peer_done, true);
	return NULL;
}

/* sealed: the outbox seals as it queues and replies (1.3 records). */
static void t_shared_socket(bool sealed)
{
	static const uint8_t key[32] = { 1, 2, 3 };
	const char *k = sealed ? "shared, sealed" : "shared";
	struct run r = { 0 };
	pthread_t td, tr, tp;
	double worst = 0, t;
	int i, err = 0;

	r.c = conn_new(&r.peer);
	if (sealed) {
		r.sealed = true;
		r.rec = malloc(REPLY_MAX + REC_OVERHEAD);
		if (!r.rec || outbox_seal(r.c, POHMEL_FEAT_SEAL_AES, false,
					  key, 0) ||
		    aead_init(&r.rx, POHMEL_FEAT_SEAL_AES, key, false))
			abort();
	}
	pthread_create(&td, NULL, drainer, &r);
	pthread_create(&tr, NULL, replier, &r);
	pthread_create(&tp, NULL, peer_reader, &r);
	for (i = 0; i < NPUSH && !err; i++) {
		uint32_t len = HDR + (uint32_t)(random() % (PUSH_MAX - HDR));
		uint8_t *b = frame(len, 0, (uint32_t)i);

		while (queued(r.c) > QUEUE_SOFT && !atomic_load(&r.peer_done))
			usleep(1000);
		t = now();
		err = outbox_push(r.c, b, len);
		if (now() - t > worst)
			worst = now() - t;
		free(b);
	}
	pthread_join(tr, NULL);
	pthread_join(tp, NULL);
	atomic_store(&r.stop, true);
	pthread_join(td, NULL);
	CHECK(!err && !r.rerr && !r.derr, "%s: %d pushes and %d replies "
	      "written (%s)", k, NPUSH, NREPLY,
	      strerror(err ? err : r.rerr ? r.rerr : r.derr));
	CHECK(!r.p.bad && r.p.next[0] == NPUSH && r.p.next[1] == NREPLY &&
	      !r.p.have, "%s: the peer read %u pushed and %u replied "
	      "messages, whole and each in order (%ld bytes)", k, r.p.next[0],
	      r.p.next[1], r.bytes);
	if (sealed)
		CHECK(!r.p.bad && r.ctr == NPUSH + NREPLY && !r.rhave,
		      "%s: %llu records, each opened with the next counter",
		      k, (unsigned long long)r.ctr);
	CHECK(worst < 0.25, "%s: no push waited for the socket (slowest "
	      "%.4f s; the peer pauses 0.05 s)", k, worst);
	CHECK(!stats.outbox_cut_stalled && !stats.outbox_cut_full,
	      "%s: nothing cut", k);
	aead_fini(&r.rx);
	free(r.rec);
	conn_free(r.c, r.peer);
}

/* Reads everything left until the end; whole messages but the last. */
static bool drain_peer(int fd, struct parser *p)
{
	uint8_t buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		parse(p, buf, (size_t)n);
	return n == 0 && !p->bad;
}

struct big_reply {
	struct conn *c;
	int err;
	double t;
};

static void *big_replier(void *arg)
{
	struct big_reply *b = arg;
	uint8_t *f = frame(4 << 20, 1, 0);

	b->err = outbox_reply(b->c, f, 4 << 20);
	b->t = now();
	free(f);
	return NULL;
}

/*
 * The peer reads nothing; a 4 MiB reply blocks its writer; a message is
 * pushed: the writer cuts the connection a lease later and returns
 * EPIPE; the push did not wait.
 */
static void t_stall_writer(void)
{
	struct big_reply b = { 0 };
	struct parser p = { 0 };
	pthread_t th;
	uint8_t *f;
	double t0, t;
	int peer, err;

	srv.cfg.grant_lease = 1;
	b.c = conn_new(&peer);
	pthread_create(&th, NULL, big_replier, &b);
	usleep(200000);
	f = frame(100, 0, 0);
	t0 = now();
	err = outbox_push(b.c, f, 100);
	t = now() - t0;
	CHECK(!err && t < 0.25 && queued(b.c),
	      "stall: a push while the writer waits returns at once, queued "
	      "(%.4f s)", t);
	pthread_join(th, NULL);
	CHECK(b.err == EPIPE && b.t - t0 >= 0.9 && b.t - t0 <= 3,
	      "stall: the blocked writer cuts the connection %.2f s after "
	      "the push (lease 1 s): %s", b.t - t0, strerror(b.err));
	CHECK(stats.outbox_cut_stalled == 1, "stall: counted (%llu)",
	      (unsigned long long)stats.outbox_cut_stalled);
	CHECK(outbox_push(b.c, f, 100) == EPIPE, "stall: later pushes: EPIPE");
	/* the reply went out in part: the stream ends inside it */
	CHECK(drain_peer(peer, &p) && p.next[1] == 0 && p.have,
	      "stall: the peer reads part of the reply, then the end");
	free(f);
	conn_free(b.c, peer);
}

/*
 * The peer reads nothing and nobody writes replies: pushes fill the
 * socket until one stays queued; the reader cuts the connection a
 * lease later.
 */
static void t_stall_reader(void)
{
	struct run r = { 0 };
	struct parser p = { 0 };
	uint32_t seq = 0;
	pthread_t td;
	double t0, end;
	int err = 0;

	srv.cfg.grant_lease = 1;
	r.c = conn_new(&r.peer);
	while (!queued(r.c) && !err) {
		uint8_t *f = frame(1000, 0, seq++);

		err = outbox_push(r.c, f, 1000);
		free(f);
	}
	t0 = now();
	CHECK(!err && queued(r.c), "stall: %u pushes fill the socket, the last "
	      "stays queued", seq);
	pthread_create(&td, NULL, drainer, &r);
	end = now() + 5;
	while (stats.outbox_cut_stalled < 2 && now() < end)
		usleep(10000);
	CHECK(stats.outbox_cut_stalled == 2 && now() - t0 >= 0.9 &&
	      now() - t0 <= 3, "stall: the reader cuts the connection %.2f s "
	      "later (lease 1 s)", now() - t0);
	atomic_store(&r.stop, true);
	pthread_join(td, NULL);
	CHECK(drain_peer(r.peer, &p) && p.next[0] >= seq - 1,
	      "stall: the peer reads %u whole messages, then the end",
	      p.next[0]);
	conn_free(r.c, r.peer);
}

/* Nobody drains, the peer reads nothing: pushes until the bound. */
static void t_overflow(void)
{
	struct parser p = { 0 };
	uint32_t seq = 0;
	struct conn *c;
	int peer, err = 0;

	srv.cfg.grant_lease = 100;
	srv.grants_per_conn = 0;
	outbox_setup();			/* the bound: OB_RESERVE only */
	c = conn_new(&peer);
	while (!err && seq < 100000) {
		uint8_t *f = frame(1000, 0, seq);

		err = outbox_push(c, f, 1000);
		free(f);
		seq += !err;
	}
	CHECK(err == ENOBUFS && seq > 256 && seq < 1000,
	      "overflow: %u KiB-messages queued, then ENOBUFS (%s)", seq,
	      strerror(err));
	CHECK(stats.outbox_cut_full == 1, "overflow: counted");
	CHECK(drain_peer(peer, &p) && !p.have,
	      "overflow: the connection is shut down (%u whole messages "
	      "went out first)", p.next[0]);
	conn_free(c, peer);
}

/*
 * A requester's lease ran out (outbox_expire): an empty outbox stays, one
 * that still holds a message is cut at once.
 */
static void t_expire(void)
{
	unsigned long long was = stats.outbox_cut_stalled;
	struct parser p = { 0 };
	uint32_t seq = 0;
	struct conn *c;
	int peer, err = 0;

	srv.cfg.grant_lease = 100;
	c = conn_new(&peer);
	outbox_expire(c);
	CHECK(stats.outbox_cut_stalled == was && !c->ob.dead,
	      "expire: nothing queued: the connection stays");
	while (!queued(c) && !err) {
		uint8_t *f = frame(1000, 0, seq++);

		err = outbox_push(c, f, 1000);
		free(f);
	}
	outbox_expire(c);
	CHECK(!err && stats.outbox_cut_stalled == was + 1 && c->ob.dead,
	      "expire: a message still queued: cut at once, counted");
	CHECK(drain_peer(peer, &p), "expire: the peer reads %u whole "
	      "messages, then the end", p.next[0]);
	conn_free(c, peer);
}

static void t_closed(void)
{
	uint8_t *f = frame(100, 0, 0);
	struct conn *c;
	int peer;

	c = conn_new(&peer);
	outbox_close(c);
	CHECK(outbox_push(c, f, 100) == EPIPE && !queued(c),
	      "closed: a push after outbox_close is refused");
	free(f);
	conn_free(c, peer);
}

int main(void)
{
	config_defaults(&srv.cfg);
	log_level = LOG_ERR;	/* the cuts are expected */
	srandom(1);
	t_shared_socket(false);
	t_shared_socket(true);
	t_stall_writer();
	t_stall_reader();
	t_overflow();
	t_expire();
	t_closed();
	return tap_done();
}
