/* posix: xattrs and POSIX ACLs, flock/fcntl/OFD locks across processes and
 * mounts, O_DIRECT/fsync/mmap/statfs, and a large directory listing. */
#include "posix.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef ENODATA
#define ENODATA ENOATTR
#endif

/* ---- xattrs and ACLs ---------------------------------------------------- */

struct acl_ent {
	uint16_t tag, perm;
	uint32_t id;
};
#define ACL_USER_OBJ 0x01
#define ACL_USER 0x02
#define ACL_GROUP_OBJ 0x04
#define ACL_MASK 0x10
#define ACL_OTHER 0x20
#define ACL_NOID 0xffffffffu

static size_t acl_build(unsigned char *buf, const struct acl_ent *e, int n)
{
	uint32_t ver = 2;
	memcpy(buf, &ver, 4);
	for (int i = 0; i < n; i++)
		memcpy(buf + 4 + 8 * i, &e[i], 8);
	return 4 + 8 * (size_t)n;
}

static int b_writes(void *arg)
{
	int fd = open((const char *)arg, O_WRONLY);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int b_xattr(void *arg)
{
	(void)arg;
	CHECK_ERR(setxattr(p2("x/rootfile"), "user.b", "1", 1, 0), EACCES,
		  "xattr: non-owner without write permission -> EACCES");
	CHECK_OK(setxattr(p2("x/openfile"), "user.b", "1", 1, 0), "xattr: non-owner with write permission");
	return 0;
}

void test_xattr_acl(void)
{
	char buf[70000], big[2000];
	mkdir(p1("x"), 0755);
	write_file(p1("x/f"), "", 0, 0, 0644);
	int rc = setxattr(p1("x/f"), "user.test", "hello", 5, XATTR_CREATE);
	if (rc < 0 && (errno == EOPNOTSUPP || errno == ENOTSUP)) {
		unsupported(errno, "xattr: user.* namespace");
	} else {
		tap_check(rc == 0, "xattr: set user.test with XATTR_CREATE");
		tap_check(getxattr(p2("x/f"), "user.test", buf, sizeof(buf)) == 5 && !memcmp(buf, "hello", 5),
			  "xattr: value read on mount 2");
		tap_check(getxattr(p2("x/f"), "user.test", NULL, 0) == 5, "xattr: size query returns 5");
		CHECK_ERR(getxattr(p1("x/f"), "user.test", buf, 2), ERANGE, "xattr: small buffer -> ERANGE");
		CHECK_ERR(setxattr(p2("x/f"), "user.test", "x", 1, XATTR_CREATE), EEXIST,
			  "xattr: XATTR_CREATE on an existing name (via mount 2) -> EEXIST");
		CHECK_ERR(setxattr(p1("x/f"), "user.none", "x", 1, XATTR_REPLACE), ENODATA,
			  "xattr: XATTR_REPLACE on a missing name -> ENODATA");
		CHECK_OK(setxattr(p1("x/f"), "user.test", "world!", 6, XATTR_REPLACE), "xattr: XATTR_REPLACE");
		tap_check(getxattr(p2("x/f"), "user.test", buf, sizeof(buf)) == 6 && !memcmp(buf, "world!", 6),
			  "xattr: replaced value on mount 2");
		fill_pattern((unsigned char *)big, sizeof(big), 7, 0);
		big[0] = big[100] = 0;
		CHECK_OK(setxattr(p1("x/f"), "user.bin", big, sizeof(big), 0), "xattr: 2000-byte binary value");
		tap_check(getxattr(p2("x/f"), "user.bin", buf, sizeof(buf)) == (ssize_t)sizeof(big) &&
			  !memcmp(buf, big, sizeof(big)), "xattr: binary value exact on mount 2");
		CHECK_OK(setxattr(p1("x/f"), "user.empty", "", 0, 0), "xattr: empty value");
		tap_check(getxattr(p2("x/f"), "user.empty", buf, sizeof(buf)) == 0, "xattr: empty value has length 0");
		ssize_t n = listxattr(p2("x/f"), buf, sizeof(buf));
		int c_test = 0, c_bin = 0, c_empty = 0;
		for (ssize_t o = 0; n > 0 && o < n; o += (ssize_t)strlen(buf + o) + 1) {
			c_test += !strcmp(buf + o, "user.test");
			c_bin += !strcmp(buf + o, "user.bin");
			c_empty += !strcmp(buf + o, "user.empty");
		}
		tap_check(c_test == 1 && c_bin == 1 && c_empty == 1, "xattr: listxattr on mount 2 lists each name once");
		tap_check(listxattr(p1("x/f"), NULL, 0) == n, "xattr: listxattr size query matches");
		CHECK_OK(removexattr(p1("x/f"), "user.test"), "xattr: remove");
		CHECK_ERR(getxattr(p2("x/f"), "user.test", buf, sizeof(buf)), ENODATA,
			  "xattr: removed name gone on mount 2");
		CHECK_ERR(removexattr(p2("x/f"), "user.test"), ENODATA, "xattr: remove again -> ENODATA");
		mkdir(p1("x/d"), 0755);
		CHECK_OK(setxattr(p1("x/d"), "user.dir", "d", 1, 0), "xattr: on a directory");
		tap_check(getxattr(p2("x/d"), "user.dir", buf, sizeof(buf)) == 1, "xattr: directory value on mount 2");
		symlink("f", p1("x/l"));
		CHECK_ERR(lsetxattr(p1("x/l"), "user.l", "l", 1, 0), EPERM, "xattr: user.* on a symlink -> EPERM");
		char name[300];
		memset(name, 'k', sizeof(name));
		memcpy(name, "user.", 5);
		name[255] = 0;
		CHECK_OK(setxattr(p1("x/f"), name, "v", 1, 0), "xattr: 255-byte name");
		tap_check(getxattr(p2("x/f"), name, buf, sizeof(buf)) == 1, "xattr: 255-byte name on mount 2");
		name[255] = 'k';
		name[256] = 0;
		CHECK_ERR(setxattr(p1("x/f"), name, "v", 1, 0), ERANGE, "xattr: 256-byte name -> ERANGE");
		CHECK_ERR(setxattr(p1("x/f"), "user.huge", buf, 65537, 0), E2BIG, "xattr: 65537-byte value -> E2BIG");
		if (is_root) {
			/* The test export has no trusted_xattrs option. */
			CHECK_ERR(setxattr(p1("x/f"), "trusted.t", "t", 1, 0), EOPNOTSUPP,
				  "xattr: trusted.* as root without trusted_xattrs -> EOPNOTSUPP");
			CHECK_ERR(getxattr(p2("x/f"), "trusted.t", buf, sizeof(buf)), EOPNOTSUPP,
				  "xattr: trusted.* read on mount 2 -> EOPNOTSUPP");
			/* cap_setuid=ep: a program the server would run as root.
			 * (A non-root caller is stopped by its own kernel first;
			 * the host tier sends it raw.) */
			static const unsigned char cap[20] = { 1, 0, 0, 2, 0xc0 };
			CHECK_ERR(setxattr(p1("x/f"), "security.capability", cap, sizeof(cap), 0), EOPNOTSUPP,
				  "xattr: security.capability as root without trusted_xattrs -> EOPNOTSUPP");
			write_file(p1("x/rootfile"), "", 0, 0, 0644);
			write_file(p1("x/openfile"), "", 0, 0, 0666);
			chmod(p1("x/openfile"), 0666);
			tap_check(as_user(UID_B, GID_B, b_xattr, NULL) == 0, "xattr: non-root checks ran");
		}
	}

	if (!is_root) {
		tap_skip("not root", "acl: needs a second user");
		return;
	}
	unsigned char acl[64], got[64];
	struct acl_ent e[] = {{ACL_USER_OBJ, 6, ACL_NOID}, {ACL_USER, 6, UID_B}, {ACL_GROUP_OBJ, 0, ACL_NOID},
			      {ACL_MASK, 6, ACL_NOID}, {ACL_OTHER, 0, ACL_NOID}};
	size_t alen = acl_build(acl, e, 5);
	write_file(p1("x/acl"), "", 0, 0, 0600);
	chmod(p1("x/acl"), 0600);
	tap_check(as_user(UID_B, GID_B, b_writes, p2("x/acl")) == EACCES, "acl: without ACL uid %d cannot write", UID_B);
	rc = setxattr(p1("x/acl"), "system.posix_acl_access", acl, alen, 0);
	if (rc < 0 && (errno == EOPNOTSUPP || errno == ENOTSUP)) {
		unsupported(errno, "acl: system.posix_acl_access");
		return;
	}
	tap_check(rc == 0, "acl: set access ACL user:%d:rw", UID_B);
	struct stat st;
	rc = stat(p2("x/acl"), &st);
	tap_check(rc == 0 && (st.st_mode & 07777) == 0660,
		  "acl: mode group bits show the mask, on mount 2 (got %o)", st.st_mode & 07777);
	ssize_t gl = getxattr(p2("x/acl"), "system.posix_acl_access", got, sizeof(got));
	tap_check(gl == (ssize_t)alen && !memcmp(got, acl, alen), "acl: read back exactly on mount 2");
	tap_check(as_user(UID_B, GID_B, b_writes, p2("x/acl")) == 0, "acl: named user may now write (mount 2)");
	tap_check(as_user(UID_A, GID_A, b_writes, p1("x/acl")) == EACCES, "acl: other users still cannot");
	chmod(p1("x/acl"), 0600);
	tap_check(as_user(UID_B, GID_B, b_writes, p2("x/acl")) == EACCES, "acl: chmod g-rw masks the named user");
	CHECK_OK(removexattr(p1("x/acl"), "system.posix_acl_access"), "acl: remove access ACL");
	tap_check(getxattr(p2("x/acl"), "system.posix_acl_access", got, sizeof(got)) < 0 && errno == ENODATA,
		  "acl: removed on mount 2");

	mkdir(p1("x/dacl"), 0755);
	struct acl_ent de[] = {{ACL_USER_OBJ, 7, ACL_NOID}, {ACL_USER, 7, UID_B}, {ACL_GROUP_OBJ, 5, ACL_NOID},
			       {ACL_MASK, 7, ACL_NOID}, {ACL_OTHER, 0, ACL_NOID}};
	alen = acl_build(acl, de, 5);
	CHECK_OK(setxattr(p1("x/dacl"), "system.posix_acl_default", acl, alen, 0), "acl: set default ACL on a dir");
	write_file(p2("x/dacl/new"), "", 0, 0, 0666);
	rc = stat(p1("x/dacl/new"), &st);
	tap_check(rc == 0 && (st.st_mode & 07777) == 0660,
		  "acl: new file ignores umask under a default ACL (mode %o)", st.st_mode & 07777);
	gl = getxattr(p1("x/dacl/new"), "system.posix_acl_access", got, sizeof(got));
	struct acl_ent ue;
	memcpy(&ue, got + 12, 8);
	tap_check(gl == 44 && ue.tag == ACL_USER && ue.id == UID_B && ue.perm == 7,
		  "acl: new file inherited the named-user entry");
	mkdir(p2("x/dacl/sub"), 0777);
	tap_check(getxattr(p1("x/dacl/sub"), "system.posix_acl_default", got, sizeof(got)) == (ssize_t)alen &&
		  !memcmp(got, acl, alen), "acl: new subdirectory inherited the default ACL");
}

/* ---- locks --------------------------------------------------------------- */

static int pc[2], cp[2];	/* parent->child, child->parent */
/*
 * Shared with the peer: the holder sets it just before it releases, so a
 * waiter granted its lock sees whether the release had begun (an order
 * observed, not inferred from how long the wait took).
 */
static int *released;

static void mark_released(void)
{
	__atomic_store_n(released, 1, __ATOMIC_SEQ_CST);
}

static int was_released(void)
{
	return __atomic_load_n(released, __ATOMIC_SEQ_CST);
}

static void sig(int fd)
{
	if (write(fd, "x", 1) != 1)
		die("pipe write");
}

static int wt(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};
	char c;
	if (poll(&p, 1, 60000) != 1 || read(fd, &c, 1) != 1) {
		tap_diag("peer did not answer within 60 s");
		return 0;
	}
	return 1;
}

