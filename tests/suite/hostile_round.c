/* hostile round: the operations hostile.sh runs on the hostile mount, in
 * one process (an exec costs a lot under TCG); see hostile.c's usage.
 *
 *   hostile round DIR N SRC SRC2 NAME [big] [parallel] [short] [seqwin] [batch]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int do_round(int argc, char **argv);

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		exit(2);
	p = malloc((size_t)n + 1);
	if (!p || fread(p, 1, (size_t)n, f) != (size_t)n)
		exit(2);
	fclose(f);
	*len = (size_t)n;
	return p;
}

static void report(const char *op, int err)
{
	printf("%s %d\n", op, err);
	fflush(stdout);
}

/* Read @path whole (O_DIRECT with @direct) and compare with @want. */
static int read_cmp(const char *path, int direct, const uint8_t *want, size_t wlen, int *same)
{
	static uint8_t *buf;
	size_t got = 0, cap = wlen + (1 << 20);
	int fd = open(path, O_RDONLY | (direct ? O_DIRECT : 0)), err = 0;
	ssize_t n;

	*same = 0;
	if (fd < 0)
		return errno;
	if (!buf && posix_memalign((void **)&buf, 4096, cap))
		exit(2);
	while ((n = read(fd, buf + got, 65536)) > 0 && got + (size_t)n + 65536 <= cap)
		got += (size_t)n;
	if (n < 0)
		err = errno;
	close(fd);
	*same = !err && got == wlen && !memcmp(buf, want, wlen);
	return err;
}

static int write_file(const char *path, const uint8_t *p, size_t len, int sync)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), err = 0;
	size_t off = 0;
	ssize_t n;

	if (fd < 0)
		return errno;
	while (off < len && (n = write(fd, p + off, len - off > 1048576 ? 1048576 : len - off)) > 0)
		off += (size_t)n;
	if (off < len)
		err = errno ? errno : EIO;
	if (!err && sync && fsync(fd))
		err = errno;
	if (close(fd) && !err)
		err = errno;
	return err;
}

/*
 * Is @ino one of the directories a lying entry reply could name: @dir/d,
 * @dir, or an ancestor of @dir on the same mount? -1: a stat failed.
 */
static int known_dir(const char *dir, const struct stat *obj)
{
	char p[4096];
	struct stat st;
	int i;

	snprintf(p, sizeof(p), "%s/d", dir);
	if (stat(p, &st))
		return -1;
	if (st.st_ino == obj->st_ino)
		return 1;
	snprintf(p, sizeof(p), "%s", dir);
	for (i = 0; i < 32 && strlen(p) + 4 < sizeof(p); i++) {
		if (stat(p, &st))
			return -1;
		if (st.st_dev != obj->st_dev)
			break;
		if (st.st_ino == obj->st_ino)
			return 1;
		strcat(p, "/..");
	}
	return 0;
}

/*
 * batch: on a writeback mount, a fresh directory DIR/b.NAME and 20 names
 * in it (every 4th a directory) are made locally, on the write-back log;
 * the directory's fsync sends the log, in a BATCH. Reports batch-mkdir,
 * batch-create (the first error), batch-fsync, then "# made PATH TYPE
 * INO" for each (PATH under DIR, TYPE f or d) as this mount sees it.
 */
