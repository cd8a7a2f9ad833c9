/*
 * 5.18 (3a3bae50af5d "fs: Remove aops ->set_page_dirty"): ->dirty_folio
 * with filemap_dirty_folio.
 */
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <linux/writeback.h>
static const struct address_space_operations probe_aops = {
	.dirty_folio = filemap_dirty_folio,
};
