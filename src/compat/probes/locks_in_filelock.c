/*
 * 6.3 (a2ee1c9f5f6b "filelock: split common file locking bits into
 * linux/filelock.h"): file lock helpers live in <linux/filelock.h>.
 */
#include <linux/filelock.h>
