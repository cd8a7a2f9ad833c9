// SPDX-License-Identifier: MIT
/*
 * ops_attr.c - attributes: GETATTR, SETATTR, LOOKUP, STATFS, STATS, and
 * the helpers every handler uses to name objects safely.
 *
 * Objects are reached only through file handles (oid.c) and single,
 * validated name components under a directory fd; nothing walks a path
 * the client supplied. Operations that have no fd-based syscall on an
 * O_PATH fd (chmod, truncate, utimes, xattrs, reopen for I/O) go through
 * /proc/self/fd/N, which re-checks permissions with the caller's fsuid
 * and refers to exactly the object the fd holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "pohmeld.h"

#ifndef __NR_openat2
#define __NR_openat2 437	/* glibc < 2.32 headers lack SYS_openat2 */
#endif

void *req_put(struct req *r, uint32_t n)
{
	void *p;

	if (n > r->cap - r->len)
		return NULL;
	p = r->out + r->len;
	r->len += n;
	return p;
}

/* o was resolved to fd (and st) for r's targets: keep it, or close it. */
void req_keep_pre(struct req *r, const struct woid *o, int fd,
		  const struct stat *st)
{
	if (r->has_pre) {
		close(fd);
		return;
	}
	r->has_pre = true;
	r->pre_fd = fd;
	r->pre_oid = *o;
	r->pre_st = *st;
}

/* Not taken by a handler (or stale: r waited for recalls): close it. */
void req_drop_pre(struct req *r)
{
	if (!r->has_pre)
		return;
	close(r->pre_fd);
	r->has_pre = false;
}

/* Resolve (id, gen) to an O_PATH fd. Before req_caller(): needs caps. */
int req_obj(struct req *r, const struct woid *o, int *fd, struct stat *st)
{
	int err;

	if (r->as_caller)
		return EPERM;	/* a handler bug: resolve first */
	if (r->has_pre && r->pre_oid.id == o->id && r->pre_oid.gen == o->gen) {
		*fd = r->pre_fd;
		*st = r->pre_st;
		r->has_pre = false;
		return 0;
	}
	err = oid_open(o, fd, st);
	/* Unlinked but open in this session: its handle still names it. */
	if (err == ESTALE && r->s && o->gen &&
	    session_handle_any(r->s, o, fd) == 0) {
		if (fstat(*fd, st)) {
			err = errno;
			close(*fd);
			return err;
		}
		return 0;
	}
	return err;
}

int req_caller(struct req *r)
{
	int err;

	if (r->as_caller)
		return 0;
	err = creds_enter(&r->cr);
	if (!err)
		r->as_caller = true;
	return err;
}

void proc_path(char *buf, size_t n, int fd)
{
	snprintf(buf, n, "/proc/self/fd/%d", fd);
}

/*
 * Open one validated name under dirfd as O_PATH, never following a
 * symlink and never leaving the directory or its filesystem. openat2()
 * says so to the kernel; without it (old kernel, seccomp) a single
 * component with O_NOFOLLOW is just as confined.
 */
static atomic_bool no_openat2;

/* Tests run the confinement suite on the fallback path as well. */
void child_open_init(void)
{
	if (getenv("POHMELD_TEST_NO_OPENAT2"))
		atomic_store(&no_openat2, true);
}

int child_open(int dirfd, const char *name, int *fd)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	int f;

	if (!atomic_load(&no_openat2)) {
		f = (int)syscall(__NR_openat2, dirfd, name, &how, sizeof(how));
		if (f >= 0) {
			*fd = f;
			return 0;
		}
		if (errno != ENOSYS && errno != EPERM)
			return errno;
		atomic_store(&no_openat2, true);
	}
	f = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (f < 0)
		return errno;
	*fd = f;
	return 0;
}

int attr_of_fd(int fd, const struct stat *st0, const struct woid *known,
	       struct wattr *a)
{
	struct stat st;
	int err;

	if (!st0) {
		if (fstat(fd, &st))
			return errno;
		st0 = &st;
	}
	memset(a, 0, sizeof(*a));
	if (known) {
		a->oid = *known;
	} else {
		err = oid_of_fd(fd, st0, &a->oid);
		if (err)
			return err;
	}
	a->size = (uint64_t)st0->st_size;
	a->blocks = (uint64_t)st0->st_blocks;
	a->change = change_of(a->oid.id, st0);
	a->atime.sec = st0->st_atim.tv_sec;
	a->atime.nsec = (uint32_t)st0->st_atim.tv_nsec;
	a->mtime.sec = st0->st_mtim.tv_sec;
	a->mtime.nsec = (uint32_t)st0->st_mtim.tv_nsec;
	a->ctime.sec = st0->st_ctim.tv_sec;
	a->ctime.nsec = (uint32_t)st0->st_ctim.tv_nsec;
	ctime_report(a->oid.id, st0, &a->ctime, &a->mtime);
	a->mode = st0->st_mode;
	a->nlink = (uint32_t)st0->st_nlink;
	a->uid = st0->st_uid;
	a->gid = st0->st_gid;
	a->rdev = wire_encode_dev(major(st0->st_rdev), minor(st0->st_rdev));
	a->blksize = (uint32_t)st0->st_blksize;
	a->grant = POHMEL_GRANT_NONE;
	return 0;
}