static int lk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
	return fcntl(fd, cmd, &fl);
}

static pid_t fork_peer(void)
{
	if (!released) {
		released = mmap(NULL, sizeof(*released), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (released == MAP_FAILED)
			die("mmap");
	}
	*released = 0;
	if (pipe(pc) < 0 || pipe(cp) < 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	return pid;
}

static void end_peer(pid_t pid, const char *what)
{
	int st = wait_child(pid);
	tap_check(st == 0, "%s: peer process finished cleanly (status %d)", what, st);
	close(pc[0]), close(pc[1]), close(cp[0]), close(cp[1]);
}

/* As a user who may read lk/ro but not write it (server-side check). */
static int b_lock_access(void *arg)
{
	(void)arg;
	int fd = open(p2("lk/ro"), O_RDONLY);
	CHECK_OK(flock(fd, LOCK_SH), "lock access: shared flock with read access");
	CHECK_ERR(flock(fd, LOCK_EX | LOCK_NB), EACCES,
		  "lock access: exclusive flock without write access -> EACCES");
	flock(fd, LOCK_UN);
	CHECK_OK(lk(fd, F_SETLK, F_RDLCK, 0, 10), "lock access: fcntl read lock with read access");
	lk(fd, F_SETLK, F_UNLCK, 0, 10);
	close(fd);
	return 0;
}

static void test_flock(void)
{
	if (is_root && !opt_local) {
		write_file(p1("lk/ro"), "", 0, 0, 0644);
		tap_check(as_user(UID_B, GID_B, b_lock_access, NULL) == 0, "lock access: non-root checks ran");
	}

	int fd = open(p1("lk/f"), O_RDWR);
	CHECK_OK(flock(fd, LOCK_EX), "flock: exclusive on mount 1");
	pid_t pid = fork_peer();
	if (pid == 0) {
		int f1 = open(p1("lk/f"), O_RDWR);
		CHECK_ERR2(flock(f1, LOCK_EX | LOCK_NB), EWOULDBLOCK, EAGAIN,
			   "flock: conflicting exclusive from another process on mount 1 -> EWOULDBLOCK");
		close(f1);
		int f2 = open(p2("lk/f"), O_RDWR);
		CHECK_ERR2(flock(f2, LOCK_EX | LOCK_NB), EWOULDBLOCK, EAGAIN,
			   "flock: conflicting exclusive from mount 2 -> EWOULDBLOCK");
		CHECK_ERR2(flock(f2, LOCK_SH | LOCK_NB), EWOULDBLOCK, EAGAIN,
			   "flock: conflicting shared from mount 2 -> EWOULDBLOCK");
		sig(cp[1]);
		wt(pc[0]);
		CHECK_OK(flock(f2, LOCK_EX | LOCK_NB), "flock: after release, exclusive from mount 2 succeeds");
		sig(cp[1]);
		wt(pc[0]);
		CHECK_OK(flock(f2, LOCK_SH), "flock: downgrade to shared");
		sig(cp[1]);
		wt(pc[0]);
		CHECK_OK(flock(f2, LOCK_EX), "flock: blocking exclusive waits for the other mount");
		tap_check(was_released(), "flock: ...and was granted only after the release");
		_exit(0);
	}
	wt(cp[0]);
	CHECK_OK(flock(fd, LOCK_UN), "flock: unlock on mount 1");
	sig(pc[1]);
	wt(cp[0]);
	CHECK_ERR2(flock(fd, LOCK_SH | LOCK_NB), EWOULDBLOCK, EAGAIN, "flock: mount 1 now blocked by mount 2's lock");
	sig(pc[1]);
	wt(cp[0]);
	CHECK_OK(flock(fd, LOCK_SH | LOCK_NB), "flock: shared locks on both mounts coexist");
	sig(pc[1]);
	struct timespec ts = {0, 400000000};
	nanosleep(&ts, NULL);
	mark_released();
	flock(fd, LOCK_UN);
	end_peer(pid, "flock");
	close(fd);
}

static void test_fcntl_locks(void)
{
	int fd = open(p1("lk/f"), O_RDWR);
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 0, 100), "fcntl: write lock 0-99 on mount 1");
	pid_t pid = fork_peer();
	if (pid == 0) {
		int f1 = open(p1("lk/f"), O_RDWR);
		CHECK_ERR2(lk(f1, F_SETLK, F_WRLCK, 90, 20), EAGAIN, EACCES,
			   "fcntl: overlapping write lock from another process on mount 1 -> EAGAIN");
		close(f1);
		int f2 = open(p2("lk/f"), O_RDWR);
		CHECK_ERR2(lk(f2, F_SETLK, F_WRLCK, 50, 10), EAGAIN, EACCES,
			   "fcntl: overlapping write lock from mount 2 -> EAGAIN");
		CHECK_ERR2(lk(f2, F_SETLK, F_RDLCK, 0, 1), EAGAIN, EACCES,
			   "fcntl: overlapping read lock from mount 2 -> EAGAIN");
		CHECK_OK(lk(f2, F_SETLK, F_WRLCK, 100, 100), "fcntl: adjacent range 100-199 from mount 2 is free");
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 10, .l_len = 5};
		int grc = fcntl(f2, F_GETLK, &fl);
		tap_check(grc == 0 && fl.l_type == F_WRLCK && fl.l_start == 0 && fl.l_len == 100,
			  "fcntl: F_GETLK on mount 2 reports the mount 1 lock (type %d start %lld len %lld)",
			  fl.l_type, (long long)fl.l_start, (long long)fl.l_len);
		sig(cp[1]);
		wt(pc[0]);
		CHECK_OK(lk(f2, F_SETLK, F_RDLCK, 0, 10), "fcntl: read lock coexists with the other mount's read lock");
		CHECK_ERR2(lk(f2, F_SETLK, F_WRLCK, 0, 10), EAGAIN, EACCES,
			   "fcntl: write lock still conflicts with a read lock");
		lk(f2, F_SETLK, F_UNLCK, 0, 10);
		sig(cp[1]);
		CHECK_OK(lk(f2, F_SETLKW, F_WRLCK, 0, 100), "fcntl: F_SETLKW from mount 2 is granted");
		tap_check(was_released(), "fcntl: ...only after mount 1 released it");
		sig(cp[1]);
		wt(pc[0]);
		_exit(0);
	}
	wt(cp[0]);
	CHECK_ERR2(lk(fd, F_SETLK, F_WRLCK, 150, 10), EAGAIN, EACCES, "fcntl: mount 2's lock blocks mount 1");
	CHECK_OK(lk(fd, F_SETLK, F_RDLCK, 0, 100), "fcntl: downgrade to a read lock");
	sig(pc[1]);
	wt(cp[0]);
	struct timespec ts = {0, 400000000};
	nanosleep(&ts, NULL);
	mark_released();
	lk(fd, F_SETLK, F_UNLCK, 0, 0);
	wt(cp[0]);
	CHECK_ERR2(lk(fd, F_SETLK, F_RDLCK, 0, 1), EAGAIN, EACCES, "fcntl: mount 1 now blocked by the waiter's lock");
	sig(pc[1]);
	end_peer(pid, "fcntl");
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 0, 0), "fcntl: locks of the exited process are gone");

	/* closing any fd of the file drops the process's POSIX locks */
	int other = open(p1("lk/f"), O_RDONLY);
	close(other);
	pid = fork_peer();
	if (pid == 0) {
		int f2 = open(p2("lk/f"), O_RDWR);
		CHECK_OK(lk(f2, F_SETLK, F_WRLCK, 0, 0), "fcntl: closing another fd released the lock (seen from mount 2)");
		_exit(0);
	}
	end_peer(pid, "fcntl close");
	close(fd);

	/* open file description locks conflict between fds of one process */
	int a = open(p1("lk/f"), O_RDWR), b = open(p2("lk/f"), O_RDWR);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
