// SPDX-License-Identifier: MIT
/*
 * test_idrange - object ids are pohmeld's own and never handed out
 * twice (idspace.c), and ids delegated in advance (IDRANGE, CREATE_ID;
 * pohmel_proto.h "Delegated object ids", idrange.c): what a session may
 * use, in what order, what survives a restart, what goes back at its
 * end, and a state directory written when ids were inode numbers.
 * Then the directory write grant (GRANT, POHMEL_FEAT_ASK_GRANT): asked
 * for, given EXCL, refused without write access, and the handshake
 * write-back rests on: another client's LOOKUP in the directory recalls
 * the holder, which sends its create under a delegated id before it
 * acks, and the LOOKUP then finds the name under that id.
 *   test_idrange PATH-TO-POHMELD
 */
#include <pthread.h>
#include <sys/stat.h>
#include "../pohmeld.h"
#include "integ_lib.h"
#include "tap.h"

static char exp_dir[128], conf_text[1024];
static struct srvproc sp;
static const uint8_t uuid_a[16] = { 0xa1, 1 }, uuid_b[16] = { 0xb2, 2 };

struct range {
	uint64_t start, gen;
	uint32_t count;
};

static int lstat_rel(const char *rel, struct stat *st)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/%s", exp_dir, rel);
	return lstat(p, st);
}

/* A session on @port (uuid NULL: a new one each time) asking for want. */
static int sess_at(struct pc *c, int port, const uint8_t *uuid, uint64_t want)
{
	if (pc_init(c))
		return -1;
	if (uuid)
		memcpy(c->uuid, uuid, 16);
	c->boot_gen = 3;
	c->want_features = want;
	return pc_connect(c, "127.0.0.1", port) || pc_handshake(c) ? -1 : 0;
}

static int sess(struct pc *c, const uint8_t *uuid, uint64_t want)
{
	return sess_at(c, sp.port, uuid, want);
}

static int idrange(struct pc *c, uint64_t seq, uint32_t count, struct range *r)
{
	uint8_t b[POHMEL_IDRANGE_SIZE] = { 0 }, rep[64];
	uint32_t rl = 0;
	int err;

	put32(b + 16, count);
	err = pc_call_seq(c, POHMEL_OP_IDRANGE, seq, b, sizeof(b), rep,
			  sizeof(rep), &rl);
	if (!err && rl != POHMEL_IDRANGE_SIZE)
		return -EPROTO;
	if (!err) {
		r->start = get64(rep);
		r->gen = get64(rep + 8);
		r->count = get32(rep + 16);
	}
	return err;
}

static int create_in(struct pc *c, const struct woid *dir, uint64_t seq,
		     uint16_t op, const char *name, uint64_t id, struct woid *got);

/* the new object's attributes in create_in's last reply */
static struct wattr last_created;

/* CREATE (or MKDIR) with POHMEL_CREATE_ID; the new object's oid. */
static int create_id(struct pc *c, uint64_t seq, uint16_t op, const char *name,
		     uint64_t id, struct woid *got)
{
	return create_in(c, &c->root.oid, seq, op, name, id, got);
}

static int create_in(struct pc *c, const struct woid *dir, uint64_t seq,
		     uint16_t op, const char *name, uint64_t id, struct woid *got)
{
	uint8_t b[400], rep[POHMEL_ENTRY_REPLY_SIZE];
	uint32_t nl = (uint32_t)strlen(name), rl = 0;
	int err;

	memset(b, 0, POHMEL_CREATE_SIZE);
	woid_put(b, dir);
	put32(b + 16, op == POHMEL_OP_MKDIR ? 0755 : 0644);
	put32(b + 24, POHMEL_CREATE_ID);
	put16(b + 36, (uint16_t)nl);
	put64(b + POHMEL_CREATE_SIZE, id);
	memcpy(b + POHMEL_CREATE_SIZE + 8, name, nl);
	err = pc_call_seq(c, op, seq, b, POHMEL_CREATE_SIZE + 8 + nl, rep,
			  sizeof(rep), &rl);
	if (!err && rl != POHMEL_ENTRY_REPLY_SIZE)
		return -EPROTO;
	if (!err && got)
		woid_get(rep, got);
	if (!err)
		wattr_get(rep, &last_created);
	return err;
}

static int plain_create(struct pc *c, const char *name, struct wattr *a)
{
	return pc_mkobj(c, POHMEL_OP_CREATE, &c->root.oid, name, 0644, 0,
			POHMEL_CREATE_EXCL, NULL, a, NULL);
}

