// SPDX-License-Identifier: MIT
/*
 * test_sec - confinement, credentials, authentication, sessions, locks,
 * concurrency, restart and protocol abuse against a real pohmeld.
 *   test_sec PATH-TO-POHMELD
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include "integ_lib.h"
#include "tap.h"

static char exp_dir[128], outside[128];
static struct srvproc sp;
static struct woid root;

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static char conf_buf[2048];

static const char *conf(const char *opts, const char *extra)
{
	snprintf(conf_buf, sizeof(conf_buf),
		 "export / %s rw %s\nstate-dir %s/state\nkey-file none\n%s",
		 exp_dir, opts, base, extra ? extra : "");
	return conf_buf;
}

/* ---- confinement ---- */

static atomic_bool race_stop;

static void *swapper(void *arg)
{
	char a[300], b[300];

	(void)arg;
	snprintf(a, sizeof(a), "%s/race", exp_dir);
	snprintf(b, sizeof(b), "%s/racelink", exp_dir);
	while (!atomic_load(&race_stop))
		syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 2);
	return NULL;
}

static void t_escape(void)
{
	struct wattr l, r, a, f;
	struct pc c;
	pthread_t th;
	char p[300], t[300];
	int i, made = 0, notdir = 0, before;
	uint64_t h;
	time_t end;

	snprintf(p, sizeof(p), "%s/abs", exp_dir);
	CHECK(symlink(outside, p) == 0, "setup: absolute symlink out");
	snprintf(p, sizeof(p), "%s/rel", exp_dir);
	CHECK(symlink("../outside", p) == 0, "setup: relative symlink out");
	snprintf(p, sizeof(p), "%s/race", exp_dir);
	mkdir(p, 0777);
	snprintf(p, sizeof(p), "%s/racelink", exp_dir);
	CHECK(symlink(outside, p) == 0, "setup: race symlink out");
	before = count_entries(outside);

	CHECK(cl_open(&c, &sp, 0, 0) == 0, "connect");
	CHECK(pc_lookup(&c, &root, "abs", &l) == 0 && S_ISLNK(l.mode),
	      "LOOKUP of a symlink returns the symlink itself");
	CHECK(pc_lookup(&c, &root, "rel", &r) == 0 && S_ISLNK(r.mode),
	      "LOOKUP relative symlink");
	CHECK(pc_readlink(&c, &l.oid, t, sizeof(t)) == 0 &&
	      !strcmp(t, outside), "READLINK shows the target, unfollowed");
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &l.oid, "esc", 0644, 0, 0, NULL,
		       NULL, NULL) == ENOTDIR, "CREATE through abs symlink ENOTDIR");
	CHECK(pc_mkobj(&c, POHMEL_OP_MKDIR, &r.oid, "esc", 0755, 0, 0, NULL,
		       NULL, NULL) == ENOTDIR, "MKDIR through rel symlink ENOTDIR");
	CHECK(pc_lookup(&c, &l.oid, "secret", &a) == ENOTDIR,
	      "LOOKUP through symlink ENOTDIR");
	{
		bool eof;
		uint64_t next;

		CHECK(pc_readdir(&c, &l.oid, 0, 4096, NULL, NULL, &eof,
				 &next) == ENOTDIR, "READDIR symlink ENOTDIR");
	}
	CHECK(pc_open(&c, &l.oid, POHMEL_OPEN_READ, &h, NULL) == ELOOP,
	      "OPEN symlink ELOOP");
	{
		char buf[16];
		uint32_t got;

		CHECK(pc_read(&c, &l.oid, 0, 0, buf, 16, &got) == EINVAL,
		      "READ symlink EINVAL (never followed)");
		CHECK(pc_write(&c, &l.oid, 0, 0, "x", 1, 0, &got) == EINVAL,
		      "WRITE symlink EINVAL");
	}
	CHECK(pc_setattr(&c, &l.oid, POHMEL_SET_MODE, 0777, 0, 0, 0, NULL,
			 NULL, NULL) == EOPNOTSUPP, "chmod symlink EOPNOTSUPP");
	CHECK(pc_setattr(&c, &l.oid, POHMEL_SET_SIZE, 0, 0, 0, 0, NULL,
			 NULL, NULL) == EINVAL, "truncate symlink EINVAL");
	pc_setxattr(&c, &l.oid, "user.esc", "x", 1, 0);
	CHECK(getxattr(outside, "user.esc", t, sizeof(t)) < 0,
	      "SETXATTR on a symlink does not reach its target");
	CHECK(pc_mkobj(&c, POHMEL_OP_SYMLINK, &root, "s2", 0777, 0, 0,
		       "/etc/passwd", &a, NULL) == 0 &&
	      pc_link(&c, &a.oid, &root, "s2h", &f) == 0 && S_ISLNK(f.mode),
	      "LINK of a symlink links the symlink");

	/* The directory/symlink swap race: zero escapes allowed. */
	atomic_store(&race_stop, false);
	pthread_create(&th, NULL, swapper, NULL);
	end = time(NULL) + 2;
	for (i = 0; time(NULL) < end; i++) {
		char name[32];
		int err;

		if (pc_lookup(&c, &root, "race", &a))
			continue;
		snprintf(name, sizeof(name), "esc%d", i);
		err = pc_mkobj(&c, i % 2 ? POHMEL_OP_CREATE : POHMEL_OP_MKDIR,
			       &a.oid, name, 0644, 0, 0, NULL, NULL, NULL);
		if (!err)
			made++;
		else if (err == ENOTDIR)
			notdir++;
		pc_lookup(&c, &a.oid, "secret", &f);
	}
	atomic_store(&race_stop, true);
	pthread_join(th, NULL);
	CHECK(count_entries(outside) == before && made > 0,
	      "rename race dir<->symlink: %d created inside, %d refused, 0 escapes",
	      made, notdir);
	pc_bye(&c);
	cl_close(&c);
}

