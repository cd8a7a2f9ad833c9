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
	struct pohmel_sattr sa;		/* a directory's SETATTR */
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

/* wb_data.c: a new file's data and attributes in its create's BATCH */
#define POHMEL_WB_DATA_MAX	(256 * 1024)	/* bytes of a file, at most */
/* a WRITE's or SETATTR's request and reply, but the data, at most */
#define POHMEL_WB_DATA_REQ	(POHMEL_HDR_SIZE + 4 * (POHMEL_MAX_GROUPS + 1) + \
				 POHMEL_IO_SIZE + 2 * POHMEL_TIME_SIZE + \
				 POHMEL_SETATTR_SIZE + POHMEL_ATTR_SIZE)
#define POHMEL_WB_DATA_NREQ	5		/* WRITEs and a SETATTR */
struct pohmel_wb_data;
struct pohmel_wb_data *pohmel_wb_data_take(struct pohmel_wb_ent *ent,
					   u32 room);
u32 pohmel_wb_data_nreq(const struct pohmel_wb_data *d);
u32 pohmel_wb_data_size(const struct pohmel_wb_data *d);
int pohmel_wb_data_reqs(struct pohmel_wb_data *d, struct pohmel_req **out);
void pohmel_wb_data_undo(struct pohmel_wb_data *d);
void pohmel_wb_data_done(struct pohmel_wb_data *d, struct pohmel_req *b,
			 u32 *off);

#endif /* POHMEL_WB_INT_H */
