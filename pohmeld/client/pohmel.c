// SPDX-License-Identifier: MIT
/*
 * pohmel - talk to pohmeld from the command line (see pohmel(1)).
 *   pohmel [-p PORT] [-k KEYFILE] [-K NAME] [-S SEC] [-u UID] [-g GID]
 *          [-t SECONDS] HOST CMD [ARGS]
 *   pohmel keygen FILE [NAME]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "libpohmel.h"
#include "pohmel_cmd.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

#define CHUNK	(1U << 20)

static struct pc pc;
static const char *cmd;
static bool timeout_given;	/* -t on the command line */

#ifndef POHMEL_VERSION
#error "POHMEL_VERSION comes from ../VERSION through the Makefile"
#endif

#define DEFAULT_TIMEOUT	10	/* seconds */

static void usage(FILE *f)
{
	fprintf(f,
"usage: pohmel [-p PORT] [-k KEYFILE] [-K NAME] [-S SEC] [-u UID] [-g GID]\n"
"              [-t SECONDS] HOST CMD [ARGS]\n"
"       pohmel keygen FILE [NAME]\n"
"       pohmel -h|--help | -V|--version\n"
"commands:\n"
"  ping | stats | statfs [PATH]\n"
"  clients [-r]          every session: key, address, age, handles, locks,\n"
"                        grants, requests, bytes (admin= keys only; -r: raw)\n"
"  ls [-l] PATH | stat PATH | cat PATH | get PATH LOCAL | put LOCAL PATH\n"
"  mkdir PATH | rm PATH | rmdir PATH | mv OLD NEW | ln TARGET PATH\n"
"  ln -s TARGET PATH | readlink PATH | chmod MODE PATH | truncate SIZE PATH\n"
"  setfattr NAME VALUE PATH | getfattr [NAME] PATH | rmfattr NAME PATH\n"
"  lock [-s] [-w] PATH   (holds the lock until stdin reaches EOF)\n"
"  locktest [-s] [-f] PATH   (who holds a lock that conflicts with one\n"
"                            on the whole file: owner, pid, or unlocked)\n"
"  keygen FILE [NAME]    (no HOST) write a new random 32-byte key as\n"
"                        \"NAME HEX\" (NAME default \"default\") to FILE,\n"
"                        mode 0600; an existing FILE is not overwritten\n"
"options:\n"
"  -p, --port PORT        server port (default %d)\n"
"  -k, --key-file FILE    pre-shared key (default /etc/pohmelfs/key if it\n"
"                         exists; \"none\": no key)\n"
"  -K, --key-name NAME    the key of that name in the key file (default:\n"
"                         its only key, or the one named \"default\")\n"
"  -S, --sec SEC          with a key: none (the key checked once), auth\n"
"                         (every message signed) or seal (every message\n"
"                         encrypted; the default)\n"
"  -u, --uid UID          caller uid sent with each request (default 0)\n"
"  -g, --gid GID          caller gid sent with each request (default 0)\n"
"  -t, --timeout SECONDS  give up when connecting, or waiting for the server,\n"
"                         takes longer (default %d; 0: wait for ever;\n"
"                         lock -w waits for ever unless -t is given)\n"
"  -h, --help             this help\n"
"  -V, --version          print the version and exit\n"
"Exit status: 0 done, 1 failed (server error, no answer in time), 2 usage.\n",
		POHMEL_DEFAULT_PORT, DEFAULT_TIMEOUT);
}

/* A decimal number in [0, max] with nothing after it, else -1. */
static long long number(const char *s, long long max)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > (unsigned long long)max)
		return -1;
	return (long long)v;
}

static int fail(const char *what, int err)
{
	const char *sep = *what ? " " : "";

	if (err < 0)
		fprintf(stderr, "pohmel: %s%s%s: %s\n", cmd, sep, what,
			pc.err[0] ? pc.err : strerror(-err));
	else
		fprintf(stderr, "pohmel: %s%s%s: %s\n", cmd, sep, what,
			err == POHMEL_ERR_SEQ_OLD ? "request too old" :
			strerror(err));
	return 1;
}

