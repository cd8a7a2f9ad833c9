// SPDX-License-Identifier: MIT
/*
 * session_rec.c - a session's file: its records, written as the session
 * changes, and read back at start (framing and files in sessfile.c).
 *
 * Sessions also outlive pohmeld itself (sessfile.c): every change of the
 * reply cache and of the open handles is appended to the session's file
 * before the reply that depends on it is sent, and at start pohmeld
 * loads the files back, as in NFSv4.1's persistent sessions. So after a
 * crash, SIGKILL or clean stop, a client that replays finds:
 * - replies to what was executed: answered from the cache, not re-run;
 * - a request that was running when pohmeld died ("in doubt": its BEGIN
 *   record has no REPLY): run again, and where the re-run can only fail
 *   because the first run succeeded (EEXIST of a create, ENOENT of an
 *   unlink, rename or rmdir), answered as done (dispatch.c);
 * - its open handles: kept by number and reopened by object id on first
 *   use (as root, with the access the OPEN was granted). An object that
 *   was unlinked while open is gone with the old process: ESTALE.
 * Locks are not persisted: they end with the process (see README.md).
 * That is after a crash of pohmeld (the appends are in the page cache).
 * After a crash of the machine the file holds at least what it held at
 * the session's last FSYNC or STABLE WRITE reply (session_sync), and
 * every object id handed out by then (oid_sync): what the client was
 * told is stable stays reachable; a later request may be run again.
 *
 * The file is rewritten from the live state every REWRITE_RECS records
 * and once loaded, and every record read back is checked first: the
 * file is hostile input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "session_int.h"

/*
 * Write the live state (cache window, handles) to a fresh file and make
 * it the session's file. Must hold s->mu. Running entries are written as
 * BEGIN: their REPLY follows in the new file.
 */
static int rewrite(struct session *s)
{
	uint8_t b[32];
	uint32_t i;
	int fd, err = 0;

	fd = sfile_start_rewrite(s->uuid, s->boot_gen);
	if (fd < 0)
		return errno ? errno : EIO;
	err = sfile_append(fd, SR_OWNER, s->owner, OWNER_LEN, NULL, 0);
	for (i = 0; i < POHMEL_REPLY_CACHE && !err; i++) {
		const struct cache_ent *e = &s->cache[i];

		if (!e->seq)
			continue;
		if (e->busy || e->indoubt)
			err = sfile_append(fd, SR_BEGIN, b, enc_seq(b, e->seq),
					   NULL, 0);
		else
			err = sfile_append(fd, SR_REPLY, b, enc_reply(b, e),
					   e->payload, e->plen);
	}
	for (i = 0; i < s->nhandles && !err; i++) {
		const struct handle_ent *h = &s->handles[i];

		if (h->fd >= 0 || h->restored)
			err = sfile_append(fd, SR_OPEN, b, enc_open(b, i, h),
					   NULL, 0);
	}
	for (i = 0; i < s->idr.n && !err; i++)
		err = sfile_append(fd, SR_RANGE, b, idr_enc(b, &s->idr.r[i]),
				   NULL, 0);
	/* A machine crash must not leave an empty file behind a rename. */
	if (!err && fdatasync(fd))
		err = errno;
	if (!err)
		err = sfile_commit(s->uuid, s->boot_gen);
	if (err) {
		close(fd);
		return err;
	}
	if (s->sfd >= 0)
		close(s->sfd);
	s->sfd = fd;
	s->nrecs = 0;
	/* All of the state is in the synced file; its name is not yet
	 * durable (session_sync syncs the directory). */
	s->synced_gen = s->app_gen;
	s->name_gen = sfile_dir_gen();
	return 0;
}

/*
 * Append one record before the reply that relies on it goes out. Must
 * hold s->mu. If the file cannot be written it is removed: a file with
 * a hole would answer a replay wrongly, no file only re-executes it.
 * A failed rewrite leaves the old file, complete: it grows on.
 */
