// SPDX-License-Identifier: MIT
/*
 * test_integ - every operation against a temporary export through a real
 * pohmeld (socket-activated, READY=1), including the error cases.
 *   test_integ PATH-TO-POHMELD
 */
#include <dirent.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include "integ_lib.h"
#include "tap.h"

static char exp_dir[300];
static struct srvproc sp;
static struct pc c;
static struct woid root;

/* Open fds of the server: error paths must not leak any. */
static int server_fds(void)
{
	char p[64];
	DIR *d;
	int n = 0;

	snprintf(p, sizeof(p), "/proc/%d/fd", sp.pid);
	d = opendir(p);
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void lpath(char *buf, const char *rel)
{
	snprintf(buf, 600, "%s/%s", exp_dir, rel);
}

static int lstat_rel(const char *rel, struct stat *st)
{
	char p[600];

	lpath(p, rel);
	return lstat(p, st);
}

/* LOOKUP with raw name bytes (names the library would never send). */
static int raw_lookup(const struct woid *dir, const char *name, uint32_t nl)
{
	uint8_t b[600];

	return pc_call(&c, POHMEL_OP_LOOKUP, b,
		       pc_enc_name_req(b, dir, name, nl), c.rbuf,
		       POHMEL_MAX_MSG, NULL);
}

static void t_basic(void)
{
	char s[8192];
	struct wattr a;

	CHECK(pc_ping(&c) == 0, "PING");
	CHECK(pc_stats(&c, s, sizeof(s)) == 0 && strstr(s, "clients 1\n") &&
	      strstr(s, "op_ping 1\n"), "STATS text counters");
	CHECK(pc_getattr(&c, &root, &a) == 0 && S_ISDIR(a.mode) &&
	      a.oid.id == POHMEL_ROOT_ID, "GETATTR root (id 1)");
	CHECK(pc_lookup(&c, &root, "missing", &a) == ENOENT,
	      "LOOKUP missing ENOENT");
}

static void t_namespace(void)
{
	struct wattr f, d, a, dir;
	struct stat st;
	char t[64], longname[300];
	uint8_t b[600];
	uint32_t n;

	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, "f1", 0640, 0,
		       POHMEL_CREATE_EXCL, NULL, &f, &dir) == 0 &&
	      S_ISREG(f.mode) && (f.mode & 0777) == 0640 &&
	      dir.oid.id == POHMEL_ROOT_ID, "CREATE EXCL");
	CHECK(lstat_rel("f1", &st) == 0 && S_ISREG(st.st_mode) &&
	      (st.st_mode & 0777) == 0640 && f.oid.id > POHMEL_ROOT_ID,
	      "CREATE made the file, with an id of its own");
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, "f1", 0640, 0,
		       POHMEL_CREATE_EXCL, NULL, NULL, NULL) == EEXIST,
	      "CREATE EXCL on existing EEXIST");
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, "f1", 0640, 0, 0, NULL,
		       &a, NULL) == 0 && a.oid.id == f.oid.id,
	      "CREATE non-EXCL on existing returns it");
	CHECK(pc_mkobj(&c, POHMEL_OP_MKDIR, &root, "d1", 0750, 0, 0, NULL,
		       &d, NULL) == 0 && S_ISDIR(d.mode), "MKDIR");
	CHECK(pc_mkobj(&c, POHMEL_OP_MKDIR, &root, "d1", 0750, 0, 0, NULL,
		       NULL, NULL) == EEXIST, "MKDIR existing EEXIST");
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, "d1", 0640, 0, 0, NULL,
		       NULL, NULL) == EISDIR, "CREATE over a directory EISDIR");
	CHECK(pc_mkobj(&c, POHMEL_OP_MKNOD, &root, "fifo", S_IFIFO | 0600, 0,
		       0, NULL, &a, NULL) == 0 && S_ISFIFO(a.mode) &&
	      lstat_rel("fifo", &st) == 0 && S_ISFIFO(st.st_mode),
	      "MKNOD fifo");
	CHECK(pc_mkobj(&c, POHMEL_OP_MKNOD, &root, "sock", S_IFSOCK | 0600,
		       0, 0, NULL, &a, NULL) == 0 && S_ISSOCK(a.mode),
	      "MKNOD socket");
	CHECK(pc_mkobj(&c, POHMEL_OP_MKNOD, &root, "chr", S_IFCHR | 0600,
		       wire_encode_dev(1, 3), 0, NULL, &a, NULL) == 0 &&
	      S_ISCHR(a.mode) && wire_dev_major(a.rdev) == 1 &&
	      lstat_rel("chr", &st) == 0 && st.st_rdev == makedev(1, 3),
	      "MKNOD chr 1,3");
	CHECK(pc_mkobj(&c, POHMEL_OP_MKNOD, &root, "blk", S_IFBLK | 0600,
		       wire_encode_dev(7, 300), 0, NULL, &a, NULL) == 0 &&
	      lstat_rel("blk", &st) == 0 && st.st_rdev == makedev(7, 300),
	      "MKNOD blk 7,300");
	CHECK(pc_mkobj(&c, POHMEL_OP_MKNOD, &root, "bad", S_IFDIR | 0600, 0,
		       0, NULL, NULL, NULL) == EINVAL, "MKNOD of a dir EINVAL");
	CHECK(pc_mkobj(&c, POHMEL_OP_SYMLINK, &root, "sl", 0777, 0, 0,
		       "f1", &a, NULL) == 0 && S_ISLNK(a.mode), "SYMLINK");
	CHECK(pc_readlink(&c, &a.oid, t, sizeof(t)) == 0 &&
	      !strcmp(t, "f1"), "READLINK");
	CHECK(pc_readlink(&c, &f.oid, t, sizeof(t)) == EINVAL,
	      "READLINK of a file EINVAL");
	CHECK(pc_link(&c, &f.oid, &root, "f1h", &a) == 0 && a.nlink == 2 &&
	      a.oid.id == f.oid.id, "LINK");
	CHECK(pc_link(&c, &d.oid, &root, "d1h", NULL) == EPERM,
	      "LINK of a directory EPERM");
	CHECK(pc_link(&c, &f.oid, &root, "f1h", NULL) == EEXIST,
	      "LINK onto existing EEXIST");
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &d.oid, "x", 0600, 0, 0, NULL,
		       NULL, NULL) == 0, "CREATE in subdir");
	CHECK(pc_remove(&c, POHMEL_OP_RMDIR, &root, "d1") == ENOTEMPTY,
	      "RMDIR non-empty ENOTEMPTY");
	CHECK(pc_remove(&c, POHMEL_OP_UNLINK, &root, "d1") == EISDIR,
	      "UNLINK a directory EISDIR");
	CHECK(pc_remove(&c, POHMEL_OP_RMDIR, &root, "f1") == ENOTDIR,
	      "RMDIR a file ENOTDIR");
	CHECK(pc_remove(&c, POHMEL_OP_UNLINK, &root, "nope") == ENOENT,
	      "UNLINK missing ENOENT");
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &f.oid, "x", 0600, 0, 0, NULL,
		       NULL, NULL) == ENOTDIR, "CREATE under a file ENOTDIR");

	CHECK(pc_rename(&c, &root, "f1h", &d.oid, "moved", 0, &a) == 0 &&
	      a.oid.id == f.oid.id && lstat_rel("d1/moved", &st) == 0,
	      "RENAME across directories keeps the id");
	CHECK(pc_rename(&c, &d.oid, "moved", &root, "f1",
			POHMEL_RENAME_NOREPLACE, NULL) == EEXIST,
	      "RENAME NOREPLACE onto existing EEXIST");
	CHECK(pc_rename(&c, &root, "fifo", &root, "d1",
			POHMEL_RENAME_EXCHANGE, NULL) == 0 &&
	      lstat_rel("d1", &st) == 0 && S_ISFIFO(st.st_mode) &&
	      lstat_rel("fifo/x", &st) == 0, "RENAME EXCHANGE");
	CHECK(pc_rename(&c, &root, "fifo", &root, "d1",
			POHMEL_RENAME_EXCHANGE, NULL) == 0 &&
	      lstat_rel("d1/x", &st) == 0, "RENAME EXCHANGE back");
	CHECK(pc_rename(&c, &root, "nope", &root, "x", 0, NULL) == ENOENT,
	      "RENAME missing ENOENT");
	CHECK(pc_remove(&c, POHMEL_OP_UNLINK, &d.oid, "x") == 0 &&
	      pc_remove(&c, POHMEL_OP_UNLINK, &d.oid, "moved") == 0 &&
	      pc_remove(&c, POHMEL_OP_RMDIR, &root, "d1") == 0 &&
	      lstat_rel("d1", &st) == -1, "UNLINK and RMDIR");

	/* Names the protocol forbids, sent raw. */
	CHECK(raw_lookup(&root, "a/b", 3) == EINVAL, "name with '/' EINVAL");
	CHECK(raw_lookup(&root, "a\0b", 3) == EINVAL, "name with NUL EINVAL");
	CHECK(raw_lookup(&root, ".", 1) == EINVAL, "name '.' EINVAL");
	CHECK(raw_lookup(&root, "..", 2) == EINVAL, "name '..' EINVAL");
	CHECK(raw_lookup(&root, "", 0) == EINVAL, "empty name EINVAL");
	memset(longname, 'n', 256);
	longname[256] = 0;
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, longname, 0600, 0, 0,
		       NULL, NULL, NULL) == ENAMETOOLONG,
	      "256-byte name ENAMETOOLONG");
	longname[255] = 0;
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, longname, 0600, 0, 0,
		       NULL, NULL, NULL) == 0, "255-byte name works");
	n = pc_enc_create(b, &root, 0755, 0, 0, 0, 0, "..", 2, NULL, 0);
	CHECK(pc_call(&c, POHMEL_OP_MKDIR, b, n, c.rbuf, POHMEL_MAX_MSG,
		      NULL) == EINVAL, "MKDIR '..' EINVAL");
	n = pc_enc_rename(b, &root, "f1", 2, &root, "x/y", 3, 0);
	CHECK(pc_call(&c, POHMEL_OP_RENAME, b, n, c.rbuf, POHMEL_MAX_MSG,
		      NULL) == EINVAL, "RENAME to 'x/y' EINVAL");
}

