// SPDX-License-Identifier: MIT
/*
 * test_forget - a removal that takes what the client gave up with it
 * (POHMEL_FEAT_FORGET, protocol 1.4: POHMEL_REMOVE_CLOSE and _RELEASE):
 *   - negotiated only when asked for; the flags without it: EINVAL,
 *     nothing removed;
 *   - UNLINK with the client's idle handle and its grant: the handle is
 *     closed (its fd gone: handle_fds; using it: EBADF), the grant ended
 *     (grants), and no RECALL comes to the remover for its own removal,
 *     where UNLINK followed by CLOSE drew one (the last fd's close was
 *     taken for a local change); RMDIR with RELEASE likewise;
 *   - a removal that fails (ENOENT) closes and releases nothing;
 *   - a listed handle of another object, or not open, is skipped;
 *   - another holder is still recalled before the removal;
 *   - malformed: unknown flags, handles without CLOSE, more than
 *     POHMEL_REMOVE_HANDLES_MAX, flags on LOOKUP: EINVAL; a length that
 *     does not match: the connection is dropped.
 *   test_forget POHMELD
 */
#include <sys/stat.h>
#include "integ_lib.h"

static struct srvproc sp;

#define FEATS	(POHMEL_FEAT_GRANTS | POHMEL_FEAT_RELEASE | POHMEL_FEAT_FORGET)

static int gopen(struct pc *c, uint64_t feats)
{
	if (pc_init(c))
		return -ENOMEM;
	c->want_features = feats;
	if (pc_connect(c, "127.0.0.1", sp.port))
		return -1;
	return pc_handshake(c);
}

/* UNLINK or RMDIR of dir/name, giving up obj's handles h[0..n) and
 * (release) the grant on it: 0, the errno of the reply, or a negative
 * errno (no reply: the connection is gone). */
static int forget(struct pc *c, uint16_t op, const struct woid *dir,
		  const char *name, uint32_t flags, const struct woid *obj,
		  const uint64_t *h, uint32_t n)
{
	uint8_t b[POHMEL_NAME_REQ_SIZE + POHMEL_REMOVE_EXT_SIZE +
		  (POHMEL_REMOVE_HANDLES_MAX + 1) * 8 + POHMEL_NAME_MAX];
	uint32_t len = pc_enc_remove(b, dir, name, (uint32_t)strlen(name),
				     flags, obj, h, n);
	uint8_t rep[POHMEL_ATTR_SIZE];

	return pc_call(c, op, b, len, rep, sizeof(rep), NULL);
}

static int mkfile(struct pc *c, const struct woid *dir, const char *name,
		  struct wattr *a)
{
	return pc_mkobj(c, POHMEL_OP_CREATE, dir, name, 0644, 0, 0, NULL, a,
			NULL);
}

/* A file, opened (handle *h) and held (a grant from GETATTR). */
static int held_file(struct pc *c, const struct woid *dir, const char *name,
		     struct wattr *f, uint64_t *h)
{
	struct wattr x;
	int err = mkfile(c, dir, name, f);

	if (!err)
		err = pc_open(c, &f->oid, POHMEL_OPEN_ALL, h, &x);
	if (!err)
		err = pc_write(c, &f->oid, *h, 0, "data", 4, 0, NULL);
	if (!err)
		err = pc_getattr(c, &f->oid, &x);
	if (!err && x.grant == POHMEL_GRANT_NONE)
		err = -ENOLCK;
	return err;
}

static void t_negotiate(void)
{
	struct pc a;
	struct wattr f, x;

	CHECK(gopen(&a, POHMEL_FEAT_GRANTS) == 0 &&
	      !(a.features & POHMEL_FEAT_FORGET), "FORGET not without asking");
	CHECK(mkfile(&a, &a.root.oid, "n1", &f) == 0, "a file");
	CHECK(forget(&a, POHMEL_OP_UNLINK, &a.root.oid, "n1",
		     POHMEL_REMOVE_RELEASE, &f.oid, NULL, 0) == EINVAL &&
	      pc_lookup(&a, &a.root.oid, "n1", &x) == 0,
	      "UNLINK with RELEASE unnegotiated: EINVAL, the file stays");
	cl_close(&a);
	CHECK(gopen(&a, FEATS) == 0 && (a.features & POHMEL_FEAT_FORGET),
	      "FEAT_FORGET negotiated");
	cl_close(&a);
}

