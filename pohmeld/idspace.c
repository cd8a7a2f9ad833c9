// SPDX-License-Identifier: MIT
/*
 * idspace.c - where object ids come from.
 *
 * An object id is pohmeld's own number, not the export's inode number:
 * ids are taken from a counter, in increasing order, and never handed
 * out twice, across restarts and machine crashes too. That is what lets
 * a client be given ids in advance (delegated ranges, idrange.c) and
 * create objects under them before the server has seen them: an id
 * names one object for good, so nothing is renumbered after the flush.
 *
 * Persistence: STATEDIR/idspace holds one line, "reserved N": no id at
 * or above N has been handed out. Before the counter passes N, the file
 * is rewritten (tmp, fsync, rename, fsync of the directory) with
 * N + CHUNK; at start the counter resumes at the N read back. So the
 * file is written once per CHUNK ids, and a restart skips what was left
 * of the chunk (the id space is 64-bit: skipping costs nothing).
 * The counter also starts above every id already in the handle table
 * (oid_log.c calls idspace_floor while loading): a state directory from a
 * version whose ids were inode numbers keeps them, and new ids come
 * from above them.
 *
 * Ranges a session gave back unused (its end, idrange.c) are kept in
 * memory and handed out again first; they are not persisted: after a
 * restart they are simply never used, which keeps "never twice" without
 * a second file to keep consistent with the session files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "pohmeld.h"

#define CHUNK		65536
#define FREE_MAX	1024	/* given-back ranges remembered */

/*
 * mu protects everything below. It is taken under oid_lock (oid_int.h:
 * a new object's id): the rare file rewrite (once per CHUNK) is done
 * under it, which holds requests back for one fsync.
 */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_id = POHMEL_ROOT_ID + 1;
static uint64_t reserved;		/* durable: no id >= this handed out */
static int dir_fd = -1;
static char path[4200];

struct free_range {
	uint64_t start;
	uint32_t count;
};
static struct free_range freel[FREE_MAX];
static unsigned int nfree;

/* Must hold mu: make "reserved upto" durable. 0 or errno. */
static int write_reserved(uint64_t upto)
{
	char line[64];
	int fd, n, err = 0;

	n = snprintf(line, sizeof(line), "reserved %llu\n",
		     (unsigned long long)upto);
	fd = openat(dir_fd, "idspace.new",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (write(fd, line, (size_t)n) != n)
		err = errno ? errno : EIO;
	if (!err && fsync(fd))
		err = errno;
	close(fd);
	if (!err && renameat(dir_fd, "idspace.new", dir_fd, "idspace"))
		err = errno;
	if (!err && fsync(dir_fd))
		err = errno;
	if (err) {
		unlinkat(dir_fd, "idspace.new", 0);
		log_warn("state file %s: %s", path, strerror(err));
		return err;
	}
	reserved = upto;
	return 0;
}

/* Must hold mu: ids [next_id, next_id + n) covered by the reservation. */
static int reserve(uint64_t n)
{
	uint64_t want = next_id + n;

	if (want < next_id)
		return EOVERFLOW;
	if (want <= reserved)
		return 0;
	return write_reserved(want + CHUNK);
}

int idspace_init(const char *state_dir)
{
	char line[64];
	unsigned long long v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/idspace", state_dir);
	dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return errno;
	fd = openat(dir_fd, "idspace", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno != ENOENT)
		return errno;
	if (fd >= 0) {
		n = read(fd, line, sizeof(line) - 1);
		close(fd);
		line[n > 0 ? n : 0] = 0;
		/* Hostile or damaged: refuse to guess, ids must not repeat. */
		if (sscanf(line, "reserved %llu", &v) != 1 || !v) {
			log_err("state file %s: not \"reserved N\": refusing to start (ids could be handed out twice); fix or remove it only with the handles file",
				path);
			return EINVAL;
		}
		if (v > next_id)
			next_id = v;
	}
	return 0;
}

void idspace_floor(uint64_t id)
{
	pthread_mutex_lock(&mu);
	if (id >= next_id && id != UINT64_MAX)
		next_id = id + 1;
	pthread_mutex_unlock(&mu);
}

int idspace_start(void)
{
	int err;

	pthread_mutex_lock(&mu);
	err = write_reserved(next_id + CHUNK);
	pthread_mutex_unlock(&mu);
	return err;
}

int idspace_alloc(uint64_t *id)
{
	int err;

	pthread_mutex_lock(&mu);
	err = reserve(1);
	if (!err)
		*id = next_id++;
	pthread_mutex_unlock(&mu);
	return err;
}

int idspace_alloc_range(uint32_t count, uint64_t *start, uint32_t *got)
{
	int err = 0;

	if (!count)
		return EINVAL;
	pthread_mutex_lock(&mu);
	if (nfree) {
		struct free_range *f = &freel[nfree - 1];

		*start = f->start;
		*got = MIN(count, f->count);
		f->start += *got;
		f->count -= *got;
		if (!f->count)
			nfree--;
	} else {
		err = reserve(count);
		if (!err) {
			*start = next_id;
			*got = count;
			next_id += count;
		}
	}
	pthread_mutex_unlock(&mu);
	return err;
}

void idspace_give_back(uint64_t start, uint32_t count)
{
	if (!count)
		return;
	pthread_mutex_lock(&mu);
	if (nfree < FREE_MAX) {
		freel[nfree].start = start;
		freel[nfree].count = count;
		nfree++;
	}
	pthread_mutex_unlock(&mu);
}

uint64_t idspace_next(void)
{
	uint64_t v;

	pthread_mutex_lock(&mu);
	v = next_id;
	pthread_mutex_unlock(&mu);
	return v;
}

void idspace_fini(void)
{
	pthread_mutex_lock(&mu);
	if (dir_fd >= 0)
		close(dir_fd);
	dir_fd = -1;
	nfree = 0;
	next_id = POHMEL_ROOT_ID + 1;
	reserved = 0;
	pthread_mutex_unlock(&mu);
}