#ifdef F_OFD_SETLK
	int rc = fcntl(a, F_OFD_SETLK, &fl);
	if (rc < 0 && errno == EINVAL && opt_local) {
		tap_skip("no OFD locks", "fcntl: OFD locks");
	} else {
		tap_check(rc == 0, "fcntl: OFD write lock on mount 1");
		CHECK_ERR2(fcntl(b, F_OFD_SETLK, &fl), EAGAIN, EACCES,
			   "fcntl: OFD lock via mount 2 in the same process -> EAGAIN");
		close(a);
		a = -1;
		CHECK_OK(fcntl(b, F_OFD_SETLK, &fl), "fcntl: OFD lock free after close");
	}
#else
	tap_skip("headers lack F_OFD_SETLK", "fcntl: OFD locks");
#endif
	if (a >= 0)
		close(a);
	close(b);
}

/*
 * A blocking lock that waits on another client must not hold back the
 * mount's other changes: more sequenced calls than the server's reply
 * cache keeps (1,024) go through on mount 1 while its flock waits.
 */
static void test_lock_window(void)
{
	int fd2 = open(p2("lk/f"), O_RDWR), st = -1, i, done = 0;
	struct timespec ts = {0, 500000000}, tick = {0, 100000000};

	CHECK_OK(flock(fd2, LOCK_EX), "lock window: exclusive flock on mount 2");
	pid_t pid = fork_peer();
	if (pid == 0) {
		int f1 = open(p1("lk/f"), O_RDWR);
		sig(cp[1]);
		CHECK_OK(flock(f1, LOCK_EX), "lock window: mount 1's blocking flock granted after the release");
		_exit(0);
	}
	wt(cp[0]);
	nanosleep(&ts, NULL);	/* its LOCK is now waiting at the server */
	pid_t w = fork();
	if (w == 0) {
		int f = open(p1("lk/chmods"), O_RDWR | O_CREAT, 0644);

		for (i = 0; i < 1100; i++)
			if (fchmod(f, i & 1 ? 0644 : 0600))
				_exit(1);
		_exit(0);
	}
	/* a hang detector, not a timing: the calls block on the waiting lock */
	for (i = 0; w > 0 && i < 600 && !done; i++) {
		done = waitpid(w, &st, WNOHANG) == w;
		if (!done)
			nanosleep(&tick, NULL);
	}
	if (w > 0 && !done) {
		kill(w, SIGKILL);
		waitpid(w, &st, 0);
	}
	tap_check(done && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "lock window: 1,100 chmods on mount 1 while its flock waits (%s)",
		  done ? "finished" : "still blocked after 60 s");
	flock(fd2, LOCK_UN);
	end_peer(pid, "lock window");
	close(fd2);
	unlink(p1("lk/chmods"));
}

