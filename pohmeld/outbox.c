// SPDX-License-Identifier: MIT
/*
 * outbox.c - everything written to a connection's socket.
 *
 * Two kinds of messages share a socket. Replies are written by the
 * connection's own threads (its reader and its worker, conn.c), which
 * may wait for that socket: a client that does not read its replies
 * stalls only itself. Messages the server starts - a RECALL (grants.c),
 * the reply to a LOCK WAIT granted by another client's unlock (lock.c) -
 * come from other connections' threads and the notify thread, which
 * must never wait for this client. outbox_push() queues such a message
 * in the connection's outbox, writes what the socket takes at once
 * (MSG_DONTWAIT) if no other thread is writing, and returns. What is
 * left is written by the connection's own threads: by its reader, which
 * polls for POLLOUT while the outbox holds something (an eventfd wakes
 * it), and by whichever of them writes a reply, before and after it.
 *
 * Framing: bytes reach the socket only with write_mu held, and a holder
 * first completes what is queued (the head may have gone out in part)
 * before it writes anything else, so messages never interleave.
 *
 * The lease: a connection whose outbox holds a message and sends none
 * of its bytes for grant-lease seconds is cut (shut down, which ends its
 * grants and waits like any disconnect), logged with its address
 * (rate-limited) and counted (outbox_cut_stalled): a server message must
 * reach the socket within a lease of being queued, or of the one before
 * it going out, as it had to when a thread of its own sent it. Bytes of
 * a reply do not count: a RECALL waits behind at most one reply, and a
 * client that cannot take both within a lease is too slow to hold
 * grants (the requester waiting for its ack stops waiting then anyway).
 * Whoever waits for the socket checks it: a writer blocked on POLLOUT,
 * and the reader; and a requester whose wait for a RECALL's ack ran out
 * cuts the holder if anything is still queued for it (outbox_expire), so
 * that it goes on only once the holder is either told or cut.
 *
 * The bound, in bytes, each message charged with its bookkeeping (so it
 * bounds memory; a count would add nothing, every message costs at
 * least OB_COST(0)): the worst burst a healthy client can be sent at
 * once, two RECALLs (EXCL to SHARED, then to NONE) for each object it
 * may hold, max-grants-per-connection of them (an inotify overflow
 * recalls them all at once), plus OB_RESERVE for LOCK replies. A
 * connection whose outbox would go beyond it is cut, logged and counted
 * (outbox_cut_full): it has not read for a while and is still being
 * sent messages. This also catches a client that takes a byte now and
 * then (so is never idle for a lease) while messages keep coming.
 *
 * Lock order: write_mu -> ob.mu; ob.mu is a leaf and never held across
 * a call that may block. Pushers only ever trylock write_mu.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <time.h>
#include <unistd.h>
#include "pohmeld.h"

struct ob_msg {
	struct ob_msg *next;		/* under ob.mu */
	size_t len;
	uint8_t data[];
};

#define OB_COST(len)	(sizeof(struct ob_msg) + (len))
#define OB_RESERVE	(256 * 1024)	/* LOCK replies: some 5000 */
#define RECALL_LEN	(POHMEL_HDR_SIZE + POHMEL_RECALL_SIZE)

/* Set by outbox_setup() before any connection; read-only after. */
static size_t ob_max = OB_RESERVE;

static struct ratelimit rl_stalled = RATELIMIT_INIT;
static struct ratelimit rl_full = RATELIMIT_INIT;

static bool ob_seal_locked(struct outbox *ob, const uint8_t *msg, uint32_t n,
			   uint8_t *out);

enum cut { CUT_STALLED, CUT_FULL, CUT_NOMEM, CUT_ERROR, CUT_SEAL };

void outbox_setup(void)
{
	ob_max = OB_RESERVE + 2 * (size_t)srv.grants_per_conn *
		 OB_COST(RECALL_LEN);
	log_info("outbox: at most %zu KiB of server messages queued per "
		 "connection", ob_max / 1024);
}

int outbox_init(struct outbox *ob)
{
	memset(ob, 0, sizeof(*ob));
	ob->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ob->wake_fd < 0)
		return errno;
	pthread_mutex_init(&ob->write_mu, NULL);
	pthread_mutex_init(&ob->mu, NULL);
	return 0;
}