static void t_setattr(void)
{
	struct wtime at = { 5000000000LL, 123456789 }, mt = { 1, 999999999 };
	struct wattr f, a;
	struct stat st;
	struct timespec now;

	CHECK(pc_lookup(&c, &root, "f1", &f) == 0, "LOOKUP f1");
	CHECK(pc_setattr(&c, &f.oid, POHMEL_SET_MODE, 04751, 0, 0, 0, NULL,
			 NULL, &a) == 0 && (a.mode & 07777) == 04751 &&
	      lstat_rel("f1", &st) == 0 && (st.st_mode & 07777) == 04751,
	      "SETATTR mode");
	CHECK(pc_setattr(&c, &f.oid, POHMEL_SET_UID | POHMEL_SET_GID, 0, 123,
			 456, 0, NULL, NULL, &a) == 0 && a.uid == 123 &&
	      a.gid == 456 && lstat_rel("f1", &st) == 0 &&
	      st.st_uid == 123 && st.st_gid == 456, "SETATTR uid/gid");
	CHECK(pc_setattr(&c, &f.oid, POHMEL_SET_SIZE, 0, 0, 0, 100000, NULL,
			 NULL, &a) == 0 && a.size == 100000 &&
	      lstat_rel("f1", &st) == 0 && st.st_size == 100000,
	      "SETATTR size");
	CHECK(pc_setattr(&c, &f.oid, POHMEL_SET_ATIME | POHMEL_SET_MTIME, 0,
			 0, 0, 0, &at, &mt, &a) == 0 &&
	      lstat_rel("f1", &st) == 0 && st.st_atim.tv_sec == 5000000000LL &&
	      st.st_atim.tv_nsec == 123456789 && st.st_mtim.tv_sec == 1 &&
	      st.st_mtim.tv_nsec == 999999999 &&
	      a.atime.sec == 5000000000LL && a.mtime.nsec == 999999999,
	      "SETATTR times with ns and 64-bit seconds");
	clock_gettime(CLOCK_REALTIME, &now);
	CHECK(pc_setattr(&c, &f.oid, POHMEL_SET_ATIME_NOW |
			 POHMEL_SET_MTIME_NOW, 0, 0, 0, 0, NULL, NULL,
			 &a) == 0 && a.mtime.sec >= now.tv_sec - 2 &&
	      a.atime.sec <= now.tv_sec + 2, "SETATTR *_NOW");
	CHECK(pc_setattr(&c, &root, POHMEL_SET_SIZE, 0, 0, 0, 1, NULL, NULL,
			 NULL) == EISDIR, "SETATTR size of a directory EISDIR");
	CHECK(pc_setattr(&c, &f.oid, POHMEL_SET_MODE, 0600, 0, 0, 0, NULL,
			 NULL, NULL) == 0, "SETATTR mode back");
}

