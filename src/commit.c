// SPDX-License-Identifier: GPL-2.0
/*
 * commit.c - writes the server applied but has not yet made stable.
 *
 * The reply to a WRITE without POHMEL_IO_STABLE only means "in the
 * server's memory" (pohmel_proto.h, "Durability"): a crash of the server
 * machine before an FSYNC may lose it. So writepages hands the folios of
 * each such WRITE to this file, which pins them (a reference each:
 * reclaim cannot free them) together with the verifier generation the
 * WRITE was submitted under. pohmel_commit() sends FSYNC for the pins
 * taken before it: those whose generation is the one the FSYNC was
 * answered under are dropped, the others are redirtied and go out again.
 *
 * Write-through data (O_DIRECT, appends, cache=none) is not kept: if the
 * verifier changed under it, the next commit fails with EIO instead.
 */
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/writeback.h>

#include "pohmel.h"

/* One WRITE's folios, waiting for an FSYNC under @gen. */
struct pohmel_unstable {
	struct list_head list;
	u32 gen;
	unsigned int nr;
	struct folio *folios[];
};

/* What a commit takes from the inode: pins and write-through state. */
struct commit_set {
	struct list_head pins;
	u8 wt_state;
	u32 wt_gen;
};

static u32 verf_gen(struct inode *inode)
{
	return atomic_read(&pohmel_conn(inode)->sess.verf_gen);
}

u32 pohmel_verf_gen(struct inode *inode)
{
	return verf_gen(inode);
}

struct pohmel_unstable *pohmel_unstable_alloc(unsigned int nr)
{
	struct pohmel_unstable *u = NULL;

	return kmalloc(struct_size(u, folios, nr), GFP_NOFS);
}

/*
 * The WRITE of @nr folios submitted under @gen was applied: keep them
 * (takes over the caller's folio references and @u) until a commit.
 */
void pohmel_unstable_add(struct inode *inode, struct pohmel_unstable *u,
			 struct folio **folios, unsigned int nr, u32 gen)
{
	struct pohmel_inode *pi = POHMEL_I(inode);

	u->gen = gen;
	u->nr = nr;
	memcpy(u->folios, folios, nr * sizeof(*folios));
	spin_lock(&pi->lock);
	list_add_tail(&u->list, &pi->unstable);
	spin_unlock(&pi->lock);
	atomic64_add(nr, &POHMEL_SB(inode->i_sb)->stats.unstable_pages);
	/* the flusher's write_inode commits what fsync does not */
	__mark_inode_dirty(inode, I_DIRTY_DATASYNC);
}

/* An unstable write-through WRITE submitted under @gen was applied. */
void pohmel_write_through_done(struct inode *inode, u32 gen)
{
	struct pohmel_inode *pi = POHMEL_I(inode);

	spin_lock(&pi->lock);
	if (pi->wt_state == POHMEL_WT_NONE) {
		pi->wt_state = POHMEL_WT_PENDING;
		pi->wt_gen = gen;
	} else if (pi->wt_gen != gen) {
		pi->wt_state = POHMEL_WT_LOST;
	}
	spin_unlock(&pi->lock);
	__mark_inode_dirty(inode, I_DIRTY_DATASYNC);
}

bool pohmel_has_unstable(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	bool any;

	spin_lock(&pi->lock);
	any = !list_empty(&pi->unstable) || pi->wt_state != POHMEL_WT_NONE;
	spin_unlock(&pi->lock);
	return any;
}

static void take_set(struct pohmel_inode *pi, struct commit_set *set)
{
	INIT_LIST_HEAD(&set->pins);
	spin_lock(&pi->lock);
	list_splice_init(&pi->unstable, &set->pins);
	set->wt_state = pi->wt_state;
	set->wt_gen = pi->wt_gen;
	pi->wt_state = POHMEL_WT_NONE;
	spin_unlock(&pi->lock);
}