/* The last reference is gone: nobody pushes or writes any more. */
void outbox_fini(struct outbox *ob)
{
	struct ob_msg *m, *next;

	for (m = ob->head; m; m = next) {
		next = m->next;
		free(m);
	}
	close(ob->wake_fd);
	aead_fini(&ob->tx);
	pthread_mutex_destroy(&ob->mu);
	pthread_mutex_destroy(&ob->write_mu);
}

/* Milliseconds until lease seconds after t (CLOCK_MONOTONIC), rounded
 * up; 0: passed. */
static long ms_to(const struct timespec *t, int lease)
{
	struct timespec now;
	long long ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (long long)(t->tv_sec + lease - now.tv_sec) * 1000000000LL +
	     (t->tv_nsec - now.tv_nsec);
	return ns <= 0 ? 0 : (long)((ns + 999999) / 1000000);
}

/*
 * Nothing more is written or queued on c: shut down, so that its reader
 * sees the end and the connection goes (conn.c), grants and waits with
 * it. Logged and counted once, unless a failed write is the reason (the
 * client went away: nothing to tell).
 */
static void ob_kill(struct conn *c, enum cut why)
{
	struct outbox *ob = &c->ob;
	unsigned int count;
	size_t bytes;
	bool first;

	pthread_mutex_lock(&ob->mu);
	first = !ob->dead;
	ob->dead = true;
	count = ob->count;
	bytes = ob->bytes;
	pthread_mutex_unlock(&ob->mu);
	if (!first)
		return;
	/*
	 * Reset, not a FIN queued behind what the client does not take:
	 * the close (once c's last thread lets go) drops the unsent bytes
	 * and tells the client at once.
	 */
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER,
		   &(struct linger){ .l_onoff = 1, .l_linger = 0 },
		   sizeof(struct linger));
	shutdown(c->fd, SHUT_RDWR);
	switch (why) {
	case CUT_STALLED:
		stats.outbox_cut_stalled++;
		log_limited(&rl_stalled, LOG_WARNING, "%s: connection cut: "
			    "it did not take its server messages (%u queued, "
			    "%zu bytes) within %d s (grant-lease)", c->peer,
			    count, bytes, srv.cfg.grant_lease);
		break;
	case CUT_FULL:
		stats.outbox_cut_full++;
		log_limited(&rl_full, LOG_WARNING, "%s: connection cut: the "
			    "RECALLs and LOCK replies it does not read are "
			    "over the outbox bound (%zu KiB)", c->peer,
			    ob_max / 1024);
		break;
	case CUT_NOMEM:
		log_limited(&rl_full, LOG_ERR, "%s: connection cut: no memory "
			    "to queue a server message", c->peer);
		break;
	case CUT_SEAL:
		stats.seal_failures++;
		log_limited(&rl_full, LOG_WARNING, "%s: connection cut: its "
			    "send counter is used up or sealing failed",
			    c->peer);
		break;
	case CUT_ERROR:
		break;
	}
}

/* Not under write_mu: tell the reader to poll for POLLOUT if anything
 * is left. A holder of write_mu calls it once it let go. */
static void ob_kick(struct conn *c)
{
	bool pending;

	pthread_mutex_lock(&c->ob.mu);
	pending = c->ob.head && !c->ob.dead;
	pthread_mutex_unlock(&c->ob.mu);
	if (pending)
		eventfd_write(c->ob.wake_fd, 1);
}

/*
 * write_mu held, c's socket full: wait until it takes bytes. Once the
 * outbox's lease ran out (a message waited a lease with none of its
 * bytes sent), c is cut (EPIPE). With an empty outbox the wait has no
 * end (a client not reading its replies stalls only itself) but is
 * looked at again every lease: a message pushed meanwhile is due a lease
 * after it came, never sooner.
 */
static int wait_writable(struct conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLOUT };
	struct outbox *ob = &c->ob;
	struct timespec since;
	bool dead, pending;
	long ms;
	int n;

	for (;;) {
		pthread_mutex_lock(&ob->mu);
		dead = ob->dead;
		pending = ob->head != NULL;
		since = ob->since;
		pthread_mutex_unlock(&ob->mu);
		if (dead)
			return EPIPE;
		ms = pending ? ms_to(&since, srv.cfg.grant_lease) :
			       srv.cfg.grant_lease * 1000L;
		if (ms <= 0) {
			ob_kill(c, CUT_STALLED);
			return EPIPE;
		}
		n = poll(&p, 1, (int)ms);
		if (n > 0)
			return 0;	/* room, or an error send will see */
		if (n < 0 && errno != EINTR) {
			ob_kill(c, CUT_ERROR);
			return EPIPE;
		}
	}
}