static uint64_t reserved_mark(void)
{
	char p[300], line[64] = "";
	unsigned long long v = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/state/idspace", base);
	f = fopen(p, "re");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f))
		sscanf(line, "reserved %llu", &v);
	fclose(f);
	return v;
}

static void t_own_ids(void)
{
	struct wattr a, b, c2, l;
	struct stat st;
	struct pc c;
	uint64_t mark = reserved_mark();

	CHECK(sess(&c, NULL, 0) == 0, "connect (1.0 features)");
	CHECK(mark > POHMEL_ROOT_ID, "STATEDIR/idspace holds the reservation (%llu)",
	      (unsigned long long)mark);
	CHECK(plain_create(&c, "own1", &a) == 0 &&
	      plain_create(&c, "own2", &b) == 0 && a.oid.id < b.oid.id &&
	      b.oid.id < mark, "CREATE: ids from the counter, below the reservation (%llu, %llu)",
	      (unsigned long long)a.oid.id, (unsigned long long)b.oid.id);
	CHECK(lstat_rel("own1", &st) == 0, "own1 is in the export (ino %llu)",
	      (unsigned long long)st.st_ino);
	CHECK(pc_remove(&c, POHMEL_OP_UNLINK, &c.root.oid, "own2") == 0 &&
	      plain_create(&c, "own2", &c2) == 0 && c2.oid.id > b.oid.id,
	      "a re-created name gets a new id, never the old one");
	cl_close(&c);

	CHECK(stop_server(&sp) == 0 && start_server("idrange", conf_text, &sp) == 0,
	      "restart");
	CHECK(sess(&c, NULL, 0) == 0 && pc_lookup(&c, &c.root.oid, "own1", &l) == 0 &&
	      l.oid.id == a.oid.id && l.oid.gen == a.oid.gen,
	      "after a restart LOOKUP gives the same (id, gen)");
	CHECK(reserved_mark() > mark, "the reservation moved on at start (%llu -> %llu)",
	      (unsigned long long)mark, (unsigned long long)reserved_mark());
	CHECK(plain_create(&c, "own3", &a) == 0 && a.oid.id >= mark,
	      "a new id after the restart is above what the last run reserved (%llu)",
	      (unsigned long long)a.oid.id);
	cl_close(&c);
}

