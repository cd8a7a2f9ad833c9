// SPDX-License-Identifier: MIT
/*
 * oid.c - object IDs.
 *
 * id is the inode number on the export's filesystem, except that the
 * export root is POHMEL_ROOT_ID and an inode numbered POHMEL_ROOT_ID (if
 * one is exported) takes the root's inode number: a swap, so the mapping
 * stays one to one. Inode numbers survive renames and restarts.
 *
 * gen is a hash of the kernel file handle, which on ext4/xfs/btrfs/tmpfs
 * carries the inode generation: a removed and re-created object reusing
 * an inode number gets a different handle and so a different gen.
 *
 * id -> object goes through a table of file handles opened with
 * open_by_handle_at() relative to the export root. The table is appended
 * to STATE_DIR/handles as objects are first seen, and reloaded (and
 * compacted) at start, so IDs handed out before a restart keep resolving.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "pohmeld.h"

#define HANDLE_BYTES	128	/* MAX_HANDLE_SZ */

struct oid_ent {
	struct oid_ent *next;
	uint64_t id;
	uint64_t gen;
	int type;
	unsigned int hlen;
	uint8_t h[];		/* hlen bytes: usually 8..20, not 128 */
};

/*
 * tab_lock protects tab, tab_size, tab_count and the log file offset.
 * Readers (every request) take it shared, registration exclusive.
 */
static pthread_rwlock_t tab_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct oid_ent **tab;
static size_t tab_size, tab_count;
static int log_fd = -1;
static int root_fd = -1;
static ino_t root_ino;
static dev_t root_dev;

static uint64_t map_ino(uint64_t ino)
{
	if (ino == root_ino)
		return POHMEL_ROOT_ID;
	if (ino == POHMEL_ROOT_ID)
		return root_ino;
	return ino;
}

/* The id an inode number of the export's filesystem has. */
uint64_t oid_id_of_ino(uint64_t ino)
{
	return map_ino(ino);
}

static uint64_t handle_gen(int type, const uint8_t *h, unsigned int n)
{
	uint64_t x = 0xcbf29ce484222325ULL ^ (uint32_t)type;
	unsigned int i;

	for (i = 0; i < n; i++) {
		x ^= h[i];
		x *= 0x100000001b3ULL;
	}
	return x ? x : 1;
}

static size_t slot(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 20) & (tab_size - 1);
}

/* Must hold tab_lock (shared or exclusive). */
static struct oid_ent *find(uint64_t id)
{
	struct oid_ent *e;

	for (e = tab[slot(id)]; e; e = e->next)
		if (e->id == id)
			return e;
	return NULL;
}

/* Must hold tab_lock exclusively. */
static int grow(void)
{
	size_t nsize = tab_size ? tab_size * 2 : 4096, i;
	struct oid_ent **ntab, **old = tab, *e, *next;
	size_t osize = tab_size;

	ntab = calloc(nsize, sizeof(*ntab));
	if (!ntab)
		return ENOMEM;
	tab = ntab;
	tab_size = nsize;
	for (i = 0; i < osize; i++) {
		for (e = old[i]; e; e = next) {
			next = e->next;
			e->next = tab[slot(e->id)];
			tab[slot(e->id)] = e;
		}
	}
	free(old);
	return 0;
}

static void log_append(const struct oid_ent *e)
{
	char line[64 + 2 * HANDLE_BYTES];
	int n;
	unsigned int i;

	if (log_fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%llu %d ",
		     (unsigned long long)e->id, e->type);
	for (i = 0; i < e->hlen; i++)
		n += snprintf(line + n, sizeof(line) - n, "%02x", e->h[i]);
	line[n++] = '\n';
	/* O_APPEND: one write per record keeps records whole. */
	if (write(log_fd, line, n) != n)
		log_warn("state: appending to handle table: %s",
			 strerror(errno));
}

/* Must hold tab_lock exclusively. */
static void del_ent(struct oid_ent *e)
{
	struct oid_ent **pp;

	for (pp = &tab[slot(e->id)]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			tab_count--;
			free(e);
			return;
		}
	}
}