/*
 * write_mu held: write what is queued, in order, the first limit
 * messages only. With block (a reply comes next), wait for the socket
 * as long as it takes bytes; without,
 * stop when it takes no more, and cut c if nothing went out for a lease
 * while a message waited. 0, or EPIPE once nothing can be written.
 */
static int ob_flush_n(struct conn *c, bool block, unsigned int limit)
{
	struct outbox *ob = &c->ob;
	struct timespec since;
	struct ob_msg *m, *done;
	unsigned int sent = 0;
	size_t off;
	ssize_t n;
	int err;

	for (;;) {
		pthread_mutex_lock(&ob->mu);
		if (ob->dead) {
			pthread_mutex_unlock(&ob->mu);
			return EPIPE;
		}
		m = ob->head;
		off = ob->off;
		since = ob->since;
		pthread_mutex_unlock(&ob->mu);
		if (!m || sent == limit)
			return 0;
		/* m stays: only a holder of write_mu takes messages off. */
		n = send(c->fd, m->data + off, m->len - off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			done = NULL;
			pthread_mutex_lock(&ob->mu);
			clock_gettime(CLOCK_MONOTONIC, &ob->since);
			ob->off += (size_t)n;
			if (ob->off == m->len) {
				ob->head = m->next;
				if (!ob->head)
					ob->tail = NULL;
				ob->off = 0;
				ob->bytes -= OB_COST(m->len);
				ob->count--;
				done = m;
				sent++;
			}
			pthread_mutex_unlock(&ob->mu);
			free(done);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (block) {
				err = wait_writable(c);
				if (err)
					return err;
				continue;
			}
			if (ms_to(&since, srv.cfg.grant_lease) > 0)
				return 0;
			ob_kill(c, CUT_STALLED);
			return EPIPE;
		}
		ob_kill(c, CUT_ERROR);
		return EPIPE;
	}
}

/* write_mu held: all that is queued (see ob_flush_n). */
static int ob_flush(struct conn *c, bool block)
{
	return ob_flush_n(c, block, UINT_MAX);
}

/*
 * A message the server starts (RECALL, a granted LOCK WAIT's reply), by
 * any thread: never waits for c. Queued whole; written at once as far
 * as the socket takes it when no other thread is writing to c, else by
 * that writer before it lets go. 0; EPIPE if c is gone or cut (the
 * message is dropped: c's grants and waits end with it); ENOBUFS or
 * ENOMEM if it could not be queued, and then c is cut, since a lost
 * RECALL or LOCK reply would leave the client trusting a stale cache or
 * waiting for ever.
 */
int outbox_push(struct conn *c, const void *buf, size_t len)
{
	struct outbox *ob = &c->ob;
	struct ob_msg *m;
	bool full, bad = false;

	/* room for the record it may become */
	m = malloc(sizeof(*m) + len + REC_OVERHEAD);
	if (!m) {
		ob_kill(c, CUT_NOMEM);
		return ENOMEM;
	}
	m->next = NULL;
	m->len = len;
	memcpy(m->data, buf, len);
	pthread_mutex_lock(&ob->mu);
	if (ob->closed || ob->dead) {
		pthread_mutex_unlock(&ob->mu);
		free(m);
		return EPIPE;
	}
	/* m->len is what goes on the wire, and what the bound is charged
	 * (ob_flush takes OB_COST(m->len) off again). */
	if (ob->sealed)
		m->len = len + REC_OVERHEAD;
	full = ob->bytes + OB_COST(m->len) > ob_max;
	/* Sealed as queued: the counter follows the queue's order, which
	 * is the order on the wire. */
	if (!full && ob->sealed)
		bad = ob_seal_locked(ob, buf, (uint32_t)len, m->data);
	if (bad) {
		pthread_mutex_unlock(&ob->mu);
		free(m);
		ob_kill(c, CUT_SEAL);
		return EPIPE;
	}
	if (!full) {
		if (ob->tail) {
			ob->tail->next = m;
		} else {
			ob->head = m;
			clock_gettime(CLOCK_MONOTONIC, &ob->since);
		}
		ob->tail = m;
		ob->bytes += OB_COST(m->len);
		ob->count++;
	}
	pthread_mutex_unlock(&ob->mu);
	if (full) {
		free(m);
		ob_kill(c, CUT_FULL);
		return ENOBUFS;
	}
	if (!pthread_mutex_trylock(&ob->write_mu)) {
		ob_flush(c, false);
		pthread_mutex_unlock(&ob->write_mu);
	}
	ob_kick(c);
	return 0;
}