int attr_put_known(struct req *r, int fd, const struct woid *known)
{
	uint8_t *p = req_put(r, POHMEL_ATTR_SIZE);
	struct wattr a;
	int err;

	if (!p)
		return E2BIG;
	/* An object r modified: its change tag moves before the attrs
	 * are taken (after the syscall), so the reply has the new value. */
	if (known)
		req_bump(r, known->id);
	err = attr_of_fd(fd, NULL, known, &a);
	if (!err && !known && req_bump(r, a.oid.id)) {
		struct woid o = a.oid;

		err = attr_of_fd(fd, NULL, &o, &a);
	}
	if (err)
		return err;
	grant_fill(r, fd, &a);
	wattr_put(p, &a);
	return 0;
}

int attr_put(struct req *r, int fd)
{
	return attr_put_known(r, fd, NULL);
}

int op_getattr(struct req *r)
{
	struct stat st;
	int fd, err;

	err = req_obj(r, &r->m->oid, &fd, &st);
	if (err)
		return err;
	err = attr_put_known(r, fd, &r->m->oid);
	close(fd);
	return err;
}

#ifndef SYS_faccessat2
#define SYS_faccessat2	439	/* Linux 5.8, one number on every arch */
#endif

/* GRANT EXCL on the object open at fd: 0 or why not (caller's creds). */
static int excl_allowed(struct req *r, int fd)
{
	int err;

	if (r->c->pol->ex.ro)
		return EROFS;
	err = req_caller(r);
	if (!err && syscall(SYS_faccessat2, fd, "", W_OK,
			    AT_EACCESS | AT_EMPTY_PATH))
		err = errno;
	return err;
}

/*
 * Before grants_begin recalls anyone for a GRANT EXCL (dispatch.c): a
 * caller that will be refused must not cost the holders their grants.
 * r's credentials are not squashed yet; a copy is.
 */
bool grant_precheck(const struct req *r)
{
	struct req t = *r;
	struct stat st;
	int fd, err;

	if (r->m->type != POHMEL_GRANT_EXCL)
		return true;
	t.as_caller = false;
	t.has_pre = false;	/* r's, if any, stays r's to close */
	creds_squash(&r->c->pol->ex, &t.cr);
	if (req_obj(&t, &r->m->oid, &fd, &st))
		return false;
	err = excl_allowed(&t, fd);
	if (t.as_caller)
		creds_leave();
	close(fd);
	return !err;
}

/*
 * GRANT: the object's attrs, with the grant grant_fill gives for the
 * want (grants.c want_of). EXCL lets the holder buffer changes, so it
 * needs what they need: write access (the kernel's check for the
 * caller's fsuid, ACLs included) on a writable export.
 */
int op_grant(struct req *r)
{
	struct stat st;
	int fd, err;

	if (!(r->c->features & POHMEL_FEAT_ASK_GRANT) ||
	    !(r->c->features & POHMEL_FEAT_GRANTS))
		return EOPNOTSUPP;
	err = req_obj(r, &r->m->oid, &fd, &st);
	if (err)
		return err;
	if (r->m->type == POHMEL_GRANT_EXCL)
		err = excl_allowed(r, fd);
	if (!err)
		err = attr_put_known(r, fd, &r->m->oid);
	close(fd);
	return err;
}

int op_lookup(struct req *r)
{
	struct stat st;
	int dirfd, fd, err;

	err = req_obj(r, &r->m->oid, &dirfd, &st);
	if (err)
		return err;
	if (!S_ISDIR(st.st_mode)) {
		err = ENOTDIR;
		goto out_dir;
	}
	err = req_caller(r);
	if (err)
		goto out_dir;
	err = child_open(dirfd, r->m->name, &fd);
	if (err)
		goto out_dir;
	err = attr_put(r, fd);
	close(fd);
out_dir:
	close(dirfd);
	return err;
}

static int set_times(const char *path, const struct msg *m)
{
	struct timespec ts[2] = {
		{ .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT },
	};

	if (m->valid & POHMEL_SET_ATIME_NOW) {
		ts[0].tv_nsec = UTIME_NOW;
	} else if (m->valid & POHMEL_SET_ATIME) {
		ts[0].tv_sec = m->atime.sec;
		ts[0].tv_nsec = m->atime.nsec;
	}
	if (m->valid & POHMEL_SET_MTIME_NOW) {
		ts[1].tv_nsec = UTIME_NOW;
	} else if (m->valid & POHMEL_SET_MTIME) {
		ts[1].tv_sec = m->mtime.sec;
		ts[1].tv_nsec = m->mtime.nsec;
	}
	return utimensat(AT_FDCWD, path, ts, 0) ? errno : 0;
}

