/*
 * 7.0 ("posix_acl: make posix_acl_to_xattr() allocate the buffer"):
 * posix_acl_to_xattr(ns, acl, &size, gfp) returns a new buffer.
 */
#include <linux/fs.h>
#include <linux/user_namespace.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
void *probe(const struct posix_acl *a, size_t *s)
{
	return posix_acl_to_xattr(&init_user_ns, a, s, GFP_KERNEL);
}
