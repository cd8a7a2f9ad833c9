/* seal_work: the workload of the seal group (seal.sh), run through a
 * relay that spoils one message of the connection.
 *
 *   seal_work write DIR MANIFEST [-k FILES] [-l LINES] [-s MAXSIZE] [-t TICK_MS] [-S SEED]
 *       makes DIR, then FILES (3) files of random content, up to MAXSIZE
 *       (24 KiB) each (created with O_EXCL, written, fsync'd; every third
 *       from the third chmod'ed to 0600), LINES (4) numbered lines
 *       appended to DIR/log (O_APPEND, one write and an fdatasync each);
 *       then renames every third file from the first (f.0 again into a
 *       subdirectory), unlinks every third from the second, makes and
 *       removes a directory, and fsyncs DIR. What must now be there
 *       (names, sizes, checksums, modes) and what must not goes to
 *       MANIFEST. A ticker thread
 *       creates DIR/tick/t.N every TICK_MS (500) meanwhile: a dropped or
 *       held-back message is only noticed when the next record in its
 *       direction arrives, and a call waiting for its own reply sends
 *       none. TAP: every operation succeeded (a hard mount waits out
 *       the reconnect; a non-idempotent call applied twice fails with
 *       EEXIST or ENOENT), the ticker's too.
 *   seal_work check DIR MANIFEST LABEL
 *       TAP, names starting with LABEL: every file of MANIFEST has its
 *       size, checksum and mode; every name gone is gone; the log holds
 *       each line once, in order.
 */
#include "tap.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_LEN 64

struct entry {
	char name[NAME_LEN];
	size_t size;
	uint64_t sum;
	unsigned int mode;
	int gone;
};

static struct entry *ents;
static int nents;

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static struct entry *find(const char *name)
{
	for (int i = 0; i < nents; i++)
		if (!ents[i].gone && !strcmp(ents[i].name, name))
			return &ents[i];
	return NULL;
}

/* ---- the ticker ---------------------------------------------------------- */
static char tick_dir[4096];
static unsigned int tick_ms = 500;
static int tick_stop, tick_n, tick_err, tick_errno;

static void *ticker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&tick_stop, __ATOMIC_SEQ_CST)) {
		char path[4200];	/* not pjoin: its ring is the main thread's */
		int fd;

		snprintf(path, sizeof(path), "%s/t.%d", tick_dir, tick_n);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0) {
			if (!tick_err++)
				tick_errno = errno;
		} else {
			close(fd);
		}
		tick_n++;
		/* in slices: the workload's end must not wait a whole tick */
		for (unsigned int t = 0; t < tick_ms &&
		     !__atomic_load_n(&tick_stop, __ATOMIC_SEQ_CST); t += 10)
			usleep(10000);
	}
	return NULL;
}

/* ---- write ------------------------------------------------------------- */
static const char *failed_op;
static int failed_errno;
static unsigned long long worst_ns;
static char worst_op[NAME_LEN + 16];

/* records the first failure; every call is timed: the longest shows the
 * reconnect */
static int op(long rc, const char *what, const char *name)
{
	static unsigned long long t0;
	static char buf[NAME_LEN + 32];
	unsigned long long t = now_ns();

	if (t0 && t - t0 > worst_ns) {
		worst_ns = t - t0;
		snprintf(worst_op, sizeof(worst_op), "%s %s", what, name);
	}
	t0 = t;
	if (rc >= 0)
		return 0;
	if (!failed_op) {
		snprintf(buf, sizeof(buf), "%s %s", what, name);
		failed_op = buf;
		failed_errno = errno;
	}
	return -1;
}

static int write_manifest(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	for (int i = 0; i < nents; i++) {
		if (ents[i].gone)
			fprintf(f, "gone %s\n", ents[i].name);
		else if (!strcmp(ents[i].name, "log"))
			fprintf(f, "log %s %zu\n", ents[i].name, ents[i].size);
		else
			fprintf(f, "file %s %zu %016llx %o\n", ents[i].name, ents[i].size,
				(unsigned long long)ents[i].sum, ents[i].mode);
	}
	return fclose(f);
}

