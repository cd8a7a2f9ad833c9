/* writeback WB W2 WBMNT EXPORTDIR: objects created locally under a
 * directory write grant (src/wb.c), through a mount with writeback=on and
 * wb_delay=6 at WBMNT (the local-only steps must finish within it, on a
 * loaded machine too); WB is a fresh directory on it, W2 the same one
 * through mount 2 (another client), EXPORTDIR the same one in the
 * server's export.
 *   local    mkdir, mknod (file, fifo) and symlink in a directory the
 *            mount holds EXCL: no create request is sent (mountstats),
 *            the objects are there at once, with their final inode
 *            numbers, and stat of them sends nothing either;
 *   data     a new file written, closed, chmod'ed and utimensat'ed sends
 *            nothing; the recall sends its data, then its attributes (the
 *            other client sees the mtime set, not the WRITE's);
 *   open     open(O_CREAT) and close of new files sends nothing either
 *            (no create, no OPEN: it waits for the handle's first use);
 *            a file another user creates with mode 0 is written and
 *            fsynced through that later OPEN (as its creator);
 *   recall   mount 2's listing of the directory recalls the grant: the
 *            writer sends its creates first, and mount 2 sees every name,
 *            with the same inode numbers and types;
 *   fsync    fsync of the directory sends what is pending;
 *   batch    new files' data and attributes go in their creates' BATCH,
 *            and a syncfs commits them with one FSYNC_FS;
 *   dirattr  chmod and utimes of a new directory are log entries too;
 *   age      left alone, the log goes out after wb_delay;
 *   conflict a name made in the export meanwhile: the flushed create
 *            fails (EEXIST), is counted, and the directory's next fsync
 *            reports it.
 */
#include "tap.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define N	40
#define NF	20
#define MTIME	1234567890
#define NU	20

static const char *wbmnt;

/* A counter of WBMNT (mountstat in tap.c), -1 if missing. */
static long long mstat(const char *key)
{
	return mountstat(wbmnt, key);
}

static long long creates(void)
{
	return mstat("create") + mstat("mkdir") + mstat("mknod") +
	       mstat("symlink");
}

static int make(const char *dir, int i)
{
	char p[4300];

	snprintf(p, sizeof(p), "%s/n%d", dir, i);
	switch (i % 4) {
	case 0:
		return mkdir(p, 0755);
	case 1:
		return mknod(p, S_IFREG | 0644, 0);
	case 2:
		return mkfifo(p, 0600);
	default:
		return symlink("target", p);
	}
}

static int type_ok(const struct stat *st, int i)
{
	switch (i % 4) {
	case 0:
		return S_ISDIR(st->st_mode);
	case 1:
		return S_ISREG(st->st_mode);
	case 2:
		return S_ISFIFO(st->st_mode);
	default:
		return S_ISLNK(st->st_mode);
	}
}

/*
 * In a directory of WB open to all (made locally too), uid 65534 creates
 * a file with mode 0, writes 5 bytes and fsyncs: the deferred OPEN goes
 * as the creator (POHMEL_OPEN_CREATED), whatever the mode. 1 if the
 * export then holds them.
 */
static int mode0_file(const char *wb, const char *ex)
{
	char dir[4300], p[4400], got[16];
	int st;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/u", wb);
	if (mkdir(dir, 0777) || chmod(dir, 0777))
		return 0;
	pid = fork();
	if (pid == 0) {
		int fd;

		snprintf(p, sizeof(p), "%s/m0", dir);
		if (setgid(65534) || setuid(65534))
			_exit(2);
		fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0);
		if (fd < 0)
			_exit(3);
		if (write(fd, "hello", 5) != 5)
			_exit(4);
		if (fsync(fd))
			_exit(5);
		_exit(close(fd) ? 6 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		tap_diag("mode 0 writer: status %#x (%s)", st,
			 WIFEXITED(st) ? "exit 3 open, 4 write, 5 fsync, 6 close" : "signal");
		return 0;
	}
	snprintf(p, sizeof(p), "%s/u/m0", ex);
	return read_file(p, got, sizeof(got)) == 5 && !memcmp(got, "hello", 5);
}