void sess_rec_put(struct session *s, uint32_t type, const uint8_t *a,
		  uint32_t alen, const uint8_t *b, uint32_t blen)
{
	int err, rerr;

	if (s->sfd < 0)
		return;
	err = sfile_append(s->sfd, type, a, alen, b, blen);
	if (!err)
		s->app_gen++;
	if (!err && ++s->nrecs >= REWRITE_RECS) {
		rerr = rewrite(s);
		if (rerr) {
			log_warn("session %llu: cannot rewrite its state file: %s",
				 (unsigned long long)s->id, strerror(rerr));
			s->nrecs = 0;	/* try again later */
		}
	}
	if (err) {
		log_warn("session %llu: state file: %s: not kept across a restart",
			 (unsigned long long)s->id, strerror(err));
		close(s->sfd);
		s->sfd = -1;
		sfile_remove(s->uuid, s->boot_gen);
	}
}

/*
 * Make the session's file stable (pohmel_proto.h "Durability": every
 * FSYNC makes the reply cache and open handles stable before its reply):
 * fdatasync if records were appended since the last sync, and the
 * sessions directory if the file's name is newer than its last fsync.
 * Concurrent callers queue on sync_mu and the later ones usually find
 * their records synced already; with nothing new this costs two
 * compares. The fd is dup'ed under mu: a rewrite may replace the file
 * meanwhile, and syncing the old one is still enough (until the rename
 * is durable the old name is what a crash leaves; the new file was
 * synced whole before it). 0, or errno if the disk failed. A session
 * without a file (it could not be written, logged then) has nothing to
 * sync: it is not kept across a restart at all.
 */
