// SPDX-License-Identifier: MIT
/*
 * sessfile.c - sessions on disk, so that a restart of pohmeld (crash,
 * SIGKILL or a clean stop) does not lose what makes a client's replay
 * safe: its reply cache and its open handles.
 *
 * One file per session, STATEDIR/sessions/UUID-BOOTGEN (hex), a log of
 * records appended with one write(2) each (O_APPEND): what session*.c
 * changes in memory it appends here before the reply that depends on it
 * is sent. write(2) without fsync is enough against a dead pohmeld: the
 * kernel keeps the page cache, as it keeps the export's own changes.
 * Against a crash of the machine, what the client was promised stable
 * is: every FSYNC and STABLE WRITE makes its session's file stable before
 * its reply (session_sync: fdatasync of the file if records were
 * appended since the last one, and sfile_sync_dir if the file was
 * created or renamed since the directory was last synced); see README.md
 * "Sessions across a restart" for what that covers and what it costs.
 *
 * Record: u32 type, u32 body length, u32 checksum (FNV-1a of type,
 * length and body), u32 zero, then the body; all big-endian. A record
 * cut short (a fatal signal may end a write between pages; a machine
 * crash may lose the tail) fails its checksum: loading stops there.
 * The file is rewritten (tmp + rename) from the live state when it has
 * grown, so its size stays bounded by the cache window.
 *
 * What is read back at start is hostile input like anything from the
 * network: names must be exactly what name_of() writes, only regular
 * files are opened (no symlinks, no FIFOs to block on), sizes and every
 * record length are checked before a read, and a file that is refused
 * is logged with its name and the reason, and removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>
#include "pohmeld.h"

#define REC_HDR		16
#define REC_MAX		(64 * 1024)	/* no record is near this */
#define FILE_MAX	(64 * 1024 * 1024)

static int dir_fd = -1;		/* STATEDIR/sessions; set once at start */

/*
 * The directory's entries: dir_gen counts creations and renames of
 * session files (atomic: bumped under callers' locks, which must not wait
 * for an fsync); dir_mu serializes sfile_sync_dir and protects
 * dir_synced, the dir_gen its last fsync covered.
 */
static atomic_uint_fast64_t dir_gen;
static pthread_mutex_t dir_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t dir_synced;

bool sfile_enabled(void)
{
	return dir_fd >= 0;
}

static uint32_t fnv(uint32_t x, const uint8_t *p, size_t n)
{
	while (n--) {
		x ^= *p++;
		x *= 16777619U;
	}
	return x;
}

static uint32_t rec_sum(const uint8_t *hdr, const uint8_t *a, uint32_t alen,
			const uint8_t *b, uint32_t blen)
{
	uint32_t x = fnv(2166136261U, hdr, 8);

	x = fnv(x, a, alen);
	return fnv(x, b, blen);
}

static void name_of(char *buf, size_t n, const uint8_t uuid[16],
		    uint64_t boot_gen, const char *suffix)
{
	int i, off = 0;

	for (i = 0; i < 16; i++)
		off += snprintf(buf + off, n - (size_t)off, "%02x", uuid[i]);
	snprintf(buf + off, n - (size_t)off, "-%016llx%s",
		 (unsigned long long)boot_gen, suffix);
}

int sfile_init(const char *state_dir)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/sessions", state_dir);
	if (!mkdir(path, 0700)) {
		/* the new directory's name durable in STATEDIR */
		fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fsync(fd))
			log_warn("%s: fsync: %s", state_dir, strerror(errno));
		if (fd >= 0)
			close(fd);
	} else if (errno != EEXIST) {
		return errno;
	}
	dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dir_fd < 0 ? errno : 0;
}

/* The generation of the directory's entries now: a file created or
 * renamed before this call is durable once sfile_sync_dir(it) ran. */
uint64_t sfile_dir_gen(void)
{
	return atomic_load(&dir_gen);
}

/*
 * Make the directory's entries up to gen durable: one fsync, shared by
 * concurrent callers (the one that waited finds it done). 0 or errno.
 */
int sfile_sync_dir(uint64_t gen)
{
	uint64_t now;
	int err = 0;

	if (dir_fd < 0)
		return 0;
	pthread_mutex_lock(&dir_mu);
	if (gen > dir_synced) {
		now = atomic_load(&dir_gen);
		if (fsync(dir_fd)) {
			err = errno;
			log_warn("session directory: fsync: %s",
				 strerror(err));
		} else {
			dir_synced = now;
		}
	}
	pthread_mutex_unlock(&dir_mu);
	return err;
}

void sfile_fini(void)
{
	if (dir_fd >= 0)
		close(dir_fd);
	dir_fd = -1;
}

int sfile_open(const uint8_t uuid[16], uint64_t boot_gen)
{
	char name[64];
	int fd;

	if (dir_fd < 0)
		return -1;
	name_of(name, sizeof(name), uuid, boot_gen, "");
	fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		    0600);
	/* after the entry exists: a sync that reads the new gen sees it */
	atomic_fetch_add(&dir_gen, 1);
	return fd;
}

void sfile_remove(const uint8_t uuid[16], uint64_t boot_gen)
{
	char name[64];

	if (dir_fd < 0)
		return;
	name_of(name, sizeof(name), uuid, boot_gen, "");
	unlinkat(dir_fd, name, 0);
}

