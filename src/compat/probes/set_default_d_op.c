/*
 * 6.17 (05fb0e666495 "new helper: set_default_d_op()"): sb->s_d_op is
 * private; set_default_d_op() sets the default dentry operations.
 */
#include <linux/dcache.h>
#include <linux/fs.h>
void probe(struct super_block *sb, const struct dentry_operations *d)
{
	set_default_d_op(sb, d);
}