/* Make NU files u0.. in DIR, written and closed (creates on the log). */
static int make_files(const char *dir)
{
	char p[4400];
	int i;

	for (i = 0; i < NU; i++) {
		snprintf(p, sizeof(p), "%s/u%d", dir, i);
		if (write_file(p, "bye", 3, O_EXCL, 0644))
			return 0;
	}
	return 1;
}

/* How many of u0.. are in DIR. */
static int count_files(const char *dir)
{
	struct stat st;
	char p[4400];
	int i, n = 0;

	for (i = 0; i < NU; i++) {
		snprintf(p, sizeof(p), "%s/u%d", dir, i);
		n += lstat(p, &st) == 0;
	}
	return n;
}

static int unlink_files(const char *dir)
{
	char p[4400];
	int i;

	for (i = 0; i < NU; i++) {
		snprintf(p, sizeof(p), "%s/u%d", dir, i);
		if (unlink(p))
			return 0;
	}
	return 1;
}

/*
 * Unlink and rmdir under the directory write grant (wb_remove.c), in
 * WB's directory D held EXCL (D2: through mount 2, EX: in the export):
 *   cancel  files made and unlinked before any flush: no create and no
 *           UNLINK is sent, and the export never has them (OPEN and WRITE
 *           are not counted: the flusher may write other files' pages
 *           meanwhile);
 *   logged  files flushed first (fsync of D), then unlinked: no UNLINK
 *           sent, the export still has them, mount 2's lookup recalls
 *           the grant and then neither it nor the export has them;
 *   open    a file unlinked while open goes to the server at once (its
 *           handle keeps it there) and is still read through the fd;
 *   rmdir   a directory made, filled, emptied and removed before any
 *           flush sends nothing; one flushed first, emptied and removed
 *           sends no RMDIR until mount 2's lookup recalls the grant.
 */