/* One record, body = a then b, in one write. 0 or errno. */
int sfile_append(int fd, uint32_t type, const void *a, uint32_t alen,
		 const void *b, uint32_t blen)
{
	uint8_t hdr[REC_HDR];
	struct iovec iov[3] = {
		{ hdr, REC_HDR }, { (void *)a, alen }, { (void *)b, blen },
	};
	ssize_t n;

	if (fd < 0)
		return 0;
	put32(hdr, type);
	put32(hdr + 4, alen + blen);
	put32(hdr + 8, rec_sum(hdr, a, alen, b, blen));
	put32(hdr + 12, 0);
	do {
		n = writev(fd, iov, 3);
	} while (n < 0 && errno == EINTR);
	if (n == (ssize_t)(REC_HDR + alen + blen))
		return 0;
	return n < 0 ? errno : EIO;
}

/* A fresh file for a rewrite; sfile_commit() puts it in place. */
int sfile_start_rewrite(const uint8_t uuid[16], uint64_t boot_gen)
{
	char name[64];

	if (dir_fd < 0)
		return -1;
	name_of(name, sizeof(name), uuid, boot_gen, ".new");
	return openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
		      O_CLOEXEC, 0600);
}

/* 0: the rewrite replaced the file; else errno and it was dropped. */
int sfile_commit(const uint8_t uuid[16], uint64_t boot_gen)
{
	char name[64], tmp[64];

	name_of(name, sizeof(name), uuid, boot_gen, "");
	name_of(tmp, sizeof(tmp), uuid, boot_gen, ".new");
	if (renameat(dir_fd, tmp, dir_fd, name)) {
		int err = errno;

		unlinkat(dir_fd, tmp, 0);
		return err;
	}
	atomic_fetch_add(&dir_gen, 1);
	return 0;
}

/* Next valid record in [*p, *p + *left); false at the end or damage. */
bool sfile_next(const uint8_t **p, size_t *left, uint32_t *type,
		const uint8_t **body, uint32_t *blen)
{
	uint32_t len;

	if (*left < REC_HDR)
		return false;
	len = get32(*p + 4);
	if (len > REC_MAX || len > *left - REC_HDR ||
	    get32(*p + 8) != rec_sum(*p, *p + REC_HDR, len, NULL, 0))
		return false;
	*type = get32(*p);
	*body = *p + REC_HDR;
	*blen = len;
	*p += REC_HDR + len;
	*left -= REC_HDR + len;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;	/* name_of() writes lower case only */
}

/* Exactly name_of()'s form: 32 hex digits, '-', 16 hex digits. */
static int parse_name(const char *s, uint8_t uuid[16], uint64_t *boot_gen)
{
	uint64_t g = 0;
	int i, hi, lo;

	if (strlen(s) != 32 + 1 + 16 || s[32] != '-')
		return -1;
	for (i = 0; i < 16; i++) {
		hi = hexval(s[2 * i]);
		lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		uuid[i] = (uint8_t)(hi << 4 | lo);
	}
	for (i = 33; i < 33 + 16; i++) {
		hi = hexval(s[i]);
		if (hi < 0)
			return -1;
		g = g << 4 | (uint64_t)hi;
	}
	*boot_gen = g;
	return 0;
}

/* Whole file into a fresh buffer; NULL with *why set if refused. */
static uint8_t *read_whole(const char *name, size_t *len, const char **why)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	ssize_t n;
	int fd;

	fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
		    O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		*why = errno == ELOOP ? "a symbolic link" : strerror(errno);
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		*why = "not a regular file";
		return NULL;
	}
	if (st.st_size < 0 || st.st_size > FILE_MAX) {
		close(fd);
		*why = "larger than 64 MiB";
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		*why = "out of memory";
		return NULL;
	}
	while (got < (size_t)st.st_size) {
		n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(buf);
		*why = "unreadable";
		return NULL;
	}
	*len = got;
	return buf;
}

/*
 * Hand every session file's contents to fn; drop leftovers of rewrites.
 * fn returns false to refuse a file (then it is logged with why and
 * removed); true with why[0] set keeps it with a warning.
 */
void sfile_scan(bool (*fn)(const uint8_t uuid[16], uint64_t boot_gen,
			   const uint8_t *data, size_t len, char *why,
			   size_t wl))
{
	struct dirent *de;
	uint8_t uuid[16];
	uint64_t gen;
	DIR *d;
	int dfd;

	if (dir_fd < 0)
		return;
	dfd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		const char *bad = NULL;
		char why[256] = "";
		uint8_t *buf;
		size_t len = 0;

		if (de->d_name[0] == '.')
			continue;
		if (parse_name(de->d_name, uuid, &gen)) {
			/* a rewrite that did not reach its rename */
			if (strstr(de->d_name, ".new"))
				unlinkat(dir_fd, de->d_name, 0);
			else
				log_warn("session file %s: not a session file name, ignored",
					 de->d_name);
			continue;
		}
		buf = read_whole(de->d_name, &len, &bad);
		if (!buf) {
			log_warn("session file %s: %s: dropped", de->d_name,
				 bad);
			unlinkat(dir_fd, de->d_name, 0);
			continue;
		}
		if (!fn(uuid, gen, buf, len, why, sizeof(why))) {
			log_warn("session file %s: %s: dropped", de->d_name,
				 why[0] ? why : "refused");
			unlinkat(dir_fd, de->d_name, 0);
		} else if (why[0]) {
			log_warn("session file %s: %s", de->d_name, why);
		}
		free(buf);
	}
	closedir(d);
}
