/*
 * 5.19 (9d6b0cd75798 "fs: Remove flags parameter from aops->write_begin",
 * b7446e7cf15f "fs: Remove aop flags parameter from
 * grab_cache_page_write_begin()"): no AOP_FLAG argument any more.
 */
#include <linux/fs.h>
#include <linux/pagemap.h>
struct page *probe(struct address_space *m)
{
	return grab_cache_page_write_begin(m, 0);
}
