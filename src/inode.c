// SPDX-License-Identifier: GPL-2.0
/*
 * inode.c - inodes named by (id, gen), attribute refresh from the server,
 * close-to-open style revalidation, getattr and setattr.
 *
 * While the server grants an inode (POHMEL_FEAT_GRANTS, pohmel_proto.h),
 * its attributes, data pages and, for a directory, its dentries and
 * listing are served from the cache without asking; a RECALL takes the
 * grant back (grant.c). Without a grant the cache follows
 * timeouts: attributes are trusted for sbi->attr_timeo after they were
 * fetched; when the server's change counter moves (and the change was
 * not ours) the page cache of the file is dropped before the next read.
 */
#include <linux/cred.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/log2.h>
#include <linux/pagemap.h>
#include <linux/posix_acl.h>
#include <linux/slab.h>
#include <linux/writeback.h>

#include "pohmel.h"

static struct kmem_cache *pohmel_inode_cachep;

/*
 * Fault injection for the stress group's race check: spin this many
 * microseconds (at most 2000) between the order check of a reply the
 * client did not cause (a GETATTR's) and applying its fields, so a
 * reply to the client's own change can arrive meanwhile. 0: off.
 */
static unsigned int refresh_delay_us;
module_param_named(debug_refresh_delay_us, refresh_delay_us, uint, 0644);
MODULE_PARM_DESC(debug_refresh_delay_us,
		 "test only: widen the attribute reply race window (us)");

static void pohmel_inode_init_once(void *p)
{
	struct pohmel_inode *pi = p;

	inode_init_once(&pi->vfs_inode);
}

int pohmel_inode_cache_init(void)
{
	pohmel_inode_cachep = kmem_cache_create("pohmel_inode_cache",
						sizeof(struct pohmel_inode), 0,
						SLAB_RECLAIM_ACCOUNT |
						SLAB_ACCOUNT,
						pohmel_inode_init_once);
	return pohmel_inode_cachep ? 0 : -ENOMEM;
}

void pohmel_inode_cache_exit(void)
{
	rcu_barrier();
	kmem_cache_destroy(pohmel_inode_cachep);
}

struct inode *pohmel_alloc_inode(struct super_block *sb)
{
	struct pohmel_inode *pi;

	pi = alloc_inode_sb(sb, pohmel_inode_cachep, GFP_KERNEL);
	if (!pi)
		return NULL;
	spin_lock_init(&pi->lock);
	INIT_LIST_HEAD(&pi->handles);
	INIT_LIST_HEAD(&pi->unstable);
	pi->wt_state = POHMEL_WT_NONE;
	pi->oid.id = 0;
	pi->oid.gen = 0;
	pi->change = 0;
	pi->attr_time = 0;
	pi->flags = 0;
	pi->link = NULL;
	pi->new_inode = false;
	pi->grant = POHMEL_GRANT_NONE;
	pi->grant_gen = 0;
	pi->epoch = 0;
	pi->attr_rseq = 0;
	pi->dcache = NULL;
	pi->dsa.valid = 0;
	pi->dsa_cred = NULL;
	pi->wb_create = NULL;
	return &pi->vfs_inode;
}

void pohmel_free_inode(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);

	kfree(pi->link);
	pohmel_dcache_put(pi->dcache);
	kmem_cache_free(pohmel_inode_cachep, pi);
}

void pohmel_evict_inode(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);

	truncate_inode_pages_final(&inode->i_data);
	pohmel_unstable_drop(inode);
	pohmel_wb_attr_forget(inode);
	clear_inode(inode);
	pohmel_drop_idle_handles(inode);
	WARN_ON_ONCE(!list_empty(&pi->handles));
	/*
	 * Nothing cached of it any more: the grant goes back (not at
	 * unmount, where the connection's end takes every grant).
	 */
	if ((inode->i_sb->s_flags & SB_ACTIVE) &&
	    pohmel_grant(inode, NULL) != POHMEL_GRANT_NONE)
		pohmel_conn_release(pohmel_conn(inode), pi->oid.id,
				    pi->oid.gen, pi->grant_gen);
}

/*
 * An inode whose type the server now reports differently (a broken or
 * hostile server) is not the one asked for: a fresh inode takes over
 * rather than every later lookup failing with ESTALE on the cached one.
 * (A new inode's type is still 0 while pohmel_iget() fills it in.)
 */
