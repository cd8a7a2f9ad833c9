/* posix: pjdfstest-style checks of POSIX namespace and metadata semantics,
 * plus cross-mount visibility. Usage: posix [--local] [--readdir N] DIR1 DIR2
 * where DIR1 and DIR2 are the same (empty) directory seen through mount 1
 * and mount 2. Prints TAP.
 */
#include "posix.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#define TMPFS_MAGIC_ 0x01021994

const char *D1, *D2;
int opt_local, is_root, fs_tmpfs, readdir_n = 10000;

char *p1(const char *name) { return pjoin(D1, name); }
char *p2(const char *name) { return pjoin(D2, name); }

int same_on_m2(const char *name, const struct stat *a)
{
	struct stat b;
	if (stat(p2(name), &b) < 0) {
		tap_diag("stat %s on mount 2: %s", name, strerror(errno));
		return 0;
	}
	if (a->st_ino != b.st_ino || a->st_mode != b.st_mode || a->st_nlink != b.st_nlink ||
	    a->st_size != b.st_size || a->st_uid != b.st_uid || a->st_gid != b.st_gid) {
		tap_diag("%s: m1 ino %llu mode %o nlink %lu size %lld uid %u gid %u; "
			 "m2 ino %llu mode %o nlink %lu size %lld uid %u gid %u", name,
			 (unsigned long long)a->st_ino, a->st_mode, (unsigned long)a->st_nlink,
			 (long long)a->st_size, a->st_uid, a->st_gid,
			 (unsigned long long)b.st_ino, b.st_mode, (unsigned long)b.st_nlink,
			 (long long)b.st_size, b.st_uid, b.st_gid);
		return 0;
	}
	return 1;
}

void unsupported(int err, const char *what)
{
	if (opt_local)
		tap_skip(strerror(err), "%s (not supported by this local fs)", what);
	else
		tap_check(0, "%s: %s", what, strerror(err));
}

static int renameat2_(const char *a, const char *b, unsigned flags)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	return lstat(path, &st) < 0 ? (mode_t)-1 : st.st_mode;
}

static off_t size_of(const char *path)
{
	struct stat st;
	return stat(path, &st) < 0 ? -1 : st.st_size;
}

static long nlink_of(const char *path)
{
	struct stat st;
	return lstat(path, &st) < 0 ? -1 : (long)st.st_nlink;
}