/* ---- credentials ---- */

static void t_creds(void)
{
	struct pc u, g;
	struct wattr f, d, a;
	char p[300];
	int fd;

	snprintf(p, sizeof(p), "%s/rootonly", exp_dir);
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	close(fd);
	snprintf(p, sizeof(p), "%s/rootdir", exp_dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/grp", exp_dir);
	fd = open(p, O_CREAT | O_WRONLY, 0040);
	if (write(fd, "g", 1) != 1)
		CHECK(0, "setup write");
	fchown(fd, 0, 4242);
	fchmod(fd, 0040);
	close(fd);

	CHECK(cl_open(&u, &sp, 1000, 1000) == 0, "connect as uid 1000");
	CHECK(pc_lookup(&u, &root, "rootonly", &f) == 0,
	      "non-root LOOKUP in a 0755 dir");
	{
		char buf[8];
		uint32_t got;
		uint64_t h;

		CHECK(pc_read(&u, &f.oid, 0, 0, buf, 8, &got) == EACCES,
		      "non-root READ of a 0600 root file EACCES");
		CHECK(pc_open(&u, &f.oid, POHMEL_OPEN_READ, &h, NULL) == EACCES,
		      "non-root OPEN EACCES");
		CHECK(pc_write(&u, &f.oid, 0, 0, "x", 1, 0, &got) == EACCES,
		      "non-root WRITE EACCES");
	}
	CHECK(pc_lookup(&u, &root, "rootdir", &d) == 0 &&
	      pc_mkobj(&u, POHMEL_OP_CREATE, &d.oid, "x", 0644, 0, 0, NULL,
		       NULL, NULL) == EACCES, "non-root CREATE in 0755 root dir EACCES");
	CHECK(pc_remove(&u, POHMEL_OP_UNLINK, &root, "rootonly") == EACCES,
	      "non-root UNLINK EACCES");
	CHECK(pc_setattr(&u, &f.oid, POHMEL_SET_MODE, 0777, 0, 0, 0, NULL,
			 NULL, NULL) == EPERM, "non-root chmod of root's file EPERM");
	CHECK(pc_setxattr(&u, &f.oid, "user.x", "v", 1, 0) == EACCES,
	      "non-root SETXATTR EACCES");
	CHECK(pc_mkobj(&u, POHMEL_OP_MKNOD, &root, "c", S_IFCHR | 0600, 0x103,
		       0, NULL, NULL, NULL) == EACCES ||
	      pc_mkobj(&u, POHMEL_OP_MKNOD, &root, "c", S_IFCHR | 0600, 0x103,
		       0, NULL, NULL, NULL) == EPERM, "non-root MKNOD chr refused");
	pc_bye(&u);
	cl_close(&u);

	/* Supplementary groups block: group 4242 may read "grp". */
	CHECK(cl_open(&g, &sp, 1000, 1000) == 0, "connect with groups");
	g.ngroups = 2;
	g.groups[0] = 7;
	g.groups[1] = 4242;
	{
		char buf[8];
		uint32_t got;

		CHECK(pc_lookup(&g, &root, "grp", &a) == 0 &&
		      pc_read(&g, &a.oid, 0, 0, buf, 8, &got) == 0 &&
		      got == 1, "READ allowed through a supplementary group");
		g.ngroups = 0;
		CHECK(pc_read(&g, &a.oid, 0, 0, buf, 8, &got) == EACCES,
		      "same READ without the group EACCES");
	}
	pc_bye(&g);
	cl_close(&g);
}

static void t_squash(void)
{
	struct srvproc s2;
	struct wattr a;
	struct stat st;
	struct pc c;
	char p[300];

	CHECK(start_server("squash", conf("root_squash", NULL), &s2) == 0,
	      "root_squash server starts");
	snprintf(p, sizeof(p), "%s/pub", exp_dir);
	mkdir(p, 0777);
	chmod(p, 0777);
	CHECK(cl_open(&c, &s2, 0, 0) == 0, "connect as root");
	CHECK(pc_lookup(&c, &root, "pub", &a) == 0 &&
	      pc_mkobj(&c, POHMEL_OP_CREATE, &a.oid, "sq", 0644, 0, 0, NULL,
		       &a, NULL) == 0 && a.uid == 65534 && a.gid == 65534,
	      "root_squash: root creates as 65534");
	CHECK(pc_lookup(&c, &root, "rootonly", &a) == 0 &&
	      pc_setattr(&c, &a.oid, POHMEL_SET_MODE, 0666, 0, 0, 0, NULL,
			 NULL, NULL) == EPERM, "root_squash: squashed root EPERM");
	cl_close(&c);
	CHECK(stop_server(&s2) == 0, "root_squash server stops cleanly");

	CHECK(start_server("allsq", conf("all_squash anonuid=4321 anongid=4322",
					  NULL), &s2) == 0,
	      "all_squash server starts");
	CHECK(cl_open(&c, &s2, 1000, 1000) == 0, "connect as 1000");
	CHECK(pc_lookup(&c, &root, "pub", &a) == 0 &&
	      pc_mkobj(&c, POHMEL_OP_CREATE, &a.oid, "all", 0644, 0, 0, NULL,
		       &a, NULL) == 0 && a.uid == 4321 && a.gid == 4322,
	      "all_squash: creates as anonuid/anongid");
	snprintf(p, sizeof(p), "%s/pub/all", exp_dir);
	CHECK(stat(p, &st) == 0 && st.st_uid == 4321, "owner on disk");
	cl_close(&c);
	CHECK(stop_server(&s2) == 0, "all_squash server stops cleanly");

	snprintf(conf_buf, sizeof(conf_buf),
		 "export / %s ro no_root_squash\nstate-dir %s/state\nkey-file none\n",
		 exp_dir, base);
	CHECK(start_server("ro", conf_buf, &s2) == 0, "read-only server starts");
	CHECK(cl_open(&c, &s2, 0, 0) == 0, "connect");
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, "nope", 0644, 0, 0, NULL,
		       NULL, NULL) == EROFS, "ro: CREATE EROFS");
	CHECK(pc_remove(&c, POHMEL_OP_UNLINK, &root, "rootonly") == EROFS,
	      "ro: UNLINK EROFS");
	CHECK(pc_lookup(&c, &root, "grp", &a) == 0, "ro: LOOKUP works");
	{
		char buf[4];
		uint32_t got;

		CHECK(pc_read(&c, &a.oid, 0, 0, buf, 4, &got) == 0 && got == 1,
		      "ro: READ works");
	}
	cl_close(&c);
	CHECK(stop_server(&s2) == 0, "ro server stops cleanly");

	CHECK(start_server("allow", conf("no_root_squash allow=10.0.0.0/8",
					  NULL), &s2) == 0,
	      "allow-list server starts");
	CHECK(cl_open(&c, &s2, 0, 0) != 0,
	      "client outside allow= list is refused");
	cl_close(&c);
	CHECK(stop_server(&s2) == 0, "allow-list server stops cleanly");

	CHECK(start_server("allow2", conf("no_root_squash allow=10.0.0.0/8,127.0.0.1/32",
					   NULL), &s2) == 0,
	      "allow-list server (with 127.0.0.1/32) starts");
	CHECK(cl_open(&c, &s2, 0, 0) == 0 && pc_ping(&c) == 0,
	      "client inside the allow= list is served");
	cl_close(&c);
	CHECK(stop_server(&s2) == 0, "allow-list server stops cleanly");
}