static void t_delegated(void)
{
	struct range r, r2, x;
	struct woid o, o2;
	struct wattr l;
	struct stat st;
	struct pc a, b, old;
	uint64_t s;
	int i, err;

	CHECK(sess(&old, NULL, POHMEL_FEAT_BATCH) == 0 &&
	      idrange(&old, 1, 8, &r) == EOPNOTSUPP,
	      "IDRANGE without POHMEL_FEAT_IDRANGE: EOPNOTSUPP");
	cl_close(&old);

	CHECK(sess(&a, uuid_a, POHMEL_FEAT_IDRANGE) == 0 &&
	      (a.features & POHMEL_FEAT_IDRANGE), "session A negotiates IDRANGE");
	CHECK(idrange(&a, 0, 8, &r) == EINVAL, "IDRANGE without a seq: EINVAL");
	CHECK(idrange(&a, 1, 0, &r) == EINVAL &&
	      idrange(&a, 2, POHMEL_IDRANGE_MAX + 1, &r) == EINVAL,
	      "count 0 or above POHMEL_IDRANGE_MAX: EINVAL");
	CHECK(idrange(&a, 3, 16, &r) == 0 && r.count == 16 && r.start > 1 &&
	      r.gen, "IDRANGE 16: [%llu, +16) gen %llx",
	      (unsigned long long)r.start, (unsigned long long)r.gen);
	CHECK(idrange(&a, 3, 16, &x) == 0 && x.start == r.start && x.gen == r.gen,
	      "IDRANGE replayed (same seq): the same range");
	s = r.start;

	CHECK(create_id(&a, 10, POHMEL_OP_CREATE, "d0", s, &o) == 0 &&
	      o.id == s && o.gen == r.gen, "CREATE_ID: the object has the delegated (id, gen)");
	CHECK(pc_lookup(&a, &a.root.oid, "d0", &l) == 0 && l.oid.id == s &&
	      l.oid.gen == r.gen && lstat_rel("d0", &st) == 0 && S_ISREG(st.st_mode),
	      "LOOKUP finds it under that id; it is in the export");
	CHECK(create_id(&a, 11, POHMEL_OP_CREATE, "d0b", s, NULL) == EINVAL &&
	      lstat_rel("d0b", &st) == -1, "the same id again: EINVAL, nothing made");
	CHECK(create_id(&a, 12, POHMEL_OP_MKDIR, "dd2", s + 2, &o2) == 0 &&
	      o2.id == s + 2 && lstat_rel("dd2", &st) == 0 && S_ISDIR(st.st_mode),
	      "MKDIR with an id further on (s+2)");
	CHECK(create_id(&a, 13, POHMEL_OP_CREATE, "d1", s + 1, NULL) == EINVAL &&
	      lstat_rel("d1", &st) == -1, "an id below the last used one: EINVAL");
	CHECK(create_id(&a, 14, POHMEL_OP_CREATE, "far", s + 16, NULL) == EINVAL &&
	      create_id(&a, 15, POHMEL_OP_CREATE, "far", 1, NULL) == EINVAL &&
	      lstat_rel("far", &st) == -1,
	      "ids outside the session's ranges (the root's too): EINVAL");
	CHECK(create_id(&a, 16, POHMEL_OP_CREATE, "d0", s + 3, NULL) == EEXIST,
	      "CREATE_ID of an existing name: EEXIST (never renumbers it)");
	CHECK(create_id(&a, 17, POHMEL_OP_CREATE, "d3", s + 3, &o) == 0 && o.id == s + 3,
	      "a failed create used nothing up: s+3 still works");

	CHECK(sess(&b, uuid_b, POHMEL_FEAT_IDRANGE) == 0 &&
	      create_id(&b, 20, POHMEL_OP_CREATE, "theirs", s + 4, NULL) == EINVAL &&
	      lstat_rel("theirs", &st) == -1,
	      "another session cannot use A's ids: EINVAL");
	CHECK(idrange(&b, 21, 4, &x) == 0 && (x.start >= s + 16 || x.start + 4 <= s),
	      "B's range does not overlap A's");
	cl_close(&b);

	for (i = 0, err = 0; i < 3 && !err; i++)
		err = idrange(&a, 30 + (uint64_t)i, 4, &x);
	CHECK(err == 0, "A takes 3 more ranges (%d held)", POHMEL_IDRANGE_HELD);
	CHECK(idrange(&a, 40, 4, &x) == EDQUOT,
	      "one more than POHMEL_IDRANGE_HELD with ids left: EDQUOT");
	pc_disconnect(&a);

	/* the ranges are the session's: kept across a restart */
	CHECK(stop_server(&sp) == 0 && start_server("idrange", conf_text, &sp) == 0,
	      "restart with A's session on disk");
	CHECK(sess(&a, uuid_a, POHMEL_FEAT_IDRANGE) == 0, "A reconnects");
	CHECK(create_id(&a, 50, POHMEL_OP_CREATE, "d2", s + 2, NULL) == EINVAL,
	      "after the restart: a used id is still refused");
	CHECK(create_id(&a, 52, POHMEL_OP_CREATE, "d5", s + 5, &o) == 0 &&
	      o.id == s + 5 && o.gen == r.gen,
	      "after the restart: the range is still A's (s+5 works)");
	CHECK(pc_lookup(&a, &a.root.oid, "d0", &l) == 0 && l.oid.id == s &&
	      l.oid.gen == r.gen, "after the restart: d0 keeps its delegated id");

	/* BYE: the unused part goes back, with a new gen */
	CHECK(pc_bye(&a) == 0, "A ends its session (BYE)");
	pc_disconnect(&a);
	CHECK(sess(&b, NULL, POHMEL_FEAT_IDRANGE) == 0, "C connects (holds no range)");
	for (i = 0, err = 0; i < 4 && !err; i++) {
		err = idrange(&b, 60 + (uint64_t)i, POHMEL_IDRANGE_MAX, &r2);
		if (!err && r2.start >= s + 6 && r2.start < s + 16)
			break;
	}
	CHECK(!err && i < 4 && r2.start >= s + 6 && r2.start < s + 16 &&
	      r2.gen != r.gen,
	      "what A left of its first range is handed out again, with a new gen (start %llu)",
	      (unsigned long long)r2.start);
	CHECK(!err && r2.start + r2.count <= s + 16,
	      "and never an id A used (%llu + %u <= %llu)",
	      (unsigned long long)r2.start, r2.count,
	      (unsigned long long)(s + 16));
	cl_close(&b);
}

/*
 * A CREATE_ID in doubt (pohmeld died after the create, before its reply
 * record): re-run after the restart, it is done, and the object it made
 * gets the delegated id (bound now: it had none).
 */
