// SPDX-License-Identifier: GPL-2.0
/*
 * wb_remove.c - removals made locally on a writeback mount: in a
 * directory the mount holds EXCL (wb.c), the unlink of a file it holds
 * EXCL, by the file's last name and open nowhere, and the rmdir of a
 * directory it holds EXCL and knows empty, need no round trip. The
 * UNLINK or RMDIR goes on the write-back log, carrying the idle handles
 * and the grant it gives up (POHMEL_FEAT_FORGET), and is sent in order
 * with the creates; while the object's own create is still on the log
 * (and, for a directory, nothing else there names it), both go and
 * nothing is sent. Locks: wb.c's (grant_sem shared from the checks until
 * the entry is on the log; flush_mu tried, never waited for, to take a
 * create off the log).
 */
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "pohmel.h"
#include "wb_int.h"

/*
 * May @dentry's object go from @dir by @op without a round trip? Both
 * held EXCL. A directory: known empty (its complete listing). Anything
 * else: its last name, and open nowhere (no file holds the dentry: the
 * test NFS's silly rename makes).
 */
static bool removable(struct inode *dir, struct dentry *dentry, u16 op)
{
	struct inode *inode = d_inode(dentry);
	bool alone;

	if (!inode || pohmel_grant(dir, NULL) != POHMEL_GRANT_EXCL ||
	    pohmel_grant(inode, NULL) != POHMEL_GRANT_EXCL)
		return false;
	if (op == POHMEL_OP_RMDIR)
		return S_ISDIR(inode->i_mode) && pohmel_dcache_empty(inode);
	if (S_ISDIR(inode->i_mode) || inode->i_nlink != 1)
		return false;
	spin_lock(&dentry->d_lock);
	alone = d_count(dentry) == 1;
	spin_unlock(&dentry->d_lock);
	return alone;
}

/* Does an entry after @ce on the log name @dir as its directory? */
static bool names_dir(struct pohmel_wb *wb, struct pohmel_wb_ent *ce,
		      struct inode *dir)
{
	struct pohmel_wb_ent *ent = ce;

	lockdep_assert_held(&wb->lock);
	list_for_each_entry_continue(ent, &wb->log, list)
		if (ent->dir == dir)
			return true;
	return false;
}

/*
 * @inode's create, taken off the log if it is still there, no flush has
 * it and nothing after it on the log is made in it: then the server
 * never heard of the object (anything sent about it sends the log
 * first), and neither need go.
 */
static struct pohmel_wb_ent *take_create(struct pohmel_wb *wb,
					 struct inode *inode)
{
	struct pohmel_wb_ent *ce;

	if (!mutex_trylock(&wb->flush_mu))
		return NULL;	/* a flush may be sending it: we follow it */
	spin_lock(&wb->lock);
	ce = POHMEL_I(inode)->wb_create;
	if (ce && S_ISDIR(inode->i_mode) && names_dir(wb, ce, inode))
		ce = NULL;
	if (ce) {
		list_del(&ce->list);
		POHMEL_I(inode)->wb_create = NULL;
	}
	spin_unlock(&wb->lock);
	mutex_unlock(&wb->flush_mu);
	return ce;
}

/*
 * Unlink or rmdir (@op) @dentry from @dir locally (see removable()): on
 * the log, carrying the idle handles and the grant it gives up
 * (POHMEL_FEAT_FORGET); if its create is still on the log, both go
 * and nothing is sent. 0 when done, -EAGAIN when it must go to the
 * server now.
 */
int pohmel_wb_remove(struct inode *dir, struct dentry *dentry, u16 op)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(dir->i_sb);
	struct inode *inode = d_inode(dentry);
	struct pohmel_wb *wb = &sbi->wb;
	struct pohmel_wb_ent *ent, *ce;
	struct pohmel_forget *fg;
	struct timespec64 now;

	if (!pohmel_wb_usable(dir) ||
	    !(READ_ONCE(sbi->conn.sess.features) & POHMEL_FEAT_FORGET) ||
	    !removable(dir, dentry, op))
		return -EAGAIN;
	ent = kzalloc(sizeof(*ent) + dentry->d_name.len, GFP_KERNEL);
	fg = kmalloc(sizeof(*fg), GFP_KERNEL);
	if (!ent || !fg)
		goto free;
	/*
	 * Its last name goes and no file has it: its pages are of no use
	 * (as on a local filesystem), and none is dirtied again. Before
	 * grant_sem: truncation waits for a WRITE that may be in flight.
	 */
	if (op == POHMEL_OP_UNLINK)
		truncate_inode_pages(inode->i_mapping, 0);
	down_read(&wb->grant_sem);
	if (!removable(dir, dentry, op))
		goto unlock;
	pohmel_forget_begin(inode, op, fg);
	if (!(fg->flags & POHMEL_REMOVE_RELEASE)) {	/* a handle in use */
		pohmel_forget_end(inode, fg, false);
		goto unlock;
	}
	pohmel_wb_attr_discard(inode);
	/*
	 * Its written pages not yet stable: of no use either (a commit
	 * would chase an object gone). Truncation above waited for any
	 * WRITE in flight, so no pin comes after this.
	 */
	if (op == POHMEL_OP_UNLINK)
		pohmel_unstable_drop(inode);
	ce = take_create(wb, inode);
	if (!ce) {
		ent->dir = igrab(dir);
		ihold(inode);
		ent->inode = inode;
		ent->cred = get_current_cred();
		ent->fg = fg;
		ent->op = op;
		ent->namelen = dentry->d_name.len;
		memcpy(ent->data, dentry->d_name.name, ent->namelen);
		spin_lock(&wb->lock);
		list_add_tail(&ent->list, &wb->log);
		spin_unlock(&wb->lock);
		atomic_inc(&sbi->conn.wb_pending);
	}
	atomic64_inc(&sbi->stats.wb_removed);
	now = current_time(dir);
	pohmel_touch_dir(dir, &now);
	pohmel_dcache_remove(dir, &dentry->d_name);
	inode_set_ctime_to_ts(inode, now);
	if (op == POHMEL_OP_RMDIR) {
		clear_nlink(inode);
		drop_nlink(dir);	/* its ".." */
		pohmel_dcache_drop(inode);
	} else {
		drop_nlink(inode);
	}
	up_read(&wb->grant_sem);
	if (ce) {
		atomic_dec(&sbi->conn.wb_pending);
		atomic64_inc(&sbi->stats.wb_cancelled);
		pohmel_forget_end(inode, fg, true);
		kfree(fg);
		pohmel_wb_free_ent(ce);
		kfree(ent);
		return 0;
	}
	queue_delayed_work(system_wq, &wb->age, sbi->opts.wb_delay * HZ);
	return 0;

unlock:
	up_read(&wb->grant_sem);
free:
	kfree(fg);
	kfree(ent);
	return -EAGAIN;
}
