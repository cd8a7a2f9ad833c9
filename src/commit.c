// SPDX-License-Identifier: GPL-2.0
/*
 * commit.c - writes the server applied but has not yet made stable.
 *
 * The reply to a WRITE without POHMEL_IO_STABLE only means "in the
 * server's memory" (pohmel_proto.h, "Durability"): a crash of the server
 * machine before an FSYNC may lose it. So writepages hands the folios of
 * each such WRITE to this file, which pins them (a reference each:
 * reclaim cannot free them) together with the WRITE's range and the
 * verifier generation it was submitted under. pohmel_commit() sends
 * FSYNC for the pins taken before it: those whose generation is the one
 * the FSYNC was answered under are dropped; the others are written
 * again, stable, from the pinned folios themselves (the page cache may
 * have dropped them meanwhile, e.g. when the server's data moved after
 * its restart, and i_size may show the server's older size).
 *
 * Write-through data (O_DIRECT, appends, cache=none) is not kept, nor
 * are a directory's namespace changes: if the verifier changed under
 * them, the next commit (fsync) fails with EIO instead.
 */
#include <linux/cred.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/writeback.h>

#include "pohmel.h"

/* One WRITE's folios, waiting for an FSYNC under @gen. */
struct pohmel_unstable {
	struct list_head list;
	loff_t pos;			/* the WRITE's range (trimmed by */
	size_t len;			/* our own truncates) */
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

u32 pohmel_verf_gen(struct inode *inode)
{
	return atomic_read(&pohmel_conn(inode)->sess.verf_gen);
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
			 struct folio **folios, unsigned int nr, loff_t pos,
			 size_t len, u32 gen)
{
	struct pohmel_inode *pi = POHMEL_I(inode);

	u->pos = pos;
	u->len = len;
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

/*
 * A record of changes kept only by the server's memory (POHMEL_WT_*):
 * what was applied (@s2) under which verifier generation (@g2) joins
 * *@state, *@gen. Must hold the lock protecting them.
 */
static void wt_merge(u8 *state, u32 *gen, u8 s2, u32 g2)
{
	if (s2 == POHMEL_WT_NONE)
		return;
	if (*state == POHMEL_WT_NONE) {
		*state = s2;
		*gen = g2;
	} else if (*gen != g2 || s2 == POHMEL_WT_LOST) {
		*state = POHMEL_WT_LOST;
	}
}

/*
 * Lost if a verifier newer than the record's came before the FSYNC's
 * reply (@before, @after: verf_gen around the FSYNC).
 */
static bool wt_lost(u8 state, u32 gen, u32 before, u32 after)
{
	return state == POHMEL_WT_LOST ||
	       (state == POHMEL_WT_PENDING && (before != after || gen != before));
}

/*
 * An unstable write-through WRITE, or a namespace change in directory
 * @inode, submitted under @gen was applied: the next commit (fsync of
 * the file or directory) fails with EIO if the server lost it, and so
 * does the next syncfs (the mount-wide record, pohmel_commit_fs).
 */
void pohmel_write_through_done(struct inode *inode, u32 gen)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);

	spin_lock(&pi->lock);
	wt_merge(&pi->wt_state, &pi->wt_gen, POHMEL_WT_PENDING, gen);
	spin_unlock(&pi->lock);
	spin_lock(&sbi->wt_lock);
	wt_merge(&sbi->wt_state, &sbi->wt_gen, POHMEL_WT_PENDING, gen);
	spin_unlock(&sbi->wt_lock);
	if (S_ISREG(inode->i_mode))
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
	wt_merge(&pi->wt_state, &pi->wt_gen, set->wt_state, set->wt_gen);
	spin_unlock(&pi->lock);
}

