// SPDX-License-Identifier: GPL-2.0
/*
 * acl.c - POSIX ACLs, stored on the server as the system.posix_acl_*
 * xattrs (Linux xattr encoding) and cached by the VFS. The server
 * enforces them; the client needs them for its own permission checks and
 * for umask handling on create (SB_POSIXACL leaves umask to us).
 */
#include <linux/fs.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include <linux/xattr.h>

#include "pohmel.h"

void *pohmel_acl_to_xattr(const struct posix_acl *acl, size_t *size)
{
#ifdef HAVE_POSIX_ACL_TO_XATTR_ALLOC
	return posix_acl_to_xattr(&init_user_ns, acl, size, GFP_KERNEL);
#else
	size_t n = posix_acl_xattr_size(acl->a_count);
	void *buf = kmalloc(n, GFP_KERNEL);
	int ret;

	if (!buf)
		return NULL;
	ret = posix_acl_to_xattr(&init_user_ns, acl, buf, n);
	if (ret < 0) {
		kfree(buf);
		return NULL;
	}
	*size = ret;
	return buf;
#endif
}

static const char *acl_name(int type)
{
	return type == ACL_TYPE_ACCESS ? XATTR_NAME_POSIX_ACL_ACCESS :
					 XATTR_NAME_POSIX_ACL_DEFAULT;
}

struct posix_acl *pohmel_get_acl(POHMEL_GET_ACL_PARAMS)
{
	struct posix_acl *acl;
	size_t size = 1024;
	ssize_t n;
	void *buf;

	if (pohmel_get_acl_rcu())
		return ERR_PTR(-ECHILD);
	for (;;) {
		buf = kmalloc(size, GFP_KERNEL);
		if (!buf)
			return ERR_PTR(-ENOMEM);
		n = pohmel_rpc_getxattr(pohmel_conn(inode), POHMEL_OP_GETXATTR,
					&POHMEL_I(inode)->oid, acl_name(type),
					buf, size);
		if (n != -ERANGE || size >= POHMEL_XATTR_SIZE_MAX)
			break;
		kfree(buf);
		size = POHMEL_XATTR_SIZE_MAX;
	}
	if (n == -ENODATA || n == -EOPNOTSUPP || n == 0)
		acl = NULL;
	else if (n < 0)
		acl = ERR_PTR(n);
	else
		acl = posix_acl_from_xattr(&init_user_ns, buf, n);
	kfree(buf);
	return acl;
}

int pohmel_set_acl(POHMEL_SET_ACL_PARAMS)
{
	struct inode *inode = pohmel_set_acl_inode();
	size_t size = 0;
	void *buf = NULL;
	int err;

	if (acl) {
		buf = pohmel_acl_to_xattr(acl, &size);
		if (!buf)
			return -ENOMEM;
	}
	/* after local mode changes; none made locally with an ACL */
	clear_bit(POHMEL_I_WB_NEW, &POHMEL_I(inode)->flags);
	err = pohmel_wb_attr_flush(inode);
	if (!err)
		err = pohmel_rpc_setxattr(pohmel_conn(inode),
					  &POHMEL_I(inode)->oid,
					  acl_name(type), buf, size, 0);
	kfree(buf);
	if (!acl && err == -ENODATA)
		err = 0;
	if (err)
		return err;
	/* the server may have changed the mode as well */
	pohmel_invalidate_attrs(inode);
	set_cached_acl(inode, type, acl);
	return 0;
}

/*
 * The mode a new object gets: with a default ACL on @dir the server
 * applies it; without, the caller's umask applies (as the VFS would
 * without SB_POSIXACL).
 */
/*
 * Like pohmel_acl_create_mode, for a create made locally (wb.c): true if
 * no ACL comes into it (then *mode is what the server will set), false
 * if the directory's default ACL would give the object ACLs: that create
 * goes to the server, which applies them.
 */
bool pohmel_acl_create_plain(struct inode *dir, umode_t *mode)
{
	struct posix_acl *dacl = NULL, *acl = NULL;
	umode_t m = *mode;
	bool plain;

	if (posix_acl_create(dir, &m, &dacl, &acl))
		return false;
	plain = !dacl && !acl;
	posix_acl_release(dacl);
	posix_acl_release(acl);
	if (plain)
		*mode = m;
	return plain;
}

int pohmel_acl_create_mode(struct inode *dir, umode_t *mode)
{
	struct posix_acl *dacl = NULL, *acl = NULL;
	int err;

	err = posix_acl_create(dir, mode, &dacl, &acl);
	posix_acl_release(dacl);
	posix_acl_release(acl);
	return err;
}
