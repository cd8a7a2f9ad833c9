/*
 * 6.15 (88d5baf69082 "Change inode_operations.mkdir to return struct
 * dentry *"): ->mkdir returns the dentry (or NULL, or ERR_PTR).
 */
#include <linux/fs.h>
static struct dentry *probe_mkdir(struct mnt_idmap *i, struct inode *d,
				  struct dentry *e, umode_t m) { return NULL; }
static const struct inode_operations probe_iops = { .mkdir = probe_mkdir };
