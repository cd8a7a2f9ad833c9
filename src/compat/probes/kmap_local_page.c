/*
 * 5.11 (f3ba3c710ac5 "mm/highmem: Provide kmap_local*"): kmap_local_page().
 */
#include <linux/highmem.h>
void *probe(struct page *p) { return kmap_local_page(p); }