/* Must hold tab_lock exclusively. Inserts or replaces id's handle. */
static int put_ent(uint64_t id, int type, const uint8_t *h, unsigned int n,
		   bool persist, uint64_t *gen)
{
	struct oid_ent *e = find(id);

	if (e && e->type == type && e->hlen == n && !memcmp(e->h, h, n)) {
		*gen = e->gen;
		return 0;
	}
	if (e && e->hlen != n) {
		del_ent(e);	/* re-created with another handle size */
		e = NULL;
	}
	if (!e) {
		if (tab_count >= tab_size / 2 * 3 && grow())
			return ENOMEM;
		e = calloc(1, sizeof(*e) + n);
		if (!e)
			return ENOMEM;
		e->id = id;
		e->next = tab[slot(id)];
		tab[slot(id)] = e;
		tab_count++;
	}
	e->type = type;
	e->hlen = n;
	memcpy(e->h, h, n);
	e->gen = handle_gen(type, h, n);
	*gen = e->gen;
	if (persist)
		log_append(e);
	return 0;
}

int oid_of_fd(int fd, const struct stat *st, struct woid *out)
{
	union {
		struct file_handle fh;
		uint8_t raw[sizeof(struct file_handle) + HANDLE_BYTES];
	} u;
	int mount_id, err;
	uint64_t id;

	if (st->st_dev != root_dev)
		return EXDEV;	/* another filesystem mounted inside */
	u.fh.handle_bytes = HANDLE_BYTES;
	if (name_to_handle_at(fd, "", &u.fh, &mount_id, AT_EMPTY_PATH))
		return errno == EOVERFLOW ? EOPNOTSUPP : errno;
	id = map_ino(st->st_ino);
	pthread_rwlock_wrlock(&tab_lock);
	err = put_ent(id, u.fh.handle_type, u.fh.f_handle, u.fh.handle_bytes,
		      true, &out->gen);
	pthread_rwlock_unlock(&tab_lock);
	out->id = id;
	return err;
}

int oid_open(const struct woid *o, int *fdp, struct stat *st)
{
	union {
		struct file_handle fh;
		uint8_t raw[sizeof(struct file_handle) + HANDLE_BYTES];
	} u;
	struct oid_ent *e;
	int fd;

	pthread_rwlock_rdlock(&tab_lock);
	e = find(o->id);
	if (!e || e->gen != o->gen) {
		pthread_rwlock_unlock(&tab_lock);
		return ESTALE;
	}
	u.fh.handle_type = e->type;
	u.fh.handle_bytes = e->hlen;
	memcpy(u.fh.f_handle, e->h, e->hlen);
	pthread_rwlock_unlock(&tab_lock);

	if (o->id == POHMEL_ROOT_ID)
		fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
	else
		fd = open_by_handle_at(root_fd, &u.fh, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESTALE ? ESTALE : errno;
	if (fstat(fd, st))
		goto err_close;
	if (st->st_dev != root_dev || map_ino(st->st_ino) != o->id) {
		errno = ESTALE;
		goto err_close;
	}
	*fdp = fd;
	return 0;

err_close:
	{
		int err = errno;

		close(fd);
		return err;
	}
}

/* The current gen of id, 0 if unknown (the fuzzer uses it to reach
 * past ESTALE). */
uint64_t oid_gen_of(uint64_t id)
{
	struct oid_ent *e;
	uint64_t gen;

	pthread_rwlock_rdlock(&tab_lock);
	e = find(id);
	gen = e ? e->gen : 0;
	pthread_rwlock_unlock(&tab_lock);
	return gen;
}

size_t oid_count(void)
{
	size_t n;

	pthread_rwlock_rdlock(&tab_lock);
	n = tab_count;
	pthread_rwlock_unlock(&tab_lock);
	return n;
}

static int unhex(const char *s, uint8_t *out, unsigned int max,
		 unsigned int *n)
{
	unsigned int i = 0;

	while (s[0] && s[0] != '\n') {
		unsigned int b;

		if (i == max || sscanf(s, "%2x", &b) != 1 || !s[1])
			return -1;
		out[i++] = (uint8_t)b;
		s += 2;
	}
	*n = i;
	return 0;
}

/* Reload the table; a damaged line is skipped, not fatal. */
static void load(const char *path)
{
	char line[64 + 2 * HANDLE_BYTES + 8];
	uint8_t h[HANDLE_BYTES];
	unsigned long long id;
	int type, off;
	unsigned int n;
	uint64_t gen;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llu %d %n", &id, &type, &off) != 2 ||
		    unhex(line + off, h, sizeof(h), &n) || !id)
			continue;
		put_ent(id, type, h, n, false, &gen);
	}
	fclose(f);
}