static void t_redo(void)
{
	static const uint8_t uuid_r[16] = { 0xc3, 3 };
	char path[300], saved[300], *q;
	uint8_t rec[24];
	struct range r;
	struct woid o;
	struct wattr l;
	struct pc c;
	int i, fd;

	CHECK(sess(&c, uuid_r, POHMEL_FEAT_IDRANGE) == 0 &&
	      idrange(&c, 1, 8, &r) == 0 &&
	      create_id(&c, 2, POHMEL_OP_CREATE, "rd0", r.start, NULL) == 0,
	      "session R: a range and one create under it");
	pc_disconnect(&c);
	CHECK(stop_server(&sp) == 0, "stop");
	snprintf(path, sizeof(path), "%s/ind", exp_dir);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0, "the create's file made (as if pohmeld died right after)");
	if (fd >= 0)
		close(fd);
	q = path + snprintf(path, sizeof(path), "%s/state/sessions/", base);
	for (i = 0; i < 16; i++)
		q += snprintf(q, 3, "%02x", uuid_r[i]);
	snprintf(q, 20, "-%016llx", 3ULL);
	CHECK(sfile_put(path, 1, 3) == 0, "its BEGIN record (seq 3) without a REPLY");
	CHECK(start_server("idrange", conf_text, &sp) == 0, "start");
	snprintf(saved, sizeof(saved), "%s", path);
	CHECK(sess(&c, uuid_r, POHMEL_FEAT_IDRANGE) == 0 &&
	      create_id(&c, 3, POHMEL_OP_CREATE, "ind", r.start + 1, &o) == 0 &&
	      o.id == r.start + 1 && o.gen == r.gen,
	      "the replayed CREATE_ID in doubt is done, under the delegated id");
	CHECK(pc_lookup(&c, &c.root.oid, "ind", &l) == 0 && l.oid.id == r.start + 1,
	      "LOOKUP gives that id");
	CHECK(create_id(&c, 4, POHMEL_OP_CREATE, "ind2", r.start + 1, NULL) == EINVAL,
	      "and the id counts as used");
	cl_close(&c);

	/* a session file is hostile input: a range never handed out */
	CHECK(stop_server(&sp) == 0, "stop");
	put64(rec, reserved_mark() + 1000);
	put64(rec + 8, 77);
	put32(rec + 16, 16);
	put32(rec + 20, 0);
	CHECK(sfile_put_rec(saved, 7, rec, sizeof(rec)) == 0,
	      "a RANGE record above the reservation appended to R's file");
	CHECK(start_server("idrange", conf_text, &sp) == 0 &&
	      server_log_has("idrange", "range of ids never handed out"),
	      "start: the file is refused, and the log says why");
	CHECK(sess(&c, uuid_r, POHMEL_FEAT_IDRANGE) == 0 &&
	      create_id(&c, 5, POHMEL_OP_CREATE, "forged", reserved_mark() + 1000,
			NULL) == EINVAL, "the forged range gives R nothing");
	cl_close(&c);
}

/* A handles file from when ids were inode numbers keeps its ids. */
static void t_legacy(void)
{
	union {
		struct file_handle fh;
		uint8_t raw[sizeof(struct file_handle) + 128];
	} u;
	char p[300], line[600];
	struct stat st;
	struct wattr l, n;
	struct pc c;
	int mid, i, fd;
	size_t k;

	CHECK(stop_server(&sp) == 0, "stop for the legacy state test");
	snprintf(p, sizeof(p), "%s/legacy", exp_dir);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	u.fh.handle_bytes = 128;
	CHECK(fd >= 0 && fstat(fd, &st) == 0 &&
	      name_to_handle_at(fd, "", &u.fh, &mid, AT_EMPTY_PATH) == 0,
	      "a file and its handle");
	if (fd >= 0)
		close(fd);
	k = (size_t)snprintf(line, sizeof(line), "%llu %d ",
			     (unsigned long long)st.st_ino, u.fh.handle_type);
	for (i = 0; i < (int)u.fh.handle_bytes; i++)
		k += (size_t)snprintf(line + k, sizeof(line) - k, "%02x",
				      u.fh.f_handle[i]);
	snprintf(line + k, sizeof(line) - k, "\n");
	snprintf(p, sizeof(p), "%s/state/handles", base);
	fd = open(p, O_WRONLY | O_APPEND);
	CHECK(fd >= 0 && write(fd, line, strlen(line)) == (ssize_t)strlen(line),
	      "a line in the old format (id = inode number, no gen) appended");
	if (fd >= 0)
		close(fd);
	CHECK(start_server("idrange", conf_text, &sp) == 0, "start");
	CHECK(sess(&c, NULL, 0) == 0 && pc_lookup(&c, &c.root.oid, "legacy", &l) == 0 &&
	      l.oid.id == (uint64_t)st.st_ino,
	      "the old line's id (its inode number %llu) is kept",
	      (unsigned long long)st.st_ino);
	CHECK(plain_create(&c, "after-legacy", &n) == 0 && n.oid.id > l.oid.id,
	      "new ids come from above it (%llu)", (unsigned long long)n.oid.id);
	cl_close(&c);
}

