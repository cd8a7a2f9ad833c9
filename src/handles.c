// SPDX-License-Identifier: GPL-2.0
/*
 * handles.c - the open-handle cache: a handle is an OPEN on the server
 * (so an open file keeps working after it is unlinked), kept on its
 * inode's list. While the inode holds a grant, a closed file's handle
 * stays there (idle) and the next open by the same fsuid/fsgid reuses it
 * without an OPEN; idle handles are closed when the grant ends, at close
 * once the mount lists POHMEL_LISTED_HANDLES_MAX handles, and by the
 * removal of the file's last name (POHMEL_REMOVE_CLOSE). A new file's
 * OPEN may wait for the handle's first use (deferred).
 *
 * Lock rules: pi->lock protects the inode's list; a handle's reference
 * count says whether it is idle (the list's reference only); open_mu
 * serializes a deferred handle's OPEN.
 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/slab.h>

#include "pohmel.h"

static void handle_release(struct kref *ref)
{
	struct pohmel_handle *h = container_of(ref, struct pohmel_handle, ref);

	/* CLOSE is sent even on a dying connection: the server must learn */
	if (!h->deferred && !h->closed)
		pohmel_rpc_close(h->conn, &h->oid, h->handle);
	put_cred(h->cred);
	kfree(h);
}

void pohmel_put_handle(struct pohmel_handle *h)
{
	if (h)
		kref_put(&h->ref, handle_release);
}

/*
 * OPEN for @h (@extra: POHMEL_OPEN_CREATED or 0). A write-only opener's
 * handle asks to read as well (pohmel_open); refused that, it asks for
 * what the opener wanted.
 */
int pohmel_handle_open(struct pohmel_handle *h, u32 extra, u64 *handle,
		       struct pohmel_fattr *fa)
{
	int err = pohmel_rpc_open(h->conn, &h->oid, h->flags | extra, handle,
				  fa);

	if (err == -EACCES && h->flags != h->want) {
		h->flags = h->want;
		err = pohmel_rpc_open(h->conn, &h->oid, h->flags | extra,
				      handle, fa);
	}
	return err;
}

/*
 * Send a deferred OPEN (see pohmel_open): as the opener, who created the
 * file, so its mode does not matter (POHMEL_OPEN_CREATED). The rpc sends
 * the write-back log first, so the create reaches the server before it.
 * 0 once h->handle is usable (at once if it already is), or -errno.
 */
int pohmel_handle_ready(struct pohmel_handle *h)
{
	const struct cred *old;
	struct pohmel_fattr fa;
	u64 handle;
	int err = 0;

	/* pairs with the release below: handle is read after deferred */
	if (!h || !smp_load_acquire(&h->deferred))
		return 0;
	mutex_lock(&h->open_mu);
	if (!h->deferred)
		goto unlock;
	old = override_creds(h->cred);
	err = pohmel_handle_open(h, POHMEL_OPEN_CREATED, &handle, &fa);
	revert_creds(old);
	if (!err) {
		h->handle = handle;
		/* handle is set before anyone sees deferred false */
		smp_store_release(&h->deferred, false);
		atomic_dec(&container_of(h->conn, struct pohmel_sb_info,
					 conn)->deferred_handles);
	}
unlock:
	mutex_unlock(&h->open_mu);
	return err;
}

/*
 * Every deferred OPEN of @inode sent: before a request that may take its
 * last name (unlink, rmdir, a rename over it), so that the server keeps
 * the object for its open files, as for any open file.
 */
int pohmel_handles_ready(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_handle *h;
	int err;

	for (;;) {
		struct pohmel_handle *found = NULL;

		spin_lock(&pi->lock);
		list_for_each_entry(h, &pi->handles, list) {
			if (READ_ONCE(h->deferred)) {
				kref_get(&h->ref);
				found = h;
				break;
			}
		}
		spin_unlock(&pi->lock);
		if (!found)
			return 0;
		err = pohmel_handle_ready(found);
		pohmel_put_handle(found);
		if (err)
			return err;
	}
}

/* A referenced handle of @inode with all of @want (POHMEL_OPEN_*), or NULL. */
struct pohmel_handle *pohmel_get_handle(struct inode *inode, u32 want)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_handle *h, *found = NULL;

	spin_lock(&pi->lock);
	list_for_each_entry(h, &pi->handles, list) {
		if ((h->flags & want) == want) {
			kref_get(&h->ref);
			found = h;
			break;
		}
	}
	spin_unlock(&pi->lock);
	return found;
}

