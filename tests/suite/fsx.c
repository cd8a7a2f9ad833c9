/* fsx: random-operation file exerciser checked against an in-memory model.
 * Ops: write, read, mmap read, shared mmap write (+msync), truncate,
 * fallocate (allocate / keep-size / punch hole / zero range; a mode the fs
 * refuses with EOPNOTSUPP is dropped), occasional close+reopen, and reads
 * through a second mount (--other). Most ops touch a file < 256 KiB.
 * Usage: fsx [--ops N] [--seed S] [--maxlen BYTES] [--other PATH2]
 *            [--save MODELFILE] [--verify-every N] PATH
 * --save writes the expected final content to MODELFILE (for re-checks after
 * drop_caches or a remount: cmp MODELFILE PATH).
 */
#include "tap.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned char *model, *buf;
static size_t fsize, maxlen = 256 * 1024;
static int fd = -1, ofd = -1;
static const char *fpath, *opath;
static unsigned long long seed, seed0;
static long opno;
static long pagesz;

enum { W, R, MR, MW, TR, FA, RO, XR, NOP };
static const char *opn[NOP] = {"write", "read", "mapread", "mapwrite", "truncate", "fallocate", "reopen",
			       "read-other"};
static long count[NOP];
static unsigned long long op_ns[NOP];
/* one long-lived shared mapping of the whole range (most map ops use it;
 * some map a fresh window); stores into it are msync'd before anything reads
 * through the other mount */
static unsigned char *map;
static int map_dirty;

#define LOGN 32
struct logent {
	long n;
	int op, mode;
	size_t off, len, size_after;
};
static struct logent oplog[LOGN];

static void logop(int op, int mode, size_t off, size_t len)
{
	struct logent *e = &oplog[opno % LOGN];
	e->n = opno;
	e->op = op;
	e->mode = mode;
	e->off = off;
	e->len = len;
	e->size_after = fsize;
}

static void dump_log(void)
{
	tap_diag("last operations (seed %llu):", seed0);
	for (long i = opno - LOGN + 1; i <= opno; i++) {
		if (i < 0)
			continue;
		struct logent *e = &oplog[i % LOGN];
		tap_diag("  #%ld %s mode %d off %zu len %zu -> size %zu", e->n, opn[e->op], e->mode, e->off, e->len,
			 e->size_after);
	}
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tap_check(0, "fsx: %ld ops without a mismatch", opno);
	tap_diag("op #%ld: %s", opno, msg);
	dump_log();
	exit(tap_done());
}

static void compare(const unsigned char *got, size_t off, size_t len, const char *how)
{
	if (!memcmp(got, model + off, len))
		return;
	size_t i = 0;
	while (got[i] == model[off + i])
		i++;
	fail("%s mismatch at offset %zu (range %zu+%zu): got 0x%02x expected 0x%02x", how, off + i, off, len,
	     got[i], model[off + i]);
}

static void check_size(int f, const char *how)
{
	struct stat st;
	if (fstat(f, &st) < 0)
		fail("fstat: %s", strerror(errno));
	if ((size_t)st.st_size != fsize)
		fail("%s: size %lld, expected %zu", how, (long long)st.st_size, fsize);
}

static void full_check(int f, const char *how)
{
	check_size(f, how);
	ssize_t n = pread(f, buf, fsize + 1, 0);
	if (n != (ssize_t)fsize)
		fail("%s: full read returned %zd of %zu: %s", how, n, fsize, strerror(errno));
	compare(buf, 0, fsize, how);
}

static void map_sync(void)
{
	if (map_dirty && msync(map, maxlen, MS_SYNC) < 0)
		fail("msync: %s", strerror(errno));
	map_dirty = 0;
}

static void do_close(void)
{
	map_sync();
	munmap(map, maxlen + (size_t)pagesz);
	close(fd);
	if (ofd >= 0)
		close(ofd);
}

