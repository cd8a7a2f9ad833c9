/* stress: several processes work on both mounts at once for N seconds.
 * Each worker owns a directory (files it writes, renames, unlinks, lists and
 * reads back through a randomly chosen mount at every step, checked against
 * its own model) and shares one directory with the others (creates, renames,
 * unlinks of shared names; listings must never show a name twice).
 * At the end every worker checks its files through both mounts, and the
 * parent compares both mounts' listings of every directory.
 * First (stress_race.c): attribute replies racing with the client's own
 * appends and mtime changes on mount 1, --race S seconds each (0: none).
 * Usage: stress [--procs P] [--seconds S] [--race S] [--seed X] DIR1 DIR2
 */
#include "tap.h"

void stress_race(const char *d1, const char *d2, double seconds, unsigned long long seed);

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NF 24
#define MAXF 12000
static const char *dir[2];
static unsigned long long seed;

struct own {
	int exists;
	unsigned gen;
	size_t len;
	char how[160];		/* what made it, for the diagnostics */
};

/* gen is unique per write within a worker: renames carry it along */
static void content(unsigned char *b, size_t len, int w, unsigned gen)
{
	fill_pattern(b, len, (unsigned long)w * 1000003UL + gen, 0);
	if (len >= 8) {
		memcpy(b, &w, 4);
		memcpy(b + 4, &gen, 4);
	}
}

static char *opath(int m, int w, int slot)
{
	static char b[4][4200];
	static int i;
	char *p = b[i++ & 3];
	snprintf(p, sizeof(b[0]), "%s/own.%d/f%02d", dir[m], w, slot);
	return p;
}

static int errs;
static void err(int w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void err(int w, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (errs++ < 10)
		tap_diag("worker %d: %s", w, msg);
}

/* After a wrong read: what each mount and the export say now. */
static void where(int m, int w, int s)
{
	const char *exp = getenv("POHMEL_EXPORT"), *m1 = getenv("POHMEL_MNT1");
	static unsigned char got[MAXF + 1];
	char p[4200];
	struct stat st;
	int i;

	for (i = 0; i < 2; i++) {
		int rc = stat(opath(i, w, s), &st);
		ssize_t n = read_file(opath(i, w, s), got, sizeof(got));

		tap_diag("  mount %d%s: stat %s size %lld ino %llu; read again %zd",
			 i + 1, i == m ? " (the reader)" : "", rc ? strerror(errno) : "ok",
			 (long long)st.st_size, (unsigned long long)st.st_ino, n);
	}
	if (exp && *exp && m1 && !strncmp(dir[0], m1, strlen(m1))) {
		snprintf(p, sizeof(p), "%s%s/own.%d/f%02d", exp, dir[0] + strlen(m1), w, s);
		tap_diag("  export: %s size %lld ino %llu", stat(p, &st) ? strerror(errno) : "ok",
			 (long long)st.st_size, (unsigned long long)st.st_ino);
	}
	for (i = 0; i < 2; i++) {
		const char *mp = getenv(i ? "POHMEL_MNT2" : "POHMEL_MNT1");
		long long v;

		if (!mp)
			continue;
		v = mountstat(mp, "recalls");
		tap_diag("  mount %d: recalls %lld recall_acks %lld wb_local %lld open_deferred %lld open_cache_hits %lld",
			 i + 1, v, mountstat(mp, "recall_acks"), mountstat(mp, "wb_local"),
			 mountstat(mp, "open_deferred"), mountstat(mp, "open_cache_hits"));
	}
}

static int check_file(int m, int w, int s, const struct own *o)
{
	static unsigned char exp[MAXF], got[MAXF + 1];
	struct stat st;
	if (!o->exists) {
		if (lstat(opath(m, w, s), &st) == 0 || errno != ENOENT) {
			err(w, "f%02d should not exist on mount %d", s, m + 1);
			return 0;
		}
		return 1;
	}
	content(exp, o->len, w, o->gen);
	ssize_t n = read_file(opath(m, w, s), got, sizeof(got));
	if (n != (ssize_t)o->len || memcmp(got, exp, o->len)) {
		err(w, "f%02d on mount %d: read %zd bytes (%s), expected generation %u, %zu bytes (%s)", s, m + 1, n,
		    n < 0 ? strerror(errno) : "content", o->gen, o->len, o->how);
		where(m, w, s);
		return 0;
	}
	return 1;
}

static int check_listing(int m, int w, const struct own *o)
{
	char p[4200];
	int seen[NF] = {0}, ok = 1;
	snprintf(p, sizeof(p), "%s/own.%d", dir[m], w);
	DIR *d = opendir(p);
	struct dirent *de;
	if (!d) {
		err(w, "opendir %s: %s", p, strerror(errno));
		return 0;
	}
	while ((de = readdir(d))) {
		int s;
		if (de->d_name[0] == 'f' && sscanf(de->d_name + 1, "%d", &s) == 1 && s >= 0 && s < NF)
			seen[s]++;
		else if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "sub")) {
			err(w, "unexpected '%s' in own dir on mount %d", de->d_name, m + 1);
			ok = 0;
		}
	}
	closedir(d);
	for (int s = 0; s < NF; s++)
		if (seen[s] != o[s].exists) {
			err(w, "f%02d listed %d times on mount %d, exists=%d", s, seen[s], m + 1, o[s].exists);
			ok = 0;
		}
	return ok;
}

