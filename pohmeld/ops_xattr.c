// SPDX-License-Identifier: MIT
/*
 * ops_xattr.c - GETXATTR, SETXATTR, LISTXATTR, REMOVEXATTR, including
 * system.posix_acl_access/default, whose values pass through unchanged
 * (their encoding is Linux's own, little-endian by definition).
 *
 * fgetxattr() and friends refuse O_PATH fds, so the calls name the object
 * by its /proc/self/fd link; the kernel checks permissions against the
 * caller's fsuid exactly as for a local call.
 *
 * Only user.* and the POSIX ACL names cross the wire: trusted.* and
 * security.* (security.capability makes a file privileged when run on
 * the server) are refused with EOPNOTSUPP and hidden from listings,
 * unless the export says trusted_xattrs and the caller is unsquashed root.
 */
#include <errno.h>
#include <linux/limits.h>
#include <stdlib.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "pohmeld.h"

static bool has_prefix(const char *name, const char *pfx)
{
	return !strncmp(name, pfx, strlen(pfx));
}

static bool name_allowed(const struct req *r, const char *name)
{
	if (has_prefix(name, "user.") ||
	    !strcmp(name, "system.posix_acl_access") ||
	    !strcmp(name, "system.posix_acl_default"))
		return true;
	return r->c->pol->ex.trusted_xattrs && r->cr.priv &&
	       (has_prefix(name, "trusted.") || has_prefix(name, "security."));
}

/*
 * listxattr() without the names name_allowed() refuses: the whole list
 * (at most XATTR_LIST_MAX on Linux) is read and filtered, so that a size
 * query (cap 0) and the listing agree.
 */
static ssize_t list_allowed(const struct req *r, const char *path,
			    char *out, uint32_t cap)
{
	char *all = malloc(XATTR_LIST_MAX), *p;
	ssize_t n, len = 0;
	size_t l;

	if (!all)
		return -ENOMEM;
	n = listxattr(path, all, XATTR_LIST_MAX);
	if (n < 0) {
		n = errno == ERANGE ? -E2BIG : -errno;
		goto out;
	}
	for (p = all; p < all + n; p += l + 1) {
		l = strnlen(p, (size_t)(all + n - p));
		if (p + l == all + n)
			break;		/* no terminator: not a name */
		if (!name_allowed(r, p))
			continue;
		if (cap && (size_t)len + l + 1 > cap) {
			len = -ERANGE;
			goto out;
		}
		if (cap)
			memcpy(out + len, p, l + 1);
		len += (ssize_t)l + 1;
	}
	n = len;
out:
	free(all);
	return n;
}

int op_xattr(struct req *r)
{
	const struct msg *m = r->m;
	uint32_t cap;
	char path[64];
	struct stat st;
	uint8_t *p;
	ssize_t n = 0;
	int fd, err;

	if (m->hdr.op != POHMEL_OP_LISTXATTR && !name_allowed(r, m->name))
		return EOPNOTSUPP;
	err = req_obj(r, &m->oid, &fd, &st);
	if (err)
		return err;
	err = req_caller(r);
	if (err)
		goto out;
	proc_path(path, sizeof(path), fd);

	switch (m->hdr.op) {
	case POHMEL_OP_SETXATTR:
		if (setxattr(path, m->name, m->data, m->dlen, (int)m->flags))
			err = errno;
		break;
	case POHMEL_OP_REMOVEXATTR:
		if (removexattr(path, m->name))
			err = errno;
		break;
	case POHMEL_OP_GETXATTR:
	case POHMEL_OP_LISTXATTR:
		p = req_put(r, POHMEL_XATTR_REPLY_SIZE);
		if (!p) {
			err = E2BIG;
			break;
		}
		cap = MIN(m->count, POHMEL_XATTR_SIZE_MAX);
		cap = MIN(cap, r->cap - r->len);
		if (m->hdr.op == POHMEL_OP_GETXATTR) {
			n = getxattr(path, m->name, cap ? r->out + r->len
							: NULL, cap);
			if (n < 0)
				n = -errno;
		} else {
			n = list_allowed(r, path, (char *)r->out + r->len,
					 cap);
		}
		if (n < 0) {
			err = (int)-n;
			break;
		}
		put32(p, (uint32_t)n);
		put32(p + 4, 0);
		if (cap)
			r->len += (uint32_t)n;
		break;
	}
out:
	close(fd);
	return err;
}