/* ---- privilege: xattr namespaces, locks need access ---- */

static bool on_disk_xattr(const char *rel, const char *name)
{
	char p[300], v[16];

	snprintf(p, sizeof(p), "%s/%s", exp_dir, rel);
	return getxattr(p, name, v, sizeof(v)) >= 0;
}

/* The names LISTXATTR returned, as one string "a,b,"; -1 on error. */
static int list_names(struct pc *c, const struct woid *o, char *out,
		      size_t n)
{
	char buf[1024];
	uint32_t len = 0, probe = 0, i;

	if (pc_listxattr(c, o, NULL, 0, &probe) ||
	    pc_listxattr(c, o, buf, sizeof(buf), &len) || probe != len)
		return -1;
	out[0] = 0;
	for (i = 0; i < len; i += (uint32_t)strlen(buf + i) + 1)
		snprintf(out + strlen(out), n - strlen(out), "%s,", buf + i);
	return 0;
}

static void t_privilege(void)
{
	static const char cap[] = { 1, 0, 0, 2, 0xc0, 0, 0, 0, 0, 0, 0, 0,
				    0, 0, 0, 0, 0, 0, 0, 0 };
	struct wattr f, own;
	struct srvproc s2;
	struct pc u, c;
	char p[300], names[512];
	int fd;

	/* A root-owned 0755 program and root's private file. */
	snprintf(p, sizeof(p), "%s/prog", exp_dir);
	fd = open(p, O_CREAT | O_WRONLY, 0755);
	close(fd);
	chmod(p, 0755);
	CHECK(setxattr(p, "trusted.local", "1", 1, 0) == 0 &&
	      setxattr(p, "user.local", "1", 1, 0) == 0,
	      "setup: trusted.local and user.local set in the export");

	CHECK(cl_open(&u, &sp, 1000, 1000) == 0, "connect as uid 1000");
	CHECK(pc_lookup(&u, &root, "prog", &f) == 0, "uid 1000 LOOKUP prog");
	CHECK(pc_setxattr(&u, &f.oid, "security.capability", cap, sizeof(cap),
			  0) == EOPNOTSUPP && !on_disk_xattr("prog",
							     "security.capability"),
	      "uid 1000: SETXATTR security.capability on root's 0755 file EOPNOTSUPP, nothing set");
	CHECK(pc_setxattr(&u, &f.oid, "trusted.t", "1", 1, 0) == EOPNOTSUPP &&
	      !on_disk_xattr("prog", "trusted.t"),
	      "uid 1000: SETXATTR trusted.* EOPNOTSUPP, nothing set");
	CHECK(pc_lookup(&u, &root, "pub", &own) == 0 &&
	      pc_mkobj(&u, POHMEL_OP_CREATE, &own.oid, "mine", 0644, 0, 0, NULL,
		       &own, NULL) == 0, "uid 1000 creates its own file");
	CHECK(pc_setxattr(&u, &own.oid, "trusted.t", "1", 1, 0) == EOPNOTSUPP &&
	      pc_setxattr(&u, &own.oid, "security.capability", cap,
			  sizeof(cap), 0) == EOPNOTSUPP &&
	      !on_disk_xattr("pub/mine", "security.capability"),
	      "uid 1000: trusted.*/security.* refused on its own file too");
	CHECK(pc_setxattr(&u, &own.oid, "user.ok", "1", 1, 0) == 0,
	      "uid 1000: user.* on its own file works");
	{
		uint32_t len;
		char v[8];

		CHECK(pc_getxattr(&u, &f.oid, "trusted.local", v, sizeof(v),
				  &len) == EOPNOTSUPP,
		      "uid 1000: GETXATTR trusted.* EOPNOTSUPP");
	}
	pc_bye(&u);
	cl_close(&u);

	/* Unsquashed root without trusted_xattrs: user.* and ACLs only. */
	CHECK(cl_open(&c, &sp, 0, 0) == 0, "connect as root");
	CHECK(pc_setxattr(&c, &f.oid, "trusted.t", "1", 1, 0) == EOPNOTSUPP &&
	      !on_disk_xattr("prog", "trusted.t"),
	      "root without trusted_xattrs: SETXATTR trusted.* EOPNOTSUPP");
	CHECK(list_names(&c, &f.oid, names, sizeof(names)) == 0 &&
	      !strcmp(names, "user.local,"),
	      "root without trusted_xattrs: LISTXATTR shows user.* only, size query agrees (%s)",
	      names);
	cl_close(&c);

	snprintf(conf_buf, sizeof(conf_buf),
		 "export / %s rw no_root_squash trusted_xattrs\nstate-dir %s/state\nkey-file none\n",
		 exp_dir, base);
	CHECK(start_server("trusted", conf_buf, &s2) == 0,
	      "trusted_xattrs server starts");
	CHECK(cl_open(&c, &s2, 0, 0) == 0 &&
	      pc_lookup(&c, &root, "prog", &f) == 0, "connect as root");
	CHECK(pc_setxattr(&c, &f.oid, "trusted.t", "1", 1, 0) == 0 &&
	      on_disk_xattr("prog", "trusted.t"),
	      "trusted_xattrs: unsquashed root SETXATTR trusted.*");
	CHECK(list_names(&c, &f.oid, names, sizeof(names)) == 0 &&
	      strstr(names, "trusted.local,") && strstr(names, "trusted.t,"),
	      "trusted_xattrs: root's LISTXATTR shows trusted.* (%s)", names);
	CHECK(pc_removexattr(&c, &f.oid, "trusted.t") == 0,
	      "trusted_xattrs: root REMOVEXATTR trusted.*");
	cl_close(&c);
	CHECK(cl_open(&u, &s2, 1000, 1000) == 0 &&
	      pc_walk(&u, "/pub/mine", &own) == 0, "connect as uid 1000");
	CHECK(pc_setxattr(&u, &own.oid, "trusted.t", "1", 1, 0) == EOPNOTSUPP,
	      "trusted_xattrs: uid 1000 still refused trusted.*");
	cl_close(&u);
	CHECK(stop_server(&s2) == 0, "trusted_xattrs server stops cleanly");

	snprintf(conf_buf, sizeof(conf_buf),
		 "export / %s rw root_squash trusted_xattrs anonuid=0 anongid=0\nstate-dir %s/state\nkey-file none\n",
		 exp_dir, base);
	CHECK(start_server("sqtrusted", conf_buf, &s2) == 0,
	      "root_squash anonuid=0 trusted_xattrs server starts");
	CHECK(cl_open(&c, &s2, 0, 0) == 0 &&
	      pc_lookup(&c, &root, "prog", &f) == 0, "connect as root");
	CHECK(pc_setxattr(&c, &f.oid, "trusted.t", "1", 1, 0) == EOPNOTSUPP &&
	      pc_setxattr(&c, &f.oid, "security.capability", cap, sizeof(cap),
			  0) == EOPNOTSUPP && !on_disk_xattr("prog", "trusted.t"),
	      "squashed root (even to anonuid=0) refused trusted.*/security.*");
	cl_close(&c);
	CHECK(stop_server(&s2) == 0, "squash server stops cleanly");
}

