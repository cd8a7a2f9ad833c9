/* coherence: randomized cross-client visibility. DIR1..DIRn are one
 * directory seen through n clients (mounts). Each trial warms the cache of
 * every client but one (stat + read), changes an object through that one,
 * then checks that every other client sees the change at once: existence,
 * type, mode, size, times, content, directory listing.
 * With --export DIR (the same directory on the server, not through pohmeld)
 * every change is made there instead, and each client must see it within
 * --bound-ms (the documented bound for local changes); the time each took
 * is reported.
 * Which clients observe a trial (are warmed before the change and checked
 * after it): --observers all (every client but the writer), one (one at
 * random), some (a random non-empty subset; the default). A client left
 * out keeps what it cached earlier, and must drop it when recalled.
 * Usage: coherence [--trials N] [--seed S] [--observers all|one|some]
 *                  [--export DIR [--bound-ms MS]] DIR1 DIR2 [DIR3 DIR4]
 */
#include "tap.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 8
#define MAXSZ 16384

enum kind { NONE, REG, DIR_ };
struct slot {
	enum kind k;
	mode_t mode;
	size_t size;
	unsigned char data[MAXSZ];
};
static struct slot model[SLOTS];
#define MAXCLIENTS 4
/* dir[0..nclients-1]: the clients; dir[nclients]: the export, if given */
static const char *dir[MAXCLIENTS + 1];
static int nclients, exp_view = -1;
static unsigned long long seed, bound_ns = 1000000000ULL;
static int trial, quiet;
enum observers { OBS_SOME, OBS_ALL, OBS_ONE };
static enum observers observers;
static const char *const obsname[] = {"a random subset", "all", "one at random"};
/* export mode: how long each client took to see each change, in us */
static unsigned long *lat;
static size_t nlat;

enum op { OP_WRITE, OP_APPEND, OP_TRUNC, OP_CREATE, OP_UNLINK, OP_RENAME, OP_CHMOD, OP_MKDIR, OP_RMDIR,
	  OP_UTIME, OP_LINKCYCLE, NOPS };
static const char *opname[NOPS] = {"write", "append", "truncate", "create", "unlink", "rename", "chmod",
				   "mkdir", "rmdir", "utimens", "link+unlink"};
static int done[NOPS], bad[NOPS], ndiag;
static int scans, scan_bad;

static const char *vname(int m)
{
	static char b[4][32];
	static int i;
	char *p = b[i++ & 3];

	if (m == exp_view)
		snprintf(p, sizeof(b[0]), "the export");
	else
		snprintf(p, sizeof(b[0]), "mount %d", m + 1);
	return p;
}

static char *path(int m, int s)
{
	static char b[4][4200];
	static int i;
	char *p = b[i++ & 3];
	snprintf(p, sizeof(b[0]), "%s/n%d", dir[m], s);
	return p;
}

