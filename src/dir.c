// SPDX-License-Identifier: GPL-2.0
/*
 * dir.c - namespace operations: lookup and dentry revalidation, create,
 * mkdir, mknod, symlink, link, unlink, rmdir, rename (with NOREPLACE and
 * EXCHANGE). Each is one round trip; replies carry the attributes of the
 * object and of the directory afterwards, which refresh both.
 *
 * A dentry checked while its directory held a grant records the grant's
 * epoch in d_time and is trusted, positive or negative, while the
 * directory holds that epoch: any change of the directory by someone
 * else recalls the grant first, which ends the epoch.
 */
#include <linux/dcache.h>
#include <linux/jiffies.h>
#include <linux/namei.h>
#include <linux/slab.h>

#include "pohmel.h"

/*
 * @dentry was checked by a request sent while @dir held epoch @e0 (0: no
 * grant): it is good for as long as @dir keeps @e0, if it still has it.
 */
static void set_dentry_epoch(struct dentry *dentry, struct inode *dir,
			     u64 e0)
{
	dentry->d_time = e0 && pohmel_grant_epoch(dir) == e0 ?
			 (unsigned long)e0 : 0;
}

/*
 * @name in @dir's complete listing under @e0 (caller holds i_rwsem):
 * 1 present (*@oid), 0 absent, -ENOENT no listing. Without a listing, a
 * small directory listed before is read again whole first.
 */
static int listed(struct inode *dir, const struct qstr *name, u64 e0,
		  struct pohmel_foid *oid)
{
	int r = pohmel_dcache_lookup(dir, name, e0, oid);

	if (r == -ENOENT && !pohmel_dcache_relist(dir, e0))
		r = pohmel_dcache_lookup(dir, name, e0, oid);
	return r;
}

/*
 * The cached inode of a name the listing has, if it holds a grant (its
 * attributes are current: the walk checks permissions on them unasked).
 */
static struct inode *granted_inode(struct super_block *sb,
				   const struct pohmel_foid *oid)
{
	struct inode *inode = pohmel_ilookup(sb, oid);

	if (inode && pohmel_grant(inode, NULL) == POHMEL_GRANT_NONE) {
		iput(inode);
		inode = NULL;
	}
	return inode;
}

static struct dentry *pohmel_lookup(struct inode *dir, struct dentry *dentry,
				    unsigned int flags)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(dir->i_sb);
	u64 e0 = pohmel_dir_epoch(dir);
	struct pohmel_foid oid;
	struct pohmel_fattr fa;
	struct inode *inode = NULL;
	int err;

	if (dentry->d_name.len > POHMEL_NAME_MAX)
		return ERR_PTR(-ENAMETOOLONG);
	/* the complete listing of a granted directory answers */
	err = e0 ? listed(dir, &dentry->d_name, e0, &oid) : -ENOENT;
	if (!err) {
		atomic64_inc(&sbi->stats.neg_lookup_hits);
		dentry->d_time = (unsigned long)e0;
		return d_splice_alias(NULL, dentry);
	}
	if (err == 1) {
		inode = granted_inode(dir->i_sb, &oid);
		if (inode) {
			atomic64_inc(&sbi->stats.dentry_hits);
			set_dentry_epoch(dentry, dir, e0);
			return d_splice_alias(inode, dentry);
		}
	}
	err = pohmel_rpc_lookup(pohmel_conn(dir), &POHMEL_I(dir)->oid,
				dentry->d_name.name, dentry->d_name.len, &fa);
	if (err && err != -ENOENT)
		return ERR_PTR(err);
	if (!err) {
		inode = pohmel_iget(dir->i_sb, &fa);
		if (IS_ERR(inode))
			return ERR_CAST(inode);
	}
	set_dentry_epoch(dentry, dir, e0);
	return d_splice_alias(inode, dentry);
}

/*
 * The name is good under the directory's epoch; the object behind it is
 * checked too (as a LOOKUP would) unless it holds a grant itself: what
 * the VFS caches without asking us (ACLs) must not outlive a change made
 * elsewhere. Only a spinlock each: safe in RCU walk (inodes are freed
 * after a grace period, ->free_inode).
 */
static bool granted_dentry(struct inode *parent, struct dentry *dentry,
			   struct inode *inode)
{
	u64 e0 = pohmel_grant_epoch(parent);

	return e0 && READ_ONCE(dentry->d_time) == (unsigned long)e0 &&
	       (!inode || pohmel_grant(inode, NULL) != POHMEL_GRANT_NONE);
}

/*
 * A dentry is trusted while its directory holds the grant epoch it was
 * checked under; else the name is looked up again and must still lead
 * to the same object. In RCU walk only the first is tried (no sleeping,
 * no reference taken): a warm path walk under grants never leaves it.
 */
