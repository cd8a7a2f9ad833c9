// SPDX-License-Identifier: GPL-2.0
/*
 * wb.c - the write-back log: objects created locally under a directory
 * write grant, sent to the server later, in order (mount option
 * writeback; protocol 1.2, POHMEL_FEAT_IDRANGE and _ASK_GRANT).
 *
 * Holding EXCL on a directory (asked for with GRANT), the client creates
 * a file, directory, symlink or node in it without a round trip: the new
 * object takes an id from a range the server delegated to the session
 * (IDRANGE), so its inode number is final at once, and the create goes
 * on the mount's log. The log is sent (each entry a CREATE with
 * POHMEL_CREATE_ID, with the creator's credentials) before anything
 * else goes to the server, before a RECALL is acked, and after
 * wb_delay seconds. So every request the server sees comes after the
 * creates it may depend on, and another client, whose lookup or listing
 * of the directory recalls the grant, sees every name made under it.
 *
 * Unlink of a file held EXCL in such a directory, by its last name and
 * open nowhere, and rmdir of a directory held EXCL and known empty, are
 * local too (wb_remove.c), and so are chmod and utimes of a directory
 * made here: a SETATTR entry (pohmel_wb_dir_setattr).
 *
 * Lock rules:
 * - wb->lock (spinlock) protects the log and the id pool (and each
 *   inode's wb_create and wb_setattrs); a directory's pi->lock may be
 *   taken under it (pohmel_wb_dir_setattr), never the other way.
 * - wb->create_mu: a creator holds it from taking its id until its
 *   entry is on the log (under grant_sem shared), so that the log holds
 *   a range's ids in increasing order: the server takes an id as
 *   spending every id below it in its range, and refused (EINVAL) a
 *   create whose id another creator had overtaken (the writeback stress
 *   group's "write+rename: No such file or directory").
 * - wb->flush_mu serializes flushes: entries leave the log in order and
 *   are sent one at a time. Taken by whichever thread is about to send
 *   a request while the log is not empty (rpc.c), never while holding
 *   wb->lock.
 * - wb->grant_sem: creators hold it shared from the check that the
 *   directory is EXCL until the entry is on the log; a RECALL takes it
 *   exclusive, flushes and gives the grant up under it, so no entry is
 *   made under a grant the server already took back. Nothing is sent
 *   to the server while it is held shared.
 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/posix_acl.h>
#include <linux/slab.h>
#include <linux/writeback.h>

#include "pohmel.h"
#include "wb_int.h"

#define POHMEL_WB_IDS	1024	/* ids asked for at a time */
/* entries per BATCH, and requests with their files' (far inside the seq window) */
#define POHMEL_WB_BATCH		64
#define POHMEL_WB_BATCH_REQS	192

void pohmel_wb_init(struct pohmel_sb_info *sbi)
{
	struct pohmel_wb *wb = &sbi->wb;

	mutex_init(&wb->flush_mu);
	mutex_init(&wb->create_mu);
	spin_lock_init(&wb->lock);
	INIT_LIST_HEAD(&wb->log);
	init_rwsem(&wb->grant_sem);
	INIT_DELAYED_WORK(&wb->age, pohmel_wb_age);
	INIT_WORK(&wb->reconnected, pohmel_wb_reconnected_work);
	wb->dir_size = 4096;
}

bool pohmel_wb_usable(struct inode *dir)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(dir->i_sb);
	u64 need = POHMEL_FEAT_IDRANGE | POHMEL_FEAT_ASK_GRANT |
		   POHMEL_FEAT_GRANTS;

	return sbi->opts.writeback &&
	       (READ_ONCE(sbi->conn.sess.features) & need) == need &&
	       pohmel_conn_grants(&sbi->conn);
}

/*
 * May @inode's dirty data stay in the page cache past close and stat?
 * On a writeback mount, while it is held EXCL: nobody else can see the
 * file without a recall, and a recall writes it back before the ack.
 */
bool pohmel_wb_keeps_dirty(struct inode *inode)
{
	return POHMEL_SB(inode->i_sb)->opts.writeback &&
	       pohmel_grant(inode, NULL) == POHMEL_GRANT_EXCL;
}