/* Write @u's range again from its folios, stable: the server lost it. */
static int resend(struct inode *inode, struct pohmel_unstable *u)
{
	ssize_t n;

	if (!u->len)
		return 0;
	n = pohmel_write_folios(inode, u->folios, u->nr, u->pos, u->len,
				POHMEL_IO_STABLE);
	if (n >= 0 && n < u->len)
		n = -EIO;
	if (n < 0)
		return n;
	atomic64_add(u->nr, &POHMEL_SB(inode->i_sb)->stats.commit_resends);
	return 0;
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

/* Unpin everything in @set; returns how many pages that was. */
static unsigned long unpin_set(struct inode *inode, struct commit_set *set)
{
	struct pohmel_unstable *u, *tmp;
	unsigned long pages = 0;

	list_for_each_entry_safe(u, tmp, &set->pins, list) {
		pages += u->nr;
		unpin(inode, u);
	}
	return pages;
}

/*
 * The server no longer has the object (ESTALE: removed since the WRITEs,
 * through this mount, another client or in the export, and no handle
 * keeps it open): its data can never be made stable. Kept, it would be
 * sent again at every flusher pass for as long as the inode lives. Given
 * up like a local file's dirty data after its last unlink: no error in
 * the mapping, which would fail the next syncfs of the whole mount.
 */
static int give_up(struct inode *inode, struct commit_set *set, int err)
{
	atomic64_add(unpin_set(inode, set),
		     &POHMEL_SB(inode->i_sb)->stats.commit_dropped);
	return err;
}

/*
 * An FSYNC covering @set was answered between verifier generations
 * @before and @after: the pins answered under @before (if no new
 * verifier came meanwhile) are stable, the others are written again,
 * stable. 0, or the error that left the rest pinned.
 */
static int settle_pins(struct inode *inode, struct commit_set *set,
		       u32 before, u32 after)
{
	struct pohmel_unstable *u, *tmp;
	int err;

	list_for_each_entry_safe(u, tmp, &set->pins, list) {
		if (before != after || u->gen != before) {
			err = resend(inode, u);
			if (err == -ESTALE)
				return give_up(inode, set, err);
			if (err) {
				/* the rest goes back, still unstable */
				put_back(POHMEL_I(inode), set);
				return err;
			}
		}
		unpin(inode, u);
	}
	return 0;
}

/*
 * Make stable what this inode's WRITEs left unstable: one FSYNC (with
 * @flags, through @h if given) for everything pinned so far, and what a
 * server restart lost written again. Returns 0, -EIO if write-through
 * data was lost with the server's memory, or the error of the FSYNC or
 * of a WRITE sent again (what is not yet stable stays pinned then).
 * @fa gets the FSYNC's attributes.
 */
int pohmel_commit(struct inode *inode, struct pohmel_handle *h, u32 flags,
		  struct pohmel_fattr *fa)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct commit_set set;
	u32 before, after;
	int err;

	err = pohmel_handle_ready(h);
	if (err)
		return err;
	take_set(pi, &set);
	atomic64_inc(&sbi->stats.commits);
	before = pohmel_verf_gen(inode);
	err = pohmel_rpc_fsync(pohmel_conn(inode), &pi->oid,
			       h ? h->handle : 0, flags, fa);
	after = pohmel_verf_gen(inode);
	if (err == -ESTALE)
		return give_up(inode, &set, err);
	if (err) {
		put_back(pi, &set);
		return err;
	}
	err = settle_pins(inode, &set, before, after);
	if (err)
		return err;
	if (wt_lost(set.wt_state, set.wt_gen, before, after)) {
		pr_warn_ratelimited("%s (%pISpc): inode %llu: changes made around the page cache before the server's restart were lost with its memory\n",
				    pohmel_conn(inode)->name,
				    &pohmel_conn(inode)->addr, pi->oid.id);
		mapping_set_error(inode->i_mapping, -EIO);
		return -EIO;
	}
	return err;
}

/* One inode's pins, taken for an FSYNC_FS. */
struct fs_pins {
	struct list_head list;
	struct inode *inode;		/* held */
	struct commit_set set;
};

/*
 * Every inode's pins so far, onto @all: the FSYNC_FS about to go covers
 * them, so sync(2) sends one FSYNC for the mount, not one per file
 * (pohmel_sync_commits_all). An inode left out for lack of memory keeps
 * its pins for its own commit.
 */
static void take_all_pins(struct super_block *sb, struct list_head *all)
{
	struct inode *inode, *skip = NULL;

	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		struct pohmel_inode *pi = POHMEL_I(inode);
		struct fs_pins *p;

		/* a hint; take_set reads it again under pi->lock */
		if (list_empty_careful(&pi->unstable) || !igrab(inode))
			continue;
		/* our reference keeps it on s_inodes: go on from it */
		spin_unlock(&sb->s_inode_list_lock);
		iput(skip);
		skip = NULL;
		p = kmalloc(sizeof(*p), GFP_NOFS);
		if (p) {
			p->inode = inode;
			take_set(pi, &p->set);
			list_add_tail(&p->list, all);
		} else {
			skip = inode;
		}
		cond_resched();
		spin_lock(&sb->s_inode_list_lock);
	}
	spin_unlock(&sb->s_inode_list_lock);
	iput(skip);
}

/*
 * The FSYNC_FS for @all ended with @err: the pins are stable (or written
 * again if the server restarted), or back on their inodes, which the
 * flusher then commits one by one. 0 or the first error.
 */
static int settle_all_pins(struct list_head *all, int err, u32 before,
			   u32 after)
{
	struct fs_pins *p, *tmp;
	int ret = 0, e;

	list_for_each_entry_safe(p, tmp, all, list) {
		if (err) {
			put_back(POHMEL_I(p->inode), &p->set);
			e = err;
		} else {
			e = settle_pins(p->inode, &p->set, before, after);
		}
		if (e && e != -ESTALE && pohmel_has_unstable(p->inode))
			__mark_inode_dirty(p->inode, I_DIRTY_DATASYNC);
		if (e && e != -ESTALE && !ret)
			ret = e;
		list_del(&p->list);
		iput(p->inode);
		kfree(p);
	}
	return ret;
}

/*
 * May ->write_inode leave @inode's pins to the FSYNC_FS that follows?
 * In the writeback of sync(2) and syncfs(2) (both passes: the first is
 * WB_SYNC_NONE without kupdate or background), where the server can
 * sync the export: then ->sync_fs commits every inode at once.
 */
