/*
 * 6.10 (751e0d559c62 "writeback: add a writeback iterator"):
 * writeback_iter(); write_cache_pages() went away in 6.18.
 */
#include <linux/writeback.h>
struct folio *probe(struct address_space *m, struct writeback_control *w,
		    struct folio *f, int *e) { return writeback_iter(m, w, f, e); }
