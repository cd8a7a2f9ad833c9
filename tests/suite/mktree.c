// SPDX-License-Identifier: GPL-2.0
/*
 * mktree: the grants group's test tree in one process (a shell loop forks
 * a head(1) per file: about 20 s under TCG for 200 files).
 *   mktree DIR NDIRS NFILES BIGBYTES
 * makes DIR/dD/fF (D in 1..NDIRS, F in 1..NFILES) of D*977+F*131 random
 * bytes, DIR/dD/link -> f1, the empty directory DIR/dD/empty, and DIR/big
 * of BIGBYTES random bytes. Exit status 0, or 1 with the failing call.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "mktree: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

/* @len random bytes into a new file @path */
static int put(const char *path, size_t len)
{
	static char buf[65536];
	size_t n;
	ssize_t w;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("create", path);
	while (len) {
		n = len < sizeof(buf) ? len : sizeof(buf);
		if (getrandom(buf, n, 0) != (ssize_t)n) {
			close(fd);
			return fail("getrandom for", path);
		}
		w = write(fd, buf, n);
		if (w != (ssize_t)n) {
			if (w >= 0)
				errno = EIO;
			close(fd);
			return fail("write", path);
		}
		len -= n;
	}
	if (close(fd))
		return fail("close", path);
	return 0;
}

int main(int argc, char **argv)
{
	char p[4096];
	long nd, nf, big, d, f;

	if (argc != 5) {
		fprintf(stderr, "usage: mktree DIR NDIRS NFILES BIGBYTES\n");
		return 2;
	}
	nd = atol(argv[2]);
	nf = atol(argv[3]);
	big = atol(argv[4]);
	if (nd < 1 || nf < 1 || big < 0 || strlen(argv[1]) > 4000) {
		fprintf(stderr, "mktree: bad arguments\n");
		return 2;
	}
	if (mkdir(argv[1], 0755) && errno != EEXIST)
		return fail("mkdir", argv[1]);
	for (d = 1; d <= nd; d++) {
		snprintf(p, sizeof(p), "%s/d%ld", argv[1], d);
		if (mkdir(p, 0755))
			return fail("mkdir", p);
		for (f = 1; f <= nf; f++) {
			snprintf(p, sizeof(p), "%s/d%ld/f%ld", argv[1], d, f);
			if (put(p, d * 977 + f * 131))
				return 1;
		}
		snprintf(p, sizeof(p), "%s/d%ld/link", argv[1], d);
		if (symlink("f1", p))
			return fail("symlink", p);
		snprintf(p, sizeof(p), "%s/d%ld/empty", argv[1], d);
		if (mkdir(p, 0755))
			return fail("mkdir", p);
	}
	snprintf(p, sizeof(p), "%s/big", argv[1]);
	return put(p, big);
}