static int shared_listing(int m, int w)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/shared", dir[m]);
	DIR *d = opendir(p);
	if (!d) {
		err(w, "opendir shared: %s", strerror(errno));
		return 0;
	}
	static char names[4096][256];
	int n = 0, ok = 1;
	struct dirent *de;
	while ((de = readdir(d)) && n < 4096) {
		for (int i = 0; i < n; i++)
			if (!strcmp(names[i], de->d_name)) {
				err(w, "shared name '%s' listed twice on mount %d", de->d_name, m + 1);
				ok = 0;
			}
		memcpy(names[n++], de->d_name, strlen(de->d_name) + 1);
	}
	closedir(d);
	return ok;
}

static int worker(int w, double seconds)
{
	struct own o[NF];
	static unsigned char b[MAXF];
	char sp[4200], sq[4200];
	memset(o, 0, sizeof(o));
	seed ^= (unsigned long long)(w + 1) * 0x9e3779b97f4a7c15ULL;
	long ops = 0;
	unsigned gen = 0;
	unsigned long long end = now_ns() + (unsigned long long)(seconds * 1e9);
	while (now_ns() < end) {
		for (int burst = 0; burst < 20; burst++, ops++) {
			int m = (int)rnd_below(&seed, 2), s = (int)rnd_below(&seed, NF);
			unsigned long r = rnd_below(&seed, 100);
			if (r < 30) { /* (re)write own file, sometimes via write-to-temp + rename */
				o[s].gen = ++gen;
				o[s].len = rnd_below(&seed, MAXF);
				content(b, o[s].len, w, o[s].gen);
				if (r < 10) {
					snprintf(sp, sizeof(sp), "%s/own.%d/sub", dir[m], w);
					mkdir(sp, 0755);
					snprintf(sp, sizeof(sp), "%s/own.%d/sub/tmp", dir[m], w);
					if (write_file(sp, b, o[s].len, O_TRUNC, 0644) < 0 ||
					    rename(sp, opath(m, w, s)) < 0)
						err(w, "write+rename f%02d: %s", s, strerror(errno));
					snprintf(o[s].how, sizeof(o[s].how), "op %ld: sub/tmp written and renamed on mount %d", ops, m + 1);
				} else {
					if (write_file(opath(m, w, s), b, o[s].len, O_TRUNC, 0644) < 0)
						err(w, "write f%02d: %s", s, strerror(errno));
					snprintf(o[s].how, sizeof(o[s].how), "op %ld: %s on mount %d", ops,
						 o[s].exists ? "rewritten" : "created", m + 1);
				}
				o[s].exists = 1;
			} else if (r < 40) { /* rename own file to a free slot */
				int t = (int)rnd_below(&seed, NF);
				if (!o[s].exists || o[t].exists)
					continue;
				if (rename(opath(m, w, s), opath(m, w, t)) < 0)
					err(w, "rename f%02d f%02d: %s", s, t, strerror(errno));
				o[t] = o[s];
				snprintf(o[t].how + strlen(o[t].how), sizeof(o[t].how) - strlen(o[t].how), "; f%02d->f%02d on %d", s, t, m + 1);
				o[s].exists = 0;
			} else if (r < 48) { /* unlink own */
				if (!o[s].exists)
					continue;
				if (unlink(opath(m, w, s)) < 0)
					err(w, "unlink f%02d: %s", s, strerror(errno));
				o[s].exists = 0;
			} else if (r < 68) { /* read back through a random mount */
				check_file(m, w, s, &o[s]);
			} else if (r < 73) {
				check_listing(m, w, o);
			} else if (r < 83) { /* shared: create */
				snprintf(sp, sizeof(sp), "%s/shared/s%d.%d", dir[m], w, (int)rnd_below(&seed, 64));
				if (write_file(sp, b, rnd_below(&seed, 512), O_TRUNC, 0644) < 0 && errno != ENOENT)
					err(w, "shared create: %s", strerror(errno));
			} else if (r < 90) { /* shared: rename someone's name to mine */
				snprintf(sp, sizeof(sp), "%s/shared/s%d.%d", dir[m], (int)rnd_below(&seed, 8),
					 (int)rnd_below(&seed, 64));
				snprintf(sq, sizeof(sq), "%s/shared/s%d.%d", dir[m], w, (int)rnd_below(&seed, 64));
				if (rename(sp, sq) < 0 && errno != ENOENT)
					err(w, "shared rename: %s", strerror(errno));
			} else if (r < 96) { /* shared: unlink anything */
				snprintf(sp, sizeof(sp), "%s/shared/s%d.%d", dir[m], (int)rnd_below(&seed, 8),
					 (int)rnd_below(&seed, 64));
				if (unlink(sp) < 0 && errno != ENOENT)
					err(w, "shared unlink: %s", strerror(errno));
			} else {
				shared_listing(m, w);
			}
		}
	}
	int ok = 1;
	for (int m = 0; m < 2; m++) {
		ok &= check_listing(m, w, o);
		for (int s = 0; s < NF; s++)
			ok &= check_file(m, w, s, &o[s]);
	}
	tap_check(ok, "stress: worker %d: %ld ops; own files have the last written content on both mounts", w, ops);
	tap_check(errs == 0, "stress: worker %d: no unexpected errors or mismatches during the run (%d)", w, errs);
	return 0;
}

