/* posix: permission checks as non-root users (uid 1000 and 65534). */
#include "posix.h"

#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static mode_t mode_of(const char *path)
{
	struct stat st;
	return stat(path, &st) < 0 ? (mode_t)-1 : st.st_mode;
}

/*
 * An open fd carries the access it was opened with: a file made with
 * open(O_CREAT | O_RDWR, 0) is still truncated and written through that
 * fd, as on ext4, while truncate(path) checks the mode (0). Runs as UID_B.
 */
static void fd_access(void)
{
	struct stat st;
	int fd = open(p1("pm/open/b0"), O_CREAT | O_EXCL | O_RDWR, 0);
	int e = errno;

	tap_check(fd >= 0, "fd access: open(O_CREAT | O_RDWR, 0) as uid %d (%s)", UID_B, fd < 0 ? strerror(e) : "ok");
	if (fd < 0)
		return;
	CHECK_OK(ftruncate(fd, 0), "fd access: ftruncate(fd, 0) of a mode-0 file through its O_RDWR fd");
	CHECK_OK(ftruncate(fd, 8192), "fd access: growing ftruncate through the fd");
	tap_check(pwrite(fd, "abc", 3, 100) == 3, "fd access: write through the fd");
	CHECK_OK(ftruncate(fd, 4096), "fd access: shrinking ftruncate after the write");
	CHECK_OK(fsync(fd), "fd access: fsync of the written fd");
	int ok = fstat(fd, &st) == 0 && st.st_size == 4096;
	if (stat(p2("pm/open/b0"), &st))
		memset(&st, 0xff, sizeof(st));
	tap_check(ok && st.st_size == 4096 && (st.st_mode & 07777) == 0,
		  "fd access: size 4096 and mode 0 on mount 2 (size %lld mode %o)", (long long)st.st_size,
		  st.st_mode & 07777);
	CHECK_ERR(truncate(p1("pm/open/b0"), 0), EACCES, "fd access: truncate(path) of the mode-0 file -> EACCES");
	CHECK_ERR(truncate(p2("pm/open/b0"), 0), EACCES, "fd access: truncate(path) via mount 2 -> EACCES");
	close(fd);
}

