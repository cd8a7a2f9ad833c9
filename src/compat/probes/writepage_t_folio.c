/*
 * 6.3 (d585bdbeb79a "fs: convert writepage_t callback to pass a folio"):
 * write_cache_pages() callbacks take a folio.
 */
#include <linux/writeback.h>
static int probe_cb(struct folio *f, struct writeback_control *w, void *d) { return 0; }
int probe(struct address_space *m, struct writeback_control *w)
{
	return write_cache_pages(m, w, probe_cb, NULL);
}