static struct entry *add(const char *name)
{
	struct entry *e = &ents[nents++];

	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	return e;
}

static int renames, unlinks, chmods;

/* f.I: random content, O_EXCL, written and fsync'd; every third from
 * the third chmod'ed to 0600 */
static int make_file(const char *dir, int i, unsigned char *buf,
		     size_t maxsize, unsigned long long *seed)
{
	size_t size = 1 + rnd_below(seed, maxsize);
	char name[NAME_LEN];
	struct entry *e;
	int fd;

	for (size_t j = 0; j < size; j++)
		buf[j] = (unsigned char)rnd_next(seed);
	snprintf(name, sizeof(name), "f.%d", i);
	fd = open(pjoin(dir, name), O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (op(fd, "create", name))
		return -1;
	if (op(write(fd, buf, size) == (ssize_t)size ? 0 : -1, "write", name) ||
	    op(fsync(fd), "fsync", name)) {
		close(fd);
		return -1;
	}
	if (op(close(fd), "close", name))
		return -1;
	e = add(name);
	e->size = size;
	e->sum = fnv1a(buf, size);
	e->mode = 0644;
	if (i % 3 == 2) {
		if (op(chmod(pjoin(dir, name), 0600), "chmod", name))
			return -1;
		e->mode = 0600;
		chmods++;
	}
	return 0;
}

/* the manifest's entry OLD is now NEW */
static void moved(const char *old, const char *new)
{
	struct entry *e = find(old), *n = add(new);

	*n = *e;
	snprintf(n->name, NAME_LEN, "%s", new);
	e->gone = 1;
	renames++;
}

/* every third file from the first renamed (f.0 then on into sub/), from
 * the second unlinked; a directory made and removed */
static int move_names(const char *dir, int files)
{
	char name[NAME_LEN], name2[NAME_LEN];
	int i;

	for (i = 0; i < files; i++) {
		snprintf(name, sizeof(name), "f.%d", i);
		if (i % 3 == 0) {
			snprintf(name2, sizeof(name2), "r.%d", i);
			if (op(rename(pjoin(dir, name), pjoin(dir, name2)), "rename", name))
				return -1;
			moved(name, name2);
		} else if (i % 3 == 1) {
			if (op(unlink(pjoin(dir, name)), "unlink", name))
				return -1;
			find(name)->gone = 1;
			unlinks++;
		}
	}
	if (op(mkdir(pjoin(dir, "sub"), 0755), "mkdir", "sub") ||
	    op(mkdir(pjoin(dir, "empty"), 0755), "mkdir", "empty") ||
	    op(rmdir(pjoin(dir, "empty")), "rmdir", "empty"))
		return -1;
	add("empty")->gone = 1;
	if (op(rename(pjoin(dir, "r.0"), pjoin(dir, "sub/r.0")), "rename", "r.0"))
		return -1;
	moved("r.0", "sub/r.0");
	return 0;
}

static int do_write(const char *dir, const char *manifest, int files, int lines,
		    size_t maxsize, unsigned long long seed)
{
	unsigned char *buf = malloc(maxsize);
	unsigned long long t_start = now_ns();
	int logfd = -1, dfd, i, n, ticking = 0;
	char line[64];
	pthread_t th;

	ents = calloc((size_t)(2 * files + lines + 8), sizeof(*ents));
	if (!buf || !ents)
		die("out of memory");
	umask(022);
	if (op(mkdir(dir, 0755), "mkdir", dir) ||
	    op(mkdir(pjoin(dir, "tick"), 0755), "mkdir", "tick"))
		goto out;
	snprintf(tick_dir, sizeof(tick_dir), "%s/tick", dir);
	if (!pthread_create(&th, NULL, ticker, NULL))
		ticking = 1;
	logfd = open(pjoin(dir, "log"), O_CREAT | O_EXCL | O_WRONLY | O_APPEND, 0644);
	if (op(logfd, "create", "log"))
		goto out;
	for (i = 0; i < lines; i++) {
		if (i < files && make_file(dir, i, buf, maxsize, &seed))
			goto out;
		n = snprintf(line, sizeof(line), "line %d\n", i);
		if (op(write(logfd, line, (size_t)n) == n ? 0 : -1, "append", line) ||
		    op(fdatasync(logfd), "fdatasync", "log"))
			goto out;
	}
	add("log")->size = (size_t)lines;
	if (move_names(dir, files))
		goto out;
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (op(dfd, "open", dir))
		goto out;
	op(fsync(dfd), "fsync", dir);
	close(dfd);
out:
	if (logfd >= 0)
		close(logfd);
	if (ticking) {
		__atomic_store_n(&tick_stop, 1, __ATOMIC_SEQ_CST);
		pthread_join(th, NULL);
	}
	if (write_manifest(manifest))
		die("write %s", manifest);
	if (!tap_check(!failed_op, "workload: every operation succeeded (O_EXCL creates, writes, fsyncs, O_APPEND appends with fdatasync, chmod, renames, unlink, mkdir, rmdir, fsync of the directory)"))
		tap_diag("first failure: %s: %s", failed_op, strerror(failed_errno));
	tap_diag("%d files, %d appends, %d chmods, %d renames, %d unlinks in %.1f s; the longest step %.1f s (ending with %s)",
		 files, lines, chmods, renames, unlinks,
		 (double)(now_ns() - t_start) / 1e9, (double)worst_ns / 1e9, worst_op);
	if (!tap_check(!tick_err, "workload: the ticker's creates meanwhile all succeeded"))
		tap_diag("%d of %d failed, the first with %s", tick_err, tick_n, strerror(tick_errno));
	else
		tap_diag("files the ticker made: %d", tick_n);
	free(buf);
	return tap_done();
}

/* ---- check ------------------------------------------------------------- */
/* each "line N" once for N in 0..lines-1, increasing: a repeat is an
 * append applied twice, a gap one lost */
static int check_log(const char *dir, int lines, const char *label)
{
	size_t cap = (size_t)lines * 16 + 4096;
	char *buf = malloc(cap + 1), *p, *nl;
	int *seen = calloc((size_t)lines + 1, sizeof(int));
	int bad = 0, last = -1, k = 0, v;
	ssize_t n;

	if (!buf || !seen)
		die("out of memory");
	n = read_file(pjoin(dir, "log"), buf, cap);
	if (n < 0) {
		tap_diag("%s: read log: %s", label, strerror(errno));
		bad++;
		n = 0;
	}
	buf[n] = 0;
	for (p = buf; *p; p = nl + 1, k++) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		if (sscanf(p, "line %d", &v) != 1 || v < 0 || v >= lines) {
			if (bad++ < 5)
				tap_diag("%s: log line %d is '%.40s'", label, k, p);
		} else {
			if (v <= last && bad++ < 5)
				tap_diag("%s: log line %d is 'line %d' after 'line %d'", label, k, v, last);
			seen[v]++;
			last = v;
		}
		if (!nl) {
			if (bad++ < 5)
				tap_diag("%s: the log ends in a partial line", label);
			break;
		}
	}
	for (v = 0; v < lines; v++)
		if (seen[v] != 1 && bad++ < 10)
			tap_diag("%s: 'line %d' is in the log %d times", label, v, seen[v]);
	free(buf);
	free(seen);
	return tap_check(!bad, "%s: the append log holds lines 0..%d, each once, in order",
			 label, lines - 1);
}