/* runs as UID_B/GID_B, not a member of GID_A */
static int as_b(void *arg)
{
	(void)arg;
	struct stat st;
	char buf[16];
	fd_access();
	CHECK_ERR(open(p1("pm/rootdir/new"), O_CREAT | O_WRONLY, 0644), EACCES,
		  "perm: create in another user's 0755 dir -> EACCES");
	CHECK_ERR(open(p2("pm/rootdir/new"), O_CREAT | O_WRONLY, 0644), EACCES,
		  "perm: create via mount 2 -> EACCES");
	CHECK_ERR(unlink(p2("pm/rootdir/rf")), EACCES, "perm: unlink in another user's dir -> EACCES");
	CHECK_ERR(mkdir(p1("pm/rootdir/sub"), 0755), EACCES, "perm: mkdir in another user's dir -> EACCES");
	CHECK_ERR(rename(p1("pm/rootdir/rf"), p1("pm/rootdir/rf2")), EACCES,
		  "perm: rename in another user's dir -> EACCES");
	CHECK_ERR(rename(p1("pm/rootdir/rf"), p1("pm/open/stolen")), EACCES,
		  "perm: rename out of another user's dir -> EACCES");
	CHECK_ERR(open(p2("pm/rootdir/rf"), O_WRONLY), EACCES, "perm: open 0644 root file for writing -> EACCES");
	CHECK_ERR(truncate(p1("pm/rootdir/rf"), 0), EACCES, "perm: truncate 0644 root file -> EACCES");
	CHECK_ERR(open(p1("pm/rootdir/secret"), O_RDONLY), EACCES, "perm: read 0600 root file -> EACCES");
	tap_check(read_file(p2("pm/rootdir/rf"), buf, sizeof(buf)) == 2, "perm: read 0644 root file works");
	CHECK_ERR(stat(p1("pm/priv/f"), &st), EACCES, "perm: lookup in a 0700 dir -> EACCES");
	CHECK_ERR(stat(p2("pm/priv/f"), &st), EACCES, "perm: lookup in a 0700 dir via mount 2 -> EACCES");
	CHECK_OK(stat(p1("pm/xonly/f"), &st), "perm: lookup in a 0711 dir works");
	tap_check(opendir(p1("pm/xonly")) == NULL && errno == EACCES, "perm: readdir of a 0711 dir -> EACCES");
	CHECK_ERR(chmod(p1("pm/rootdir/rf"), 0666), EPERM, "perm: chmod another user's file -> EPERM");
	CHECK_OK(chmod(p1("pm/open/bfile"), 02755), "sgid: chmod g+s on own file with a foreign group returns 0");
	tap_check(mode_of(p2("pm/open/bfile")) == (S_IFREG | 0755),
		  "sgid: ... but SGID is silently dropped (not a member of the file's group) (got %o)",
		  mode_of(p2("pm/open/bfile")));
	CHECK_ERR(chown(p1("pm/open/bfile"), UID_A, (gid_t)-1), EPERM, "perm: chown own file to another uid -> EPERM");
	CHECK_ERR(chown(p1("pm/open/bfile"), (uid_t)-1, 0), EPERM, "perm: chgrp to a non-member group -> EPERM");
	CHECK_OK(chown(p1("pm/open/bfile"), (uid_t)-1, GID_B), "perm: chgrp to own group works");
	CHECK_OK(chmod(p1("pm/open/bfile"), 02755), "sgid: chmod g+s with own group");
	tap_check(mode_of(p2("pm/open/bfile")) == (S_IFREG | 02755), "sgid: SGID kept for own group (got %o)",
		  mode_of(p2("pm/open/bfile")));
	struct timespec t[2] = {{1, 0}, {1, 0}};
	CHECK_ERR(utimensat(AT_FDCWD, p1("pm/open/rw"), t, 0), EPERM,
		  "perm: explicit times on another user's writable file -> EPERM");
	CHECK_OK(utimensat(AT_FDCWD, p1("pm/open/rw"), NULL, 0), "perm: UTIME_NOW on a writable file works");
	CHECK_ERR(utimensat(AT_FDCWD, p1("pm/rootdir/rf"), NULL, 0), EACCES,
		  "perm: UTIME_NOW on a non-writable file -> EACCES");
	CHECK_OK(chown(p1("pm/open/bsuid"), (uid_t)-1, GID_B), "suid: owner chgrp of own 06755 file");
	tap_check(mode_of(p2("pm/open/bsuid")) == (S_IFREG | 0755),
		  "suid: chgrp by the (non-root) owner cleared SUID and SGID (got %o)", mode_of(p2("pm/open/bsuid")));
	/* sticky directory */
	CHECK_ERR(unlink(p1("pm/sticky/a_file")), EPERM, "sticky: unlink another user's file -> EPERM");
	CHECK_ERR(unlink(p2("pm/sticky/a_file")), EPERM, "sticky: unlink via mount 2 -> EPERM");
	CHECK_ERR(rename(p1("pm/sticky/a_file"), p1("pm/sticky/mine")), EPERM,
		  "sticky: rename another user's file -> EPERM");
	CHECK_OK(write_file(p1("pm/sticky/b_file"), "b", 1, 0, 0666), "sticky: create own file");
	CHECK_ERR(rename(p1("pm/sticky/b_file"), p1("pm/sticky/a_file")), EPERM,
		  "sticky: rename over another user's file -> EPERM");
	CHECK_OK(rename(p1("pm/sticky/b_file"), p1("pm/sticky/b_file2")), "sticky: rename own file works");
	/* write by a non-owner clears SUID, and SGID when group-executable */
	int fd = open(p1("pm/open/suid"), O_WRONLY);
	tap_check(fd >= 0 && write(fd, "w", 1) == 1, "suid: non-owner writes a 06777 file");
	if (fd >= 0)
		close(fd);
	tap_check(mode_of(p2("pm/open/suid")) == (S_IFREG | 0777),
		  "suid: write by non-owner cleared SUID+SGID, seen on mount 2 (got %o)", mode_of(p2("pm/open/suid")));
	CHECK_OK(truncate(p1("pm/open/suid2"), 1), "suid: non-owner truncates a 04666 file");
	tap_check(mode_of(p2("pm/open/suid2")) == (S_IFREG | 0666), "suid: truncate by non-owner cleared SUID (got %o)",
		  mode_of(p2("pm/open/suid2")));
	/* setgid directory owned by group A: new files get group A, SGID stripped for non-members */
	CHECK_OK(write_file(p1("pm/sgid/bnew"), "", 0, 0, 02755), "sgid: non-member creates in a setgid dir");
	struct stat s2;
	tap_check(stat(p2("pm/sgid/bnew"), &s2) == 0 && s2.st_gid == GID_A && s2.st_uid == UID_B,
		  "sgid: file inherits the directory's group");
	tap_check((s2.st_mode & 07777) == 0755, "sgid: SGID stripped for a non-member creator (got %o)",
		  s2.st_mode & 07777);
	return 0;
}

