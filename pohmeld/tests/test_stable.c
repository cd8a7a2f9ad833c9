// SPDX-License-Identifier: MIT
/*
 * test_stable - POHMEL_FEAT_STABLE (pohmel_proto.h "Durability"): the
 * write verifier in the HELLO reply (derived from the machine's boot_id,
 * the same across restarts of pohmeld, random per start without one),
 * unknown feature bits ANDed away, FSYNC flags (FSYNC_FS, unknown ones),
 * and that FSYNC and STABLE WRITE make the server's own state (handles
 * log, session file, sessions directory) stable before their reply, and
 * only when something is new. The last part runs pohmeld under
 * fsync_shim.so, which logs every successful fsync/fdatasync/syncfs with
 * the fd's path before returning to pohmeld.
 *   test_stable PATH-TO-POHMELD
 */
#include <limits.h>
#include <sys/stat.h>
#include "../pohmeld.h"
#include "integ_lib.h"
#include "tap.h"

static char exp_dir[128], conf_text[1024], shim[PATH_MAX];
static char real_base[PATH_MAX], shim_log[PATH_MAX + 16];
static struct srvproc sp;
static const uint8_t zero16[16];

/* What verifier.c derives from this machine's boot_id. */
static bool boot_verifier(uint8_t out[16])
{
	static const char label[] = "pohmeld write verifier v1";
	char text[64];
	uint8_t id[16], d[32];
	struct sha256_ctx h;
	int n = 0, i;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (!f)
		return false;
	if (!fgets(text, sizeof(text), f))
		text[0] = 0;
	fclose(f);
	for (i = 0; text[i] && text[i] != '\n' && n < 32; i++) {
		unsigned int v;

		if (text[i] == '-')
			continue;
		if (sscanf(text + i, "%1x", &v) != 1)
			return false;
		id[n / 2] = (uint8_t)(n % 2 ? id[n / 2] | v : v << 4);
		n++;
	}
	if (n != 32)
		return false;
	sha256_init(&h);
	sha256_update(&h, label, sizeof(label) - 1);
	sha256_update(&h, id, sizeof(id));
	sha256_final(&h, d);
	memcpy(out, d, 16);
	return true;
}

/* Connect asking for want; 0 or the handshake's error. */
static int cl_want(struct pc *c, uint64_t want)
{
	int err;

	if (pc_init(c))
		return -ENOMEM;
	c->want_features = want;
	err = pc_connect(c, "127.0.0.1", sp.port);
	if (!err)
		err = pc_handshake(c);
	return err;
}