static void unlinks(const char *d, const char *d2, const char *ex)
{
	long long s0 = -1, s1 = -2, r0 = 0, x0 = 0, e0, m0, g0, l0 = 0, f0;
	char p[4300], got[8];
	int fd, ok, tries;

	/*
	 * Each local-only sequence below starts after a syncfs of the mount
	 * (it waits for a flush still running: the log is empty, its age
	 * timer stopped, and no kept page is left for the flusher to write
	 * meanwhile, whose WRITE would send the log first) and is tried again (up to 5 times) if a
	 * flush came in the middle of it all the same (wb_flushed moved, or
	 * requests went out: one still running when the counts were read):
	 * it must once run through untouched. A running flush holds the
	 * log: a removal then follows its create instead of cancelling it;
	 * a directory grant lost meanwhile sends the creates to the server
	 * (wb_local short of them): both are right, and tried again.
	 */
	fd = open(d, O_RDONLY | O_DIRECTORY);
	for (tries = 1;; tries++) {
		ok = 0;
		if (fd < 0 || syncfs(fd))
			break;
		s0 = creates() + mstat("unlink");
		r0 = mstat("wb_removed");
		x0 = mstat("wb_cancelled");
		f0 = mstat("wb_flushed");
		l0 = mstat("wb_local");
		ok = make_files(d) && unlink_files(d);
		s1 = creates() + mstat("unlink");
		if (!ok || tries == 5 || (mstat("wb_flushed") == f0 &&
					  mstat("wb_local") == l0 + NU &&
					  s1 == s0))
			break;
		tap_diag("  cancel: disturbed (attempt %d: a flush came in between, or %lld of %d creates local): again",
			 tries, mstat("wb_local") - l0, NU);
	}
	tap_check(ok && s0 >= 0 && s1 == s0,
			 "writeback: unlink: cancel: %d files made, written, closed and unlinked: no create and no UNLINK sent (%lld -> %lld)",
			 NU, s0, s1);
	tap_check(mstat("wb_cancelled") == x0 + NU &&
			 mstat("wb_removed") == r0 + NU,
			 "writeback: unlink: cancel: mountstats wb_removed and wb_cancelled count them (%lld, %lld more)",
			 mstat("wb_removed") - r0, mstat("wb_cancelled") - x0);
	ok = fd >= 0 && fsync(fd) == 0;
	tap_check(ok && count_files(d) == 0 && count_files(ex) == 0 &&
			 mstat("unlink") + creates() == s0,
			 "writeback: unlink: cancel: after fsync of the directory neither the mount nor the export has them, and still nothing was sent");

	e0 = mstat("wb_errors");
	for (tries = 1;; tries++) {
		ok = make_files(d) && fd >= 0 && fsync(fd) == 0;
		tap_check(ok && count_files(ex) == NU,
			  "writeback: unlink: logged: %d files made and flushed (fsync of the directory): the export has them (%d)",
			  NU, count_files(ex));
		s0 = mstat("unlink");
		r0 = mstat("wb_removed");
		f0 = mstat("wb_flushed");
		ok = unlink_files(d);
		s1 = mstat("unlink");
		if (!ok || tries == 5 || (mstat("wb_flushed") == f0 &&
					  s1 == s0))
			break;
		tap_diag("  logged: a flush came in between (attempt %d): again", tries);
		if (fsync(fd))
			break;
		s0 = mstat("unlink");
	}
	tap_check(ok && s1 == s0 && mstat("wb_removed") == r0 + NU &&
			 count_files(d) == 0,
			 "writeback: unlink: logged: unlinked, gone from the mount, no UNLINK sent (%lld -> %lld; wb_removed +%lld)",
			 s0, s1, mstat("wb_removed") - r0);
	tap_check(count_files(ex) == NU,
			 "writeback: unlink: logged: the export still has them (%d of %d)",
			 count_files(ex), NU);
	tap_check(count_files(d2) == 0,
			 "writeback: unlink: logged: mount 2's lookups recall the grant and find none (%d)",
			 count_files(d2));
	tap_check(count_files(ex) == 0 && mstat("unlink") == s0 + NU &&
			 mstat("wb_errors") == e0,
			 "writeback: unlink: logged: then the export has none either: %lld UNLINKs sent, no error",
			 mstat("unlink") - s0);
	if (fd >= 0)
		close(fd);

	snprintf(p, sizeof(p), "%s/uo", d);
	ok = write_file(p, "open", 4, O_EXCL, 0644) == 0;
	fd = ok ? open(p, O_RDONLY) : -1;
	s0 = mstat("unlink");
	r0 = mstat("wb_removed");
	ok = fd >= 0 && unlink(p) == 0;
	tap_check(ok && mstat("unlink") == s0 + 1 &&
			 mstat("wb_removed") == r0,
			 "writeback: unlink: open: a file unlinked while open goes to the server at once (UNLINKs %lld -> %lld)",
			 s0, mstat("unlink"));
	tap_check(fd >= 0 && pread(fd, got, sizeof(got), 0) == 4 &&
			 !memcmp(got, "open", 4),
			 "writeback: unlink: open: and is read through its fd after");
	if (fd >= 0)
		close(fd);

	/* rmdir, cancelled: the directory and its files never go */
	snprintf(p, sizeof(p), "%s/rd", d);
	m0 = mstat("mkdir");
	g0 = mstat("grant");
	fd = open(d, O_RDONLY | O_DIRECTORY);
	for (tries = 1;; tries++) {
		ok = 0;
		if (fd < 0 || syncfs(fd))
			break;
		s0 = creates() + mstat("unlink") + mstat("rmdir");
		r0 = mstat("wb_removed");
		x0 = mstat("wb_cancelled");
		l0 = mstat("wb_local");
		f0 = mstat("wb_flushed");
		ok = mkdir(p, 0755) == 0 && make_files(p) && unlink_files(p) &&
		     rmdir(p) == 0;
		s1 = creates() + mstat("unlink") + mstat("rmdir");
		if (!ok || tries == 5 || (mstat("wb_flushed") == f0 &&
					  mstat("wb_local") == l0 + NU + 1 &&
					  s1 == s0))
			break;
		tap_diag("  rmdir: disturbed (attempt %d: a flush came in between, or wb_local +%lld, not +21): again",
			 tries, mstat("wb_local") - l0);
	}
	tap_check(ok && s1 == s0 && mstat("wb_removed") == r0 + NU + 1 &&
		  mstat("wb_cancelled") == x0 + NU + 1,
		  "writeback: unlink: rmdir: a directory made, filled with %d files, emptied and removed: nothing sent (%lld -> %lld; wb_removed +%lld, wb_cancelled +%lld)",
		  NU, s0, s1, mstat("wb_removed") - r0, mstat("wb_cancelled") - x0);
	if (s1 != s0)
		tap_diag("  MKDIRs %lld, GRANTs %lld, RMDIRs %lld, UNLINKs %lld, wb_local %lld",
			 mstat("mkdir") - m0, mstat("grant") - g0, mstat("rmdir"),
			 mstat("unlink"), mstat("wb_local"));
	/* rmdir, logged: the directory reached the server first */
	snprintf(p, sizeof(p), "%s/rl", d);
	ok = mkdir(p, 0755) == 0 && fd >= 0 && fsync(fd) == 0;
	snprintf(p, sizeof(p), "%s/rl", ex);
	ok = ok && access(p, F_OK) == 0;
	s0 = mstat("rmdir");
	snprintf(p, sizeof(p), "%s/rl", d);
	ok = ok && rmdir(p) == 0 && access(p, F_OK) && errno == ENOENT;
	s1 = mstat("rmdir");
	snprintf(p, sizeof(p), "%s/rl", ex);
	tap_check(ok && s1 == s0 && access(p, F_OK) == 0,
		  "writeback: unlink: rmdir: a directory flushed first, then removed: gone on the mount, no RMDIR sent, still in the export (%lld -> %lld)",
		  s0, s1);
	snprintf(p, sizeof(p), "%s/rl", d2);
	ok = access(p, F_OK) && errno == ENOENT;
	snprintf(p, sizeof(p), "%s/rl", ex);
	tap_check(ok && access(p, F_OK) && mstat("rmdir") == s0 + 1,
		  "writeback: unlink: rmdir: mount 2's lookup recalls the grant: it went (1 RMDIR), neither mount 2 nor the export has it");
	if (fd >= 0)
		close(fd);
}