static int pohmel_test_inode(struct inode *inode, void *data)
{
	const struct pohmel_fattr *fa = data;
	struct pohmel_inode *pi = POHMEL_I(inode);
	umode_t type = inode->i_mode & S_IFMT;

	if (type && type != (fa->mode & S_IFMT))
		return 0;
	return pi->oid.id == fa->oid.id && pi->oid.gen == fa->oid.gen;
}

static int pohmel_set_inode(struct inode *inode, void *data)
{
	const struct pohmel_fattr *fa = data;
	struct pohmel_inode *pi = POHMEL_I(inode);

	pi->oid = fa->oid;
	pi->new_inode = true;
	inode->i_ino = fa->oid.id;
	return 0;
}

static void set_times(struct inode *inode, const struct pohmel_fattr *fa)
{
	inode_set_atime_to_ts(inode, fa->atime);
	inode_set_mtime_to_ts(inode, fa->mtime);
	inode_set_ctime_to_ts(inode, fa->ctime);
}

/*
 * Copy attributes from the server into @inode. Unless the change was
 * ours (POHMEL_REFRESH_OWN), a moved change counter marks the cached data
 * stale; it is dropped at the next read or open (never here: callers may
 * hold folio locks).
 */
int pohmel_refresh_inode(struct inode *inode, const struct pohmel_fattr *fa,
			 unsigned int flags)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	bool stale, moved, acl;

	if ((inode->i_mode & S_IFMT) && (fa->mode & S_IFMT) !=
	    (inode->i_mode & S_IFMT))
		return -ESTALE;
	if (fa->oid.id != pi->oid.id || fa->oid.gen != pi->oid.gen)
		return -ESTALE;

	spin_lock(&pi->lock);
	/*
	 * Replies are applied by their waiters, in any order: one that
	 * arrived before the reply last applied describes an older state
	 * (and the server recorded the later grant), so it is dropped.
	 */
	if (fa->rseq && fa->rseq < pi->attr_rseq) {
		spin_unlock(&pi->lock);
		return 0;
	}
	if (fa->rseq)
		pi->attr_rseq = fa->rseq;
	moved = pi->change != fa->change;
	stale = pi->attr_time && moved && !(flags & POHMEL_REFRESH_OWN);
	pi->change = fa->change;
	pi->attr_time = jiffies | 1;
	/*
	 * The fields too, under the lock: a reply checked as newer and
	 * applied after an older one must not be overwritten by it.
	 */
	if (unlikely(READ_ONCE(refresh_delay_us)) &&
	    !(flags & POHMEL_REFRESH_OWN))
		udelay(min(READ_ONCE(refresh_delay_us), 2000U));
	inode->i_mode = fa->mode;
	set_nlink(inode, fa->nlink);
	inode->i_uid = make_kuid(&init_user_ns, fa->uid);
	inode->i_gid = make_kgid(&init_user_ns, fa->gid);
	set_times(inode, fa);
	inode->i_blocks = fa->blocks;
	if (fa->blksize >= 512 && fa->blksize <= (1U << 20) &&
	    is_power_of_2(fa->blksize))
		inode->i_blkbits = ilog2(fa->blksize);
	if (S_ISREG(inode->i_mode) &&
	    (mapping_tagged(inode->i_mapping, PAGECACHE_TAG_DIRTY) ||
	     mapping_tagged(inode->i_mapping, PAGECACHE_TAG_WRITEBACK)))
		/* data not yet written back may extend the file */
		i_size_write(inode, max_t(loff_t, fa->size,
					  i_size_read(inode)));
	else
		i_size_write(inode, fa->size);
	/* changed locally and not sent yet: ours are newer */
	pohmel_wb_attr_reapply(inode);
	pohmel_take_grant(inode, fa);
	/*
	 * A moved change counter may be a changed ACL, unless it was our
	 * own change that touched none, on an object we hold EXCL (nobody
	 * else changed anything): the write-back log's replies, which would
	 * otherwise make the next create in a directory ask for its
	 * default ACL (a GETXATTR, sending the log first).
	 */
	acl = moved && !((flags & POHMEL_REFRESH_SAME_ACL) &&
			 pi->grant == POHMEL_GRANT_EXCL);
	spin_unlock(&pi->lock);
	if (stale && S_ISREG(inode->i_mode))
		set_bit(POHMEL_I_DATA_STALE, &pi->flags);
	if (acl)
		forget_all_cached_acls(inode);
	return 0;
}