static void t_lock_access(void)
{
	struct wattr priv, ro, rw;
	struct pc_lock t;
	struct pc u;
	char p[300];
	int fd;

	snprintf(p, sizeof(p), "%s/lk600", exp_dir);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	chmod(p, 0600);
	snprintf(p, sizeof(p), "%s/lk644", exp_dir);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	chmod(p, 0644);
	snprintf(p, sizeof(p), "%s/lk666", exp_dir);
	fd = open(p, O_CREAT | O_WRONLY, 0666);
	close(fd);
	chmod(p, 0666);

	CHECK(cl_open(&u, &sp, 1000, 1000) == 0, "connect as uid 1000");
	CHECK(pc_lookup(&u, &root, "lk600", &priv) == 0 &&
	      pc_lookup(&u, &root, "lk644", &ro) == 0 &&
	      pc_lookup(&u, &root, "lk666", &rw) == 0, "lookups");
	CHECK(pc_lock(&u, &priv.oid, 1, 0, 0, POHMEL_LOCK_WR, 0, 1,
		      NULL) == EACCES, "write lock on a 0600 root file EACCES");
	CHECK(pc_lock(&u, &priv.oid, 1, 0, 0, POHMEL_LOCK_RD, 0, 1,
		      NULL) == EACCES, "read lock on a 0600 root file EACCES");
	CHECK(pc_lock(&u, &priv.oid, 1, 0, 0, POHMEL_LOCK_WR,
		      POHMEL_LOCK_FLOCK, 1, NULL) == EACCES,
	      "flock LOCK_EX on a 0600 root file EACCES");
	CHECK(pc_lock(&u, &priv.oid, 1, 0, 0, POHMEL_LOCK_WR, POHMEL_LOCK_TEST,
		      1, &t) == EACCES, "lock test on a 0600 root file EACCES");
	CHECK(pc_lock(&u, &priv.oid, 1, 0, 0, POHMEL_LOCK_UN, 0, 1, NULL) == 0,
	      "unlock needs no access");
	CHECK(pc_lock(&u, &ro.oid, 1, 0, 0, POHMEL_LOCK_RD, 0, 1, NULL) == 0,
	      "read lock on a 0644 file");
	CHECK(pc_lock(&u, &ro.oid, 2, 0, 0, POHMEL_LOCK_WR, 0, 1,
		      NULL) == EACCES, "write lock on a 0644 root file EACCES");
	CHECK(pc_lock(&u, &ro.oid, 2, 0, 0, POHMEL_LOCK_WR, POHMEL_LOCK_TEST,
		      1, &t) == 0 && t.type == POHMEL_LOCK_RD,
	      "lock test on a readable file sees the read lock");
	CHECK(pc_lock(&u, &rw.oid, 1, 0, 0, POHMEL_LOCK_WR, 0, 1, NULL) == 0,
	      "write lock on a 0666 file");
	CHECK(pc_lock(&u, &rw.oid, 1, 0, 0, POHMEL_LOCK_UN, 0, 1, NULL) == 0 &&
	      pc_lock(&u, &ro.oid, 1, 0, 0, POHMEL_LOCK_UN, 0, 1, NULL) == 0,
	      "unlocks");
	pc_bye(&u);
	cl_close(&u);
}