static void t_verifier(void)
{
	uint8_t want[16], first[16];
	struct pc c;
	bool have_boot = boot_verifier(want);

	CHECK(have_boot, "this machine has a boot_id");
	CHECK(cl_want(&c, POHMEL_FEAT_BATCH | POHMEL_FEAT_STABLE) == 0 &&
	      (c.features & POHMEL_FEAT_STABLE),
	      "HELLO with FEAT_STABLE: negotiated");
	CHECK(memcmp(c.verifier, zero16, 16) != 0,
	      "the reply carries a nonzero verifier");
	CHECK(have_boot && !memcmp(c.verifier, want, 16),
	      "the verifier is SHA-256(label, boot_id) cut to 16 bytes");
	memcpy(first, c.verifier, 16);
	cl_close(&c);

	CHECK(cl_want(&c, POHMEL_FEAT_BATCH) == 0 &&
	      !(c.features & POHMEL_FEAT_STABLE) &&
	      !memcmp(c.verifier, zero16, 16),
	      "without FEAT_STABLE: not negotiated, uuid field zero");
	cl_close(&c);

	CHECK(cl_want(&c, POHMEL_FEAT_BATCH | POHMEL_FEAT_STABLE |
		      1ULL << 20 | 1ULL << 40 | 1ULL << 63) == 0 &&
	      c.features == (POHMEL_FEAT_BATCH | POHMEL_FEAT_STABLE),
	      "unknown feature bits: ANDed away, not refused (got %#llx)",
	      (unsigned long long)c.features);
	CHECK(pc_ping(&c) == 0, "and the connection works");
	cl_close(&c);

	CHECK(stop_server(&sp) == 0 &&
	      start_server("stable2", conf_text, &sp) == 0,
	      "restart pohmeld (same machine boot)");
	CHECK(cl_want(&c, POHMEL_FEAT_STABLE) == 0 &&
	      (c.features & POHMEL_FEAT_STABLE) &&
	      memcmp(c.verifier, zero16, 16) &&
	      !memcmp(c.verifier, first, 16),
	      "the verifier is the same after the restart");
	cl_close(&c);
	CHECK(stop_server(&sp) == 0, "stop");

	/* No boot_id: random per start, logged. */
	setenv("POHMELD_TEST_BOOT_ID", "/nonexistent/boot_id", 1);
	CHECK(start_server("stable-nobootid", conf_text, &sp) == 0 &&
	      cl_want(&c, POHMEL_FEAT_STABLE) == 0 &&
	      memcmp(c.verifier, zero16, 16) && memcmp(c.verifier, first, 16),
	      "boot_id unreadable: a nonzero verifier of its own");
	memcpy(want, c.verifier, 16);
	cl_close(&c);
	CHECK(server_log_has("stable-nobootid", "the write verifier is random"),
	      "and the log says why");
	CHECK(stop_server(&sp) == 0 &&
	      start_server("stable-nobootid2", conf_text, &sp) == 0 &&
	      cl_want(&c, POHMEL_FEAT_STABLE) == 0 &&
	      memcmp(c.verifier, want, 16) && memcmp(c.verifier, zero16, 16),
	      "and another one after a restart (writes are resent)");
	cl_close(&c);
	unsetenv("POHMELD_TEST_BOOT_ID");
	CHECK(stop_server(&sp) == 0, "stop");
}

/* ---- the shim's log ---- */

static long shim_mark(void)
{
	struct stat st;

	return stat(shim_log, &st) ? 0 : (long)st.st_size;
}

/* How many lines "CALL PATH" the shim logged since mark. */
static int synced(long mark, const char *call, const char *path)
{
	char line[4200], want[4200];
	int n = 0;
	FILE *f = fopen(shim_log, "re");

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "%s %s\n", call, path);
	fseek(f, mark, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		n += !strcmp(line, want);
	fclose(f);
	return n;
}

static void sess_path(char *buf, size_t n, const struct pc *c)
{
	int i, off;

	off = snprintf(buf, n, "%s/state/sessions/", real_base);
	for (i = 0; i < 16; i++)
		off += snprintf(buf + off, n - (size_t)off, "%02x",
				c->uuid[i]);
	snprintf(buf + off, n - (size_t)off, "-%016llx",
		 (unsigned long long)c->boot_gen);
}

static int start_shimmed(const char *name)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char opts[1024];
	int err;

	/* ASan wants its runtime first; the shim only wraps three calls
	 * ASan does not intercept. */
	snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0",
		 asan ? asan : "", asan && *asan ? ":" : "");
	setenv("LD_PRELOAD", shim, 1);
	setenv("POHMEL_SHIM_LOG", shim_log, 1);
	setenv("POHMEL_SHIM_SLOW", "/slow-", 1);	/* t_pool */
	setenv("POHMEL_SHIM_SLOW_MS", "3000", 1);
	setenv("ASAN_OPTIONS", opts, 1);
	err = start_server(name, conf_text, &sp);
	unsetenv("LD_PRELOAD");
	unsetenv("POHMEL_SHIM_LOG");
	unsetenv("POHMEL_SHIM_SLOW");
	unsetenv("POHMEL_SHIM_SLOW_MS");
	if (asan)
		setenv("ASAN_OPTIONS", asan, 1);
	else
		unsetenv("ASAN_OPTIONS");
	return err;
}

/*
 * The worker pool (conn_work.c): an FSYNC of slow-f (3 s under the
 * shim) does not hold up the requests sent behind it on one connection
 * that name other objects (a GETATTR, a 1 MiB READ), nor a 1 MiB READ of
 * slow-f itself (neither changes what the other sees), while
 * a GETATTR and a WRITE of slow-f are answered only after it, in order.
 * The order replies arrive in is the check; no timing is asserted.
 */