void test_locks(void)
{
	mkdir(p1("lk"), 0755);
	char buf[1000] = {0};
	write_file(p1("lk/f"), buf, sizeof(buf), 0, 0666);
	test_flock();
	test_lock_window();
	test_fcntl_locks();
}

/* ---- O_DIRECT, fsync, mmap, statfs ------------------------------------- */

/*
 * O_DIRECT into/from a 3-page buffer whose middle page is PROT_NONE on
 * @fd (@size bytes, the first page equal to @exp): at most the first
 * page moves (a short count) or -1 EFAULT, and the offset moves by
 * exactly what was returned. Once read returned 2^32 - EFAULT.
 */
static void odirect_fault(int fd, off_t size, const unsigned char *exp)
{
	unsigned char *b = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct stat st;
	ssize_t n;

	if (b == MAP_FAILED || mprotect(b + 4096, 4096, PROT_NONE))
		die("odirect_fault: mmap");
	lseek(fd, 0, SEEK_SET);
	n = read(fd, b, 3 * 4096);
	int err = errno;
	off_t pos = lseek(fd, 0, SEEK_CUR);
	tap_check((n == -1 && err == EFAULT) || (n >= 0 && n <= 4096 && !memcmp(b, exp, n)),
		  "odirect: read into a buffer with a hole: short or EFAULT (%zd, %s)", n, strerror(err));
	tap_check(pos == (n > 0 ? n : 0) && pos <= 4096,
		  "odirect: read with a hole moves the offset by its count (%lld)",
		  (long long)pos);
	memset(b, 'f', 4096);
	lseek(fd, size, SEEK_SET);
	n = write(fd, b, 3 * 4096);
	err = errno;
	pos = lseek(fd, 0, SEEK_CUR);
	tap_check((n == -1 && err == EFAULT) || (n >= 0 && n <= 4096),
		  "odirect: write from a buffer with a hole: short or EFAULT (%zd, %s)", n, strerror(err));
	if (fstat(fd, &st))
		st.st_size = -1;
	tap_check(pos == size + (n > 0 ? n : 0) && st.st_size == pos,
		  "odirect: write with a hole moves offset and size by its count (%lld, size %lld)",
		  (long long)pos, (long long)st.st_size);
	if (n > 0)
		ftruncate(fd, size);
	munmap(b, 3 * 4096);
}

