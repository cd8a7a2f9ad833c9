/*
 * 5.18 (9bf70167e3c6 "fs: Convert netfs_readahead to use readahead_folio"
 * series): readahead_folio(); readahead_page() was removed in 6.16.
 */
#include <linux/pagemap.h>
struct folio *probe(struct readahead_control *r) { return readahead_folio(r); }