static void t_pool(void)
{
	enum { FS = 1, GA, RD, RDS, GAS, WRS, N };
	static const char *const what[N] = {
		[FS] = "FSYNC slow-f", [GA] = "GETATTR a", [RD] = "READ a",
		[RDS] = "READ slow-f", [GAS] = "GETATTR slow-f",
		[WRS] = "WRITE slow-f",
	};
	static uint8_t data[1 << 20];
	uint32_t pos[N] = { 0 }, got = 0, n, i;
	struct wattr s, a;
	uint8_t body[256];
	struct whdr h;
	char order[256];
	size_t ol = 0;
	struct pc c;
	int err = 0;

	memset(data, 0x5a, sizeof(data));
	CHECK(cl_want(&c, POHMEL_FEAT_BATCH | POHMEL_FEAT_STABLE) == 0 &&
	      pc_mkobj(&c, POHMEL_OP_CREATE, &c.root.oid, "slow-f", 0644, 0, 0,
		       NULL, &s, NULL) == 0 &&
	      pc_mkobj(&c, POHMEL_OP_CREATE, &c.root.oid, "a", 0644, 0, 0,
		       NULL, &a, NULL) == 0 &&
	      pc_write(&c, &s.oid, 0, 0, data, sizeof(data), 0, &n) == 0 &&
	      pc_write(&c, &a.oid, 0, 0, data, sizeof(data), 0, &n) == 0,
	      "pool: two files of 1 MiB");
	/* all six sent before any reply is read */
	err = pc_send(&c, POHMEL_OP_FSYNC, FS, 0, body,
		      pc_enc_fsync(body, &s.oid, 0, 0)) ||
	      pc_send(&c, POHMEL_OP_GETATTR, GA, 0, body,
		      pc_enc_oid(body, &a.oid)) ||
	      pc_send(&c, POHMEL_OP_READ, RD, 0, body,
		      pc_enc_io(body, &a.oid, 0, 0, 1 << 20, 0, NULL)) ||
	      pc_send(&c, POHMEL_OP_READ, RDS, 0, body,
		      pc_enc_io(body, &s.oid, 0, 0, 1 << 20, 0, NULL)) ||
	      pc_send(&c, POHMEL_OP_GETATTR, GAS, 0, body,
		      pc_enc_oid(body, &s.oid)) ||
	      pc_send(&c, POHMEL_OP_WRITE, WRS, 0, body,
		      pc_enc_io(body, &s.oid, 0, 0, 4, 0, "four"));
	CHECK(!err, "pool: FSYNC, GETATTR, READ, READ, GETATTR, WRITE sent at once");
	for (i = 1; i < N && !err; i++) {
		err = pc_recv(&c, &h, NULL, 0);
		if (err || h.tag < 1 || h.tag >= N || pos[h.tag] || h.status) {
			err = err ? err : -EPROTO;
			break;
		}
		pos[h.tag] = ++got;
		ol += (size_t)snprintf(order + ol, sizeof(order) - ol, "%s%s",
				       ol ? ", " : "", what[h.tag]);
	}
	printf("# replies in the order: %s\n", order);
	CHECK(!err && got == N - 1, "pool: six replies, no error");
	CHECK(pos[GA] < pos[FS] && pos[RD] < pos[FS] && pos[RDS] < pos[FS],
	      "pool: GETATTR and READ of another file, READ of the file being synced: not held up by the FSYNC");
	CHECK(pos[FS] < pos[GAS] && pos[GAS] < pos[WRS],
	      "pool: GETATTR and WRITE of the file being synced: after it, in order");
	pc_disconnect(&c);
}

