// SPDX-License-Identifier: GPL-2.0
/*
 * grant.c - what a grant is for an inode: taken from the reply that
 * brought it (capped by the recall ring, conn_grants.c), named by an
 * epoch while it lasts (dentries and listings checked under an epoch are
 * good while it is), asked for on a directory, lowered by a RECALL
 * (dirty data and attributes written back first, then the cache
 * dropped), and ended by our own removal. Given back at eviction by
 * inode.c (RELEASE).
 *
 * Lock rules: pi->lock protects grant, grant_gen, epoch and dcache
 * (pohmel.h); a recall never takes the inode lock or a folio lock.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/posix_acl.h>

#include "pohmel.h"

/*
 * Take the grant that came with @fa (pi->lock held). It counts only if
 * it came on the current connection, and no more than any RECALL of the
 * object since its request left allows (conn.c: the recall ring).
 */
void pohmel_take_grant(struct inode *inode, const struct pohmel_fattr *fa)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_conn *c = &sbi->conn;
	bool had = pi->grant != POHMEL_GRANT_NONE &&
		   pi->grant_gen == READ_ONCE(c->gen);
	u32 g = fa->grant;

	lockdep_assert_held(&pi->lock);
	if (g > POHMEL_GRANT_EXCL || !fa->gen || fa->gen != READ_ONCE(c->gen) ||
	    !pohmel_conn_grants(c))
		g = POHMEL_GRANT_NONE;
	if (g != POHMEL_GRANT_NONE) {
		clear_bit(POHMEL_I_GRANT_REFUSED, &pi->flags);
		g = pohmel_conn_grant_cap(c, fa->oid.id, fa->stamp, g);
	} else if (fa->gen && fa->gen == READ_ONCE(c->gen)) {
		/* the server would not grant it (busy, or cannot watch it) */
		set_bit(POHMEL_I_GRANT_REFUSED, &pi->flags);
	}
	/* WB_NEW's "nobody else touched it" holds only under EXCL */
	if (!had || g != POHMEL_GRANT_EXCL)
		clear_bit(POHMEL_I_WB_NEW, &pi->flags);
	if (g == POHMEL_GRANT_NONE) {
		pi->grant = POHMEL_GRANT_NONE;
		return;
	}
	if (!had)
		pi->epoch = atomic64_inc_return(&sbi->epochs);
	pi->grant = g;
	pi->grant_gen = fa->gen;
}

/* The grant @inode holds now (and its epoch); NONE and 0 without one. */
u32 pohmel_grant(struct inode *inode, u64 *epoch)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	u32 g = POHMEL_GRANT_NONE;
	u64 e = 0;

	spin_lock(&pi->lock);
	if (pi->grant != POHMEL_GRANT_NONE &&
	    pi->grant_gen == READ_ONCE(pohmel_conn(inode)->gen)) {
		g = pi->grant;
		e = pi->epoch;
	}
	spin_unlock(&pi->lock);
	if (epoch)
		*epoch = e;
	return g;
}

/*
 * The server ended our grant on @inode with a request of ours that just
 * completed (a removal's POHMEL_REMOVE_RELEASE). Replies to requests
 * sent before it may still carry the grant: the recall ring caps them,
 * as after a RECALL to NONE. The eviction then sends no RELEASE.
 */
void pohmel_grant_ended(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);

	pohmel_conn_grant_ended(pohmel_conn(inode), pi->oid.id);
	spin_lock(&pi->lock);
	pi->grant = POHMEL_GRANT_NONE;
	spin_unlock(&pi->lock);
}

u64 pohmel_grant_epoch(struct inode *inode)
{
	u64 e;

	pohmel_grant(inode, &e);
	return e;
}

/*
 * The epoch of directory @dir's grant, asking for one (GETATTR) if it
 * has none and the server did not refuse it last time: a LOOKUP's reply
 * grants only the child, and without a grant on @dir none of its
 * dentries can be trusted.
 */