static void mode_str(uint32_t m, char *s)
{
	static const char *t = "?pc?d?b?-?l?s???";

	s[0] = t[(m >> 12) & 15];
	s[1] = m & 0400 ? 'r' : '-';
	s[2] = m & 0200 ? 'w' : '-';
	s[3] = m & 04000 ? (m & 0100 ? 's' : 'S') : (m & 0100 ? 'x' : '-');
	s[4] = m & 040 ? 'r' : '-';
	s[5] = m & 020 ? 'w' : '-';
	s[6] = m & 02000 ? (m & 010 ? 's' : 'S') : (m & 010 ? 'x' : '-');
	s[7] = m & 04 ? 'r' : '-';
	s[8] = m & 02 ? 'w' : '-';
	s[9] = m & 01000 ? (m & 01 ? 't' : 'T') : (m & 01 ? 'x' : '-');
	s[10] = 0;
}

static void print_long(const char *name, const struct wattr *a)
{
	char ms[11], ts[32];
	time_t t = (time_t)a->mtime.sec;
	struct tm tm;

	mode_str(a->mode, ms);
	if (!localtime_r(&t, &tm) ||
	    !strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M", &tm))
		strcpy(ts, "(bad time)      ");	/* from the server */
	printf("%s %3u %5u %5u %10llu %s %s\n", ms, a->nlink, a->uid, a->gid,
	       (unsigned long long)a->size, ts, name);
}

static int ls_cb(void *arg, const char *name, const struct wattr *a,
		 uint64_t cookie)
{
	(void)cookie;
	if (*(int *)arg)
		print_long(name, a);
	else
		printf("%s\n", name);
	return 0;
}

static int do_ls(int argc, char **argv)
{
	int lng = 0, err;
	struct wattr a;
	const char *path = "/";

	if (argc > 1 && !strcmp(argv[1], "-l")) {
		lng = 1;
		argc--;
		argv++;
	}
	if (argc > 1)
		path = argv[1];
	err = pc_walk(&pc, path, &a);
	if (err)
		return fail(path, err);
	if (!S_ISDIR(a.mode)) {
		if (lng)
			print_long(path, &a);
		else
			printf("%s\n", path);
		return 0;
	}
	err = pc_readdir_all(&pc, &a.oid, ls_cb, &lng);
	return err ? fail(path, err) : 0;
}

/* Like stat(1): "2026-12-05 08:12:44.123456789 +0000" in local time; the
 * raw seconds if the server sent a time localtime() cannot represent. */
static void print_time(const char *label, const struct wtime *w)
{
	char day[64], zone[16];
	time_t t = (time_t)w->sec;
	struct tm tm;

	if ((int64_t)t != w->sec || w->nsec > 999999999 ||
	    !localtime_r(&t, &tm) ||
	    !strftime(day, sizeof(day), "%Y-%m-%d %H:%M:%S", &tm) ||
	    !strftime(zone, sizeof(zone), "%z", &tm)) {
		printf("%s: @%lld.%09u (not a valid time)\n", label,
		       (long long)w->sec, w->nsec);
		return;
	}
	printf("%s: %s.%09u %s\n", label, day, w->nsec, zone);
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFCHR: return "character special file";
	case S_IFBLK: return "block special file";
	}
	return "unknown type";
}

static int do_stat(const char *path)
{
	struct wattr a;
	char ms[11];
	int err = pc_walk(&pc, path, &a);

	if (err)
		return fail(path, err);
	mode_str(a.mode, ms);
	printf("  File: %s\n  Size: %llu\tBlocks: %llu\tIO Block: %u\t%s\n"
	       "    Id: %llu\tGen: %llx\tLinks: %u\tRdev: %u,%u\n"
	       "Access: (%04o/%s)  Uid: %u  Gid: %u\n",
	       path, (unsigned long long)a.size,
	       (unsigned long long)a.blocks, a.blksize, type_name(a.mode),
	       (unsigned long long)a.oid.id, (unsigned long long)a.oid.gen,
	       a.nlink, wire_dev_major(a.rdev), wire_dev_minor(a.rdev),
	       a.mode & 07777, ms, a.uid, a.gid);
	print_time("Access", &a.atime);
	print_time("Modify", &a.mtime);
	print_time("Change", &a.ctime);
	return 0;
}

