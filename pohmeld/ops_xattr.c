// SPDX-License-Identifier: MIT
/*
 * ops_xattr.c - GETXATTR, SETXATTR, LISTXATTR, REMOVEXATTR, including
 * system.posix_acl_access/default, whose values pass through unchanged
 * (their encoding is Linux's own, little-endian by definition).
 *
 * fgetxattr() and friends refuse O_PATH fds, so the calls name the object
 * by its /proc/self/fd link; the kernel checks permissions against the
 * caller's fsuid exactly as for a local call.
 */
#include <errno.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "pohmeld.h"

int op_xattr(struct req *r)
{
	const struct msg *m = r->m;
	uint32_t cap;
	char path[64];
	struct stat st;
	uint8_t *p;
	ssize_t n = 0;
	int fd, err;

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
		if (m->hdr.op == POHMEL_OP_GETXATTR)
			n = getxattr(path, m->name, cap ? r->out + r->len
							: NULL, cap);
		else
			n = listxattr(path, cap ? (char *)r->out + r->len
						: NULL, cap);
		if (n < 0) {
			err = errno;
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
