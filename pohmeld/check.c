// SPDX-License-Identifier: MIT
/*
 * check.c - everything a start checks before serving, as one function
 * for `pohmeld -n`, the start itself and a reload (SIGHUP): the key
 * file, the state directory, the export (a directory, on a file system
 * that can be served, whose objects can be opened by handle) and the
 * privileges needed to act as other users. Each problem is reported
 * with the FILE:LINE (or the option) it comes from; all are reported,
 * not only the first.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "pohmeld.h"

/* Plain lines for -n (a terminal, ExecStartPre); <N> log lines else. */
void cfg_say(bool plain, int prio, const char *fmt, ...)
{
	char msg[8600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (plain)
		fprintf(stderr, "pohmeld: %s%s\n",
			prio == LOG_WARNING ? "warning: " : "", msg);
	else
		log_msg(prio, "%s", msg);
}

/* Pseudo file systems whose files are not data (statfs f_type). */
static const struct {
	unsigned long magic;
	const char *name;
} deny_fs[] = {
	{ 0x9fa0, "proc" }, { 0x62656572, "sysfs" },
	{ 0x64626720, "debugfs" }, { 0x74726163, "tracefs" },
	{ 0x73636673, "securityfs" }, { 0x27e0eb, "cgroup" },
	{ 0x63677270, "cgroup2" }, { 0xcafe4a11, "bpf" },
	{ 0x1cd1, "devpts" }, { 0x6165676c, "pstore" },
	{ 0xde5e81e4, "efivarfs" }, { 0xf97cff8c, "selinuxfs" },
	{ 0x43415d53, "smackfs" }, { 0x62656570, "configfs" },
	{ 0x65735543, "fusectl" }, { 0x42494e4d, "binfmt_misc" },
	{ 0x6e736673, "nsfs" }, { 0x958458f6, "hugetlbfs" },
	{ 0x50495045, "pipefs" }, { 0x534f434b, "sockfs" },
};

static int check_key(const struct config *cf, bool plain,
		     struct checked *out)
{
	const char *path = cf->key_file;
	char at[4200], err[4400];
	struct stat st;

	if (!strcmp(path, "none"))
		return 0;
	if (!cf->key_file_set && access(path, F_OK))
		return 0;	/* default key file absent: auth off */
	config_at(cf, cf->line_key, "-k", at, sizeof(at));
	if (stat(path, &st)) {
		cfg_say(plain, LOG_ERR, "%skey-file %s: %s", at, path,
			strerror(errno));
		return -1;
	}
	/* Whoever can write it can log in; whoever can read it too. */
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		cfg_say(plain, LOG_ERR,
			"%skey-file %s: owned by uid %u, not by root or the user pohmeld runs as (%u)",
			at, path, (unsigned int)st.st_uid,
			(unsigned int)geteuid());
		return -1;
	}
	if (st.st_mode & 077) {
		cfg_say(plain, LOG_ERR,
			"%skey-file %s: mode %04o lets group or others read or write it: chmod 600 %s",
			at, path, (unsigned int)(st.st_mode & 07777), path);
		return -1;
	}
	if (keys_load(path, &out->keys, err, sizeof(err))) {
		cfg_say(plain, LOG_ERR, "%s%s", at, err);
		return -1;
	}
	return 0;
}

