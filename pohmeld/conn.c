// SPDX-License-Identifier: MIT
/*
 * conn.c - one thread per connection.
 *
 * The thread reads one message, dispatches it and writes the reply, so a
 * slow client only ever stalls itself. Messages produced elsewhere (a
 * RECALL, a waiting LOCK granted by another client's unlock) are pushed
 * to the connection's outbox (outbox.c), which this thread drains while
 * it waits for input: only the connection's own threads (this one and
 * its workers, conn_work.c) ever wait on its socket.
 *
 * Memory per connection: a receive and a send buffer of the negotiated
 * max_msg (at most POHMEL_MAX_MSG, 1 MiB + 4 KiB, each; only pages a
 * message touched are resident, and after a message over 64 KiB all but
 * the first 64 KiB are given back), a 256 KiB thread stack and the
 * struct conn: about 60 KiB resident for an idle connection; three fds
 * at most (the socket, the outbox's eventfd, a request's temporary fd).
 * A connection that has not finished HELLO can send at most 4 KiB per
 * message.
 *
 * Admission (conn_start): at most max-connections in all and
 * max-connections-per-address from one client address; a connection
 * past either is closed at once, counted and logged (rate-limited) with
 * the address. A connection that has not completed HELLO and AUTH
 * within handshake-timeout seconds of its accept is closed, counted and
 * logged, so idle sockets cannot hold the slots for long.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "pohmeld.h"

#define PRE_HELLO_MAX	4096

/* Log lines a client can cause at will (log.c: log_limited). */
static struct ratelimit rl_max = RATELIMIT_INIT;
static struct ratelimit rl_per_addr = RATELIMIT_INIT;
static struct ratelimit rl_handshake = RATELIMIT_INIT;

/* conns_mu protects conns, nconns, nworkers and the per-address
 * table; conns_cv signals changes of nconns and nworkers. */
static pthread_mutex_t conns_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conns_cv = PTHREAD_COND_INITIALIZER;
static struct conn *conns;
static int nconns;
static int nworkers;

/*
 * Connections per client address, under conns_mu: a chained hash table
 * of addresses with at least one connection (IPv4 as v4-mapped IPv6, so
 * a client counts once whichever socket it came through). The hash is
 * keyed per start, so chosen addresses do not all land in one chain.
 */
#define ADDR_BUCKETS	256
struct addr_count {
	struct addr_count *next;
	uint8_t addr[16];
	int n;
};
static struct addr_count *addr_tab[ADDR_BUCKETS];

static const uint8_t v4mapped[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* false: not an IP client (AF_UNIX), which no per-address limit covers. */
static bool addr_key(const struct sockaddr *sa, uint8_t key[16])
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		memcpy(key, v4mapped, 12);
		memcpy(key + 12, &s->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;

		memcpy(key, s->sin6_addr.s6_addr, 16);
		return true;
	}
	return false;
}

/* The address alone, as people write it (127.0.0.2, ::1). */
static void addr_str(const uint8_t key[16], char *buf, size_t n)
{
	if (!memcmp(key, v4mapped, 12))
		inet_ntop(AF_INET, key + 12, buf, (socklen_t)n);
	else
		inet_ntop(AF_INET6, key, buf, (socklen_t)n);
}

static unsigned int addr_hash(const uint8_t key[16])
{
	uint64_t h = 1469598103934665603ULL ^ srv.boot_gen;
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ key[i]) * 1099511628211ULL;
	return (unsigned int)((h ^ (h >> 32)) % ADDR_BUCKETS);
}

/* conns_mu held. With add, a missing entry is made (NULL: no memory). */
static struct addr_count *addr_find(const uint8_t key[16], bool add)
{
	struct addr_count **head = &addr_tab[addr_hash(key)], *e;

	for (e = *head; e; e = e->next)
		if (!memcmp(e->addr, key, 16))
			return e;
	if (!add)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	memcpy(e->addr, key, 16);
	e->next = *head;
	*head = e;
	return e;
}

