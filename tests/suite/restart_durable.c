/* restart durable W1 W2 WSOFT SOFTMNT WE EMNT: the client's durability checks
 * that need the server down or stopped (restart.sh; $POHMEL_SERVER controls
 * pohmeld). W1, W2: the group's directory on mount 1 and 2 (hard); WSOFT:
 * the same directory through a third mount with soft,timeo=3, mounted at
 * SOFTMNT; WE: through a fourth, hard, mounted at EMNT for evict only.
 *   keep     a soft mount's fsync whose WRITE times out (the server is
 *            SIGSTOPped, then SIGKILLed before it read it) keeps the pages
 *            dirty: the next fsync, once it is back, writes them (mount 2
 *            reads them).
 *   killed   an fsync killed while its WRITE waits (the same way) leaves no
 *            errno for another opener's fsync (never 512, -ERESTARTSYS),
 *            and the data its write(2) took still reaches the server.
 *   evict    drop_caches returns while senders are stuck on a server that
 *            stopped reading: eviction queues its CLOSEs instead of
 *            waiting for the socket.
 *   dirsync  fsync of a directory reaches the server (an FSYNC is sent).
 *   resend   written and closed (applied, not yet stable), then the
 *            server "loses" it: stopped, the file cut back in the export
 *            and started with another write verifier (another boot id,
 *            POHMELD_TEST_BOOT_ID), as after a crash of its machine; the
 *            client writes it again before fsync returns (mount 2 reads
 *            it, mountstats commit_resends moved). A name created before
 *            and likewise undone cannot be sent again: fsync of its
 *            directory fails with EIO instead of claiming it is stable,
 *            and so does syncfs (checked first: fsync's own EIO reaches
 *            the superblock's errseq too; once: the next one returns 0).
 */
#include "tap.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG	(64 * 1024)

/*
 * Shell commands run in a child forked before any file of the mount is
 * open: a system() child of the test itself would inherit its
 * descriptors, and closing them (exit, or exec's close-on-exec) writes
 * back, through ->flush, what a check means to keep dirty - or waits
 * for a server the check has stopped.
 */
static int sh_req = -1, sh_rep = -1;

static void sh_start(void)
{
	int req[2], rep[2];
	char cmd[1024];
	pid_t pid;

	if (pipe(req) || pipe(rep))
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		size_t len;

		close(req[1]);
		close(rep[0]);
		while (read(req[0], &len, sizeof(len)) == sizeof(len) &&
		       len < sizeof(cmd) &&
		       read(req[0], cmd, len) == (ssize_t)len) {
			int rc;

			cmd[len] = 0;
			rc = system(cmd);
			if (write(rep[1], &rc, sizeof(rc)) != sizeof(rc))
				break;
		}
		_exit(0);
	}
	close(req[0]);
	close(rep[1]);
	sh_req = req[1];
	sh_rep = rep[0];
}

/* system(@cmd) in the child; its status, or -1 */
static int sh(const char *cmd)
{
	size_t len = strlen(cmd);
	int rc;

	if (sh_req < 0 || len >= 1024 ||
	    write(sh_req, &len, sizeof(len)) != sizeof(len) ||
	    write(sh_req, cmd, len) != (ssize_t)len)
		return -1;
	while (read(sh_rep, &rc, sizeof(rc)) != sizeof(rc))
		if (errno != EINTR)
			return -1;
	return rc;
}

static int server(const char *how)
{
	const char *s = getenv("POHMEL_SERVER");
	char cmd[512];

	if (!s)
		return -1;
	snprintf(cmd, sizeof(cmd), "%s %s", s, how);
	return sh(cmd);
}

static int content_is(const char *path, const unsigned char *want, size_t len)
{
	static unsigned char got[4 * BIG + 1];
	ssize_t n = read_file(path, got, sizeof(got));

	if (n != (ssize_t)len || memcmp(got, want, len)) {
		tap_diag("%s: %zd bytes%s", path, n,
			 n == (ssize_t)len ? ", content differs" : "");
		return 0;
	}
	return 1;
}

/* fsync until it works, for up to @secs (a soft mount may time out once
 * more while it reconnects); returns the last result, errno kept. */
static int fsync_retry(int fd, int secs)
{
	int rc = -1;

	for (int i = 0; i < secs; i++) {
		rc = fsync(fd);
		if (!rc)
			break;
		tap_diag("fsync: %s (errno %d), again in 1 s", strerror(errno), errno);
		sleep(1);
	}
	return rc;
}