bool pohmel_sync_commits_all(struct inode *inode,
			     const struct writeback_control *wbc)
{
	return (READ_ONCE(pohmel_conn(inode)->sess.features) &
		POHMEL_FEAT_STABLE) &&
	       (wbc->for_sync || (wbc->sync_mode == WB_SYNC_NONE &&
				  !wbc->for_kupdate && !wbc->for_background));
}

/*
 * syncfs(2) and sync(2), after every inode was written and committed:
 * one FSYNC_FS makes the whole export stable. If write-through data or
 * names applied since the last one were lost with the server's memory
 * (a verifier newer than theirs), syncfs reports EIO once, through the
 * superblock's errseq (sync(2) reports nothing, as on any fs).
 *
 * Nothing is sent when no request that can change the server ended since
 * the last FSYNC_FS, no name waits in the write-back log (the FSYNC_FS
 * sends it first) and no change waits for its check: an idle mount's sync
 * does not wait for a server that is away. Counting requests that ended,
 * not those sent, keeps one still in flight out of what an FSYNC_FS is
 * taken to cover.
 */
int pohmel_commit_fs(struct super_block *sb)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(sb);
	s64 changes = atomic64_read(&sbi->conn.changes_done);
	struct pohmel_fattr fa;
	u32 before, after, gen;
	LIST_HEAD(pins);
	int err, perr;
	u8 state;

	spin_lock(&sbi->wt_lock);
	if (sbi->wt_state == POHMEL_WT_NONE && changes == sbi->committed &&
	    !atomic_read(&sbi->conn.wb_pending)) {
		spin_unlock(&sbi->wt_lock);
		return 0;
	}
	state = sbi->wt_state;
	gen = sbi->wt_gen;
	sbi->wt_state = POHMEL_WT_NONE;
	spin_unlock(&sbi->wt_lock);
	before = atomic_read(&sbi->conn.sess.verf_gen);
	take_all_pins(sb, &pins);
	err = pohmel_rpc_fsync(&sbi->conn, &sbi->root, 0, POHMEL_FSYNC_FS, &fa);
	after = atomic_read(&sbi->conn.sess.verf_gen);
	perr = settle_all_pins(&pins, err, before, after);
	if (!err && perr) {
		errseq_set(&sb->s_wb_err, perr);
		return perr;
	}
	if (err) {
		spin_lock(&sbi->wt_lock);
		wt_merge(&sbi->wt_state, &sbi->wt_gen, state, gen);
		spin_unlock(&sbi->wt_lock);
		return err;
	}
	spin_lock(&sbi->wt_lock);
	if (changes > sbi->committed)
		sbi->committed = changes;
	spin_unlock(&sbi->wt_lock);
	if (!wt_lost(state, gen, before, after))
		return 0;
	pr_warn_ratelimited("%s (%pISpc): names or data written around the page cache before the server's restart were lost with its memory: syncfs reports EIO\n",
			    sbi->conn.name, &sbi->conn.addr);
	errseq_set(&sb->s_wb_err, -EIO);
	return -EIO;
}

/* Write back [@start, @end], then commit. */
int pohmel_write_and_commit(struct inode *inode, struct pohmel_handle *h,
			    loff_t start, loff_t end, u32 flags,
			    struct pohmel_fattr *fa)
{
	int err = filemap_write_and_wait_range(inode->i_mapping, start, end);

	return err ?: pohmel_commit(inode, h, flags, fa);
}

/*
 * Everything this inode has unstable, committed by someone who holds no
 * open file: the flusher (write_inode) or a reader about to drop a stale
 * page cache. FSYNC as the opener, like the WRITEs it commits.
 */
int pohmel_commit_inode(struct inode *inode)
{
	struct pohmel_handle *h = pohmel_get_handle(inode, POHMEL_OPEN_WRITE);
	const struct cred *old = NULL;
	struct pohmel_fattr fa;
	int err;

	if (h)
		old = override_creds(h->cred);
	err = pohmel_write_and_commit(inode, h, 0, LLONG_MAX,
				      POHMEL_FSYNC_DATAONLY, &fa);
	if (h)
		revert_creds(old);
	pohmel_put_handle(h);
	if (!err)
		pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
	return err;
}

/* Our own truncate to @size: nothing past it is to be sent again. */
void pohmel_unstable_truncate(struct inode *inode, loff_t size)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_unstable *u;

	spin_lock(&pi->lock);
	list_for_each_entry(u, &pi->unstable, list) {
		if (u->pos >= size)
			u->len = 0;
		else if (u->pos + (loff_t)u->len > size)
			u->len = size - u->pos;
	}
	spin_unlock(&pi->lock);
}

/* Eviction: what was not committed is given up (the inode is going). */
void pohmel_unstable_drop(struct inode *inode)
{
	struct commit_set set;

	take_set(POHMEL_I(inode), &set);
	unpin_set(inode, &set);
}