static int grant(struct pc *c, const struct woid *o, uint32_t want,
		 struct wattr *a)
{
	uint8_t b[POHMEL_GRANT_REQ_SIZE] = { 0 }, rep[POHMEL_ATTR_SIZE];
	uint32_t rl = 0;
	int err;

	woid_put(b, o);
	put32(b + 16, want);
	err = pc_call(c, POHMEL_OP_GRANT, b, sizeof(b), rep, sizeof(rep), &rl);
	if (!err && rl != POHMEL_ATTR_SIZE)
		return -EPROTO;
	if (!err)
		wattr_get(rep, a);
	return err;
}

struct lookup_job {
	struct pc *c;
	struct woid dir;
	struct wattr a;
	int err;
	atomic_bool done;
};

static void *lookup_thread(void *arg)
{
	struct lookup_job *j = arg;

	j->err = pc_lookup(j->c, &j->dir, "wbx", &j->a);
	atomic_store(&j->done, true);
	return NULL;
}

static void t_dirgrant(void)
{
	const uint64_t all = POHMEL_FEAT_GRANTS | POHMEL_FEAT_IDRANGE |
			     POHMEL_FEAT_ASK_GRANT;
	struct wattr d, g, before;
	struct lookup_job j = { .err = -1 };
	struct pc_recall rc = { 0 };
	struct pc a, b, u;
	struct range r;
	struct woid o;
	pthread_t t;
	bool waited;

	CHECK(sess(&a, NULL, all) == 0 && (a.features & POHMEL_FEAT_ASK_GRANT) &&
	      sess(&b, NULL, POHMEL_FEAT_GRANTS) == 0, "A (write-back features), B (grants)");
	CHECK(pc_mkobj(&a, POHMEL_OP_MKDIR, &a.root.oid, "wb", 0755, 0, 0, NULL,
		       &d, NULL) == 0 && idrange(&a, 900, 8, &r) == 0,
	      "A: MKDIR wb, IDRANGE 8");
	CHECK(grant(&b, &d.oid, POHMEL_GRANT_EXCL, &g) == EOPNOTSUPP,
	      "GRANT without POHMEL_FEAT_ASK_GRANT: EOPNOTSUPP");
	CHECK(cl_open(&u, &sp, 1000, 1000) == 0, "a client as uid 1000");
	u.want_features = all;
	pc_disconnect(&u);
	CHECK(sess(&u, NULL, all) == 0, "(reconnected with the features)");
	u.uid = u.gid = 1000;
	CHECK(grant(&u, &d.oid, POHMEL_GRANT_EXCL, &g) == EACCES &&
	      grant(&u, &d.oid, POHMEL_GRANT_SHARED, &g) == 0,
	      "uid 1000 on a 0755 root directory: EXCL is EACCES, SHARED is fine");
	cl_close(&u);
	CHECK(pc_getattr(&a, &d.oid, &before) == 0 && a.recalls_seen == 0,
	      "the refused EXCL recalled nobody: A still holds its grant");

	CHECK(pc_getattr(&a, &d.oid, &before) == 0 &&
	      grant(&a, &d.oid, POHMEL_GRANT_EXCL, &g) == 0 &&
	      g.grant == POHMEL_GRANT_EXCL && g.change == before.change,
	      "A: GRANT EXCL on the directory: given, its change attribute stays");

	/* B's LOOKUP waits for A to flush what it made under the grant */
	j.c = &b;
	j.dir = d.oid;
	atomic_init(&j.done, false);
	pthread_create(&t, NULL, lookup_thread, &j);
	CHECK(pc_next_recall(&a, 5000, &rc) == 0 && rc.oid.id == d.oid.id &&
	      rc.to == POHMEL_GRANT_SHARED,
	      "B's LOOKUP in wb recalls A's directory grant to SHARED");
	usleep(200000);
	waited = !atomic_load(&j.done);
	CHECK(waited, "B's LOOKUP waits for A's ack");
	CHECK(create_in(&a, &d.oid, 901, POHMEL_OP_CREATE, "wbx", r.start, &o) == 0 &&
	      o.id == r.start, "A flushes its create of wbx under delegated id %llu",
	      (unsigned long long)r.start);
	CHECK(last_created.grant == POHMEL_GRANT_EXCL,
	      "wbx comes back EXCL to A (the data A wrote to it locally stays A's; grant %u)",
	      last_created.grant);
	CHECK(pc_recall_ack(&a, &rc) == 0, "then acks");
	pthread_join(t, NULL);
	CHECK(j.err == 0 && j.a.oid.id == r.start && j.a.oid.gen == r.gen,
	      "B's LOOKUP finds wbx, under the id A chose");
	cl_close(&a);
	cl_close(&b);
}