/*
 * A buffered write ends at @end: grow i_size, after the folio was marked
 * dirty, under the lock pohmel_refresh_inode applies sizes under, so a
 * reply racing with the write sees the dirty folio and cannot shrink
 * i_size below it (writeback would skip the folio: a lost write).
 */
void pohmel_extend_size(struct inode *inode, loff_t end)
{
	struct pohmel_inode *pi = POHMEL_I(inode);

	spin_lock(&pi->lock);
	if (end > i_size_read(inode))
		i_size_write(inode, end);
	spin_unlock(&pi->lock);
}

/* A name made in @dir locally (wb.c): its times move, as the server's will. */
void pohmel_touch_dir(struct inode *dir, const struct timespec64 *now)
{
	struct pohmel_inode *pi = POHMEL_I(dir);

	spin_lock(&pi->lock);
	inode_set_mtime_to_ts(dir, *now);
	inode_set_ctime_to_ts(dir, *now);
	/* newer than an mtime set locally before (its entry goes first) */
	pi->dsa.valid &= ~(POHMEL_SET_MTIME | POHMEL_SET_MTIME_NOW);
	spin_unlock(&pi->lock);
}

/*
 * Our own change made the cached attributes wrong in a way no reply
 * told: forget them, and the grant that would keep serving them.
 */
void pohmel_invalidate_attrs(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_dcache *dc;

	spin_lock(&pi->lock);
	if (pi->attr_time)
		pi->attr_time = 1;	/* expired, but keep "known" */
	pi->grant = POHMEL_GRANT_NONE;
	dc = pi->dcache;
	pi->dcache = NULL;
	spin_unlock(&pi->lock);
	pohmel_dcache_put(dc);
}

static bool attrs_fresh(struct inode *inode)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);
	unsigned long t;

	if (pohmel_grant(inode, NULL) != POHMEL_GRANT_NONE)
		return true;
	spin_lock(&pi->lock);
	t = pi->attr_time;
	spin_unlock(&pi->lock);
	return t > 1 && sbi->attr_timeo &&
	       time_before(jiffies, t + sbi->attr_timeo);
}

/* Fetch attributes unless the cached ones are still fresh (or @force). */
int pohmel_revalidate_inode(struct inode *inode, bool force)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_fattr fa;
	int err;

	if (!force && attrs_fresh(inode)) {
		atomic64_inc(&sbi->stats.attr_hits);
		return 0;
	}
	/*
	 * While the server is away, known attributes are served from the
	 * cache rather than blocking (umount(8) stats the mount point).
	 */
	if (!force && POHMEL_I(inode)->attr_time &&
	    !pohmel_conn_is_up(&sbi->conn)) {
		atomic64_inc(&sbi->stats.attr_hits);
		return 0;
	}
	atomic64_inc(&sbi->stats.attr_misses);
	err = pohmel_rpc_getattr(&sbi->conn, &POHMEL_I(inode)->oid, &fa);
	if (err == -ESTALE)
		make_bad_inode(inode);
	if (err)
		return err;
	return pohmel_refresh_inode(inode, &fa, 0);
}

/* Attributes, then the page cache: what a read or write relies on. */
int pohmel_revalidate_data(struct inode *inode)
{
	int err = pohmel_revalidate_inode(inode, false);

	return err ?: pohmel_revalidate_mapping(inode);
}

/* Drop the page cache if the server's data moved under us. */
int pohmel_revalidate_mapping(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	int err;

	if (!test_bit(POHMEL_I_DATA_STALE, &pi->flags))
		return 0;
	/* unstable pages first: a server restart may need them again */
	if (S_ISREG(inode->i_mode) && pohmel_has_unstable(inode))
		err = pohmel_commit_inode(inode);
	else
		err = filemap_write_and_wait(inode->i_mapping);
	if (err)
		return err;
	if (!test_and_clear_bit(POHMEL_I_DATA_STALE, &pi->flags))
		return 0;
	atomic64_inc(&POHMEL_SB(inode->i_sb)->stats.page_invalidations);
	err = invalidate_inode_pages2(inode->i_mapping);
	if (err)
		set_bit(POHMEL_I_DATA_STALE, &pi->flags);
	return err;
}