/* An id from the pool (wb->lock held); 0 if it is empty. */
static u64 take_id(struct pohmel_wb *wb, u64 *gen)
{
	lockdep_assert_held(&wb->lock);
	if (wb->id_next >= wb->id_end)
		return 0;
	*gen = wb->id_gen;
	return wb->id_next++;
}

static int refill_ids(struct pohmel_sb_info *sbi)
{
	struct pohmel_wb *wb = &sbi->wb;
	u64 start, gen;
	u32 count;
	int err;

	err = pohmel_rpc_idrange(&sbi->conn, POHMEL_WB_IDS, &start, &gen,
				 &count);
	if (err)
		return err;
	spin_lock(&wb->lock);
	if (wb->id_next >= wb->id_end) {
		wb->id_next = start;
		wb->id_end = start + count;
		wb->id_gen = gen;
	}
	spin_unlock(&wb->lock);
	return 0;
}

/* EXCL on @dir, asked for if need be; false if the server says no. */
static bool dir_excl(struct inode *dir)
{
	struct pohmel_fattr fa;

	if (pohmel_grant(dir, NULL) == POHMEL_GRANT_EXCL)
		return true;
	if (pohmel_rpc_grant(pohmel_conn(dir), &POHMEL_I(dir)->oid,
			     POHMEL_GRANT_EXCL, &fa))
		return false;
	pohmel_refresh_inode(dir, &fa, POHMEL_REFRESH_OWN);
	return pohmel_grant(dir, NULL) == POHMEL_GRANT_EXCL;
}

/* The attributes the server will give the new object. */
static void local_attr(struct inode *dir, u16 op, umode_t mode, dev_t rdev,
		       u32 tlen, u64 id, u64 gen, struct pohmel_fattr *fa)
{
	struct timespec64 now = current_time(dir);
	struct pohmel_conn *c = pohmel_conn(dir);

	memset(fa, 0, sizeof(*fa));
	fa->oid.id = id;
	fa->oid.gen = gen;
	fa->mode = mode;
	fa->uid = from_kuid_munged(&init_user_ns, current_fsuid());
	fa->gid = from_kgid_munged(&init_user_ns, current_fsgid());
	if (dir->i_mode & S_ISGID) {
		fa->gid = from_kgid_munged(&init_user_ns, dir->i_gid);
		if (op == POHMEL_OP_MKDIR)
			fa->mode |= S_ISGID;
	}
	fa->nlink = op == POHMEL_OP_MKDIR ? 2 : 1;
	fa->size = op == POHMEL_OP_SYMLINK ? tlen :
		   op == POHMEL_OP_MKDIR ? READ_ONCE(POHMEL_SB(dir->i_sb)->wb.dir_size) :
		   0;
	fa->rdev = new_encode_dev(rdev);
	fa->atime = now;
	fa->mtime = now;
	fa->ctime = now;
	fa->blksize = PAGE_SIZE;
	/* nobody else can reach it before the flush: ours alone */
	fa->grant = POHMEL_GRANT_EXCL;
	fa->gen = READ_ONCE(c->gen);
	fa->stamp = pohmel_conn_stamp(c);
}

/*
 * Create @dentry in @dir locally (see the top). 0 when done, -EAGAIN
 * when it must go to the server now (write-back off or impossible
 * here: no grant, a default ACL to apply), or an error.
 */
int pohmel_wb_create(struct inode *dir, struct dentry *dentry, u16 op,
		     umode_t mode, dev_t rdev, const char *target)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(dir->i_sb);
	u32 tlen = target ? strlen(target) : 0;
	struct pohmel_wb *wb = &sbi->wb;
	struct pohmel_wb_ent *ent;
	struct pohmel_fattr fa;
	struct inode *inode;
	u64 id, gen = 0;
	int tries;

	if (!pohmel_wb_usable(dir) || tlen > POHMEL_PATH_MAX)
		return -EAGAIN;
	if (op != POHMEL_OP_SYMLINK && !pohmel_acl_create_plain(dir, &mode))
		return -EAGAIN;
	ent = kzalloc(sizeof(*ent) + dentry->d_name.len + tlen, GFP_KERNEL);
	if (!ent)
		return -ENOMEM;
	for (tries = 0; tries < 3; tries++) {
		if (!dir_excl(dir))
			break;
		down_read(&wb->grant_sem);
		mutex_lock(&wb->create_mu);
		spin_lock(&wb->lock);
		id = take_id(wb, &gen);
		spin_unlock(&wb->lock);
		if (id && pohmel_grant(dir, NULL) == POHMEL_GRANT_EXCL)
			goto locked;
		mutex_unlock(&wb->create_mu);
		up_read(&wb->grant_sem);
		if (!id && refill_ids(sbi))
			break;
	}
	kfree(ent);
	return -EAGAIN;