static void t_io(void)
{
	uint8_t *data = malloc(POHMEL_MAX_DATA), *back = malloc(POHMEL_MAX_DATA);
	struct wattr f;
	uint32_t n, got;
	long sf;
	struct stat st;

	getrandom(data, POHMEL_MAX_DATA, 0);
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, "big", 0644, 0, 0, NULL,
		       &f, NULL) == 0, "CREATE big");
	CHECK(pc_write(&c, &f.oid, 0, 0, data, POHMEL_MAX_DATA, 0, &n) == 0 &&
	      n == POHMEL_MAX_DATA, "WRITE 1 MiB");
	sf = srv_stat(&c, "bytes_sendfile");
	CHECK(pc_read(&c, &f.oid, 0, 0, back, POHMEL_MAX_DATA, &got) == 0 &&
	      got == POHMEL_MAX_DATA && !memcmp(data, back, got),
	      "READ 1 MiB back, same bytes");
	CHECK(sf >= 0 && srv_stat(&c, "bytes_sendfile") == sf + POHMEL_MAX_DATA,
	      "unsealed READ of 1 MiB: its data sent by sendfile");
	CHECK(pc_write(&c, &f.oid, 0, 3ULL << 30, "tail", 4, POHMEL_IO_STABLE,
		       &n) == 0 && n == 4 && lstat_rel("big", &st) == 0 &&
	      st.st_size == (3LL << 30) + 4, "WRITE STABLE at 3 GiB (sparse)");
	CHECK(pc_read(&c, &f.oid, 0, (3ULL << 30) + 2, back, 100, &got) == 0 &&
	      got == 2 && !memcmp(back, "il", 2), "short READ at EOF");
	sf = srv_stat(&c, "bytes_sendfile");
	memset(back, 1, 65536);
	CHECK(pc_read(&c, &f.oid, 0, (3ULL << 30) - 40000, back, 65536,
		      &got) == 0 && got == 40004 && !back[0] &&
	      !memcmp(back, back + 1, 39999) && !memcmp(back + 40000, "tail", 4) &&
	      srv_stat(&c, "bytes_sendfile") == sf + 40004,
	      "64 KiB READ across EOF by sendfile: the 40004 bytes left");
	CHECK(pc_read(&c, &f.oid, 0, 4ULL << 30, back, 100, &got) == 0 &&
	      got == 0, "READ past EOF returns 0 bytes");
	CHECK(pc_fsync(&c, &f.oid, 0, 0) == 0 &&
	      pc_fsync(&c, &f.oid, 0, POHMEL_FSYNC_DATAONLY) == 0 &&
	      pc_fsync(&c, &root, 0, 0) == 0, "FSYNC file, data-only, dir");
	CHECK(pc_read(&c, &root, 0, 0, back, 10, &got) == EISDIR,
	      "READ a directory EISDIR");
	CHECK(pc_write(&c, &f.oid, 0, 0, data, POHMEL_MAX_DATA + 1, 0, &n) ==
	      -EMSGSIZE, "library refuses > 1 MiB");
	{
		uint8_t b[64];

		n = pc_enc_io(b, &f.oid, 0, 0, POHMEL_MAX_DATA + 1, 0, NULL);
		CHECK(pc_call(&c, POHMEL_OP_READ, b, n, c.rbuf, POHMEL_MAX_MSG,
			      NULL) == EINVAL, "READ of > 1 MiB EINVAL");
	}
	CHECK(pc_setattr(&c, &f.oid, POHMEL_SET_SIZE, 0, 0, 0, 0, NULL, NULL,
			 NULL) == 0, "truncate big to 0");
	free(data);
	free(back);
}