static int pohmel_d_revalidate(POHMEL_D_REVALIDATE_PARAMS)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(dentry->d_sb);
	struct inode *inode, *parent;
	struct name_snapshot snap;
	struct dentry *pd = NULL;
	struct pohmel_fattr fa;
	int err, ret;
	u64 e0;

	if (flags & LOOKUP_RCU) {
		parent = pohmel_revalidate_dir_rcu(dentry);
		inode = d_inode_rcu(dentry);
		if (!parent || !granted_dentry(parent, dentry, inode))
			return -ECHILD;
		atomic64_inc(&sbi->stats.dentry_hits);
		atomic64_inc(&sbi->stats.dentry_rcu_hits);
		return 1;
	}
	pd = dget_parent(dentry);
	parent = d_inode(pd);
	inode = d_inode(dentry);
	if (granted_dentry(parent, dentry, inode)) {
		atomic64_inc(&sbi->stats.dentry_hits);
		dput(pd);
		return 1;
	}
	e0 = pohmel_grant_epoch(parent);
	if (!pohmel_conn_is_up(&sbi->conn) && d_really_is_positive(dentry)) {
		/* the server is away: keep what we know (see getattr) */
		atomic64_inc(&sbi->stats.dentry_hits);
		dput(pd);
		return 1;
	}
	if (!e0)	/* a new epoch: the name is checked again below */
		e0 = pohmel_dir_epoch(parent);
	/*
	 * The parent's listing (read again whole if small) settles the
	 * name without a LOOKUP: it must still lead to the same object,
	 * which holds a grant. Only with i_rwsem: listings change under it
	 * held exclusive, and a caller may hold it already (hence trylock).
	 */
	take_dentry_name_snapshot(&snap, dentry);
	if (e0 && inode_trylock_shared(parent)) {
		struct pohmel_foid oid;

		ret = listed(parent, &snap.name, e0, &oid);
		inode_unlock_shared(parent);
		if ((ret == 0 && !inode) ||
		    (ret == 1 && inode && POHMEL_I(inode)->oid.id == oid.id &&
		     POHMEL_I(inode)->oid.gen == oid.gen &&
		     pohmel_grant(inode, NULL) != POHMEL_GRANT_NONE)) {
			release_dentry_name_snapshot(&snap);
			atomic64_inc(&sbi->stats.dentry_hits);
			set_dentry_epoch(dentry, parent, e0);
			dput(pd);
			return 1;
		}
	}
	atomic64_inc(&sbi->stats.dentry_misses);
	err = pohmel_rpc_lookup(&sbi->conn, &POHMEL_I(parent)->oid,
				snap.name.name, snap.name.len, &fa);
	release_dentry_name_snapshot(&snap);
	if (err == -ENOENT) {
		ret = inode ? 0 : 1;
	} else if (err) {
		ret = err;
	} else if (!inode) {
		ret = 0;
	} else if (POHMEL_I(inode)->oid.id != fa.oid.id ||
		   POHMEL_I(inode)->oid.gen != fa.oid.gen) {
		ret = 0;
	} else {
		ret = pohmel_refresh_inode(inode, &fa, 0) ? 0 : 1;
	}
	if (ret == 1)
		set_dentry_epoch(dentry, parent, e0);
	dput(pd);
	return ret;
}

const struct dentry_operations pohmel_dops = {
	.d_revalidate	= pohmel_d_revalidate,
};

/*
 * The object a CREATE, MKDIR, MKNOD or SYMLINK reply names must be of the
 * type asked for, must not be an object we know as another type, and a
 * directory must not be one we already have under another name (two
 * names of one directory break the dcache's tree). Else the server lies:
 * a protocol error, the call fails with EIO.
 */
static int check_new_object(struct inode *dir, umode_t type,
			    const struct pohmel_fattr *obj)
{
	struct inode *old;
	bool bad;

	bad = (obj->mode & S_IFMT) != type;
	old = bad ? NULL : pohmel_ilookup(dir->i_sb, &obj->oid);
	if (old) {
		bad = (old->i_mode & S_IFMT) != type;
		if (!bad && S_ISDIR(old->i_mode)) {
			struct dentry *alias = d_find_any_alias(old);

			bad = alias;
			dput(alias);
		}
		iput(old);
	}
	if (!bad)
		return 0;
	pohmel_conn_proto_error(pohmel_conn(dir), obj->gen,
				"a new entry names an object we already have");
	return -EIO;
}