static void t_fsync_flags(void)
{
	char p[PATH_MAX + 64];
	struct wattr f, d;
	struct pc c;
	long m;

	CHECK(cl_want(&c, POHMEL_FEAT_BATCH | POHMEL_FEAT_STABLE) == 0,
	      "connect");
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &c.root.oid, "ff", 0644, 0, 0,
		       NULL, &f, NULL) == 0 &&
	      pc_mkobj(&c, POHMEL_OP_MKDIR, &c.root.oid, "dd", 0755, 0, 0,
		       NULL, &d, NULL) == 0, "create a file and a directory");

	m = shim_mark();
	CHECK(pc_fsync(&c, &c.root.oid, 0, POHMEL_FSYNC_FS) == 0,
	      "FSYNC_FS of the root");
	snprintf(p, sizeof(p), "%s/export", real_base);
	CHECK(synced(m, "syncfs", p) == 1, "it ran syncfs(2) of the export");
	m = shim_mark();
	CHECK(pc_fsync(&c, &f.oid, 0, POHMEL_FSYNC_FS) == 0 &&
	      synced(m, "syncfs", p) == 1, "FSYNC_FS of a file: syncfs too");
	CHECK(pc_fsync(&c, &f.oid, 0, POHMEL_FSYNC_FS |
		       POHMEL_FSYNC_DATAONLY) == 0, "FSYNC_FS with DATAONLY");
	CHECK(pc_fsync(&c, &f.oid, 0, 0x4) == EOPNOTSUPP &&
	      pc_fsync(&c, &c.root.oid, 0, 0x80000000U | POHMEL_FSYNC_FS) ==
	      EOPNOTSUPP, "unknown FSYNC flags: EOPNOTSUPP");

	m = shim_mark();
	CHECK(pc_fsync(&c, &d.oid, 0, 0) == 0, "FSYNC of a directory");
	snprintf(p, sizeof(p), "%s/export/dd", real_base);
	CHECK(synced(m, "fsync", p) == 1, "it ran fsync(2) of the directory");
	m = shim_mark();
	CHECK(pc_fsync(&c, &f.oid, 0, POHMEL_FSYNC_DATAONLY) == 0, "FSYNC "
	      "DATAONLY of a file");
	snprintf(p, sizeof(p), "%s/export/ff", real_base);
	CHECK(synced(m, "fdatasync", p) == 1, "it ran fdatasync(2) of it");
	cl_close(&c);
}

