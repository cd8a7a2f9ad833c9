// SPDX-License-Identifier: MIT
/*
 * ops_dir.c - the namespace: READDIR, CREATE/MKDIR/MKNOD/SYMLINK,
 * READLINK, LINK, UNLINK/RMDIR, RENAME.
 *
 * Every call is a *at() syscall on a directory fd opened from a file
 * handle plus one validated name, so a directory swapped for a symlink
 * between two requests changes nothing: the fd still names the directory
 * the client meant, and a symlink is never a directory fd.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "pohmeld.h"

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

#define DENTS_BUF	32768

/* Resolve the directory of a request and switch to the caller. */
static int dir_enter(struct req *r, const struct woid *o, int *dirfd)
{
	struct stat st;
	int err;

	err = req_obj(r, o, dirfd, &st);
	if (err)
		return err;
	if (!S_ISDIR(st.st_mode)) {
		err = ENOTDIR;
		goto err_close;
	}
	err = req_caller(r);
	if (err)
		goto err_close;
	return 0;

err_close:
	close(*dirfd);
	return err;
}

/*
 * Cookies are the d_off values getdents64 reports (ext4: name hashes,
 * tmpfs/xfs/btrfs: stable offsets), which lseek() accepts back: they stay
 * valid while the directory changes, unlike an index.
 */
int op_readdir(struct req *r)
{
	const struct msg *m = r->m;
	uint32_t limit = MIN(m->count, r->cap), count = 0, flags = 0;
	uint8_t *head, *buf;
	char path[64];
	int dirfd, dfd, err;

	if (limit < POHMEL_READDIR_REPLY_SIZE + POHMEL_DIRENT_SIZE +
		    pad8(POHMEL_NAME_MAX))
		return EINVAL;
	if (m->cookie > INT64_MAX)
		return EINVAL;
	err = dir_enter(r, &m->oid, &dirfd);
	if (err)
		return err;
	proc_path(path, sizeof(path), dirfd);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		err = errno;
		goto out_dir;
	}
	buf = malloc(DENTS_BUF);
	if (!buf) {
		err = ENOMEM;
		goto out_dfd;
	}
	if (lseek(dfd, (off_t)m->cookie, SEEK_SET) < 0) {
		err = errno;
		goto out_buf;
	}
	head = req_put(r, POHMEL_READDIR_REPLY_SIZE);
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, DENTS_BUF);
		long pos;

		if (n < 0) {
			err = errno;
			goto out_buf;
		}
		if (n == 0) {
			flags |= POHMEL_READDIR_EOF;
			break;
		}
		for (pos = 0; pos < n;) {
			struct linux_dirent64 *d = (void *)(buf + pos);
			uint32_t nl = (uint32_t)strlen(d->d_name);
			struct wattr a;
			uint8_t *p;
			int fd;

			pos += d->d_reclen;
			if (proto_name_check(d->d_name, nl))
				continue;	/* ".", ".." */
			if (r->len + POHMEL_DIRENT_SIZE + pad8(nl) > limit)
				goto full;
			if (child_open(dirfd, d->d_name, &fd))
				continue;	/* gone meanwhile, or a mount */
			err = attr_of_fd(fd, NULL, NULL, &a);
			if (!err)
				grant_fill(r, fd, &a);
			close(fd);
			if (err) {
				err = 0;
				continue;
			}
			p = req_put(r, POHMEL_DIRENT_SIZE + pad8(nl));
			memset(p, 0, POHMEL_DIRENT_SIZE + pad8(nl));
			wattr_put(p, &a);
			put64(p + POHMEL_ATTR_SIZE, (uint64_t)d->d_off);
			put16(p + POHMEL_ATTR_SIZE + 8, (uint16_t)nl);
			memcpy(p + POHMEL_DIRENT_SIZE, d->d_name, nl);
			count++;
		}
	}
full:
	{
		struct wattr a;

		err = attr_of_fd(dirfd, NULL, &m->oid, &a);
		if (err)
			goto out_buf;
		grant_fill(r, dirfd, &a);
		wattr_put(head, &a);
		put32(head + POHMEL_ATTR_SIZE, count);
		put32(head + POHMEL_ATTR_SIZE + 4, flags);
	}
