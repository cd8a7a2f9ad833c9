/*
 * 6.17 (e9d8e2bf2320 "fs: change write_begin/write_end interface to take
 * struct kiocb *"): ->write_begin/->write_end take a const struct kiocb *.
 */
#include <linux/fs.h>
static int probe_wb(const struct kiocb *k, struct address_space *m, loff_t p,
		    unsigned int l, struct folio **f, void **d) { return 0; }
static const struct address_space_operations probe_aops = { .write_begin = probe_wb };
