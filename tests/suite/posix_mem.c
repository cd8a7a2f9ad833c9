/* posix, guest only: memory bounds of the client. 1 MiB messages while no
 * physically contiguous 2 MiB block is free (changes vm sysctls and takes
 * memory from the guest); the cap on a kept directory listing. */
#include "posix.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FRAG_MB 192		/* locked, then every other page freed */
#define BIG_IO (4 << 20)	/* O_DIRECT I/O: 1 MiB messages */

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/*
 * Free blocks of order 9 and above in the zones a kmalloc() can use
 * (/proc/buddyinfo; ZONE_DMA is only for GFP_DMA), noted in @why.
 */
static long free_order9(char *why, size_t wlen)
{
	FILE *f = fopen("/proc/buddyinfo", "r");
	char line[512];
	long n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "zone"), *z;
		long c[11];
		int k;

		if (!p)
			continue;
		p += 4;
		while (*p == ' ')
			p++;
		z = p;
		while (*p && *p != ' ')
			p++;	/* the zone's name */
		if (p - z == 3 && !strncmp(z, "DMA", 3))
			continue;
		k = sscanf(p, "%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld", &c[0], &c[1], &c[2], &c[3],
			   &c[4], &c[5], &c[6], &c[7], &c[8], &c[9], &c[10]);
		for (int i = 9; i < k; i++) {
			n += c[i];
			if (c[i] && why) {
				size_t l = strlen(why);

				snprintf(why + l, wlen - l, " %.*s:%d:%ld", (int)(p - z), z, i, c[i]);
			}
		}
	}
	fclose(f);
	return n;
}

/* mountstats counter @key of the pohmel mount D1 lives on */
static long mstat(const char *key)
{
	FILE *f = fopen("/proc/self/mountstats", "r");
	char line[1024], mnt[512];
	size_t best = 0;
	long v = -1;
	int on = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		long r;

		if (sscanf(line, "device %*s mounted on %511s with fstype pohmel", mnt) == 1) {
			size_t l = strlen(mnt);

			on = !strncmp(D1, mnt, l) && D1[l] == '/' && l > best;
			if (on)
				best = l;
		} else if (!strncmp(line, "device ", 7)) {
			on = 0;
		} else if (on) {
			char k[64];

			if (sscanf(line, " %63[a-z_]: %ld", k, &r) == 2 && !strcmp(k, key))
				v = r;
		}
	}
	fclose(f);
	return v;
}

/*
 * A child that locks FRAG_MB and frees every other page: what it keeps
 * cannot move (compact_unevictable_allowed 0), so the pages it gave back
 * never join into larger blocks. Ends when @fd is closed.
 */
static pid_t fragmenter(int *ready, int *fd)
{
	int up[2], down[2];
	pid_t pid;

	if (pipe(up) || pipe(down))
		die("pipe");
	pid = fork();
	if (pid == 0) {
		size_t len = (size_t)FRAG_MB << 20, pg = 4096;
		char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
			       -1, 0);
		char c = 1;

		close(up[0]);
		close(down[1]);
		if (m == MAP_FAILED || mlock(m, len))
			c = 0;
		for (size_t o = pg; c && o < len; o += 2 * pg)
			munmap(m + o, pg);
		write(up[1], &c, 1);
		read(down[0], &c, 1);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	char c = 0;
	*ready = pid > 0 && read(up[0], &c, 1) == 1 && c;
	close(up[0]);
	*fd = down[1];
	return pid;
}

/*
 * The I/O under fragmentation, in a child that SIGALRM ends: a client
 * whose reply buffer cannot be allocated reconnects and resends for ever
 * on a hard mount. Results come back through a pipe.
 */
static void big_io(int fd, unsigned char *w, unsigned char *r, ssize_t *nr, int *er, ssize_t *nw, int *ew)
{
	ssize_t res[4] = { -3, 0, -3, 0 };
	int p[2], st;
	pid_t pid;

	if (pipe(p))
		die("pipe");
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		alarm(60);
		res[0] = pread(fd, r, BIG_IO, 0);
		res[1] = errno;
		if (res[0] == BIG_IO && memcmp(r, w, BIG_IO))
			res[0] = -2;
		fill_pattern(w, BIG_IO, 22, 0);
		res[2] = pwrite(fd, w, BIG_IO, 0);
		res[3] = errno;
		write(p[1], res, sizeof(res));
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], res, sizeof(res)) != sizeof(res))
		memcpy(res, (ssize_t[4]){ -3, ETIMEDOUT, -3, ETIMEDOUT }, sizeof(res));
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	fill_pattern(w, BIG_IO, 22, 0);	/* what the child wrote */
	*nr = res[0];
	*er = (int)res[1];
	*nw = res[2];
	*ew = (int)res[3];
}

/*
 * 1 MiB READs and WRITEs need 1 MiB message buffers. Before 5.17 kvmalloc
 * with GFP_NOFS never falls back to vmalloc, so each needed a free 2 MiB
 * block: under fragmentation the WRITE failed with ENOMEM and the READ's
 * reply dropped the connection. Here every such block is taken (hugetlb
 * pages) and compaction is off, and both must still work.
 */
