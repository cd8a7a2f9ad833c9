/*
 * 5.19 (7e0a126519b8 "mm,fs: Remove aops->readpage"): ->read_folio.
 */
#include <linux/fs.h>
static int probe_read(struct file *f, struct folio *p) { return 0; }
static const struct address_space_operations probe_aops = { .read_folio = probe_read };