/*
 * A new file with one byte written and fsynced: its WRITE's reply gave
 * this mount EXCL, so what is written next stays in the page cache.
 * The descriptor, or -1 after a failed check named @what. Close-on-exec:
 * server()'s shell would inherit it, and its close (->flush) writes back
 * what the check means to keep in the page cache.
 */
static int create_excl(const char *path, const char *what)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int ok = fd >= 0 && write(fd, "x", 1) == 1 && fsync(fd) == 0;

	tap_check(ok, "restart: %s", what);
	if (!ok && fd >= 0)
		close(fd);
	return ok ? fd : -1;
}

static void test_keep(const char *w2, const char *ws, const char *smnt)
{
	long long c0, c1, c2;
	static unsigned char buf[BIG];
	char ps[4200], p2[4200];
	int fd, rc, err;

	snprintf(ps, sizeof(ps), "%s/keep", ws);
	snprintf(p2, sizeof(p2), "%s/keep", w2);
	fill_pattern(buf, sizeof(buf), 19, 0);
	fd = create_excl(ps, "keep: create, write and fsync on the soft mount");
	if (fd < 0)
		return;
	/* stopped first, then written: nothing writes the pages back early */
	tap_check(server("pause") == 0, "restart: keep: server stopped (SIGSTOP)");
	/* buffered under the WRITE's EXCL grant: nothing sent yet */
	c0 = mountstat(smnt, "write");
	tap_check(pwrite(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf),
		  "restart: keep: a 64 KiB buffered write");
	c1 = mountstat(smnt, "write");
	tap_check(c0 >= 0 && c1 == c0,
		  "restart: keep: it stays in the page cache (WRITEs sent: %lld -> %lld)",
		  c0, c1);
	rc = fsync(fd);
	err = errno;
	c2 = mountstat(smnt, "write");
	tap_check(rc == -1 && err != 512,
		  "restart: keep: fsync with the server stopped fails (%s)",
		  rc ? strerror(err) : "it returned 0");
	/* what the check is about: a WRITE that failed, not one never sent */
	tap_check(c2 == c1 + 1, "restart: keep: its WRITE went out and timed out (%lld -> %lld)",
		  c1, c2);
	/* killed before it read the WRITE: as if it never arrived */
	tap_check(server("kill") == 0 && server("start") == 0,
		  "restart: keep: server killed unread and started again");
	rc = fsync_retry(fd, 30);
	tap_check(rc == 0, "restart: keep: fsync after the server is back returns 0");
	tap_diag("soft mount: WRITEs %lld, FSYNCs %lld, timeouts %lld, recalls %lld",
		 mountstat(smnt, "write"), mountstat(smnt, "fsync"), mountstat(smnt, "timeouts"),
		 mountstat(smnt, "recalls"));
	tap_check(content_is(p2, buf, sizeof(buf)),
		  "restart: keep: mount 2 reads the 64 KiB the failed fsync could not write");
	close(fd);
}