static void t_auth(void)
{
	static const char *hexkey =
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	struct srvproc s2;
	struct pc c;
	char kpath[300];
	char stats[4096];

	snprintf(kpath, sizeof(kpath), "%s/key", base);
	write_file(kpath, hexkey);
	snprintf(conf_buf, sizeof(conf_buf),
		 "export / %s rw no_root_squash\nstate-dir %s/state\nkey-file %s\n",
		 exp_dir, base, kpath);
	CHECK(start_server("auth", conf_buf, &s2) == 0, "keyed server starts");

	pc_init(&c);
	CHECK(pc_load_key(&c, kpath) == 0 && c.keylen == 32, "key file loads");
	CHECK(pc_connect(&c, "127.0.0.1", s2.port) == 0 &&
	      pc_handshake(&c) == 0 && (c.features & POHMEL_FEAT_AUTH),
	      "right key: mutual HMAC authentication succeeds");
	CHECK(pc_ping(&c) == 0, "authenticated PING");
	cl_close(&c);

	pc_init(&c);
	pc_load_key(&c, kpath);
	c.key[0] ^= 1;
	CHECK(pc_connect(&c, "127.0.0.1", s2.port) == 0 &&
	      pc_handshake(&c) == EACCES,
	      "wrong key: client sees the server cannot prove it");
	cl_close(&c);

	pc_init(&c);
	pc_load_key(&c, kpath);
	c.key[5] ^= 0x40;
	c.test_skip_server_proof = true;
	CHECK(pc_connect(&c, "127.0.0.1", s2.port) == 0 &&
	      pc_handshake(&c) == EACCES, "wrong key: server refuses AUTH");
	CHECK(pc_ping(&c) < 0, "connection closed after failed AUTH");
	cl_close(&c);

	pc_init(&c);
	CHECK(pc_connect(&c, "127.0.0.1", s2.port) == 0 &&
	      pc_handshake(&c) == EACCES, "client without a key refused");
	cl_close(&c);

	pc_init(&c);
	pc_load_key(&c, kpath);
	CHECK(pc_connect(&c, "127.0.0.1", s2.port) == 0 &&
	      pc_handshake(&c) == 0 && pc_stats(&c, stats, sizeof(stats)) == 0 &&
	      strstr(stats, "auth_failures 3\n"),
	      "auth failures counted (a client that gave up after HELLO too)");
	cl_close(&c);
	CHECK(stop_server(&s2) == 0, "keyed server stops cleanly");

	/* A client with a key refuses a server without one. */
	pc_init(&c);
	pc_load_key(&c, kpath);
	CHECK(pc_connect(&c, "127.0.0.1", sp.port) == 0 &&
	      pc_handshake(&c) == EACCES,
	      "client with a key refuses an unauthenticated server");
	cl_close(&c);
}

int main(int argc, char **argv)
{
	char p[300];
	int fd;

	fd = setup_base(argc, argv, "sec", exp_dir, sizeof(exp_dir));
	if (fd)
		return fd;
	snprintf(outside, sizeof(outside), "%s/outside", base);
	mkdir(outside, 0755);
	snprintf(p, sizeof(p), "%s/secret", outside);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	close(fd);
	CHECK(start_server("sec", conf("no_root_squash", NULL), &sp) == 0,
	      "pohmeld starts");
	if (tap_fail) {
		printf("# pohmeld %s did not start\n", server_bin);
		return tap_done();
	}
	{
		struct pc c;

		CHECK(cl_open(&c, &sp, 0, 0) == 0, "connect");
		root = c.root.oid;
		cl_close(&c);
	}
	t_escape();
	t_creds();
	t_squash();
	t_privilege();
	t_lock_access();
	t_auth();
	CHECK(stop_server(&sp) == 0, "SIGTERM: clean exit 0");
	return finish_base();
}