out_buf:
	free(buf);
out_dfd:
	close(dfd);
out_dir:
	close(dirfd);
	return err;
}

/* pohmel_entry_reply: the object under name, then its directory. */
static int entry_reply(struct req *r, int dirfd, const char *name,
		       const struct woid *dir)
{
	int fd, err;

	err = child_open(dirfd, name, &fd);
	if (err)
		return err;
	err = attr_put(r, fd);
	close(fd);
	if (!err)
		err = attr_put_known(r, dirfd, dir);
	return err;
}

/*
 * POHMEL_CREATE_TIME: the new object gets the client's time as atime and
 * mtime, and its ctime is reported as that too until it changes again
 * (ctimes.c). As the caller, who owns it.
 */
static void client_times(int dirfd, const char *name, uint64_t id,
			 const struct wtime *t)
{
	struct timespec ts[2] = {
		{ .tv_sec = (time_t)t->sec, .tv_nsec = (long)t->nsec },
		{ .tv_sec = (time_t)t->sec, .tv_nsec = (long)t->nsec },
	};
	struct stat st;

	/* the object is made: a failure here only leaves the disk's times */
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) ||
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		log_info("object %llu: the creating client's times not set: %s",
			 (unsigned long long)id, strerror(errno));
		return;
	}
	ctime_note(id, t, NULL, &st);
}

int op_create(struct req *r)
{
	const struct msg *m = r->m;
	mode_t perm = m->mode & 07777, fmt = m->mode & S_IFMT;
	char target[POHMEL_PATH_MAX + 1];
	int dirfd, err = 0, fd;
	struct woid want;
	uint64_t min_seq = 0;
	dev_t dev = 0;

	switch (m->hdr.op) {
	case POHMEL_OP_CREATE:
		if (fmt && fmt != S_IFREG)
			return EINVAL;
		break;
	case POHMEL_OP_MKDIR:
		if (fmt && fmt != S_IFDIR)
			return EINVAL;
		break;
	case POHMEL_OP_MKNOD:
		if (fmt == S_IFCHR || fmt == S_IFBLK)
			dev = makedev(wire_dev_major(m->rdev),
				      wire_dev_minor(m->rdev));
		else if (fmt != S_IFIFO && fmt != S_IFSOCK)
			return EINVAL;
		break;
	case POHMEL_OP_SYMLINK:
		memcpy(target, m->data, m->dlen);
		target[m->dlen] = 0;
		break;
	}
	if (m->flags & POHMEL_CREATE_ID) {
		err = idr_create_check(r, &want);
		if (err)
			return err;
		/* a re-run binds only an object registered by nobody */
		min_seq = r->redo ? UINT64_MAX : oid_seq();
	}
	err = dir_enter(r, &m->oid, &dirfd);
	if (err)
		return err;

	switch (m->hdr.op) {
	case POHMEL_OP_CREATE:
		if (mknodat(dirfd, m->name, S_IFREG | perm, 0)) {
			struct stat st;

			err = errno;
			/* CREATE_ID: always a new object */
			if (err != EEXIST ||
			    m->flags & (POHMEL_CREATE_EXCL | POHMEL_CREATE_ID))
				break;
			/* Not exclusive: an existing regular file is fine. */
			if (fstatat(dirfd, m->name, &st, AT_SYMLINK_NOFOLLOW)) {
				err = errno;
				break;
			}
			err = S_ISREG(st.st_mode) ? 0 :
			      S_ISDIR(st.st_mode) ? EISDIR : EEXIST;
		}
		break;
	case POHMEL_OP_MKDIR:
		err = mkdirat(dirfd, m->name, perm) ? errno : 0;
		break;
	case POHMEL_OP_MKNOD:
		err = mknodat(dirfd, m->name, fmt | perm, dev) ? errno : 0;
		break;
	case POHMEL_OP_SYMLINK:
		err = symlinkat(target, dirfd, m->name) ? errno : 0;
		break;
	}
	if (err)
		goto out_dir;

	/* An unsquashed root caller may ask for another owner. */
	if (r->cr.priv && (m->uid != 0 || m->gid != r->cr.gid) &&
	    !child_open(dirfd, m->name, &fd)) {
		if (fchownat(fd, "", m->uid, m->gid, AT_EMPTY_PATH))
			err = errno;
		close(fd);
		if (err)
			goto out_dir;
	}
	if (m->flags & POHMEL_CREATE_ID) {
		err = idr_create_bind(r, dirfd, m->name, &want, min_seq);
		if (err)
			goto out_dir;
	}
	if (m->flags & POHMEL_CREATE_TIME)
		client_times(dirfd, m->name, m->cid, &m->ctime);
	err = entry_reply(r, dirfd, m->name, &m->oid);
out_dir:
	close(dirfd);
	return err;
}

