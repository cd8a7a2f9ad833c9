/*
 * 5.16 (folios, 7b230db3b8d3 "mm: Introduce struct folio"): the page
 * cache API is folio based; 5.10 only has struct page.
 */
#include <linux/pagemap.h>
void probe(struct folio *f)
{
	folio_lock(f);
	folio_mark_uptodate(f);
	folio_unlock(f);
}