/*
 * At start nothing is open any more, so an entry whose handle the kernel
 * calls stale names a removed object: drop it, or the table would keep
 * every object ever seen.
 */
static bool stale(const struct oid_ent *e)
{
	union {
		struct file_handle fh;
		uint8_t raw[sizeof(struct file_handle) + HANDLE_BYTES];
	} u;
	int fd;

	if (e->id == POHMEL_ROOT_ID || e->hlen > HANDLE_BYTES)
		return false;
	u.fh.handle_type = e->type;
	u.fh.handle_bytes = e->hlen;
	memcpy(u.fh.f_handle, e->h, e->hlen);
	fd = open_by_handle_at(root_fd, &u.fh, O_PATH | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == ESTALE || errno == ENOENT;
}

static int compact(const char *path)
{
	char tmp[4300];
	size_t i;
	struct oid_ent *e, *next;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	log_fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		      0600);
	if (log_fd < 0)
		return errno;
	for (i = 0; i < tab_size; i++) {
		for (e = tab[i]; e; e = next) {
			next = e->next;
			if (stale(e)) {
				del_ent(e);
				continue;
			}
			log_append(e);
		}
	}
	if (fsync(log_fd) || rename(tmp, path)) {
		int err = errno;

		close(log_fd);
		log_fd = -1;
		unlink(tmp);
		return err;
	}
	return 0;
}

/* mkdir -p, 0700 for what it creates. */
static int mkdir_p(const char *path)
{
	char buf[4096], *p;

	if (strlen(path) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(buf, path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0700);
}

int oid_init(int rootfd, const char *state_dir)
{
	char path[4200];
	struct stat st;
	struct woid o;
	int err;

	if (fstat(rootfd, &st))
		return errno;
	root_fd = rootfd;
	root_ino = st.st_ino;
	root_dev = st.st_dev;
	pthread_rwlock_wrlock(&tab_lock);
	err = grow();
	if (err)
		goto out_unlock;
	if (mkdir_p(state_dir) && errno != EEXIST) {
		err = errno;
		log_err("state directory %s: %s", state_dir, strerror(err));
		goto out_unlock;
	}
	snprintf(path, sizeof(path), "%s/handles", state_dir);
	load(path);
	err = compact(path);
	if (err)
		log_err("state file %s: %s", path, strerror(err));
out_unlock:
	pthread_rwlock_unlock(&tab_lock);
	if (err)
		return err;
	/* The root must have a handle: proves open_by_handle_at works. */
	err = oid_of_fd(rootfd, &st, &o);
	if (err)
		log_err("export root: cannot make a file handle: %s",
			strerror(err));
	return err;
}

void oid_fini(void)
{
	size_t i;
	struct oid_ent *e, *next;

	pthread_rwlock_wrlock(&tab_lock);
	for (i = 0; i < tab_size; i++) {
		for (e = tab[i]; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(tab);
	tab = NULL;
	tab_size = tab_count = 0;
	if (log_fd >= 0) {
		fsync(log_fd);
		close(log_fd);
	}
	log_fd = -1;
	pthread_rwlock_unlock(&tab_lock);
}