u64 pohmel_dir_epoch(struct inode *dir)
{
	struct pohmel_conn *c = pohmel_conn(dir);
	u64 e = pohmel_grant_epoch(dir);

	if (e || !pohmel_conn_grants(c) || !pohmel_conn_is_up(c) ||
	    test_bit(POHMEL_I_GRANT_REFUSED, &POHMEL_I(dir)->flags))
		return e;
	if (pohmel_revalidate_inode(dir, true))
		return 0;
	return pohmel_grant_epoch(dir);
}

/*
 * A RECALL names the object by id: every incarnation of it is meant (an
 * unlinked but open file and the new object under its reused number are
 * cached side by side). The ones already handled are skipped.
 */
#define POHMEL_RECALL_INCARNATIONS	8
struct recall_match {
	u64 id;
	unsigned int n;
	struct inode *done[POHMEL_RECALL_INCARNATIONS];
};

static int pohmel_test_recall(struct inode *inode, void *data)
{
	const struct recall_match *m = data;
	unsigned int i;

	if (POHMEL_I(inode)->oid.id != m->id)
		return 0;
	for (i = 0; i < m->n; i++)
		if (m->done[i] == inode)
			return 0;
	return 1;
}

/*
 * The server takes back (rec->to NONE) or downgrades (SHARED) our grant
 * on an object; the conn layer acks when this returns. The grant is
 * lowered first, so nothing new is served from the cache; then dirty
 * data goes to the server (and is waited for: the ack promises it is
 * there); then, for NONE, what was cached is dropped. Never taken here:
 * the inode lock or a folio lock (invalidate_mapping_pages skips locked
 * folios), which a writer may hold while its own request waits for
 * another client's ack. What is left is marked stale and dropped by the
 * next read (pohmel_revalidate_mapping).
 */
static void recall_one(struct inode *inode, u32 to)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_dcache *dc = NULL;

	spin_lock(&pi->lock);
	clear_bit(POHMEL_I_WB_NEW, &pi->flags);
	if (to != POHMEL_GRANT_SHARED) {
		pi->grant = POHMEL_GRANT_NONE;
		if (pi->attr_time)
			pi->attr_time = 1;
		dc = pi->dcache;
		pi->dcache = NULL;
	} else if (pi->grant > POHMEL_GRANT_SHARED) {
		pi->grant = POHMEL_GRANT_SHARED;
	}
	spin_unlock(&pi->lock);
	pohmel_dcache_put(dc);
	if (S_ISREG(inode->i_mode))
		filemap_write_and_wait(inode->i_mapping);
	/* after the data: a WRITE would move the mtime they set */
	pohmel_wb_attr_flush(inode);
	if (to != POHMEL_GRANT_SHARED) {
		atomic64_inc(&sbi->stats.recall_drops);
		if (S_ISREG(inode->i_mode)) {
			set_bit(POHMEL_I_DATA_STALE, &pi->flags);
			unmap_mapping_range(inode->i_mapping, 0, 0, 0);
			invalidate_mapping_pages(inode->i_mapping, 0, -1);
		}
		forget_all_cached_acls(inode);
		pohmel_drop_idle_handles(inode);
	}
}

void pohmel_recall_inode(struct super_block *sb,
			 const struct pohmel_recall *rec)
{
	struct recall_match m = { .id = be64_to_cpu(rec->oid.id) };
	u32 to = be32_to_cpu(rec->to);
	struct inode *inode;
	unsigned int i;

	/* the references held until the end keep done[] from being reused */
	while (m.n < POHMEL_RECALL_INCARNATIONS) {
		inode = ilookup5(sb, m.id, pohmel_test_recall, &m);
		if (!inode)
			break;
		recall_one(inode, to);
		m.done[m.n++] = inode;
	}
	for (i = 0; i < m.n; i++)
		iput(m.done[i]);
}
