/*
 * 5.15 (0cad6246621b "vfs: add rcu argument to ->get_acl() callback"):
 * ->get_acl(inode, type, rcu); 6.2 renamed it ->get_inode_acl.
 */
#include <linux/fs.h>
#include <linux/posix_acl.h>
static struct posix_acl *probe_get(struct inode *i, int t, bool rcu) { return NULL; }
static const struct inode_operations probe_iops = { .get_acl = probe_get };