void test_bigmsg(void)
{
	static const char *const vm[] = { "/proc/sys/vm/extfrag_threshold",
					  "/proc/sys/vm/compact_unevictable_allowed",
					  "/proc/sys/vm/compaction_proactiveness",
					  "/proc/sys/vm/nr_hugepages" };
	static const long set[] = { 1000, 0, 0, 1000000 };
	long saved[4], r0, r1, free9, huge;
	char why[256] = "";
	unsigned char *w, *r;
	int ready, kfd, fd, i, ew = 0, er = 0;
	ssize_t nw = -1, nr = -1;
	pid_t kid;

	if (opt_local || !is_root || access(vm[3], W_OK)) {
		tap_skip("guest only (root, hugetlb)", "bigmsg: 1 MiB O_DIRECT I/O without free 2 MiB blocks");
		return;
	}
	if (posix_memalign((void **)&w, 4096, BIG_IO) || posix_memalign((void **)&r, 4096, BIG_IO))
		die("memalign");
	fill_pattern(w, BIG_IO, 21, 0);
	mkdir(p1("mem"), 0755);
	fd = open(p1("mem/big"), O_RDWR | O_CREAT | O_DIRECT, 0644);
	if (fd < 0)
		die("open mem/big: %s", strerror(errno));
	/* the data to read back under fragmentation, written before it */
	if (pwrite(fd, w, BIG_IO, 0) != BIG_IO)
		die("write mem/big: %s", strerror(errno));
	write_long("/proc/sys/vm/drop_caches", 3);
	for (i = 0; i < 4; i++) {
		saved[i] = read_long(vm[i]);
		if (saved[i] >= 0 && i < 3)
			write_long(vm[i], set[i]);
	}
	kid = fragmenter(&ready, &kfd);
	/* every free 2 MiB block becomes a huge page (it may take retries) */
	for (i = 0, free9 = 1; i < 4 && free9; i++) {
		write_long(vm[3], set[3]);
		why[0] = 0;
		free9 = free_order9(why, sizeof(why));
	}
	huge = read_long(vm[3]);
	r0 = mstat("reconnects");
	if (ready && free9 == 0)
		big_io(fd, w, r, &nr, &er, &nw, &ew);
	r1 = mstat("reconnects");
	long after9 = free_order9(NULL, 0);
	write_long(vm[3], saved[3]);
	close(kfd);
	if (kid > 0)
		waitpid(kid, NULL, 0);
	for (i = 0; i < 3; i++)
		if (saved[i] >= 0)
			write_long(vm[i], saved[i]);
	tap_diag("bigmsg: %ld huge pages taken, %ld free blocks of order >= 9 before the I/O (%s), %ld after",
		 huge, free9, why, after9);
	if (!ready || free9 != 0) {
		tap_skip("could not take every free 2 MiB block", "bigmsg: 1 MiB O_DIRECT I/O without free 2 MiB blocks");
	} else {
		tap_check(nr == BIG_IO, "bigmsg: 4 MiB O_DIRECT read without free 2 MiB blocks, data right (%zd, %s)",
			  nr, nr == -2 ? "wrong data" : nr == -3 ? "no answer in 60 s" : nr < 0 ? strerror(er) : "ok");
		tap_check(nw == BIG_IO && pread(fd, r, BIG_IO, 0) == BIG_IO && !memcmp(r, w, BIG_IO),
			  "bigmsg: 4 MiB O_DIRECT write without free 2 MiB blocks, read back after (%zd, %s)", nw,
			  nw < 0 ? strerror(ew) : "ok");
		tap_check(r0 >= 0 && r1 == r0, "bigmsg: the connection was not dropped (reconnects %ld -> %ld)", r0,
			  r1);
	}
	close(fd);
	unlink(p1("mem/big"));
	free(w);
	free(r);
}

#define DCACHE_PARAM "/sys/module/pohmelfs/parameters/dcache_max_entries"

/* list @dir fully (small getdents buffers); the names counted */
static int list_count(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return d ? n : -1;
}

/* @n files in new directory @name on mount 1, then two listings: hits */
static long listing_hits(const char *name, int n, int *listed)
{
	char f[64];
	long h0, h1;

	mkdir(p1(name), 0755);
	for (int i = 0; i < n; i++) {
		snprintf(f, sizeof(f), "%s/f%d", name, i);
		close(open(p1(f), O_CREAT | O_WRONLY, 0644));
	}
	h0 = mstat("readdir_cache_hits");
	listed[0] = list_count(p1(name));
	listed[1] = list_count(p1(name));
	h1 = mstat("readdir_cache_hits");
	return h0 < 0 || h1 < 0 ? -1 : h1 - h0;
}

/*
 * A kept directory listing is bounded (dcache_max_entries): a directory
 * with more entries is listed through the server every time, and still
 * completely; one within the bound is served from memory.
 */
void test_dcache_cap(void)
{
	long saved = read_long(DCACHE_PARAM), hits;
	int listed[2];

	if (opt_local || !is_root) {
		tap_skip("guest only", "dcache: a kept listing is bounded");
		return;
	}
	tap_check(saved > 0 && write_long(DCACHE_PARAM, 100) == 0,
		  "dcache: bound is a module parameter (%ld), set to 100", saved);
	hits = listing_hits("cap150", 150, listed);
	tap_check(listed[0] == 150 && listed[1] == 150, "dcache: 150 entries past the bound listed (%d, %d)",
		  listed[0], listed[1]);
	tap_check(hits == 0, "dcache: a directory past the bound is not served from memory (%ld hits)", hits);
	hits = listing_hits("cap50", 50, listed);
	tap_check(listed[0] == 50 && listed[1] == 50 && hits > 0,
		  "dcache: within the bound it is (%d, %d names, %ld hits)", listed[0], listed[1], hits);
	if (saved > 0)
		write_long(DCACHE_PARAM, saved);
}
