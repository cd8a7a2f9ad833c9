// SPDX-License-Identifier: MIT
/*
 * test_mute - clients that stop reading while others make pohmeld send
 * them messages they did not ask for: the replies of their LOCK WAITs
 * granted by another client's unlocks, RECALLs of their grants forced
 * by local changes or by another client's request. Each such message
 * goes into the mute client's outbox (outbox.c), so:
 *   - pohmeld starts no thread for it and none of its threads waits on
 *     the mute client's socket: the thread count stays put (it grew by
 *     one per stuck message before the outbox);
 *   - the clients that cause the messages are answered at once, and a
 *     client that recalls the mute one keeps reading its own connection
 *     (its RECALL_ACKs included);
 *   - the mute client is cut off a lease (grant-lease) after its outbox
 *     stopped moving, named in the log and counted in STATS; what it
 *     reads before the cut is whole messages;
 *   - a client that only pauses (shorter than a lease) gets every
 *     message, whole, and its connection stays.
 * Bounds tell a hang (a lease, seconds) from progress (milliseconds);
 * they are not speeds.
 *   test_mute POHMELD
 */
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include "integ_lib.h"
#include "tap.h"

#define LEASE		4	/* s: grant-lease of the server */
#define SLACK		3.0	/* s: a loaded 2-core host, an ASan server */
#define NWAIT		64	/* LOCK WAITs granted to a mute client */
#define NREC		64	/* local changes recalling a mute holder */
#define NREADS		64	/* stall_reader's 1 MiB READs */
#define THREAD_SLACK	2	/* e.g. a worker thread of the requester */
#define LOCK_TAG	5000	/* stall_reader's READs use 1000.. */

static struct srvproc sp;
static char big[1 << 20];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* pohmeld's thread count (/proc/PID/status), -1 if unknown. */
static int threads(void)
{
	return (int)proc_status(sp.pid, "Threads:");
}

static void sample(int *max)
{
	int n = threads();

	if (n > *max)
		*max = n;
}

/* A STATS counter, -1 if missing (from a connection of its own). */
static long long stat_of(const char *name)
{
	char buf[8192], *p;
	size_t n = strlen(name);
	long long v = -1;
	struct pc c;

	if (cl_open(&c, &sp, 0, 0) == 0 && pc_stats(&c, buf, sizeof(buf)) == 0)
		for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
			if (!strncmp(p, name, n) && p[n] == ' ') {
				v = atoll(p + n + 1);
				break;
			}
	cl_close(&c);
	return v;
}

static bool log_has(const char *a, const char *b)
{
	char path[512], line[1024];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/mute.log", base);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, a) && strstr(line, b);
	fclose(f);
	return found;
}

/* The time a log line with a and b appeared (polled), or -1. */
static double log_wait(const char *a, const char *b, double secs)
{
	double end = now() + secs;

	while (now() < end) {
		if (log_has(a, b))
			return now();
		usleep(50000);
	}
	return -1;
}

/*
 * The time c's connection ended (the server closed it: a reset, as it
 * had requests left unread), polled without reading, or -1. Reading
 * would let the server write again and postpone the cut.
 */
static double conn_ended(const struct pc *c, double secs)
{
	double end = now() + secs;
	struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };

	while (now() < end) {
		if (poll(&p, 1, 50) > 0 &&
		    p.revents & (POLLERR | POLLHUP | POLLRDHUP))
			return now();
	}
	return -1;
}

/* "127.0.0.1:PORT", as pohmeld names the connection of c. */
static void peer_of(const struct pc *c, char *buf, size_t n)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);

	if (getsockname(c->fd, (void *)&sin, &sl))
		snprintf(buf, n, "?");
	else
		snprintf(buf, n, "127.0.0.1:%u", ntohs(sin.sin_port));
}