static void complain(int op, int s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void complain(int op, int s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (quiet)
		return;
	if (ndiag++ < 20)
		tap_diag("trial %d op %s slot n%d: %s", trial, op >= 0 ? opname[op] : "scan", s, msg);
}

/* warm the cache of mount m for slot s */
static void warm(int m, int s)
{
	struct stat st;
	unsigned char buf[MAXSZ];
	if (stat(path(m, s), &st) == 0 && S_ISREG(st.st_mode))
		read_file(path(m, s), buf, sizeof(buf));
}

/* does mount m agree with the model for slot s, and with stat a from the other mount */
static int verify(int m, int s, int op, const struct stat *a)
{
	struct stat st;
	struct slot *sl = &model[s];
	int rc = lstat(path(m, s), &st);
	if (sl->k == NONE) {
		if (rc == 0 || errno != ENOENT) {
			complain(op, s, "should not exist on %s", vname(m));
			return 0;
		}
		return 1;
	}
	if (rc < 0) {
		complain(op, s, "missing on %s: %s", vname(m), strerror(errno));
		return 0;
	}
	if ((sl->k == REG && !S_ISREG(st.st_mode)) || (sl->k == DIR_ && !S_ISDIR(st.st_mode)) ||
	    (st.st_mode & 07777) != sl->mode) {
		complain(op, s, "%s: mode %o, expected kind %d mode %o", vname(m), st.st_mode, sl->k, sl->mode);
		return 0;
	}
	/* In export mode a is the export's stat: its inode number is the
	 * export's, a client's is pohmeld's object id (never the same). */
	if (a && ((exp_view < 0 && a->st_ino != st.st_ino) || a->st_mtim.tv_sec != st.st_mtim.tv_sec ||
		  a->st_mtim.tv_nsec != st.st_mtim.tv_nsec || a->st_ctim.tv_sec != st.st_ctim.tv_sec ||
		  a->st_ctim.tv_nsec != st.st_ctim.tv_nsec || a->st_nlink != st.st_nlink)) {
		complain(op, s, "%s: stat differs from the writer's (ino %llu/%llu mtime %lld.%09ld/%lld.%09ld nlink %lu/%lu)",
			 vname(m), (unsigned long long)a->st_ino, (unsigned long long)st.st_ino, (long long)a->st_mtim.tv_sec,
			 a->st_mtim.tv_nsec, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			 (unsigned long)a->st_nlink, (unsigned long)st.st_nlink);
		return 0;
	}
	if (sl->k == REG) {
		if ((size_t)st.st_size != sl->size) {
			complain(op, s, "%s: size %lld, expected %zu", vname(m), (long long)st.st_size, sl->size);
			return 0;
		}
		unsigned char buf[MAXSZ + 1];
		ssize_t n = read_file(path(m, s), buf, sizeof(buf));
		if (n != (ssize_t)sl->size || memcmp(buf, sl->data, sl->size)) {
			complain(op, s, "%s: content differs (read %zd bytes, expected %zu)", vname(m), n, sl->size);
			return 0;
		}
	}
	return 1;
}

static int scan(int m)
{
	int seen[SLOTS] = {0}, ok = 1;
	DIR *d = opendir(dir[m]);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		int s;
		if (de->d_name[0] == 'n' && sscanf(de->d_name + 1, "%d", &s) == 1 && s >= 0 && s < SLOTS)
			seen[s]++;
		else if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			complain(-1, -1, "unexpected name '%s' on %s", de->d_name, vname(m));
			ok = 0;
		}
	}
	if (d)
		closedir(d);
	for (int s = 0; s < SLOTS; s++) {
		if (seen[s] != (model[s].k != NONE)) {
			complain(-1, s, "listed %d times on %s", seen[s], vname(m));
			ok = 0;
		}
		if (!verify(m, s, -1, NULL))
			ok = 0;
	}
	return ok;
}

static int pick(enum kind k)
{
	int c[SLOTS], n = 0;
	for (int s = 0; s < SLOTS; s++)
		if (model[s].k == k)
			c[n++] = s;
	return n ? c[rnd_below(&seed, (unsigned long)n)] : -1;
}

static void rnd_fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)rnd_next(&seed);
}

static const mode_t modes[] = {0600, 0644, 0640, 0604, 0755, 0700};