static int do_get(const char *path, int out)
{
	static uint8_t buf[CHUNK];
	uint64_t off = 0, h;
	struct wattr a;
	uint32_t got;
	int err;

	err = pc_walk(&pc, path, &a);
	if (!err)
		err = pc_open(&pc, &a.oid, POHMEL_OPEN_READ, &h, NULL);
	if (err)
		return fail(path, err);
	for (;;) {
		err = pc_read(&pc, &a.oid, h, off, buf,
			      MIN(CHUNK, pc.max_msg - 4096), &got);
		if (err)
			return fail(path, err);
		if (!got)
			break;
		if (write(out, buf, got) != (ssize_t)got)
			return fail("write", errno);
		off += got;
	}
	pc_close(&pc, &a.oid, h);
	return 0;
}

static int do_put(const char *local, const char *path)
{
	static uint8_t buf[CHUNK];
	struct wattr dir, a;
	const char *name;
	uint64_t off = 0;
	ssize_t n;
	int fd, err;

	fd = strcmp(local, "-") ? open(local, O_RDONLY) : 0;
	if (fd < 0)
		return fail(local, errno);
	err = pc_walk_parent(&pc, path, &dir, &name);
	if (!err)
		err = pc_mkobj(&pc, POHMEL_OP_CREATE, &dir.oid, name, 0644, 0,
			       0, NULL, &a, NULL);
	if (!err)
		err = pc_setattr(&pc, &a.oid, POHMEL_SET_SIZE, 0, 0, 0, 0,
				 NULL, NULL, NULL);
	if (err)
		return fail(path, err);
	while ((n = read(fd, buf, MIN(CHUNK, pc.max_msg - 4096))) > 0) {
		err = pc_write(&pc, &a.oid, 0, off, buf, (uint32_t)n, 0, NULL);
		if (err)
			return fail(path, err);
		off += (uint64_t)n;
	}
	if (n < 0)
		return fail(local, errno);
	err = pc_fsync(&pc, &a.oid, 0, 0);
	return err ? fail(path, err) : 0;
}

static int do_name_op(uint16_t op, const char *path, uint32_t mode,
		      const char *target)
{
	struct wattr dir;
	const char *name;
	int err = pc_walk_parent(&pc, path, &dir, &name);

	if (err)
		return fail(path, err);
	if (op == POHMEL_OP_UNLINK || op == POHMEL_OP_RMDIR)
		err = pc_remove(&pc, op, &dir.oid, name);
	else
		err = pc_mkobj(&pc, op, &dir.oid, name, mode, 0,
			       POHMEL_CREATE_EXCL, target, NULL, NULL);
	return err ? fail(path, err) : 0;
}

static int do_mv(const char *from, const char *to)
{
	struct wattr od, nd;
	const char *on, *nn;
	int err = pc_walk_parent(&pc, from, &od, &on);

	if (!err)
		err = pc_walk_parent(&pc, to, &nd, &nn);
	if (!err)
		err = pc_rename(&pc, &od.oid, on, &nd.oid, nn, 0, NULL);
	return err ? fail(from, err) : 0;
}

static int do_link(const char *target, const char *path)
{
	struct wattr obj, dir;
	const char *name;
	int err = pc_walk(&pc, target, &obj);

	if (!err)
		err = pc_walk_parent(&pc, path, &dir, &name);
	if (!err)
		err = pc_link(&pc, &obj.oid, &dir.oid, name, NULL);
	return err ? fail(path, err) : 0;
}

static int do_setattr(const char *path, uint32_t valid, uint32_t mode,
		      uint64_t size)
{
	struct wattr a;
	int err = pc_walk(&pc, path, &a);

	if (!err)
		err = pc_setattr(&pc, &a.oid, valid, mode, 0, 0, size, NULL,
				 NULL, NULL);
	return err ? fail(path, err) : 0;
}