/* runs as UID_A/GID_A */
static int as_a(void *arg)
{
	(void)arg;
	CHECK_OK(unlink(p2("pm/sticky/a_file")), "sticky: owner unlinks own file in a sticky dir");
	CHECK_ERR(open(p1("pm/open/a0404"), O_WRONLY), EACCES, "perm: owner without w bit -> EACCES (owner class wins)");
	CHECK_ERR(open(p1("pm/open/a0070"), O_RDONLY), EACCES, "perm: owner with only group bits -> EACCES");
	CHECK_OK(chmod(p1("pm/open/a0404"), 0604), "perm: owner may chmod own file");
	CHECK_OK(write_file(p1("pm/open/a0404"), "x", 1, 0, 0), "perm: and then write it");
	/*
	 * A write-only open writing inside an uncached page: the rest of
	 * the page must come from the server (or the write go through).
	 */
	static const char *const wo[] = { "pm/open/a0600", "pm/open/a0200" };
	for (unsigned int i = 0; i < 2; i++) {
		int fd = open(p1(wo[i]), O_WRONLY);
		ssize_t n = fd < 0 ? -1 : pwrite(fd, "X", 1, 3);
		int e = errno;
		tap_check(n == 1 && close(fd) == 0,
			  "perm: O_WRONLY one-byte write inside %s's uncached page (%s)",
			  wo[i], n == 1 ? "ok" : strerror(e));
	}
	return 0;
}

static int mkfile(const char *name, uid_t uid, gid_t gid, mode_t mode)
{
	if (write_file(p1(name), "rf", 2, O_TRUNC, 0600) < 0 || chown(p1(name), uid, gid) < 0 ||
	    chmod(p1(name), mode) < 0) {
		tap_diag("setup %s: %s", name, strerror(errno));
		return -1;
	}
	return 0;
}