/* The reply to a namespace change: instantiate the new object. */
static int instantiate(struct inode *dir, struct dentry *dentry,
		       const struct pohmel_fattr *obj,
		       const struct pohmel_fattr *pdir)
{
	struct inode *inode;

	pohmel_refresh_inode(dir, pdir, POHMEL_REFRESH_OWN);
	inode = pohmel_iget(dir->i_sb, obj);
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	/* the reply's own grant on @dir covers the new name */
	set_dentry_epoch(dentry, dir, pohmel_grant_epoch(dir));
	pohmel_dcache_add(dir, &dentry->d_name, obj);
	if (S_ISDIR(inode->i_mode))
		pohmel_dcache_new_dir(inode);
	d_instantiate(dentry, inode);
	return 0;
}

static int do_create(struct inode *dir, struct dentry *dentry, u16 op,
		     umode_t mode, dev_t rdev, u32 flags, const char *target)
{
	struct pohmel_fattr obj, pdir;
	u32 tlen = target ? strlen(target) : 0;
	u32 gen = pohmel_verf_gen(dir);
	int err;

	if (op != POHMEL_OP_SYMLINK) {
		err = pohmel_acl_create_mode(dir, &mode);
		if (err)
			return err;
	}
	if (op != POHMEL_OP_MKNOD)
		mode &= 07777;
	err = pohmel_wb_create(dir, dentry, op, op == POHMEL_OP_CREATE ?
			       S_IFREG | mode : op == POHMEL_OP_MKDIR ?
			       S_IFDIR | mode : op == POHMEL_OP_SYMLINK ?
			       S_IFLNK | mode : mode, rdev, target);
	if (err != -EAGAIN)
		return err;
	err = pohmel_rpc_create(pohmel_conn(dir), op, &POHMEL_I(dir)->oid,
				dentry->d_name.name, dentry->d_name.len, mode,
				new_encode_dev(rdev), flags, target, tlen,
				&obj, &pdir);
	if (err)
		return err;
	pohmel_write_through_done(dir, gen);
	pohmel_wb_new_dir_size(POHMEL_SB(dir->i_sb), op, &obj);
	err = check_new_object(dir, op == POHMEL_OP_MKDIR ? S_IFDIR :
			       op == POHMEL_OP_SYMLINK ? S_IFLNK :
			       op == POHMEL_OP_CREATE ? S_IFREG : mode & S_IFMT,
			       &obj);
	if (err) {
		/* what the server made there is unknown: ask again later */
		d_drop(dentry);
		return err;
	}
	return instantiate(dir, dentry, &obj, &pdir);
}

static int pohmel_create(POHMEL_IDMAP_PARAM struct inode *dir,
			 struct dentry *dentry, umode_t mode, bool excl)
{
	return do_create(dir, dentry, POHMEL_OP_CREATE, mode, 0,
			 excl ? POHMEL_CREATE_EXCL : 0, NULL);
}

static POHMEL_MKDIR_RET pohmel_mkdir(POHMEL_IDMAP_PARAM struct inode *dir,
				     struct dentry *dentry, umode_t mode)
{
	return pohmel_mkdir_return(do_create(dir, dentry, POHMEL_OP_MKDIR,
					     mode, 0, 0, NULL));
}

static int pohmel_mknod(POHMEL_IDMAP_PARAM struct inode *dir,
			struct dentry *dentry, umode_t mode, dev_t rdev)
{
	return do_create(dir, dentry, POHMEL_OP_MKNOD, mode, rdev, 0, NULL);
}

static int pohmel_symlink(POHMEL_IDMAP_PARAM struct inode *dir,
			  struct dentry *dentry, const char *target)
{
	return do_create(dir, dentry, POHMEL_OP_SYMLINK, S_IFLNK | 0777, 0, 0,
			 target);
}

static int pohmel_link(struct dentry *old, struct inode *dir,
		       struct dentry *dentry)
{
	struct inode *inode = d_inode(old);
	struct pohmel_fattr obj, pdir;
	u32 gen = pohmel_verf_gen(dir);
	int err;

	err = pohmel_rpc_link(pohmel_conn(dir), &POHMEL_I(inode)->oid,
			      &POHMEL_I(dir)->oid, dentry->d_name.name,
			      dentry->d_name.len, &obj, &pdir);
	if (err)
		return err;
	pohmel_write_through_done(dir, gen);
	pohmel_refresh_inode(dir, &pdir, POHMEL_REFRESH_OWN);
	pohmel_refresh_inode(inode, &obj, POHMEL_REFRESH_OWN);
	ihold(inode);
	set_dentry_epoch(dentry, dir, pohmel_grant_epoch(dir));
	pohmel_dcache_add(dir, &dentry->d_name, &obj);
	d_instantiate(dentry, inode);
	return 0;
}