locked:
	local_attr(dir, op, mode, rdev, tlen, id, gen, &fa);
	inode = pohmel_iget(dir->i_sb, &fa);
	if (IS_ERR(inode)) {
		mutex_unlock(&wb->create_mu);
		up_read(&wb->grant_sem);
		kfree(ent);
		return PTR_ERR(inode);
	}
	set_bit(POHMEL_I_WB_NEW, &POHMEL_I(inode)->flags);
	/*
	 * No ACL came into it (pohmel_acl_create_plain): known, so that a
	 * create in a new directory does not ask the server for its
	 * default ACL (a GETXATTR, sending the log first).
	 */
	cache_no_acl(inode);
	ent->dir = igrab(dir);
	ihold(inode);
	ent->inode = inode;
	ent->cred = get_current_cred();
	ent->id = id;
	ent->time = fa.ctime;
	ent->op = op;
	ent->mode = op == POHMEL_OP_MKNOD ? mode : mode & 07777;
	ent->rdev = new_encode_dev(rdev);
	ent->namelen = dentry->d_name.len;
	ent->tlen = tlen;
	memcpy(ent->data, dentry->d_name.name, ent->namelen);
	if (tlen)
		memcpy(ent->data + ent->namelen, target, tlen);
	/* on the log before the name is visible: see rpc.c */
	spin_lock(&wb->lock);
	list_add_tail(&ent->list, &wb->log);
	POHMEL_I(inode)->wb_create = ent;
	spin_unlock(&wb->lock);
	mutex_unlock(&wb->create_mu);
	atomic_inc(&sbi->conn.wb_pending);
	atomic64_inc(&sbi->stats.wb_local);

	if (op == POHMEL_OP_MKDIR) {
		inc_nlink(dir);
		pohmel_dcache_new_dir(inode);
	}
	pohmel_touch_dir(dir, &fa.mtime);
	dentry->d_time = (unsigned long)pohmel_grant_epoch(dir);
	pohmel_dcache_add(dir, &dentry->d_name, &fa);
	d_instantiate(dentry, inode);
	up_read(&wb->grant_sem);
	/* the oldest entry's age counts: a pending timer is not pushed back */
	queue_delayed_work(system_wq, &wb->age, sbi->opts.wb_delay * HZ);
	return 0;
}

/*
 * chmod or utimes of a directory this mount made and holds EXCL: applied
 * at once, and a SETATTR entry (as the caller) on the log, in order with
 * the creates and removals in it: those before it were checked against
 * the old mode and moved the mtime before it sets it, those after it
 * against the new one (wb_attr.c). A change right after another of the
 * same directory and caller joins that entry while no flush has it.
 * 0 when done, -EAGAIN when it must go to the server now.
 */