/* mu held: msg as the next record (out: n + REC_OVERHEAD bytes). A
 * sender closes before its counter reaches POHMEL_SEAL_MSGS_MAX. */
static bool ob_seal_locked(struct outbox *ob, const uint8_t *msg, uint32_t n,
			   uint8_t *out)
{
	if (ob->tx_ctr >= POHMEL_SEAL_MSGS_MAX)
		return true;
	if (rec_seal(&ob->tx, ob->tx_ctr, ob->sign, msg, n, out))
		return true;
	ob->tx_ctr++;
	return false;
}

/* After the HELLO reply went out plain: every message from now on is
 * a record sealed with key (alg: POHMEL_FEAT_SEAL_AES or _CHACHA), the
 * first with counter ctr (0 but in tests). */
int outbox_seal(struct conn *c, uint64_t alg, bool sign,
		const uint8_t key[32], uint64_t ctr)
{
	struct outbox *ob = &c->ob;
	int err;

	pthread_mutex_lock(&ob->mu);
	err = aead_init(&ob->tx, alg, key, true);
	if (!err) {
		ob->sealed = true;
		ob->sign = sign;
		ob->tx_ctr = ctr;
	}
	pthread_mutex_unlock(&ob->mu);
	return err;
}

/*
 * A send to c's socket wrote nothing (n <= 0, errno says why): 0 to go on
 * (once the socket has room, if it was full), else EPIPE (c is cut).
 */
static int send_again(struct conn *c, ssize_t n)
{
	if (n < 0 && errno == EINTR)
		return 0;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return wait_writable(c);
	ob_kill(c, CUT_ERROR);
	return EPIPE;
}

/*
 * write_mu held: all of a reply, waiting for the socket as needed; more:
 * the bytes of a file follow (write_file).
 */
static int write_all(struct conn *c, const uint8_t *p, size_t len, bool more)
{
	ssize_t n;
	int err;

	while (len) {
		n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT |
			 (more ? MSG_MORE : 0));
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		err = send_again(c, n);
		if (err)
			return err;
	}
	return 0;
}

/*
 * write_mu held: the rest of a reply, from a file (struct reply_file).
 * The file shrinking meanwhile (EOF before all of it) leaves a reply
 * shorter than its header says: the connection is cut, and the client
 * asks again on a new one.
 */
static int write_file(struct conn *c, const struct reply_file *rf)
{
	off_t off = (off_t)rf->off;
	size_t left = rf->len;
	ssize_t n;
	int err;

	while (left) {
		n = sendfile(c->fd, rf->fd, &off, left);
		if (n > 0) {
			left -= (size_t)n;
			continue;
		}
		if (n == 0) {
			log_info("%s: file shorter than its READ reply (truncated meanwhile): connection closed, the client asks again",
				 c->peer);
			ob_kill(c, CUT_ERROR);
			return EPIPE;
		}
		err = send_again(c, n);
		if (err)
			return err;
	}
	return 0;
}

/*
 * A reply, by one of c's own threads: waits for c's socket (only), and
 * while the outbox holds a message, only until its lease runs out. What
 * was queued goes first; what was pushed meanwhile follows as far as
 * the socket takes it. 0, or EPIPE: the connection is gone or cut.
 */
int outbox_reply(struct conn *c, const void *buf, size_t len)
{
	return outbox_reply_rf(c, buf, len, NULL);
}

/* As outbox_reply, the bytes of rf (if fd >= 0) after it; closes rf->fd. */
int outbox_reply_rf(struct conn *c, const void *buf, size_t len,
		    struct reply_file *rf)
{
	bool file = rf && rf->fd >= 0;
	struct outbox *ob = &c->ob;
	unsigned int ahead;
	uint8_t *rec = NULL;
	bool bad = false;
	int err = 0;