void test_io(void)
{
	struct stat st;
	mkdir(p1("io"), 0755);
	unsigned char *w, *r;
	if (posix_memalign((void **)&w, 4096, 1 << 17) || posix_memalign((void **)&r, 4096, 1 << 17))
		die("memalign");
	int fd = open(p1("io/direct"), O_RDWR | O_CREAT | O_DIRECT, 0644);
	if (fd < 0 && errno == EINVAL && opt_local && fs_tmpfs) {
		tap_skip("tmpfs refuses O_DIRECT", "odirect: write/read round trip");
	} else if (fd < 0) {
		tap_check(0, "odirect: open with O_DIRECT: %s", strerror(errno));
	} else {
		fill_pattern(w, 1 << 16, 11, 0);
		tap_check(pwrite(fd, w, 1 << 16, 0) == 1 << 16, "odirect: 64 KiB write at 0");
		fill_pattern(w + (1 << 16), 8192, 12, 0);
		tap_check(pwrite(fd, w + (1 << 16), 8192, 20 * 4096) == 8192, "odirect: 8 KiB write at 80 KiB");
		tap_check(pread(fd, r, 1 << 16, 0) == 1 << 16 && !memcmp(r, w, 1 << 16), "odirect: read back");
		tap_check(fstat(fd, &st) == 0 && st.st_size == 22 * 4096, "odirect: size 88 KiB");
		unsigned char *exp = calloc(1, 22 * 4096);
		memcpy(exp, w, 1 << 16);
		memcpy(exp + 20 * 4096, w + (1 << 16), 8192);
		tap_check(file_equals(p2("io/direct"), exp, 22 * 4096), "odirect: buffered read on mount 2 matches");
		/* buffered write on mount 2, direct read on mount 1 */
		int b = open(p2("io/direct"), O_WRONLY);
		pwrite(b, "buffered", 8, 4096);
		close(b);
		tap_check(pread(fd, r, 8192, 4096) == 8192 && !memcmp(r, "buffered", 8) &&
			  !memcmp(r + 8, exp + 4096 + 8, 8192 - 8),
			  "odirect: sees a buffered write made on mount 2");
		odirect_fault(fd, 22 * 4096, exp);
		free(exp);
		close(fd);
	}

	/* 64-bit offsets */
	fd = open(p1("io/big"), O_RDWR | O_CREAT, 0644);
	fill_pattern(w, 4096, 13, 0);
	off_t off = (off_t)5 << 30;
	tap_check(pwrite(fd, w, 4096, off) == 4096, "io: write at 5 GiB");
	close(fd);
	fd = open(p2("io/big"), O_RDONLY);
	tap_check(pread(fd, r, 8192, off) == 4096 && !memcmp(r, w, 4096), "io: read at 5 GiB on mount 2");
	tap_check(pread(fd, r, 4096, 4096) == 4096 && r[0] == 0 && r[4095] == 0, "io: hole reads as zeros");
	int frc = fstat(fd, &st);
	tap_check(frc == 0 && st.st_blocks < 2048, "io: sparse file does not allocate its holes (%lld blocks)",
		  (long long)st.st_blocks);
	close(fd);

	/* fsync family */
	fd = open(p1("io/sync"), O_RDWR | O_CREAT, 0644);
	fill_pattern(w, 1 << 16, 14, 0);
	write(fd, w, 1 << 16);
	CHECK_OK(fsync(fd), "fsync: file");
	CHECK_OK(fdatasync(fd), "fdatasync: file");
	tap_check(fstat(fd, &st) == 0 && st.st_blocks * 512 >= (1 << 16), "io: st_blocks covers 64 KiB after fsync");
	CHECK_OK(syncfs(fd), "syncfs");
	close(fd);
	int dfd = open(p1("io"), O_RDONLY | O_DIRECTORY);
	CHECK_OK(fsync(dfd), "fsync: directory");
	close(dfd);
	fd = open(p1("io/sync"), O_RDONLY);
	CHECK_OK(fsync(fd), "fsync: read-only fd");
	close(fd);

	/* shared mmap: write, msync, read(2) here and on the other mount */
	fd = open(p1("io/map"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	size_t len = 3 * 4096 + 100;
	ftruncate(fd, (off_t)len);
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		tap_check(0, "mmap: shared mapping: %s", strerror(errno));
	} else {
		fill_pattern(w, len, 15, 0);
		memcpy(m, w, len);
		CHECK_OK(msync(m, len, MS_SYNC), "mmap: msync");
		tap_check(pread(fd, r, len + 10, 0) == (ssize_t)len && !memcmp(r, w, len), "mmap: read(2) sees the stores");
		tap_check(file_equals(p2("io/map"), w, len), "mmap: mount 2 sees the stores after msync");
		int f2 = open(p2("io/map"), O_RDWR);
		unsigned char *m2 = mmap(NULL, len, PROT_READ, MAP_SHARED, f2, 0);
		tap_check(m2 != MAP_FAILED && !memcmp(m2, w, len), "mmap: mapping on mount 2 sees the data");
		pwrite(fd, "new", 3, 4096);
		tap_check(m2 != MAP_FAILED && !memcmp(m2 + 4096, "new", 3),
			  "mmap: mapping on mount 2 sees a later write(2) on mount 1");
		m[5000] = 'Z';
		msync(m, len, MS_SYNC);
		tap_check(m2 != MAP_FAILED && m2[5000] == 'Z', "mmap: mapping on mount 2 sees a later store on mount 1");
		if (m2 != MAP_FAILED)
			munmap(m2, len);
		close(f2);
		tap_check(m[len] == 0 && m[4 * 4096 - 1] == 0, "mmap: tail of the last page past EOF reads zero");
		munmap(m, len);
	}
	close(fd);

	struct statfs a, b;
	tap_check(statfs(D1, &a) == 0 && statfs(D2, &b) == 0, "statfs: both mounts");
	tap_check(a.f_bsize > 0 && a.f_blocks > 0 && a.f_bfree <= a.f_blocks && a.f_bavail <= a.f_bfree,
		  "statfs: block counts sane (bsize %ld blocks %llu free %llu avail %llu)", (long)a.f_bsize,
		  (unsigned long long)a.f_blocks, (unsigned long long)a.f_bfree, (unsigned long long)a.f_bavail);
	tap_check(a.f_ffree <= a.f_files, "statfs: inode counts sane");
	tap_check(a.f_namelen >= 255, "statfs: namelen %ld >= 255", (long)a.f_namelen);
	tap_check(a.f_blocks * (unsigned long long)a.f_bsize == b.f_blocks * (unsigned long long)b.f_bsize,
		  "statfs: same capacity on both mounts");
	free(w);
	free(r);
}

/* ---- big directory ------------------------------------------------------- */

struct ldirent {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* one listing with getdents64 and a small buffer (many round trips) */
static int list_dir(const char *path, int *seen, int n, int *dots, int *bad_type, int *foreign)
{
	char buf[2048];
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -1;
	for (;;) {
		long got = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (got < 0) {
			close(fd);
			return -1;
		}
		if (got == 0)
			break;
		for (long o = 0; o < got;) {
			struct ldirent *de = (struct ldirent *)(buf + o);
			o += de->reclen;
			if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
				(*dots)++;
			else if (de->name[0] == 'f' && strlen(de->name) == 6) {
				int i = atoi(de->name + 1);
				if (i >= 0 && i < n)
					seen[i]++;
				if (de->type != DT_REG && de->type != DT_UNKNOWN)
					(*bad_type)++;
			} else if (strncmp(de->name, "tmp", 3))
				(*foreign)++;
		}
	}
	close(fd);
	return 0;
}

/* create (or unlink) f<i> for lo <= i < n in 4 processes, two per mount;
 * returns how many succeeded */
static int par_names(int lo, int n, int create)
{
	enum { NP = 4 };
	int *cnt = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid[NP];
	memset(cnt, 0, sizeof(int) * NP);
	for (int k = 0; k < NP; k++) {
		pid[k] = fork();
		if (pid[k] == 0) {
			int dfd = open(k & 1 ? p2("big") : p1("big"), O_RDONLY | O_DIRECTORY);
			char name[32];
			for (int i = lo + k; i < n; i += NP) {
				snprintf(name, sizeof(name), "f%05d", i);
				if (create) {
					int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
					if (fd >= 0 && close(fd) == 0)
						cnt[k]++;
				} else if (unlinkat(dfd, name, 0) == 0) {
					cnt[k]++;
				}
			}
			_exit(0);
		}
	}
	int total = 0;
	for (int k = 0; k < NP; k++) {
		wait_child(pid[k]);
		total += cnt[k];
	}
	munmap(cnt, 4096);
	return total;
}

/*
 * A name renamed over, or removed and made again, on the same mount while
 * a listing of the directory is half read: the rest of the listing must
 * not show it a second time (a cached listing that appends names would).
 */
static void readdir_reuse_name(void)
{
	const char *d = p1("reuse");
	char name[32], buf[512];
	int fd, seen_x = 0, seen_z = 0, passed = 0, ok_ops = 1;

	mkdir(d, 0755);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "%s/a%02d", d, i);
		write_file(name, "a", 1, O_EXCL, 0644);
	}
	write_file(pjoin(d, "x"), "x", 1, O_EXCL, 0644);
	write_file(pjoin(d, "y"), "y", 1, O_EXCL, 0644);
	write_file(pjoin(d, "z"), "z", 1, O_EXCL, 0644);
	for (int r = 0; r < 2; r++) {	/* the second from the client's cache */
		DIR *dd = opendir(d);
		while (dd && readdir(dd))
			;
		if (dd)
			closedir(dd);
	}
	fd = open(d, O_RDONLY | O_DIRECTORY);
	for (;;) {
		long got = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (got <= 0)
			break;
		for (long o = 0; o < got;) {
			struct ldirent *de = (struct ldirent *)(buf + o);
			o += de->reclen;
			seen_x += !strcmp(de->name, "x");
			seen_z += !strcmp(de->name, "z");
		}
		if (seen_x && seen_z && !passed) {
			/* both read: rename over x, remove and remake z */
			passed = 1;
			ok_ops = rename(pjoin(d, "y"), pjoin(d, "x")) == 0 && unlink(pjoin(d, "z")) == 0 &&
				 write_file(pjoin(d, "z"), "Z", 1, O_EXCL, 0644) == 0;
		}
	}
	close(fd);
	tap_check(passed && ok_ops && seen_x == 1 && seen_z == 1,
		  "readdir: names renamed over or made again during a listing are listed once (x %d, z %d times)",
		  seen_x, seen_z);
	rm_rf(d);
}