/*
 * The fd of the handle a size change names (POHMEL_SET_HANDLE), or -1.
 * Taken before req_caller(): a restored handle is reopened with caps.
 */
static int setattr_handle_fd(struct req *r, int *hfd)
{
	unsigned int hflags;
	int err;

	*hfd = -1;
	if (!(r->m->valid & POHMEL_SET_HANDLE))
		return 0;
	if (!r->s)
		return EBADF;
	err = session_handle_get(r->s, r->m->handle, &r->m->oid, hfd, &hflags);
	if (err)
		return err;
	if (!(hflags & HANDLE_WRITE)) {
		close(*hfd);
		*hfd = -1;
		return EBADF;
	}
	return 0;
}

/*
 * Through an open handle the size changes like ftruncate(2): the handle
 * was opened for writing, so the file's mode is not checked again.
 */
static int set_size(const char *path, int hfd, uint64_t size)
{
	if (hfd >= 0)
		return ftruncate(hfd, (off_t)size) ? errno : 0;
	return truncate(path, (off_t)size) ? errno : 0;
}

/* Order matters: size first (it moves mtime), mode after chown (which
 * clears set-id bits), times last. */
int op_setattr(struct req *r)
{
	const struct msg *m = r->m;
	char path[64];
	struct stat st;
	int fd, hfd = -1, err;

	err = req_obj(r, &m->oid, &fd, &st);
	if (err)
		return err;
	err = setattr_handle_fd(r, &hfd);
	if (!err)
		err = req_caller(r);
	if (err)
		goto out;
	proc_path(path, sizeof(path), fd);
	if (m->valid & POHMEL_SET_SIZE) {
		if (S_ISDIR(st.st_mode)) {
			err = EISDIR;
			goto out;
		}
		if (!S_ISREG(st.st_mode)) {
			err = EINVAL;
			goto out;
		}
		err = set_size(path, hfd, m->size);
		if (err)
			goto out;
	}
	if (m->valid & (POHMEL_SET_UID | POHMEL_SET_GID)) {
		uid_t u = m->valid & POHMEL_SET_UID ? m->uid : (uid_t)-1;
		gid_t g = m->valid & POHMEL_SET_GID ? m->gid : (gid_t)-1;

		if (fchownat(fd, "", u, g, AT_EMPTY_PATH)) {
			err = errno;
			goto out;
		}
	}
	if (m->valid & POHMEL_SET_MODE) {
		if (S_ISLNK(st.st_mode)) {
			err = EOPNOTSUPP;
			goto out;
		}
		/*
		 * A client's kill-priv on truncate or chown arrives as a mode
		 * without the set-id bits; the truncate or chown above, done
		 * as the caller, already cleared them. Do not chmod then: a
		 * non-owner may not, and the mode is what was asked for.
		 */
		if (fstat(fd, &st)) {
			err = errno;
			goto out;
		}
		if ((st.st_mode & 07777) != (m->mode & 07777) &&
		    chmod(path, m->mode & 07777)) {
			err = errno;
			goto out;
		}
	}
	if (m->valid & (POHMEL_SET_ATIME | POHMEL_SET_MTIME |
			POHMEL_SET_ATIME_NOW | POHMEL_SET_MTIME_NOW)) {
		/* For a symlink too: fd is the link itself (O_NOFOLLOW),
		 * and its /proc magic link leads to it, never through it. */
		err = set_times(path, m);
		if (err)
			goto out;
	}
	err = attr_put_known(r, fd, &m->oid);
out:
	if (hfd >= 0)
		close(hfd);
	close(fd);
	return err;
}

int op_statfs(struct req *r)
{
	struct statfs sf;
	struct stat st;
	uint8_t *p;
	int fd, err;

	err = req_obj(r, &r->m->oid, &fd, &st);
	if (err)
		return err;
	err = fstatfs(fd, &sf) ? errno : 0;
	close(fd);
	if (err)
		return err;
	p = req_put(r, POHMEL_STATFS_SIZE);
	if (!p)
		return E2BIG;
	put64(p, (uint64_t)sf.f_blocks);
	put64(p + 8, (uint64_t)sf.f_bfree);
	put64(p + 16, (uint64_t)sf.f_bavail);
	put64(p + 24, (uint64_t)sf.f_files);
	put64(p + 32, (uint64_t)sf.f_ffree);
	put32(p + 40, (uint32_t)sf.f_bsize);
	put32(p + 44, (uint32_t)sf.f_namelen);
	return 0;
}

int op_stats(struct req *r)
{
	size_t n;
	long k;

	if ((r->m->flags & POHMEL_STATS_SESSIONS) && !clients_may_list(r->c))
		return EACCES;
	n = stats_format((char *)r->out, r->cap);
	if (r->m->flags & POHMEL_STATS_SESSIONS) {
		k = clients_format((char *)r->out, n, r->cap);
		if (k < 0)
			return (int)-k;
		n = (size_t)k;
	}
	r->len = (uint32_t)n;
	return 0;
}