/* perform op through mount a; returns target slot or -1 if not applicable */
static int do_op(int op, int a, int *s2)
{
	int s = -1, fd;
	*s2 = -1;
	struct slot *sl;
	switch (op) {
	case OP_WRITE:
	case OP_APPEND:
		if ((s = pick(REG)) < 0)
			return -1;
		sl = &model[s];
		size_t len = 1 + rnd_below(&seed, 4096);
		size_t off = op == OP_APPEND ? sl->size : rnd_below(&seed, MAXSZ - len);
		if (off + len > MAXSZ)
			return -1;
		unsigned char buf[4096];
		rnd_fill(buf, len);
		fd = open(path(a, s), O_WRONLY | (op == OP_APPEND ? O_APPEND : 0));
		if (fd < 0)
			complain(op, s, "open for writing on %s: %s", vname(a), strerror(errno));
		else if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
			complain(op, s, "write on %s: %s", vname(a), strerror(errno));
		if (fd >= 0)
			close(fd);
		if (off > sl->size)
			memset(sl->data + sl->size, 0, off - sl->size);
		memcpy(sl->data + off, buf, len);
		if (off + len > sl->size)
			sl->size = off + len;
		return s;
	case OP_TRUNC:
		if ((s = pick(REG)) < 0)
			return -1;
		sl = &model[s];
		size_t ns = rnd_below(&seed, MAXSZ);
		if (truncate(path(a, s), (off_t)ns) < 0)
			complain(op, s, "truncate: %s", strerror(errno));
		if (ns > sl->size)
			memset(sl->data + sl->size, 0, ns - sl->size);
		sl->size = ns;
		return s;
	case OP_CREATE:
		if ((s = pick(NONE)) < 0)
			return -1;
		sl = &model[s];
		sl->k = REG;
		sl->mode = modes[rnd_below(&seed, 4)];
		sl->size = rnd_below(&seed, 8192);
		rnd_fill(sl->data, sl->size);
		if (write_file(path(a, s), sl->data, sl->size, O_EXCL, sl->mode) < 0)
			complain(op, s, "create: %s", strerror(errno));
		return s;
	case OP_UNLINK:
		if ((s = pick(REG)) < 0)
			return -1;
		if (unlink(path(a, s)) < 0)
			complain(op, s, "unlink: %s", strerror(errno));
		model[s].k = NONE;
		return s;
	case OP_RENAME: {
		s = (int)rnd_below(&seed, SLOTS);
		int t = (int)rnd_below(&seed, SLOTS);
		if (s == t || model[s].k == NONE)
			return -1;
		if (model[t].k != NONE && model[t].k != model[s].k)
			return -1;
		if (rename(path(a, s), path(a, t)) < 0)
			complain(op, s, "rename to n%d: %s", t, strerror(errno));
		model[t] = model[s];
		model[s].k = NONE;
		*s2 = t;
		return s;
	}
	case OP_CHMOD:
		s = (int)rnd_below(&seed, SLOTS);
		if (model[s].k == NONE)
			return -1;
		model[s].mode = modes[rnd_below(&seed, 6)];
		if (model[s].k == DIR_)
			model[s].mode |= 0700;
		if (chmod(path(a, s), model[s].mode) < 0)
			complain(op, s, "chmod: %s", strerror(errno));
		return s;
	case OP_MKDIR:
		if ((s = pick(NONE)) < 0)
			return -1;
		model[s].k = DIR_;
		model[s].mode = 0755;
		if (mkdir(path(a, s), 0755) < 0)
			complain(op, s, "mkdir: %s", strerror(errno));
		return s;
	case OP_RMDIR:
		if ((s = pick(DIR_)) < 0)
			return -1;
		if (rmdir(path(a, s)) < 0)
			complain(op, s, "rmdir: %s", strerror(errno));
		model[s].k = NONE;
		return s;
	case OP_UTIME: {
		s = (int)rnd_below(&seed, SLOTS);
		if (model[s].k == NONE)
			return -1;
		struct timespec t[2] = {{(time_t)rnd_below(&seed, 1UL << 33), (long)rnd_below(&seed, 1000000000)},
					{(time_t)rnd_below(&seed, 1UL << 33), (long)rnd_below(&seed, 1000000000)}};
		if (utimensat(AT_FDCWD, path(a, s), t, 0) < 0)
			complain(op, s, "utimensat: %s", strerror(errno));
		return s;
	}
	case OP_LINKCYCLE: {
		/* link to a free slot, then unlink the old name: nlink goes 2 then 1 */
		s = pick(REG);
		int t = pick(NONE);
		if (s < 0 || t < 0)
			return -1;
		if (link(path(a, s), path(a, t)) < 0 || unlink(path(a, s)) < 0)
			complain(op, s, "link/unlink: %s", strerror(errno));
		model[t] = model[s];
		model[s].k = NONE;
		*s2 = t;
		return s;
	}
	}
	return -1;
}

/* Client m agrees with the model for slot s (and with the writer's stat a).
 * Changes through a client must be seen at once; changes in the export
 * within bound_ns of t0, by polling (each miss is quiet but the last). */
static int settle(int m, int s, int op, const struct stat *a, unsigned long long t0)
{
	if (exp_view < 0)
		return verify(m, s, op, a);
	quiet = 1;
	for (;;) {
		int ok = verify(m, s, op, a);
		unsigned long long t = now_ns() - t0;

		if (ok) {
			quiet = 0;
			lat[nlat++] = (unsigned long)(t / 1000);
			return 1;
		}
		if (t > bound_ns) {
			quiet = 0;
			complain(op, s, "%s still differs %.0f ms after the change:", vname(m), t / 1e6);
			return verify(m, s, op, a);
		}
		usleep(2000);
	}
}

static int scan_settled(int m, unsigned long long t0)
{
	if (exp_view < 0)
		return scan(m);
	quiet = 1;
	while (!scan(m) && now_ns() - t0 <= bound_ns)
		usleep(2000);
	quiet = 0;
	return scan(m);
}

static int cmp_ul(const void *x, const void *y)
{
	unsigned long a = *(const unsigned long *)x, b = *(const unsigned long *)y;

	return a < b ? -1 : a > b;
}

/* The clients that observe a trial whose writer is a, as a bit mask. */
static unsigned int pick_observers(int a)
{
	unsigned int all = ((1U << nclients) - 1) & ~(1U << a), obs;
	int n = __builtin_popcount(all), k;

	switch (observers) {
	case OBS_ALL:
		return all;
	case OBS_ONE:
		k = (int)rnd_below(&seed, (unsigned long)n);
		for (int m = 0; m < nclients; m++)
			if ((all & 1U << m) && k-- == 0)
				return 1U << m;
		return all;
	case OBS_SOME:
		break;
	}
	do
		obs = all & (unsigned int)rnd_next(&seed);
	while (!obs);
	return obs;
}