/* one byte from @fd within @secs, or 0 */
static int await(int fd, int secs)
{
	char c;

	alarm(secs);
	int n = read(fd, &c, 1);
	alarm(0);
	return n == 1;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* until mount @mnt's WRITE count passes @c0, for up to @secs; the last count */
static long long await_write(const char *mnt, long long c0, int secs)
{
	long long c = mountstat(mnt, "write");

	for (int i = 0; i < secs * 10 && c <= c0; i++) {
		usleep(100000);
		c = mountstat(mnt, "write");
	}
	return c;
}

static void test_killed(const char *w1, const char *w2)
{
	const char *m1 = getenv("POHMEL_MNT1");
	static unsigned char buf[BIG];
	char p1[4200], p2[4200];
	int fd, up[2], down[2], st, rc, err;
	long long c0, c1, c2;
	pid_t pid;

	snprintf(p1, sizeof(p1), "%s/killed", w1);
	snprintf(p2, sizeof(p2), "%s/killed", w2);
	fill_pattern(buf, sizeof(buf), 23, 0);
	fd = create_excl(p1, "killed: create, write and fsync");
	if (fd < 0)
		return;
	if (pipe(up) || pipe(down))
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		int f = open(p1, O_RDWR | O_CLOEXEC);

		close(up[0]);
		close(down[1]);
		if (f < 0 || write(up[1], "o", 1) != 1)
			_exit(1);
		await(down[0], 600);	/* the server is stopped now */
		if (pwrite(f, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
		    write(up[1], "w", 1) != 1)
			_exit(1);
		await(down[0], 600);
		fsync(f);		/* blocks (hard mount) until killed */
		_exit(2);
	}
	close(up[1]);
	close(down[0]);
	if (!tap_check(await(up[0], 60), "restart: killed: the writer opened it")) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		goto close_pipes;
	}
	/* stopped before the write: no recall can flush it early (keep) */
	tap_check(server("pause") == 0, "restart: killed: server stopped (SIGSTOP)");
	c0 = mountstat(m1, "write");
	if (write(down[1], "g", 1) != 1)
		die("pipe write: %s", strerror(errno));
	tap_check(await(up[0], 60), "restart: killed: the writer wrote 64 KiB");
	c1 = mountstat(m1, "write");
	tap_check(c0 >= 0 && c1 == c0,
		  "restart: killed: it stays in the page cache (WRITEs sent: %lld -> %lld)",
		  c0, c1);
	if (write(down[1], "f", 1) != 1)
		die("pipe write: %s", strerror(errno));
	/* killed once its fsync's WRITE is out, waiting for the reply */
	c2 = await_write(m1, c1, 60);
	tap_check(c2 > c1, "restart: killed: the writer's fsync sent its WRITE (%lld -> %lld)",
		  c1, c2);
	kill(pid, SIGKILL);
	/*
	 * Not waited for without a bound: with the fix of item 3 the dying
	 * writer was seen stuck in D state in its exit's close
	 * (filp_close -> filemap_write_and_wait_range -> folio_wait_writeback)
	 * while the server stayed stopped, and the check hung the group.
	 */
	rc = 0;			/* reaped */
	for (int i = 0; i < 300 && !rc; i++) {
		rc = waitpid(pid, &st, WNOHANG) == pid;
		if (!rc)
			usleep(100000);
	}
	tap_check(rc && WIFSIGNALED(st),
		  "restart: killed: the writer's fsync died of SIGKILL within 30 s, the server stopped");
	tap_check(server("kill") == 0 && server("start") == 0,
		  "restart: killed: server killed unread and started again");
	if (!rc)
		waitpid(pid, &st, 0);	/* it can finish its close now */
	rc = fsync(fd);		/* hard mount: waits for the reconnect */
	err = rc ? errno : 0;
	tap_check(rc == 0, "restart: killed: another opener's fsync returns 0 (%s)",
		  rc ? strerror(err) : "ok");
	if (err == 512)
		tap_diag("errno 512 is the kernel's -ERESTARTSYS leaking into errseq");
	tap_check(content_is(p2, buf, sizeof(buf)),
		  "restart: killed: the killed writer's 64 KiB reached the server (mount 2)");
close_pipes:
	close(up[0]);
	close(down[1]);
	close(fd);
}

#define EV_FILES	64
#define EV_WRITERS	24
#define EV_CHUNK	(1024 * 1024)

/*
 * echo 2 > drop_caches in a child (it may block in the kernel). 1 once
 * it returned within @secs, 0 if it failed; -1 if still running, its
 * pid then in *@pid for a later drop_wait().
 */
static int drop_slab(int secs, pid_t *pid)
{
	pid_t d = fork();
	int st, i;

	if (d == 0) {
		int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

		_exit(fd >= 0 && write(fd, "2", 1) == 1 ? 0 : 1);
	}
	for (i = 0; i < secs * 10; i++) {
		if (waitpid(d, &st, WNOHANG) == d)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0;
		usleep(100000);
	}
	*pid = d;
	return -1;
}