static void t_unlink(void)
{
	struct pc a;
	struct pc_recall rc;
	struct wattr d, f, g, x;
	uint64_t h, hg;
	long fd0, fd1, g0, g1;
	char buf[8];
	uint32_t got;
	int r;

	CHECK(gopen(&a, FEATS) == 0 &&
	      pc_mkobj(&a, POHMEL_OP_MKDIR, &a.root.oid, "u", 0755, 0, 0,
		       NULL, &d, NULL) == 0 &&
	      pc_getattr(&a, &d.oid, &x) == 0 && x.grant,
	      "A: a directory, held");

	/* the old way: UNLINK, then CLOSE of the idle handle */
	CHECK(held_file(&a, &d.oid, "old", &g, &hg) == 0,
	      "A: 'old' opened, written and held");
	CHECK(pc_remove(&a, POHMEL_OP_UNLINK, &d.oid, "old") == 0 &&
	      pc_close(&a, &g.oid, hg) == 0, "A: UNLINK old, then CLOSE");
	r = pc_next_recall(&a, 1000, &rc);
	CHECK(r == 0 && rc.oid.id == g.oid.id,
	      "then a RECALL of it comes to A (its last fd's close looks "
	      "like a local change): what FORGET saves (%d)", r);
	if (!r)
		pc_recall_ack(&a, &rc);

	CHECK(held_file(&a, &d.oid, "f", &f, &h) == 0,
	      "A: 'f' opened, written and held");
	fd0 = srv_stat(&a, "handle_fds");
	g0 = srv_stat(&a, "grants");
	CHECK(forget(&a, POHMEL_OP_UNLINK, &d.oid, "f",
		     POHMEL_REMOVE_CLOSE | POHMEL_REMOVE_RELEASE, &f.oid, &h,
		     1) == 0 &&
	      pc_lookup(&a, &d.oid, "f", &x) == ENOENT,
	      "A: UNLINK f with its handle and grant: done");
	fd1 = srv_stat(&a, "handle_fds");
	g1 = srv_stat(&a, "grants");
	CHECK(fd0 > 0 && fd1 == fd0 - 1, "its handle's fd is closed (%ld, "
	      "then %ld)", fd0, fd1);
	CHECK(g0 > 0 && g1 == g0 - 1, "the server holds one grant less (%ld, "
	      "then %ld)", g0, g1);
	CHECK(pc_read(&a, &f.oid, h, 0, buf, sizeof(buf), &got) == EBADF,
	      "the handle is gone: READ through it is EBADF");
	r = pc_next_recall(&a, 1000, &rc);
	CHECK(r == -ETIMEDOUT, "no RECALL comes to A for its own removal "
	      "(%d)", r);

	/* a failed removal gives up nothing */
	CHECK(held_file(&a, &d.oid, "k", &f, &h) == 0, "A: 'k' held");
	g0 = srv_stat(&a, "grants");
	CHECK(forget(&a, POHMEL_OP_UNLINK, &d.oid, "nonexistent",
		     POHMEL_REMOVE_CLOSE | POHMEL_REMOVE_RELEASE, &f.oid, &h,
		     1) == ENOENT, "UNLINK of a missing name: ENOENT");
	CHECK(pc_read(&a, &f.oid, h, 0, buf, sizeof(buf), &got) == 0 &&
	      got == 4 && srv_stat(&a, "grants") == g0,
	      "k's handle still reads, its grant stands");

	/* handles of another object, or not open: skipped */
	CHECK(mkfile(&a, &d.oid, "v", &g) == 0 &&
	      forget(&a, POHMEL_OP_UNLINK, &d.oid, "v", POHMEL_REMOVE_CLOSE,
		     &g.oid, (uint64_t[]){ h, 0x7777 }, 2) == 0,
	      "UNLINK v listing k's handle and a made-up one: done");
	CHECK(pc_read(&a, &f.oid, h, 0, buf, sizeof(buf), &got) == 0 &&
	      got == 4, "k's handle was not closed");
	cl_close(&a);
}