struct inode *pohmel_iget(struct super_block *sb,
			  const struct pohmel_fattr *fa)
{
	struct pohmel_inode *pi;
	struct inode *inode;
	int err;

	inode = iget5_locked(sb, fa->oid.id, pohmel_test_inode,
			     pohmel_set_inode, (void *)fa);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	pi = POHMEL_I(inode);
	if (!pi->new_inode) {
		err = pohmel_refresh_inode(inode, fa, 0);
		if (err) {
			iput(inode);
			return ERR_PTR(err);
		}
		return inode;
	}
	pi->new_inode = false;
	inode->i_mode = fa->mode & S_IFMT;
	pohmel_refresh_inode(inode, fa, 0);
	switch (fa->mode & S_IFMT) {
	case S_IFREG:
		inode->i_op = &pohmel_file_iops;
		inode->i_fop = &pohmel_file_fops;
		inode->i_mapping->a_ops = &pohmel_aops;
		break;
	case S_IFDIR:
		inode->i_op = &pohmel_dir_iops;
		inode->i_fop = &pohmel_dir_fops;
		break;
	case S_IFLNK:
		inode->i_op = &pohmel_symlink_iops;
		inode_nohighmem(inode);
		break;
	default:
		inode->i_op = &pohmel_special_iops;
		init_special_inode(inode, inode->i_mode,
				   new_decode_dev(fa->rdev));
		break;
	}
	unlock_new_inode(inode);
	return inode;
}

/* Refresh an inode we already have from attributes that came along. */
void pohmel_prime_inode(struct super_block *sb, const struct pohmel_fattr *fa)
{
	struct inode *inode;

	inode = ilookup5(sb, fa->oid.id, pohmel_test_inode, (void *)fa);
	if (!inode)
		return;
	pohmel_refresh_inode(inode, fa, 0);
	iput(inode);
}

static int pohmel_test_foid(struct inode *inode, void *data)
{
	const struct pohmel_foid *oid = data;

	return POHMEL_I(inode)->oid.id == oid->id &&
	       POHMEL_I(inode)->oid.gen == oid->gen;
}

/* The cached inode of @oid, referenced, or NULL. */
struct inode *pohmel_ilookup(struct super_block *sb,
			     const struct pohmel_foid *oid)
{
	return ilookup5(sb, oid->id, pohmel_test_foid, (void *)oid);
}

int pohmel_getattr(POHMEL_IDMAP_PARAM const struct path *path,
		   struct kstat *stat, u32 mask, unsigned int flags)
{
	struct inode *inode = d_inode(path->dentry);
	int err;

	/* the server's size and mtime, unless ours are the truth (EXCL) */
	if (S_ISREG(inode->i_mode) && inode->i_mapping->nrpages &&
	    mapping_tagged(inode->i_mapping, PAGECACHE_TAG_DIRTY) &&
	    !pohmel_wb_keeps_dirty(inode))
		filemap_write_and_wait(inode->i_mapping);
	if ((flags & AT_STATX_SYNC_TYPE) != AT_STATX_DONT_SYNC) {
		err = pohmel_revalidate_inode(inode, (flags &
				AT_STATX_SYNC_TYPE) == AT_STATX_FORCE_SYNC);
		if (err)
			return err;
	}
	pohmel_generic_fillattr(mask, inode, stat);
	stat->ino = POHMEL_I(inode)->oid.id;
	return 0;
}

static void ts_or_now(struct pohmel_sattr *sa, unsigned int ia, u32 now,
		      u32 set)
{
	if (ia)
		sa->valid |= set;
	else
		sa->valid |= now;
}

/*
 * ftruncate and open(O_TRUNC) name the open file: its access was checked
 * at open, so the size changes through its handle, as on a local fs, and
 * not against the file's mode now (open(O_CREAT, 0) then ftruncate).
 */
static int size_via_handle(struct inode *inode, const struct iattr *attr,
			   struct pohmel_sattr *sa)
{
	struct pohmel_handle *h;
	int err;

	if (!(attr->ia_valid & ATTR_FILE) || !attr->ia_file ||
	    !(READ_ONCE(pohmel_conn(inode)->sess.features) &
	      POHMEL_FEAT_FD_ACCESS))
		return 0;
	h = attr->ia_file->private_data;
	if (!h || !(h->flags & POHMEL_OPEN_WRITE))
		return 0;
	err = pohmel_handle_ready(h);
	if (err)
		return err;
	sa->valid |= POHMEL_SET_HANDLE;
	sa->handle = h->handle;
	return 0;
}

