/*
 * 6.7 (12cd44023651 "fs: add inode_get/set_mtime accessors" and
 * "fs: rename i_atime and i_mtime"): direct i_mtime/i_atime access is gone.
 */
#include <linux/fs.h>
void probe(struct inode *i, struct timespec64 t)
{
	inode_set_mtime_to_ts(i, t);
	inode_set_atime_to_ts(i, inode_get_mtime(i));
}