int op_readlink(struct req *r)
{
	char *buf = (char *)r->out;
	struct stat st;
	ssize_t n;
	int fd, err;

	err = req_obj(r, &r->m->oid, &fd, &st);
	if (err)
		return err;
	if (!S_ISLNK(st.st_mode)) {
		close(fd);
		return EINVAL;
	}
	n = readlinkat(fd, "", buf, MIN(r->cap, POHMEL_PATH_MAX));
	err = n < 0 ? errno : 0;
	close(fd);
	if (!err)
		r->len = (uint32_t)n;
	return err;
}

int op_link(struct req *r)
{
	const struct msg *m = r->m;
	char path[64];
	struct stat st;
	int objfd, dirfd, err;

	err = req_obj(r, &m->oid, &objfd, &st);
	if (err)
		return err;
	if (S_ISDIR(st.st_mode)) {
		err = EPERM;
		goto out_obj;
	}
	err = dir_enter(r, &m->oid2, &dirfd);
	if (err)
		goto out_obj;
	/*
	 * linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH, which the caller's
	 * fsuid does not carry; following the /proc magic link needs none
	 * and still names exactly objfd's inode.
	 */
	proc_path(path, sizeof(path), objfd);
	if (linkat(AT_FDCWD, path, dirfd, m->name, AT_SYMLINK_FOLLOW))
		err = errno;
	else
		err = entry_reply(r, dirfd, m->name, &m->oid2);
	close(dirfd);
out_obj:
	close(objfd);
	return err;
}

/*
 * UNLINK/RMDIR took effect (or a re-run found it done): what the client
 * gave up with it (POHMEL_REMOVE_*), as CLOSE and RELEASE would. So the
 * removal is the only message: no CLOSE of an idle handle follows, no
 * RELEASE at the inode's eviction, and the handle's fd, the last hold
 * on the inode, is closed while the request still marks the object in
 * flight, so its inotify events are known for pohmeld's own (no RECALL).
 */
static void op_remove_forget(struct req *r)
{
	const struct msg *m = r->m;
	uint32_t i;

	for (i = 0; r->s && m->flags & POHMEL_REMOVE_CLOSE && i < m->count;
	     i++)
		session_handle_close(r->s, get64(m->data + (size_t)i * 8),
				     &m->oid2);
	if (m->flags & POHMEL_REMOVE_RELEASE && r->c)
		grants_release(r->c, &m->oid2);
}

int op_remove(struct req *r)
{
	const struct msg *m = r->m;
	int dirfd, err;

	if (m->flags && (!r->c || !(r->c->features & POHMEL_FEAT_FORGET)))
		return EINVAL;
	err = dir_enter(r, &m->oid, &dirfd);
	if (err)
		return err;
	if (unlinkat(dirfd, m->name,
		     m->hdr.op == POHMEL_OP_RMDIR ? AT_REMOVEDIR : 0))
		err = errno;
	else
		err = attr_put_known(r, dirfd, &m->oid);
	close(dirfd);
	if (!err)
		op_remove_forget(r);
	return err;
}