void test_readdir(void)
{
	int n = readdir_n;
	char name[32];
	mkdir(p1("big"), 0755);
	int dfd = open(p1("big"), O_RDONLY | O_DIRECTORY);
	unsigned long long t0 = now_ns();
	int made = par_names(0, n, 1);
	tap_check(made == n, "readdir: 4 processes on both mounts created %d of %d files (%.1f s)", made, n,
		  (now_ns() - t0) / 1e9);
	int *seen = calloc((size_t)n, sizeof(int));
	int dots = 0, bad_type = 0, foreign = 0;
	int rc = list_dir(p2("big"), seen, n, &dots, &bad_type, &foreign);
	int once = 0;
	for (int i = 0; i < n; i++)
		once += seen[i] == 1;
	tap_check(rc == 0 && once == n && dots == 2 && foreign == 0,
		  "readdir: mount 2 lists all %d names exactly once (%d ok, dots %d, foreign %d)", n, once, dots, foreign);
	tap_check(bad_type == 0, "readdir: d_type is DT_REG or DT_UNKNOWN for files");

	/* list via mount 2 while another process creates/unlinks other names on mount 1 */
	volatile int *stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	*stop = 0;
	pid_t pid = fork();
	if (pid == 0) {
		int ops = 0;
		for (int i = 0; !*stop; i++) {
			snprintf(name, sizeof(name), "tmp%d", i);
			int fd = openat(dfd, name, O_CREAT | O_WRONLY, 0644);
			if (fd >= 0)
				close(fd);
			if (i >= 20) {
				snprintf(name, sizeof(name), "tmp%d", i - 20);
				unlinkat(dfd, name, 0);
			}
			ops++;
		}
		_exit(ops > 0 ? 0 : 1);
	}
	int rounds_ok = 0, rounds = 3;
	for (int r = 0; r < rounds; r++) {
		memset(seen, 0, sizeof(int) * (size_t)n);
		dots = bad_type = foreign = 0;
		rc = list_dir(r & 1 ? p1("big") : p2("big"), seen, n, &dots, &bad_type, &foreign);
		int dup = 0, miss = 0;
		for (int i = 0; i < n; i++) {
			dup += seen[i] > 1;
			miss += seen[i] == 0;
		}
		if (rc == 0 && dup == 0 && miss == 0 && dots == 2 && foreign == 0)
			rounds_ok++;
		else
			tap_diag("round %d: rc %d duplicates %d missing %d dots %d foreign %d", r, rc, dup, miss, dots,
				 foreign);
	}
	*stop = 1;
	int st = wait_child(pid);
	tap_check(rounds_ok == rounds, "readdir: untouched names seen exactly once while others are created/unlinked");
	tap_check(st == 0, "readdir: concurrent creator ran");
	munmap((void *)stop, 4096);

	t0 = now_ns();
	int gone = par_names(n / 5, n, 0);
	tap_check(gone == n - n / 5, "readdir: 4 processes on both mounts unlinked %d of %d (%.1f s)", gone,
		  n - n / 5, (now_ns() - t0) / 1e9);
	t0 = now_ns();
	gone = 0;
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && unlinkat(dirfd(d), de->d_name, 0) == 0)
			gone++;
	closedir(d);
	tap_check(gone >= n / 5, "readdir: unlink the rest while listing (%d of %d, %.1f s)", gone, n / 5,
		  (now_ns() - t0) / 1e9);
	CHECK_OK(rmdir(p2("big")), "readdir: directory empty afterwards (rmdir via mount 2)");
	free(seen);
	readdir_reuse_name();
}