struct seen {
	int count[400];
	int dups, others;
};

static int seen_cb(void *arg, const char *name, const struct wattr *a,
		   uint64_t cookie)
{
	struct seen *s = arg;
	int i;

	(void)a;
	(void)cookie;
	if (sscanf(name, "entry-with-a-longish-name-%d", &i) == 1 && i >= 0 &&
	    i < 400) {
		if (s->count[i]++)
			s->dups++;
	} else {
		s->others++;
	}
	return 0;
}

static void t_readdir(void)
{
	struct wattr d, a;
	struct seen s = { 0 };
	uint64_t cookie = 0, next;
	bool eof = false;
	int i, pages = 0, missing = 0, fd;
	char p[700];

	CHECK(pc_mkobj(&c, POHMEL_OP_MKDIR, &root, "many", 0755, 0, 0, NULL,
		       &d, NULL) == 0, "MKDIR many");
	for (i = 0; i < 300; i++) {
		snprintf(p, sizeof(p), "%s/many/entry-with-a-longish-name-%d",
			 exp_dir, i);
		fd = open(p, O_CREAT | O_WRONLY, 0644);
		close(fd);
	}
	/* Page through in small pieces while the directory changes: 200..299
	 * are removed and 300..399 added after the first page. */
	while (!eof) {
		int err = pc_readdir(&c, &d.oid, cookie, 2048, seen_cb, &s,
				     &eof, &next);

		if (err) {
			CHECK(0, "READDIR page failed: %d", err);
			return;
		}
		if (pages++ == 0) {
			for (i = 200; i < 300; i++) {
				snprintf(p, sizeof(p),
					 "%s/many/entry-with-a-longish-name-%d",
					 exp_dir, i);
				unlink(p);
				snprintf(p, sizeof(p),
					 "%s/many/entry-with-a-longish-name-%d",
					 exp_dir, i + 100);
				fd = open(p, O_CREAT | O_WRONLY, 0644);
				close(fd);
			}
		}
		cookie = next;
	}
	for (i = 0; i < 200; i++)
		if (s.count[i] != 1)
			missing++;
	CHECK(pages > 10 && missing == 0 && s.dups == 0 && s.others == 0,
	      "READDIR resumable under changes: %d pages, %d stable missing, %d duplicates",
	      pages, missing, s.dups);
	memset(&s, 0, sizeof(s));
	CHECK(pc_readdir_all(&c, &d.oid, seen_cb, &s) == 0 && s.dups == 0 &&
	      s.count[0] == 1 && s.count[399] == 1 && s.count[250] == 0,
	      "READDIR after changes sees the new set");
	CHECK(pc_readdir(&c, &d.oid, 0, 100, NULL, NULL, &eof, &next) ==
	      EINVAL, "READDIR with tiny maxbytes EINVAL");
	CHECK(pc_lookup(&c, &root, "f1", &a) == 0 &&
	      pc_readdir(&c, &a.oid, 0, 4096, NULL, NULL, &eof, &next) ==
	      ENOTDIR, "READDIR a file ENOTDIR");
}