/* Messages of type OP sent by WBMNT ("op OP:" lines, absent until one). */
static long long msgs(const char *op)
{
	char key[64];
	long long v;

	snprintf(key, sizeof(key), "op %s", op);
	v = mstat(key);
	return v < 0 ? 0 : v;
}

/*
 * batch: NB new files written, made read-only and given an mtime, as tar
 * does, then a syncfs: their data and attributes go in their creates'
 * BATCH (src/wb_data.c), and the sync's one FSYNC_FS commits them all: a
 * few messages for all of them, where each used to cost an OPEN, a
 * WRITE, a SETATTR and an FSYNC. Tried again as the sequences above if a
 * flush came in the middle (each try makes new names).
 */
#define NB	30
static void batch_data(const char *d, const char *ex)
{
	static unsigned char data[3000], got[sizeof(data) + 1];
	const struct timespec tv[2] = { { MTIME, 0 }, { MTIME, 0 } };
	long long r0 = 0, r1 = 0, r2, w0 = 0, s0 = 0, f0, l0, x0, g0, o0;
	char p[4400], bd[4250];
	int fd, i, ok, tries, good = 0;
	struct stat st;

	snprintf(bd, sizeof(bd), "%s/bd", d);
	ok = mkdir(bd, 0755) == 0;
	fd = open(d, O_RDONLY | O_DIRECTORY);
	for (tries = 1; ok; tries++) {
		int disturbed;

		if (fd < 0 || syncfs(fd)) {
			ok = 0;
			break;
		}
		r0 = mstat("round_trips");
		w0 = mstat("wb_data");
		s0 = msgs("fsync");
		f0 = mstat("wb_flushed");
		l0 = mstat("wb_local");
		x0 = msgs("getxattr");
		g0 = msgs("grant");
		o0 = msgs("open");
		for (i = 0; ok && i < NB; i++) {
			snprintf(p, sizeof(p), "%s/b%d.%d", bd, i, tries);
			fill_pattern(data, sizeof(data), 100 * tries + i, 0);
			ok = write_file(p, data, sizeof(data) - i, O_EXCL,
					0644) == 0 && chmod(p, 0444) == 0 &&
			     utimensat(AT_FDCWD, p, tv, 0) == 0;
		}
		r2 = mstat("round_trips");
		disturbed = mstat("wb_flushed") != f0 ||
			    mstat("wb_local") != l0 + NB || r2 != r0;
		ok = ok && syncfs(fd) == 0;
		r1 = mstat("round_trips");
		if (!ok || !disturbed || tries == 5)
			break;
		tap_diag("  batch: disturbed (attempt %d: %lld flushed, %lld messages sent meanwhile, %lld of %d creates local; getxattr %lld, grant %lld, open %lld): again",
			 tries, mstat("wb_flushed") - f0, r2 - r0,
			 mstat("wb_local") - l0, NB, msgs("getxattr") - x0,
			 msgs("grant") - g0, msgs("open") - o0);
	}
	tap_check(ok, "writeback: batch: %d new files written, chmod 0444, utimensat, then syncfs (attempt %d)",
		  NB, tries);
	tap_check(mstat("wb_data") == w0 + NB,
		  "writeback: batch: each file's data and attributes went with its create (wb_data +%lld)",
		  mstat("wb_data") - w0);
	tap_check(r0 > 0 && r1 - r0 <= 4,
		  "writeback: batch: the syncfs sent %lld messages for the %d files (BATCHes and one FSYNC_FS), not 4 each",
		  r1 - r0, NB);
	tap_check(msgs("fsync") == s0 + 1,
		  "writeback: batch: one FSYNC for them all (the FSYNC_FS), not one per file (%lld)",
		  msgs("fsync") - s0);
	for (i = 0; ok && i < NB; i++) {
		snprintf(p, sizeof(p), "%s/bd/b%d.%d", ex, i, tries);
		fill_pattern(data, sizeof(data), 100 * tries + i, 0);
		if (stat(p, &st) == 0 && (st.st_mode & 07777) == 0444 &&
		    st.st_mtime == MTIME &&
		    st.st_size == (off_t)(sizeof(data) - i) &&
		    read_file(p, got, sizeof(got)) == (ssize_t)(sizeof(data) - i) &&
		    !memcmp(got, data, sizeof(data) - i))
			good++;
	}
	tap_check(good == NB,
		  "writeback: batch: the export has each file's data, mode 0444 and mtime (%d of %d)",
		  good, NB);
	if (fd >= 0)
		close(fd);
}

