// SPDX-License-Identifier: GPL-2.0
/*
 * wb_attr.c - attributes changed locally (write-back of chmod, chown,
 * utimes) on an object the client created itself under writeback's
 * directory grant and still holds EXCL.
 *
 * The change is applied to the inode at once and kept as the inode's
 * dirty attributes (one SETATTR's worth, with the credentials of who made
 * it), like dirty data: sent after the inode's data (->write_inode, after
 * the pages; fsync; the recall, before its ack) and before anything on
 * the server that depends on it (an OPEN, an xattr or ACL change, a size
 * change, an unlink or a rename over it). A reply
 * that arrives meanwhile does not undo them (pohmel_wb_attr_reapply).
 *
 * Why only objects made locally: they have no ACL and no other holder,
 * so the local VFS checks (setattr_prepare) are the server's own. Other
 * objects still go to the server at once. A directory's change is a
 * SETATTR entry on the write-back log (wb.c), not kept attributes: a
 * create in it is checked on the server against its mode, and moves its
 * mtime, so the change goes in order with the log's creates.
 *
 * Lock rules: pi->lock protects pi->dsa and pi->dsa_cred. Creating them
 * holds wb->grant_sem shared, so a RECALL (which holds it exclusive and
 * sends them before its ack) never misses a change made under a grant it
 * already took back.
 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/posix_acl.h>
#include <linux/writeback.h>

#include "pohmel.h"

#define LOCAL_VALID	(ATTR_MODE | ATTR_UID | ATTR_GID | ATTR_ATIME | \
			 ATTR_MTIME | ATTR_CTIME | ATTR_ATIME_SET | \
			 ATTR_MTIME_SET | ATTR_KILL_SUID | ATTR_KILL_SGID | \
			 ATTR_KILL_PRIV | ATTR_FILE | ATTR_FORCE | \
			 ATTR_TIMES_SET | ATTR_TOUCH | ATTR_OPEN)

/* Would one SETATTR carry both callers' changes? */
bool pohmel_same_caller(const struct cred *a, const struct cred *b)
{
	return a == b || (uid_eq(a->fsuid, b->fsuid) &&
			  gid_eq(a->fsgid, b->fsgid) &&
			  a->group_info == b->group_info);
}

/*
 * Apply the fields @sa sets to @inode (pi->lock held): after a local
 * change, and again over a reply that came before they were sent.
 */
static void apply(struct inode *inode, const struct pohmel_sattr *sa)
{
	lockdep_assert_held(&POHMEL_I(inode)->lock);
	if (sa->valid & POHMEL_SET_MODE)
		inode->i_mode = (inode->i_mode & S_IFMT) | (sa->mode & 07777);
	if (sa->valid & (POHMEL_SET_ATIME | POHMEL_SET_ATIME_NOW))
		inode_set_atime_to_ts(inode, sa->atime);
	if (sa->valid & (POHMEL_SET_MTIME | POHMEL_SET_MTIME_NOW))
		inode_set_mtime_to_ts(inode, sa->mtime);
}

/* @sa's changes onto the pending @to: later values replace earlier ones. */
void pohmel_sattr_merge(struct pohmel_sattr *to, const struct pohmel_sattr *sa)
{
	to->valid |= sa->valid;
	if (sa->valid & (POHMEL_SET_ATIME | POHMEL_SET_ATIME_NOW)) {
		to->valid &= ~(POHMEL_SET_ATIME | POHMEL_SET_ATIME_NOW);
		to->valid |= sa->valid & (POHMEL_SET_ATIME |
					  POHMEL_SET_ATIME_NOW);
		to->atime = sa->atime;
	}
	if (sa->valid & (POHMEL_SET_MTIME | POHMEL_SET_MTIME_NOW)) {
		to->valid &= ~(POHMEL_SET_MTIME | POHMEL_SET_MTIME_NOW);
		to->valid |= sa->valid & (POHMEL_SET_MTIME |
					  POHMEL_SET_MTIME_NOW);
		to->mtime = sa->mtime;
	}
	if (sa->valid & POHMEL_SET_MODE)
		to->mode = sa->mode;
}

/*
 * A directory's local change (pohmel_wb_dir_setattr), on the inode at
 * once and kept there (pi->dsa, no credentials: the log's entries carry
 * them and send it) so that replies before its SETATTR do not undo it.
 */
void pohmel_wb_dir_apply(struct inode *dir, const struct pohmel_sattr *sa,
			 struct timespec64 now)
{
	struct pohmel_inode *pi = POHMEL_I(dir);