static int find_name(void *arg, const char *name, const struct wattr *a,
		     uint64_t cookie)
{
	(void)cookie;
	if (!strcmp(name, "f1"))
		*(struct wattr *)arg = *a;
	return 0;
}

static void t_readdir_plus(void)
{
	struct wattr viaread = { 0 }, vialook;

	CHECK(pc_readdir_all(&c, &root, find_name, &viaread) == 0 &&
	      pc_lookup(&c, &root, "f1", &vialook) == 0 &&
	      viaread.oid.id == vialook.oid.id &&
	      viaread.oid.gen == vialook.oid.gen &&
	      viaread.mode == vialook.mode && viaread.size == vialook.size,
	      "READDIR entries carry the same attrs as LOOKUP");
}

static void t_statfs_xattr(void)
{
	/* ACL: USER_OBJ rw, USER 1000 r, GROUP_OBJ r, MASK r, OTHER none */
	static const uint8_t acl[] = {
		2, 0, 0, 0,
		1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
		2, 0, 4, 0, 0xe8, 3, 0, 0,
		4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
		0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
		0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
	};
	struct pc_statfs sf;
	struct wattr f;
	char v[256], p[600];
	uint32_t n;
	int err;

	CHECK(pc_statfs(&c, &root, &sf) == 0 && sf.bsize > 0 &&
	      sf.blocks > 0 && sf.namelen == 255, "STATFS");
	CHECK(pc_lookup(&c, &root, "f1", &f) == 0, "lookup f1");
	CHECK(pc_setxattr(&c, &f.oid, "user.k", "v\0al", 4, 0) == 0,
	      "SETXATTR");
	CHECK(pc_getxattr(&c, &f.oid, "user.k", v, sizeof(v), &n) == 0 &&
	      n == 4 && !memcmp(v, "v\0al", 4), "GETXATTR");
	CHECK(pc_getxattr(&c, &f.oid, "user.k", NULL, 0, &n) == 0 && n == 4,
	      "GETXATTR size query");
	CHECK(pc_getxattr(&c, &f.oid, "user.k", v, 2, &n) == ERANGE,
	      "GETXATTR small buffer ERANGE");
	CHECK(pc_listxattr(&c, &f.oid, v, sizeof(v), &n) == 0 && n >= 7 &&
	      memmem(v, n, "user.k", 7), "LISTXATTR");
	CHECK(pc_setxattr(&c, &f.oid, "user.k", "x", 1,
			  POHMEL_XATTR_CREATE) == EEXIST, "XATTR_CREATE EEXIST");
	CHECK(pc_setxattr(&c, &f.oid, "user.none", "x", 1,
			  POHMEL_XATTR_REPLACE) == ENODATA,
	      "XATTR_REPLACE ENODATA");
	CHECK(pc_removexattr(&c, &f.oid, "user.k") == 0 &&
	      pc_getxattr(&c, &f.oid, "user.k", v, sizeof(v), &n) == ENODATA,
	      "REMOVEXATTR");
	err = pc_setxattr(&c, &f.oid, "system.posix_acl_access", acl,
			  sizeof(acl), 0);
	if (err == EOPNOTSUPP) {
		SKIP("system.posix_acl_access: the export's filesystem has no ACLs");
		return;
	}
	lpath(p, "f1");
	CHECK(err == 0 && pc_getxattr(&c, &f.oid, "system.posix_acl_access",
				      v, sizeof(v), &n) == 0 &&
	      n == sizeof(acl) && !memcmp(v, acl, n) &&
	      getxattr(p, "system.posix_acl_access", v, sizeof(v)) ==
	      (ssize_t)sizeof(acl), "system.posix_acl_access set and read");
}

