// SPDX-License-Identifier: MIT
/*
 * oid.c - object IDs: the table id -> file handle, indexed by inode
 * number too.
 *
 * id is pohmeld's own number (idspace.c: a counter, never reused), given
 * to an object the first time a reply names it, or chosen in advance by
 * a client from a range delegated to it (idrange.c, oid_bind). The
 * export root is POHMEL_ROOT_ID. The table also indexes entries by the
 * object's inode number, which is how an object found by name (or by an
 * inotify event) gets back its id; a state directory written when ids
 * were inode numbers (lines without ino and gen) loads with ino = id,
 * except for the swap the root took then (POHMEL_ROOT_ID <-> its ino).
 *
 * gen is a hash of the kernel file handle, which on ext4/xfs/btrfs/tmpfs
 * carries the inode generation (an inode number reused by a new object
 * gives it a new handle, and so a new id), or for an id from a delegated
 * range the range's gen.
 *
 * id -> object goes through a table of file handles opened with
 * open_by_handle_at() relative to the export root. oid_log.c appends the
 * table to STATE_DIR/handles as objects are first seen (or an id's handle
 * changes: its inode number was reused), reloads it at start (so IDs
 * handed out before a restart keep resolving), compacts the file and
 * makes it durable (oid_sync).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "oid_int.h"

/* oid_lock (oid_int.h) protects the table: */
pthread_rwlock_t oid_lock = PTHREAD_RWLOCK_INITIALIZER;
struct oid_ent **oid_tab;		/* by id; oid_tab_size slots */
static struct oid_ent **itab;		/* by ino; oid_tab_size slots */
size_t oid_tab_size;
static size_t tab_count;
static uint64_t put_seq;

/* Set once by oid_init, before any thread: no lock. */
int oid_root_fd = -1;
ino_t oid_root_ino;
static dev_t root_dev;

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
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 20) &
	       (oid_tab_size - 1);
}

/* Must hold oid_lock (shared or exclusive). */
struct oid_ent *oid_find(uint64_t id)
{
	struct oid_ent *e;

	for (e = oid_tab[slot(id)]; e; e = e->next)
		if (e->id == id)
			return e;
	return NULL;
}

/* Must hold oid_lock (shared or exclusive). */
static struct oid_ent *find_ino(uint64_t ino)
{
	struct oid_ent *e;

	for (e = itab[slot(ino)]; e; e = e->inext)
		if (e->ino == ino)
			return e;
	return NULL;
}

/* Must hold oid_lock exclusively. */
static int grow(void)
{
	size_t nsize = oid_tab_size ? oid_tab_size * 2 : 4096, i;
	struct oid_ent **ntab, **nitab, **old = oid_tab, **oldi = itab;
	struct oid_ent *e, *next;
	size_t osize = oid_tab_size;

	ntab = calloc(nsize, sizeof(*ntab));
	nitab = calloc(nsize, sizeof(*nitab));
	if (!ntab || !nitab) {
		free(ntab);
		free(nitab);
		return ENOMEM;
	}
	oid_tab = ntab;
	itab = nitab;
	oid_tab_size = nsize;
	for (i = 0; i < osize; i++) {
		for (e = old[i]; e; e = next) {
			next = e->next;
			e->next = oid_tab[slot(e->id)];
			oid_tab[slot(e->id)] = e;
			e->inext = itab[slot(e->ino)];
			itab[slot(e->ino)] = e;
		}
	}
	free(old);
	free(oldi);
	return 0;
}

/* Must hold oid_lock exclusively. */
void oid_del_ent(struct oid_ent *e)
{
	struct oid_ent **pp;

	for (pp = &itab[slot(e->ino)]; *pp; pp = &(*pp)->inext) {
		if (*pp == e) {
			*pp = e->inext;
			break;
		}
	}
	for (pp = &oid_tab[slot(e->id)]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			tab_count--;
			free(e);
			return;
		}
	}
}