/* sec= above none needs keys; keys= names a key of the file. */
static int check_export_keys(const struct config *cf, bool plain,
			     const struct checked *out)
{
	char at[4200];
	int i;

	config_at(cf, cf->line_export, "-e", at, sizeof(at));
	if (cf->ex.sec > SEC_NONE && !out->keys.n) {
		cfg_say(plain, LOG_ERR,
			"%sexport %s: sec=%s needs keys, but there is no key file",
			at, cf->ex.path, sec_name(cf->ex.sec));
		return -1;
	}
	if (cf->ex.nkeys && !out->keys.n) {
		cfg_say(plain, LOG_ERR,
			"%sexport %s: keys= needs keys, but there is no key file",
			at, cf->ex.path);
		return -1;
	}
	for (i = 0; i < cf->ex.nkeys; i++)
		if (!keys_find(&out->keys, cf->ex.keys[i],
			       strlen(cf->ex.keys[i])))
			cfg_say(plain, LOG_WARNING,
				"%sexport %s: keys=%s: no such key in %s (nobody can use that name)",
				at, cf->ex.path, cf->ex.keys[i], cf->key_file);
	if (cf->ex.nadmin && !out->keys.n) {
		cfg_say(plain, LOG_ERR,
			"%sexport %s: admin= names keys, but there is no key file (without one, clients on a loopback address may list sessions)",
			at, cf->ex.path);
		return -1;
	}
	for (i = 0; i < cf->ex.nadmin; i++) {
		if (!keys_find(&out->keys, cf->ex.admin[i],
			       strlen(cf->ex.admin[i])))
			cfg_say(plain, LOG_WARNING,
				"%sexport %s: admin=%s: no such key in %s",
				at, cf->ex.path, cf->ex.admin[i], cf->key_file);
		else if (!export_key_allowed(&cf->ex, cf->ex.admin[i]))
			cfg_say(plain, LOG_WARNING,
				"%sexport %s: admin=%s: not in keys=, so it cannot connect",
				at, cf->ex.path, cf->ex.admin[i]);
	}
	return 0;
}

/* Made at start if missing (mkdir -p), so then its nearest existing
 * ancestor must let us. */
static int check_state(const struct config *cf, bool plain)
{
	char at[4200], dir[4096], *slash;
	const char *what = "";
	struct stat st;

	config_at(cf, cf->line_state, "-s", at, sizeof(at));
	snprintf(dir, sizeof(dir), "%s", cf->state_dir);
	while (stat(dir, &st) && errno == ENOENT) {
		what = "parent ";
		slash = strrchr(dir, '/');
		if (!slash || slash == dir) {
			snprintf(dir, sizeof(dir), "/");
			continue;
		}
		*slash = 0;
	}
	if (stat(dir, &st)) {
		if (!what[0])
			cfg_say(plain, LOG_ERR, "%sstate-dir %s: %s", at,
				cf->state_dir, strerror(errno));
		else
			cfg_say(plain, LOG_ERR, "%sstate-dir %s: %s%s: %s", at,
				cf->state_dir, what, dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		cfg_say(plain, LOG_ERR, "%sstate-dir %s: %s%s is not a directory",
			at, cf->state_dir, what, dir);
		return -1;
	}
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS)) {
		cfg_say(plain, LOG_ERR, "%sstate-dir %s: %s%s is not writable: %s",
			at, cf->state_dir, what, dir, strerror(errno));
		return -1;
	}
	return 0;
}

static bool cap_has(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1U << (cap % 32));
}

/*
 * Every request runs with the caller's fsuid/fsgid/groups (creds.c) and
 * every object is opened by handle (oid.c): without these a server
 * starts and then fails each request with EPERM.
 */