int pohmel_setattr(POHMEL_IDMAP_PARAM struct dentry *dentry,
		   struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	struct pohmel_sattr sa = {};
	struct pohmel_fattr fa;
	unsigned int v = attr->ia_valid;
	int err;

	err = pohmel_setattr_prepare(dentry, attr);
	if (err)
		return err;
	err = pohmel_wb_setattr(inode, attr);
	if (err != -EAGAIN)
		return err;
	if (S_ISREG(inode->i_mode)) {
		/*
		 * Cached writes go out first: sent after the new attributes,
		 * they would move mtime again (tar sets it after writing).
		 */
		err = filemap_write_and_wait(inode->i_mapping);
		if (err)
			return err;
	}
	/* earlier local changes first, in the order they were made */
	err = pohmel_wb_attr_flush(inode);
	if (err)
		return err;
	if (v & ATTR_MODE) {
		sa.valid |= POHMEL_SET_MODE;
		sa.mode = attr->ia_mode & 07777;
	}
	if (v & ATTR_UID) {
		sa.valid |= POHMEL_SET_UID;
		sa.uid = from_kuid_munged(&init_user_ns, attr->ia_uid);
	}
	if (v & ATTR_GID) {
		sa.valid |= POHMEL_SET_GID;
		sa.gid = from_kgid_munged(&init_user_ns, attr->ia_gid);
	}
	if (v & ATTR_SIZE) {
		if (!S_ISREG(inode->i_mode))
			return -EINVAL;
		sa.valid |= POHMEL_SET_SIZE;
		sa.size = attr->ia_size;
		err = size_via_handle(inode, attr, &sa);
		if (err)
			return err;
	}
	if (v & ATTR_ATIME) {
		ts_or_now(&sa, v & ATTR_ATIME_SET, POHMEL_SET_ATIME_NOW,
			  POHMEL_SET_ATIME);
		sa.atime = attr->ia_atime;
	}
	if (v & ATTR_MTIME) {
		ts_or_now(&sa, v & ATTR_MTIME_SET, POHMEL_SET_MTIME_NOW,
			  POHMEL_SET_MTIME);
		sa.mtime = attr->ia_mtime;
	}
	if (!sa.valid)
		return 0;	/* e.g. only ATTR_KILL_*: the server does that */
	err = pohmel_rpc_setattr(pohmel_conn(inode), &POHMEL_I(inode)->oid,
				 &sa, &fa);
	if (err)
		return err;
	if (v & ATTR_SIZE) {
		truncate_setsize(inode, fa.size);
		pohmel_unstable_truncate(inode, fa.size);
	}
	return pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
}

static const char *pohmel_get_link(struct dentry *dentry, struct inode *inode,
				   struct delayed_call *done)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	char *target, *old;
	int err;

	spin_lock(&pi->lock);
	target = pi->link;
	spin_unlock(&pi->lock);
	if (target)
		return target;
	if (!dentry)
		return ERR_PTR(-ECHILD);
	err = pohmel_rpc_readlink(pohmel_conn(inode), &pi->oid, &target);
	if (err)
		return ERR_PTR(err);
	spin_lock(&pi->lock);
	old = pi->link;
	if (!old)
		pi->link = target;
	spin_unlock(&pi->lock);
	if (old) {
		kfree(target);
		return old;
	}
	return target;
}

const struct inode_operations pohmel_file_iops = {
	POHMEL_IOP_GET_ACL(pohmel_get_acl),
	.set_acl	= pohmel_set_acl,
	.getattr	= pohmel_getattr,
	.setattr	= pohmel_setattr,
	.listxattr	= pohmel_listxattr,
};

const struct inode_operations pohmel_symlink_iops = {
	.get_link	= pohmel_get_link,
	.getattr	= pohmel_getattr,
	.setattr	= pohmel_setattr,
	.listxattr	= pohmel_listxattr,
};

const struct inode_operations pohmel_special_iops = {
	POHMEL_IOP_GET_ACL(pohmel_get_acl),
	.set_acl	= pohmel_set_acl,
	.getattr	= pohmel_getattr,
	.setattr	= pohmel_setattr,
	.listxattr	= pohmel_listxattr,
};