static int gopen(struct pc *c, bool grants)
{
	if (!grants)
		return cl_open(c, &sp, 0, 0);
	if (pc_init(c))
		return -ENOMEM;
	c->want_features = POHMEL_FEAT_BATCH | POHMEL_FEAT_GRANTS;
	if (pc_connect(c, "127.0.0.1", sp.port))
		return -1;
	return pc_handshake(c);
}

static int mkfile(struct pc *c, const char *name, size_t size,
		  struct wattr *a)
{
	uint32_t got;
	int err;

	err = pc_mkobj(c, POHMEL_OP_CREATE, &c->root.oid, name, 0644, 0, 0,
		       NULL, a, NULL);
	if (!err && size)
		err = pc_write(c, &a->oid, 0, 0, big, (uint32_t)size, 0, &got);
	return err;
}

/* HELLO, AUTH, PING on a new connection; how long it took, -1: failed. */
static double victim(void)
{
	double t0 = now();
	struct pc v;
	int err;

	err = cl_open(&v, &sp, 0, 0);
	if (!err)
		err = pc_ping(&v);
	cl_close(&v);
	return err ? -1 : now() - t0;
}

/* M parks a LOCK WAIT on each of H's NWAIT byte-range locks on f. */
static bool park_waits(struct pc *h, struct pc *m, const struct woid *f)
{
	uint8_t body[128];
	uint32_t n;
	int i, ok;

	for (ok = 1, i = 0; i < NWAIT && ok; i++)
		ok = pc_lock(h, f, 1, 2 * (uint64_t)i, 1, POHMEL_LOCK_WR, 0, 1,
			     NULL) == 0;
	for (i = 0; i < NWAIT && ok; i++) {
		n = pc_enc_lock(body, f, 100 + (uint64_t)i, 2 * (uint64_t)i, 1,
				POHMEL_LOCK_WR, POHMEL_LOCK_WAIT, 2);
		ok = pc_send(m, POHMEL_OP_LOCK, LOCK_TAG + (uint32_t)i, 0, body,
			     n) == 0;
	}
	/* Requests run in order: the PING's reply says all are parked. */
	return ok && pc_ping(m) == 0;
}

/* H unlocks its NWAIT locks, each granting one of M's waits. */
static int unlock_all(struct pc *h, const struct woid *f, double *worst,
		      int *tmax)
{
	int i, err = 0;

	*worst = 0;
	for (i = 0; i < NWAIT && !err; i++) {
		double t = now();

		err = pc_lock(h, f, 1, 2 * (uint64_t)i, 1, POHMEL_LOCK_UN, 0, 1,
			      NULL);
		if (now() - t > *worst)
			*worst = now() - t;
		sample(tmax);
	}
	return err;
}

/*
 * What m reads until the end of its connection: READ and LOCK replies,
 * whole. false on anything else (broken framing), or if the connection
 * does not end within 20 s.
 */