	spin_lock(&pi->lock);
	pohmel_sattr_merge(&pi->dsa, sa);
	apply(dir, sa);
	inode_set_ctime_to_ts(dir, now);
	spin_unlock(&pi->lock);
}

/* A directory's last SETATTR on the log was answered: nothing kept. */
void pohmel_wb_dir_sent(struct inode *dir)
{
	struct pohmel_inode *pi = POHMEL_I(dir);

	spin_lock(&pi->lock);
	pi->dsa.valid = 0;
	spin_unlock(&pi->lock);
}

void pohmel_wb_attr_reapply(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);

	lockdep_assert_held(&pi->lock);
	if (pi->dsa.valid)
		apply(inode, &pi->dsa);
}

/*
 * setattr of an object held EXCL that this mount created (see the top):
 * 0 when done locally, -EAGAIN when it must go to the server now, or an
 * error (of sending earlier changes by another caller).
 */
int pohmel_wb_setattr(struct inode *inode, const struct iattr *attr)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);
	const struct cred *cred = current_cred(), *old = NULL;
	unsigned int v = attr->ia_valid;
	struct timespec64 now;
	struct pohmel_sattr sa = {};
	int err;

	if ((v & ~LOCAL_VALID) || !test_bit(POHMEL_I_WB_NEW, &pi->flags))
		return -EAGAIN;
	/*
	 * A real change of owner goes to the server, which may refuse what
	 * the local root may do (root_squash); tar's chown to the owner
	 * the file has already stays local, and sends nothing: the owner
	 * is the one the create gives it.
	 */
	if (((v & ATTR_UID) && !uid_eq(attr->ia_uid, inode->i_uid)) ||
	    ((v & ATTR_GID) && !gid_eq(attr->ia_gid, inode->i_gid)))
		return -EAGAIN;
	/*
	 * One SETATTR carries one caller's credentials. (A directory keeps
	 * none: its log entries carry them, pohmel_wb_dir_setattr.)
	 */
	spin_lock(&pi->lock);
	if (!S_ISDIR(inode->i_mode) && pi->dsa.valid &&
	    !pohmel_same_caller(pi->dsa_cred, cred))
		old = pi->dsa_cred;
	spin_unlock(&pi->lock);
	if (old) {
		err = pohmel_wb_attr_flush(inode);
		if (err)
			return err;
	}
	now = current_time(inode);
	if (v & ATTR_MODE) {
		sa.valid |= POHMEL_SET_MODE;
		sa.mode = attr->ia_mode & 07777;
	}
	if (v & ATTR_ATIME) {
		sa.valid |= (v & ATTR_ATIME_SET) ? POHMEL_SET_ATIME :
						   POHMEL_SET_ATIME_NOW;
		sa.atime = (v & ATTR_ATIME_SET) ? attr->ia_atime : now;
	}
	if (v & ATTR_MTIME) {
		sa.valid |= (v & ATTR_MTIME_SET) ? POHMEL_SET_MTIME :
						   POHMEL_SET_MTIME_NOW;
		sa.mtime = (v & ATTR_MTIME_SET) ? attr->ia_mtime : now;
	}

	if (S_ISDIR(inode->i_mode))
		return pohmel_wb_dir_setattr(inode, &sa, now);
	down_read(&sbi->wb.grant_sem);
	if (!pohmel_wb_keeps_dirty(inode)) {
		up_read(&sbi->wb.grant_sem);
		return -EAGAIN;
	}
	spin_lock(&pi->lock);
	if (pi->dsa.valid && !pohmel_same_caller(pi->dsa_cred, cred)) {
		/* another caller's change came in between: send both apart */
		spin_unlock(&pi->lock);
		up_read(&sbi->wb.grant_sem);
		return -EAGAIN;
	}
	pohmel_sattr_merge(&pi->dsa, &sa);
	apply(inode, &sa);
	inode_set_ctime_to_ts(inode, now);
	if (!pi->dsa_cred)
		pi->dsa_cred = get_cred(cred);
	spin_unlock(&pi->lock);
	up_read(&sbi->wb.grant_sem);
	atomic64_inc(&sbi->stats.wb_attr_local);
	/* ->write_inode sends them, after the pages */
	__mark_inode_dirty(inode, I_DIRTY_SYNC);
	return 0;
}