int pohmel_wb_dir_setattr(struct inode *dir, const struct pohmel_sattr *sa,
			  struct timespec64 now)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(dir->i_sb);
	const struct cred *cred = current_cred();
	struct pohmel_wb *wb = &sbi->wb;
	struct pohmel_wb_ent *ent, *last;
	bool flushing;

	if (!pohmel_wb_usable(dir))
		return -EAGAIN;
	ent = kzalloc(sizeof(*ent), GFP_KERNEL);
	if (!ent)
		return -ENOMEM;
	down_read(&wb->grant_sem);
	if (pohmel_grant(dir, NULL) != POHMEL_GRANT_EXCL) {
		up_read(&wb->grant_sem);
		kfree(ent);
		return -EAGAIN;
	}
	/* a flush may be building the last entry's request: no joining it */
	flushing = !mutex_trylock(&wb->flush_mu);
	spin_lock(&wb->lock);
	last = list_empty(&wb->log) ? NULL :
	       list_last_entry(&wb->log, struct pohmel_wb_ent, list);
	if (!flushing && last && last->op == POHMEL_OP_SETATTR &&
	    last->inode == dir && pohmel_same_caller(last->cred, cred)) {
		pohmel_sattr_merge(&last->sa, sa);
	} else {
		ent->dir = igrab(dir);
		ent->inode = igrab(dir);
		ent->cred = get_cred(cred);
		ent->op = POHMEL_OP_SETATTR;
		ent->sa = *sa;
		ent->time = now;
		list_add_tail(&ent->list, &wb->log);
		POHMEL_I(dir)->wb_setattrs++;
		atomic_inc(&sbi->conn.wb_pending);
		ent = NULL;
	}
	pohmel_wb_dir_apply(dir, sa, now);
	spin_unlock(&wb->lock);
	if (!flushing)
		mutex_unlock(&wb->flush_mu);
	up_read(&wb->grant_sem);
	kfree(ent);
	atomic64_inc(&sbi->stats.wb_attr_local);
	queue_delayed_work(system_wq, &wb->age, sbi->opts.wb_delay * HZ);
	return 0;
}

/* A MKDIR's reply: the size a new directory has there (see dir_size). */
void pohmel_wb_new_dir_size(struct pohmel_sb_info *sbi, u16 op,
			    const struct pohmel_fattr *obj)
{
	if (op == POHMEL_OP_MKDIR && S_ISDIR(obj->mode))
		WRITE_ONCE(sbi->wb.dir_size, obj->size);
}

struct unkept {
	struct work_struct work;
	struct inode *inode;		/* held */
};

static void unkept_work(struct work_struct *work)
{
	struct unkept *u = container_of(work, struct unkept, work);

	filemap_write_and_wait(u->inode->i_mapping);
	pohmel_wb_attr_flush(u->inode);
	iput(u->inode);
	kfree(u);
}

/*
 * A new file's create went, but the server did not give it back EXCL
 * (it could not watch it, a quota): what was kept of it past close (data,
 * attributes) is no longer covered by a grant, so it goes now. Not from
 * here: the flush holds flush_mu, which the WRITEs' own hook takes.
 */
static void write_unkept(struct inode *inode, const struct pohmel_fattr *obj)
{
	struct unkept *u;

	if (!S_ISREG(inode->i_mode) || obj->grant == POHMEL_GRANT_EXCL ||
	    (!mapping_tagged(inode->i_mapping, PAGECACHE_TAG_DIRTY) &&
	     !READ_ONCE(POHMEL_I(inode)->dsa.valid)))
		return;
	u = kmalloc(sizeof(*u), GFP_NOFS);
	if (!u)
		return;		/* the flusher writes it in time */
	INIT_WORK(&u->work, unkept_work);
	u->inode = igrab(inode);
	if (!u->inode) {
		kfree(u);
		return;
	}
	queue_work(system_wq, &u->work);
}

static bool ent_removal(const struct pohmel_wb_ent *ent)
{
	return pohmel_op_removal(ent->op);
}

/* A directory's SETATTR entry answered (0 or -errno, not transient). */
static void setattr_done(struct pohmel_sb_info *sbi, struct pohmel_wb_ent *ent,
			 int err, struct pohmel_fattr *obj)
{
	if (!err) {
		pohmel_refresh_inode(ent->inode, obj, POHMEL_REFRESH_OWN);
		atomic64_inc(&sbi->stats.wb_flushed);
		return;
	}
	pohmel_wb_dir_sent(ent->inode);
	pohmel_wb_attr_refused(ent->inode, err);
}

/*
 * What the server answered for @ent (0 or -errno, not transient). A
 * removal's handles and grant go with it, or come back to the inode.
 */
static void flush_done(struct pohmel_sb_info *sbi, struct pohmel_wb_ent *ent,
		       int err, u32 gen, struct pohmel_fattr *obj,
		       struct pohmel_fattr *pdir)
{
	bool rm = ent_removal(ent);

