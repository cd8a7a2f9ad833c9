// SPDX-License-Identifier: MIT
/*
 * test_grants - coherence grants and RECALL between libpohmel sessions:
 * negotiation, SHARED/EXCL in replies, a write recalls a reader before
 * it is answered, an unacked recall waits out the lease, sessions without
 * grants, two sessions recalling each other, a disconnect, and changes
 * made directly in the export, and a change made between a reading
 * request's look at an object and its grant (POHMELD_TEST_GRANT_HOLD).
 *   test_grants PATH-TO-POHMELD
 * Waits are bounded generously; nothing passes or fails on speed.
 */
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include "integ_lib.h"
#include "tap.h"

#define LEASE_LONG	20	/* main server: acks, never the lease */
#define LEASE_SHORT	1	/* second server: the lease runs out */

static char exp_dir[128], hold_path[160], held_path[170];
static struct srvproc sp, sp2;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int gopen(struct pc *c, const struct srvproc *s, bool grants)
{
	if (!grants)
		return cl_open(c, s, 0, 0);
	if (pc_init(c))
		return -ENOMEM;
	c->want_features = POHMEL_FEAT_BATCH | POHMEL_FEAT_GRANTS;
	if (pc_connect(c, "127.0.0.1", s->port))
		return -1;
	return pc_handshake(c);
}

static int mkfile(struct pc *c, const char *name, struct wattr *a)
{
	return pc_mkobj(c, POHMEL_OP_CREATE, &c->root.oid, name, 0644, 0, 0,
			NULL, a, NULL);
}

/* A WRITE sent without waiting for its reply. */
static int send_write(struct pc *c, const struct woid *o, uint32_t tag)
{
	uint8_t b[POHMEL_IO_SIZE + 8];
	uint32_t n = pc_enc_io(b, o, 0, 0, 4, 0, "data");

	return pc_send(c, POHMEL_OP_WRITE, tag, ++c->seq, b, n);
}

static int send_getattr(struct pc *c, const struct woid *o, uint32_t tag)
{
	uint8_t b[POHMEL_OID_SIZE];

	return pc_send(c, POHMEL_OP_GETATTR, tag, 0, b, pc_enc_oid(b, o));
}

/* The reply with `tag` (skipping others); its attr's grant or -1. */
static int reply_grant(struct pc *c, uint32_t tag, uint32_t *status)
{
	uint8_t r[512];
	struct whdr h;
	struct wattr a;

	do {
		if (pc_recv(c, &h, r, sizeof(r)))
			return -1;
	} while (h.tag != tag);
	*status = h.status;
	if (h.status || h.len < POHMEL_ATTR_SIZE)
		return -1;
	wattr_get(r, &a);
	return (int)a.grant;
}

/* True if the reply with `tag` has not arrived (other replies, such as
 * those to our acks, are read and dropped). */
static bool no_reply(struct pc *c, uint32_t tag)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	uint8_t r[512];
	struct whdr h;

	while (poll(&p, 1, 50) == 1) {
		if (pc_recv(c, &h, r, sizeof(r)) || h.tag == tag)
			return false;
	}
	return true;
}

/* The reply with `tag` within `secs` (others are read and dropped). */
static bool reply_within(struct pc *c, uint32_t tag, double secs,
			 uint32_t *status)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	double end = now_s() + secs;
	uint8_t r[512];
	struct whdr h;

	while (now_s() < end) {
		if (poll(&p, 1, 50) != 1)
			continue;
		if (pc_recv(c, &h, r, sizeof(r)))
			return false;
		if (h.tag == tag) {
			*status = h.status;
			return true;
		}
	}
	return false;
}

static int dirent_grants(void *arg, const char *name, const struct wattr *a,
			 uint64_t cookie)
{
	uint32_t *g = arg;

	(void)name;
	(void)cookie;
	g[a->grant > 2 ? 3 : a->grant]++;
	return 0;
}