/*
 * dirattr: chmod and utimes of a directory made locally, after files
 * were made in it (as tar does when it leaves a directory), go on the
 * log as a SETATTR entry, in order: no SETATTR message of their own, and
 * after the flush the export has the mode and the mtime set, not the
 * creates' (which went before it).
 */
static void dir_attrs(const char *d, const char *ex)
{
	const struct timespec tv[2] = { { MTIME, 0 }, { MTIME, 0 } };
	long long s0, a0;
	char p[4400], dd[4250];
	struct stat st;
	int fd, i, ok;

	snprintf(dd, sizeof(dd), "%s/dattr", d);
	ok = mkdir(dd, 0700) == 0;
	for (i = 0; ok && i < 3; i++) {
		snprintf(p, sizeof(p), "%s/f%d", dd, i);
		ok = write_file(p, "x", 1, O_EXCL, 0644) == 0;
	}
	s0 = msgs("setattr");
	a0 = mstat("wb_attr_local");
	ok = ok && chmod(dd, 0750) == 0 && utimensat(AT_FDCWD, dd, tv, 0) == 0;
	tap_check(ok && stat(dd, &st) == 0 && (st.st_mode & 07777) == 0750 &&
		  st.st_mtime == MTIME,
		  "writeback: dirattr: a directory made locally, 3 files in it, then chmod 0750 and utimensat: stat shows them");
	tap_check(msgs("setattr") == s0 && mstat("wb_attr_local") == a0 + 2,
		  "writeback: dirattr: no SETATTR message (%lld), both kept on the log (wb_attr_local +%lld)",
		  msgs("setattr") - s0, mstat("wb_attr_local") - a0);
	fd = open(d, O_RDONLY | O_DIRECTORY);
	ok = fd >= 0 && syncfs(fd) == 0;
	if (fd >= 0)
		close(fd);
	snprintf(p, sizeof(p), "%s/dattr", ex);
	tap_check(ok && stat(p, &st) == 0 && (st.st_mode & 07777) == 0750 &&
		  st.st_mtime == MTIME,
		  "writeback: dirattr: after syncfs the export has mode 0750 and the mtime set, not the creates' (%o, %lld)",
		  ok ? st.st_mode & 07777 : 0, ok ? (long long)st.st_mtime : 0LL);
	snprintf(p, sizeof(p), "%s/dattr/f2", ex);
	tap_check(access(p, F_OK) == 0 && msgs("setattr") == s0,
		  "writeback: dirattr: and its files, still with no SETATTR message of its own");
}