static void t_state_sync(void)
{
	char handles[PATH_MAX + 32], sess[PATH_MAX + 64], sdir[PATH_MAX + 32];
	char p[PATH_MAX + 64];
	struct wattr f, g;
	struct pc c, c2;
	uint64_t h;
	uint32_t done;
	long m;

	snprintf(handles, sizeof(handles), "%s/state/handles", real_base);
	snprintf(sdir, sizeof(sdir), "%s/state/sessions", real_base);

	/* A new session: its file's name needs the directory synced. */
	CHECK(cl_want(&c, POHMEL_FEAT_BATCH | POHMEL_FEAT_STABLE) == 0,
	      "a new session");
	sess_path(sess, sizeof(sess), &c);
	m = shim_mark();
	CHECK(pc_fsync(&c, &c.root.oid, 0, 0) == 0, "FSYNC of the root");
	CHECK(synced(m, "fdatasync", sess) == 1,
	      "the new session's file was fdatasync'd before the reply");
	CHECK(synced(m, "fsync", sdir) == 1,
	      "and the sessions directory fsync'd (the file's name)");

	/* A CREATE that hands out a new object id, then FSYNC. */
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &c.root.oid, "s1", 0644, 0, 0,
		       NULL, &f, NULL) == 0, "CREATE s1 (a new object id)");
	m = shim_mark();
	CHECK(pc_fsync(&c, &f.oid, 0, 0) == 0, "FSYNC s1");
	snprintf(p, sizeof(p), "%s/export/s1", real_base);
	CHECK(synced(m, "fsync", p) == 1, "s1 itself fsync'd");
	CHECK(synced(m, "fdatasync", handles) == 1,
	      "the handles log fdatasync'd before the FSYNC reply");
	CHECK(synced(m, "fdatasync", sess) == 1,
	      "the session file (CREATE's reply record) fdatasync'd before "
	      "the FSYNC reply");
	CHECK(synced(m, "fsync", sdir) == 0,
	      "the sessions directory not again (no new name)");

	m = shim_mark();
	CHECK(pc_fsync(&c, &f.oid, 0, 0) == 0 &&
	      pc_fsync(&c, &c.root.oid, 0, POHMEL_FSYNC_DATAONLY) == 0,
	      "two more FSYNCs with nothing new");
	CHECK(synced(m, "fsync", p) == 1, "s1 fsync'd again (it is asked)");
	CHECK(synced(m, "fdatasync", handles) == 0 &&
	      synced(m, "fdatasync", sess) == 0 && synced(m, "fsync", sdir) ==
	      0 && synced(m, "fsync", handles) == 0,
	      "but not the handles log, session file or directory");

	/* OPEN makes a handle (session record): a STABLE WRITE through it
	 * syncs it, and the new id of s2, with the data. */
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &c.root.oid, "s2", 0644, 0, 0,
		       NULL, &g, NULL) == 0 &&
	      pc_open(&c, &g.oid, POHMEL_OPEN_WRITE, &h, NULL) == 0,
	      "CREATE s2 and OPEN it");
	m = shim_mark();
	CHECK(pc_write(&c, &g.oid, h, 0, "abc", 3, POHMEL_IO_STABLE,
		       &done) == 0 && done == 3, "STABLE WRITE through it");
	snprintf(p, sizeof(p), "%s/export/s2", real_base);
	CHECK(synced(m, "fdatasync", p) == 1 &&
	      synced(m, "fdatasync", handles) == 1 &&
	      synced(m, "fdatasync", sess) == 1,
	      "data, handles log and session file (the OPEN) fdatasync'd "
	      "before its reply");
	m = shim_mark();
	CHECK(pc_write(&c, &g.oid, h, 3, "d", 1, 0, &done) == 0 &&
	      synced(m, "fdatasync", p) == 0 &&
	      synced(m, "fdatasync", sess) == 0,
	      "an unstable WRITE syncs nothing");

	/* Another session: its own file, not the first one's. */
	CHECK(cl_want(&c2, POHMEL_FEAT_STABLE) == 0, "a second session");
	m = shim_mark();
	CHECK(pc_fsync(&c2, &c2.root.oid, 0, 0) == 0, "it FSYNCs");
	sess_path(p, sizeof(p), &c2);
	CHECK(synced(m, "fdatasync", p) == 1 && synced(m, "fsync", sdir) == 1,
	      "its session file and the directory synced");
	CHECK(synced(m, "fdatasync", sess) == 0,
	      "not the first session's file (new records: the unstable "
	      "WRITE's)");
	pc_close(&c, &g.oid, h);
	cl_close(&c2);
	cl_close(&c);
}

int main(int argc, char **argv)
{
	int setup_err;
	char *slash;

	setup_err = setup_base(argc, argv, "stable", exp_dir, sizeof(exp_dir));
	if (setup_err)
		return setup_err;
	if (!realpath(base, real_base))
		return 1;
	snprintf(shim_log, sizeof(shim_log), "%s/shim.log", real_base);
	snprintf(shim, sizeof(shim), "%s", argv[0]);
	slash = strrchr(shim, '/');
	snprintf(slash ? slash + 1 : shim,
		 sizeof(shim) - (size_t)(slash ? slash + 1 - shim : 0),
		 "fsync_shim.so");
	{
		char r[PATH_MAX];

		if (!realpath(shim, r)) {
			printf("# %s: %s\n", shim, strerror(errno));
			return 1;
		}
		snprintf(shim, sizeof(shim), "%s", r);
	}
	snprintf(conf_text, sizeof(conf_text),
		 "export / %s rw no_root_squash\nstate-dir %s/state\n"
		 "key-file none\n", exp_dir, base);
	CHECK(start_server("stable", conf_text, &sp) == 0, "pohmeld starts");
	if (tap_fail) {
		printf("# pohmeld %s did not start\n", server_bin);
		return tap_done();
	}
	t_verifier();

	if (start_shimmed("stable-shim")) {
		CHECK(0, "pohmeld starts under fsync_shim.so");
		return finish_base();
	}
	CHECK(1, "pohmeld starts under fsync_shim.so");
	t_fsync_flags();
	t_state_sync();
	t_pool();
	CHECK(stop_server(&sp) == 0, "SIGTERM: clean exit 0");
	return finish_base();
}