#define BATCH_NAMES 20
static void batch_round(const char *dir, const char *name)
{
	char p[2048], q[4096];
	struct stat st;
	int i, err = 0, e, fd;

	alarm(60);
	snprintf(p, sizeof(p), "%s/b.%s", dir, name);
	report("batch-mkdir", mkdir(p, 0755) ? errno : 0);
	for (i = 0; i < BATCH_NAMES; i++) {
		snprintf(q, sizeof(q), "%s/e%02d", p, i);
		if (i % 4 == 3) {
			e = mkdir(q, 0755) ? errno : 0;
		} else {
			fd = open(q, O_WRONLY | O_CREAT | O_EXCL, 0644);
			e = fd < 0 ? errno : close(fd) ? errno : 0;
		}
		if (!err)
			err = e;
	}
	report("batch-create", err);
	fd = open(p, O_RDONLY | O_DIRECTORY);
	report("batch-fsync", fd < 0 ? errno : fsync(fd) ? errno : 0);
	if (fd >= 0)
		close(fd);
	for (i = -1; i < BATCH_NAMES; i++) {
		char r[512];

		if (i < 0)
			snprintf(r, sizeof(r), "b.%s", name);
		else
			snprintf(r, sizeof(r), "b.%s/e%02d", name, i);
		snprintf(q, sizeof(q), "%s/%s", dir, r);
		if (!lstat(q, &st))
			printf("# made %s %c %llu\n", r, S_ISDIR(st.st_mode) ? 'd' :
			       S_ISREG(st.st_mode) ? 'f' : '?', (unsigned long long)st.st_ino);
		else
			printf("# made %s lstat error %d\n", r, errno);
	}
	fflush(stdout);
	alarm(0);
}

/* names f1..f5 listed in @dir */
static int count_small(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strlen(e->d_name) == 2 && e->d_name[0] == 'f' && e->d_name[1] >= '1' && e->d_name[1] <= '5';
	if (d)
		closedir(d);
	return n;
}

