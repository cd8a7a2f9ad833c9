/*
 * 6.9 (a69ce85ec9af "filelock: split common fields into struct
 * file_lock_core"): fl->c.flc_type/flc_flags/flc_owner/flc_pid.
 */
#include <linux/filelock.h>
int probe(struct file_lock *fl) { return fl->c.flc_type; }
