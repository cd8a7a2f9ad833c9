/*
 * 6.3 (256c8aed2b42 "fs: introduce dedicated idmap type for mounts"):
 * inode operations and generic helpers take a struct mnt_idmap *
 * instead of a struct user_namespace *.
 */
#include <linux/fs.h>
#include <linux/mnt_idmapping.h>
static int probe_create(struct mnt_idmap *i, struct inode *d, struct dentry *e,
			umode_t m, bool x) { return 0; }
static const struct inode_operations probe_iops = { .create = probe_create };
struct mnt_idmap *probe_idmap(void) { return &nop_mnt_idmap; }
