// SPDX-License-Identifier: MIT
/*
 * oid_log.c - the object id table on disk: STATE_DIR/handles.
 *
 * The table (oid.c) is appended to the file as objects are first seen
 * (or an id's handle changes: its inode number was reused), and reloaded
 * at start, so IDs handed out before a restart keep resolving; a later
 * line for an id replaces an earlier one.
 *
 * Line: "id type handle-hex ino gen" (decimal, hex, decimal, decimal).
 *
 * Compaction rewrites the file as one line per table entry, leaving out
 * entries whose handle the kernel calls stale (the object was removed:
 * its (id, gen) is ESTALE with or without the entry, and a new object on
 * the same inode number has another gen). It runs at start and, online,
 * whenever the file has grown past max(COMPACT_FLOOR, twice the lines
 * the last compaction wrote): the file stays within a constant factor of
 * the live entries (plus what is appended while a compaction runs), and
 * the rewrites cost O(1) amortized per line.
 *
 * Online, the request thread that crosses the threshold compacts:
 *  1. under oid_lock (exclusive): copy the table (a memcpy per entry)
 *     and set `compacting`; from now on every appended line also goes to
 *     `pend`, besides the old file;
 *  2. no lock: ask the kernel which snapshot handles are stale (one
 *     open_by_handle_at each), write the others to handles.new, fsync;
 *  3. no lock, while lines came in meanwhile (a few rounds at most):
 *     take them out of `pend` (under the lock, a line whose id has
 *     changed again since is left out: the later line follows), append
 *     them to handles.new, fsync;
 *  4. under oid_lock: append the last of `pend` (fsync only if there was
 *     some), drop from the table the entries found stale that did not
 *     change since the snapshot (seq: else a live object's handle, its
 *     line in pend), rename handles.new over handles, switch appends to
 *     it;
 *  5. no lock: fsync the directory.
 * Requests wait for steps 1 and 4 only: a copy and, usually, a rename.
 * Lines appended meanwhile come after the snapshot's in handles.new and
 * win on reload, as they did in the old file. Until the rename the old
 * file is complete (appends go on to it); after, the new one, whose
 * every line was fsynced first.
 *
 * Durability: an append is a write(2), in the page cache before the
 * reply that hands the id out, so it survives any death of pohmeld. It
 * is on disk, surviving a crash of the machine, once an FSYNC or a
 * STABLE WRITE ran oid_sync() (pohmel_proto.h: every FSYNC makes the
 * ids handed out so far stable): one fdatasync of the file if lines were
 * appended since the last one, plus one fsync of the directory if a
 * compaction renamed the file since the last one (step 5 may not have
 * run yet). Concurrent callers share them; with nothing new it costs a
 * lock and two compares. An append that failed (disk full) makes
 * oid_sync fail until a compaction has written the file whole again.
 *
 * Dropping a stale entry changes no answer: oid_open() of it is ESTALE
 * either way, and an id reused by a new object comes with a new gen.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "oid_int.h"

#define LINE_MAX_BYTES	(64 + 2 * HANDLE_BYTES)
#define COMPACT_FLOOR	256	/* lines (about 30 bytes each) */
#define PEND_ROUNDS	4	/* step 3 rounds before step 4 takes the rest */

/*
 * oid_lock (oid_int.h) protects the log file (fd, offset, line count)
 * and the compaction state below.
 */
static int log_fd = -1;
static size_t log_lines;	/* lines in the file log_fd appends to */
static size_t compact_at;	/* compact once log_lines exceeds it */
static uint64_t log_gen;	/* lines appended since start */
static uint64_t rename_gen;	/* compactions renamed into place */
static int append_err;		/* an append failed; 0 once rewritten */

/* Set once at start (oid_log_init): no lock. */
static char log_path[4200], tmp_path[4210], state_path[4096];
static int state_fd = -1;	/* the state directory */

/*
 * sync_mu serializes oid_sync() and the directory fsync of compaction
 * (step 5), and protects what they made durable; taken before oid_lock.
 */
static pthread_mutex_t sync_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t log_synced;	/* log_gen durable in the file */
static uint64_t dir_synced;	/* rename_gen durable in the directory */

/*
 * Online compaction: at most one at a time. pend holds the lines appended
 * since its snapshot, each as a pend_rec and the line's bytes (padded to
 * 8): a line whose entry changed again since (seq) is left out of the
 * new file, the later line being in pend too.
 */