static void test_evict(const char *w1, const char *m1)
{
	char dir[4200], path[4300];
	pid_t w[EV_WRITERS], d = 0;
	long long c0, c1;
	int i, st, alive = 0, ok = 1, dropped, bfd[EV_WRITERS];

	/*
	 * A mount of its own (@m1): on mount 1, after the earlier checks,
	 * close(2) sent each file's CLOSE at once (no idle handle kept), so
	 * eviction had none to send and drop_caches returned with either
	 * module. The first drop leaves nothing else of it cached.
	 */
	dropped = drop_slab(60, &d);
	if (dropped < 0)
		waitpid(d, &st, 0);
	tap_check(dropped == 1, "restart: evict: drop_caches with the server up");
	snprintf(dir, sizeof(dir), "%s/evict", w1);
	mkdir(dir, 0755);
	for (i = 0; i < EV_FILES; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		fd = open(path, O_RDWR | O_CREAT, 0644);
		if (fd < 0 || close(fd))
			ok = 0;
	}
	tap_check(ok, "restart: evict: %d files opened and closed", EV_FILES);
	tap_diag("CLOSEs sent by their closes: %lld", mountstat(m1, "close"));
	/*
	 * One file per writer, opened before the pause: the WRITEs, not the
	 * OPENs, must wait, and not behind each other's inode lock.
	 */
	ok = 1;
	for (i = 0; i < EV_WRITERS; i++) {
		snprintf(path, sizeof(path), "%s/big%d", dir, i);
		bfd[i] = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0644);
		if (bfd[i] < 0)
			ok = 0;
	}
	tap_check(ok, "restart: evict: %d files for O_DIRECT writes", EV_WRITERS);
	tap_check(server("pause") == 0, "restart: evict: server stopped (SIGSTOP)");
	/* enough 1 MiB WRITEs at once to fill the socket: a sender blocks */
	for (i = 0; i < EV_WRITERS; i++) {
		w[i] = fork();
		if (w[i] == 0) {
			void *b;

			if (bfd[i] < 0 || posix_memalign(&b, 4096, EV_CHUNK))
				_exit(1);
			memset(b, 'a' + i % 26, EV_CHUNK);
			_exit(pwrite(bfd[i], b, EV_CHUNK, 0) == EV_CHUNK ? 0 : 1);
		}
	}
	sleep(3);
	for (i = 0; i < EV_WRITERS; i++)
		alive += waitpid(w[i], &st, WNOHANG) == 0;
	tap_check(alive > 0, "restart: evict: writers are stuck (%d of %d)", alive,
		  EV_WRITERS);
	c0 = mountstat(m1, "close");
	dropped = drop_slab(30, &d);
	c1 = mountstat(m1, "close");
	tap_check(dropped == 1,
		  "restart: evict: drop_caches returns within 30 s while a send is stuck");
	/* the closed files were evicted: it did reach their CLOSEs */
	tap_check(c0 >= 0 && c1 - c0 >= EV_FILES,
		  "restart: evict: it evicted the %d files and queued their CLOSEs (%lld)",
		  EV_FILES, c1 - c0);
	tap_check(server("resume") == 0, "restart: evict: server resumed (SIGCONT)");
	if (dropped < 0)
		waitpid(d, &st, 0);	/* the stuck CLOSE goes out now */
	ok = 1;
	for (i = 0; i < EV_WRITERS; i++)
		if (waitpid(w[i], &st, 0) != w[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			ok = 0;
	tap_check(ok, "restart: evict: every 1 MiB write succeeds once the server reads");
	for (i = 0; i < EV_WRITERS; i++)
		if (bfd[i] >= 0)
			close(bfd[i]);
}

static void test_dirsync(const char *w1)
{
	const char *m1 = getenv("POHMEL_MNT1");
	long long c0 = mountstat(m1, "fsync"), c1;
	int fd = open(w1, O_RDONLY | O_DIRECTORY);

	tap_check(fd >= 0 && fsync(fd) == 0, "restart: dirsync: fsync of a directory");
	c1 = mountstat(m1, "fsync");
	tap_check(c0 >= 0 && c1 == c0 + 1,
		  "restart: dirsync: it sent one FSYNC to the server (%lld -> %lld)",
		  c0, c1);
	if (fd >= 0)
		close(fd);
}

static void test_resend(const char *w1, const char *w2)
{
	static unsigned char buf[4 * BIG];
	const char *m1 = getenv("POHMEL_MNT1"), *ex = getenv("POHMEL_EXPORT");
	char p1[4200], p2[4200], pe[4200], cmd[600], pd[4200], pn[4300], pen[4300], p2n[4300];
	struct stat st2;
	const char *bootid = "/var/tmp/pohmel-fake-boot-id";
	long long u0, r0, r1;
	int fd, ok, dfd, sfd, rc, err;

	snprintf(p1, sizeof(p1), "%s/resend", w1);
	snprintf(p2, sizeof(p2), "%s/resend", w2);
	snprintf(pe, sizeof(pe), "%s/%s/resend", ex ? ex : "", w1 + strlen(m1));
	fill_pattern(buf, sizeof(buf), 29, 0);
	fd = open(p1, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ok = fd >= 0 && write(fd, "x", 1) == 1 && fsync(fd) == 0;
	/*
	 * A directory made stable, then the whole mount (syncfs: the
	 * earlier tests' O_DIRECT writes are stable too), so that all the
	 * later syncfs can report is the name created after it.
	 */
	snprintf(pd, sizeof(pd), "%s/names", w1);
	snprintf(pn, sizeof(pn), "%s/names/applied", w1);
	snprintf(pen, sizeof(pen), "%s/%s/names/applied", ex ? ex : "", w1 + strlen(m1));
	dfd = -1;
	sfd = open(w1, O_RDONLY | O_DIRECTORY);	/* syncfs reports to it */
	tap_check(mkdir(pd, 0755) == 0 && (dfd = open(pd, O_RDONLY | O_DIRECTORY)) >= 0 &&
		  fsync(dfd) == 0 && sfd >= 0 && syncfs(sfd) == 0,
		  "restart: names: a directory made stable, then the whole mount (syncfs)");
	u0 = mountstat(m1, "unstable_pages");
	r0 = mountstat(m1, "commit_resends");
	ok = ok && pwrite(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf) && close(fd) == 0;
	if (!tap_check(ok, "restart: resend: 256 KiB written and closed"))
		return;
	/*
	 * A name only applied: no data of its own to send again. Seen
	 * through mount 2, so that a writeback mount has sent it too.
	 */
	snprintf(p2n, sizeof(p2n), "%s/names/applied", w2);
	tap_check(mknod(pn, S_IFREG | 0644, 0) == 0 && stat(p2n, &st2) == 0,
		  "restart: names: then a name created in the directory (mount 2 sees it)");
	tap_check(mountstat(m1, "unstable_pages") >= u0 + 64,
		  "restart: resend: its 64 pages stay pinned, not yet stable (%lld -> %lld)",
		  u0, mountstat(m1, "unstable_pages"));
	tap_check(server("stop") == 0, "restart: resend: server stopped");
	/* what a crash of the server machine does to an unsynced write */
	ok = truncate(pe, 1) == 0;
	tap_check(ok, "restart: resend: the write undone in the export (%s)", pe);
	tap_check(unlink(pen) == 0, "restart: names: the create undone in the export");
	snprintf(cmd, sizeof(cmd),
		 "cat /proc/sys/kernel/random/uuid > %s && systemctl set-environment POHMELD_TEST_BOOT_ID=%s",
		 bootid, bootid);
	tap_check(sh(cmd) == 0 && server("start") == 0,
		  "restart: resend: server started with another boot id");
	fd = open(p1, O_RDWR);
	tap_check(fd >= 0 && fsync_retry(fd, 30) == 0, "restart: resend: open and fsync");
	if (fd >= 0)
		close(fd);
	r1 = mountstat(m1, "commit_resends");
	tap_check(r0 >= 0 && r1 >= r0 + 64,
		  "restart: resend: the 64 pages were sent again (commit_resends %lld -> %lld)",
		  r0, r1);
	tap_check(content_is(p2, buf, sizeof(buf)),
		  "restart: resend: mount 2 reads the 256 KiB the server lost");
	errno = 0;
	rc = sfd >= 0 ? syncfs(sfd) : 0;
	err = errno;
	tap_check(rc == -1 && err == EIO, "restart: names: syncfs fails with EIO (%s)",
		  rc ? strerror(err) : "it returned 0");
	tap_check(sfd >= 0 && syncfs(sfd) == 0,
		  "restart: names: reported once: the next syncfs returns 0");
	if (sfd >= 0)
		close(sfd);
	rc = dfd >= 0 ? fsync(dfd) : 0;
	err = rc ? errno : 0;
	tap_check(rc == -1 && err == EIO,
		  "restart: names: fsync of the directory fails with EIO (%s)",
		  rc ? strerror(err) : "it returned 0");
	if (dfd >= 0)
		close(dfd);
	tap_check(sh("systemctl unset-environment POHMELD_TEST_BOOT_ID") == 0 &&
		  server("restart") == 0,
		  "restart: resend: server restarted with its own boot id");
}

int do_durable(const char *w1, const char *w2, const char *ws, const char *smnt,
	       const char *we, const char *emnt)
{
	struct sigaction sa = { .sa_handler = on_alarm };

	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART: read gives up */
	if (!getenv("POHMEL_SERVER") || !getenv("POHMEL_MNT1"))
		die("restart durable: needs POHMEL_SERVER and POHMEL_MNT1");
	sh_start();
	test_dirsync(w1);
	test_keep(w2, ws, smnt);
	test_killed(w1, w2);
	test_evict(we, emnt);
	test_resend(w1, w2);
	return tap_done();
}