/*
 * Send @inode's dirty attributes, as who changed them. 0 if there were
 * none or they went; a transient error keeps them for the next try; a
 * refusal is reported like a failed write (errseq: the next fsync), and
 * the cached attributes are dropped to agree with the server again.
 */
int pohmel_wb_attr_flush(struct inode *inode)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);
	const struct cred *cred, *old;
	struct pohmel_sattr sa;
	struct pohmel_fattr fa;
	int err;

	if (!READ_ONCE(pi->dsa.valid))
		return 0;
	/* a directory's are SETATTRs on the log (pohmel_wb_dir_setattr) */
	if (S_ISDIR(inode->i_mode))
		return pohmel_wb_flush(sbi);
	/* its create waits on the log: they go with it (wb_data.c) */
	if (READ_ONCE(pi->wb_create)) {
		err = pohmel_wb_flush(sbi);
		if (err)
			return err;
	}
	/*
	 * The data first, all of it: a WRITE after the SETATTR would move
	 * the mtime it sets (the flusher may have written only part of the
	 * pages before ->write_inode; fsync only its range).
	 */
	if (S_ISREG(inode->i_mode)) {
		err = filemap_write_and_wait(inode->i_mapping);
		if (err)
			return err;
	}
	spin_lock(&pi->lock);
	sa = pi->dsa;
	cred = pi->dsa_cred;
	pi->dsa.valid = 0;
	pi->dsa_cred = NULL;
	spin_unlock(&pi->lock);
	if (!sa.valid)
		return 0;
	old = override_creds(cred);
	err = pohmel_rpc_setattr(pohmel_conn(inode), &pi->oid, &sa, &fa);
	revert_creds(old);
	if (pohmel_err_transient(err)) {
		/* back, under what changed meanwhile (newer values win) */
		spin_lock(&pi->lock);
		if (!pi->dsa.valid) {
			pi->dsa = sa;
			pi->dsa_cred = cred;
			cred = NULL;
		}
		spin_unlock(&pi->lock);
		if (cred)
			put_cred(cred);
		__mark_inode_dirty(inode, I_DIRTY_SYNC);
		return err;
	}
	put_cred(cred);
	if (!err)
		return pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
	pohmel_wb_attr_refused(inode, err);
	return err;
}

/*
 * The server refused an attribute change made locally to @inode (sent
 * alone, in a new file's BATCH, or a directory's log entry): counted,
 * logged, reported like a failed write (errseq: the next fsync), and
 * the cached attributes dropped to agree with the server again.
 */
void pohmel_wb_attr_refused(struct inode *inode, int err)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);

	atomic64_inc(&sbi->stats.wb_errors);
	pr_warn_ratelimited("%s (%pISpc): an attribute change made locally to object %llu failed on the server: error %d\n",
			    sbi->conn.name, &sbi->conn.addr,
			    POHMEL_I(inode)->oid.id, err);
	mapping_set_error(inode->i_mapping, err);
	pohmel_invalidate_attrs(inode);
}

/* The inode goes: what was not sent is dropped with it. */
void pohmel_wb_attr_forget(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);

	pi->dsa.valid = 0;
	if (pi->dsa_cred)
		put_cred(pi->dsa_cred);
	pi->dsa_cred = NULL;
}

/*
 * What @inode keeps is dropped: all of it (@sa NULL), or only if it is
 * still @sa, changed by @cred (a later change stays, to be sent).
 */
static void attr_drop(struct inode *inode, const struct pohmel_sattr *sa,
		      const struct cred *cred)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	const struct pohmel_sattr *a = &pi->dsa;
	const struct cred *old = NULL;

	spin_lock(&pi->lock);
	if (!sa || (a->valid == sa->valid && a->mode == sa->mode &&
		    timespec64_equal(&a->atime, &sa->atime) &&
		    timespec64_equal(&a->mtime, &sa->mtime) &&
		    pi->dsa_cred == cred)) {
		pi->dsa.valid = 0;
		old = pi->dsa_cred;
		pi->dsa_cred = NULL;
	}
	spin_unlock(&pi->lock);
	if (old)
		put_cred(old);
}

/* @inode's last name went locally (wb.c): what it had pending is moot. */
void pohmel_wb_attr_discard(struct inode *inode)
{
	attr_drop(inode, NULL, NULL);
}

/* A copy of what @inode keeps (@sa, @cred's) was sent (wb_data.c). */
void pohmel_wb_attr_sent(struct inode *inode, const struct pohmel_sattr *sa,
			 const struct cred *cred)
{
	attr_drop(inode, sa, cred);
}
