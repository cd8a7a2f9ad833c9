/*
 * 6.2 (cac2f8b8d8b5 "fs: rename current get acl method", 138060ba92b3 "fs:
 * pass dentry to set acl method"): ->get_inode_acl(inode, type, rcu),
 * ->set_acl(idmap, dentry, acl, type); POSIX ACL xattrs go through them.
 */
#include <linux/fs.h>
#include <linux/posix_acl.h>
static struct posix_acl *probe_get(struct inode *i, int t, bool rcu) { return NULL; }
static const struct inode_operations probe_iops = { .get_inode_acl = probe_get };
