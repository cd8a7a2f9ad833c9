/*
 * 6.6 (0d72b92883c6 "fs: pass the request_mask to generic_fillattr"):
 * generic_fillattr(idmap, request_mask, inode, stat).
 */
#include <linux/fs.h>
void probe(struct inode *i, struct kstat *s)
{
	generic_fillattr(&nop_mnt_idmap, STATX_BASIC_STATS, i, s);
}