static void t_rmdir_and_others(void)
{
	struct pc a, b;
	struct pc_recall rc;
	uint8_t buf[POHMEL_NAME_REQ_SIZE + POHMEL_REMOVE_EXT_SIZE + 64];
	struct wattr d, e, f, x;
	struct whdr hd;
	uint64_t h;
	long g0, g1;
	uint32_t n;
	int r;

	CHECK(gopen(&a, FEATS) == 0 && gopen(&b, FEATS) == 0 &&
	      pc_mkobj(&a, POHMEL_OP_MKDIR, &a.root.oid, "r", 0755, 0, 0,
		       NULL, &d, NULL) == 0 &&
	      pc_mkobj(&a, POHMEL_OP_MKDIR, &d.oid, "sub", 0755, 0, 0,
		       NULL, &e, NULL) == 0 &&
	      pc_getattr(&a, &d.oid, &x) == 0 && x.grant &&
	      pc_getattr(&a, &e.oid, &x) == 0 && x.grant,
	      "A: r and r/sub, both held");
	g0 = srv_stat(&a, "grants");
	CHECK(forget(&a, POHMEL_OP_RMDIR, &d.oid, "sub",
		     POHMEL_REMOVE_RELEASE, &e.oid, NULL, 0) == 0,
	      "A: RMDIR sub with RELEASE: done");
	g1 = srv_stat(&a, "grants");
	CHECK(g1 == g0 - 1, "one grant less (%ld, then %ld)", g0, g1);
	r = pc_next_recall(&a, 1000, &rc);
	CHECK(r == -ETIMEDOUT, "no RECALL to A (%d)", r);

	/* B holds the file A removes: recalled first, as ever */
	CHECK(held_file(&a, &d.oid, "s", &f, &h) == 0 &&
	      pc_getattr(&b, &f.oid, &x) == 0 && x.grant,
	      "A and B hold r/s");
	n = pc_enc_remove(buf, &d.oid, "s", 1, POHMEL_REMOVE_CLOSE |
			  POHMEL_REMOVE_RELEASE, &f.oid, &h, 1);
	CHECK(pc_send(&a, POHMEL_OP_UNLINK, 77, ++a.seq, buf, n) == 0,
	      "A: UNLINK s sent");
	r = pc_next_recall(&b, 10000, &rc);
	CHECK(r == 0 && rc.oid.id == f.oid.id && pc_recall_ack(&b, &rc) == 0,
	      "B was recalled, acks (%d)", r);
	CHECK(pc_recv(&a, &hd, buf, sizeof(buf)) == 0 && hd.tag == 77 &&
	      hd.status == 0, "then A's UNLINK is done");
	CHECK(pc_lookup(&b, &d.oid, "s", &x) == ENOENT, "B: s is gone");
	cl_close(&a);
	cl_close(&b);
}

static void t_malformed(void)
{
	uint8_t b[256];
	struct wattr f, x;
	uint64_t hs[POHMEL_REMOVE_HANDLES_MAX + 1] = { 0 };
	struct pc a;
	uint32_t n;

	CHECK(gopen(&a, FEATS) == 0 && mkfile(&a, &a.root.oid, "m", &f) == 0,
	      "a file");
	CHECK(forget(&a, POHMEL_OP_UNLINK, &a.root.oid, "m", 0x4, &f.oid,
		     NULL, 0) == EINVAL, "unknown flag: EINVAL");
	CHECK(forget(&a, POHMEL_OP_UNLINK, &a.root.oid, "m",
		     POHMEL_REMOVE_RELEASE, &f.oid, hs, 1) == EINVAL,
	      "handles without CLOSE: EINVAL");
	CHECK(forget(&a, POHMEL_OP_UNLINK, &a.root.oid, "m",
		     POHMEL_REMOVE_CLOSE, &f.oid, hs,
		     POHMEL_REMOVE_HANDLES_MAX + 1) == EINVAL,
	      "%d handles: EINVAL", POHMEL_REMOVE_HANDLES_MAX + 1);
	CHECK(forget(&a, POHMEL_OP_LOOKUP, &a.root.oid, "m",
		     POHMEL_REMOVE_RELEASE, &f.oid, NULL, 0) == EINVAL,
	      "LOOKUP with a removal flag: EINVAL");
	CHECK(pc_lookup(&a, &a.root.oid, "m", &x) == 0 && pc_ping(&a) == 0,
	      "the file is still there, the connection too");
	/* the ext announced, not sent: the body is 16 bytes short */
	n = pc_enc_name_req(b, &a.root.oid, "m", 1);
	put32(b + 20, POHMEL_REMOVE_RELEASE);
	CHECK(pc_call(&a, POHMEL_OP_UNLINK, b, n, b, sizeof(b), NULL) < 0 &&
	      pc_ping(&a) != 0, "RELEASE without its object: dropped");
	cl_close(&a);
	CHECK(gopen(&a, FEATS) == 0 &&
	      pc_lookup(&a, &a.root.oid, "m", &x) == 0,
	      "the file is still there");
	cl_close(&a);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_forget POHMELD\n");
		return 2;
	}
	server_bin = argv[1];
	CHECK(start_tmp_server("forget", "", &sp) == 0, "pohmeld starts");
	if (tap_fail)
		return tap_done();
	t_negotiate();
	t_unlink();
	t_rmdir_and_others();
	t_malformed();
	CHECK(stop_server(&sp) == 0, "SIGTERM: clean exit");
	return finish_base();
}
