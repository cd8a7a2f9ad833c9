/*
 * 6.14 (5be1fa8abd7b "Pass parent directory inode and expected name to
 * ->d_revalidate()"): d_revalidate(dir, name, dentry, flags).
 */
#include <linux/dcache.h>
static int probe_rev(struct inode *dir, const struct qstr *name,
		     struct dentry *d, unsigned int flags) { return 1; }
static const struct dentry_operations probe_dops = { .d_revalidate = probe_rev };
