/* restart: helpers for the server kill/restart test (restart.sh).
 *   restart write [--seconds S] DIR LOG
 *       writes files DIR/wN (content fixed by N) until SIGTERM/SIGINT or S
 *       seconds; even N are fsync'd before "f N" is appended to LOG, odd N
 *       are logged as "w N" once write+close returned. Exit 0 if every call
 *       succeeded (a hard mount blocks during the outage, it must not fail);
 *       prints the longest single call in ms.
 *   restart check DIR1 DIR2 LOG
 *       TAP: every logged file intact through both paths.
 *   restart probe DIR1 DIR2
 *       TAP: new operations work on both mounts after the reconnect.
 *   restart hold FILE FLAG
 *       opens FILE read/write, writes and fsyncs "before", waits until
 *       FLAG exists (the server was restarted meanwhile), then writes
 *       "+after" through the same descriptor, fsyncs, reads it all back
 *       and closes. Exit 0 if every call succeeded: an open file keeps
 *       working across the restart.
 *   restart durable W1 W2 WSOFT SOFTMNT WE EMNT
 *       TAP: fsync and eviction with the server down or stopped
 *       (restart_durable.c).
 */
#include "tap.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int do_durable(const char *w1, const char *w2, const char *ws, const char *smnt,
	       const char *we, const char *emnt);

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static size_t len_of(long n)
{
	return (size_t)((n * 7919) % 60000) + 1;
}

static unsigned char buf[70000], rd[70001];

static int do_write(const char *dir, const char *logp, double seconds)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	int log = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (log < 0)
		die("open %s", logp);
	unsigned long long start = now_ns(), worst = 0;
	long n, errors = 0;
	char p[4200], line[64];
	for (n = 0; !stop && (seconds <= 0 || now_ns() - start < seconds * 1e9); n++) {
		unsigned long long t0 = now_ns();
		size_t len = len_of(n);
		fill_pattern(buf, len, (unsigned long)n, 0);
		snprintf(p, sizeof(p), "%s/w%ld", dir, n);
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;
		if (ok && n % 2 == 0)
			ok = fsync(fd) == 0;
		if (fd >= 0 && close(fd) < 0)
			ok = 0;
		unsigned long long dt = now_ns() - t0;
		if (dt > worst)
			worst = dt;
		if (!ok) {
			if (errors++ < 5)
				fprintf(stderr, "restart write: w%ld: %s\n", n, strerror(errno));
			continue;
		}
		int l = snprintf(line, sizeof(line), "%c %ld\n", n % 2 ? 'w' : 'f', n);
		if (write(log, line, (size_t)l) != l)
			die("log write");
		/* keep the rate moderate: this is about the outage, not throughput */
		if (n % 16 == 15)
			usleep(20000);
	}
	close(log);
	printf("%ld files, %ld errors, longest call %.0f ms\n", n, errors, worst / 1e6);
	return errors ? 1 : 0;
}

static int do_check(const char *d1, const char *d2, const char *logp)
{
	FILE *f = fopen(logp, "r");
	if (!f)
		die("open %s", logp);
	char kind;
	long n, cnt[2] = {0, 0}, bad[2][2] = {{0, 0}, {0, 0}};
	char p[4200];
	while (fscanf(f, " %c %ld", &kind, &n) == 2) {
		int k = kind == 'w';
		cnt[k]++;
		size_t len = len_of(n);
		fill_pattern(buf, len, (unsigned long)n, 0);
		for (int m = 0; m < 2; m++) {
			snprintf(p, sizeof(p), "%s/w%ld", m ? d2 : d1, n);
			ssize_t got = read_file(p, rd, sizeof(rd));
			if (got != (ssize_t)len || memcmp(rd, buf, len)) {
				if (bad[k][m]++ < 5)
					tap_diag("w%ld via mount %d: %zd bytes (%s), expected %zu", n, m + 1, got,
						 got < 0 ? strerror(errno) : "content differs", len);
			}
		}
	}
	fclose(f);
	tap_check(cnt[0] > 0, "restart: the writer fsync'd %ld files around the outage", cnt[0]);
	for (int m = 0; m < 2; m++)
		tap_check(bad[0][m] == 0, "restart: every fsync'd file intact via mount %d (%ld bad)", m + 1, bad[0][m]);
	for (int m = 0; m < 2; m++)
		tap_check(bad[1][m] == 0, "restart: written (not fsync'd) files kept, not dropped, via mount %d (%ld of %ld bad)",
			  m + 1, bad[1][m], cnt[1]);
	return 0;
}