/* @h came off @inode's list: no longer counted (pohmel_server_handles). */
static void unlist(struct inode *inode, struct pohmel_handle *h)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);

	atomic_dec(&sbi->listed_handles);
	if (h->deferred)
		atomic_dec(&sbi->deferred_handles);
}

/*
 * Listed handles that hold one of the server's (a deferred OPEN never
 * sent holds none): what the mount's cap counts.
 */
int pohmel_server_handles(struct pohmel_sb_info *sbi)
{
	return atomic_read(&sbi->listed_handles) -
	       atomic_read(&sbi->deferred_handles);
}

/* Close the handles no file and no writeback uses (the list's only). */
void pohmel_drop_idle_handles(struct inode *inode)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_handle *h, *tmp;
	LIST_HEAD(idle);

	spin_lock(&pi->lock);
	list_for_each_entry_safe(h, tmp, &pi->handles, list)
		if (kref_read(&h->ref) == 1)
			list_move(&h->list, &idle);
	spin_unlock(&pi->lock);
	list_for_each_entry_safe(h, tmp, &idle, list) {
		list_del_init(&h->list);
		unlist(inode, h);
		pohmel_put_handle(h);
	}
}

/*
 * Before an UNLINK or RMDIR of @inode's name (1.4, POHMEL_FEAT_FORGET):
 * take its idle handles off the inode into @fg, so that the removal
 * closes them on the server (POHMEL_REMOVE_CLOSE; a deferred one never
 * reached it and just goes), and, if that leaves it no handle and the
 * name is its last, let the removal end the grant too
 * (POHMEL_REMOVE_RELEASE): nothing of it is used after that, and the
 * eviction sends neither CLOSE nor RELEASE. pohmel_forget_end() settles
 * both once the reply is in.
 */
void pohmel_forget_begin(struct inode *inode, u16 op, struct pohmel_forget *fg)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_handle *h, *tmp;
	bool busy = false;

	memset(fg, 0, sizeof(*fg));
	INIT_LIST_HEAD(&fg->list);
	if (!(READ_ONCE(pohmel_conn(inode)->sess.features) & POHMEL_FEAT_FORGET))
		return;
	fg->obj = pi->oid;
	spin_lock(&pi->lock);
	list_for_each_entry_safe(h, tmp, &pi->handles, list) {
		if (kref_read(&h->ref) != 1) {
			busy = true;
			continue;
		}
		if (!h->deferred) {
			if (fg->n == POHMEL_REMOVE_HANDLES_MAX) {
				busy = true;
				continue;
			}
			fg->h[fg->n++] = h->handle;
		}
		list_move(&h->list, &fg->list);
	}
	spin_unlock(&pi->lock);
	if (fg->n)
		fg->flags |= POHMEL_REMOVE_CLOSE;
	if (!busy && (op == POHMEL_OP_RMDIR || inode->i_nlink <= 1) &&
	    pohmel_grant(inode, NULL) != POHMEL_GRANT_NONE)
		fg->flags |= POHMEL_REMOVE_RELEASE;
}

/*
 * The removal's outcome (@done: it took effect): the handles taken are
 * freed without a CLOSE, and the grant is given up here as the server
 * did (pohmel_grant_ended); if it failed, they go back on the inode.
 */
void pohmel_forget_end(struct inode *inode, struct pohmel_forget *fg,
		       bool done)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_handle *h, *tmp;

	if (!done) {		/* nothing given up: they are idle again */
		spin_lock(&pi->lock);
		list_splice_init(&fg->list, &pi->handles);
		spin_unlock(&pi->lock);
		return;
	}
	list_for_each_entry_safe(h, tmp, &fg->list, list) {
		list_del_init(&h->list);
		unlist(inode, h);
		h->closed = true;	/* no CLOSE: the removal closed it */
		pohmel_put_handle(h);
	}
	if (fg->flags & POHMEL_REMOVE_RELEASE)
		pohmel_grant_ended(inode);
}

/* A handle of @inode that @cred opened with at least @want, referenced. */
struct pohmel_handle *pohmel_reuse_handle(struct inode *inode, u32 want,
					  const struct cred *cred)
{
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_handle *h, *found = NULL;

	spin_lock(&pi->lock);
	list_for_each_entry(h, &pi->handles, list) {
		if ((h->flags & want) == want &&
		    uid_eq(h->cred->fsuid, cred->fsuid) &&
		    gid_eq(h->cred->fsgid, cred->fsgid)) {
			kref_get(&h->ref);
			found = h;
			break;
		}
	}
	spin_unlock(&pi->lock);
	return found;
}