static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static void test_create(void)
{
	struct stat st;
	char buf[64];
	mkdir(p1("c"), 0755);
	int fd = open(p1("c/new"), O_CREAT | O_EXCL | O_WRONLY, 0666);
	CHECK_OK(fd, "create: O_CREAT|O_EXCL on a new name");
	if (fd >= 0)
		close(fd);
	CHECK_ERR(open(p1("c/new"), O_CREAT | O_EXCL | O_WRONLY, 0666), EEXIST,
		  "create: O_EXCL on an existing file -> EEXIST");
	CHECK_ERR(open(p2("c/new"), O_CREAT | O_EXCL | O_WRONLY, 0666), EEXIST,
		  "create: O_EXCL via mount 2 on a file created on mount 1 -> EEXIST");
	tap_check(mode_of(p1("c/new")) == (S_IFREG | 0644),
		  "create: mode 0666 with umask 022 gives 0644 (got %o)", mode_of(p1("c/new")));
	tap_check(stat(p1("c/new"), &st) == 0 && st.st_uid == geteuid() && st.st_gid == getegid(),
		  "create: owner is the caller");
	tap_check(stat(p1("c/new"), &st) == 0 && same_on_m2("c/new", &st),
		  "create: same inode/mode/owner on mount 2");
	symlink("dangling-target", p1("c/dangling"));
	CHECK_ERR(open(p1("c/dangling"), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST,
		  "create: O_EXCL on a dangling symlink -> EEXIST");
	tap_check(!exists(p1("c/dangling-target")), "create: O_EXCL did not follow the symlink");

	write_file(p1("c/trunc"), "0123456789", 10, O_TRUNC, 0644);
	tap_check(size_of(p2("c/trunc")) == 10, "create: written size 10 seen on mount 2");
	fd = open(p1("c/trunc"), O_WRONLY | O_TRUNC);
	tap_check(fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0, "create: O_TRUNC empties the file");
	if (fd >= 0)
		close(fd);
	tap_check(size_of(p2("c/trunc")) == 0, "create: O_TRUNC seen on mount 2");
	fd = open(p1("c/trunc"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	tap_check(fd >= 0 && mode_of(p1("c/trunc")) == (S_IFREG | 0644),
		  "create: O_CREAT on an existing file keeps its mode");
	if (fd >= 0)
		close(fd);

	/* O_APPEND on one fd: lseek does not matter */
	write_file(p1("c/app"), "abc", 3, O_TRUNC, 0644);
	fd = open(p1("c/app"), O_WRONLY | O_APPEND);
	if (fd >= 0) {
		lseek(fd, 0, SEEK_SET);
		tap_check(write(fd, "def", 3) == 3 && lseek(fd, 0, SEEK_CUR) == 6,
			  "create: O_APPEND write after lseek(0) lands at the end");
		close(fd);
	} else
		tap_check(0, "create: open O_APPEND");
	tap_check(file_equals(p2("c/app"), "abcdef", 6), "create: appended content on mount 2");

	/* O_APPEND from both mounts, interleaved */
	int a = open(p1("c/app2"), O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
	int b = open(p2("c/app2"), O_WRONLY | O_APPEND);
	char expect[20 * 100];
	int bad = a < 0 || b < 0;
	for (int i = 0; i < 20 && !bad; i++) {
		memset(expect + i * 100, 'A' + i, 100);
		if (write(i & 1 ? b : a, expect + i * 100, 100) != 100)
			bad = 1;
	}
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	tap_check(!bad && file_equals(p1("c/app2"), expect, sizeof(expect)) &&
		  file_equals(p2("c/app2"), expect, sizeof(expect)),
		  "create: O_APPEND writes alternating between mounts all land in order");

	CHECK_ERR(open(p1("c/nonexistent"), O_RDONLY), ENOENT, "open: missing file -> ENOENT");
	CHECK_ERR(open(p1("c/new/x"), O_RDONLY), ENOTDIR, "open: file used as directory -> ENOTDIR");
	CHECK_ERR(open(p1("c/new/x"), O_CREAT | O_WRONLY, 0644), ENOTDIR,
		  "open: O_CREAT under a file -> ENOTDIR");
	CHECK_ERR(open(p1("c/new"), O_RDONLY | O_DIRECTORY), ENOTDIR,
		  "open: O_DIRECTORY on a file -> ENOTDIR");
	CHECK_ERR(open(p1("c"), O_WRONLY), EISDIR, "open: directory O_WRONLY -> EISDIR");
	CHECK_ERR(open(p1("c"), O_CREAT | O_WRONLY, 0644), EISDIR,
		  "open: O_CREAT on a directory -> EISDIR");
	CHECK_ERR(open(p1("nodir/x"), O_CREAT | O_WRONLY, 0644), ENOENT,
		  "open: O_CREAT with a missing parent -> ENOENT");
	CHECK_ERR(open(p1("c/dangling"), O_RDONLY), ENOENT, "open: dangling symlink -> ENOENT");
	fd = open(p1("c/app"), O_RDONLY);
	tap_check(fd >= 0 && read(fd, buf, sizeof(buf)) == 6 && write(fd, "x", 1) == -1 && errno == EBADF,
		  "open: write on an O_RDONLY fd -> EBADF");
	if (fd >= 0)
		close(fd);
}

static void test_mkdir_rmdir(void)
{
	struct stat st;
	CHECK_OK(mkdir(p1("d"), 0755), "mkdir: new directory");
	tap_check(mode_of(p1("d")) == (S_IFDIR | 0755), "mkdir: mode 0755");
	tap_check(stat(p1("d"), &st) == 0 && same_on_m2("d", &st), "mkdir: visible on mount 2");
	CHECK_ERR(mkdir(p1("d"), 0755), EEXIST, "mkdir: existing directory -> EEXIST");
	CHECK_ERR(mkdir(p2("d"), 0755), EEXIST, "mkdir: existing directory via mount 2 -> EEXIST");
	write_file(p1("d/f"), "x", 1, 0, 0644);
	CHECK_ERR(mkdir(p1("d/f"), 0755), EEXIST, "mkdir: existing file -> EEXIST");
	CHECK_ERR(mkdir(p1("d/missing/sub"), 0755), ENOENT, "mkdir: missing parent -> ENOENT");
	CHECK_ERR(mkdir(p1("d/f/sub"), 0755), ENOTDIR, "mkdir: parent is a file -> ENOTDIR");
	CHECK_ERR2(rmdir(p1("d")), ENOTEMPTY, EEXIST, "rmdir: non-empty -> ENOTEMPTY");
	CHECK_ERR2(rmdir(p2("d")), ENOTEMPTY, EEXIST, "rmdir: non-empty via mount 2 -> ENOTEMPTY");
	CHECK_ERR(rmdir(p1("d/f")), ENOTDIR, "rmdir: a file -> ENOTDIR");
	CHECK_ERR(rmdir(p1("d/nothing")), ENOENT, "rmdir: missing -> ENOENT");
	CHECK_ERR(rmdir(p1("d/.")), EINVAL, "rmdir: '.' -> EINVAL");
	CHECK_ERR(unlink(p1("d")), EISDIR, "unlink: a directory -> EISDIR");
	CHECK_OK(unlink(p1("d/f")), "unlink: file");
	CHECK_ERR(stat(p2("d/f"), &st), ENOENT, "unlink: gone on mount 2");
	CHECK_ERR(unlink(p1("d/f")), ENOENT, "unlink: again -> ENOENT");
	CHECK_OK(rmdir(p2("d")), "rmdir: empty directory via mount 2");
	CHECK_ERR(stat(p1("d"), &st), ENOENT, "rmdir: gone on mount 1");
	CHECK_OK(mkdir(p1("d"), 0700), "mkdir: re-create the removed name");
	tap_check(mode_of(p2("d")) == (S_IFDIR | 0700), "mkdir: re-created directory has the new mode on mount 2");
	umask(077);
	mkdir(p1("d/um"), 0777);
	umask(022);
	tap_check(mode_of(p1("d/um")) == (S_IFDIR | 0700), "mkdir: umask 077 applied");
}

static void test_links(void)
{
	struct stat st;
	mkdir(p1("l"), 0755);
	tap_check(nlink_of(p1("l")) == 2, "nlink: new directory has 2 (got %ld)", nlink_of(p1("l")));
	mkdir(p1("l/s1"), 0755);
	mkdir(p1("l/s2"), 0755);
	tap_check(nlink_of(p1("l")) == 4 && nlink_of(p2("l")) == 4,
		  "nlink: directory with 2 subdirectories has 4 on both mounts");
	rmdir(p1("l/s2"));
	tap_check(nlink_of(p2("l")) == 3, "nlink: rmdir of a subdirectory seen on mount 2");
	write_file(p1("l/f"), "data", 4, 0, 0644);
	tap_check(nlink_of(p1("l/f")) == 1, "nlink: new file has 1");
	CHECK_OK(link(p1("l/f"), p1("l/g")), "link: second name");
	tap_check(nlink_of(p1("l/f")) == 2 && nlink_of(p2("l/f")) == 2 && nlink_of(p2("l/g")) == 2,
		  "link: nlink 2 on both names and both mounts");
	struct stat a, b;
	tap_check(stat(p1("l/f"), &a) == 0 && stat(p2("l/g"), &b) == 0 && a.st_ino == b.st_ino,
		  "link: both names are one inode");
	tap_check(file_equals(p2("l/g"), "data", 4), "link: content through the new name");
	CHECK_ERR(link(p1("l/f"), p1("l/g")), EEXIST, "link: existing target -> EEXIST");
	CHECK_ERR(link(p1("l/s1"), p1("l/s1link")), EPERM, "link: directory -> EPERM");
	CHECK_ERR(link(p1("l/none"), p1("l/x")), ENOENT, "link: missing source -> ENOENT");
	CHECK_OK(link(p2("l/g"), p2("l/h")), "link: third name via mount 2");
	tap_check(nlink_of(p1("l/f")) == 3, "link: nlink 3 seen on mount 1");
	unlink(p1("l/f"));
	tap_check(nlink_of(p2("l/g")) == 2 && stat(p2("l/f"), &st) < 0 && errno == ENOENT,
		  "unlink: one name removed, nlink 2 on mount 2");
	unlink(p2("l/h"));
	tap_check(nlink_of(p1("l/g")) == 1 && file_equals(p1("l/g"), "data", 4),
		  "unlink: last remaining name keeps data, nlink 1");
}

static void test_rename(void)
{
	struct stat a, b, st;
	mkdir(p1("r"), 0755);
	write_file(p1("r/a"), "AAAA", 4, 0, 0644);
	write_file(p1("r/b"), "BB", 2, 0, 0644);
	stat(p1("r/a"), &a);
	int fdb = open(p1("r/b"), O_RDONLY);
	CHECK_OK(rename(p1("r/a"), p1("r/b")), "rename: file over an existing file");
	tap_check(stat(p2("r/b"), &b) == 0 && b.st_ino == a.st_ino && file_equals(p2("r/b"), "AAAA", 4),
		  "rename: target is the source inode and content on mount 2");
	CHECK_ERR(stat(p2("r/a"), &st), ENOENT, "rename: old name gone on mount 2");
	tap_check(fdb >= 0 && fstat(fdb, &st) == 0 && st.st_nlink == 0,
		  "rename: replaced file open elsewhere has nlink 0");
	char buf[8];
	tap_check(fdb >= 0 && pread(fdb, buf, 8, 0) == 2 && !memcmp(buf, "BB", 2),
		  "rename: replaced file still readable through its fd");
	if (fdb >= 0)
		close(fdb);

	mkdir(p1("r/d1"), 0755);
	write_file(p1("r/d1/in"), "in", 2, 0, 0644);
	mkdir(p1("r/d2"), 0755);
	stat(p1("r/d1"), &a);
	CHECK_OK(rename(p1("r/d1"), p1("r/d2")), "rename: directory over an empty directory");
	tap_check(stat(p2("r/d2"), &b) == 0 && b.st_ino == a.st_ino && file_equals(p2("r/d2/in"), "in", 2),
		  "rename: directory contents reachable under the new name on mount 2");
	mkdir(p1("r/d3"), 0755);
	write_file(p1("r/d3/x"), "", 0, 0, 0644);
	CHECK_ERR2(rename(p1("r/d2"), p1("r/d3")), ENOTEMPTY, EEXIST,
		   "rename: directory over a non-empty directory -> ENOTEMPTY");
	write_file(p1("r/f"), "f", 1, 0, 0644);
	CHECK_ERR(rename(p1("r/f"), p1("r/d3")), EISDIR, "rename: file over a directory -> EISDIR");
	CHECK_ERR(rename(p1("r/d3"), p1("r/f")), ENOTDIR, "rename: directory over a file -> ENOTDIR");
	CHECK_ERR(rename(p1("r/d2"), p1("r/d2/in/sub")), ENOTDIR, "rename: target below a file -> ENOTDIR");
	mkdir(p1("r/d2/sub"), 0755);
	CHECK_ERR(rename(p1("r/d2"), p1("r/d2/sub/deeper")), EINVAL,
		  "rename: directory into its own subdirectory -> EINVAL");
	CHECK_ERR(rename(p1("r/missing"), p1("r/x")), ENOENT, "rename: missing source -> ENOENT");
	CHECK_OK(rename(p1("r/f"), p1("r/f")), "rename: onto itself is a no-op");
	tap_check(file_equals(p1("r/f"), "f", 1), "rename: onto itself keeps the file");
	link(p1("r/f"), p1("r/f2"));
	CHECK_OK(rename(p1("r/f"), p1("r/f2")), "rename: between two links of one inode");
	tap_check(exists(p1("r/f")) && exists(p1("r/f2")), "rename: hard links to one inode both stay");

	/* moving a directory between parents: nlink and '..' */
	mkdir(p1("r/p1"), 0755);
	mkdir(p1("r/p2"), 0755);
	mkdir(p1("r/p1/mv"), 0755);
	struct stat p2st;
	stat(p1("r/p2"), &p2st);
	CHECK_OK(rename(p1("r/p1/mv"), p1("r/p2/mv")), "rename: directory to another parent");
	tap_check(nlink_of(p1("r/p1")) == 2 && nlink_of(p2("r/p2")) == 3,
		  "rename: parents' nlink updated (old %ld, new %ld)", nlink_of(p1("r/p1")), nlink_of(p2("r/p2")));
	tap_check(stat(p2("r/p2/mv/.."), &st) == 0 && st.st_ino == p2st.st_ino,
		  "rename: '..' of the moved directory is the new parent on mount 2");

	/* renameat2 */
	write_file(p1("r/n1"), "n1", 2, 0, 0644);
	write_file(p1("r/n2"), "n2", 2, 0, 0644);
	int rc = renameat2_(p1("r/n1"), p1("r/n2"), RENAME_NOREPLACE);
	if (rc < 0 && errno == EINVAL && opt_local) {
		tap_skip("renameat2 flags unsupported", "renameat2: RENAME_NOREPLACE");
	} else {
		tap_check(rc == -1 && errno == EEXIST, "renameat2: RENAME_NOREPLACE over existing -> EEXIST");
		tap_check(file_equals(p2("r/n2"), "n2", 2) && file_equals(p2("r/n1"), "n1", 2),
			  "renameat2: RENAME_NOREPLACE failure changed nothing");
		CHECK_OK(renameat2_(p1("r/n1"), p1("r/n3"), RENAME_NOREPLACE),
			 "renameat2: RENAME_NOREPLACE to a new name");
		tap_check(file_equals(p2("r/n3"), "n1", 2) && !exists(p2("r/n1")),
			  "renameat2: RENAME_NOREPLACE result seen on mount 2");
	}
	mkdir(p1("r/xd"), 0755);
	stat(p1("r/n3"), &a);
	stat(p1("r/xd"), &b);
	rc = renameat2_(p1("r/n3"), p1("r/xd"), RENAME_EXCHANGE);
	if (rc < 0 && errno == EINVAL && opt_local) {
		tap_skip("RENAME_EXCHANGE unsupported", "renameat2: RENAME_EXCHANGE");
	} else {
		CHECK_OK(rc, "renameat2: RENAME_EXCHANGE of a file and a directory");
		struct stat x, y;
		tap_check(stat(p2("r/n3"), &x) == 0 && stat(p2("r/xd"), &y) == 0 &&
			  x.st_ino == b.st_ino && S_ISDIR(x.st_mode) && y.st_ino == a.st_ino &&
			  S_ISREG(y.st_mode), "renameat2: exchanged names seen on mount 2");
		CHECK_ERR(renameat2_(p1("r/n3"), p1("r/nothing"), RENAME_EXCHANGE), ENOENT,
			  "renameat2: RENAME_EXCHANGE with a missing target -> ENOENT");
		CHECK_ERR(renameat2_(p1("r/n3"), p1("r/xd"), RENAME_EXCHANGE | RENAME_NOREPLACE), EINVAL,
			  "renameat2: EXCHANGE|NOREPLACE -> EINVAL");
	}
}

static void test_symlink(void)
{
	char buf[PATH_MAX + 1];
	struct stat st;
	mkdir(p1("s"), 0755);
	write_file(p1("s/target"), "tgt", 3, 0, 0644);
	CHECK_OK(symlink("target", p1("s/link")), "symlink: create");
	ssize_t n = readlink(p2("s/link"), buf, sizeof(buf));
	tap_check(n == 6 && !memcmp(buf, "target", 6), "symlink: readlink on mount 2");
	tap_check(lstat(p2("s/link"), &st) == 0 && S_ISLNK(st.st_mode) && st.st_size == 6,
		  "symlink: lstat type and size");
	tap_check(file_equals(p2("s/link"), "tgt", 3), "symlink: followed on open");
	CHECK_ERR(symlink("x", p1("s/link")), EEXIST, "symlink: existing name -> EEXIST");
	CHECK_ERR(readlink(p1("s/target"), buf, sizeof(buf)), EINVAL, "readlink: regular file -> EINVAL");
	CHECK_ERR(open(p1("s/link"), O_RDONLY | O_NOFOLLOW), ELOOP, "open: O_NOFOLLOW on a symlink -> ELOOP");
	symlink("loop2", p1("s/loop1"));
	symlink("loop1", p1("s/loop2"));
	CHECK_ERR(stat(p1("s/loop1"), &st), ELOOP, "symlink: loop -> ELOOP");
	memset(buf, 'x', 4095);
	buf[4095] = 0;
	CHECK_OK(symlink(buf, p1("s/long")), "symlink: 4095-byte target");
	char rb[PATH_MAX + 1];
	n = readlink(p2("s/long"), rb, sizeof(rb));
	tap_check(n == 4095 && !memcmp(rb, buf, 4095), "symlink: 4095-byte target read back on mount 2");
	buf[4095] = 'x';
	buf[4096] = 0;
	CHECK_ERR(symlink(buf, p1("s/toolong")), ENAMETOOLONG, "symlink: 4096-byte target -> ENAMETOOLONG");
	CHECK_OK(symlink("../s/target", p1("s/rel")), "symlink: relative with '..'");
	tap_check(file_equals(p2("s/rel"), "tgt", 3), "symlink: relative target resolves on mount 2");
	CHECK_OK(unlink(p1("s/link")), "symlink: unlink removes the link");
	tap_check(exists(p2("s/target")) && !exists(p2("s/link")), "symlink: unlink left the target alone");
}

static void test_mknod(void)
{
	struct stat st;
	mkdir(p1("n"), 0755);
	CHECK_OK(mkfifo(p1("n/fifo"), 0644), "mknod: fifo");
	tap_check(lstat(p2("n/fifo"), &st) == 0 && S_ISFIFO(st.st_mode) && (st.st_mode & 07777) == 0644,
		  "mknod: fifo type and mode on mount 2");
	/*
	 * A fifo is a local pipe on each client: mount 2 is another client
	 * (its own superblock), so its fifo is another pipe, as on two
	 * machines. (NFS shares one superblock between mounts of one export,
	 * pohmel does not by design.)
	 */
	int r = open(p1("n/fifo"), O_RDONLY | O_NONBLOCK);
	int w = r >= 0 ? open(p1("n/fifo"), O_WRONLY | O_NONBLOCK) : -1;
	char buf[8];
	tap_check(r >= 0 && w >= 0 && write(w, "pipe", 4) == 4 && read(r, buf, 8) == 4 && !memcmp(buf, "pipe", 4),
		  "mknod: fifo carries data (a local pipe on mount 1)");
	errno = 0;
	int w2 = r >= 0 ? open(p2("n/fifo"), O_WRONLY | O_NONBLOCK) : -1;
	tap_check(r >= 0 && w2 < 0 && errno == ENXIO,
		  "mknod: fifo on mount 2 is another client's pipe (no reader there: ENXIO)");
	if (w2 >= 0)
		close(w2);
	if (r >= 0)
		close(r);
	if (w >= 0)
		close(w);
	r = open(p2("n/fifo"), O_RDONLY | O_NONBLOCK);
	w = r >= 0 ? open(p2("n/fifo"), O_WRONLY | O_NONBLOCK) : -1;
	tap_check(r >= 0 && w >= 0 && write(w, "pipe", 4) == 4 && read(r, buf, 8) == 4 && !memcmp(buf, "pipe", 4),
		  "mknod: fifo carries data (a local pipe on mount 2)");
	if (r >= 0)
		close(r);
	if (w >= 0)
		close(w);
	CHECK_ERR(mkfifo(p1("n/fifo"), 0644), EEXIST, "mknod: existing fifo -> EEXIST");
	CHECK_OK(mknod(p1("n/sock"), S_IFSOCK | 0600, 0), "mknod: socket node");
	tap_check(lstat(p2("n/sock"), &st) == 0 && S_ISSOCK(st.st_mode), "mknod: socket type on mount 2");
	if (!is_root) {
		tap_skip("not root", "mknod: character device");
		return;
	}
	CHECK_OK(mknod(p1("n/chr"), S_IFCHR | 0666, makedev(1, 3)), "mknod: character device 1:3");
	tap_check(lstat(p2("n/chr"), &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
		  minor(st.st_rdev) == 3, "mknod: device number seen on mount 2");
	CHECK_OK(mknod(p1("n/blk"), S_IFBLK | 0600, makedev(259, 70000)), "mknod: block device, large minor");
	tap_check(lstat(p2("n/blk"), &st) == 0 && S_ISBLK(st.st_mode) && major(st.st_rdev) == 259 &&
		  minor(st.st_rdev) == 70000, "mknod: large minor seen on mount 2");
}

static void test_chmod_chown(void)
{
	struct stat st;
	mkdir(p1("m"), 0755);
	write_file(p1("m/f"), "x", 1, 0, 0644);
	CHECK_OK(chmod(p1("m/f"), 0640), "chmod: 0640");
	tap_check(mode_of(p2("m/f")) == (S_IFREG | 0640), "chmod: seen on mount 2");
	int fd = open(p1("m/f"), O_RDONLY);
	CHECK_OK(fchmod(fd, 04711), "fchmod: 04711");
	close(fd);
	tap_check(mode_of(p2("m/f")) == (S_IFREG | 04711), "fchmod: seen on mount 2");
	symlink("f", p1("m/l"));
	chmod(p1("m/l"), 0600);
	tap_check(mode_of(p1("m/f")) == (S_IFREG | 0600), "chmod: through a symlink changes the target");
	stat(p1("m/f"), &st);
	time_t c0 = st.st_ctime;
	long cn0 = st.st_ctim.tv_nsec;
	struct timespec ts = {0, 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
	chmod(p1("m/f"), 0644);
	tap_check(stat(p2("m/f"), &st) == 0 && (st.st_ctime > c0 || (st.st_ctime == c0 && st.st_ctim.tv_nsec > cn0)),
		  "chmod: ctime advances, seen on mount 2");
	if (!is_root) {
		tap_skip("not root", "chown: to another user");
		return;
	}
	CHECK_OK(chown(p1("m/f"), UID_A, GID_A), "chown: to 1000:1000");
	tap_check(stat(p2("m/f"), &st) == 0 && st.st_uid == UID_A && st.st_gid == GID_A, "chown: seen on mount 2");
	CHECK_OK(lchown(p1("m/l"), UID_B, GID_B), "lchown: symlink itself");
	tap_check(lstat(p2("m/l"), &st) == 0 && st.st_uid == UID_B && stat(p2("m/f"), &st) == 0 &&
		  st.st_uid == UID_A, "lchown: changes the link, not the target");
	CHECK_OK(chown(p1("m/f"), (uid_t)-1, 0), "chown: group only (-1 uid)");
	tap_check(stat(p2("m/f"), &st) == 0 && st.st_uid == UID_A && st.st_gid == 0, "chown: uid kept, gid 0");
	/* suid/sgid are cleared by chown of an executable file, also by root */
	chmod(p1("m/f"), 06755);
	chown(p1("m/f"), UID_B, GID_B);
	tap_check(mode_of(p2("m/f")) == (S_IFREG | 0755), "chown: clears SUID and SGID of an executable (got %o)",
		  mode_of(p2("m/f")));
}

static void test_truncate(void)
{
	unsigned char buf[100000], rd[100000];
	struct stat st;
	mkdir(p1("t"), 0755);
	fill_pattern(buf, 10, 1, 0);
	write_file(p1("t/f"), buf, 10, 0, 0644);
	CHECK_OK(truncate(p1("t/f"), 100000), "truncate: grow to 100000");
	tap_check(size_of(p2("t/f")) == 100000, "truncate: size seen on mount 2");
	memset(buf + 10, 0, sizeof(buf) - 10);
	tap_check(file_equals(p2("t/f"), buf, 100000), "truncate: grown part reads as zeros on mount 2");
	CHECK_OK(truncate(p1("t/f"), 5), "truncate: shrink to 5");
	tap_check(file_equals(p2("t/f"), buf, 5), "truncate: first 5 bytes kept");
	int fd = open(p2("t/f"), O_RDWR);
	CHECK_OK(ftruncate(fd, 8192), "ftruncate: grow via mount 2");
	memset(buf + 5, 0, 8192);
	tap_check(file_equals(p1("t/f"), buf, 8192), "ftruncate: old data past the shrink point is not resurrected");
	fill_pattern(buf, 8192, 2, 0);
	pwrite(fd, buf, 8192, 0);
	CHECK_OK(ftruncate(fd, 4097), "ftruncate: shrink to 4097 (mid-page)");
	tap_check(fstat(fd, &st) == 0 && st.st_size == 4097, "ftruncate: fstat size 4097");
	tap_check(pread(fd, rd, 8192, 0) == 4097 && !memcmp(rd, buf, 4097), "ftruncate: read stops at 4097");
	CHECK_OK(ftruncate(fd, 0), "ftruncate: to 0");
	close(fd);
	tap_check(size_of(p1("t/f")) == 0, "ftruncate: empty on mount 1");
	CHECK_ERR(truncate(p1("t/f"), -1), EINVAL, "truncate: negative length -> EINVAL");
	CHECK_ERR(truncate(p1("t"), 0), EISDIR, "truncate: directory -> EISDIR");
	fd = open(p1("t/f"), O_RDONLY);
	CHECK_ERR2(ftruncate(fd, 10), EINVAL, EBADF, "ftruncate: read-only fd -> EINVAL");
	close(fd);
	/* large sparse size */
	CHECK_OK(truncate(p1("t/f"), (off_t)1 << 33), "truncate: 8 GiB sparse");
	tap_check(size_of(p2("t/f")) == (off_t)1 << 33, "truncate: 8 GiB size on mount 2");
	fd = open(p2("t/f"), O_RDONLY);
	tap_check(pread(fd, rd, 16, ((off_t)1 << 33) - 8) == 8 && !memcmp(rd, "\0\0\0\0\0\0\0\0", 8),
		  "truncate: read near the 8 GiB end gives zeros and stops at EOF");
	close(fd);
}

static int ts_eq(struct timespec a, long sec, long nsec)
{
	return a.tv_sec == sec && a.tv_nsec == nsec;
}

static void test_utimens(void)
{
	struct stat st;
	mkdir(p1("u"), 0755);
	write_file(p1("u/f"), "x", 1, 0, 0644);
	struct timespec t[2] = {{1000000000, 123456789}, {1100000000, 987654321}};
	CHECK_OK(utimensat(AT_FDCWD, p1("u/f"), t, 0), "utimensat: set with nanoseconds");
	tap_check(stat(p2("u/f"), &st) == 0 && ts_eq(st.st_atim, 1000000000, 123456789) &&
		  ts_eq(st.st_mtim, 1100000000, 987654321), "utimensat: nanoseconds exact on mount 2");
	long long y[] = {(1LL << 31) - 1, 1LL << 31, 1LL << 32, 0, -1};
	for (unsigned i = 0; i < sizeof(y) / sizeof(y[0]); i++) {
		struct timespec v[2] = {{(time_t)y[i], 5}, {(time_t)y[i], 999999999}};
		int rc = utimensat(AT_FDCWD, p1("u/f"), v, 0);
		if (rc < 0 && errno == EINVAL && y[i] < 0 && opt_local) {
			tap_skip("fs rejects pre-1970", "utimensat: %lld seconds", y[i]);
			continue;
		}
		int src = rc == 0 ? stat(p2("u/f"), &st) : -1;
		if (src < 0)
			memset(&st, 0, sizeof(st));
		tap_check(rc == 0 && src == 0 && ts_eq(st.st_mtim, (long)y[i], 999999999) &&
			  ts_eq(st.st_atim, (long)y[i], 5),
			  "utimensat: %lld seconds stored exactly (got mtime %lld.%09ld)", y[i],
			  (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	}
	struct timespec set[2] = {{1234567890, 1}, {1234567890, 2}};
	utimensat(AT_FDCWD, p1("u/f"), set, 0);
	struct timespec om[2] = {{0, UTIME_OMIT}, {1500000000, 42}};
	CHECK_OK(utimensat(AT_FDCWD, p1("u/f"), om, 0), "utimensat: UTIME_OMIT atime");
	tap_check(stat(p2("u/f"), &st) == 0 && ts_eq(st.st_atim, 1234567890, 1) &&
		  ts_eq(st.st_mtim, 1500000000, 42), "utimensat: UTIME_OMIT keeps atime, sets mtime");
	struct timespec nw[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
	time_t before = time(NULL);
	CHECK_OK(utimensat(AT_FDCWD, p1("u/f"), nw, 0), "utimensat: UTIME_NOW atime");
	tap_check(stat(p2("u/f"), &st) == 0 && st.st_atime >= before - 2 && st.st_atime <= time(NULL) + 2 &&
		  ts_eq(st.st_mtim, 1500000000, 42), "utimensat: UTIME_NOW sets atime to now, mtime kept");
	CHECK_OK(utimensat(AT_FDCWD, p1("u/f"), NULL, 0), "utimensat: NULL (both now)");
	tap_check(stat(p2("u/f"), &st) == 0 && st.st_mtime >= before - 2 && st.st_mtime <= time(NULL) + 2,
		  "utimensat: NULL sets mtime to now");
	symlink("f", p1("u/l"));
	struct timespec sl[2] = {{1300000000, 0}, {1300000000, 0}};
	CHECK_OK(utimensat(AT_FDCWD, p1("u/l"), sl, AT_SYMLINK_NOFOLLOW), "utimensat: AT_SYMLINK_NOFOLLOW");
	tap_check(lstat(p2("u/l"), &st) == 0 && st.st_mtime == 1300000000 && stat(p2("u/f"), &st) == 0 &&
		  st.st_mtime != 1300000000, "utimensat: symlink's own times changed, target's not");
	struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
	CHECK_ERR(utimensat(AT_FDCWD, p1("u/f"), bad, 0), EINVAL, "utimensat: tv_nsec 1e9 -> EINVAL");
	/* a write updates mtime and ctime */
	utimensat(AT_FDCWD, p1("u/f"), set, 0);
	int fd = open(p1("u/f"), O_WRONLY);
	write(fd, "y", 1);
	close(fd);
	tap_check(stat(p2("u/f"), &st) == 0 && st.st_mtime >= before - 2 && st.st_ctime >= before - 2,
		  "write: updates mtime and ctime, seen on mount 2");
}

static void test_names(void)
{
	char name[300], path[8192];
	struct stat st;
	mkdir(p1("nm"), 0755);
	memset(name, 'n', 255);
	name[255] = 0;
	snprintf(path, sizeof(path), "nm/%s", name);
	CHECK_OK(write_file(p1(path), "long", 4, 0, 0644), "names: 255-byte name create");
	tap_check(file_equals(p2(path), "long", 4), "names: 255-byte name read on mount 2");
	DIR *d = opendir(p2("nm"));
	int seen = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strcmp(de->d_name, name))
			seen++;
	if (d)
		closedir(d);
	tap_check(seen == 1, "names: 255-byte name listed once by readdir");
	char dir255[300];
	memset(dir255, 'D', 255);
	dir255[255] = 0;
	snprintf(path, sizeof(path), "nm/%s", dir255);
	CHECK_OK(mkdir(p1(path), 0755), "names: 255-byte directory name");
	name[255] = 'n';
	name[256] = 0;
	snprintf(path, sizeof(path), "nm/%s", name);
	CHECK_ERR(open(p1(path), O_CREAT | O_WRONLY, 0644), ENAMETOOLONG, "names: 256-byte create -> ENAMETOOLONG");
	CHECK_ERR(mkdir(p1(path), 0755), ENAMETOOLONG, "names: 256-byte mkdir -> ENAMETOOLONG");
	CHECK_ERR(stat(p1(path), &st), ENAMETOOLONG, "names: 256-byte stat -> ENAMETOOLONG");
	write_file(p1("nm/short"), "", 0, 0, 0644);
	CHECK_ERR(rename(p1("nm/short"), p1(path)), ENAMETOOLONG, "names: rename to 256 bytes -> ENAMETOOLONG");
	CHECK_ERR(symlink("x", p1(path)), ENAMETOOLONG, "names: 256-byte symlink name -> ENAMETOOLONG");
	const char *odd[] = {"with space", "tab\there", "nl\nname", "utf8-\xc3\xa9\xe2\x82\xac", "-dash",
			     "...", "\x01\x7f\xff", "a:b;c*d?e", NULL};
	int ok = 1;
	for (int i = 0; odd[i]; i++) {
		snprintf(path, sizeof(path), "nm/%s", odd[i]);
		if (write_file(p1(path), odd[i], strlen(odd[i]), 0, 0644) < 0 ||
		    !file_equals(p2(path), odd[i], strlen(odd[i]))) {
			tap_diag("odd name %d failed", i);
			ok = 0;
		}
	}
	tap_check(ok, "names: spaces, control bytes, UTF-8 and high bytes round-trip");

	/* 50 levels deep */
	size_t len = snprintf(path, sizeof(path), "%s/deep", D1);
	mkdir(path, 0755);
	int depth_ok = 1;
	for (int i = 0; i < 50 && depth_ok; i++) {
		len += snprintf(path + len, sizeof(path) - len, "/level%02d", i);
		if (mkdir(path, 0755) < 0)
			depth_ok = 0;
	}
	tap_check(depth_ok, "deep: mkdir 50 levels");
	snprintf(path + len, sizeof(path) - len, "/leaf");
	CHECK_OK(write_file(path, "deep", 4, 0, 0644), "deep: create a file 50 levels down");
	char path2[8192];
	snprintf(path2, sizeof(path2), "%s%s", D2, path + strlen(D1));
	tap_check(file_equals(path2, "deep", 4), "deep: read it on mount 2 by full path");
	char *cut = strstr(path2, "/level25");
	*cut = 0;
	tap_check(chdir(path2) == 0 && file_equals(strstr(path + strlen(D1), "/level25") + 1, "deep", 4),
		  "deep: relative lookup from a middle directory on mount 2");
	chdir("/");
}

static void test_unlinked_open(void)
{
	struct stat st;
	char buf[64];
	mkdir(p1("o"), 0755);
	int fd = open(p1("o/f"), O_RDWR | O_CREAT, 0644);
	write(fd, "before", 6);
	CHECK_OK(unlink(p1("o/f")), "open-unlinked: unlink while open");
	int frc = fstat(fd, &st);
	tap_check(frc == 0 && st.st_nlink == 0, "open-unlinked: fstat nlink 0 (got %lu)",
		  (unsigned long)st.st_nlink);
	tap_check(pwrite(fd, "after", 5, 6) == 5, "open-unlinked: write still works");
	tap_check(pread(fd, buf, sizeof(buf), 0) == 11 && !memcmp(buf, "beforeafter", 11),
		  "open-unlinked: read back everything");
	tap_check(ftruncate(fd, 3) == 0 && fstat(fd, &st) == 0 && st.st_size == 3,
		  "open-unlinked: ftruncate and fstat");
	CHECK_ERR(stat(p2("o/f"), &st), ENOENT, "open-unlinked: name gone on mount 2");
	for (int m = 0; m < 2; m++) {
		DIR *d = opendir(m ? p2("o") : p1("o"));
		struct dirent *de;
		int extra = 0;
		while (d && (de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
				tap_diag("leftover entry '%s'", de->d_name);
				extra++;
			}
		if (d)
			closedir(d);
		tap_check(d && extra == 0, "open-unlinked: no leftover (silly-rename) entries on mount %d", m + 1);
	}
	tap_check(rmdir(p1("o")) == 0, "open-unlinked: the parent directory can be removed");
	close(fd);

	/* opened on mount 2, unlinked on mount 1 */
	mkdir(p1("o2"), 0755);
	write_file(p1("o2/f"), "remote-open", 11, 0, 0644);
	fd = open(p2("o2/f"), O_RDWR);
	CHECK_OK(unlink(p1("o2/f")), "open-unlinked: open on mount 2, unlink on mount 1");
	tap_check(fd >= 0 && pread(fd, buf, sizeof(buf), 0) == 11 && !memcmp(buf, "remote-open", 11),
		  "open-unlinked: mount 2 fd still reads the data");
	tap_check(fd >= 0 && pwrite(fd, "X", 1, 0) == 1 && pread(fd, buf, 2, 0) == 2 && buf[0] == 'X',
		  "open-unlinked: mount 2 fd still writes");
	tap_check(fd >= 0 && fstat(fd, &st) == 0 && st.st_nlink == 0, "open-unlinked: mount 2 fstat nlink 0");
	CHECK_ERR(stat(p2("o2/f"), &st), ENOENT, "open-unlinked: name gone on mount 2");
	if (fd >= 0)
		close(fd);
	CHECK_OK(rmdir(p2("o2")), "open-unlinked: directory empty after close");
}

static void test_visibility(void)
{
	struct stat st;
	char buf[256];
	mkdir(p1("v"), 0755);
	/* negative lookup cached on mount 2, then create on mount 1 */
	CHECK_ERR(stat(p2("v/late"), &st), ENOENT, "visibility: name absent on mount 2");
	write_file(p1("v/late"), "hello", 5, 0, 0644);
	tap_check(stat(p2("v/late"), &st) == 0 && st.st_size == 5, "visibility: create on m1 seen by stat on m2");
	/* content cached on mount 2 via an open fd, overwritten on mount 1 */
	int fd2 = open(p2("v/late"), O_RDONLY);
	pread(fd2, buf, sizeof(buf), 0);
	write_file(p1("v/late"), "HELLO", 5, 0, 0644);
	tap_check(pread(fd2, buf, sizeof(buf), 0) == 5 && !memcmp(buf, "HELLO", 5),
		  "visibility: overwrite on m1 seen by an already open fd on m2");
	int fd1 = open(p1("v/late"), O_WRONLY | O_APPEND);
	write(fd1, " world", 6);
	tap_check(fstat(fd2, &st) == 0 && st.st_size == 11 && pread(fd2, buf, sizeof(buf), 0) == 11 &&
		  !memcmp(buf, "HELLO world", 11), "visibility: append on m1 seen by fstat/read on m2");
	ftruncate(fd1, 2);
	tap_check(fstat(fd2, &st) == 0 && st.st_size == 2 && pread(fd2, buf, sizeof(buf), 0) == 2,
		  "visibility: truncate on m1 seen on m2");
	close(fd1);
	close(fd2);
	chmod(p1("v/late"), 0604);
	tap_check(mode_of(p2("v/late")) == (S_IFREG | 0604), "visibility: chmod on m1 seen on m2");
	rename(p1("v/late"), p1("v/renamed"));
	tap_check(!exists(p2("v/late")) && file_equals(p2("v/renamed"), "HE", 2),
		  "visibility: rename on m1 seen on m2");
	unlink(p1("v/renamed"));
	CHECK_ERR(stat(p2("v/renamed"), &st), ENOENT, "visibility: unlink on m1 seen on m2");
	/* and the reverse direction, with a cached directory listing */
	DIR *d = opendir(p1("v"));
	while (d && readdir(d))
		;
	if (d)
		closedir(d);
	mkdir(p2("v/sub"), 0700);
	write_file(p2("v/sub/x"), "x", 1, 0, 0600);
	d = opendir(p1("v"));
	struct dirent *de;
	int found = 0;
	while (d && (de = readdir(d)))
		found += !strcmp(de->d_name, "sub");
	if (d)
		closedir(d);
	tap_check(found == 1, "visibility: mkdir on m2 listed by readdir on m1");
	tap_check(file_equals(p1("v/sub/x"), "x", 1), "visibility: file created on m2 read on m1");
	/* an unlinked-and-recreated name is a new inode on the other mount */
	struct stat a, b;
	stat(p1("v/sub/x"), &a);
	fd1 = open(p1("v/sub/x"), O_RDONLY); /* keep it alive so the inode number is not reused */
	unlink(p2("v/sub/x"));
	write_file(p2("v/sub/x"), "new", 3, 0, 0600);
	tap_check(stat(p1("v/sub/x"), &b) == 0 && b.st_ino != a.st_ino && file_equals(p1("v/sub/x"), "new", 3),
		  "visibility: replaced file on m2 is a new inode with new content on m1");
	close(fd1);
}

static void usage(void)
{
	fprintf(stderr, "usage: posix [--local] [--readdir N] DIR1 DIR2\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int i;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--local"))
			opt_local = 1;
		else if (!strcmp(argv[i], "--readdir") && i + 1 < argc)
			readdir_n = atoi(argv[++i]);
		else
			usage();
	}
	if (argc - i != 2)
		usage();
	D1 = argv[i];
	D2 = argv[i + 1];
	tap_init();
	umask(022);
	is_root = geteuid() == 0;
	struct statfs sf;
	if (statfs(D1, &sf) == 0 && sf.f_type == TMPFS_MAGIC_)
		fs_tmpfs = 1;
	struct stat a, b;
	if (stat(D1, &a) < 0 || stat(D2, &b) < 0 || !S_ISDIR(a.st_mode))
		die("work directories %s %s", D1, D2);
	if (!is_root)
		tap_diag("not running as root: ownership and permission checks are skipped");

	test_create();
	test_mkdir_rmdir();
	test_links();
	test_rename();
	test_symlink();
	test_mknod();
	test_chmod_chown();
	test_truncate();
	test_utimens();
	test_names();
	test_unlinked_open();
	test_visibility();
	test_perm();
	test_xattr_acl();
	test_locks();
	test_io();
	test_bigmsg();
	test_dcache_cap();
	test_readdir();
	return tap_done();
}