	if (ent->op == POHMEL_OP_SETATTR) {
		setattr_done(sbi, ent, err, obj);
		return;
	}
	if (rm) {
		pohmel_forget_end(ent->inode, ent->fg, !err);
		kfree(ent->fg);
		ent->fg = NULL;
	}
	if (!err) {
		if (!rm)
			pohmel_wb_new_dir_size(sbi, ent->op, obj);
		pohmel_write_through_done(ent->dir, gen);
		if (pdir)
			pohmel_refresh_inode(ent->dir, pdir,
					     POHMEL_REFRESH_OWN |
					     POHMEL_REFRESH_SAME_ACL);
		else
			pohmel_invalidate_attrs(ent->dir);
		if (!rm) {
			pohmel_refresh_inode(ent->inode, obj,
					     POHMEL_REFRESH_OWN |
					     POHMEL_REFRESH_SAME_ACL);
			write_unkept(ent->inode, obj);
		}
		atomic64_inc(&sbi->stats.wb_flushed);
		return;
	}
	/* the server refused it: the next fsync/syncfs reports it */
	atomic64_inc(&sbi->stats.wb_errors);
	pr_warn_ratelimited("%s (%pISpc): a %s made locally in directory %llu (\"%.*s\") failed on the server: error %d\n",
			    sbi->conn.name, &sbi->conn.addr,
			    rm ? "removal" : "create",
			    POHMEL_I(ent->dir)->oid.id, ent->namelen, ent->data,
			    err);
	mapping_set_error(ent->dir->i_mapping, err);
	pohmel_invalidate_attrs(ent->dir);
	pohmel_dcache_drop(ent->dir);
	if (!rm)
		clear_nlink(ent->inode);
	pohmel_invalidate_attrs(ent->inode);
}

/* @ent's request, as its maker, built but not sent. */
static struct pohmel_req *ent_req(struct pohmel_sb_info *sbi,
				  struct pohmel_wb_ent *ent)
{
	const struct cred *old = override_creds(ent->cred);
	struct pohmel_req *req;

	if (ent->op == POHMEL_OP_SETATTR) {
		req = pohmel_rpc_setattr_req(&sbi->conn,
					     &POHMEL_I(ent->inode)->oid,
					     &ent->sa);
		revert_creds(old);
		return req ?: ERR_PTR(-ENOMEM);
	}
	if (ent_removal(ent)) {
		req = pohmel_rpc_remove_req(&sbi->conn, ent->op,
					    &POHMEL_I(ent->dir)->oid,
					    ent->data, ent->namelen, ent->fg);
		revert_creds(old);
		return req;
	}
	req = pohmel_rpc_create_req(&sbi->conn, ent->op,
				    &POHMEL_I(ent->dir)->oid, ent->data,
				    ent->namelen, ent->mode, ent->rdev,
				    POHMEL_CREATE_ID | POHMEL_CREATE_TIME,
				    ent->tlen ? ent->data + ent->namelen : NULL,
				    ent->tlen, ent->id, &ent->time);
	revert_creds(old);
	return req;
}

/* One entry to the server; a transient error keeps it on the log. */
static int flush_one(struct pohmel_sb_info *sbi, struct pohmel_wb_ent *ent)
{
	u32 gen = pohmel_verf_gen(ent->dir);
	struct pohmel_fattr obj, pdir;
	struct pohmel_req *req = ent_req(sbi, ent);
	int err;

	err = IS_ERR(req) ? PTR_ERR(req) :
	      pohmel_rpc_log_send(&sbi->conn, req, &obj, &pdir);
	if (pohmel_err_transient(err))
		return err;
	flush_done(sbi, ent, err, gen, &obj, &pdir);
	return 0;
}

/*
 * @ent was sent, but its outcome is unknown (the reply was malformed and
 * the connection dropped: -EIO; a soft timeout): ask the server. A
 * create's delegated id under its name means it was applied (sent again
 * it would be refused: the id is used); a removal was applied unless the
 * name still leads to its object (nobody else can make the name while
 * the directory is ours). Else it is sent now. 0, or a transient error
 * (it stays on the log).
 */