/* conns_mu held: one connection of key less. */
static void addr_drop(const uint8_t key[16])
{
	struct addr_count **pp = &addr_tab[addr_hash(key)], *e;

	for (; (e = *pp); pp = &e->next) {
		if (memcmp(e->addr, key, 16))
			continue;
		if (--e->n <= 0) {
			*pp = e->next;
			free(e);
		}
		return;
	}
}

/* pol: the policy it is served under; c takes a reference of its own. */
int conn_init_struct(struct conn *c, int fd, struct policy *pol)
{
	int err;

	memset(c, 0, sizeof(*c));
	err = outbox_init(&c->ob);
	if (err)
		return err;
	/* non-blocking: every send and recv waits in poll, with a limit */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c->fd = fd;
	c->pol = pol;
	atomic_fetch_add(&pol->refs, 1);
	atomic_init(&c->refs, 1);
	conn_work_init(c);
	c->state = CONN_NEW;
	c->max_msg = PRE_HELLO_MAX;
	return 0;
}

void conn_get(struct conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void conn_put(struct conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	outbox_fini(&c->ob);
	aead_fini(&c->rx);
	memset(c->k_c2s, 0, sizeof(c->k_c2s));
	memset(c->k_s2c, 0, sizeof(c->k_s2c));
	close(c->fd);
	conn_work_fini(c);
	policy_put(c->pol);
	free(c);
}

/* Milliseconds until dl (CLOCK_MONOTONIC), rounded up; <= 0: passed. */
static long ms_until(const struct timespec *dl)
{
	struct timespec now;
	long long ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (long long)(dl->tv_sec - now.tv_sec) * 1000000000LL +
	     (dl->tv_nsec - now.tv_nsec);
	if (ns <= 0)
		return 0;
	return (long)((ns + 999999) / 1000000);
}

/*
 * 1: got n bytes, 0: EOF/error before that, READ_TIMEOUT: the
 * connection is not authenticated yet and its handshake deadline
 * passed (bytes trickling in do not extend it). While no input is
 * there, the outbox is drained (outbox_poll).
 */
int conn_read(struct conn *c, uint8_t *p, size_t n)
{
	while (n) {
		long ms = -1;
		ssize_t r;

		if (c->ra_off < c->ra_end) {
			size_t k = c->ra_end - c->ra_off;

			if (k > n)
				k = n;
			memcpy(p, c->ra + c->ra_off, k);
			c->ra_off += (uint32_t)k;
			p += k;
			n -= k;
			continue;
		}

		if (c->state != CONN_AUTHED && srv.cfg.handshake_timeout > 0) {
			ms = ms_until(&c->hs_deadline);
			if (ms <= 0)
				return READ_TIMEOUT;
		}
		/*
		 * Less than the read-ahead buffer: take what is there, up
		 * to its size, so that a header and a small body (or the
		 * next requests) cost one recv. A large body goes straight
		 * to p.
		 */
		if (n < CONN_RA_SIZE) {
			r = recv(c->fd, c->ra, CONN_RA_SIZE, MSG_DONTWAIT);
			if (r > 0) {
				c->ra_off = 0;
				c->ra_end = (uint32_t)r;
				continue;
			}
		} else {
			r = recv(c->fd, p, n, MSG_DONTWAIT);
			if (r > 0) {
				p += r;
				n -= (size_t)r;
				continue;
			}
		}
		if (r == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return 0;
		if (outbox_poll(c, ms > 60000 ? 60000 : (int)ms) < 0)
			return 0;
	}
	return 1;
}

static void handshake_expired(struct conn *c)
{
	stats.handshake_timeouts++;
	log_limited(&rl_handshake, LOG_WARNING,
		    "%s: no HELLO and AUTH within %d s (handshake-timeout): "
		    "connection closed", c->peer, srv.cfg.handshake_timeout);
}

#define KEEP_RESIDENT	(64 * 1024)
#define BUF_SIZE	(POHMEL_HDR_SIZE + POHMEL_MAX_MSG)
#define RX_SIZE		(BUF_SIZE + REC_OVERHEAD)	/* a whole record */

/*
 * After a large message and a quiet moment, give the buffer's pages
 * beyond the first 64 KiB back to the kernel, so that an idle connection costs tens of KiB, not
 * the 2 MiB its last 1 MiB READ touched. Only whole pages inside the
 * buffer are dropped; they read back as zeros, which nothing relies on.
 */
static void trim(uint8_t *buf)
{
	uintptr_t start = ((uintptr_t)buf + KEEP_RESIDENT + 4095) & ~4095UL;
	uintptr_t end = ((uintptr_t)buf + BUF_SIZE) & ~4095UL;

	if (end > start)
		madvise((void *)start, end - start, MADV_DONTNEED);
}

/*
 * The client closed after our HELLO reply without sending AUTH: it
 * could not verify our mac_s (it holds another key under that name, or
 * the HELLO was changed on the way) or refused what we offered. Only the
 * server's log can tell an administrator, so it says so and counts it.
 */
static void hello_abandoned(struct conn *c)
{
	uint8_t b;

	/* only a close: a refused or malformed AUTH was logged already */
	if (c->hs_refused || c->ra_off < c->ra_end ||
	    recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 0)
		return;
	stats.auth_failures++;
	log_warn("%s: handshake given up after our HELLO reply (key '%s'): the client could not verify us (another key under that name, or the HELLO changed on the way) or refused what we offered",
		 c->peer, c->keyname[0] ? c->keyname : "-");
}

static void serve(struct conn *c, uint8_t *rx, uint8_t *tx)
{
	bool big_rx = false, big_tx = false;

	for (;;) {
		struct reply_file rf = { .fd = -1 }, *rfp;
		uint32_t outlen = 0, mlen;
		const struct order *op = NULL;
		const uint8_t *msg;
		struct order ord;
		struct whdr h;
		int ret;

		/* Trim only once the client has been quiet for 100 ms, so a
		 * stream of 1 MiB requests does not fault pages in each time. */
		if ((big_rx || big_tx) && c->ra_off == c->ra_end) {
			if (outbox_poll(c, 100) == 0) {
				if (big_rx)
					trim(rx);
				if (big_tx)
					trim(tx);
				big_rx = big_tx = false;
			}
		}
		ret = conn_read_msg(c, rx, tx, &msg, &mlen, &h);
		if (ret == READ_TIMEOUT)
			handshake_expired(c);
		if (ret == 0 && c->state == CONN_HELLO)
			hello_abandoned(c);
		if (ret != 1)
			return;
		/* a sealed reply is one record: the data goes in it */
		rfp = c->sealed ? NULL : &rf;
		if (h.op != POHMEL_OP_RECALL_ACK && c->state == CONN_AUTHED &&
		    conn_must_queue(c, msg, mlen, &h, &ord)) {
			op = &ord;	/* conn_defer need not work it out again */
			ret = DISPATCH_DEFER;
		} else {
			ret = dispatch_rf(c, msg, mlen, tx,
					  POHMEL_HDR_SIZE + c->max_msg,
					  &outlen, rfp);
		}
		if (ret == DISPATCH_DEFER && conn_defer(c, msg, mlen, op))
			ret = dispatch_wait(c, c->sess, msg, mlen, tx,
					    POHMEL_HDR_SIZE + c->max_msg,
					    &outlen, rfp);
		if (ret == DISPATCH_DEFER)
			ret = DISPATCH_OK;
		if (ret == DISPATCH_DROP) {
			log_info("%s: protocol error in op %u, dropping",
				 c->peer, h.op);
			stats.proto_errors++;
			return;
		}
		if (outlen && outbox_reply_rf(c, tx, outlen, &rf))
			return;
		if (rf.fd >= 0)
			close(rf.fd);	/* no reply (a parked LOCK WAIT) */
		if (ret == DISPATCH_CLOSE)
			return;
		if (c->seal_next && conn_seal_start(c))
			return;
		big_rx |= h.len > KEEP_RESIDENT;
		big_tx |= outlen > KEEP_RESIDENT;
	}
}

/* A worker thread (conn_work.c) started or ended: conns_shutdown waits. */
void conns_worker_count(int delta)
{
	pthread_mutex_lock(&conns_mu);
	nworkers += delta;
	if (delta < 0)
		pthread_cond_broadcast(&conns_cv);
	pthread_mutex_unlock(&conns_mu);
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	uint8_t *rx, *tx;

	log_set_client(c->peer, c->keyname);
	rx = malloc(RX_SIZE);
	tx = malloc(BUF_SIZE);
	if (rx && tx)
		serve(c, rx, tx);
	free(rx);
	free(tx);

	log_debug("%s: disconnected", c->peer);
	outbox_close(c);
	atomic_store(&c->gone, true);
	conn_work_gone(c);
	lock_conn_gone(c);
	grants_conn_gone(c);
	if (c->sess)
		session_detach(c->sess);
	c->sess = NULL;

	pthread_mutex_lock(&conns_mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->addr_counted)
		addr_drop(c->addr);
	nconns--;
	stats.conns_now--;
	pthread_cond_broadcast(&conns_cv);
	pthread_mutex_unlock(&conns_mu);
	conn_put(c);
	return NULL;
}

void conn_peer_name(const struct sockaddr *sa, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		inet_ntop(AF_INET, &s->sin_addr, a, sizeof(a));
		snprintf(buf, n, "%s:%u", a, ntohs(s->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof(a));
		snprintf(buf, n, "[%s]:%u", a, ntohs(s->sin6_port));
	} else {
		snprintf(buf, n, "local");
	}
}

/*
 * Admit a connection or refuse it (closed at once): at max-connections,
 * or at max-connections-per-address for its address. Refusals are
 * counted ("refused" and one counter per reason) and logged with the
 * address, rate-limited.
 */
int conn_start(int fd, const struct sockaddr *sa, const char *peer,
	       struct policy *pol)
{
	char addr[INET6_ADDRSTRLEN];
	struct addr_count *e = NULL;
	pthread_attr_t attr;
	uint8_t key[16];
	pthread_t th;
	struct conn *c;
	int one = 1, err, n;
	bool keyed;

	keyed = addr_key(sa, key);
	pthread_mutex_lock(&conns_mu);
	if (atomic_load(&srv.stopping)) {
		pthread_mutex_unlock(&conns_mu);
		stats.refused++;
		close(fd);
		return EAGAIN;
	}
	if (nconns >= srv.cfg.max_conns) {
		pthread_mutex_unlock(&conns_mu);
		stats.refused++;
		stats.refused_max_conns++;
		log_limited(&rl_max, LOG_WARNING,
			    "%s: refused: max-connections (%d) reached",
			    peer, srv.cfg.max_conns);
		close(fd);
		return EAGAIN;
	}
	if (keyed) {
		e = addr_find(key, srv.cfg.max_conns_per_addr > 0);
		n = e ? e->n : 0;
		if (srv.cfg.max_conns_per_addr > 0 &&
		    n >= srv.cfg.max_conns_per_addr) {
			pthread_mutex_unlock(&conns_mu);
			stats.refused++;
			stats.refused_per_addr++;
			addr_str(key, addr, sizeof(addr));
			log_limited(&rl_per_addr, LOG_WARNING,
				    "%s: refused: %d connections from %s "
				    "(max-connections-per-address)", peer, n,
				    addr);
			close(fd);
			return EAGAIN;
		}
		if (!e && srv.cfg.max_conns_per_addr > 0) {
			pthread_mutex_unlock(&conns_mu);
			err = ENOMEM;
			goto err_close;
		}
		if (e)
			e->n++;
	}
	nconns++;
	pthread_mutex_unlock(&conns_mu);

	c = malloc(sizeof(*c));
	if (!c) {
		err = ENOMEM;
		goto err_count;
	}
	err = conn_init_struct(c, fd, pol);
	if (err) {
		free(c);
		goto err_count;
	}
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	memcpy(c->addr, key, sizeof(c->addr));
	c->addr_counted = e != NULL;
	clock_gettime(CLOCK_MONOTONIC, &c->hs_deadline);
	c->hs_deadline.tv_sec += srv.cfg.handshake_timeout;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));

	pthread_mutex_lock(&conns_mu);
	c->next = conns;
	if (conns)
		conns->prev = c;
	conns = c;
	stats.conns_now++;
	stats.conns_total++;
	pthread_mutex_unlock(&conns_mu);

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, conn_thread, c);
	pthread_attr_destroy(&attr);
	if (err)
		goto err_list;
	log_debug("%s: connected", c->peer);
	return 0;