static int do_remove(struct inode *dir, struct dentry *dentry, u16 op)
{
	struct inode *inode = d_inode(dentry);
	struct pohmel_forget fg;
	struct pohmel_fattr pdir;
	u32 gen = pohmel_verf_gen(dir);
	int err;

	err = pohmel_wb_remove(dir, dentry, op);	/* on the log if it can */
	if (err != -EAGAIN)
		return err;
	/*
	 * Sent first: applied after the unlink they would find nothing
	 * (the data they write goes with the idle handles, still there).
	 */
	err = pohmel_wb_attr_flush(inode);
	if (err)
		return err;
	/* the idle handles go with the removal (a deferred OPEN with them) */
	pohmel_forget_begin(inode, op, &fg);
	err = pohmel_handles_ready(inode);
	if (!err)
		err = pohmel_rpc_remove(pohmel_conn(dir), op,
					&POHMEL_I(dir)->oid,
					dentry->d_name.name,
					dentry->d_name.len, &fg, &pdir);
	pohmel_forget_end(inode, &fg, !err);
	if (err)
		return err;
	pohmel_write_through_done(dir, gen);
	pohmel_refresh_inode(dir, &pdir, POHMEL_REFRESH_OWN);
	pohmel_dcache_remove(dir, &dentry->d_name);
	if (op == POHMEL_OP_RMDIR)
		clear_nlink(inode);
	else if (inode->i_nlink)	/* the server may have said 0 already */
		drop_nlink(inode);
	pohmel_invalidate_attrs(inode);
	return 0;
}

static int pohmel_unlink(struct inode *dir, struct dentry *dentry)
{
	return do_remove(dir, dentry, POHMEL_OP_UNLINK);
}

static int pohmel_rmdir(struct inode *dir, struct dentry *dentry)
{
	return do_remove(dir, dentry, POHMEL_OP_RMDIR);
}

static int pohmel_rename(POHMEL_IDMAP_PARAM struct inode *odir,
			 struct dentry *old, struct inode *ndir,
			 struct dentry *new, unsigned int flags)
{
	struct inode *target = d_inode(new);
	struct pohmel_fattr obj, pdir;
	u32 gen = pohmel_verf_gen(odir);
	u32 wflags = 0;
	int err;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (flags & RENAME_NOREPLACE)
		wflags |= POHMEL_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		wflags |= POHMEL_RENAME_EXCHANGE;
	/* a target replaced goes away: what it has pending goes first */
	if (target) {
		err = pohmel_wb_attr_flush(target);
		if (!err)
			err = pohmel_handles_ready(target);
		if (err)
			return err;
	}
	err = pohmel_rpc_rename(pohmel_conn(odir), &POHMEL_I(odir)->oid,
				old->d_name.name, old->d_name.len,
				&POHMEL_I(ndir)->oid, new->d_name.name,
				new->d_name.len, wflags, &obj, &pdir);
	if (err)
		return err;
	pohmel_write_through_done(odir, gen);
	pohmel_write_through_done(ndir, gen);
	pohmel_refresh_inode(ndir, &pdir, POHMEL_REFRESH_OWN);
	if (flags & RENAME_EXCHANGE) {
		pohmel_dcache_drop(odir);
		pohmel_dcache_drop(ndir);
	} else {
		pohmel_dcache_remove(odir, &old->d_name);
		pohmel_dcache_remove(ndir, &new->d_name);
		pohmel_dcache_add(ndir, &new->d_name, &obj);
	}
	if (odir != ndir)
		pohmel_invalidate_attrs(odir);
	pohmel_refresh_inode(d_inode(old), &obj, POHMEL_REFRESH_OWN);
	if (target) {
		if (flags & RENAME_EXCHANGE) {
			pohmel_invalidate_attrs(target);
		} else {
			if (S_ISDIR(target->i_mode))
				clear_nlink(target);
			else if (target->i_nlink)
				drop_nlink(target);
			pohmel_invalidate_attrs(target);
		}
	}
	/* d_move() follows: @old takes the new name in @ndir */
	set_dentry_epoch(old, ndir, pohmel_grant_epoch(ndir));
	new->d_time = 0;
	return 0;
}

const struct inode_operations pohmel_dir_iops = {
	.lookup		= pohmel_lookup,
	.create		= pohmel_create,
	.mkdir		= pohmel_mkdir,
	.mknod		= pohmel_mknod,
	.symlink	= pohmel_symlink,
	.link		= pohmel_link,
	.unlink		= pohmel_unlink,
	.rmdir		= pohmel_rmdir,
	.rename		= pohmel_rename,
	POHMEL_IOP_GET_ACL(pohmel_get_acl),
	.set_acl	= pohmel_set_acl,
	.getattr	= pohmel_getattr,
	.setattr	= pohmel_setattr,
	.listxattr	= pohmel_listxattr,
};
