/* TAP reporting and small file helpers for the functional suite. */
#include "tap.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct tap_counters {
	int n, pass, fail, skip;
};
static struct tap_counters *tc;

void tap_init(void)
{
	tc = mmap(NULL, sizeof(*tc), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tc == MAP_FAILED)
		die("mmap counters");
	memset(tc, 0, sizeof(*tc));
	setvbuf(stdout, NULL, _IONBF, 0);
}

/* one write(2) per line so concurrent children never interleave */
static void emit(const char *s)
{
	size_t len = strlen(s);
	while (len) {
		ssize_t w = write(1, s, len);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			return;
		}
		s += w;
		len -= (size_t)w;
	}
}

static void vreport(const char *status, const char *suffix, const char *fmt, va_list ap)
{
	char name[768], line[1024];
	int n = __atomic_add_fetch(&tc->n, 1, __ATOMIC_SEQ_CST);
	vsnprintf(name, sizeof(name), fmt, ap);
	for (char *p = name; *p; p++)
		if (*p == '\n' || *p == '#')
			*p = ' ';
	snprintf(line, sizeof(line), "%s %d - %s%s\n", status, n, name, suffix);
	emit(line);
}

int tap_check(int cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(cond ? "ok" : "not ok", "", fmt, ap);
	va_end(ap);
	__atomic_add_fetch(cond ? &tc->pass : &tc->fail, 1, __ATOMIC_SEQ_CST);
	return cond;
}

void tap_skip(const char *reason, const char *fmt, ...)
{
	char suffix[300];
	va_list ap;
	snprintf(suffix, sizeof(suffix), " # SKIP %s", reason);
	va_start(ap, fmt);
	vreport("ok", suffix, fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&tc->skip, 1, __ATOMIC_SEQ_CST);
}

void tap_diag(const char *fmt, ...)
{
	char msg[900], line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "#   %s\n", msg);
	emit(line);
}

int tap_failed(void)
{
	return tc->fail;
}

int tap_done(void)
{
	char line[200];
	snprintf(line, sizeof(line), "1..%d\n# %d passed, %d failed, %d skipped\n",
		 tc->n, tc->pass, tc->fail, tc->skip);
	emit(line);
	return tc->fail ? 1 : 0;
}

int tap_check_ok(long rc, const char *expr, const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	vreport(rc >= 0 ? "ok" : "not ok", "", fmt, ap);
	va_end(ap);
	if (rc >= 0) {
		__atomic_add_fetch(&tc->pass, 1, __ATOMIC_SEQ_CST);
		return 1;
	}
	__atomic_add_fetch(&tc->fail, 1, __ATOMIC_SEQ_CST);
	tap_diag("%s failed: %s", expr, strerror(e));
	errno = e;
	return 0;
}

int tap_check_err(long rc, int err, int err2, const char *expr, const char *fmt, ...)
{
	int e = errno;
	int good = rc == -1 && (e == err || (err2 && e == err2));
	va_list ap;
	va_start(ap, fmt);
	vreport(good ? "ok" : "not ok", "", fmt, ap);
	va_end(ap);
	__atomic_add_fetch(good ? &tc->pass : &tc->fail, 1, __ATOMIC_SEQ_CST);
	if (!good) {
		if (rc == -1)
			tap_diag("%s: expected %s, got %s", expr, strerror(err), strerror(e));
		else
			tap_diag("%s: expected %s, got success (%ld)", expr, strerror(err), rc);
	}
	return good;
}

void die(const char *fmt, ...)
{
	char msg[900], line[1024];
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "Bail out! %s (errno: %s)\n", msg, strerror(e));
	emit(line);
	exit(2);
}

char *pjoin(const char *dir, const char *name)
{
	static char ring[16][4200];
	static int idx;
	char *b = ring[idx++ & 15];
	snprintf(b, sizeof(ring[0]), "%s/%s", dir, name);
	return b;
}

int write_file(const char *path, const void *buf, size_t len, int flags, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, mode);
	if (fd < 0)
		return -1;
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w <= 0) {
			int e = errno;
			close(fd);
			errno = w < 0 ? e : EIO;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return close(fd);
}

ssize_t read_file(const char *path, void *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < cap) {
		ssize_t r = read(fd, (char *)buf + got, cap - got);
		if (r < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return (ssize_t)got;
}

int file_equals(const char *path, const void *buf, size_t len)
{
	unsigned char *tmp = malloc(len + 1);
	if (!tmp)
		return 0;
	ssize_t n = read_file(path, tmp, len + 1);
	int eq = n == (ssize_t)len && memcmp(tmp, buf, len) == 0;
	if (!eq) {
		if (n < 0)
			tap_diag("read %s: %s", path, strerror(errno));
		else if (n != (ssize_t)len)
			tap_diag("%s: length %zd, expected %zu", path, n, len);
		else
			for (size_t i = 0; i < len; i++)
				if (tmp[i] != ((const unsigned char *)buf)[i]) {
					tap_diag("%s: first difference at byte %zu", path, i);
					break;
				}
	}
	free(tmp);
	return eq;
}

/* byte value depends on seed and absolute offset: a misplaced block shows */
void fill_pattern(unsigned char *buf, size_t len, unsigned long seed, unsigned long off)
{
	for (size_t i = 0; i < len; i++) {
		unsigned long x = (off + i) * 2654435761UL + seed * 40503UL;
		buf[i] = (unsigned char)(x ^ (x >> 13) ^ (x >> 21));
	}
}

static int rm_rf_at(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0) {
		fchmodat(dfd, name, 0700, 0);
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		if (fd < 0)
			return -1;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (rm_rf_at(dirfd(d), de->d_name) < 0)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		rc = -1;
	return rc;
}

int rm_rf(const char *path)
{
	return rm_rf_at(AT_FDCWD, path);
}

int wait_child(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

int as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(3);
		_exit(fn(arg) & 0xff);
	}
	return wait_child(pid);
}

unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

unsigned long long rnd_next(unsigned long long *s)
{
	unsigned long long x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

unsigned long rnd_below(unsigned long long *s, unsigned long n)
{
	return n ? (unsigned long)((rnd_next(s) >> 11) % n) : 0;
}

/* Counter KEY of the pohmel mount at MNT in /proc/self/mountstats ("key: N"
 * lines, or "op=N" in the "ops:" line), or -1 if missing. */
long long mountstat(const char *mnt, const char *key)
{
	char line[4096], want[300], opkey[64];
	long long v = -1;
	int on = 0;
	FILE *f = fopen("/proc/self/mountstats", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " mounted on %s with fstype pohmel", mnt);
	snprintf(opkey, sizeof(opkey), " %s=", key);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "device ", 7)) {
			on = strstr(line, want) != NULL;
			continue;
		}
		if (!on)
			continue;
		char *p = line + strspn(line, "\t ");
		size_t kl = strlen(key);
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			v = atoll(p + kl + 1);
			break;
		}
		if (!strncmp(p, "ops:", 4) && (p = strstr(p, opkey))) {
			v = atoll(p + strlen(opkey));
			break;
		}
	}
	fclose(f);
	return v;
}