struct getattr_job {
	struct pc *c;
	struct woid o;
	struct wattr a;
	int err;
	atomic_bool done;
};

static void *getattr_thread(void *arg)
{
	struct getattr_job *j = arg;

	j->err = pc_getattr(j->c, &j->o, &j->a);
	atomic_store(&j->done, true);
	return NULL;
}

/*
 * A create under a delegated id whose reply cannot give EXCL (here: the
 * creator is at max-grants-per-connection) still leaves the creator's
 * record at EXCL: it may hold the file's data already (written locally,
 * kept past close), so another client's GETATTR recalls it and waits for
 * the ack instead of reading an empty file.
 */
static void t_buffered(void)
{
	const uint64_t all = POHMEL_FEAT_GRANTS | POHMEL_FEAT_IDRANGE |
			     POHMEL_FEAT_ASK_GRANT;
	struct getattr_job j = { .err = -1 };
	char conf[1024], dir[160], state[160];
	struct pc_recall rc = { 0 };
	struct srvproc sp2 = { 0 };
	struct wattr d;
	struct range r;
	struct woid f;
	struct pc a, b;
	pthread_t t;
	bool waited;

	snprintf(dir, sizeof(dir), "%s/buffered", base);
	snprintf(state, sizeof(state), "%s/state-buffered", base);
	mkdir(dir, 0755);
	mkdir(state, 0700);
	snprintf(conf, sizeof(conf),
		 "export / %s rw no_root_squash\nstate-dir %s\nkey-file none\n"
		 "max-grants-per-connection 1\n", dir, state);
	CHECK(start_server("buffered", conf, &sp2) == 0,
	      "buffered: a pohmeld with max-grants-per-connection 1");
	if (!sp2.pid)
		return;
	CHECK(sess_at(&a, sp2.port, NULL, all) == 0 &&
	      sess_at(&b, sp2.port, NULL, POHMEL_FEAT_GRANTS) == 0,
	      "buffered: A (write-back features), B (grants)");
	CHECK(pc_mkobj(&a, POHMEL_OP_MKDIR, &a.root.oid, "d", 0755, 0, 0, NULL,
		       &d, NULL) == 0 && d.grant != POHMEL_GRANT_NONE &&
	      idrange(&a, 10, 4, &r) == 0,
	      "buffered: A: MKDIR d (its one grant), IDRANGE 4");
	CHECK(create_in(&a, &d.oid, 11, POHMEL_OP_CREATE, "f", r.start, &f) == 0 &&
	      last_created.grant == POHMEL_GRANT_NONE,
	      "buffered: A's CREATE_ID of d/f comes back without a grant (quota; grant %u)",
	      last_created.grant);
	j.c = &b;
	j.o = f;
	atomic_init(&j.done, false);
	pthread_create(&t, NULL, getattr_thread, &j);
	CHECK(pc_next_recall(&a, 5000, &rc) == 0 && rc.oid.id == f.id,
	      "buffered: B's GETATTR of d/f recalls A (it may hold f's data)");
	usleep(200000);
	waited = !atomic_load(&j.done);
	CHECK(waited, "buffered: B's GETATTR waits for A's ack");
	if (rc.oid.id)
		pc_recall_ack(&a, &rc);
	pthread_join(t, NULL);
	CHECK(j.err == 0 && j.a.oid.id == f.id, "buffered: then B gets d/f");
	cl_close(&a);
	cl_close(&b);
	stop_server(&sp2);
}

/* CREATE_ID | CREATE_TIME of a regular file named @name, under @id. */
static int create_timed(struct pc *c, uint64_t seq, const char *name,
			uint64_t id, const struct wtime *t, struct wattr *got)
{
	uint8_t b[400], rep[POHMEL_ENTRY_REPLY_SIZE];
	uint32_t nl = (uint32_t)strlen(name), rl = 0;
	int err;

	memset(b, 0, POHMEL_CREATE_SIZE);
	woid_put(b, &c->root.oid);
	put32(b + 16, 0644);
	put32(b + 24, POHMEL_CREATE_ID | POHMEL_CREATE_TIME);
	put16(b + 36, (uint16_t)nl);
	put64(b + POHMEL_CREATE_SIZE, id);
	wtime_put(b + POHMEL_CREATE_SIZE + 8, t);
	memcpy(b + POHMEL_CREATE_SIZE + 24, name, nl);
	err = pc_call_seq(c, POHMEL_OP_CREATE, seq, b,
			  POHMEL_CREATE_SIZE + 24 + nl, rep, sizeof(rep), &rl);
	if (!err && rl != POHMEL_ENTRY_REPLY_SIZE)
		return -EPROTO;
	if (!err)
		wattr_get(rep, got);
	return err;
}

