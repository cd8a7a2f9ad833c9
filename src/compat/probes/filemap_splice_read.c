/*
 * 6.5 (07073eb01c5f "splice: Remove generic_file_splice_read()"):
 * filemap_splice_read() replaces generic_file_splice_read().
 */
#include <linux/fs.h>
static const struct file_operations probe_fops = { .splice_read = filemap_splice_read };