static int do_getfattr(const char *name, const char *path)
{
	static char buf[POHMEL_XATTR_SIZE_MAX];
	struct wattr a;
	uint32_t n, i;
	int err = pc_walk(&pc, path, &a);

	if (err)
		return fail(path, err);
	if (name) {
		err = pc_getxattr(&pc, &a.oid, name, buf, sizeof(buf), &n);
		if (err)
			return fail(name, err);
		fwrite(buf, 1, n, stdout);
		printf("\n");
		return 0;
	}
	err = pc_listxattr(&pc, &a.oid, buf, sizeof(buf), &n);
	if (err)
		return fail(path, err);
	for (i = 0; i < n; i += (uint32_t)strlen(buf + i) + 1)
		printf("%s\n", buf + i);
	return 0;
}

static int do_lock(int argc, char **argv)
{
	uint32_t type = POHMEL_LOCK_WR, flags = 0;
	struct wattr a;
	char line[64];
	int i, err;

	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "-s"))
			type = POHMEL_LOCK_RD;
		else if (!strcmp(argv[i], "-w"))
			flags |= POHMEL_LOCK_WAIT;
	}
	if (argc < 2)
		return fail("", EINVAL);
	err = pc_walk(&pc, argv[argc - 1], &a);
	/* -w: the reply comes when the lock is free, which may take long */
	if (!err && (flags & POHMEL_LOCK_WAIT) && !timeout_given) {
		unsigned int t = pc.timeout_ms;

		err = pc_set_timeout(&pc, 0);
		if (!err)
			err = pc_lock(&pc, &a.oid, (uint64_t)getpid(), 0, 0,
				      type, flags, (uint32_t)getpid(), NULL);
		if (!err)
			err = pc_set_timeout(&pc, t);
	} else if (!err) {
		err = pc_lock(&pc, &a.oid, (uint64_t)getpid(), 0, 0, type,
			      flags, (uint32_t)getpid(), NULL);
	}
	if (err)
		return fail(argv[argc - 1], err);
	printf("locked\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	err = pc_lock(&pc, &a.oid, (uint64_t)getpid(), 0, 0, POHMEL_LOCK_UN,
		      0, (uint32_t)getpid(), NULL);
	return err ? fail(argv[argc - 1], err) : 0;
}

/* LOCK TEST of a whole-file lock: prints the conflicting lock or "unlocked" */
static int do_locktest(int argc, char **argv)
{
	uint32_t type = POHMEL_LOCK_WR, flags = POHMEL_LOCK_TEST;
	struct pc_lock l;
	struct wattr a;
	int i, err;

	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "-s"))
			type = POHMEL_LOCK_RD;
		else if (!strcmp(argv[i], "-f"))
			flags |= POHMEL_LOCK_FLOCK;
		else
			argc = 0;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	err = pc_walk(&pc, argv[argc - 1], &a);
	if (!err)
		err = pc_lock(&pc, &a.oid, (uint64_t)getpid(), 0, 0, type,
			      flags, (uint32_t)getpid(), &l);
	if (err)
		return fail(argv[argc - 1], err);
	if (l.type == POHMEL_LOCK_UN) {
		printf("unlocked\n");
		return 0;
	}
	printf("owner 0x%016llx pid %u %s %s start %llu len %llu\n",
	       (unsigned long long)l.owner, l.pid,
	       l.flags & POHMEL_LOCK_FLOCK ? "flock" : "posix",
	       l.type == POHMEL_LOCK_RD ? "read" : "write",
	       (unsigned long long)l.start, (unsigned long long)l.len);
	return 0;
}