void test_perm(void)
{
	struct stat st;
	if (!is_root) {
		tap_skip("not root", "perm: non-root permission checks need root to switch users");
		return;
	}
	mkdir(p1("pm"), 0755);
	mkdir(p1("pm/rootdir"), 0755);
	mkdir(p1("pm/open"), 0777);
	chmod(p1("pm/open"), 0777);
	mkdir(p1("pm/priv"), 0700);
	mkdir(p1("pm/xonly"), 0711);
	mkdir(p1("pm/sticky"), 0777);
	chmod(p1("pm/sticky"), 01777);
	mkdir(p1("pm/sgid"), 0777);
	chown(p1("pm/sgid"), 0, GID_A);
	CHECK_OK(chmod(p1("pm/sgid"), 02777), "sgid: chmod 02777 on a directory");
	tap_check(mode_of(p2("pm/sgid")) == (S_IFDIR | 02777), "sgid: directory mode on mount 2");
	int bad = 0;
	bad |= mkfile("pm/rootdir/rf", 0, 0, 0644);
	bad |= mkfile("pm/rootdir/secret", 0, 0, 0600);
	bad |= mkfile("pm/priv/f", 0, 0, 0644);
	bad |= mkfile("pm/xonly/f", 0, 0, 0644);
	bad |= mkfile("pm/open/bfile", UID_B, GID_A, 0644);
	bad |= mkfile("pm/open/rw", 0, 0, 0666);
	bad |= mkfile("pm/open/bsuid", UID_B, GID_A, 06755);
	bad |= mkfile("pm/open/suid", UID_A, GID_A, 06777);
	bad |= mkfile("pm/open/suid2", UID_A, GID_A, 04666);
	bad |= mkfile("pm/open/a0404", UID_A, GID_A, 0404);
	bad |= mkfile("pm/open/a0070", UID_A, GID_A, 0070);
	bad |= mkfile("pm/sticky/a_file", UID_A, GID_A, 0666);
	tap_check(!bad, "perm: setup of files owned by other users");
	tap_check(mode_of(p2("pm/open/suid")) == (S_IFREG | 06777), "suid: 06777 set by root (chmod after chown)");

	int rc = as_user(UID_B, GID_B, as_b, NULL);
	tap_check(rc == 0, "perm: checks as uid %d ran (status %d)", UID_B, rc);
	tap_check(stat(p1("pm/open/bfile"), &st) == 0 && st.st_gid == GID_B && st.st_uid == UID_B,
		  "perm: chgrp by the owner seen by root on mount 1");
	char b0[4096];
	tap_check(read_file(p2("pm/open/b0"), b0, sizeof(b0)) == 4096 && !memcmp(b0 + 100, "abc", 3) && !b0[99] &&
		  !b0[4095], "fd access: the write through the mode-0 file's fd, read by root via mount 2");
	/* written through mount 2: mount 1's pages of them are recalled */
	bad = mkfile("pm/open/a0600", UID_A, GID_A, 0600);
	bad |= mkfile("pm/open/a0200", UID_A, GID_A, 0200);
	bad |= write_file(p2("pm/open/a0600"), "0123456789", 10, O_TRUNC, 0) < 0;
	bad |= write_file(p2("pm/open/a0200"), "0123456789", 10, O_TRUNC, 0) < 0;
	tap_check(!bad, "perm: setup of files for write-only opens");
	rc = as_user(UID_A, GID_A, as_a, NULL);
	tap_check(rc == 0, "perm: checks as uid %d ran (status %d)", UID_A, rc);
	for (unsigned int i = 0; i < 2; i++) {
		const char *name = i ? "pm/open/a0200" : "pm/open/a0600";
		char buf[16] = "";
		ssize_t n = read_file(p2(name), buf, sizeof(buf) - 1);

		tap_check(n == 10 && !memcmp(buf, "012X456789", 10),
			  "perm: %s after the write-only write, via mount 2: \"%s\"", name, buf);
	}

	/* root writing a SUID file keeps the bits (CAP_FSETID) */
	mkfile("pm/open/rsuid", UID_A, GID_A, 06755);
	write_file(p1("pm/open/rsuid"), "root", 4, 0, 0);
	tap_check(mode_of(p2("pm/open/rsuid")) == (S_IFREG | 06755), "suid: write by root keeps SUID/SGID");
	/* setgid inheritance for root-created objects */
	write_file(p1("pm/sgid/rootfile"), "", 0, 0, 0644);
	tap_check(stat(p2("pm/sgid/rootfile"), &st) == 0 && st.st_gid == GID_A && (st.st_mode & 07777) == 0644,
		  "sgid: file created by root gets the directory's group");
	mkdir(p1("pm/sgid/subdir"), 0755);
	int src = stat(p2("pm/sgid/subdir"), &st);
	tap_check(src == 0 && st.st_gid == GID_A && (st.st_mode & 07777) == 02755,
		  "sgid: subdirectory inherits group and the SGID bit (got %o)", st.st_mode & 07777);
}