static int do_check(const char *dir, const char *manifest, const char *label)
{
	FILE *f = fopen(manifest, "r");
	char kind[16], name[NAME_LEN];
	int nfiles = 0, ngone = 0, badf = 0, badg = 0, lines = -1;
	size_t size;
	unsigned long long sum;
	unsigned int mode;
	unsigned char *buf;
	struct stat st;

	if (!f)
		die("open %s", manifest);
	while (fscanf(f, "%15s %63s", kind, name) == 2) {
		if (!strcmp(kind, "gone")) {
			ngone++;
			if (lstat(pjoin(dir, name), &st) == 0 || errno != ENOENT) {
				badg++;
				tap_diag("%s: %s should be gone: %s", label, name,
					 errno == ENOENT ? "it is there" : strerror(errno));
			}
		} else if (!strcmp(kind, "log") && fscanf(f, "%zu", &size) == 1) {
			lines = (int)size;
		} else if (!strcmp(kind, "file") &&
			   fscanf(f, "%zu %llx %o", &size, &sum, &mode) == 3) {
			ssize_t n;

			nfiles++;
			buf = malloc(size + 1);
			if (!buf)
				die("out of memory");
			n = read_file(pjoin(dir, name), buf, size + 1);
			if (n < 0) {
				badf++;
				tap_diag("%s: %s: %s", label, name, strerror(errno));
			} else if (n != (ssize_t)size || fnv1a(buf, size) != sum) {
				badf++;
				tap_diag("%s: %s: read %zd bytes, checksum %016llx; wrote %zu, %016llx",
					 label, name, n, (unsigned long long)fnv1a(buf, (size_t)n),
					 size, sum);
			} else if (stat(pjoin(dir, name), &st) || (st.st_mode & 07777) != mode) {
				badf++;
				tap_diag("%s: %s: mode %o, expected %o", label, name,
					 st.st_mode & 07777, mode);
			}
			free(buf);
		} else {
			die("%s: cannot parse '%s %s'", manifest, kind, name);
		}
	}
	fclose(f);
	tap_check(nfiles > 0 && !badf,
		  "%s: each of the %d files has the size, checksum and mode written", label, nfiles);
	tap_check(!badg, "%s: the %d names renamed or removed are gone (nothing applied twice)",
		  label, ngone);
	if (lines < 0) {
		tap_check(0, "%s: the append log holds each line once, in order", label);
		tap_diag("the manifest has no log (the workload stopped early)");
	} else {
		check_log(dir, lines, label);
	}
	return tap_done();
}