static void t_errors(void)
{
	struct woid bogus = { 987654321, 5 };
	struct wattr f, a;

	CHECK(pc_getattr(&c, &bogus, &a) == ESTALE, "unknown id ESTALE");
	CHECK(pc_lookup(&c, &root, "f1", &f) == 0, "lookup f1");
	f.oid.gen ^= 1;
	CHECK(pc_getattr(&c, &f.oid, &a) == ESTALE, "wrong gen ESTALE");
}

/* SETATTR of a symlink's times changes the link's, never the target's. */
static void t_symlink_times(void)
{
	struct wtime t = { 1300000000, 0 };
	struct wattr f, sl, a;
	struct stat st;

	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, "slf", 0644, 0, 0, NULL,
		       &f, NULL) == 0 &&
	      pc_mkobj(&c, POHMEL_OP_SYMLINK, &root, "slt", 0777, 0, 0, "slf",
		       &sl, NULL) == 0 &&
	      pc_setattr(&c, &sl.oid, POHMEL_SET_ATIME | POHMEL_SET_MTIME, 0,
			 0, 0, 0, &t, &t, &a) == 0 &&
	      a.mtime.sec == 1300000000 && lstat_rel("slt", &st) == 0 &&
	      st.st_mtime == 1300000000 && lstat_rel("slf", &st) == 0 &&
	      st.st_mtime != 1300000000,
	      "SETATTR times of a symlink: the link's, not the target's");
	CHECK(pc_setattr(&c, &sl.oid, POHMEL_SET_MODE, 0600, 0, 0, 0, NULL,
			 NULL, NULL) == EOPNOTSUPP,
	      "SETATTR mode of a symlink EOPNOTSUPP");
}

/* Set-id bits go with a non-owner's write or truncate, as locally. */
static void t_suid(void)
{
	struct wattr f, g, a;
	struct pc u;
	struct stat st;
	uint64_t h;
	uint32_t n;

	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, "suid", 0644, 0, 0, NULL,
		       &f, NULL) == 0 &&
	      pc_setattr(&c, &f.oid, POHMEL_SET_MODE, 06777, 0, 0, 0, NULL,
			 NULL, NULL) == 0 &&
	      pc_mkobj(&c, POHMEL_OP_CREATE, &root, "suid2", 0644, 0, 0, NULL,
		       &g, NULL) == 0 &&
	      pc_setattr(&c, &g.oid, POHMEL_SET_MODE, 04666, 0, 0, 0, NULL,
			 NULL, NULL) == 0, "suid: root made 06777 and 04666 files");
	CHECK(cl_open(&u, &sp, 1000, 1000) == 0, "suid: connect as uid 1000");
	CHECK(pc_open(&u, &f.oid, POHMEL_OPEN_WRITE, &h, &a) == 0 &&
	      pc_write(&u, &f.oid, h, 0, "w", 1, 0, &n) == 0 &&
	      pc_getattr(&u, &f.oid, &a) == 0 && (a.mode & 07777) == 0777 &&
	      lstat_rel("suid", &st) == 0 && (st.st_mode & 07777) == 0777,
	      "suid: non-owner WRITE through a handle cleared SUID+SGID (%o)",
	      a.mode & 07777);
	pc_close(&u, &f.oid, h);
	CHECK(pc_setattr(&u, &g.oid, POHMEL_SET_SIZE | POHMEL_SET_MODE, 0666,
			 0, 0, 1, NULL, NULL, &a) == 0 &&
	      (a.mode & 07777) == 0666 && a.size == 1,
	      "suid: non-owner truncate + kill-priv mode works, SUID gone");
	CHECK(pc_setattr(&u, &g.oid, POHMEL_SET_MODE, 0600, 0, 0, 0, NULL,
			 NULL, NULL) == EPERM,
	      "suid: non-owner chmod otherwise still EPERM");
	pc_setattr(&c, &f.oid, POHMEL_SET_MODE, 06777, 0, 0, 0, NULL, NULL,
		   NULL);
	CHECK(pc_open(&c, &f.oid, POHMEL_OPEN_WRITE, &h, &a) == 0 &&
	      pc_write(&c, &f.oid, h, 0, "r", 1, 0, &n) == 0 &&
	      lstat_rel("suid", &st) == 0 && (st.st_mode & 07777) == 06777,
	      "suid: root's WRITE keeps SUID/SGID");
	pc_close(&c, &f.oid, h);
	pc_bye(&u);
	cl_close(&u);
}

/*
 * An open handle carries the access it was opened with (1.1): the owner
 * of a file just made with mode 0 opens it with OPEN_CREATED, and a size
 * change through a handle open for writing needs no write permission.
 */