static void do_open(void)
{
	fd = open(fpath, O_RDWR);
	if (fd < 0)
		fail("open %s: %s", fpath, strerror(errno));
	map = mmap(NULL, maxlen + (size_t)pagesz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		fail("mmap %zu bytes: %s", maxlen, strerror(errno));
	if (opath) {
		ofd = open(opath, O_RDONLY);
		if (ofd < 0)
			fail("open %s: %s", opath, strerror(errno));
	}
}

static size_t rlen(size_t max)
{
	/* mostly small: 1..4096, sometimes up to 64 KiB */
	size_t l = rnd_below(&seed, 8) ? 1 + rnd_below(&seed, 4096) : 1 + rnd_below(&seed, 65536);
	return l > max ? max : l;
}

static void op_write(void)
{
	size_t len = rlen(maxlen), off = rnd_below(&seed, maxlen - len + 1);
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(opno * 7 + i * 13 + 1);
	logop(W, 0, off, len);
	ssize_t n = pwrite(fd, buf, len, (off_t)off);
	if (n != (ssize_t)len)
		fail("pwrite %zu+%zu: %zd %s", off, len, n, strerror(errno));
	if (off > fsize)
		memset(model + fsize, 0, off - fsize);
	memcpy(model + off, buf, len);
	if (off + len > fsize)
		fsize = off + len;
	oplog[opno % LOGN].size_after = fsize;
}

static void op_read(int f, int which)
{
	if (!fsize)
		return;
	size_t off = rnd_below(&seed, fsize), len = rlen(fsize - off);
	logop(which, 0, off, len);
	ssize_t n = pread(f, buf, len + 100, (off_t)off);
	size_t want = fsize - off < len + 100 ? fsize - off : len + 100;
	if (n != (ssize_t)want)
		fail("%s %zu+%zu returned %zd, expected %zu (%s)", opn[which], off, len, n, want, strerror(errno));
	compare(buf, off, want, opn[which]);
}

static void op_mapread(void)
{
	if (!fsize)
		return;
	size_t off = rnd_below(&seed, fsize), len = rlen(fsize - off);
	size_t pg = off & ~(size_t)(pagesz - 1), mlen = len + (off - pg);
	logop(MR, 0, off, len);
	if (rnd_below(&seed, 8)) {
		compare(map + off, off, len, "mapread (long-lived mapping)");
		if (off + len == fsize && fsize % (size_t)pagesz) {
			size_t tail = (size_t)pagesz - fsize % (size_t)pagesz;
			for (size_t i = 0; i < tail; i++)
				if (map[fsize + i])
					fail("mapread: byte %zu past EOF is 0x%02x, not zero", fsize + i, map[fsize + i]);
		}
		return;
	}
	unsigned char *m = mmap(NULL, mlen, PROT_READ, MAP_SHARED, fd, (off_t)pg);
	if (m == MAP_FAILED)
		fail("mmap read: %s", strerror(errno));
	compare(m + (off - pg), off, len, "mapread");
	/* the tail of the last page past EOF must read as zeros */
	if (off + len == fsize && fsize % (size_t)pagesz) {
		size_t tail = (size_t)pagesz - fsize % (size_t)pagesz;
		munmap(m, mlen);
		m = mmap(NULL, mlen + tail, PROT_READ, MAP_SHARED, fd, (off_t)pg);
		if (m == MAP_FAILED)
			fail("mmap read tail: %s", strerror(errno));
		for (size_t i = 0; i < tail; i++)
			if (m[mlen + i])
				fail("mapread: byte %zu past EOF is 0x%02x, not zero", fsize + i, m[mlen + i]);
		mlen += tail;
	}
	munmap(m, mlen);
}

static void op_mapwrite(void)
{
	size_t len = rlen(maxlen), off = rnd_below(&seed, maxlen - len + 1);
	size_t pg = off & ~(size_t)(pagesz - 1), mlen = len + (off - pg);
	logop(MW, 0, off, len);
	if (off + len > fsize) {
		if (ftruncate(fd, (off_t)(off + len)) < 0)
			fail("ftruncate before mapwrite: %s", strerror(errno));
		memset(model + fsize, 0, off + len - fsize);
		fsize = off + len;
		oplog[opno % LOGN].size_after = fsize;
	}
	for (size_t i = 0; i < len; i++)
		model[off + i] = (unsigned char)(opno * 11 + i * 5 + 3);
	if (rnd_below(&seed, 8)) {
		memcpy(map + off, model + off, len);
		map_dirty = 1;
		return;
	}
	unsigned char *m = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)pg);
	if (m == MAP_FAILED)
		fail("mmap write: %s", strerror(errno));
	memcpy(m + (off - pg), model + off, len);
	if (msync(m, mlen, MS_SYNC) < 0)
		fail("msync: %s", strerror(errno));
	munmap(m, mlen);
}

static void op_truncate(void)
{
	/* bias toward small sizes and the current size neighbourhood */
	size_t ns = rnd_below(&seed, 4) ? rnd_below(&seed, maxlen + 1) : fsize + rnd_below(&seed, 8192);
	if (ns > maxlen)
		ns = maxlen;
	logop(TR, 0, ns, 0);
	if (ftruncate(fd, (off_t)ns) < 0)
		fail("ftruncate %zu: %s", ns, strerror(errno));
	if (ns > fsize)
		memset(model + fsize, 0, ns - fsize);
	fsize = ns;
	oplog[opno % LOGN].size_after = fsize;
}

static const int fa_modes[] = {0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE};
#define NFA 5
static int fa_ok[NFA] = {1, 1, 1, 1, 1};
static long fa_done[NFA];

static void op_fallocate(void)
{
	int mi = (int)rnd_below(&seed, NFA);
	if (!fa_ok[mi])
		return;
	int mode = fa_modes[mi];
	size_t len = rlen(maxlen), off = rnd_below(&seed, maxlen - len + 1);
	logop(FA, mode, off, len);
	if (fallocate(fd, mode, (off_t)off, (off_t)len) < 0) {
		if (errno == EOPNOTSUPP) {
			fa_ok[mi] = 0;
			tap_diag("fallocate mode 0x%x not supported: dropped", mode);
			return;
		}
		fail("fallocate mode 0x%x %zu+%zu: %s", mode, off, len, strerror(errno));
	}
	fa_done[mi]++;
	size_t end = off + len;
	if ((mode & FALLOC_FL_PUNCH_HOLE) || (mode & FALLOC_FL_ZERO_RANGE)) {
		size_t zend = (mode & FALLOC_FL_KEEP_SIZE) && end > fsize ? fsize : end;
		if (off < zend)
			memset(model + off, 0, zend - off);
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > fsize) {
		memset(model + fsize, 0, end - fsize);
		if (mode & FALLOC_FL_ZERO_RANGE)
			memset(model + off, 0, len);
		fsize = end;
	}
	oplog[opno % LOGN].size_after = fsize;
}

