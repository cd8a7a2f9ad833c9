/*
 * 5.12 (f9ce0be71d1f "mm: Cleanup faultaround and finish_fault()
 * codepaths"): ->map_pages and filemap_map_pages() return vm_fault_t
 * (void before); our ->map_pages wraps filemap_map_pages().
 */
#include <linux/mm.h>
vm_fault_t probe(struct vm_fault *vmf)
{
	return filemap_map_pages(vmf, 0, 0);
}
