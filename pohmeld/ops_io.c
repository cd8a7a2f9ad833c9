// SPDX-License-Identifier: MIT
/*
 * ops_io.c - OPEN, CLOSE, READ, WRITE, FSYNC.
 *
 * An OPEN handle holds a real open file in the session, so an unlinked
 * but open file stays readable and writable through it, as locally; no
 * silly-rename files are needed. Without a handle, READ/WRITE/FSYNC
 * reopen the object for the one request with the caller's credentials.
 * Only regular files carry data here: a device or fifo is never opened
 * on the server on a client's behalf.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "pohmeld.h"

/*
 * Before the reply to an FSYNC or STABLE WRITE: the server's own state
 * that the client needs to reach what it names stable too (pohmel_proto.h
 * "Durability"): the object ids handed out so far and the session's
 * reply cache and open handles. Costs nothing when nothing is new.
 */
static int state_sync(struct req *r)
{
	int err = oid_sync();

	if (!err && r->s)
		err = session_sync(r->s);
	return err;
}

/* Reopen an O_PATH fd for I/O as the caller (permission checked). */
static int reopen(int fd, int flags, int *out)
{
	char path[64];
	int f;

	proc_path(path, sizeof(path), fd);
	f = open(path, flags | O_CLOEXEC | O_NOCTTY);
	if (f < 0)
		return errno;
	*out = f;
	return 0;
}

/*
 * A WRITE with POHMEL_IO_CREATED (1.5) from the regular file's owner:
 * written as through the fd its create returned (the owner could chmod
 * it anyway). Anyone else is checked as the caller.
 */
static bool io_created(const struct req *r, const struct stat *st)
{
	return (r->m->flags & POHMEL_IO_CREATED) && S_ISREG(st->st_mode) &&
	       st->st_uid == r->m->cr.uid;
}

/* An fd to do I/O on: the handle's, or the object reopened. */
static int io_fd(struct req *r, uint64_t handle, unsigned int need,
		 int oflags, int *fd)
{
	struct stat st;
	unsigned int hflags;
	int pfd, err;

	if (handle) {
		if (!r->s)
			return EBADF;
		err = session_handle_get(r->s, handle, &r->m->oid, fd,
					 &hflags);
		if (!err && (hflags & need) != need) {
			close(*fd);
			err = EBADF;
		}
		return err;
	}
	err = req_obj(r, &r->m->oid, &pfd, &st);
	if (err)
		return err;
	if (S_ISDIR(st.st_mode) && oflags != O_RDONLY)
		err = EISDIR;
	else if (S_ISDIR(st.st_mode))
		oflags |= O_DIRECTORY;
	else if (!S_ISREG(st.st_mode))
		err = EINVAL;
	if (!err && !io_created(r, &st))
		err = req_caller(r);
	if (!err)
		err = reopen(pfd, oflags, fd);
	close(pfd);
	return err;
}

/*
 * POHMEL_OPEN_CREATED from the file's owner: open it as open(2) after
 * O_CREAT does, without checking the new mode (the owner could chmod
 * it anyway). Anyone else is checked as the caller.
 */
static bool open_created(const struct msg *m, const struct stat *st)
{
	return (m->flags & POHMEL_OPEN_CREATED) && S_ISREG(st->st_mode) &&
	       st->st_uid == m->cr.uid;
}

int op_open(struct req *r)
{
	const struct msg *m = r->m;
	unsigned int flags = m->flags & POHMEL_OPEN_ALL;
	struct stat st;
	uint64_t handle;
	int pfd, fd = -1, err, acc;
	uint8_t *p;

	if (!r->s)
		return EINVAL;
	err = req_obj(r, &m->oid, &pfd, &st);
	if (err)
		return err;
	err = open_created(m, &st) ? 0 : req_caller(r);
	if (err)
		goto out_pfd;
	if (flags == 0) {
		/* Only keep the object alive (e.g. a directory or symlink). */
		fd = pfd;
		pfd = -1;
	} else if (S_ISDIR(st.st_mode)) {
		err = flags & POHMEL_OPEN_WRITE ? EISDIR :
		      reopen(pfd, O_RDONLY | O_DIRECTORY, &fd);
	} else if (S_ISREG(st.st_mode)) {
		acc = flags == POHMEL_OPEN_ALL ? O_RDWR :
		      flags & POHMEL_OPEN_WRITE ? O_WRONLY : O_RDONLY;
		err = reopen(pfd, acc, &fd);
	} else {
		err = S_ISLNK(st.st_mode) ? ELOOP : ENXIO;
	}
	if (err)
		goto out_pfd;
	p = req_put(r, POHMEL_OPEN_REPLY_SIZE);
	if (!p) {
		err = E2BIG;
		goto out_fd;
	}
	r->len = 0;
	err = attr_put_known(r, fd, &m->oid);
	if (err)
		goto out_fd;
	err = session_handle_add(r->s, fd, &m->oid, flags, &handle);
	if (err)
		goto out_fd;
	put64(p + POHMEL_ATTR_SIZE, handle);
	r->len = POHMEL_OPEN_REPLY_SIZE;
	fd = -1;	/* the session owns it now */
out_fd:
	if (fd >= 0)
		close(fd);
out_pfd:
	if (pfd >= 0)
		close(pfd);
	return err;
}

int op_close(struct req *r)
{
	int err;

	if (!r->s)
		return EBADF;
	err = session_handle_close(r->s, r->m->handle, &r->m->oid);
	if (!err)
		lock_close(session_id(r->s), r->m->oid.id);
	return err;
}

/*
 * A READ answered from the file: the reply carries the attributes, and
 * the bytes up to EOF follow it by sendfile (outbox_reply_rf), which
 * takes fd. Below READ_SENDFILE_MIN a pread costs no more.
 */
