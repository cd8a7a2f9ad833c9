/*
 * 6.12 (1da86618bdce "fs: Convert aops->write_begin to take a folio"):
 * ->write_begin/->write_end pass a struct folio.
 */
#include <linux/fs.h>
static int probe_wb(struct file *k, struct address_space *m, loff_t p,
		    unsigned int l, struct folio **f, void **d) { return 0; }
static const struct address_space_operations probe_aops = { .write_begin = probe_wb };
