/*
 * 6.0 (800ba29547e1 "fs: change the generic_perform_write() calling
 * convention"): generic_perform_write(iocb, iter). (Whether it advances
 * ki_pos itself changed later, in 6.5; callers check at run time.)
 */
#include <linux/fs.h>
ssize_t probe(struct kiocb *k, struct iov_iter *i)
{
	return generic_perform_write(k, i);
}