static int run(int argc, char **argv)
{
	char buf[65536];
	struct pc_statfs sf;
	struct wattr a;
	int err;

#define NEED(n) do { if (argc != (n)) { usage(stderr); return 2; } } while (0)
	if (!strcmp(cmd, "ping")) {
		NEED(1);
		err = pc_ping(&pc);
		if (err)
			return fail("", err);
		printf("pong\n");
		return 0;
	}
	if (!strcmp(cmd, "stats")) {
		NEED(1);
		err = pc_stats(&pc, buf, sizeof(buf));
		if (err)
			return fail("", err);
		fputs(buf, stdout);
		return 0;
	}
	if (!strcmp(cmd, "clients")) {
		err = pohmel_clients(&pc, argc, argv);
		if (err == -EINVAL) {
			usage(stderr);
			return 2;
		}
		return err;
	}
	if (!strcmp(cmd, "statfs")) {
		err = pc_walk(&pc, argc > 1 ? argv[1] : "/", &a);
		if (!err)
			err = pc_statfs(&pc, &a.oid, &sf);
		if (err)
			return fail("", err);
		printf("blocks %llu bfree %llu bavail %llu files %llu ffree %llu bsize %u namelen %u\n",
		       (unsigned long long)sf.blocks,
		       (unsigned long long)sf.bfree,
		       (unsigned long long)sf.bavail,
		       (unsigned long long)sf.files,
		       (unsigned long long)sf.ffree, sf.bsize, sf.namelen);
		return 0;
	}
	if (!strcmp(cmd, "ls"))
		return do_ls(argc, argv);
	if (!strcmp(cmd, "stat")) {
		NEED(2);
		return do_stat(argv[1]);
	}
	if (!strcmp(cmd, "cat")) {
		NEED(2);
		return do_get(argv[1], 1);
	}
	if (!strcmp(cmd, "get")) {
		int fd;

		NEED(3);
		fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return fail(argv[2], errno);
		err = do_get(argv[1], fd);
		close(fd);
		return err;
	}
	if (!strcmp(cmd, "put")) {
		NEED(3);
		return do_put(argv[1], argv[2]);
	}
	if (!strcmp(cmd, "mkdir")) {
		NEED(2);
		return do_name_op(POHMEL_OP_MKDIR, argv[1], 0755, NULL);
	}
	if (!strcmp(cmd, "rm")) {
		NEED(2);
		return do_name_op(POHMEL_OP_UNLINK, argv[1], 0, NULL);
	}
	if (!strcmp(cmd, "rmdir")) {
		NEED(2);
		return do_name_op(POHMEL_OP_RMDIR, argv[1], 0, NULL);
	}
	if (!strcmp(cmd, "mv")) {
		NEED(3);
		return do_mv(argv[1], argv[2]);
	}
	if (!strcmp(cmd, "ln")) {
		if (argc == 4 && !strcmp(argv[1], "-s"))
			return do_name_op(POHMEL_OP_SYMLINK, argv[3], 0777,
					  argv[2]);
		NEED(3);
		return do_link(argv[1], argv[2]);
	}
	if (!strcmp(cmd, "readlink")) {
		NEED(2);
		err = pc_walk(&pc, argv[1], &a);
		if (!err)
			err = pc_readlink(&pc, &a.oid, buf, sizeof(buf));
		if (err)
			return fail(argv[1], err);
		printf("%s\n", buf);
		return 0;
	}
	if (!strcmp(cmd, "chmod")) {
		NEED(3);
		return do_setattr(argv[2], POHMEL_SET_MODE,
				  (uint32_t)strtoul(argv[1], NULL, 8), 0);
	}
	if (!strcmp(cmd, "truncate")) {
		NEED(3);
		return do_setattr(argv[2], POHMEL_SET_SIZE, 0,
				  strtoull(argv[1], NULL, 0));
	}
	if (!strcmp(cmd, "setfattr")) {
		NEED(4);
		err = pc_walk(&pc, argv[3], &a);
		if (!err)
			err = pc_setxattr(&pc, &a.oid, argv[1], argv[2],
					  (uint32_t)strlen(argv[2]), 0);
		return err ? fail(argv[3], err) : 0;
	}
	if (!strcmp(cmd, "rmfattr")) {
		NEED(3);
		err = pc_walk(&pc, argv[2], &a);
		if (!err)
			err = pc_removexattr(&pc, &a.oid, argv[1]);
		return err ? fail(argv[2], err) : 0;
	}
	if (!strcmp(cmd, "getfattr")) {
		if (argc == 2)
			return do_getfattr(NULL, argv[1]);
		NEED(3);
		return do_getfattr(argv[1], argv[2]);
	}
	if (!strcmp(cmd, "lock"))
		return do_lock(argc, argv);
	if (!strcmp(cmd, "locktest"))
		return do_locktest(argc, argv);
	usage(stderr);
	return 2;
#undef NEED
}

