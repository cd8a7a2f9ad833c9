// SPDX-License-Identifier: GPL-2.0
/*
 * many - the many group's workload: one process per directory given (each
 * on a mount of its own), all started at once, each doing ROUNDS rounds of
 * the parallel workload on its mount: create a file, write 8 KiB, fsync,
 * stat, read it back, rename it, unlink the previous round's. Each keeps
 * its last file (keep-N in its directory, 8 KiB of a pattern of its own)
 * for the caller to check in the export.
 *   many ROUNDS DIR...
 *   many --check CLIENT ROUND FILE   (exit 0: FILE holds that round's
 *                                     bytes of client CLIENT, 1-based)
 * Prints one line per directory: "client N: OPS ops, ERRORS errors,
 * median US us, p90 US us", then the spread of the medians (largest /
 * smallest). Exit 0 only if every client did every operation right.
 * The latencies are for the record (and make bench), never asserted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE	8192
#define OPS_PER_ROUND	6

struct result {
	long ops, errors;
	double median_us, p90_us;
	char first_error[256];
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void fill(unsigned char *b, int client, int round)
{
	int i;

	for (i = 0; i < FILE_SIZE; i++)
		b[i] = (unsigned char)(client * 31 + round * 7 + i);
}

/* One error: counted, the first kept for the report. */
static void err(struct result *r, const char *what, const char *path)
{
	if (!r->errors++)
		snprintf(r->first_error, sizeof(r->first_error), "%s %.160s: %s",
			 what, path, strerror(errno));
}

static void client(int id, const char *dir, int rounds, struct result *r)
{
	unsigned char data[FILE_SIZE], back[FILE_SIZE];
	char path[4096], tmp[4096], prev[4096] = "";
	double *lat = calloc((size_t)rounds * OPS_PER_ROUND, sizeof(*lat));
	double t;
	struct stat st;
	int round, fd;
	long n = 0;

	if (!lat) {
		err(r, "calloc", dir);
		return;
	}
	for (round = 0; round < rounds; round++) {
		fill(data, id, round);
		snprintf(tmp, sizeof(tmp), "%s/new-%d", dir, round);
		snprintf(path, sizeof(path), "%s/keep-%d", dir, round);
		t = now_us();
		fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY, 0644);
		lat[n++] = now_us() - t;
		if (fd < 0) {
			err(r, "create", tmp);
			continue;
		}
		t = now_us();
		if (write(fd, data, sizeof(data)) != sizeof(data))
			err(r, "write", tmp);
		lat[n++] = now_us() - t;
		t = now_us();
		if (fsync(fd))
			err(r, "fsync", tmp);
		lat[n++] = now_us() - t;
		close(fd);
		t = now_us();
		if (stat(tmp, &st) || st.st_size != FILE_SIZE)
			err(r, "stat", tmp);
		lat[n++] = now_us() - t;
		t = now_us();
		fd = open(tmp, O_RDONLY);
		if (fd < 0 || read(fd, back, sizeof(back)) != sizeof(back) ||
		    memcmp(back, data, sizeof(data)))
			err(r, "read back", tmp);
		if (fd >= 0)
			close(fd);
		lat[n++] = now_us() - t;
		t = now_us();
		if (rename(tmp, path))
			err(r, "rename", tmp);
		if (prev[0] && unlink(prev))
			err(r, "unlink", prev);
		lat[n++] = now_us() - t;
		snprintf(prev, sizeof(prev), "%s", path);
	}
	r->ops = n;
	if (n) {
		qsort(lat, (size_t)n, sizeof(*lat), cmp_d);
		r->median_us = lat[n / 2];
		r->p90_us = lat[n * 9 / 10];
	}
	free(lat);
}

static int check_file(int id, int round, const char *path)
{
	unsigned char want[FILE_SIZE], got[FILE_SIZE + 1];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	fill(want, id, round);
	n = fd < 0 ? -1 : read(fd, got, sizeof(got));
	if (fd >= 0)
		close(fd);
	if (n == FILE_SIZE && !memcmp(got, want, FILE_SIZE))
		return 0;
	fprintf(stderr, "many: %s: %s\n", path, n < 0 ? strerror(errno) :
		n != FILE_SIZE ? "wrong size" : "wrong bytes");
	return 1;
}

int main(int argc, char **argv)
{
	int rounds, nc, i, go[2], bad = 0, st;
	double lo = 0, hi = 0;
	struct result *res;
	char c;

	if (argc == 5 && !strcmp(argv[1], "--check"))
		return check_file(atoi(argv[2]), atoi(argv[3]), argv[4]);
	if (argc < 3 || (rounds = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: many ROUNDS DIR...\n");
		return 2;
	}
	nc = argc - 2;
	res = mmap(NULL, sizeof(*res) * (size_t)nc, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED || pipe(go)) {
		perror("many: setup");
		return 1;
	}
	memset(res, 0, sizeof(*res) * (size_t)nc);
	for (i = 0; i < nc; i++) {
		pid_t p = fork();

		if (p < 0) {
			perror("many: fork");
			return 1;
		}
		if (!p) {
			close(go[1]);
			/* all start when the parent closes the pipe */
			if (read(go[0], &c, 1) < 0)
				_exit(1);
			client(i + 1, argv[i + 2], rounds, &res[i]);
			_exit(0);
		}
	}
	close(go[0]);
	close(go[1]);
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	for (i = 0; i < nc; i++) {
		struct result *r = &res[i];

		printf("client %d: %ld ops, %ld errors, median %.0f us, p90 %.0f us%s%s\n",
		       i + 1, r->ops, r->errors, r->median_us, r->p90_us,
		       r->errors ? ": " : "", r->first_error);
		if (r->errors || r->ops != (long)rounds * OPS_PER_ROUND)
			bad++;
		if (!i || r->median_us < lo)
			lo = r->median_us;
		if (!i || r->median_us > hi)
			hi = r->median_us;
	}
	printf("medians: smallest %.0f us, largest %.0f us (%.2fx)\n", lo, hi,
	       lo > 0 ? hi / lo : 0.0);
	return bad ? 1 : 0;
}