int do_round(int argc, char **argv)
{
	const char *dir, *name;
	char p[2048], q[4096];
	uint8_t *src, *src2;
	size_t slen, s2len;
	int n, err, same, i, big = 0, par = 0, seqwin = 0, batch = 0;
	struct stat st;

	if (argc < 7)
		return 2;
	dir = argv[2];
	n = atoi(argv[3]);
	src = slurp(argv[4], &slen);
	src2 = slurp(argv[5], &s2len);
	name = argv[6];
	for (i = 7; i < argc; i++) {
		big |= !strcmp(argv[i], "big");
		par |= !strcmp(argv[i], "parallel");
		seqwin |= !strcmp(argv[i], "seqwin");
		batch |= !strcmp(argv[i], "batch");
	}
	signal(SIGALRM, SIG_DFL);

	if (batch) {
		/* the attack is on the log's BATCH: the rest is round 2's */
		batch_round(dir, name);
		return 0;
	}

	if (seqwin) {
		/* one sequenced call, whose reply the proxy holds, and 1,100
		 * more behind it from another process */
		pid_t kid;
		int status, fd;

		snprintf(p, sizeof(p), "%s/data", dir);
		kid = fork();
		if (kid == 0) {
			alarm(60);
			_exit(utimensat(AT_FDCWD, p, NULL, 0) ? errno : 0);
		}
		usleep(500000);
		alarm(60);
		snprintf(q, sizeof(q), "%s/sw.%s.%d", dir, name, n);
		fd = open(q, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		err = fd < 0 ? errno : 0;
		for (i = 0; i < 1100 && !err; i++)
			if (fchmod(fd, i & 1 ? 0644 : 0600))
				err = errno;
		if (fd >= 0)
			close(fd);
		report("seqwin-ops", err);
		if (kid < 0 || waitpid(kid, &status, 0) < 0)
			report("seqwin-held", -1);
		else
			report("seqwin-held", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		unlink(q);
	}

	alarm(20);
	snprintf(p, sizeof(p), "%s/data", dir);
	report("stat", stat(p, &st) ? errno : 0);

	alarm(20);
	snprintf(p, sizeof(p), "%s/d", dir);
	{
		DIR *d = opendir(p);
		struct dirent *e;
		int names = 0;

		err = 0;
		if (!d) {
			err = errno;
		} else {
			errno = 0;
			while ((e = readdir(d))) {
				snprintf(q, sizeof(q), "%s/%s", p, e->d_name);
				if (lstat(q, &st) && errno != ENOENT)
					err = errno;
				names += strlen(e->d_name) == 2 && e->d_name[0] == 'f' &&
					 e->d_name[1] >= '1' && e->d_name[1] <= '5';
				errno = 0;
			}
			if (errno)
				err = errno;
			closedir(d);
		}
		report("ls", err);
		/* -1 only for a listing that returned and is wrong */
		report("ls-names", err ? err : names == 5 ? 0 : -1);
	}

	alarm(20);
	snprintf(p, sizeof(p), "%s/data", dir);
	err = read_cmp(p, n > 1 || !strcmp(name, "status-internal"), src, slen, &same);
	report("read", err);
	/* -1: the read returned success with other bytes (never allowed) */
	report("read-data", err ? err : same ? 0 : -1);
	if (n > 1) {
		/* after the attack, through the page cache too: nothing wrong
		 * that the attack left in it */
		alarm(20);
		err = read_cmp(p, 0, src, slen, &same);
		report("read-cached", err ? err : same ? 0 : -1);
	}

	if (big) {
		/* a server that stopped reading gets more than the socket buffers */
		uint8_t *z = calloc(1, 24 << 20);

		alarm(60);
		snprintf(p, sizeof(p), "%s/big.%s", dir, name);
		report("write-big", z ? write_file(p, z, 24 << 20, 1) : ENOMEM);
		free(z);
	}
	if (par) {
		/* replies can only be reordered when several calls are in flight */
		pid_t kids[4];
		int k, status;

		for (k = 0; k < 4; k++) {
			kids[k] = fork();
			if (kids[k] == 0) {
				alarm(20);
				err = read_cmp(p, 1, src, slen, &same);
				_exit(err ? 1 : same ? 0 : 2);
			}
		}
		for (k = 0; k < 4; k++) {
			char op[32];

			snprintf(op, sizeof(op), "read-parallel-%d", k);
			if (kids[k] < 0 || waitpid(kids[k], &status, 0) < 0)
				report(op, -1);
			else
				report(op, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		}
	}
	if (n == 1 && argc > 7 && !strcmp(argv[argc - 1], "short"))
		return 0;

	alarm(20);
	snprintf(p, sizeof(p), "%s/new.%s.%d", dir, name, n);
	report("write", write_file(p, src2, s2len, 0));

	alarm(20);
	snprintf(p, sizeof(p), "%s/d/t.%s.%d", dir, name, n);
	report("create", write_file(p, (const uint8_t *)"", 0, 0));
	alarm(20);
	report("unlink", unlink(p) ? errno : 0);

	if (!strncmp(name, "entry-alias", 11)) {
		/* what a lying entry reply made must not be a directory we had */

		alarm(20);
		if (!strcmp(name, "entry-alias-dir")) {
			snprintf(p, sizeof(p), "%s/m.%s.%d", dir, name, n);
			report("mkdir", mkdir(p, 0755) ? errno : 0);
		} else {
			snprintf(p, sizeof(p), "%s/new.%s.%d", dir, name, n);
		}
		/* (refused, the call failed: no name here is as good) */
		err = stat(p, &st) ? errno : 0;
		report("alias", err == ENOENT ? 0 : err ? err : known_dir(dir, &st) ? -1 : 0);
		if (!err && n == 1)
			printf("# made ino %llu\n", (unsigned long long)st.st_ino);
		if (!strcmp(name, "entry-alias-dir"))
			rmdir(p);
		/* and the directory it named still lists what it holds */
		snprintf(q, sizeof(q), "%s/d", dir);
		report("relist", count_small(q) == 5 ? 0 : -1);
	}

	alarm(20);
	err = 0;
	for (i = 1; i <= 3; i++) {
		snprintf(p, sizeof(p), "%s/d/f%d", dir, i);
		snprintf(q, sizeof(q), "small %d\n", i);
		if (!err)
			err = read_cmp(p, 0, (const uint8_t *)q, strlen(q), &same);
		if (!err && !same)
			err = -1;
	}
	report("read-small", err);
	alarm(0);
	return 0;
}