	pthread_mutex_lock(&ob->write_mu);
	pthread_mutex_lock(&ob->mu);
	if (ob->sealed) {
		pthread_mutex_unlock(&ob->mu);
		rec = malloc(len + REC_OVERHEAD);
		if (!rec) {
			ob_kill(c, CUT_NOMEM);
			err = EPIPE;
		}
		pthread_mutex_lock(&ob->mu);
	}
	/*
	 * The reply's place on the wire is after what is queued now, before
	 * what is pushed from now on: with the record layer on, its counter
	 * is taken here, in that order (pushers seal under mu as well).
	 */
	ahead = ob->count;
	if (!err && rec)
		bad = ob_seal_locked(ob, buf, (uint32_t)len, rec);
	pthread_mutex_unlock(&ob->mu);
	if (!err && bad) {
		ob_kill(c, CUT_SEAL);
		err = EPIPE;
	}
	if (!err)
		err = ob_flush_n(c, true, ahead);
	if (!err && file && rec) {
		ob_kill(c, CUT_ERROR);	/* a sealed reply is whole in buf */
		err = EPIPE;
	}
	if (!err)
		err = rec ? write_all(c, rec, len + REC_OVERHEAD, false) :
			    write_all(c, buf, len, file && rf->len);
	if (!err && file)
		err = write_file(c, rf);
	if (file) {
		close(rf->fd);
		rf->fd = -1;
	}
	free(rec);
	if (!err)
		ob_flush(c, false);
	pthread_mutex_unlock(&c->ob.write_mu);
	ob_kick(c);
	return err;
}

/* The reader: write what is queued unless another thread is writing
 * (false; it flushes before it lets go, then kicks). */
static bool ob_drain(struct conn *c)
{
	if (pthread_mutex_trylock(&c->ob.write_mu))
		return false;
	ob_flush(c, false);
	pthread_mutex_unlock(&c->ob.write_mu);
	return true;
}

/*
 * c's reader: wait up to ms (-1: no limit) for input on c's socket
 * (or its end), meanwhile writing what the outbox holds as the socket
 * takes it, and cutting c at the lease. 1: input (read will tell what),
 * 0: ms passed, -1: poll failed.
 */
int outbox_poll(struct conn *c, int ms)
{
	struct outbox *ob = &c->ob;
	struct timespec end, since;
	bool pending, busy = false;
	eventfd_t v;
	long t, due;
	int n;

	/* end: ms from now, for ms_to (which adds whole seconds). */
	clock_gettime(CLOCK_MONOTONIC, &end);
	if (ms >= 0) {
		end.tv_sec += ms / 1000;
		end.tv_nsec += (long)(ms % 1000) * 1000000;
		if (end.tv_nsec >= 1000000000) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000;
		}
	}
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = c->fd, .events = POLLIN },
			{ .fd = ob->wake_fd, .events = POLLIN },
		};

		t = ms < 0 ? -1 : ms_to(&end, 0);
		pthread_mutex_lock(&ob->mu);
		pending = ob->head && !ob->dead;
		since = ob->since;
		pthread_mutex_unlock(&ob->mu);
		/* While another thread writes, that one watches the lease. */
		if (pending && !busy) {
			p[0].events |= POLLOUT;
			due = ms_to(&since, srv.cfg.grant_lease);
			if (t < 0 || due < t)
				t = due;
		}
		n = poll(p, 2, (int)t);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0 && p[1].revents & POLLIN) {
			eventfd_read(ob->wake_fd, &v);
			busy = false;
		}
		if (pending && !busy && (!n || p[0].revents & POLLOUT))
			busy = !ob_drain(c);
		if (n > 0 && p[0].revents & (POLLIN | POLLERR | POLLHUP))
			return 1;
		if (ms >= 0 && !ms_to(&end, 0))
			return 0;
	}
}

/*
 * A requester stopped waiting for c's RECALL_ACK: a lease passed since
 * the RECALL was pushed. If anything is still queued for c (the RECALL,
 * or what came after it), c is cut now, before the requester goes on.
 * May be called under grants_mu: ob.mu is a leaf, shutdown() does not
 * block.
 */
void outbox_expire(struct conn *c)
{
	bool queued;

	pthread_mutex_lock(&c->ob.mu);
	queued = c->ob.head && !c->ob.dead;
	pthread_mutex_unlock(&c->ob.mu);
	if (queued)
		ob_kill(c, CUT_STALLED);
}

/*
 * c's reader is done: pushes are dropped from now on (nobody would
 * write them; its grants and waits are about to go). What is queued
 * gets a last try, and stays for a late reply of the worker, which
 * writes it first.
 */
void outbox_close(struct conn *c)
{
	pthread_mutex_lock(&c->ob.mu);
	c->ob.closed = true;
	pthread_mutex_unlock(&c->ob.mu);
	ob_drain(c);
}
