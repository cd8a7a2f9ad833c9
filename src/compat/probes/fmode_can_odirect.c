/*
 * 6.0 (a2ad63daa88b "VFS: add FMODE_CAN_ODIRECT file flag"): O_DIRECT is
 * allowed by a file flag set at open instead of ->direct_IO.
 */
#include <linux/fs.h>
void probe(struct file *f) { f->f_mode |= FMODE_CAN_ODIRECT; }