err_list:
	pthread_mutex_lock(&conns_mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	stats.conns_now--;
	pthread_mutex_unlock(&conns_mu);
	conn_put(c);		/* closes fd */
	fd = -1;
err_count:
	pthread_mutex_lock(&conns_mu);
	if (e)
		addr_drop(key);
	nconns--;
	pthread_cond_broadcast(&conns_cv);
	pthread_mutex_unlock(&conns_mu);
err_close:
	if (fd >= 0)
		close(fd);
	log_warn("%s: cannot start connection: %s", peer, strerror(err));
	return err;
}

/*
 * SIGHUP installed p: every connection that authenticated with a key no
 * longer in p (removed, or its bytes changed) is cut now, logged and
 * counted. Connections still in their handshake are checked at AUTH
 * (dispatch.c). Returns how many were cut.
 */
int conns_revoke(const struct policy *p)
{
	struct conn *c;
	int n = 0;

	pthread_mutex_lock(&conns_mu);
	for (c = conns; c; c = c->next) {
		if (!atomic_load(&c->keyed) || policy_has_owner(p, c->owner))
			continue;
		/* said before it happens: the client sees the close next */
		log_warn("%s: key '%s' revoked (no longer in the key file): connection closed",
			 c->peer, c->keyname);
		stats.keys_revoked++;
		n++;
		shutdown(c->fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&conns_mu);
	return n;
}

/*
 * Up to max authenticated connections into out (pohmel clients). Each is
 * referenced under conns_mu and asked for its grants after: grants_mu is
 * never taken under conns_mu.
 */
int conns_info(struct conn_info *out, int max)
{
	struct conn **held, *c;
	int n = 0, i;

	held = calloc((size_t)(max > 0 ? max : 1), sizeof(*held));
	if (!held)
		return -ENOMEM;
	pthread_mutex_lock(&conns_mu);
	for (c = conns; c && n < max; c = c->next) {
		uint64_t id = atomic_load(&c->shown_sess);

		if (!id || atomic_load(&c->gone))
			continue;
		conn_get(c);
		held[n] = c;
		out[n].sess_id = id;
		out[n].sec = atomic_load(&c->shown_sec);
		snprintf(out[n].peer, sizeof(out[n].peer), "%s", c->peer);
		n++;
	}
	pthread_mutex_unlock(&conns_mu);
	for (i = 0; i < n; i++) {
		out[i].grants = grants_held(held[i]);
		conn_put(held[i]);
	}
	free(held);
	return n;
}

/* Wait up to secs for every connection thread to end; conns_mu held. */
static bool conns_wait_locked(int secs)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += secs;
	while (nconns > 0 || nworkers > 0)
		if (pthread_cond_timedwait(&conns_cv, &conns_mu, &dl) ==
		    ETIMEDOUT)
			return false;
	return true;
}