static void t_negotiate(void)
{
	struct pc a, p;
	struct pc_recall rc;
	struct wattr f, d, x;
	uint32_t g[4] = { 0 }, gp[4] = { 0 }, st = 1;

	CHECK(gopen(&a, &sp, true) == 0 &&
	      (a.features & POHMEL_FEAT_GRANTS), "FEAT_GRANTS negotiated");
	CHECK(gopen(&p, &sp, false) == 0 &&
	      !(p.features & POHMEL_FEAT_GRANTS), "not without asking");

	/* The session without grants sees GRANT_NONE everywhere. */
	CHECK(pc_mkobj(&p, POHMEL_OP_CREATE, &p.root.oid, "neg", 0644, 0, 0,
		       NULL, &f, &d) == 0 && f.grant == 0 && d.grant == 0,
	      "no grants: CREATE entry reply NONE");
	CHECK(pc_lookup(&p, &p.root.oid, "neg", &x) == 0 && x.grant == 0 &&
	      pc_getattr(&p, &p.root.oid, &x) == 0 && x.grant == 0,
	      "no grants: LOOKUP/GETATTR NONE");
	CHECK(pc_readdir_all(&p, &p.root.oid, dirent_grants, gp) == 0 &&
	      gp[0] > 0 && gp[1] + gp[2] + gp[3] == 0,
	      "no grants: READDIR entries NONE");
	CHECK(pc_write(&p, &f.oid, 0, 0, "p", 1, 0, NULL) == 0 &&
	      pc_getattr(&p, &f.oid, &x) == 0 && x.grant == 0,
	      "no grants: WRITE, then GETATTR NONE");

	CHECK(pc_lookup(&a, &a.root.oid, "neg", &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "LOOKUP SHARED");
	CHECK(pc_getattr(&a, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "GETATTR SHARED");
	CHECK(pc_readdir_all(&a, &a.root.oid, dirent_grants, g) == 0 &&
	      g[1] > 0 && g[0] == 0 && g[2] == 0 && g[3] == 0,
	      "READDIR entries SHARED");
	CHECK(pc_mkobj(&a, POHMEL_OP_MKDIR, &a.root.oid, "negd", 0755, 0, 0,
		       NULL, &x, &d) == 0 && x.grant == POHMEL_GRANT_SHARED &&
	      d.grant == POHMEL_GRANT_SHARED,
	      "MKDIR: object and directory SHARED");
	CHECK(pc_write(&a, &f.oid, 0, 0, "x", 1, 0, NULL) == 0 &&
	      pc_getattr(&a, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_EXCL,
	      "WRITE by the sole holder: EXCL (kept on GETATTR)");

	/* The session without grants still recalls: its read A's EXCL to
	 * SHARED, its write A's SHARED to NONE, each before its reply. */
	CHECK(send_getattr(&p, &f.oid, 51) == 0 &&
	      pc_next_recall(&a, 10000, &rc) == 0 && rc.oid.id == f.oid.id &&
	      rc.to == POHMEL_GRANT_SHARED, "no grants: GETATTR recalls "
	      "A's EXCL to SHARED");
	CHECK(no_reply(&p, 51) && pc_recall_ack(&a, &rc) == 0 &&
	      reply_grant(&p, 51, &st) == 0 && st == 0,
	      "answered NONE after A's ack");
	CHECK(send_write(&p, &f.oid, 52) == 0 &&
	      pc_next_recall(&a, 10000, &rc) == 0 && rc.oid.id == f.oid.id &&
	      rc.to == POHMEL_GRANT_NONE, "no grants: WRITE recalls A to NONE");
	CHECK(no_reply(&p, 52) && pc_recall_ack(&a, &rc) == 0 &&
	      reply_grant(&p, 52, &st) == 0 && st == 0,
	      "answered NONE after A's ack");
	cl_close(&a);
	cl_close(&p);
}

/* Namespace changes recall the directory (and the entry named). */
static void t_namespace(void)
{
	struct pc a, b;
	struct pc_recall rc, rc2;
	struct wattr d, x, t;
	uint32_t g[4] = { 0 }, st = 1;
	uint8_t body[300];
	uint32_t n;

	CHECK(gopen(&a, &sp, true) == 0 && gopen(&b, &sp, false) == 0,
	      "a grant session and one without");
	CHECK(pc_mkobj(&b, POHMEL_OP_MKDIR, &b.root.oid, "ns", 0755, 0, 0,
		       NULL, &d, NULL) == 0 &&
	      pc_mkobj(&b, POHMEL_OP_CREATE, &d.oid, "x", 0644, 0, 0, NULL,
		       &x, NULL) == 0, "B: ns/x");
	CHECK(pc_readdir_all(&a, &d.oid, dirent_grants, g) == 0 && g[1] == 1 &&
	      pc_getattr(&a, &d.oid, &t) == 0 &&
	      t.grant == POHMEL_GRANT_SHARED, "A: SHARED on ns and ns/x");

	n = pc_enc_create(body, &d.oid, 0644, 0, 0, 0, 0, "y", 1, NULL, 0);
	CHECK(pc_send(&b, POHMEL_OP_CREATE, 61, ++b.seq, body, n) == 0 &&
	      pc_next_recall(&a, 10000, &rc) == 0 && rc.oid.id == d.oid.id &&
	      rc.to == POHMEL_GRANT_NONE, "B: CREATE in ns recalls A's ns");
	CHECK(no_reply(&b, 61) && pc_recall_ack(&a, &rc) == 0 &&
	      reply_grant(&b, 61, &st) == 0 && st == 0,
	      "B answered after the ack");

	CHECK(pc_getattr(&a, &d.oid, &t) == 0 && t.grant &&
	      pc_lookup(&a, &d.oid, "x", &t) == 0 && t.grant,
	      "A: SHARED on ns and x again");
	n = pc_enc_name_req(body, &d.oid, "x", 1);
	CHECK(pc_send(&b, POHMEL_OP_UNLINK, 62, ++b.seq, body, n) == 0 &&
	      pc_next_recall(&a, 10000, &rc) == 0 &&
	      pc_next_recall(&a, 10000, &rc2) == 0 &&
	      ((rc.oid.id == d.oid.id && rc2.oid.id == x.oid.id) ||
	       (rc.oid.id == x.oid.id && rc2.oid.id == d.oid.id)),
	      "B: UNLINK ns/x recalls A's ns and x");
	CHECK(no_reply(&b, 62) && pc_recall_ack(&a, &rc) == 0 &&
	      no_reply(&b, 62) && pc_recall_ack(&a, &rc2) == 0 &&
	      reply_grant(&b, 62, &st) == 0 && st == 0,
	      "B answered after both acks");
	cl_close(&a);
	cl_close(&b);
}

/* B's requests behind one that waits run in the order B sent them. */
static void t_order(void)
{
	struct pc a, b;
	struct pc_recall rc;
	struct wattr f, x;
	uint8_t body[POHMEL_IO_SIZE + 8], r[512];
	uint32_t n, order[3], i;
	struct whdr h;
	char data[8] = "";

	CHECK(gopen(&a, &sp, true) == 0 && gopen(&b, &sp, true) == 0 &&
	      mkfile(&a, "ord", &f) == 0 && pc_getattr(&a, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "A: SHARED");
	n = pc_enc_io(body, &f.oid, 0, 0, 4, 0, "1111");
	CHECK(pc_send(&b, POHMEL_OP_WRITE, 201, ++b.seq, body, n) == 0,
	      "B: WRITE 1111");
	CHECK(pc_next_recall(&a, 10000, &rc) == 0, "A: RECALL");
	n = pc_enc_io(body, &f.oid, 0, 0, 4, 0, "2222");
	CHECK(pc_send(&b, POHMEL_OP_WRITE, 202, ++b.seq, body, n) == 0 &&
	      pc_send(&b, POHMEL_OP_READ, 203, 0, body,
		      pc_enc_io(body, &f.oid, 0, 0, 4, 0, NULL)) == 0,
	      "B: WRITE 2222 and READ sent behind it");
	CHECK(no_reply(&b, 201) && pc_recall_ack(&a, &rc) == 0, "A: ack");
	for (i = 0; i < 3; i++) {
		if (pc_recv(&b, &h, r, sizeof(r)))
			break;
		order[i] = h.tag;
		if (h.tag == 203 && h.len >= POHMEL_IO_REPLY_SIZE + 4)
			memcpy(data, r + POHMEL_IO_REPLY_SIZE, 4);
	}
	CHECK(i == 3 && order[0] == 201 && order[1] == 202 &&
	      order[2] == 203 && !strcmp(data, "2222"),
	      "B: answered in order, READ sees the second WRITE");
	cl_close(&a);
	cl_close(&b);
}

/*
 * B's WRITE to f waits for A's ack; B's requests on other objects must
 * not wait with it (issue 15: a client's unrelated requests, its own
 * recall work among them, sat behind another client's ack until leases
 * expired), while a request on f still keeps its place behind the WRITE.
 */
static void t_unrelated(void)
{
	uint8_t body[POHMEL_IO_SIZE + 8], r[512];
	struct wattr f, g, x;
	struct pc_recall rc;
	struct pc a, b;
	uint32_t st = 0, i, order[2];
	struct whdr h;
	double t0;

	CHECK(gopen(&a, &sp, true) == 0 && gopen(&b, &sp, true) == 0 &&
	      mkfile(&a, "un1", &f) == 0 && mkfile(&b, "un2", &g) == 0 &&
	      pc_getattr(&a, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "unrelated: A holds f SHARED");
	CHECK(send_write(&b, &f.oid, 301) == 0 &&
	      pc_next_recall(&a, 10000, &rc) == 0,
	      "unrelated: B's WRITE to f recalls A");
	t0 = now_s();
	CHECK(pc_send(&b, POHMEL_OP_READ, 303, 0, body,
		      pc_enc_io(body, &f.oid, 0, 0, 4, 0, NULL)) == 0 &&
	      send_getattr(&b, &g.oid, 302) == 0,
	      "unrelated: B sends a READ of f, then a GETATTR of g");
	CHECK(reply_within(&b, 302, LEASE_LONG / 4, &st) && st == 0,
	      "unrelated: B's GETATTR of g answered while f's recall waits (%.2f s)",
	      now_s() - t0);
	CHECK(no_reply(&b, 301) && no_reply(&b, 303),
	      "unrelated: the WRITE and the READ of f still wait");
	CHECK(pc_recall_ack(&a, &rc) == 0, "unrelated: A acks");
	for (i = 0; i < 2; i++) {
		if (pc_recv(&b, &h, r, sizeof(r)))
			break;
		order[i] = h.tag;
	}
	CHECK(i == 2 && order[0] == 301 && order[1] == 303,
	      "unrelated: then the WRITE and the READ of f, in order");
	cl_close(&a);
	cl_close(&b);
}

/* A reads, B writes: A is recalled before B is answered. */
static void t_recall_order(void)
{
	struct pc a, b;
	struct pc_recall rc;
	struct wattr f, x;
	uint32_t st = 0;

	CHECK(gopen(&a, &sp, true) == 0 && gopen(&b, &sp, true) == 0,
	      "two grant sessions");
	CHECK(mkfile(&a, "ro", &f) == 0 && pc_getattr(&a, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "A: SHARED");
	CHECK(send_write(&b, &f.oid, 77) == 0, "B: WRITE sent");
	CHECK(pc_next_recall(&a, 10000, &rc) == 0 &&
	      rc.oid.id == f.oid.id && rc.to == POHMEL_GRANT_NONE &&
	      rc.recall_id != 0, "A: RECALL to NONE");
	CHECK(no_reply(&b, 77), "B: no reply before A acked");
	CHECK(pc_recall_ack(&a, &rc) == 0, "A: RECALL_ACK");
	CHECK(reply_grant(&b, 77, &st) == POHMEL_GRANT_EXCL && st == 0,
	      "B: reply after the ack, EXCL");

	/* A reads while B holds EXCL: B is recalled to SHARED. */
	CHECK(send_getattr(&a, &f.oid, 78) == 0, "A: GETATTR sent");
	CHECK(pc_next_recall(&b, 10000, &rc) == 0 &&
	      rc.to == POHMEL_GRANT_SHARED, "B: RECALL to SHARED");
	CHECK(no_reply(&a, 78), "A: no reply before B acked");
	CHECK(pc_recall_ack(&b, &rc) == 0 &&
	      reply_grant(&a, 78, &st) == POHMEL_GRANT_SHARED,
	      "A: answered SHARED after B's ack");
	CHECK(pc_getattr(&b, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "B: now SHARED");
	cl_close(&a);
	cl_close(&b);
}

/*
 * B holds EXCL with data to flush when A's GETATTR recalls it to SHARED.
 * B's flush (WRITEs sent before its ack, answered SHARED as the recall
 * caps them) must not count as the ack: A is answered only after it, or
 * A would read a size the rest of the flush is still changing.
 */
static void t_flush_before_ack(void)
{
	struct pc a, b, c, p;
	struct pc_recall rc, rc2;
	struct wattr f, g, x;
	uint32_t st = 0;

	/* created without grants, so that no directory grant is recalled */
	CHECK(gopen(&p, &sp, false) == 0 && mkfile(&p, "fl", &f) == 0 &&
	      mkfile(&p, "fl2", &g) == 0, "flush: two files");
	cl_close(&p);
	CHECK(gopen(&a, &sp, true) == 0 && gopen(&b, &sp, true) == 0 &&
	      gopen(&c, &sp, true) == 0, "flush: three grant sessions");
	CHECK(send_write(&b, &f.oid, 80) == 0 &&
	      reply_grant(&b, 80, &st) == POHMEL_GRANT_EXCL,
	      "flush: B holds EXCL");
	CHECK(pc_getattr(&c, &g.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "flush: C holds SHARED on another file");
	CHECK(send_getattr(&a, &f.oid, 81) == 0 &&
	      pc_next_recall(&b, 10000, &rc) == 0 &&
	      rc.to == POHMEL_GRANT_SHARED, "flush: B recalled to SHARED");
	CHECK(send_write(&b, &f.oid, 82) == 0 &&
	      reply_grant(&b, 82, &st) == POHMEL_GRANT_SHARED && st == 0,
	      "flush: B's WRITE before its ack is answered SHARED");
	/* an unrelated ack wakes every waiter: A's must go on waiting */
	CHECK(send_write(&b, &g.oid, 83) == 0 &&
	      pc_next_recall(&c, 10000, &rc2) == 0 &&
	      pc_recall_ack(&c, &rc2) == 0 &&
	      reply_grant(&b, 83, &st) == POHMEL_GRANT_EXCL,
	      "flush: C acked a recall of the other file");
	CHECK(no_reply(&a, 81), "flush: A not answered before B acked");
	CHECK(pc_recall_ack(&b, &rc) == 0 &&
	      reply_grant(&a, 81, &st) == POHMEL_GRANT_SHARED,
	      "flush: A answered SHARED after B's ack");
	CHECK(pc_getattr(&b, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "flush: B now SHARED");
	cl_close(&a);
	cl_close(&b);
	cl_close(&c);
}

/*
 * A never acks: B is answered once the lease ran out. That B's answer
 * came by the lease's end (not early, not by an ack) is observed: the
 * server counts the grant it revoked for the unacked RECALL.
 */
static void t_lease(void)
{
	struct pc a, b;
	struct pc_recall rc;
	struct wattr f, x;
	uint32_t st = 0;
	double t0, dt;
	long e0, e1;

	CHECK(gopen(&a, &sp2, true) == 0 && gopen(&b, &sp2, true) == 0,
	      "two grant sessions (lease 1 s)");
	CHECK(mkfile(&a, "ls", &f) == 0 && pc_getattr(&a, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "A: SHARED");
	e0 = srv_stat(&b, "grants_lease_expired");
	t0 = now_s();
	CHECK(send_write(&b, &f.oid, 90) == 0 &&
	      pc_next_recall(&a, 10000, &rc) == 0, "A: RECALL, not acked");
	CHECK(reply_grant(&b, 90, &st) == POHMEL_GRANT_EXCL && st == 0,
	      "B: answered anyway, EXCL");
	dt = now_s() - t0;
	e1 = srv_stat(&b, "grants_lease_expired");
	CHECK(e0 >= 0 && e1 == e0 + 1,
	      "B was answered by the lease's end: one grant revoked unacked "
	      "(grants_lease_expired %ld -> %ld)", e0, e1);
	CHECK(dt < 15, "within the lease and a margin (%.2f s)", dt);
	CHECK(pc_recall_ack(&a, &rc) == 0 && pc_ping(&a) == 0,
	      "a late ack is harmless");
	cl_close(&a);
	cl_close(&b);
}

/* A stops reading (its socket full of READ replies): the RECALL cannot
 * be sent; after a lease A's connection is cut and B is answered. */
static void t_stuck(void)
{
	static char big[1 << 20];
	struct pollfd pf;
	struct pc a, b;
	struct wattr f, x;
	uint32_t st = 1, i, n = 0;

	CHECK(gopen(&a, &sp2, true) == 0 && gopen(&b, &sp2, true) == 0 &&
	      mkfile(&a, "stuck", &f) == 0 &&
	      pc_write(&a, &f.oid, 0, 0, big, sizeof(big), 0, NULL) == 0 &&
	      pc_getattr(&b, &f.oid, &x) == 0 &&
	      pc_getattr(&a, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "A: SHARED on a 1 MiB file");
	CHECK(stall_reader(&a, &f.oid, &n),
	      "A: 64 MiB of READs asked for and none read: its receive queue is full (%u bytes)", n);
	CHECK(send_write(&b, &f.oid, 95) == 0, "B: WRITE sent");
	pf.fd = b.fd;
	pf.events = POLLIN;
	CHECK(poll(&pf, 1, 30000) == 1 && reply_grant(&b, 95, &st) >= 0 &&
	      st == 0, "B: answered");
	for (i = 0; i < 64; i++) {
		struct whdr h;

		if (pc_recv(&a, &h, NULL, 0))
			break;
	}
	CHECK(i < 64, "A's connection was cut (after %u of 64 replies)", i);
	cl_close(&a);
	cl_close(&b);
}

struct mut {
	struct pc *c;
	uint32_t tag;
	int grant;
	uint32_t st;
};

static void *mut_wait(void *arg)
{
	struct mut *m = arg;

	m->grant = reply_grant(m->c, m->tag, &m->st);
	return NULL;
}

/* A holds x, B holds y; A writes y while B writes x. */
static void t_mutual(void)
{
	struct pc a, b;
	struct wattr fx, fy, t;
	struct mut ma = { &a, 101, -1, 1 }, mb = { &b, 102, -1, 1 };
	pthread_t ta, tb;
	double t0, dt;
	long e0, e1;

	CHECK(gopen(&a, &sp, true) == 0 && gopen(&b, &sp, true) == 0,
	      "two grant sessions");
	CHECK(mkfile(&a, "mx", &fx) == 0 && mkfile(&a, "my", &fy) == 0 &&
	      pc_getattr(&a, &fx.oid, &t) == 0 && t.grant &&
	      pc_getattr(&b, &fy.oid, &t) == 0 && t.grant,
	      "A holds mx, B holds my");
	a.auto_ack = b.auto_ack = true;
	e0 = srv_stat(&a, "grants_lease_expired");
	t0 = now_s();
	CHECK(send_write(&a, &fy.oid, 101) == 0 &&
	      send_write(&b, &fx.oid, 102) == 0, "both WRITEs in flight");
	pthread_create(&ta, NULL, mut_wait, &ma);
	pthread_create(&tb, NULL, mut_wait, &mb);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	dt = now_s() - t0;
	CHECK(ma.st == 0 && mb.st == 0 && ma.grant == POHMEL_GRANT_EXCL &&
	      mb.grant == POHMEL_GRANT_EXCL, "both complete, each EXCL");
	e1 = srv_stat(&a, "grants_lease_expired");
	CHECK(a.recalls_seen == 1 && b.recalls_seen == 1 && e0 >= 0 &&
	      e1 == e0 && dt < LEASE_LONG / 2,
	      "by acks, not by the lease (no grant revoked unacked: "
	      "grants_lease_expired %ld -> %ld; %.2f s)", e0, e1, dt);
	cl_close(&a);
	cl_close(&b);
}

/* A disconnects holding a grant: B's write does not wait for it. */
static void t_disconnect(void)
{
	struct pc a, b;
	struct wattr f, x;
	double t0, dt;

	CHECK(gopen(&a, &sp, true) == 0 && gopen(&b, &sp, true) == 0 &&
	      mkfile(&a, "dc", &f) == 0 && pc_getattr(&a, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "A: SHARED");
	cl_close(&a);
	usleep(200000);	/* let pohmeld see the EOF; no bound depends on it */
	t0 = now_s();
	CHECK(pc_write(&b, &f.oid, 0, 0, "z", 1, 0, NULL) == 0,
	      "B: WRITE");
	dt = now_s() - t0;
	CHECK(dt < LEASE_LONG / 2, "not delayed by A's old grant (%.2f s)", dt);
	cl_close(&b);
}

static int local_write(const char *rel, const char *text)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/%s", exp_dir, rel);
	return write_file(p, text);
}

/* Changes made in the export directly: recalls within the bound. */
static void t_local(void)
{
	struct pc a;
	struct pc_recall rc;
	struct wattr f, d, m, x;
	uint32_t g[4] = { 0 };
	char p[300];
	double t0, dt;

	CHECK(gopen(&a, &sp, true) == 0 && mkfile(&a, "lc", &f) == 0 &&
	      pc_getattr(&a, &f.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "A: SHARED on a file");
	CHECK(mkfile(&a, "lc.mark", &m) == 0 && pc_getattr(&a, &m.oid, &x) == 0 &&
	      x.grant, "A: a grant on a marker file");
	t0 = now_s();
	CHECK(local_write("lc", "local\n") == 0, "local write");
	CHECK(pc_next_recall(&a, 10000, &rc) == 0 && rc.oid.id == f.oid.id &&
	      rc.to == POHMEL_GRANT_NONE, "A: RECALL of the file");
	dt = now_s() - t0;
	CHECK(dt < 10, "recall %.3f s after the change (documented < 1 s)",
	      dt);
	CHECK(pc_recall_ack(&a, &rc) == 0 && pc_ping(&a) == 0, "A: ack");

	CHECK(pc_mkobj(&a, POHMEL_OP_MKDIR, &a.root.oid, "ld", 0755, 0, 0,
		       NULL, &d, NULL) == 0 &&
	      pc_readdir_all(&a, &d.oid, dirent_grants, g) == 0 &&
	      pc_getattr(&a, &d.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "A: SHARED on a directory");
	snprintf(p, sizeof(p), "%s/ld/new", exp_dir);
	CHECK(write_file(p, "") == 0, "local create inside it");
	CHECK(pc_next_recall(&a, 10000, &rc) == 0 && rc.oid.id == d.oid.id,
	      "A: RECALL of the directory");
	CHECK(pc_recall_ack(&a, &rc) == 0 && pc_ping(&a) == 0 &&
	      a.qlen == 0, "A: ack; no other recall");

	/* pohmeld's own changes are not taken for local ones. */
	CHECK(pc_write(&a, &f.oid, 0, 0, "own", 3, 0, NULL) == 0 &&
	      pc_getattr(&a, &f.oid, &x) == 0 && x.grant == POHMEL_GRANT_EXCL,
	      "A: EXCL after its own WRITE");
	CHECK(pc_write(&a, &f.oid, 0, 3, "own", 3, 0, NULL) == 0 &&
	      pc_setattr(&a, &f.oid, POHMEL_SET_MODE, 0600, 0, 0, 0, NULL,
			 NULL, &x) == 0 && x.grant == POHMEL_GRANT_EXCL,
	      "A: EXCL after another WRITE and a SETATTR");
	/*
	 * Observed, not waited for: the watch events come in order, so a
	 * recall caused by those writes would come before the one a later
	 * change in the export causes.
	 */
	CHECK(local_write("lc.mark", "mark\n") == 0 &&
	      pc_next_recall(&a, 10000, &rc) == 0 && rc.oid.id == m.oid.id,
	      "no recall for pohmeld's own write: the first recall is the "
	      "one for a later local change");
	CHECK(pc_recall_ack(&a, &rc) == 0 && pc_ping(&a) == 0, "A: ack");
	cl_close(&a);
}

/*
 * The reply with `tag`, waited for at most 30 s: its status, its attr
 * (the first in the payload) and, for a READ, up to dcap bytes of data.
 */
static int reply_attr(struct pc *c, uint32_t tag, struct wattr *a,
		      char *data, uint32_t dcap, uint32_t *status)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	uint8_t r[512];
	struct whdr h;
	uint32_t n;

	do {
		if (poll(&p, 1, 30000) != 1 || pc_recv(c, &h, r, sizeof(r)))
			return -1;
	} while (h.tag != tag);
	*status = h.status;
	if (h.status || h.len < POHMEL_ATTR_SIZE)
		return -1;
	wattr_get(r, a);
	if (data && h.len >= POHMEL_IO_REPLY_SIZE) {
		n = get32(r + POHMEL_ATTR_SIZE);
		if (n > dcap - 1 || POHMEL_IO_REPLY_SIZE + n > h.len)
			return -1;
		memcpy(data, r + POHMEL_IO_REPLY_SIZE, n);
		data[n] = 0;
	}
	return 0;
}

/*
 * The READDIR reply with `tag`: the directory's attr in *a; returns the
 * number of entries, or -1. With c NULL: the number of the last one.
 */
static int readdir_reply(struct pc *c, uint32_t tag, struct wattr *a,
			 uint32_t *status)
{
	static uint8_t r[65536];
	static int last = -1;
	struct pollfd p;
	struct whdr h;

	if (!c)
		return last;
	p.fd = c->fd;
	p.events = POLLIN;
	last = -1;
	do {
		if (poll(&p, 1, 30000) != 1 || pc_recv(c, &h, r, sizeof(r)))
			return -1;
	} while (h.tag != tag);
	*status = h.status;
	if (h.status || h.len < POHMEL_READDIR_REPLY_SIZE)
		return -1;
	wattr_get(r, a);
	last = (int)get32(r + POHMEL_ATTR_SIZE);
	return last;
}

/* Hold pohmeld's reading requests before their grant; true once one
 * waits there (bounded: 30 s). */
static void hold_on(void)
{
	unlink(held_path);
	if (write_file(hold_path, ""))
		printf("# cannot make %s\n", hold_path);
}

static bool held(void)
{
	int i;

	for (i = 0; i < 3000; i++) {
		if (access(held_path, F_OK) == 0)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * While R is held before its grant: W (with grants) writes the file, R
 * holding nothing, so W recalls nobody and is the sole holder (EXCL);
 * then P (no grants) reads it, which recalls W to SHARED. So the file
 * stays watched and W's in-flight mark is gone when R goes on: nothing
 * but the fix can tell R's grant from a fresh one.
 */
static bool write_meanwhile(struct pc *w, struct pc *p, const struct woid *o,
			    uint32_t tag)
{
	struct pc_recall rc;
	struct wattr x;
	uint32_t st = 1;

	return send_write(w, o, tag) == 0 &&
	       reply_attr(w, tag, &x, NULL, 0, &st) == 0 && st == 0 &&
	       x.grant == POHMEL_GRANT_EXCL &&
	       send_getattr(p, o, tag + 1) == 0 &&
	       pc_next_recall(w, 10000, &rc) == 0 &&
	       rc.to == POHMEL_GRANT_SHARED && pc_recall_ack(w, &rc) == 0 &&
	       reply_attr(p, tag + 1, &x, NULL, 0, &st) == 0 && st == 0;
}

/*
 * Between R's look at a file (its attrs and data) and R's grant, the
 * file is changed: by W, whose request ran wholly in that window (R
 * held nothing, so nobody was recalled, and W's in-flight mark is gone
 * by R's grant), or locally. A SHARED grant then would let R serve the
 * old state with no RECALL coming. R must be given NONE, or the grant
 * must come with the change.
 */
static void t_race(void)
{
	struct pc r, w, p, c;
	struct pc_recall rc;
	struct wattr f1, f2, f3, x, after;
	uint8_t body[POHMEL_IO_SIZE + 8];
	uint32_t st = 1;
	char data[64] = "";

	CHECK(gopen(&r, &sp, true) == 0 && gopen(&w, &sp, true) == 0 &&
	      gopen(&c, &sp, true) == 0 && gopen(&p, &sp, false) == 0,
	      "race: R, W and C with grants, P without");
	CHECK(mkfile(&p, "race1", &f1) == 0 && mkfile(&p, "race2", &f2) == 0 &&
	      mkfile(&p, "race3", &f3) == 0 &&
	      pc_write(&p, &f1.oid, 0, 0, "old!", 4, 0, NULL) == 0 &&
	      pc_write(&p, &f2.oid, 0, 0, "old!", 4, 0, NULL) == 0 &&
	      pc_write(&p, &f3.oid, 0, 0, "old!", 4, 0, NULL) == 0,
	      "race: P made three files (nobody holds them)");

	/* GETATTR: the attrs */
	hold_on();
	CHECK(send_getattr(&r, &f1.oid, 301) == 0 && held(),
	      "race: R's GETATTR waits before its grant");
	CHECK(write_meanwhile(&w, &p, &f1.oid, 302),
	      "race: meanwhile W's WRITE answered EXCL (R holds nothing), "
	      "then recalled to SHARED by P's GETATTR");
	CHECK(pc_getattr(&p, &f1.oid, &after) == 0, "race: P's GETATTR");
	unlink(hold_path);
	CHECK(reply_attr(&r, 301, &x, NULL, 0, &st) == 0 && st == 0,
	      "race: R's GETATTR answered");
	CHECK(x.grant == POHMEL_GRANT_NONE || x.change == after.change,
	      "race: GETATTR not granted on what W changed (grant %u, "
	      "change %s)", x.grant, x.change == after.change ? "new" : "old");
	CHECK(pc_getattr(&r, &f1.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED && x.change == after.change,
	      "race: R's next GETATTR: SHARED, W's change");

	/* READ: the data too */
	hold_on();
	CHECK(pc_send(&r, POHMEL_OP_READ, 311, 0, body,
		      pc_enc_io(body, &f2.oid, 0, 0, 16, 0, NULL)) == 0 &&
	      held(), "race: R's READ waits before its grant");
	CHECK(write_meanwhile(&w, &p, &f2.oid, 312),
	      "race: meanwhile W's WRITE (\"data\") answered, W now SHARED");
	unlink(hold_path);
	CHECK(reply_attr(&r, 311, &x, data, sizeof(data), &st) == 0 &&
	      st == 0, "race: R's READ answered (\"%s\")", data);
	CHECK(x.grant == POHMEL_GRANT_NONE || !strcmp(data, "data"),
	      "race: READ not granted on the data W replaced (grant %u)",
	      x.grant);

	/* A local change of a file C holds (so pohmeld watches it) */
	CHECK(pc_getattr(&c, &f3.oid, &x) == 0 &&
	      x.grant == POHMEL_GRANT_SHARED, "race: C holds the third file");
	hold_on();
	CHECK(send_getattr(&r, &f3.oid, 321) == 0 && held(),
	      "race: R's GETATTR waits before its grant");
	CHECK(local_write("race3", "local change\n") == 0 &&
	      pc_next_recall(&c, 10000, &rc) == 0 && rc.oid.id == f3.oid.id,
	      "race: local write; C recalled (pohmeld saw it)");
	CHECK(pc_getattr(&p, &f3.oid, &after) == 0 && after.size == 13,
	      "race: P's GETATTR");
	unlink(hold_path);
	CHECK(reply_attr(&r, 321, &x, NULL, 0, &st) == 0 && st == 0,
	      "race: R's GETATTR answered");
	CHECK(x.grant == POHMEL_GRANT_NONE || x.change == after.change,
	      "race: GETATTR not granted on the state before the local "
	      "write (grant %u, size %llu)", x.grant,
	      (unsigned long long)x.size);
	CHECK(pc_recall_ack(&c, &rc) == 0 && pc_ping(&c) == 0, "race: C acks");

	/*
	 * READDIR: the listing is read before the directory's attrs. R is
	 * held at its first entry's grant (listing read); W creates an
	 * entry (W then holds the directory SHARED: it stays watched).
	 * The directory's attrs, taken after that, are W's: only the
	 * listing is stale, and the grant must not cover it.
	 */
	CHECK(pc_mkobj(&p, POHMEL_OP_MKDIR, &p.root.oid, "raced", 0755, 0, 0,
		       NULL, &f1, NULL) == 0 &&
	      pc_mkobj(&p, POHMEL_OP_CREATE, &f1.oid, "a", 0644, 0, 0, NULL,
		       &x, NULL) == 0, "race: P made raced/a");
	hold_on();
	CHECK(pc_send(&r, POHMEL_OP_READDIR, 331, 0, body,
		      pc_enc_readdir(body, &f1.oid, 0, 65536)) == 0 &&
	      held(), "race: R's READDIR waits before its first grant");
	CHECK(pc_mkobj(&w, POHMEL_OP_CREATE, &f1.oid, "b", 0644, 0, 0, NULL,
		       &x, &after) == 0 && after.grant == POHMEL_GRANT_SHARED,
	      "race: meanwhile W creates raced/b, holds raced SHARED");
	unlink(hold_path);
	CHECK(readdir_reply(&r, 331, &x, &st) >= 0 && st == 0,
	      "race: R's READDIR answered (%d entries)",
	      readdir_reply(NULL, 0, NULL, NULL));
	CHECK(x.grant == POHMEL_GRANT_NONE ||
	      readdir_reply(NULL, 0, NULL, NULL) == 2,
	      "race: READDIR: directory not granted on the listing before W's "
	      "CREATE (grant %u, %s attrs)", x.grant,
	      x.change == after.change ? "new" : "old");
	unlink(held_path);
	cl_close(&r);
	cl_close(&w);
	cl_close(&p);
	cl_close(&c);
}

/* STATS' "name N" line, or -1. */

static int release(struct pc *c, const struct woid *o, uint32_t n)
{
	uint8_t b[(POHMEL_RELEASE_MAX + 1) * POHMEL_OID_SIZE];
	uint32_t i, k = 0;

	for (i = 0; i < n; i++)
		k += pc_enc_oid(b + k, o);
	return pc_call(c, POHMEL_OP_RELEASE, b, k, NULL, 0, NULL);
}

/* A gives grants back: no recall for them, a pending one counts as acked,
 * a grant got after the RELEASE stands; bad lengths drop the connection. */
static void t_release(void)
{
	struct pc a, b, x;
	struct pc_recall rc;
	struct wattr f, g, t;
	uint32_t st = 1;
	long h0, h1, w1, e0, e1;
	double t0, dt;

	CHECK(gopen(&a, &sp, true) == 0 && gopen(&b, &sp, true) == 0 &&
	      !(a.features & POHMEL_FEAT_RELEASE), "RELEASE not without asking");
	cl_close(&a);
	CHECK(pc_init(&a) == 0 && (a.want_features = POHMEL_FEAT_GRANTS |
				   POHMEL_FEAT_RELEASE) &&
	      pc_connect(&a, "127.0.0.1", sp.port) == 0 &&
	      pc_handshake(&a) == 0 && (a.features & POHMEL_FEAT_RELEASE),
	      "FEAT_RELEASE negotiated");
	CHECK(mkfile(&b, "rl1", &f) == 0 && mkfile(&b, "rl2", &g) == 0 &&
	      pc_getattr(&a, &f.oid, &t) == 0 && t.grant &&
	      pc_getattr(&a, &g.oid, &t) == 0 && t.grant,
	      "A holds rl1 and rl2");
	h0 = srv_stat(&b, "grants");
	CHECK(release(&a, &f.oid, 1) == 0, "RELEASE rl1: empty reply");
	h1 = srv_stat(&b, "grants");
	CHECK(h0 > 0 && h1 == h0 - 1, "the server holds one grant less (%ld, then %ld)", h0, h1);
	CHECK(pc_write(&b, &f.oid, 0, 0, "b", 1, 0, NULL) == 0 &&
	      pc_next_recall(&a, 300, &rc) == -ETIMEDOUT,
	      "B writes rl1: no RECALL to A");

	/* a RECALL pending: the RELEASE acks it */
	e0 = srv_stat(&b, "grants_lease_expired");
	t0 = now_s();
	CHECK(send_write(&b, &g.oid, 120) == 0 &&
	      pc_next_recall(&a, 10000, &rc) == 0 && rc.oid.id == g.oid.id,
	      "B writes rl2: RECALL to A");
	CHECK(no_reply(&b, 120), "B waits for A");
	CHECK(release(&a, &g.oid, 1) == 0 && reply_grant(&b, 120, &st) >= 0 &&
	      st == 0, "A releases rl2 instead of acking: B answered");
	dt = now_s() - t0;
	e1 = srv_stat(&b, "grants_lease_expired");
	CHECK(e0 >= 0 && e1 == e0 && dt < LEASE_LONG / 2,
	      "by the RELEASE, not the lease (grants_lease_expired %ld -> %ld; "
	      "%.2f s)", e0, e1, dt);
	w1 = srv_stat(&b, "watches");
	CHECK(w1 >= 0, "STATS reports watches (%ld)", w1);

	/* a grant got after the RELEASE (same connection, in order) stands */
	CHECK(pc_getattr(&a, &f.oid, &t) == 0 && t.grant &&
	      release(&a, &f.oid, 1) == 0 &&
	      pc_getattr(&a, &f.oid, &t) == 0 &&
	      t.grant == POHMEL_GRANT_SHARED, "GETATTR, RELEASE, GETATTR: SHARED");
	CHECK(send_write(&b, &f.oid, 121) == 0 &&
	      pc_next_recall(&a, 10000, &rc) == 0 && rc.oid.id == f.oid.id &&
	      pc_recall_ack(&a, &rc) == 0 && reply_grant(&b, 121, &st) >= 0 &&
	      st == 0, "so B's write recalls it");
	CHECK(release(&a, &f.oid, POHMEL_RELEASE_MAX) == 0,
	      "RELEASE of %d oids (not held: nothing to do)", POHMEL_RELEASE_MAX);

	/* malformed: the connection is dropped */
	CHECK(gopen(&x, &sp, true) == 0, "C: grant session");
	CHECK(release(&x, &f.oid, POHMEL_RELEASE_MAX + 1) != 0 &&
	      pc_ping(&x) != 0, "RELEASE of %d oids: dropped", POHMEL_RELEASE_MAX + 1);
	cl_close(&x);
	CHECK(gopen(&x, &sp, true) == 0 &&
	      pc_call(&x, POHMEL_OP_RELEASE, "12345678", 8, NULL, 0, NULL) != 0 &&
	      pc_ping(&x) != 0, "RELEASE of 8 bytes: dropped");
	cl_close(&x);
	CHECK(gopen(&x, &sp, true) == 0 &&
	      pc_call(&x, POHMEL_OP_RELEASE, NULL, 0, NULL, 0, NULL) != 0 &&
	      pc_ping(&x) != 0, "empty RELEASE: dropped");
	cl_close(&x);
	CHECK(gopen(&x, &sp, false) == 0 && release(&x, &g.oid, 1) == 0 &&
	      pc_ping(&x) == 0, "RELEASE without grants: harmless");
	cl_close(&x);
	cl_close(&a);
	cl_close(&b);
}

int main(int argc, char **argv)
{
	char conf[1024];
	int setup_err;

	setup_err = setup_base(argc, argv, "grants", exp_dir, sizeof(exp_dir));
	if (setup_err)
		return setup_err;
	snprintf(conf, sizeof(conf),
		 "export / %s rw no_root_squash\nstate-dir %s/state\n"
		 "key-file none\ngrant-lease %d\n", exp_dir, base, LEASE_LONG);
	snprintf(hold_path, sizeof(hold_path), "%s/hold", base);
	snprintf(held_path, sizeof(held_path), "%s.held", hold_path);
	setenv("POHMELD_TEST_GRANT_HOLD", hold_path, 1);
	CHECK(start_server("grants", conf, &sp) == 0, "pohmeld starts");
	unsetenv("POHMELD_TEST_GRANT_HOLD");
	snprintf(conf, sizeof(conf),
		 "export / %s rw no_root_squash\nstate-dir %s/state2\n"
		 "key-file none\ngrant-lease %d\n", exp_dir, base,
		 LEASE_SHORT);
	CHECK(start_server("grants2", conf, &sp2) == 0,
	      "pohmeld (short lease) starts");
	if (tap_fail)
		return tap_done();
	t_negotiate();
	t_recall_order();
	t_flush_before_ack();
	t_namespace();
	t_order();
	t_unrelated();
	t_lease();
	t_stuck();
	t_mutual();
	t_disconnect();
	t_local();
	t_race();
	t_release();
	CHECK(stop_server(&sp) == 0 && stop_server(&sp2) == 0,
	      "SIGTERM: clean exits");
	return finish_base();
}