/*
 * Must hold oid_lock exclusively. Inserts id -> (ino, handle), replacing
 * what id had and whatever other id ino had (that object is gone: its
 * inode number was reused, or an id was bound to it, oid_bind). gen 0:
 * the handle's hash.
 */
int oid_put_ent(uint64_t id, uint64_t ino, int type, const uint8_t *h,
		unsigned int n, bool persist, uint64_t *gen)
{
	struct oid_ent *e = oid_find(id), *o = find_ino(ino);
	uint64_t g = *gen ? *gen : handle_gen(type, h, n);

	if (e && e == o && e->type == type && e->hlen == n &&
	    !memcmp(e->h, h, n) && e->gen == g)
		return 0;
	if (o && o != e)
		oid_del_ent(o);
	if (e)
		oid_del_ent(e);
	if (tab_count >= oid_tab_size / 2 * 3 && grow())
		return ENOMEM;
	e = calloc(1, sizeof(*e) + n);
	if (!e)
		return ENOMEM;
	e->id = id;
	e->ino = ino;
	e->next = oid_tab[slot(id)];
	oid_tab[slot(id)] = e;
	e->inext = itab[slot(ino)];
	itab[slot(ino)] = e;
	tab_count++;
	e->type = type;
	e->hlen = n;
	memcpy(e->h, h, n);
	e->gen = g;
	e->seq = ++put_seq;
	*gen = g;
	if (persist)
		oid_log_append(e);
	return 0;
}

union fhandle {
	struct file_handle fh;
	uint8_t raw[sizeof(struct file_handle) + HANDLE_BYTES];
};

/* Must hold oid_lock: e is the object whose handle is u. */
static bool same_handle(const struct oid_ent *e, const union fhandle *u)
{
	return e->type == u->fh.handle_type && e->hlen == u->fh.handle_bytes &&
	       !memcmp(e->h, u->fh.f_handle, e->hlen);
}

/*
 * The object open at fd, with st its fstat: its id, registered with
 * want (a delegated id and its gen: oid_bind) or, when want is NULL,
 * the id it has or a new one from the counter.
 */
static int register_fd(int fd, const struct stat *st, const struct woid *want,
		       uint64_t min_seq, struct woid *out)
{
	union fhandle u;
	int mount_id, err = 0;
	struct snap snap;
	bool compact = false;
	struct oid_ent *e;
	uint64_t id, gen;

	if (st->st_dev != root_dev)
		return EXDEV;	/* another filesystem mounted inside */
	u.fh.handle_bytes = HANDLE_BYTES;
	if (name_to_handle_at(fd, "", &u.fh, &mount_id, AT_EMPTY_PATH))
		return errno == EOVERFLOW ? EOPNOTSUPP : errno;

	/* Known already (nearly every call): shared lock only. */
	pthread_rwlock_rdlock(&oid_lock);
	e = find_ino(st->st_ino);
	if (e && same_handle(e, &u) && (!want || e->id == want->id)) {
		out->id = e->id;
		out->gen = e->gen;
		pthread_rwlock_unlock(&oid_lock);
		return 0;
	}
	pthread_rwlock_unlock(&oid_lock);

	pthread_rwlock_wrlock(&oid_lock);
	e = find_ino(st->st_ino);
	if (e && same_handle(e, &u) && (!want || e->id == want->id)) {
		out->id = e->id;	/* registered meanwhile */
		out->gen = e->gen;
		goto out_unlock;
	}
	if (want) {
		/* The id must be free: a delegated id names one object. */
		if (oid_find(want->id)) {
			err = EEXIST;
			goto out_unlock;
		}
		/* Nor may it take over an object that had an id before the
		 * create began (min_seq): only one registered in between. */
		if (e && same_handle(e, &u) && e->seq < min_seq) {
			err = EEXIST;
			goto out_unlock;
		}
		id = want->id;
		gen = want->gen;
	} else if ((uint64_t)st->st_ino == oid_root_ino) {
		id = POHMEL_ROOT_ID;
		gen = 0;
	} else {
		err = idspace_alloc(&id);
		if (err)
			goto out_unlock;
		gen = 0;
	}
	err = oid_put_ent(id, st->st_ino, u.fh.handle_type, u.fh.f_handle,
			  u.fh.handle_bytes, true, &gen);
	out->id = id;
	out->gen = gen;
	compact = oid_compact_start(&snap);
out_unlock:
	pthread_rwlock_unlock(&oid_lock);
	if (compact)
		oid_compact_online(&snap);
	return err;
}