/*
 * POHMEL_IO_TIMES: the times a writer showed after a write it sent later
 * are the file's for everyone until it changes again.
 */
static void t_write_times(struct pc *c, struct pc *d, const struct woid *o)
{
	struct wtime mt = { .sec = time(NULL) - 20, .nsec = 250000000 };
	struct wtime ct = { .sec = time(NULL) - 19, .nsec = 750000000 };
	uint8_t b[POHMEL_IO_SIZE + 32 + 4], rep[POHMEL_IO_REPLY_SIZE];
	uint32_t rl = 0;
	struct wattr a, l;

	pc_enc_io(b, o, 0, 0, 4, POHMEL_IO_TIMES, NULL);
	wtime_put(b + POHMEL_IO_SIZE, &mt);
	wtime_put(b + POHMEL_IO_SIZE + 16, &ct);
	memcpy(b + POHMEL_IO_SIZE + 32, "data", 4);
	CHECK(pc_call_seq(c, POHMEL_OP_WRITE, 20, b, sizeof(b), rep,
			  sizeof(rep), &rl) == 0 && rl == POHMEL_IO_REPLY_SIZE,
	      "io times: a WRITE with the writer's mtime and ctime");
	wattr_get(rep, &a);
	CHECK(a.mtime.sec == mt.sec && a.mtime.nsec == mt.nsec &&
	      a.ctime.sec == ct.sec && a.ctime.nsec == ct.nsec && a.size == 4,
	      "io times: its reply has them");
	CHECK(pc_getattr(d, o, &l) == 0 && l.mtime.sec == mt.sec &&
	      l.mtime.nsec == mt.nsec && l.ctime.nsec == ct.nsec,
	      "io times: so does another client's GETATTR");
	CHECK(pc_write(d, o, 0, 4, "more", 4, 0, NULL) == 0 &&
	      pc_getattr(d, o, &l) == 0 &&
	      l.mtime.sec != mt.sec && l.ctime.sec != ct.sec,
	      "io times: the next plain WRITE: the real times");
	b[POHMEL_IO_SIZE + 8] = 0x7f;	/* nsec far out of range */
	CHECK(pc_call_seq(c, POHMEL_OP_WRITE, 21, b, sizeof(b), rep,
			  sizeof(rep), &rl) == EINVAL,
	      "io times: a time with nsec >= 10^9: EINVAL");
}

/*
 * POHMEL_CREATE_TIME: the times the creating client showed are the
 * object's, for everyone, ctime included, until the object changes.
 */
static void t_times(void)
{
	struct wtime t = { .sec = time(NULL) - 30, .nsec = 500000000 };
	struct wtime bad = t, old = { .sec = time(NULL) - 365 * 86400 };
	struct wattr a, l, s;
	struct range r;
	struct stat st;
	struct pc c, d;
	char p[600];

	CHECK(sess(&c, NULL, POHMEL_FEAT_IDRANGE | POHMEL_FEAT_GRANTS) == 0 &&
	      sess(&d, NULL, 0) == 0 && idrange(&c, 1, 4, &r) == 0,
	      "times: a session with ids and grants, and another client");
	bad.nsec = 1000000000U;
	CHECK(create_timed(&c, 2, "tbad", r.start, &bad, &a) == EINVAL,
	      "times: nsec out of range: EINVAL");
	CHECK(create_timed(&c, 3, "t1", r.start, &t, &a) == 0 &&
	      a.mtime.sec == t.sec && a.mtime.nsec == t.nsec &&
	      a.atime.sec == t.sec && a.ctime.sec == t.sec &&
	      a.ctime.nsec == t.nsec,
	      "times: the reply has the client's atime, mtime and ctime (ctime %lld.%09u)",
	      (long long)a.ctime.sec, a.ctime.nsec);
	CHECK(a.grant == POHMEL_GRANT_EXCL,
	      "times: and EXCL for its creator (the watch takes the reported ctime; grant %u)",
	      a.grant);
	snprintf(p, sizeof(p), "%s/t1", exp_dir);
	CHECK(stat(p, &st) == 0 && st.st_mtim.tv_sec == t.sec &&
	      st.st_mtim.tv_nsec == (long)t.nsec && st.st_ctim.tv_sec != t.sec,
	      "times: the disk has the mtime; its ctime is the server's own");
	CHECK(pc_lookup(&d, &d.root.oid, "t1", &l) == 0 &&
	      l.ctime.sec == t.sec && l.ctime.nsec == t.nsec &&
	      l.mtime.sec == t.sec,
	      "times: another client sees the same ctime and mtime");
	CHECK(create_timed(&c, 4, "t2", r.start + 1, &old, &s) == 0 &&
	      s.mtime.sec == old.sec && s.ctime.sec != old.sec,
	      "times: a year-old time: the mtime is the owner's to set, the ctime stays the server's");
	CHECK(pc_setattr(&d, &l.oid, POHMEL_SET_MODE, 0600, 0, 0, 0, NULL,
			 NULL, &s) == 0 && s.ctime.sec != t.sec &&
	      pc_getattr(&c, &a.oid, &l) == 0 && l.ctime.sec == s.ctime.sec &&
	      l.ctime.nsec == s.ctime.nsec,
	      "times: once it changes (chmod), its real ctime for everyone");
	t_write_times(&c, &d, &l.oid);
	cl_close(&c);
	cl_close(&d);
}

