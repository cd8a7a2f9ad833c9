// SPDX-License-Identifier: GPL-2.0
/*
 * xattr.c - extended attributes forwarded to the server by full name
 * ("user.x", "trusted.y", "security.z"). POSIX ACLs (acl.c) travel as
 * system.posix_acl_* xattrs through the inode's ACL operations.
 */
#include <linux/fs.h>
#include <linux/posix_acl_xattr.h>
#include <linux/xattr.h>

#include "pohmel.h"

static int pohmel_xattr_get(const struct xattr_handler *handler,
			    struct dentry *dentry, struct inode *inode,
			    const char *name, void *buf, size_t size)
{
	const char *full = xattr_full_name(handler, name);

	/*
	 * Asked by the VFS at every write and chown (file_remove_privs,
	 * ATTR_KILL_PRIV). An object this mount made and still holds EXCL
	 * has none: only a setxattr, which clears WB_NEW, could have set it
	 * (other LSM labels the server's filesystem may give it are still
	 * asked for).
	 */
	if (!strcmp(full, XATTR_NAME_CAPS) &&
	    test_bit(POHMEL_I_WB_NEW, &POHMEL_I(inode)->flags) &&
	    pohmel_grant(inode, NULL) == POHMEL_GRANT_EXCL)
		return -ENODATA;
	return pohmel_rpc_getxattr(pohmel_conn(inode), POHMEL_OP_GETXATTR,
				   &POHMEL_I(inode)->oid, full, buf, size);
}

static int pohmel_xattr_set(const struct xattr_handler *handler,
			    POHMEL_IDMAP_PARAM struct dentry *dentry,
			    struct inode *inode, const char *name,
			    const void *value, size_t size, int flags)
{
	const char *full = xattr_full_name(handler, name);
	u32 wflags = 0;
	int err;

	if (flags & XATTR_CREATE)
		wflags |= POHMEL_XATTR_CREATE;
	if (flags & XATTR_REPLACE)
		wflags |= POHMEL_XATTR_REPLACE;
	/* value NULL means remove; an empty value is still a value */
	if (!value && size == 0)
		value = NULL;
	else if (!value)
		return -EINVAL;
	/* after local attribute changes; and none made locally after it */
	clear_bit(POHMEL_I_WB_NEW, &POHMEL_I(inode)->flags);
	err = pohmel_wb_attr_flush(inode);
	if (err)
		return err;
	err = pohmel_rpc_setxattr(pohmel_conn(inode), &POHMEL_I(inode)->oid,
				  full, value ? value : NULL, size, wflags);
	if (!err)
		pohmel_invalidate_attrs(inode);	/* ctime moved */
	return err;
}

ssize_t pohmel_listxattr(struct dentry *dentry, char *buf, size_t size)
{
	struct inode *inode = d_inode(dentry);

	return pohmel_rpc_getxattr(pohmel_conn(inode), POHMEL_OP_LISTXATTR,
				   &POHMEL_I(inode)->oid, NULL, buf, size);
}

static const struct xattr_handler pohmel_user_xattr = {
	.prefix	= XATTR_USER_PREFIX,
	.get	= pohmel_xattr_get,
	.set	= pohmel_xattr_set,
};

static const struct xattr_handler pohmel_trusted_xattr = {
	.prefix	= XATTR_TRUSTED_PREFIX,
	.get	= pohmel_xattr_get,
	.set	= pohmel_xattr_set,
};

static const struct xattr_handler pohmel_security_xattr = {
	.prefix	= XATTR_SECURITY_PREFIX,
	.get	= pohmel_xattr_get,
	.set	= pohmel_xattr_set,
};

const struct xattr_handler *pohmel_xattr_handlers[] = {
#ifdef POHMEL_ACL_XATTR_HANDLERS
	&posix_acl_access_xattr_handler,
	&posix_acl_default_xattr_handler,
#endif
	&pohmel_user_xattr,
	&pohmel_trusted_xattr,
	&pohmel_security_xattr,
	NULL
};