struct pend_rec {
	uint64_t id;
	uint64_t seq;
	size_t len;
	char line[];
};

#define PEND_SIZE(len) \
	((offsetof(struct pend_rec, line) + (len) + 7) & ~(size_t)7)

static bool compacting;
static char *pend;
static size_t pend_len, pend_cap;
static bool pend_failed;

/* One line of the file into line (LINE_MAX_BYTES); its length. */
static size_t fmt_line(char *line, uint64_t id, int type, const uint8_t *h,
		       unsigned int hlen, uint64_t ino, uint64_t gen)
{
	static const char hex[] = "0123456789abcdef";
	size_t n;
	unsigned int i;

	n = (size_t)snprintf(line, LINE_MAX_BYTES, "%llu %d ",
			     (unsigned long long)id, type);
	for (i = 0; i < hlen && i < HANDLE_BYTES; i++) {
		line[n++] = hex[h[i] >> 4];
		line[n++] = hex[h[i] & 15];
	}
	n += (size_t)snprintf(line + n, LINE_MAX_BYTES - n, " %llu %llu\n",
			      (unsigned long long)ino,
			      (unsigned long long)gen);
	return n;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			return EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Must hold oid_lock exclusively. */
static void pend_add(const struct oid_ent *e, const char *line, size_t n)
{
	struct pend_rec *r;

	if (pend_failed)
		return;
	if (pend_len + PEND_SIZE(n) > pend_cap) {
		size_t cap = pend_cap ? pend_cap * 2 : 4096;
		char *p;

		while (cap < pend_len + PEND_SIZE(n))
			cap *= 2;
		p = realloc(pend, cap);
		if (!p) {
			pend_failed = true;
			return;
		}
		pend = p;
		pend_cap = cap;
	}
	r = (void *)(pend + pend_len);
	r->id = e->id;
	r->seq = e->seq;
	r->len = n;
	memcpy(r->line, line, n);
	pend_len += PEND_SIZE(n);
}

/*
 * Must hold oid_lock exclusively. Takes pend over, returning it as text:
 * the lines whose entry has not changed since, in order, in place (the
 * text is shorter than the records). *len its bytes, *lines its lines;
 * NULL if pend is empty.
 */
static char *pend_take(size_t *len, size_t *lines)
{
	size_t r = 0, w = 0;
	char *text = pend;

	*lines = 0;
	while (r < pend_len) {
		struct pend_rec h;
		struct oid_ent *e;

		memcpy(&h, pend + r, sizeof(h));
		e = oid_find(h.id);
		if (e && e->seq == h.seq) {
			memmove(text + w, pend + r + offsetof(struct pend_rec,
							      line), h.len);
			w += h.len;
			(*lines)++;
		}
		r += PEND_SIZE(h.len);
	}
	pend = NULL;
	pend_len = pend_cap = 0;
	*len = w;
	if (!w) {
		free(text);
		return NULL;
	}
	return text;
}

/* Must hold oid_lock exclusively. */
void oid_log_append(const struct oid_ent *e)
{
	char line[LINE_MAX_BYTES];
	size_t n;

	if (log_fd < 0)
		return;
	n = fmt_line(line, e->id, e->type, e->h, e->hlen, e->ino, e->gen);
	/* O_APPEND: one write per record keeps records whole. */
	if (write(log_fd, line, n) != (ssize_t)n) {
		append_err = errno ? errno : EIO;
		log_warn("state: appending to handle table: %s",
			 strerror(append_err));
	}
	log_lines++;
	log_gen++;
	if (compacting)
		pend_add(e, line, n);
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

/* The inode number of a legacy line's id (ids were inode numbers). */
static uint64_t legacy_ino(uint64_t id)
{
	if (id == POHMEL_ROOT_ID)
		return oid_root_ino;
	if (id == oid_root_ino)
		return POHMEL_ROOT_ID;
	return id;
}

/*
 * Reload the table; a damaged line is skipped, not fatal. The counter
 * goes above every id seen, stale or not (idspace_floor).
 */
static void load(const char *path)
{
	char line[LINE_MAX_BYTES + 8], *sp;
	uint8_t h[HANDLE_BYTES];
	unsigned long long id, ino, lgen;
	int type, off;
	unsigned int n;
	uint64_t gen;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llu %d %n", &id, &type, &off) != 2 || !id)
			continue;
		sp = strchr(line + off, ' ');
		if (sp) {
			/* "ino gen" after the handle */
			if (sscanf(sp, " %llu %llu", &ino, &lgen) != 2 || !lgen)
				continue;
			*sp = 0;
		} else {
			ino = legacy_ino(id);	/* written by pohmeld <= 1.1 */
			lgen = 0;
		}
		if (unhex(line + off, h, sizeof(h), &n))
			continue;
		idspace_floor(id);
		gen = lgen;
		oid_put_ent(id, ino, type, h, n, false, &gen);
	}
	fclose(f);
}

/*
 * An entry whose handle the kernel calls stale names a removed object:
 * drop it, or the table would keep every object ever seen. (A file
 * removed but still open, at run time, is not stale yet: it is kept.)
 * Asked twice: decoding a directory's handle can fail once with ESTALE
 * while a rename races with its reconnection, and a dropped entry would
 * leave that directory's id ESTALE for good; a removed object's handle
 * stays stale.
 */
static bool stale_h(uint64_t id, int type, const uint8_t *h,
		    unsigned int hlen)
{
	union {
		struct file_handle fh;
		uint8_t raw[sizeof(struct file_handle) + HANDLE_BYTES];
	} u;
	int fd, try;

	if (id == POHMEL_ROOT_ID || hlen > HANDLE_BYTES)
		return false;
	for (try = 0; try < 2; try++) {
		u.fh.handle_type = type;
		u.fh.handle_bytes = hlen;
		memcpy(u.fh.f_handle, h, hlen);
		fd = open_by_handle_at(oid_root_fd, &u.fh, O_PATH | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			return false;
		}
		if (errno != ESTALE && errno != ENOENT)
			return false;
	}
	return true;
}

static bool stale(const struct oid_ent *e)
{
	return stale_h(e->id, e->type, e->h, e->hlen);
}

/*
 * Make the last rename in the state directory durable; 0 or errno. The
 * directory stays open: oid_sync runs under the caller's fsuid, which
 * may not open it.
 */
static int sync_dir(void)
{
	int err = 0;

	if (state_fd < 0 || fsync(state_fd)) {
		err = state_fd < 0 ? EBADF : errno;
		log_warn("state directory %s: fsync: %s", state_path,
			 strerror(err));
	}
	return err;
}

/* Must hold sync_mu: the renames up to rgen durable. */
static int sync_renames(uint64_t rgen)
{
	int err;

	if (rgen <= dir_synced)
		return 0;
	err = sync_dir();
	if (!err)
		dir_synced = rgen;
	return err;
}

/*
 * Every id handed out so far on disk (see "Durability" at the top): 0 or
 * errno. The file's fd is dup'ed under the lock: a compaction may switch
 * files meanwhile. Then fdatasync of the old file is still enough: until
 * the rename is durable the directory names the old file, whose lines up
 * to want are synced, and after it the new one, all of whose lines were
 * fsynced before the rename.
 */
int oid_sync(void)
{
	uint64_t want, rgen;
	int fd = -1, err;

	pthread_mutex_lock(&sync_mu);
	pthread_rwlock_rdlock(&oid_lock);
	want = log_gen;
	rgen = rename_gen;
	err = append_err;
	if (!err && want > log_synced && log_fd >= 0) {
		fd = fcntl(log_fd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			err = errno;
	}
	pthread_rwlock_unlock(&oid_lock);
	if (fd >= 0) {
		if (fdatasync(fd)) {
			err = errno;
			log_warn("state: syncing %s: %s", log_path,
				 strerror(err));
		}
		close(fd);
	}
	if (!err)
		err = sync_renames(rgen);
	if (!err && want > log_synced)
		log_synced = want;
	pthread_mutex_unlock(&sync_mu);
	return err;
}

/* Must hold oid_lock exclusively: the next compaction's threshold. */
static void set_compact_at(void)
{
	compact_at = 2 * log_lines;
	if (compact_at < COMPACT_FLOOR)
		compact_at = COMPACT_FLOOR;
}

/* At start (alone): rewrite the file from the table, stale entries
 * dropped; log_fd then appends to it. */
static int compact(void)
{
	const char *path = log_path, *tmp = tmp_path;
	size_t i;
	struct oid_ent *e, *next;

	log_lines = 0;
	append_err = 0;
	log_fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		      0600);
	if (log_fd < 0)
		return errno;
	for (i = 0; i < oid_tab_size; i++) {
		for (e = oid_tab[i]; e; e = next) {
			next = e->next;
			if (stale(e)) {
				oid_del_ent(e);
				continue;
			}
			oid_log_append(e);
		}
	}
	/* A line short (disk full): keep the old file, it is complete. */
	if (append_err || fsync(log_fd) || rename(tmp, path)) {
		int err = append_err ? append_err : errno;

		close(log_fd);
		log_fd = -1;
		unlink(tmp);
		return err;
	}
	/* Alone at start, before any thread: sync_mu is not needed (and
	 * would come after oid_lock, held here). */
	if (!sync_dir())
		dir_synced = rename_gen;
	log_synced = log_gen;
	set_compact_at();
	return 0;
}

/* An entry of a struct snap (oid_int.h): entries back to back. */
struct snap_ent {
	uint64_t id;
	uint64_t seq;
	uint64_t ino;
	uint64_t gen;
	int type;
	unsigned int hlen;
	bool stale;
	uint8_t h[];
};

#define SNAP_SIZE(hlen) \
	((offsetof(struct snap_ent, h) + (hlen) + 7) & ~(size_t)7)

/* The entry at *off in s, NULL past the end; *off moves on. */
static struct snap_ent *snap_next(const struct snap *s, size_t *off)
{
	struct snap_ent *c;

	if (*off >= s->len)
		return NULL;
	c = (void *)(s->buf + *off);
	*off += SNAP_SIZE(c->hlen);
	return c;
}

/*
 * Must hold oid_lock exclusively. Step 1, if the file has grown past
 * compact_at and no compaction runs: copy the table into s and set
 * compacting (then the caller, after unlocking, calls
 * oid_compact_online). false if not due, or out of memory: then no
 * compaction until the file doubles.
 */
bool oid_compact_start(struct snap *s)
{
	size_t i, off = 0;
	struct oid_ent *e;

	if (log_fd < 0 || compacting || log_lines <= compact_at)
		return false;
	s->len = 0;
	for (i = 0; i < oid_tab_size; i++)
		for (e = oid_tab[i]; e; e = e->next)
			s->len += SNAP_SIZE(e->hlen);
	s->buf = malloc(s->len ? s->len : 1);
	if (!s->buf) {
		log_warn("state: compacting the handle table: %s",
			 strerror(ENOMEM));
		set_compact_at();
		return false;
	}
	for (i = 0; i < oid_tab_size; i++) {
		for (e = oid_tab[i]; e; e = e->next) {
			struct snap_ent *c = (void *)(s->buf + off);

			c->id = e->id;
			c->seq = e->seq;
			c->ino = e->ino;
			c->gen = e->gen;
			c->type = e->type;
			c->hlen = e->hlen;
			c->stale = false;
			memcpy(c->h, e->h, e->hlen);
			off += SNAP_SIZE(e->hlen);
		}
	}
	compacting = true;
	pend_len = 0;
	pend_failed = false;
	return true;
}

/* Steps 2 and 3: stale entries marked, the others written to fd (then
 * fsynced), and the lines appended meanwhile after them. No lock held;
 * *lines counts the lines written. */
static int compact_write(int fd, struct snap *s, size_t *lines)
{
	char *buf, *p;
	size_t off = 0, n = 0, len, cap = 1 << 16;
	struct snap_ent *c;
	int err = 0, round;

	buf = malloc(cap);
	if (!buf)
		return ENOMEM;
	while (!err && (c = snap_next(s, &off))) {
		c->stale = stale_h(c->id, c->type, c->h, c->hlen);
		if (c->stale)
			continue;
		if (n + LINE_MAX_BYTES > cap) {
			err = write_all(fd, buf, n);
			n = 0;
		}
		n += fmt_line(buf + n, c->id, c->type, c->h, c->hlen, c->ino,
			      c->gen);
		(*lines)++;
	}
	if (!err)
		err = write_all(fd, buf, n);
	free(buf);
	if (!err && fsync(fd))
		err = errno;

	/* Step 3: what came in meanwhile, while it keeps coming. */
	for (round = 0; round < PEND_ROUNDS && !err; round++) {
		pthread_rwlock_wrlock(&oid_lock);
		if (pend_failed || !pend_len) {
			pthread_rwlock_unlock(&oid_lock);
			break;
		}
		p = pend_take(&len, &n);
		pthread_rwlock_unlock(&oid_lock);
		if (!p)
			continue;
		err = write_all(fd, p, len);
		free(p);
		if (!err && fsync(fd))
			err = errno;
		*lines += n;
	}
	return err;
}

/* Steps 2 to 5; the caller holds no lock and set compacting
 * (oid_compact_start). */
void oid_compact_online(struct snap *s)
{
	size_t off = 0, lines = 0, len, n;
	struct snap_ent *c;
	uint64_t rgen;
	int fd, err = 0, old;
	char *p;

	fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		  0600);
	if (fd < 0)
		err = errno;
	else
		err = compact_write(fd, s, &lines);

	/* Step 4. */
	pthread_rwlock_wrlock(&oid_lock);
	while ((c = snap_next(s, &off))) {
		struct oid_ent *e;

		if (!c->stale)
			continue;
		/* Not if re-registered since the snapshot (seq): then
		 * that is a live object's handle, and in pend. */
		e = oid_find(c->id);
		if (e && e->seq == c->seq)
			oid_del_ent(e);
	}
	if (!err && pend_failed)
		err = ENOMEM;
	if (!err && (p = pend_take(&len, &n))) {
		err = write_all(fd, p, len);
		free(p);
		if (!err && fsync(fd))
			err = errno;
		lines += n;
	}
	if (!err && rename(tmp_path, log_path))
		err = errno;
	if (!err) {
		old = log_fd;
		log_fd = fd;
		fd = -1;
		log_lines = lines;
		close(old);
		/* Written whole from the table and pend: no line missing. */
		append_err = 0;
		rename_gen++;
	} else if (fd >= 0) {
		close(fd);
		fd = -1;
		unlink(tmp_path);
	}
	set_compact_at();
	compacting = false;
	free(pend);
	pend = NULL;
	pend_len = pend_cap = 0;
	pend_failed = false;
	pthread_rwlock_unlock(&oid_lock);

	free(s->buf);
	if (err) {
		log_warn("state: compacting %s: %s", log_path, strerror(err));
		return;
	}
	/* Step 5 (an oid_sync may have done it already). */
	pthread_mutex_lock(&sync_mu);
	pthread_rwlock_rdlock(&oid_lock);
	rgen = rename_gen;
	pthread_rwlock_unlock(&oid_lock);
	sync_renames(rgen);
	pthread_mutex_unlock(&sync_mu);
}