/*
 * SIGTERM: stop reading from every client. A thread busy with a request
 * finishes it, sends the reply (the write side stays open), then sees
 * EOF and exits. A thread still there after SHUTDOWN_GRACE seconds is
 * blocked writing a reply to a client that does not read (its request
 * has completed): its connection is cut so that its write fails, which
 * loses only that reply.
 */
#define SHUTDOWN_GRACE	5
bool conns_shutdown(void)
{
	struct conn *c;
	bool done;

	/* Waiting LOCKs first get their EINTR, while their connections
	 * still exist (op_lock refuses new waits once stopping is set). */
	lock_shutdown();
	grants_shutdown();
	pthread_mutex_lock(&conns_mu);
	for (c = conns; c; c = c->next)
		shutdown(c->fd, SHUT_RD);
	done = conns_wait_locked(SHUTDOWN_GRACE);
	if (!done) {
		log_warn("%d connections not reading their replies after %d s: "
			 "cutting them", nconns, SHUTDOWN_GRACE);
		for (c = conns; c; c = c->next)
			shutdown(c->fd, SHUT_RDWR);
		done = conns_wait_locked(30);
		if (!done)
			log_warn("%d connections still busy at exit", nconns);
	}
	pthread_mutex_unlock(&conns_mu);
	return done;
}