#define READ_SENDFILE_MIN	(32U << 10)

static int read_sendfile(struct req *r, int fd, uint8_t *p, uint32_t want)
{
	uint64_t off = r->m->offset, size;
	uint32_t got = 0;
	int err;

	r->len = 0;
	err = attr_put_known(r, fd, &r->m->oid);
	if (err) {
		close(fd);
		return err;
	}
	size = get64(p + 16);	/* the attributes' size (wattr_put) */
	if (off < size)
		got = (uint32_t)MIN((uint64_t)want, size - off);
	put32(p + POHMEL_ATTR_SIZE, got);
	put32(p + POHMEL_ATTR_SIZE + 4, 0);
	r->len = POHMEL_IO_REPLY_SIZE;
	stats.bytes_read += got;
	stats.bytes_sendfile += got;
	r->rf->fd = fd;
	r->rf->off = off;
	r->rf->len = got;
	return 0;
}

int op_read(struct req *r)
{
	const struct msg *m = r->m;
	uint32_t want, got = 0;
	uint8_t *p, *data;
	int fd, err;

	p = req_put(r, POHMEL_IO_REPLY_SIZE);
	if (!p)
		return E2BIG;
	want = MIN(m->count, r->cap - r->len);
	err = io_fd(r, m->handle, HANDLE_READ, O_RDONLY, &fd);
	if (err)
		return err;
	if (r->rf && want >= READ_SENDFILE_MIN)
		return read_sendfile(r, fd, p, want);
	data = r->out + r->len;
	while (got < want) {
		ssize_t n = pread(fd, data + got, want - got,
				  (off_t)(m->offset + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			goto out;
		}
		if (n == 0)
			break;
		got += (uint32_t)n;
	}
	r->len = 0;
	err = attr_put_known(r, fd, &m->oid);
	if (err)
		goto out;
	put32(p + POHMEL_ATTR_SIZE, got);
	put32(p + POHMEL_ATTR_SIZE + 4, 0);
	r->len = POHMEL_IO_REPLY_SIZE + got;
	stats.bytes_read += got;
out:
	close(fd);
	return err;
}

int op_write(struct req *r)
{
	const struct msg *m = r->m;
	uint32_t done = 0;
	uint8_t *p;
	int fd, err;

	if ((m->flags & POHMEL_IO_CREATED) &&
	    (m->handle || !r->c || !(r->c->features & POHMEL_FEAT_WB_DATA)))
		return EINVAL;
	p = req_put(r, POHMEL_IO_REPLY_SIZE);
	if (!p)
		return E2BIG;
	r->len = 0;
	err = io_fd(r, m->handle, HANDLE_WRITE, O_WRONLY, &fd);
	if (err)
		return err;
	/*
	 * Write as the caller even through a handle: the kernel clears
	 * S_ISUID (and S_ISGID with group-exec) for a writer without
	 * CAP_FSETID, which a non-zero fsuid drops, as for a local writer.
	 */
	err = req_caller(r);
	if (err)
		goto out;
	while (done < m->count) {
		ssize_t n = pwrite(fd, m->data + done, m->count - done,
				   (off_t)(m->offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			goto out;
		}
		done += (uint32_t)n;
	}
	if (m->flags & POHMEL_IO_STABLE) {
		err = fdatasync(fd) ? errno : state_sync(r);
		if (err)
			goto out;
	}
	if (m->flags & POHMEL_IO_TIMES) {
		struct stat st;

		if (!fstat(fd, &st))
			ctime_note(m->oid.id, &m->ctime, &m->mtime, &st);
	}
	err = attr_put_known(r, fd, &m->oid);
	if (err)
		goto out;
	put32(p + POHMEL_ATTR_SIZE, done);
	put32(p + POHMEL_ATTR_SIZE + 4, 0);
	r->len = POHMEL_IO_REPLY_SIZE;
	stats.bytes_written += done;
out:
	close(fd);
	return err;
}

/*
 * Stable storage before the reply: a file's data (and without DATAONLY
 * its metadata), a directory's entries (fsync(2) of it), with FSYNC_FS
 * the whole export (syncfs(2); oid names any object of it, checked, and
 * needs no access: `sync` needs none either); and always the server's
 * own state (state_sync).
 */
int op_fsync(struct req *r)
{
	const struct msg *m = r->m;
	struct stat st;
	int fd, err;

	if (m->handle) {
		err = io_fd(r, m->handle, 0, O_RDONLY, &fd);
	} else if (m->flags & POHMEL_FSYNC_FS) {
		err = req_obj(r, &m->oid, &fd, &st);
	} else {
		err = req_obj(r, &m->oid, &fd, &st);
		/*
		 * Reopened with the server's own credentials: fsync reads and
		 * changes nothing, and a client commits the writes of a
		 * write-only opener, or as someone who may not read the file
		 * (its flusher), without a handle.
		 */
		if (!err && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
			int pfd = fd;

			err = reopen(pfd, S_ISDIR(st.st_mode) ?
				     O_RDONLY | O_DIRECTORY : O_RDONLY, &fd);
			close(pfd);
		}
	}
	if (err)
		return err;
	/* Every object is on the root's filesystem (oid_of_fd: EXDEV);
	 * syncfs needs an fd that is not O_PATH: the root's. */
	if (m->flags & POHMEL_FSYNC_FS ? syncfs(srv.rootfd) :
	    m->flags & POHMEL_FSYNC_DATAONLY ? fdatasync(fd) : fsync(fd))
		err = errno;
	if (err == EBADF || err == EINVAL)
		err = 0;	/* O_PATH fd of a special file: nothing to sync */
	if (!err)
		err = state_sync(r);
	if (!err)
		err = attr_put_known(r, fd, &m->oid);
	close(fd);
	return err;
}