/* fsync the directory holding path: a new entry there durable. */
static void sync_parent(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s",
			 slash == path ? 1 : (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd))
		log_warn("%s: fsync: %s", dir, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* mkdir -p, 0700 for what it creates, each made durable in its parent.
 * 0 or -1 with errno. */
static int mkdir_p(const char *path)
{
	char buf[4096], *p, c;

	if (strlen(path) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(buf, path);
	for (p = buf + 1;; p++) {
		if (*p && *p != '/')
			continue;
		c = *p;
		*p = 0;
		if (!mkdir(buf, 0700))
			sync_parent(buf);
		else if (errno != EEXIST)
			return -1;
		if (!c)
			return 0;
		*p = c;
	}
}

/*
 * At start, alone, holding oid_lock exclusively: the state directory
 * made and opened, the id counter started, the table loaded from the
 * file and the file compacted.
 */
int oid_log_init(const char *state_dir)
{
	int err;

	if (mkdir_p(state_dir)) {
		err = errno;
		log_err("state directory %s: %s", state_dir, strerror(err));
		return err;
	}
	snprintf(state_path, sizeof(state_path), "%s", state_dir);
	state_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (state_fd < 0) {
		err = errno;
		log_err("state directory %s: %s", state_dir, strerror(err));
		return err;
	}
	snprintf(log_path, sizeof(log_path), "%s/handles", state_dir);
	snprintf(tmp_path, sizeof(tmp_path), "%s.new", log_path);
	err = idspace_init(state_dir);
	if (err)
		return err;
	load(log_path);
	err = idspace_start();
	if (err) {
		log_err("state directory %s: cannot reserve object ids: %s",
			state_dir, strerror(err));
		return err;
	}
	err = compact();
	if (err)
		log_err("state file %s: %s", log_path, strerror(err));
	return err;
}

/* Must hold oid_lock exclusively (oid_fini). */
void oid_log_fini(void)
{
	if (log_fd >= 0) {
		fsync(log_fd);
		close(log_fd);
	}
	log_fd = -1;
	if (state_fd >= 0)
		close(state_fd);
	state_fd = -1;
	free(pend);
	pend = NULL;
	pend_len = pend_cap = 0;
}