static int settle_one(struct pohmel_sb_info *sbi, struct pohmel_wb_ent *ent)
{
	u32 gen = pohmel_verf_gen(ent->dir);
	struct pohmel_fattr obj;
	const struct cred *old;
	int err;

	/* a SETATTR sets what it sets: again does no harm */
	if (ent->op == POHMEL_OP_SETATTR)
		return flush_one(sbi, ent);
	old = override_creds(ent->cred);
	err = pohmel_rpc_lookup_nolog(&sbi->conn, &POHMEL_I(ent->dir)->oid,
				      ent->data, ent->namelen, &obj);
	revert_creds(old);
	if (pohmel_err_transient(err))
		return err;
	if (ent_removal(ent) ?
	    !err && obj.oid.id == POHMEL_I(ent->inode)->oid.id :
	    err || obj.oid.id != ent->id)
		return flush_one(sbi, ent);
	atomic64_inc(&sbi->stats.wb_settled);
	flush_done(sbi, ent, 0, gen, &obj, NULL);
	return 0;
}

/* A flush's working set, off the stack. */
struct wb_flush_buf {
	struct pohmel_wb_ent *ents[POHMEL_WB_BATCH];
	struct pohmel_wb_data *data[POHMEL_WB_BATCH];
	struct pohmel_req *in[POHMEL_WB_BATCH_REQS];
};

/* What was taken with the entries is given back (the BATCH did not go). */
static void undo_data(struct wb_flush_buf *fb, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		if (fb->data[i])
			pohmel_wb_data_undo(fb->data[i]);
		fb->data[i] = NULL;
	}
}

/*
 * The first *@n entries of the log (fb->ents), with what of their new
 * files can go along (wb_data.c) in the @room bytes the entries leave,
 * in one BATCH; *@n becomes how many entries it took (fewer when their
 * files' requests fill it). All of them were answered, unless *@errp is
 * set: the batch did not go, or its outcome is unknown.
 */
static void flush_batch(struct pohmel_sb_info *sbi, struct wb_flush_buf *fb,
			u32 *n, u32 room, int *errp)
{
	struct pohmel_fattr obj, pdir;
	u32 i, k = 0, off = 0, gen, nreq = 0;
	struct pohmel_req *b;

	for (i = 0; i < *n; i++) {
		struct pohmel_wb_data *d;

		fb->data[i] = NULL;
		if (nreq + 1 + POHMEL_WB_DATA_NREQ > POHMEL_WB_BATCH_REQS)
			break;
		d = pohmel_wb_data_take(fb->ents[i], room);
		if (d) {
			room -= min(room, pohmel_wb_data_size(d));
			nreq += pohmel_wb_data_nreq(d);
		}
		fb->data[i] = d;
		nreq++;
	}
	*n = i;
	for (i = 0; i < *n; i++) {
		fb->in[k] = ent_req(sbi, fb->ents[i]);
		if (IS_ERR(fb->in[k])) {
			*errp = PTR_ERR(fb->in[k]);
			goto put;
		}
		k++;
		if (fb->data[i]) {
			*errp = pohmel_wb_data_reqs(fb->data[i], fb->in + k);
			if (*errp)
				goto put;
			k += pohmel_wb_data_nreq(fb->data[i]);
		}
	}
	gen = pohmel_verf_gen(fb->ents[0]->dir);
	b = pohmel_rpc_batch(&sbi->conn, fb->in, k);
	if (IS_ERR(b)) {
		*errp = PTR_ERR(b);
		undo_data(fb, *n);
		return;
	}
	atomic64_inc(&sbi->stats.wb_batches);
	for (i = 0; i < *n; i++) {
		int err = pohmel_rpc_batch_entry(b, &off, &obj, &pdir);

		flush_done(sbi, fb->ents[i], err, gen, &obj, &pdir);
		if (fb->data[i])
			pohmel_wb_data_done(fb->data[i], b, &off);
		fb->data[i] = NULL;
	}
	pohmel_req_put(b);
	return;

put:
	while (k--)
		pohmel_req_put(fb->in[k]);
	undo_data(fb, *n);
}

void pohmel_wb_free_ent(struct pohmel_wb_ent *ent)
{
	if (ent->fg) {		/* never sent: the handles are the inode's */
		pohmel_forget_end(ent->inode, ent->fg, false);
		kfree(ent->fg);
	}
	iput(ent->inode);
	iput(ent->dir);
	put_cred(ent->cred);
	kfree(ent);
}

/* Take the first @n entries off the log (they were answered). */
static void drop_first(struct pohmel_sb_info *sbi,
		       struct pohmel_wb_ent **ents, u32 n)
{
	struct pohmel_wb *wb = &sbi->wb;
	u32 i;