int session_sync(struct session *s)
{
	uint64_t want, ngen;
	int fd = -1, err = 0;

	pthread_mutex_lock(&s->sync_mu);
	pthread_mutex_lock(&s->mu);
	want = s->app_gen;
	ngen = s->name_gen;
	if (s->sfd >= 0 && want > s->synced_gen) {
		fd = fcntl(s->sfd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			err = errno;
	}
	pthread_mutex_unlock(&s->mu);
	if (fd >= 0) {
		if (fdatasync(fd)) {
			err = errno;
			log_warn("session %llu: syncing its state file: %s",
				 (unsigned long long)s->id, strerror(err));
		}
		close(fd);
	}
	if (!err)
		err = sfile_sync_dir(ngen);
	if (!err) {
		pthread_mutex_lock(&s->mu);
		if (want > s->synced_gen)
			s->synced_gen = want;
		pthread_mutex_unlock(&s->mu);
	}
	pthread_mutex_unlock(&s->sync_mu);
	return err;
}

/* ---- loading the session files at start ---- */

/*
 * Every record of a session file is hostile input (a damaged disk, a
 * crafted file): NULL if the record is one pohmeld could have written,
 * else what is wrong with it. Lengths are checked before anything is
 * read from the body.
 */
static const char *rec_check(uint32_t type, const uint8_t *b, uint32_t n)
{
	switch (type) {
	case SR_BEGIN:
	case SR_ABORT:
		if (n != 8)
			return "length is not 8";
		return get64(b) ? NULL : "sequence number 0";
	case SR_REPLY:
		if (n < 16)
			return "shorter than 16 bytes";
		if (!get64(b))
			return "sequence number 0";
		return get32(b + 12) ? "reserved field not zero" : NULL;
	case SR_OPEN:
		if (n != 32)
			return "length is not 32";
		if (get32(b) >= MAX_HANDLES)
			return "handle slot out of range";
		if (!get32(b + 4))
			return "handle generation 0";
		return get32(b + 12) ? "reserved field not zero" : NULL;
	case SR_CLOSE:
		if (n != 8)
			return "length is not 8";
		return get32(b) >= MAX_HANDLES ? "handle slot out of range" :
		       NULL;
	case SR_OWNER:
		if (n != OWNER_LEN)
			return "owner length is wrong";
		return !sess_owner_known(b) ?
		       "written for a client of another key (not in the key file)" :
		       NULL;
	case SR_RANGE: {
		struct idr_range r;

		if (n != IDR_REC_LEN)
			return "length is not 24";
		idr_dec(b, &r);
		return idr_check_rec(&r);
	}
	default:
		return "unknown record type";
	}
}

/* Apply one record, checked by rec_check(), to a session being loaded. */
static void restore_rec(struct session *s, uint32_t type, const uint8_t *b,
			uint32_t n)
{
	struct cache_ent *e;
	struct handle_ent *h;
	uint64_t seq;
	uint32_t slot;

	if (rec_check(type, b, n))
		return;		/* never: restore() refused the file */
	switch (type) {
	case SR_BEGIN:
	case SR_REPLY:
	case SR_ABORT:
		seq = get64(b);
		e = &s->cache[seq % POHMEL_REPLY_CACHE];
		if (e->seq > seq)
			return;	/* never written in this order; ignore */
		if (type == SR_ABORT) {
			if (e->seq == seq)
				e->seq = 0;
			return;
		}
		free(e->payload);
		e->payload = NULL;
		e->plen = 0;
		e->seq = seq;
		e->indoubt = type == SR_BEGIN;
		e->status = type == SR_REPLY ? get32(b + 8) : 0;
		if (type == SR_REPLY && n > 16) {
			e->payload = malloc(n - 16);
			if (!e->payload) {
				e->seq = 0;
				return;
			}
			memcpy(e->payload, b + 16, n - 16);
			e->plen = n - 16;
		}
		if (seq > s->max_seq)
			s->max_seq = seq;
		return;
	case SR_OPEN:
	case SR_CLOSE:
		slot = get32(b);
		if (sess_handles_grow(s, slot + 1))
			return;
		h = &s->handles[slot];
		if (type == SR_CLOSE) {
			if (h->gen == get32(b + 4))
				h->restored = false;
			return;
		}
		h->restored = true;
		h->gen = get32(b + 4);
		h->flags = get32(b + 8) & POHMEL_OPEN_ALL;
		h->oid.id = get64(b + 16);
		h->oid.gen = get64(b + 24);
		if (h->gen > s->hgen)
			s->hgen = h->gen;
		return;
	case SR_OWNER:
		memcpy(s->owner, b, OWNER_LEN);
		return;
	case SR_RANGE: {
		struct idr_range r;

		idr_dec(b, &r);
		idr_restore(&s->idr, &r);
		return;
	}
	}
}

/*
 * One session file (sfile_scan): false refuses it (the caller logs why
 * and removes it), true keeps it, with a warning if why[0]. The whole
 * file is checked before anything of it is used: a file with one bad
 * record is not half loaded.
 */
static bool restore(const uint8_t uuid[16], uint64_t boot_gen,
		    const uint8_t *data, size_t len, char *why, size_t wl)
{
	const uint8_t *p = data, *body;
	size_t left = len, off;
	struct session *s;
	uint32_t type, blen, nrec = 0;
	const char *bad;
	int err;

	for (;;) {
		off = len - left;
		if (!sfile_next(&p, &left, &type, &body, &blen))
			break;
		bad = rec_check(type, body, blen);
		if (bad) {
			snprintf(why, wl, "record %u at offset %zu (type %u, %u bytes): %s",
				 nrec, off, type, blen, bad);
			return false;
		}
		nrec++;
	}
	if (left)
		snprintf(why, wl, "damaged or torn record at offset %zu (%zu bytes to the end) ignored, %u records before it kept",
			 len - left, left, nrec);

	s = sess_new_restored(uuid, boot_gen, why, wl);
	if (!s)
		return false;
	p = data;
	left = len;
	while (sfile_next(&p, &left, &type, &body, &blen))
		restore_rec(s, type, body, blen);
	/* Rewritten at once: appends after a damaged tail would be lost. */
	pthread_mutex_lock(&s->mu);
	err = rewrite(s);
	pthread_mutex_unlock(&s->mu);
	if (err)
		log_warn("session %llu: state file: %s: not kept across another restart",
			 (unsigned long long)s->id, strerror(err));
	return true;
}

/*
 * At start, before the first connection: every session file becomes a
 * session without connections, kept for session-timeout from now.
 */
void sessions_load(void)
{
	int n;

	sfile_scan(restore);
	n = sessions_count();
	if (n)
		log_info("%d client session%s restored", n, n == 1 ? "" : "s");
}