static void t_fd_access(void)
{
	struct wattr d, f, a;
	struct pc u, v;
	uint64_t h, hr;
	uint32_t n;

	CHECK(pc_mkobj(&c, POHMEL_OP_MKDIR, &root, "fda", 0777, 0, 0, NULL,
		       &d, NULL) == 0 &&
	      pc_setattr(&c, &d.oid, POHMEL_SET_MODE, 0777, 0, 0, 0, NULL, NULL,
			 NULL) == 0, "fd access: a 0777 directory");
	CHECK(cl_open(&u, &sp, 1000, 1000) == 0 && cl_open(&v, &sp, 1001, 1001) == 0,
	      "fd access: connect as uid 1000 and 1001");
	CHECK(pc_mkobj(&u, POHMEL_OP_CREATE, &d.oid, "f", 0, 0, 0, NULL, &f,
		       NULL) == 0 && (f.mode & 07777) == 0,
	      "fd access: uid 1000 creates a mode-0 file");
	CHECK(pc_open(&u, &f.oid, POHMEL_OPEN_WRITE, &h, &a) == EACCES,
	      "fd access: a plain OPEN for writing -> EACCES");
	CHECK(pc_open(&v, &f.oid, POHMEL_OPEN_WRITE | POHMEL_OPEN_CREATED, &h,
		      &a) == EACCES,
	      "fd access: OPEN_CREATED by another user -> EACCES");
	CHECK(pc_open(&u, &f.oid, POHMEL_OPEN_WRITE | POHMEL_OPEN_CREATED, &h,
		      &a) == 0 && pc_write(&u, &f.oid, h, 0, "abc", 3, 0, &n) == 0 &&
	      n == 3, "fd access: OPEN_CREATED by the owner, then WRITE");
	CHECK(pc_setattr(&u, &f.oid, POHMEL_SET_SIZE, 0, 0, 0, 1, NULL, NULL,
			 NULL) == EACCES,
	      "fd access: SETATTR size without the handle -> EACCES");
	CHECK(pc_setattr_fh(&u, &f.oid, 8192, h, &a) == 0 && a.size == 8192 &&
	      pc_setattr_fh(&u, &f.oid, 1, h, &a) == 0 && a.size == 1,
	      "fd access: SETATTR size through the handle grows and shrinks");
	CHECK(pc_open(&u, &f.oid, POHMEL_OPEN_READ | POHMEL_OPEN_CREATED, &hr,
		      &a) == 0 && pc_setattr_fh(&u, &f.oid, 0, hr, &a) == EBADF,
	      "fd access: through a read-only handle -> EBADF");
	CHECK(pc_setattr_fh(&v, &f.oid, 0, h, &a) == EBADF,
	      "fd access: another session's handle -> EBADF");
	pc_close(&u, &f.oid, hr);
	pc_close(&u, &f.oid, h);
	pc_bye(&u);
	pc_bye(&v);
	cl_close(&u);
	cl_close(&v);
}

/*
 * The change attribute moves with every modification, even several
 * within one tick of ctime, stays put without one, and never comes
 * back after a restart (t_change_restart).
 */
static uint64_t change_of(const struct woid *o)
{
	struct wattr a;

	return pc_getattr(&c, o, &a) ? 0 : a.change;
}