	bool last[POHMEL_WB_BATCH];

	spin_lock(&wb->lock);
	for (i = 0; i < n; i++) {
		struct pohmel_inode *pi = POHMEL_I(ents[i]->inode);

		list_del(&ents[i]->list);
		if (pi->wb_create == ents[i])
			pi->wb_create = NULL;
		last[i] = ents[i]->op == POHMEL_OP_SETATTR &&
			  !--pi->wb_setattrs;
	}
	spin_unlock(&wb->lock);
	for (i = 0; i < n; i++) {
		/* its last one went: the directory keeps nothing */
		if (last[i])
			pohmel_wb_dir_sent(ents[i]->inode);
		atomic_dec(&sbi->conn.wb_pending);
		pohmel_wb_free_ent(ents[i]);
	}
}

/*
 * The first entries of the log, up to @max and as many as one message
 * holds (requests and replies), into @ents; their number.
 */
static u32 take_first(struct pohmel_sb_info *sbi,
		      struct pohmel_wb_ent **ents, u32 max, u32 *left)
{
	struct pohmel_wb *wb = &sbi->wb;
	u32 room = READ_ONCE(sbi->conn.sess.max_msg), used = 0, n = 0;
	struct pohmel_wb_ent *ent;

	room = room > 8192 ? room - 4096 : 4096;	/* the BATCH's own */
	spin_lock(&wb->lock);
	list_for_each_entry(ent, &wb->log, list) {
		/*
		 * header, groups, body (a create's: id, time; a removal's:
		 * the handles it closes), name, target; or the reply
		 */
		u32 body = ent->op == POHMEL_OP_SETATTR ?
			   POHMEL_SETATTR_SIZE :
			   ent_removal(ent) ?
			   POHMEL_NAME_REQ_SIZE + POHMEL_REMOVE_EXT_SIZE +
			   8 * POHMEL_REMOVE_HANDLES_MAX :
			   POHMEL_CREATE_SIZE + 8 +
			   sizeof(struct pohmel_time) + ent->tlen;
		u32 size = max_t(u32, POHMEL_HDR_SIZE +
				 4 * (POHMEL_MAX_GROUPS + 1) + body +
				 ent->namelen,
				 POHMEL_HDR_SIZE + 2 * POHMEL_ATTR_SIZE);

		if (n == max || (n && size > room - used))
			break;
		used += size;
		ents[n++] = ent;
	}
	spin_unlock(&wb->lock);
	*left = room - used;
	return n;
}

/*
 * Send the whole log, in order, in BATCHes where the server takes them;
 * 0, or the transient error that stopped it (what was not answered stays
 * first on the log, for the next flush).
 */
int pohmel_wb_flush(struct pohmel_sb_info *sbi)
{
	bool batch = READ_ONCE(sbi->conn.sess.features) & POHMEL_FEAT_BATCH;
	struct pohmel_wb *wb = &sbi->wb;
	struct pohmel_wb_ent *one, **ents;
	struct wb_flush_buf *fb;
	int err = 0;
	u32 n, room, max = POHMEL_WB_BATCH;

	if (!atomic_read(&sbi->conn.wb_pending))
		return 0;
	fb = kmalloc(sizeof(*fb), GFP_NOFS);
	if (fb) {
		ents = fb->ents;
	} else {
		ents = &one;
		max = 1;
		batch = false;
	}
	mutex_lock(&wb->flush_mu);
	while ((n = take_first(sbi, ents, max, &room))) {
		if (batch) {
			u32 sent;

			flush_batch(sbi, fb, &n, room, &err);
			sent = n;
			/*
			 * Refused whole, or lost with a malformed reply:
			 * every entry of it one at a time, each first
			 * looked up (it may have been applied).
			 */
			if (err && !pohmel_err_transient(err)) {
				err = 0;
				for (n = 0; n < sent && !err; n++)
					err = settle_one(sbi, ents[n]);
				if (err)
					n--;
			} else if (err) {
				n = 0;
			}
		} else {
			err = flush_one(sbi, ents[0]);
			n = err ? 0 : 1;
		}
		drop_first(sbi, ents, n);
		if (err)
			break;
	}
	mutex_unlock(&wb->flush_mu);
	kfree(fb);
	/*
	 * Emptied: the age timer was for entries that went. A creator that
	 * found it pending did not arm it, so look again after the cancel.
	 */
	if (!atomic_read(&sbi->conn.wb_pending)) {
		cancel_delayed_work(&wb->age);
		if (atomic_read(&sbi->conn.wb_pending))
			queue_delayed_work(system_wq, &wb->age,
					   sbi->opts.wb_delay * HZ);
	}
	return err;
}