/* pohmel keygen FILE [NAME]: a new key, never over an existing file. */
static int keygen(int argc, char **argv)
{
	const char *name = argc > 2 ? argv[2] : "default";
	int err;

	if (argc < 2 || argc > 3) {
		usage(stderr);
		return 2;
	}
	if (!keyname_valid(name, strlen(name))) {
		fprintf(stderr, "pohmel: keygen: bad key name '%s' (1..%d of A-Z a-z 0-9 . _ -)\n",
			name, POHMEL_KEYNAME_MAX);
		return 2;
	}
	err = keys_create(argv[1], name);
	if (err) {
		fprintf(stderr, "pohmel: keygen: %s: %s\n", argv[1],
			err == EEXIST ? "exists already (not overwritten)" :
			strerror(err));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "key-name", required_argument, NULL, 'K' },
		{ "sec", required_argument, NULL, 'S' },
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'g' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *kfile = NULL;
	long long timeout = DEFAULT_TIMEOUT, v;
	int port = POHMEL_DEFAULT_PORT, c, err, ret;

	if (pc_init(&pc))
		return 1;
	pc.sec = PC_SEC_SEAL;
	while ((c = getopt_long(argc, argv, "+p:k:K:S:u:g:t:hV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'p':
			v = number(optarg, 65535);
			if (v < 1) {
				fprintf(stderr, "pohmel: -p %s: not a port (1-65535)\n",
					optarg);
				return 2;
			}
			port = (int)v;
			break;
		case 'k': kfile = optarg; break;
		case 'K':
			if (!keyname_valid(optarg, strlen(optarg))) {
				fprintf(stderr, "pohmel: -K %s: not a key name\n",
					optarg);
				return 2;
			}
			snprintf(pc.keyname, sizeof(pc.keyname), "%s", optarg);
			break;
		case 'S':
			pc.sec = pc_sec_parse(optarg);
			if (pc.sec < 0) {
				fprintf(stderr, "pohmel: -S %s: expected none, auth or seal\n",
					optarg);
				return 2;
			}
			break;
		case 'u':
		case 'g':
			v = number(optarg, UINT32_MAX);
			if (v < 0) {
				fprintf(stderr, "pohmel: -%c %s: not a %s\n", c,
					optarg, c == 'u' ? "uid" : "gid");
				return 2;
			}
			*(c == 'u' ? &pc.uid : &pc.gid) = (uint32_t)v;
			break;
		case 't':
			/* seconds; ms must fit the library's unsigned int */
			timeout = number(optarg, UINT_MAX / 1000);
			if (timeout < 0) {
				fprintf(stderr, "pohmel: -t %s: not a number of seconds\n",
					optarg);
				return 2;
			}
			timeout_given = true;
			break;
		case 'h': usage(stdout); return 0;
		case 'V':
			printf("pohmel %s (protocol %d.%d)\n", POHMEL_VERSION,
			       POHMEL_PROTO_MAJOR, POHMEL_PROTO_MINOR);
			return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind >= 1 && !strcmp(argv[optind], "keygen"))
		return keygen(argc - optind, argv + optind);
	if (argc - optind < 2) {
		usage(stderr);
		return 2;
	}
	if (!kfile && access("/etc/pohmelfs/key", F_OK) == 0)
		kfile = "/etc/pohmelfs/key";
	if (kfile && strcmp(kfile, "none") && pc_load_key(&pc, kfile)) {
		fprintf(stderr, "pohmel: %s\n", pc.err);
		return 1;
	}
	cmd = argv[optind + 1];
	pc.timeout_ms = (unsigned int)timeout * 1000;
	err = pc_connect(&pc, argv[optind], port);
	if (!err)
		err = pc_handshake(&pc);
	if (err) {
		fprintf(stderr, "pohmel: %s: %s\n", argv[optind],
			pc.err[0] ? pc.err : strerror(err < 0 ? -err : err));
		return 1;
	}
	ret = run(argc - optind - 1, argv + optind + 1);
	pc_bye(&pc);
	pc_disconnect(&pc);
	return ret;
}