/* The FSYNC failed: everything goes back, ahead of newer pins. */
static void put_back(struct pohmel_inode *pi, struct commit_set *set)
{
	spin_lock(&pi->lock);
	list_splice(&set->pins, &pi->unstable);
	if (set->wt_state != POHMEL_WT_NONE) {
		if (pi->wt_state == POHMEL_WT_NONE) {
			pi->wt_state = set->wt_state;
			pi->wt_gen = set->wt_gen;
		} else if (pi->wt_gen != set->wt_gen ||
			   set->wt_state == POHMEL_WT_LOST) {
			pi->wt_state = POHMEL_WT_LOST;
		}
	}
	spin_unlock(&pi->lock);
}

/*
 * Send @folio again. Returns false if it is gone from the page cache
 * below the end of file (dropped by a recall): its data cannot be sent.
 */
static bool redirty(struct inode *inode, struct folio *folio)
{
	bool ok = true;

	folio_lock(folio);
	if (folio->mapping == inode->i_mapping)
		folio_mark_dirty(folio);
	else if (folio_pos(folio) < i_size_read(inode))
		ok = false;
	folio_unlock(folio);
	return ok;
}

static void unpin(struct inode *inode, struct pohmel_unstable *u)
{
	unsigned int i;

	for (i = 0; i < u->nr; i++)
		folio_put(u->folios[i]);
	atomic64_sub(u->nr, &POHMEL_SB(inode->i_sb)->stats.unstable_pages);
	list_del(&u->list);
	kfree(u);
}

/*
 * Make stable what this inode's WRITEs left unstable: one FSYNC (with
 * @flags, through @h if given) for everything pinned so far. Returns 0,
 * -EAGAIN if the server's verifier changed and folios were redirtied
 * (write back and commit again), -EIO if write-through data or folios
 * dropped meanwhile were lost with the server's memory, or the FSYNC's
 * error. @fa gets the FSYNC's attributes.
 */
int pohmel_commit(struct inode *inode, struct pohmel_handle *h, u32 flags,
		  struct pohmel_fattr *fa)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_unstable *u, *tmp;
	struct commit_set set;
	bool resend = false, lost = false;
	u32 before, after;
	unsigned int i;
	int err;

	take_set(pi, &set);
	atomic64_inc(&sbi->stats.commits);
	before = verf_gen(inode);
	err = pohmel_rpc_fsync(pohmel_conn(inode), &pi->oid,
			       h ? h->handle : 0, flags, fa);
	after = verf_gen(inode);
	if (err) {
		put_back(pi, &set);
		return err;
	}
	/* answered under @before only if no new verifier came meanwhile */
	list_for_each_entry_safe(u, tmp, &set.pins, list) {
		if (before != after || u->gen != before) {
			resend = true;
			atomic64_add(u->nr, &sbi->stats.commit_resends);
			for (i = 0; i < u->nr; i++)
				if (!redirty(inode, u->folios[i]))
					lost = true;
		}
		unpin(inode, u);
	}
	if (set.wt_state == POHMEL_WT_LOST ||
	    (set.wt_state == POHMEL_WT_PENDING &&
	     (before != after || set.wt_gen != before)))
		lost = true;
	if (lost) {
		pr_warn_ratelimited("%pISpc: inode %llu: data written before the server's restart was lost with its memory\n",
				    &pohmel_conn(inode)->addr, pi->oid.id);
		mapping_set_error(inode->i_mapping, -EIO);
		return -EIO;
	}
	return resend ? -EAGAIN : 0;
}

/*
 * Write back [@start, @end], then commit, until a commit finds nothing
 * to send again (a verifier that keeps changing gives EIO).
 */
int pohmel_write_and_commit(struct inode *inode, struct pohmel_handle *h,
			    loff_t start, loff_t end, u32 flags,
			    struct pohmel_fattr *fa)
{
	int tries, err;

	for (tries = 0; tries < 5; tries++) {
		err = filemap_write_and_wait_range(inode->i_mapping, start,
						   end);
		if (err)
			return err;
		err = pohmel_commit(inode, h, flags, fa);
		if (err != -EAGAIN)
			return err;
		start = 0;
		end = LLONG_MAX;
	}
	return -EIO;
}

/* Eviction: what was not committed is given up (the inode is going). */
void pohmel_unstable_drop(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_unstable *u, *tmp;
	struct commit_set set;

	take_set(pi, &set);
	list_for_each_entry_safe(u, tmp, &set.pins, list)
		unpin(inode, u);
}
