/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wb_int.h - the write-back log's entries, shared by wb.c (the log and
 * its flush) and wb_remove.c (removals made locally). Lock rules: wb.c.
 */
#ifndef POHMEL_WB_INT_H
#define POHMEL_WB_INT_H

#include "pohmel.h"

struct pohmel_wb_ent {
	struct list_head list;		/* wb->log; wb->lock */
	struct inode *dir;		/* held */
	struct inode *inode;		/* held: made or removed locally */
	const struct cred *cred;	/* the creator's or remover's */
	struct pohmel_forget *fg;	/* a removal's: what it gives up */
	u64 id;
	struct timespec64 time;		/* the times the creator saw */
	u16 op;
	u32 mode;
	u32 rdev;
	u16 namelen;
	u16 tlen;
	char data[];			/* name, then the symlink target */
};

bool pohmel_wb_usable(struct inode *dir);
void pohmel_wb_free_ent(struct pohmel_wb_ent *ent);

#endif /* POHMEL_WB_INT_H */