static bool read_to_end(struct pc *m, int *reads, int *locks)
{
	struct timeval tv = { .tv_sec = 20 };
	bool seen[NREADS] = { false };
	struct whdr h;
	int err;

	*reads = *locks = 0;
	setsockopt(m->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (!(err = pc_recv(m, &h, NULL, 0))) {
		if (!(h.flags & POHMEL_HF_REPLY))
			return false;
		/* READs run side by side: each once, in any order */
		if (h.op == POHMEL_OP_READ && h.tag >= 1000 &&
		    h.tag < 1000 + NREADS && !seen[h.tag - 1000]) {
			seen[h.tag - 1000] = true;
			(*reads)++;
		} else if (h.op == POHMEL_OP_LOCK && !h.status &&
			   h.tag == LOCK_TAG + (uint32_t)*locks) {
			(*locks)++;
		} else {
			return false;
		}
	}
	return err == -ECONNRESET && !strstr(m->err, "timed out") &&
	       !strstr(m->err, "temporarily unavailable");
}

/*
 * The end of an attack on M, a client that stopped reading while n
 * server messages (what, whats: "RECALL", "RECALLs") were due to it from t_first on:
 * a new client is served at once; pohmeld's threads (t0 before, tmax
 * the most seen so far) do not grow with n; M is cut off a lease after
 * t_first, and the log names it.
 */
static void mute_cut(const char *tag, const char *what, const char *whats,
		     int n, const struct pc *m, const char *peer,
		     double t_first, int t0, int tmax)
{
	double v = victim(), t_cut;

	CHECK(v >= 0 && v < LEASE / 2.0, "%s: a new client is served at "
	      "once (%.3f s)", tag, v);
	while (now() < t_first + LEASE / 2.0) {
		sample(&tmax);
		usleep(50000);
	}
	CHECK(t0 > 0 && tmax <= t0 + THREAD_SLACK, "%s: pohmeld's threads: "
	      "%d before, at most %d while M's %d %s wait (one thread per "
	      "%s: %d)", tag, t0, tmax, n, whats, what, t0 + n);
	t_cut = conn_ended(m, LEASE + 15);
	CHECK(t_cut > 0 && t_cut - t_first >= LEASE * 0.9 &&
	      t_cut - t_first <= LEASE + SLACK, "%s: M is cut off %.2f s "
	      "after its first %s was due (lease %d s)", tag,
	      t_cut > 0 ? t_cut - t_first : -1.0, what, LEASE);
	CHECK(log_wait(peer, "grant-lease", SLACK) > 0,
	      "%s: the log names M (%s) and why", tag, peer);
}

/*
 * (1) H holds NWAIT byte-range locks, M waits for each of them and
 * stops reading (its socket full of READ replies). H unlocks them one
 * by one: each grants one of M's waits, whose reply cannot be written.
 */
static void t_lock_waiter(void)
{
	struct pc h, m;
	struct wattr f;
	int t0, tmax, reads, locks;
	double worst, t_first;
	char peer[64];
	uint32_t q;

	CHECK(cl_open(&h, &sp, 0, 0) == 0 &&
	      mkfile(&h, "locks", sizeof(big), &f) == 0,
	      "lock: H creates a 1 MiB file");
	CHECK(cl_open(&m, &sp, 0, 0) == 0 && park_waits(&h, &m, &f.oid),
	      "lock: H holds %d byte-range locks, M waits for each", NWAIT);
	peer_of(&m, peer, sizeof(peer));
	CHECK(stall_reader(&m, &f.oid, &q), "lock: M asks for %d MiB of "
	      "READs and reads nothing (%u bytes queued)", NREADS, q);
	t0 = tmax = threads();
	t_first = now();
	CHECK(unlock_all(&h, &f.oid, &worst, &tmax) == 0,
	      "lock: H unlocks all %d, granting M's waits", NWAIT);
	CHECK(worst < LEASE / 2.0, "lock: H is answered at once (slowest "
	      "unlock %.3f s; lease %d s)", worst, LEASE);
	mute_cut("lock", "LOCK reply", "LOCK replies", NWAIT, &m, peer,
		 t_first, t0, tmax);
	CHECK(stat_of("outbox_cut_stalled") >= 1,
	      "lock: STATS outbox_cut_stalled counts it (%lld)",
	      stat_of("outbox_cut_stalled"));
	CHECK(read_to_end(&m, &reads, &locks) && reads < NREADS,
	      "lock: M then reads whole messages (%d READ, %d LOCK "
	      "replies), then the end of its connection", reads, locks);
	CHECK(pc_ping(&h) == 0, "lock: H still served");
	cl_close(&m);
	cl_close(&h);
}

/*
 * (2) The same with M reading again after a pause shorter than a
 * lease: every READ reply (each once, in any order: pohmeld runs READs
 * side by side) and every LOCK reply (in order) arrives whole, and the
 * connection stays.
 */
static void t_pause(void)
{
	struct timeval tv = { .tv_sec = 20 };
	int reads = 0, locks = 0, other = 0, tmax = 0;
	bool seen[NREADS] = { false };
	char what[64] = "";
	struct pc h, m;
	struct wattr f;
	struct whdr hd;
	double worst;
	char peer[64];
	uint32_t q;

	CHECK(cl_open(&h, &sp, 0, 0) == 0 &&
	      mkfile(&h, "pause", sizeof(big), &f) == 0 &&
	      cl_open(&m, &sp, 0, 0) == 0 && park_waits(&h, &m, &f.oid),
	      "pause: H holds %d locks, M waits for each", NWAIT);
	peer_of(&m, peer, sizeof(peer));
	CHECK(stall_reader(&m, &f.oid, &q), "pause: M stops reading (%u bytes "
	      "queued)", q);
	CHECK(unlock_all(&h, &f.oid, &worst, &tmax) == 0,
	      "pause: H unlocks all %d", NWAIT);
	setsockopt(m.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((reads < NREADS || locks < NWAIT) && !other &&
	       pc_recv(&m, &hd, NULL, 0) == 0) {
		if (hd.op == POHMEL_OP_READ && !hd.status &&
		    hd.tag >= 1000 && hd.tag < 1000 + NREADS &&
		    !seen[hd.tag - 1000]) {
			seen[hd.tag - 1000] = true;
			reads++;
		} else if (hd.op == POHMEL_OP_LOCK && !hd.status &&
			 hd.tag == LOCK_TAG + (uint32_t)locks) {
			locks++;
		} else if (!other++)
			snprintf(what, sizeof(what), ", first: op %u tag %u "
				 "status %u", hd.op, hd.tag, hd.status);
	}
	CHECK(reads == NREADS && locks == NWAIT && !other,
	      "pause: M reads again: %d READ replies (each once) and %d LOCK "
	      "replies (in order), whole (%d other%s)", reads, locks, other,
	      what);
	CHECK(pc_ping(&m) == 0 && !log_has(peer, "cut"),
	      "pause: M's connection stays");
	cl_close(&m);
	cl_close(&h);
}

/*
 * (3) M holds grants on NREC files and stops reading; each file is
 * changed in the export directly, so the notify thread recalls M's
 * grant NREC times.
 */
static void t_local_recalls(void)
{
	struct wattr f[NREC], a, s;
	int t0, tmax, i, ok;
	double t_first;
	char name[32], path[256], peer[64];
	struct pc h, m;
	uint32_t q;

	CHECK(cl_open(&h, &sp, 0, 0) == 0 && gopen(&m, true) == 0 &&
	      (m.features & POHMEL_FEAT_GRANTS), "local: H, and M with grants");
	peer_of(&m, peer, sizeof(peer));
	for (ok = 1, i = 0; i < NREC && ok; i++) {
		snprintf(name, sizeof(name), "held%d", i);
		ok = mkfile(&h, name, 0, &f[i]) == 0 &&
		     pc_getattr(&m, &f[i].oid, &a) == 0 &&
		     a.grant == POHMEL_GRANT_SHARED;
	}
	CHECK(ok, "local: M holds SHARED on %d files", NREC);
	CHECK(mkfile(&h, "stall", sizeof(big), &s) == 0 &&
	      stall_reader(&m, &s.oid, &q), "local: M stops reading (%u "
	      "bytes queued)", q);
	t0 = tmax = threads();
	t_first = now();
	for (ok = 1, i = 0; i < NREC; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/held%d", base, i);
		fd = open(path, O_WRONLY | O_APPEND);
		ok &= fd >= 0 && write(fd, "x", 1) == 1;
		if (fd >= 0)
			close(fd);
		sample(&tmax);
	}
	CHECK(ok, "local: each of the %d files is changed in the export",
	      NREC);
	mute_cut("local", "RECALL", "RECALLs", NREC, &m, peer, t_first, t0,
		 tmax);
	cl_close(&m);
	cl_close(&h);
}

struct reader {
	struct pc *c;
	uint32_t tag;
	uint32_t status;
	double t_done;
	int err;
};

/* Reads c until the reply with tag (its RECALLs auto-acked). */
static void *read_reply(void *arg)
{
	struct reader *r = arg;
	struct whdr h;

	do {
		r->err = pc_recv(r->c, &h, NULL, 0);
	} while (!r->err && h.tag != r->tag);
	r->status = h.status;
	r->t_done = now();
	return NULL;
}

/*
 * (4) M holds f and stops reading. H, a healthy client that holds g,
 * WRITEs f: the request waits for M (a lease). Meanwhile V WRITEs g,
 * which recalls H: H's connection must go on reading, so its ack is
 * seen and V is answered at once, not after M's lease.
 */
static void t_requester(void)
{
	struct reader rd = { 0 };
	struct wattr f, g, a;
	struct pc h, m, v;
	uint8_t b[POHMEL_IO_SIZE + 8];
	double t_w, t_v, dv;
	char peer[64];
	pthread_t th;
	uint32_t q, got, n;

	CHECK(gopen(&h, true) == 0 && gopen(&m, true) == 0 &&
	      gopen(&v, false) == 0, "requester: H and M with grants, V");
	CHECK(mkfile(&h, "f", sizeof(big), &f) == 0 &&
	      mkfile(&h, "g", 0, &g) == 0 &&
	      pc_getattr(&m, &f.oid, &a) == 0 &&
	      a.grant == POHMEL_GRANT_SHARED &&
	      pc_getattr(&h, &g.oid, &a) == 0 &&
	      a.grant == POHMEL_GRANT_SHARED, "requester: M holds f, H holds g");
	peer_of(&m, peer, sizeof(peer));
	CHECK(stall_reader(&m, &f.oid, &q), "requester: M stops reading (%u "
	      "bytes queued)", q);
	h.auto_ack = true;
	n = pc_enc_io(b, &f.oid, 0, 0, 4, 0, "data");
	t_w = now();
	CHECK(pc_send(&h, POHMEL_OP_WRITE, 77, ++h.seq, b, n) == 0,
	      "requester: H WRITEs f (recalls M)");
	rd = (struct reader){ .c = &h, .tag = 77, .err = -1 };
	pthread_create(&th, NULL, read_reply, &rd);
	usleep(300000);
	t_v = now();
	CHECK(pc_write(&v, &g.oid, 0, 0, "v", 1, 0, &got) == 0,
	      "requester: V WRITEs g (recalls H, which acks)");
	dv = now() - t_v;
	CHECK(dv < LEASE / 2.0, "requester: V is answered at once (%.3f s), "
	      "not after M's lease (%d s)", dv, LEASE);
	pthread_join(th, NULL);
	CHECK(!rd.err && rd.status == 0 && rd.t_done - t_w >= LEASE * 0.9 &&
	      rd.t_done - t_w <= LEASE + SLACK, "requester: H's WRITE is "
	      "answered after M's lease (%.2f s)", rd.t_done - t_w);
	/* how soon is t_local_recalls' check; here only that it happens
	 * (a loaded host cut M more than SLACK after the lease) */
	CHECK(conn_ended(&m, LEASE + 15) > 0, "requester: M is cut off");
	cl_close(&v);
	cl_close(&m);
	cl_close(&h);
}

int main(int argc, char **argv)
{
	char conf[64];
	double t0;

	if (argc != 2) {
		fprintf(stderr, "usage: test_mute POHMELD\n");
		return 2;
	}
	server_bin = argv[1];
	snprintf(conf, sizeof(conf), "grant-lease %d\n", LEASE);
	CHECK(start_tmp_server("mute", conf, &sp) == 0, "pohmeld starts");
	if (tap_fail)
		return tap_done();
	memset(big, 'b', sizeof(big));
	t_lock_waiter();
	t_pause();
	t_local_recalls();
	t_requester();
	t0 = now();
	CHECK(stop_server(&sp) == 0, "clean exit 0 on SIGTERM (%.1f s)",
	      now() - t0);
	return finish_base();
}