/*
 * PROCS processes create PER files each in DIR (held EXCL) at once, so
 * that their ids are taken in one order and could be logged in another;
 * the server takes an id as spending those below it in its range, and
 * refused the overtaken one (EINVAL) until creators held create_mu from
 * taking an id to logging it. 1 if every process made all of its files.
 */
#define PROCS	4
#define PER	50
static int concurrent_creates(const char *dir)
{
	int i, st, ok = 1;
	pid_t pid[PROCS];

	for (i = 0; i < PROCS; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			char p[4400];
			int j;

			for (j = 0; j < PER; j++) {
				snprintf(p, sizeof(p), "%s/c%d.%d", dir, i, j);
				if (write_file(p, "c", 1, O_EXCL, 0644))
					_exit(1);
			}
			_exit(0);
		}
		if (pid[i] < 0)
			ok = 0;
	}
	for (i = 0; i < PROCS; i++)
		if (pid[i] > 0 && (waitpid(pid[i], &st, 0) != pid[i] ||
				   !WIFEXITED(st) || WEXITSTATUS(st)))
			ok = 0;
	return ok;
}

int main(int argc, char **argv)
{
	long long c0, c1, l0, f0, g0, o0;
	char d[4200], d2[4200], p[4300], ex[4200];
	size_t exlen;
	int tries;
	ino_t ino[N];
	struct stat st;
	static unsigned char data[8192 + 100], got[sizeof(data) + 1];
	const struct timespec tv[2] = { { MTIME, 0 }, { MTIME, 0 } };
	int i, ok, fd, names, files;
	DIR *dh;
	struct dirent *de;

	if (argc != 5)
		die("usage: writeback WB W2 WBMNT EXPORTDIR");
	wbmnt = argv[3];
	tap_init();

	/* local */
	snprintf(d, sizeof(d), "%s/wb", argv[1]);
	snprintf(d2, sizeof(d2), "%s/wb", argv[2]);
	snprintf(ex, sizeof(ex), "%s/wb", argv[4]);
	tap_check(mkdir(d, 0755) == 0 && make(d, 1000) == 0,
		  "writeback: a directory and a first name in it (asks for the grant and ids)");
	c0 = creates();
	l0 = mstat("wb_local");
	g0 = mstat("getattr");
	ok = 1;
	for (i = 0; i < N; i++)
		if (make(d, i))
			ok = 0;
	tap_check(ok, "writeback: local: %d mkdir/mknod/mkfifo/symlink", N);
	c1 = creates();
	tap_check(c0 >= 0 && c1 == c0,
		  "writeback: local: no create request sent (%lld -> %lld)", c0, c1);
	tap_check(mstat("wb_local") == l0 + N,
		  "writeback: local: mountstats wb_local counts them (%lld -> %lld)",
		  l0, mstat("wb_local"));
	ok = 1;
	for (i = 0; i < N; i++) {
		snprintf(p, sizeof(p), "%s/n%d", d, i);
		if (lstat(p, &st) || !type_ok(&st, i))
			ok = 0;
		ino[i] = st.st_ino;
	}
	tap_check(ok, "writeback: local: each is there at once, of its type");
	tap_check(mstat("getattr") == g0 && creates() == c0,
		  "writeback: local: stat of them sends nothing either");

	/* open */
	o0 = mstat("open");
	l0 = mstat("open_deferred");
	ok = 1;
	for (i = 0; i < NF; i++) {
		snprintf(p, sizeof(p), "%s/f%d", d, i);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || close(fd))
			ok = 0;
	}
	tap_check(ok, "writeback: open: %d files made by open(O_CREAT), closed", NF);
	c1 = mstat("open");
	tap_check(o0 >= 0 && c1 == o0 && creates() == c0,
		  "writeback: open: no OPEN and no create sent (OPENs %lld -> %lld)",
		  o0, c1);
	c1 = mstat("open_deferred");
	tap_check(c1 == l0 + NF,
		  "writeback: open: mountstats open_deferred counts them (%lld -> %lld)",
		  l0, c1);
	/*
	 * data: written, closed, its mode and mtime set (as tar does) and
	 * stat'ed, it stays in the page cache, its attributes local
	 */
	fill_pattern(data, sizeof(data), 7, 0);
	o0 = mstat("write") + mstat("open") + mstat("getattr") + mstat("setattr");
	l0 = mstat("wb_attr_local");
	snprintf(p, sizeof(p), "%s/data", d);
	ok = write_file(p, data, sizeof(data), O_EXCL, 0644) == 0 &&
	     chmod(p, 0640) == 0 && utimensat(AT_FDCWD, p, tv, 0) == 0 &&
	     stat(p, &st) == 0 && st.st_size == (off_t)sizeof(data);
	tap_check(ok, "writeback: data: a new file written (%zu bytes), closed, chmod, utimensat",
		  sizeof(data));
	tap_check(ok && (st.st_mode & 07777) == 0640 && st.st_mtime == MTIME,
		  "writeback: data: stat shows the new mode and mtime (%o, %lld)",
		  ok ? st.st_mode & 07777 : 0, ok ? (long long)st.st_mtime : 0LL);
	c1 = mstat("write") + mstat("open") + mstat("getattr") + mstat("setattr");
	tap_check(o0 >= 0 && c1 == o0,
		  "writeback: data: no WRITE, OPEN, GETATTR or SETATTR sent for it (%lld -> %lld)",
		  o0, c1);
	c1 = mstat("wb_attr_local");
	tap_check(c1 == l0 + 2,
		  "writeback: data: mountstats wb_attr_local counts chmod and utimensat (%lld -> %lld)",
		  l0, c1);

	/* recall */
	f0 = mstat("wb_flushed");
	g0 = mstat("wb_batches");
	names = files = 0;
	dh = opendir(d2);
	while (dh && (de = readdir(dh))) {
		names += de->d_name[0] == 'n';
		files += de->d_name[0] == 'f';
	}
	if (dh)
		closedir(dh);
	tap_check(names == N + 1,
		  "writeback: recall: mount 2 lists all %d names (%d)", N + 1, names);
	tap_check(files == NF,
		  "writeback: recall: and the %d files made by open(O_CREAT) (%d)", NF, files);
	snprintf(p, sizeof(p), "%s/data", d2);
	ok = stat(p, &st) == 0;
	tap_check(ok && (st.st_mode & 07777) == 0640 && st.st_mtime == MTIME,
		  "writeback: recall: mount 2 sees the data file's mode and mtime, set after its data (%o, %lld)",
		  ok ? st.st_mode & 07777 : 0, ok ? (long long)st.st_mtime : 0LL);
	tap_check(read_file(p, got, sizeof(got)) == (ssize_t)sizeof(data) &&
		  !memcmp(got, data, sizeof(data)),
		  "writeback: recall: mount 2 reads the data the writer kept in its page cache");
	c1 = mstat("wb_flushed");
	tap_check(c1 >= f0 + N,
		  "writeback: recall: the writer sent its creates first (wb_flushed %lld -> %lld)",
		  f0, c1);
	o0 = mstat("wb_batches");
	tap_check(o0 > g0 && (o0 - g0) * 16 <= c1 - f0,
		  "writeback: recall: in BATCHes of many (%lld creates in %lld)",
		  c1 - f0, o0 - g0);
	ok = 1;
	for (i = 0; i < N; i++) {
		snprintf(p, sizeof(p), "%s/n%d", d2, i);
		if (lstat(p, &st) || !type_ok(&st, i) || st.st_ino != ino[i])
			ok = 0;
	}
	tap_check(ok, "writeback: recall: mount 2 sees each with its type and the inode number the writer gave it");

	/* fsync */
	tap_check(make(d, 1001) == 0 && creates() >= c0,
		  "writeback: fsync: one more name, local");
	f0 = mstat("wb_flushed");
	fd = open(d, O_RDONLY | O_DIRECTORY);
	ok = fd >= 0 && fsync(fd) == 0;
	c1 = mstat("wb_flushed");
	tap_check(ok && c1 == f0 + 1,
		  "writeback: fsync: fsync of the directory sends it (wb_flushed %lld -> %lld)",
		  f0, c1);
	snprintf(p, sizeof(p), "%s/n1001", ex);
	tap_check(lstat(p, &st) == 0, "writeback: fsync: it is in the export");

	l0 = mstat("open_deferred");
	tap_check(mode0_file(d, ex) == 1,
		  "writeback: open: another user's file created with mode 0 is written and fsynced (the export has its 5 bytes)");
	c1 = mstat("open_deferred");
	tap_check(c1 == l0 + 1,
		  "writeback: open: its OPEN was the deferred one (open_deferred %lld -> %lld)",
		  l0, c1);

	/* concurrent creators: ids reach the server in the order of each range */
	snprintf(p, sizeof(p), "%s/cc", d);
	l0 = mstat("wb_errors");
	ok = mkdir(p, 0755) == 0 && concurrent_creates(p);
	tap_check(ok, "writeback: order: %d processes created %d files each at once in one directory",
		  PROCS, PER);
	i = open(d, O_RDONLY | O_DIRECTORY);
	if (i >= 0) {
		int dfd = i;

		i = fsync(dfd);
		close(dfd);
	}
	snprintf(p, sizeof(p), "%s/cc", ex);
	names = 0;
	dh = opendir(p);
	while (dh && (de = readdir(dh)))
		names += de->d_name[0] == 'c';
	if (dh)
		closedir(dh);
	tap_check(i == 0 && names == PROCS * PER && mstat("wb_errors") == l0,
		  "writeback: order: fsync of the directory sent them all: the export has %d of %d, no create refused (wb_errors %lld -> %lld)",
		  names, PROCS * PER, l0, mstat("wb_errors"));

	/* age */
	tap_check(make(d, 1002) == 0, "writeback: age: one more name, local");
	snprintf(p, sizeof(p), "%s/n1002", ex);
	for (i = 0; i < 200 && lstat(p, &st); i++)	/* wb_delay + a flush */
		usleep(100000);
	tap_check(lstat(p, &st) == 0,
		  "writeback: age: with nothing else sent, it reaches the export by itself");

	/* unlink */
	unlinks(d, d2, ex);

	/* batch */
	batch_data(d, ex);
	dir_attrs(d, ex);

	/*
	 * conflict: the server has no such name yet; make one there before
	 * the flush. Counted before: the export change recalls the grant,
	 * and the flush that meets EEXIST may come before the fsync below.
	 * On a starved guest the age flush (wb_delay) may send the create
	 * first (the export's mkdir then fails with EEXIST): another name.
	 */
	exlen = strlen(ex);
	for (tries = 1, ok = 0; tries <= 5; tries++) {
		int n = 1001 + 4 * tries;	/* n % 4 == 1: a file */

		if (make(d, n))
			break;
		snprintf(ex + exlen, sizeof(ex) - exlen, "/n%d", n);
		l0 = mstat("wb_errors");
		ok = mkdir(ex, 0700) == 0;
		if (ok || errno != EEXIST)
			break;
		printf("# conflict: n%d reached the export before its mkdir (age flush): again\n",
		       n);
	}
	tap_check(ok, "writeback: conflict: a name made locally, the same name made in the export before its flush (attempt %d)",
		  tries);
	errno = 0;
	i = fd >= 0 ? fsync(fd) : 0;
	ok = errno;
	tap_check(i == -1 && ok == EEXIST,
		  "writeback: conflict: the directory's next fsync reports EEXIST (%s)",
		  i ? strerror(ok) : "it returned 0");
	c1 = mstat("wb_errors");
	tap_check(c1 == l0 + 1,
		  "writeback: conflict: counted in mountstats wb_errors (%lld -> %lld)",
		  l0, c1);
	tap_check(fd >= 0 && fsync(fd) == 0,
		  "writeback: conflict: reported once: the next fsync returns 0");
	if (fd >= 0)
		close(fd);
	return tap_done();
}