static int check_privileges(const struct config *cf, bool plain)
{
	static const struct { int cap; const char *name; } need[] = {
		{ CAP_SETUID, "CAP_SETUID" }, { CAP_SETGID, "CAP_SETGID" },
		{ CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH" },
	}, root[] = {
		{ CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE" },
		{ CAP_FOWNER, "CAP_FOWNER" }, { CAP_CHOWN, "CAP_CHOWN" },
	};
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	char missing[256] = "";
	size_t i;

	if (syscall(SYS_capget, &h, d)) {
		cfg_say(plain, LOG_ERR, "capget: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < ARRAY_SIZE(need); i++)
		if (!cap_has(d, need[i].cap))
			snprintf(missing + strlen(missing),
				 sizeof(missing) - strlen(missing), " %s",
				 need[i].name);
	if (missing[0]) {
		cfg_say(plain, LOG_ERR,
			"running as uid %u without%s: pohmeld could not open files by handle nor act as its clients' users (every request would fail with EPERM); run it as root, with CAP_SETUID CAP_SETGID CAP_DAC_READ_SEARCH in its bounding set",
			(unsigned int)geteuid(), missing);
		return -1;
	}
	if (cf->ex.all_squash || cf->ex.root_squash)
		return 0;
	for (i = 0; i < ARRAY_SIZE(root); i++)
		if (!cap_has(d, root[i].cap))
			snprintf(missing + strlen(missing),
				 sizeof(missing) - strlen(missing), " %s",
				 root[i].name);
	if (missing[0])
		cfg_say(plain, LOG_WARNING,
			"no_root_squash, but running without%s: clients' root will not have root's powers",
			missing);
	return 0;
}

/* open_by_handle_at on the root's own handle: what oid.c does for every
 * object, so a file system without handles fails here, not per request. */
static int check_handles(int rootfd, const char *at, const char *path,
			 bool plain)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} u;
	int mnt, fd;

	u.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(rootfd, "", &u.fh, &mnt, AT_EMPTY_PATH)) {
		cfg_say(plain, LOG_ERR,
			"%sexport %s: its file system has no file handles (%s): it cannot be served",
			at, path, strerror(errno));
		return -1;
	}
	fd = open_by_handle_at(rootfd, &u.fh, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		cfg_say(plain, LOG_ERR, "%sexport %s: open by file handle: %s",
			at, path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

static int check_export(const struct config *cf, bool plain, bool priv,
			struct checked *out)
{
	const char *path = cf->ex.path;
	struct statvfs sv;
	struct statfs sf;
	struct stat st;
	char at[4200];
	size_t i;
	int fd;

	config_at(cf, cf->line_export, "-e", at, sizeof(at));
	/* Not O_PATH: open_by_handle_at() wants a real fd as mount_fd. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || fstatfs(fd, &sf)) {
		cfg_say(plain, LOG_ERR, "%sexport %s: %s", at, path,
			errno == ENOTDIR ? "not a directory" : strerror(errno));
		goto err;
	}
	for (i = 0; i < ARRAY_SIZE(deny_fs); i++) {
		if ((unsigned long)sf.f_type == deny_fs[i].magic) {
			cfg_say(plain, LOG_ERR,
				"%sexport %s: on a %s file system, which cannot be served",
				at, path, deny_fs[i].name);
			goto err;
		}
	}
	/* Without CAP_DAC_READ_SEARCH this would fail, said once already. */
	if (priv && check_handles(fd, at, path, plain))
		goto err;
	if (!cf->ex.ro && !fstatvfs(fd, &sv) && (sv.f_flag & ST_RDONLY))
		cfg_say(plain, LOG_WARNING,
			"%sexport %s: exported rw, but its file system is mounted read-only",
			at, path);
	out->rootfd = fd;
	out->rootdev = st.st_dev;
	return 0;

err:
	if (fd >= 0)
		close(fd);
	return -1;
}

/*
 * cf as loaded (file and command line). activated: the listening
 * sockets come from systemd. plain: messages for -n. On success out
 * holds the open export root and the key; -1 after every problem has
 * been reported.
 */
int config_check(const struct config *cf, bool activated, bool plain,
		 struct checked *out)
{
	char at[4200];
	int bad = 0;

	memset(out, 0, sizeof(*out));
	out->rootfd = -1;
	if (!cf->have_export) {
		cfg_say(plain, LOG_ERR,
			"no export: give -e DIR or an 'export / DIR' line");
		return -1;
	}
	bad |= check_privileges(cf, plain);
	bad |= check_key(cf, plain, out);
	bad |= check_state(cf, plain);
	if (check_export(cf, plain, !bad, out))
		bad = -1;
	if (activated && cf->line_port)
		cfg_say(plain, LOG_WARNING,
			"%sport %d is ignored: the listening socket comes from systemd (pohmeld.socket's ListenStream= sets it)",
			config_at(cf, cf->line_port, "-p", at, sizeof(at)),
			cf->port);
	if (bad && out->rootfd >= 0) {
		close(out->rootfd);
		out->rootfd = -1;
	}
	if (!bad)
		bad |= check_export_keys(cf, plain, out);
	if (bad)
		keys_free(&out->keys);
	return bad ? -1 : 0;
}