int oid_of_fd(int fd, const struct stat *st, struct woid *out)
{
	return register_fd(fd, st, NULL, 0, out);
}

/* For oid_bind's min_seq: registrations from now on have seq > this. */
uint64_t oid_seq(void)
{
	uint64_t v;

	pthread_rwlock_rdlock(&oid_lock);
	v = put_seq + 1;
	pthread_rwlock_unlock(&oid_lock);
	return v;
}

/*
 * Bind a delegated id (idrange.c checked that it is the caller's to
 * use) to the object just created at fd. If a reply named the object
 * in between (registered at min_seq or later: another request found it
 * by name), the id given then is dropped: the creator already uses the
 * delegated one. EEXIST if the id names another object, or the object
 * had an id before min_seq.
 */
int oid_bind(int fd, const struct stat *st, const struct woid *want,
	     uint64_t min_seq)
{
	struct woid got;

	return register_fd(fd, st, want, min_seq, &got);
}

/* The id of the object with inode number ino, 0 if none was handed out. */
uint64_t oid_id_of_ino(uint64_t ino)
{
	struct oid_ent *e;
	uint64_t id;

	pthread_rwlock_rdlock(&oid_lock);
	e = find_ino(ino);
	id = e ? e->id : 0;
	pthread_rwlock_unlock(&oid_lock);
	return id;
}

int oid_open(const struct woid *o, int *fdp, struct stat *st)
{
	union fhandle u;
	struct oid_ent *e;
	uint64_t ino;
	int fd;

	pthread_rwlock_rdlock(&oid_lock);
	e = oid_find(o->id);
	if (!e || e->gen != o->gen) {
		pthread_rwlock_unlock(&oid_lock);
		return ESTALE;
	}
	u.fh.handle_type = e->type;
	u.fh.handle_bytes = e->hlen;
	memcpy(u.fh.f_handle, e->h, e->hlen);
	ino = e->ino;
	pthread_rwlock_unlock(&oid_lock);

	if (o->id == POHMEL_ROOT_ID)
		fd = fcntl(oid_root_fd, F_DUPFD_CLOEXEC, 3);
	else
		fd = open_by_handle_at(oid_root_fd, &u.fh, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESTALE ? ESTALE : errno;
	if (fstat(fd, st))
		goto err_close;
	if (st->st_dev != root_dev || (uint64_t)st->st_ino != ino) {
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

	pthread_rwlock_rdlock(&oid_lock);
	e = oid_find(id);
	gen = e ? e->gen : 0;
	pthread_rwlock_unlock(&oid_lock);
	return gen;
}

size_t oid_count(void)
{
	size_t n;

	pthread_rwlock_rdlock(&oid_lock);
	n = tab_count;
	pthread_rwlock_unlock(&oid_lock);
	return n;
}

int oid_init(int rootfd, const char *state_dir)
{
	struct stat st;
	struct woid o;
	int err;

	if (fstat(rootfd, &st))
		return errno;
	oid_root_fd = rootfd;
	oid_root_ino = st.st_ino;
	root_dev = st.st_dev;
	pthread_rwlock_wrlock(&oid_lock);
	err = grow();
	if (!err)
		err = oid_log_init(state_dir);	/* loads the table */
	pthread_rwlock_unlock(&oid_lock);
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

	pthread_rwlock_wrlock(&oid_lock);
	for (i = 0; i < oid_tab_size; i++) {
		for (e = oid_tab[i]; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(oid_tab);
	free(itab);
	oid_tab = itab = NULL;
	oid_tab_size = tab_count = 0;
	idspace_fini();
	oid_log_fini();
	pthread_rwlock_unlock(&oid_lock);
}