static void t_change(void)
{
	struct wattr f, d, a, b, l;
	uint64_t h, prev, cur;
	int i, moved = 0, same_ctime = 0;
	uint32_t n;

	CHECK(pc_mkobj(&c, POHMEL_OP_MKDIR, &root, "chd", 0755, 0, 0, NULL,
		       &d, NULL) == 0 &&
	      pc_mkobj(&c, POHMEL_OP_CREATE, &d.oid, "chg", 0644, 0, 0, NULL,
		       &f, &a) == 0, "change: create dir and file");
	CHECK(change_of(&f.oid) == change_of(&f.oid) &&
	      change_of(&d.oid) == change_of(&d.oid),
	      "change: stable without modification");
	CHECK(pc_open(&c, &f.oid, POHMEL_OPEN_ALL, &h, &a) == 0,
	      "change: OPEN");
	prev = change_of(&f.oid);
	pc_getattr(&c, &f.oid, &b);
	for (i = 0; i < 200; i++) {
		if (pc_write(&c, &f.oid, h, (uint64_t)i, "x", 1, 0, &n) ||
		    pc_getattr(&c, &f.oid, &a))
			break;
		moved += a.change != prev;
		same_ctime += a.ctime.sec == b.ctime.sec &&
			      a.ctime.nsec == b.ctime.nsec;
		prev = a.change;
		b = a;
	}
	CHECK(i == 200 && moved == 200,
	      "change: each of 200 WRITEs moved it (%d; %d in ctime's tick)",
	      moved, same_ctime);
	moved = 0;
	for (i = 0; i < 20; i++) {
		if (pc_setattr(&c, &f.oid, POHMEL_SET_MODE,
			       i & 1 ? 0644 : 0640, 0, 0, 0, NULL, NULL, &a))
			break;
		cur = change_of(&f.oid);
		moved += a.change != prev && cur == a.change;
		prev = cur;
	}
	CHECK(moved == 20, "change: each SETATTR moved it, reply == GETATTR");
	CHECK(pc_setattr(&c, &f.oid, POHMEL_SET_SIZE, 0, 0, 0, 3, NULL,
			 NULL, &a) == 0 && a.change != prev,
	      "change: truncate moved it");
	prev = a.change;
	CHECK(pc_setxattr(&c, &f.oid, "user.c", "1", 1, 0) == 0 &&
	      (cur = change_of(&f.oid)) != prev &&
	      pc_removexattr(&c, &f.oid, "user.c") == 0 &&
	      change_of(&f.oid) != cur, "change: SETXATTR, REMOVEXATTR moved it");
	prev = change_of(&f.oid);
	cur = change_of(&d.oid);
	CHECK(pc_link(&c, &f.oid, &d.oid, "chg2", &l) == 0 &&
	      l.nlink == 2 && l.change != prev && change_of(&d.oid) != cur,
	      "change: LINK moved the object's and the directory's");
	prev = l.change;
	cur = change_of(&d.oid);
	CHECK(pc_remove(&c, POHMEL_OP_UNLINK, &d.oid, "chg2") == 0 &&
	      pc_getattr(&c, &f.oid, &a) == 0 && a.nlink == 1 &&
	      a.change != prev && change_of(&d.oid) != cur,
	      "change: UNLINK moved the remaining link's and the directory's");
	cur = change_of(&d.oid);
	moved = 0;
	for (i = 0; i < 20; i++) {
		char nm[16];

		snprintf(nm, sizeof(nm), "e%d", i);
		if (pc_mkobj(&c, POHMEL_OP_CREATE, &d.oid, nm, 0644, 0, 0,
			     NULL, &a, &b))
			break;
		moved += b.change != cur && change_of(&d.oid) == b.change;
		cur = b.change;
	}
	CHECK(moved == 20, "change: each CREATE moved the directory's");
	prev = change_of(&f.oid);
	cur = change_of(&d.oid);
	CHECK(pc_rename(&c, &d.oid, "e0", &d.oid, "chg", 0, &a) == 0 &&
	      change_of(&d.oid) != cur, "change: RENAME moved the directory's");
	CHECK(pc_close(&c, &f.oid, h) == 0, "change: CLOSE");
}

/* Run last: restarts the server. */
static void t_change_restart(const char *conf)
{
	struct wattr d, f;
	uint64_t before;

	CHECK(pc_lookup(&c, &root, "chd", &d) == 0 &&
	      pc_lookup(&c, &d.oid, "e1", &f) == 0, "restart: lookup");
	before = f.change;
	pc_bye(&c);
	cl_close(&c);
	CHECK(stop_server(&sp) == 0 && start_server("ops2", conf, &sp) == 0 &&
	      cl_open(&c, &sp, 0, 0) == 0, "restart: server restarted");
	CHECK(pc_getattr(&c, &f.oid, &f) == 0 && f.change != before,
	      "restart: change differs from any value before the restart");
	CHECK(change_of(&f.oid) == f.change, "restart: and is stable again");
}

int main(int argc, char **argv)
{
	char conf[1024];
	int setup_err;
	int fds;

	setup_err = setup_base(argc, argv, "integ", exp_dir, sizeof(exp_dir));
	if (setup_err)
		return setup_err;
	snprintf(conf, sizeof(conf),
		 "export / %s rw no_root_squash\nstate-dir %s/state\n"
		 "key-file none\n", exp_dir, base);
	CHECK(start_server("ops", conf, &sp) == 0,
	      "pohmeld starts (socket activation, READY=1)");
	if (tap_fail) {
		printf("# pohmeld %s did not start\n", server_bin);
		return tap_done();
	}
	CHECK(cl_open(&c, &sp, 0, 0) == 0, "connect + HELLO/AUTH");
	root = c.root.oid;
	fds = server_fds();
	t_basic();
	t_namespace();
	t_setattr();
	t_io();
	t_readdir();
	t_readdir_plus();
	t_statfs_xattr();
	t_errors();
	t_symlink_times();
	t_suid();
	t_fd_access();
	t_change();
	CHECK(server_fds() == fds, "no fd leaked by %d requests (%d fds)",
	      (int)c.tag, fds);
	t_change_restart(conf);
	CHECK(pc_bye(&c) == 0, "BYE");
	cl_close(&c);
	CHECK(stop_server(&sp) == 0, "SIGTERM: clean exit 0");
	return finish_base();
}