/* rpc.c: before any request but the log's own, while it has entries. */
int pohmel_wb_flush_conn(struct pohmel_conn *c)
{
	return pohmel_wb_flush(container_of(c, struct pohmel_sb_info, conn));
}

/* A RECALL: no new entry under the grant; everything sent first. */
void pohmel_wb_recall_begin(struct pohmel_sb_info *sbi)
{
	down_write(&sbi->wb.grant_sem);
	pohmel_wb_flush(sbi);
}

void pohmel_wb_recall_end(struct pohmel_sb_info *sbi)
{
	up_write(&sbi->wb.grant_sem);
}

/* The kernel wants pages written that wait for the log: send it now. */
void pohmel_wb_flush_soon(struct pohmel_sb_info *sbi)
{
	mod_delayed_work(system_wq, &sbi->wb.age, 0);
}

void pohmel_wb_age(struct work_struct *work)
{
	struct pohmel_wb *wb = container_of(to_delayed_work(work),
					    struct pohmel_wb, age);

	pohmel_wb_flush(container_of(wb, struct pohmel_sb_info, wb));
}

/*
 * The connection came back (conn.c): the grants ended with the old one,
 * so what was kept under them (the log, dirty pages and attributes) goes
 * now, before a change made meanwhile in the export is taken for ours,
 * not when the flusher gets to it. Not from the connection's thread.
 */
void pohmel_wb_reconnected_work(struct work_struct *work)
{
	struct pohmel_wb *wb = container_of(work, struct pohmel_wb,
					    reconnected);
	struct pohmel_sb_info *sbi = container_of(wb, struct pohmel_sb_info,
						  wb);

	if (READ_ONCE(sbi->umounting))
		return;
	pohmel_wb_flush(sbi);
	/* takes s_umount with a trylock: a no-op once umount began */
	try_to_writeback_inodes_sb(sbi->sb, WB_REASON_SYNC);
}

void pohmel_wb_reconnected(struct pohmel_conn *c)
{
	struct pohmel_sb_info *sbi = container_of(c, struct pohmel_sb_info,
						  conn);

	if (sbi->opts.writeback && !READ_ONCE(sbi->umounting))
		queue_work(system_unbound_wq, &sbi->wb.reconnected);
}

/*
 * umount: the log goes out if the server is there; what cannot go is
 * dropped and logged (as dirty data of a forced umount is).
 */
void pohmel_wb_shutdown(struct pohmel_sb_info *sbi)
{
	struct pohmel_wb *wb = &sbi->wb;
	struct pohmel_wb_ent *ent, *tmp;
	LIST_HEAD(left);

	cancel_delayed_work_sync(&wb->age);
	if (pohmel_conn_is_up(&sbi->conn))
		pohmel_wb_flush(sbi);
	spin_lock(&wb->lock);
	list_splice_init(&wb->log, &left);
	spin_unlock(&wb->lock);
	list_for_each_entry_safe(ent, tmp, &left, list) {
		pr_warn("%s (%pISpc): umount: a %s made locally (\"%.*s\") never reached the server\n",
			sbi->conn.name, &sbi->conn.addr,
			ent->op == POHMEL_OP_SETATTR ? "directory's attribute change" :
			ent_removal(ent) ? "removal" : "create", ent->namelen,
			ent->data);
		atomic_dec(&sbi->conn.wb_pending);
		list_del(&ent->list);
		spin_lock(&wb->lock);
		if (POHMEL_I(ent->inode)->wb_create == ent)
			POHMEL_I(ent->inode)->wb_create = NULL;
		if (ent->op == POHMEL_OP_SETATTR)
			POHMEL_I(ent->inode)->wb_setattrs--;
		spin_unlock(&wb->lock);
		pohmel_wb_free_ent(ent);
	}
}