static void usage(void)
{
	fprintf(stderr,
		"usage: seal_work write DIR MANIFEST [-k FILES] [-l LINES] [-s MAXSIZE] [-t TICK_MS] [-S SEED]\n"
		"       seal_work check DIR MANIFEST LABEL\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int files = 3, lines = 4, opt;
	unsigned long maxsize = 24576;
	unsigned long long seed;

	if (argc < 4)
		usage();
	tap_init();
	if (!strcmp(argv[1], "check")) {
		if (argc != 5)
			usage();
		return do_check(argv[2], argv[3], argv[4]);
	}
	if (strcmp(argv[1], "write"))
		usage();
	seed = now_ns() ^ ((unsigned long long)getpid() << 32);
	optind = 4;
	while ((opt = getopt(argc, argv, "k:l:s:t:S:")) != -1) {
		switch (opt) {
		case 'k': files = atoi(optarg); break;
		case 'l': lines = atoi(optarg); break;
		case 's': maxsize = strtoul(optarg, NULL, 0); break;
		case 't': tick_ms = (unsigned int)atoi(optarg); break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (files < 1 || files > 1000 || lines < files || lines > 100000 ||
	    maxsize < 1 || maxsize > (64UL << 20) || tick_ms < 10 || optind != argc)
		usage();
	if (!seed)
		seed = 1;
	tap_diag("seed %llu", seed);
	return do_write(argv[2], argv[3], files, lines, maxsize, seed);
}