/*
 * POHMEL_IO_CREATED (1.5): a new file's data sent by object in its
 * create's BATCH is written by its owner whatever its mode, as through
 * the fd its create returned; nobody else gains anything by it.
 */
static void t_io_created(void)
{
	const uint64_t feats = POHMEL_FEAT_IDRANGE | POHMEL_FEAT_GRANTS |
			       POHMEL_FEAT_WB_DATA;
	struct wattr dir, a;
	struct pc c, d, e;
	struct stat st;
	char p[300];

	snprintf(p, sizeof(p), "%s/ioc", exp_dir);
	CHECK(mkdir(p, 0777) == 0 && chmod(p, 0777) == 0 &&
	      sess(&c, NULL, feats) == 0 && sess(&d, NULL, feats) == 0 &&
	      sess(&e, NULL, POHMEL_FEAT_IDRANGE | POHMEL_FEAT_GRANTS) == 0 &&
	      (c.features & POHMEL_FEAT_WB_DATA) &&
	      !(e.features & POHMEL_FEAT_WB_DATA),
	      "io created: sessions with and without FEAT_WB_DATA");
	c.uid = c.gid = 1000;
	d.uid = d.gid = 1001;
	e.uid = e.gid = 1000;
	CHECK(pc_lookup(&c, &c.root.oid, "ioc", &dir) == 0 &&
	      pc_mkobj(&c, POHMEL_OP_CREATE, &dir.oid, "ro", 0444, 0,
		       POHMEL_CREATE_EXCL, NULL, &a, NULL) == 0,
	      "io created: uid 1000 makes a file of mode 0444");
	CHECK(pc_write(&c, &a.oid, 0, 0, "data", 4, 0, NULL) == EACCES,
	      "io created: a plain WRITE by object is checked against the mode: EACCES");
	CHECK(pc_write(&c, &a.oid, 0, 0, "data", 4, POHMEL_IO_CREATED,
		       NULL) == 0 && lstat_rel("ioc/ro", &st) == 0 &&
	      st.st_size == 4 && st.st_uid == 1000,
	      "io created: with IO_CREATED its owner writes it");
	CHECK(pc_write(&d, &a.oid, 0, 0, "evil", 4, POHMEL_IO_CREATED,
		       NULL) == EACCES,
	      "io created: another uid with IO_CREATED: still EACCES");
	CHECK(pc_write(&e, &a.oid, 0, 0, "data", 4, POHMEL_IO_CREATED,
		       NULL) == EINVAL,
	      "io created: without FEAT_WB_DATA: EINVAL");
	CHECK(pc_write(&c, &a.oid, 7, 0, "data", 4, POHMEL_IO_CREATED,
		       NULL) == EINVAL,
	      "io created: with a handle: EINVAL");
	cl_close(&c);
	cl_close(&d);
	cl_close(&e);
}

int main(int argc, char **argv)
{
	int setup_err = setup_base(argc, argv, "idrange", exp_dir, sizeof(exp_dir));

	if (setup_err)
		return setup_err;
	snprintf(conf_text, sizeof(conf_text),
		 "export / %s rw no_root_squash\nstate-dir %s/state\n"
		 "key-file none\n", exp_dir, base);
	CHECK(start_server("idrange", conf_text, &sp) == 0, "pohmeld starts");
	if (tap_fail)
		return finish_base();
	t_own_ids();
	t_delegated();
	t_dirgrant();
	t_buffered();
	t_times();
	t_io_created();
	t_redo();
	t_legacy();
	stop_server(&sp);
	return finish_base();
}