int op_rename(struct req *r)
{
	const struct msg *m = r->m;
	struct stat st;
	int olddir, newdir, err;

	err = req_obj(r, &m->oid, &olddir, &st);
	if (err)
		return err;
	if (!S_ISDIR(st.st_mode)) {
		err = ENOTDIR;
		goto out_old;
	}
	err = dir_enter(r, &m->oid2, &newdir);
	if (err)
		goto out_old;
	/* POHMEL_RENAME_* are Linux's RENAME_NOREPLACE/EXCHANGE values. */
	if (syscall(SYS_renameat2, olddir, m->name, newdir, m->name2,
		    m->flags))
		err = errno;
	else
		err = entry_reply(r, newdir, m->name2, &m->oid2);
	close(newdir);
out_old:
	close(olddir);
	return err;
}

/*
 * A request in doubt (session_rec.c: pohmeld died while running it, so it
 * may have taken effect) ran again and failed the way it fails when the
 * first run did take effect: answer it as done, with the reply the first
 * run would have sent. Checked: the name now holds an object of the kind
 * asked for (CREATE, MKDIR, MKNOD, SYMLINK), the very object (LINK), an
 * object under the new name (RENAME); UNLINK/RMDIR only have ENOENT,
 * SETXATTR with XATTR_CREATE only EEXIST, REMOVEXATTR only ENODATA.
 * Another client doing the same in that instant is indistinguishable:
 * the price of a window (between the change and its reply record) that
 * no log outside the filesystem can close. Anything else: status as is.
 */
int op_redo_done(struct req *r, int status)
{
	const struct msg *m = r->m;
	const struct woid *dir = &m->oid;
	const char *name = m->name;
	mode_t want = 0;
	struct stat st;
	int dirfd, fd, err;

	switch (m->hdr.op) {
	case POHMEL_OP_CREATE:
		want = S_IFREG;
		break;
	case POHMEL_OP_MKDIR:
		want = S_IFDIR;
		break;
	case POHMEL_OP_MKNOD:
		want = m->mode & S_IFMT;
		break;
	case POHMEL_OP_SYMLINK:
		want = S_IFLNK;
		break;
	case POHMEL_OP_LINK:
		dir = &m->oid2;
		break;
	case POHMEL_OP_RENAME:
		if (status != ENOENT || m->flags & POHMEL_RENAME_EXCHANGE)
			return status;
		dir = &m->oid2;
		name = m->name2;
		break;
	case POHMEL_OP_UNLINK:
	case POHMEL_OP_RMDIR:
		if (status != ENOENT)
			return status;
		break;
	case POHMEL_OP_SETXATTR:
		/* XATTR_CREATE found the value the first run set: empty reply */
		return status == EEXIST && m->flags & POHMEL_XATTR_CREATE ?
		       0 : status;
	case POHMEL_OP_REMOVEXATTR:
		return status == ENODATA ? 0 : status;
	default:
		return status;
	}
	if (status != EEXIST && m->hdr.op != POHMEL_OP_RENAME &&
	    m->hdr.op != POHMEL_OP_UNLINK && m->hdr.op != POHMEL_OP_RMDIR)
		return status;
	r->len = 0;
	if (dir_enter(r, dir, &dirfd))
		return status;
	if (m->hdr.op == POHMEL_OP_UNLINK || m->hdr.op == POHMEL_OP_RMDIR) {
		err = attr_put_known(r, dirfd, dir);
		if (!err)
			op_remove_forget(r);
		goto out;
	}
	err = child_open(dirfd, name, &fd);
	if (!err) {
		if (fstat(fd, &st))
			err = errno;
		else if (want && (st.st_mode & S_IFMT) != want)
			err = EEXIST;
		else if (m->hdr.op == POHMEL_OP_LINK &&
			 oid_id_of_ino(st.st_ino) != m->oid.id)
			err = EEXIST;
		close(fd);
	}
	/* a create under a delegated id: the id goes to what it made */
	if (!err && want && m->flags & POHMEL_CREATE_ID) {
		struct woid w;

		err = idr_create_check(r, &w);
		if (!err)
			err = idr_create_bind(r, dirfd, name, &w, UINT64_MAX);
	}
	if (!err)
		err = entry_reply(r, dirfd, name, dir);
out:
	close(dirfd);
	if (err) {
		r->len = 0;
		return status;
	}
	return 0;
}