static int do_probe(const char *d1, const char *d2)
{
	char a[4200], b[4200];
	struct stat st;
	snprintf(a, sizeof(a), "%s/probe", d1);
	CHECK_OK(mkdir(a, 0755), "restart: mkdir after reconnect (mount 1)");
	snprintf(a, sizeof(a), "%s/probe/f", d1);
	CHECK_OK(write_file(a, "after", 5, 0, 0644), "restart: create+write after reconnect (mount 1)");
	snprintf(b, sizeof(b), "%s/probe/f", d2);
	tap_check(file_equals(b, "after", 5), "restart: mount 2 reads it");
	int fd = open(b, O_WRONLY | O_APPEND);
	tap_check(fd >= 0 && write(fd, "+2", 2) == 2 && fsync(fd) == 0 && close(fd) == 0,
		  "restart: append+fsync after reconnect (mount 2)");
	tap_check(file_equals(a, "after+2", 7), "restart: mount 1 reads the append");
	snprintf(b, sizeof(b), "%s/probe/g", d1);
	CHECK_OK(rename(a, b), "restart: rename on mount 1");
	snprintf(b, sizeof(b), "%s/probe/g", d2);
	snprintf(a, sizeof(a), "%s/probe/g", d1);
	tap_check(file_equals(b, "after+2", 7), "restart: renamed file seen on mount 2");
	CHECK_OK(unlink(b), "restart: unlink on mount 2");
	CHECK_ERR(stat(a, &st), ENOENT, "restart: unlink seen on mount 1");
	snprintf(a, sizeof(a), "%s/probe", d1);
	snprintf(b, sizeof(b), "%s/probe", d2);
	DIR *d = opendir(b);
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	tap_check(d && n == 2, "restart: readdir on mount 2 (empty directory)");
	CHECK_OK(rmdir(a), "restart: rmdir on mount 1");
	return 0;
}

static int do_hold(const char *path, const char *flag)
{
	char got[64];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, "before", 6) != 6 || fsync(fd)) {
		fprintf(stderr, "restart hold: before: %s\n", strerror(errno));
		return 1;
	}
	while (access(flag, F_OK))
		usleep(100000);
	if (pwrite(fd, "+after", 6, 6) != 6 || fsync(fd)) {
		fprintf(stderr, "restart hold: after: %s\n", strerror(errno));
		return 1;
	}
	if (pread(fd, got, sizeof(got), 0) != 12 || memcmp(got, "before+after", 12)) {
		fprintf(stderr, "restart hold: read back: %s\n", strerror(errno));
		return 1;
	}
	if (close(fd)) {
		fprintf(stderr, "restart hold: close: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	tap_init();
	if (argc >= 4 && !strcmp(argv[1], "write")) {
		double secs = 0;
		int i = 2;
		if (!strcmp(argv[i], "--seconds") && argc >= 6) {
			secs = atof(argv[i + 1]);
			i += 2;
		}
		return do_write(argv[i], argv[i + 1], secs);
	}
	if (argc == 5 && !strcmp(argv[1], "check")) {
		do_check(argv[2], argv[3], argv[4]);
		return tap_done();
	}
	if (argc == 4 && !strcmp(argv[1], "hold"))
		return do_hold(argv[2], argv[3]);
	if (argc == 8 && !strcmp(argv[1], "durable"))
		return do_durable(argv[2], argv[3], argv[4], argv[5], argv[6],
				  argv[7]);
	if (argc == 4 && !strcmp(argv[1], "probe")) {
		do_probe(argv[2], argv[3]);
		return tap_done();
	}
	fprintf(stderr, "usage: restart write [--seconds S] DIR LOG | check DIR1 DIR2 LOG | probe DIR1 DIR2 | hold FILE FLAG | durable W1 W2 WSOFT SOFTMNT WE EMNT\n");
	return 2;
}