static int cmpstr(const void *a, const void *b);
static int listing_of(const char *p, char ***out)
{
	DIR *d = opendir(p);
	if (!d)
		return -1;
	int n = 0, cap = 256;
	char **v = malloc(sizeof(char *) * (size_t)cap);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (n == cap)
			v = realloc(v, sizeof(char *) * (size_t)(cap *= 2));
		v[n++] = strdup(de->d_name);
	}
	closedir(d);
	*out = v;
	return n;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int same_listing(const char *sub)
{
	char a[4200], b[4200];
	char **x = NULL, **y = NULL;
	snprintf(a, sizeof(a), "%s/%s", dir[0], sub);
	snprintf(b, sizeof(b), "%s/%s", dir[1], sub);
	int n = listing_of(a, &x), m = listing_of(b, &y), ok = n >= 0 && n == m;
	if (ok) {
		qsort(x, (size_t)n, sizeof(char *), cmpstr);
		qsort(y, (size_t)n, sizeof(char *), cmpstr);
		for (int i = 0; i < n; i++) {
			if (strcmp(x[i], y[i]))
				ok = 0;
			if (i && !strcmp(x[i], x[i - 1]))
				ok = 0;
		}
	}
	if (!ok)
		tap_diag("%s: %d entries on mount 1, %d on mount 2 (or a difference/duplicate)", sub, n, m);
	return ok;
}

int main(int argc, char **argv)
{
	int procs = 4, i;
	double seconds = 20, race = 4;
	seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 16);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--procs") && i + 1 < argc)
			procs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--race") && i + 1 < argc)
			race = atof(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--local"))
			break;
	}
	if (argc - i != 2 || procs < 1 || procs > 8) {
		fprintf(stderr, "usage: stress [--procs 1..8] [--seconds S] [--race S] [--seed X] DIR1 DIR2\n");
		return 2;
	}
	dir[0] = argv[i];
	dir[1] = argv[i + 1];
	tap_init();
	tap_diag("stress seed %llu, %d workers, %.0f s, races %.0f s", seed, procs, seconds, race);
	if (race > 0)
		stress_race(dir[0], dir[1], race, seed);
	if (seconds <= 0)
		return tap_done();
	char p[4200];
	snprintf(p, sizeof(p), "%s/shared", dir[0]);
	mkdir(p, 0755);
	for (int w = 0; w < procs; w++) {
		snprintf(p, sizeof(p), "%s/own.%d", dir[w & 1], w);
		mkdir(p, 0755);
	}
	pid_t pid[8];
	for (int w = 0; w < procs; w++) {
		pid[w] = fork();
		if (pid[w] == 0)
			_exit(worker(w, seconds));
	}
	int st_ok = 1;
	for (int w = 0; w < procs; w++)
		if (wait_child(pid[w]) != 0)
			st_ok = 0;
	tap_check(st_ok, "stress: all workers exited normally");
	tap_check(same_listing("shared"), "stress: shared directory lists the same names on both mounts");
	int own_ok = 1;
	for (int w = 0; w < procs; w++) {
		snprintf(p, sizeof(p), "own.%d", w);
		own_ok &= same_listing(p);
	}
	tap_check(own_ok, "stress: every worker directory lists the same names on both mounts");
	return tap_done();
}