static void usage(void)
{
	fprintf(stderr, "usage: coherence [--trials N] [--seed S] [--observers all|one|some] [--export DIR [--bound-ms MS]] DIR1 DIR2 [DIR3 DIR4]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int trials = 500, i;
	const char *export = NULL;

	seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--trials") && i + 1 < argc)
			trials = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--export") && i + 1 < argc)
			export = argv[++i];
		else if (!strcmp(argv[i], "--one-observer"))
			observers = OBS_ONE;
		else if (!strcmp(argv[i], "--observers") && i + 1 < argc) {
			const char *o = argv[++i];

			if (!strcmp(o, "all"))
				observers = OBS_ALL;
			else if (!strcmp(o, "one"))
				observers = OBS_ONE;
			else if (!strcmp(o, "some"))
				observers = OBS_SOME;
			else
				usage();
		}
		else if (!strcmp(argv[i], "--bound-ms") && i + 1 < argc)
			bound_ns = strtoull(argv[++i], NULL, 0) * 1000000ULL;
		else if (strcmp(argv[i], "--local"))
			usage();
	}
	nclients = argc - i;
	if (nclients < (export ? 1 : 2) || nclients > MAXCLIENTS || trials < 1)
		usage();
	for (int m = 0; m < nclients; m++)
		dir[m] = argv[i + m];
	if (export) {
		exp_view = nclients;
		dir[exp_view] = export;
		lat = calloc((size_t)trials * 2 * (size_t)nclients, sizeof(*lat));
		if (!lat)
			die("out of memory");
	}
	if (!seed)
		seed = 1;
	tap_init();
	umask(0);
	tap_diag("seed %llu, %d trials, %d clients%s%s%s (rerun: coherence --seed %llu --trials %d ...)", seed, trials,
		 nclients, export ? ", changes made in the export" : "",
		 ", observers: ", obsname[observers], seed, trials);
	unsigned long long t0 = now_ns();
	for (trial = 0; trial < trials; trial++) {
		int op = (int)rnd_below(&seed, NOPS), s2;
		int a = export ? exp_view : (int)rnd_below(&seed, (unsigned long)nclients);
		unsigned int obs = pick_observers(a);

		/* warm the observers' caches of every slot the op may touch */
		for (int m = 0; m < nclients; m++)
			for (int s = 0; (obs & 1U << m) && s < SLOTS; s++)
				warm(m, s);
		int s = do_op(op, a, &s2);
		if (s < 0) {
			trial--;
			continue;
		}
		unsigned long long tc = now_ns();
		done[op]++;
		struct stat sa;
		int ok = 1;
		int targets[2] = {s, s2};
		for (int k = 0; k < 2; k++) {
			if (targets[k] < 0)
				continue;
			int have = lstat(path(a, targets[k]), &sa) == 0;
			if (!verify(a, targets[k], op, NULL))
				ok = 0;
			for (int m = 0; m < nclients; m++)
				if ((obs & 1U << m) &&
				    !settle(m, targets[k], op, have ? &sa : NULL, tc))
					ok = 0;
		}
		if (!ok)
			bad[op]++;
		if (trial % 50 == 49) {
			int sok = 1;

			scans++;
			for (int m = 0; m <= nclients; m++)
				if (dir[m] && !scan_settled(m, now_ns()))
					sok = 0;
			if (!sok)
				scan_bad++;
		}
	}
	for (int op = 0; op < NOPS; op++)
		tap_check(bad[op] == 0 && done[op] > 0, "coherence: %s: %d trials, %d inconsistent", opname[op],
			  done[op], bad[op]);
	tap_check(scan_bad == 0, "coherence: full listing+content scans on all views: %d, %d inconsistent", scans,
		  scan_bad);
	if (nlat) {
		qsort(lat, nlat, sizeof(*lat), cmp_ul);
		tap_diag("changes in the export seen by a client after: median %.1f ms, 99th percentile %.1f ms, max %.1f ms (%zu observations, bound %llu ms)",
			 lat[nlat / 2] / 1e3, lat[nlat * 99 / 100] / 1e3, lat[nlat - 1] / 1e3, nlat,
			 bound_ns / 1000000ULL);
	}
	tap_diag("%d trials in %.1f s", trials, (now_ns() - t0) / 1e9);
	free(lat);
	return tap_done();
}