static void on_sigbus(int sig)
{
	(void)sig;
	static const char msg[] = "not ok - fsx: SIGBUS: the file is shorter than the model says\n";
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static void usage(void)
{
	fprintf(stderr, "usage: fsx [--ops N] [--seed S] [--maxlen B] [--other PATH2] [--save FILE] "
			"[--verify-every N] PATH\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long ops = 100000, every = 2000;
	const char *save = NULL;
	int i;
	seed = (unsigned long long)time(NULL) * 1000003ULL ^ (unsigned long long)getpid();
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--ops"))
			ops = atol(argv[++i]);
		else if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--maxlen"))
			maxlen = (size_t)atol(argv[++i]);
		else if (!strcmp(argv[i], "--other"))
			opath = argv[++i];
		else if (!strcmp(argv[i], "--save"))
			save = argv[++i];
		else if (!strcmp(argv[i], "--verify-every"))
			every = atol(argv[++i]);
		else
			usage();
	}
	if (argc - i != 1 || maxlen < 70000)
		usage();
	fpath = argv[i];
	if (!seed)
		seed = 1;
	seed0 = seed;
	tap_init();
	pagesz = sysconf(_SC_PAGESIZE);
	tap_diag("fsx seed %llu ops %ld maxlen %zu (rerun: fsx --seed %llu --ops %ld --maxlen %zu)", seed, ops, maxlen,
		 seed, ops, maxlen);
	model = calloc(1, maxlen + pagesz);
	buf = calloc(1, maxlen + 70000);
	if (!model || !buf)
		die("calloc");
	int c = open(fpath, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (c < 0)
		die("create %s", fpath);
	close(c);
	do_open();
	struct sigaction sa = {0};
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, NULL);
	unsigned long long t0 = now_ns(), t = t0;
	for (opno = 0; opno < ops; opno++) {
		unsigned long r = rnd_below(&seed, 100);
		int op = r < 25 ? W : r < 52 ? R : r < 62 ? MR : r < 72 ? MW : r < 80 ? TR : r < 89 ? FA : r < 90 ? RO : XR;
		if (op == XR && ofd < 0)
			op = R;
		count[op]++;
		switch (op) {
		case W: op_write(); break;
		case R: op_read(fd, R); break;
		case MR: op_mapread(); break;
		case MW: op_mapwrite(); break;
		case TR: op_truncate(); break;
		case FA: op_fallocate(); break;
		case XR: map_sync(); op_read(ofd, XR); break;
		case RO:
			logop(RO, 0, 0, 0);
			do_close();
			do_open();
			break;
		}
		unsigned long long t1 = now_ns();
		op_ns[op] += t1 - t;
		t = t1;
		if (every && opno % every == every - 1) {
			full_check(fd, "periodic full check");
			if (ofd >= 0) {
				map_sync();
				full_check(ofd, "periodic full check via the other mount");
			}
			t = now_ns();
		}
	}
	double secs = (now_ns() - t0) / 1e9;
	tap_check(1, "fsx: %ld ops without a mismatch (%.1f s, %.0f ops/s)", ops, secs, ops / (secs > 0 ? secs : 1));
	tap_diag("writes %ld reads %ld mapreads %ld mapwrites %ld truncates %ld fallocates %ld reopens %ld other-reads %ld",
		 count[W], count[R], count[MR], count[MW], count[TR], count[FA], count[RO], count[XR]);
	tap_diag("fallocate by mode: alloc %ld keep %ld punch %ld zero %ld zero-keep %ld", fa_done[0], fa_done[1],
		 fa_done[2], fa_done[3], fa_done[4]);
	char line[300];
	int l = 0;
	for (int k = 0; k < NOP; k++)
		l += snprintf(line + l, sizeof(line) - (size_t)l, "%s %.0f ", opn[k],
			      count[k] ? op_ns[k] / 1e3 / count[k] : 0.0);
	tap_diag("mean microseconds per op: %s", line);
	do_close();
	fd = open(fpath, O_RDONLY);
	opno = ops;
	full_check(fd, "after close and re-open");
	tap_check(1, "fsx: content after close and re-open (%zu bytes)", fsize);
	close(fd);
	if (opath) {
		fd = open(opath, O_RDONLY);
		full_check(fd, "re-open via the other mount");
		tap_check(1, "fsx: content via the other mount");
		close(fd);
	}
	if (save) {
		int s = open(save, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		tap_check(s >= 0 && write(s, model, fsize) == (ssize_t)fsize && close(s) == 0,
			  "fsx: model saved to %s", save);
	}
	return tap_done();
}
