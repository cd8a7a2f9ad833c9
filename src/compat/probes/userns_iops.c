/*
 * 5.12 (549c7297717c "fs: make helpers idmap mount aware"): inode
 * operations take a struct user_namespace * as first argument (until 6.3
 * turned it into struct mnt_idmap *).
 */
#include <linux/fs.h>
static int probe_create(struct user_namespace *u, struct inode *d,
			struct dentry *e, umode_t m, bool x) { return 0; }
static const struct inode_operations probe_iops = { .create = probe_create };
