// SPDX-License-Identifier: GPL-2.0
/*
 * file.c - regular files: open and release (handles.c keeps the OPEN/
 * CLOSE handles), reads and writes through the page cache
 * (written back in wsize batches by addr.c at close, fsync, stat, memory
 * pressure), or directly to the server with O_DIRECT or cache=none (in
 * wsize pieces; the cached range is then dropped), fsync, mmap.

 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/writeback.h>

#include "pohmel.h"

/*
 * May @file's OPEN wait for the handle's first use? Only for a file its
 * opener just created on a writeback mount, held EXCL: nobody else can
 * have changed it, so the fresh attributes OPEN brings are ours already.
 */
static bool open_deferrable(struct inode *inode, struct file *file)
{
	return POHMEL_SB(inode->i_sb)->opts.writeback &&
	       (file->f_mode & FMODE_CREATED) &&
	       (READ_ONCE(pohmel_conn(inode)->sess.features) &
		POHMEL_FEAT_FD_ACCESS) &&
	       pohmel_grant(inode, NULL) == POHMEL_GRANT_EXCL;
}

/*
 * open(O_CREAT) that made the file opens it whatever its new mode, as a
 * local fs does: the server is told so (POHMEL_OPEN_CREATED).
 */
static u32 open_created(struct inode *inode, struct file *file)
{
	if (!(file->f_mode & FMODE_CREATED) ||
	    !(READ_ONCE(pohmel_conn(inode)->sess.features) &
	      POHMEL_FEAT_FD_ACCESS))
		return 0;
	return POHMEL_OPEN_CREATED;
}

static int pohmel_open(struct inode *inode, struct file *file)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_handle *h;
	struct pohmel_fattr fa;
	u32 flags = 0;
	int err;

	if (file->f_mode & FMODE_READ)
		flags |= POHMEL_OPEN_READ;
	if (file->f_mode & FMODE_WRITE)
		flags |= POHMEL_OPEN_WRITE;
	/* under a grant the cached attributes are current: no OPEN needed */
	if (pohmel_grant(inode, NULL) != POHMEL_GRANT_NONE) {
		h = pohmel_reuse_handle(inode, flags, file->f_cred);
		if (h) {
			err = pohmel_revalidate_mapping(inode);
			if (err) {
				pohmel_put_handle(h);
				return err;
			}
			atomic64_inc(&sbi->stats.open_hits);
			file->private_data = h;
			pohmel_allow_odirect(file);
			return 0;
		}
	} else {
		pohmel_drop_idle_handles(inode);
	}
	atomic64_inc(&sbi->stats.open_misses);
	/* OPEN checks access against the mode: local changes go first */
	err = pohmel_wb_attr_flush(inode);
	if (err)
		return err;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	kref_init(&h->ref);
	INIT_LIST_HEAD(&h->list);
	mutex_init(&h->open_mu);
	h->conn = pohmel_conn(inode);
	h->oid = pi->oid;
	/*
	 * A write smaller than a page reads the rest of it first: a
	 * write-only opener that may read gets a handle that can, and one
	 * that may not writes through (pohmel_write_iter).
	 */
	h->flags = flags;
	h->want = flags;
	if (flags == POHMEL_OPEN_WRITE &&
	    !pohmel_permission_noidmap(inode, MAY_READ))
		h->flags = POHMEL_OPEN_ALL;
	if (open_deferrable(inode, file)) {
		atomic64_inc(&sbi->stats.open_deferred);
		h->deferred = true;
		h->cred = get_cred(file->f_cred);
		goto listed;
	}
	/* close-to-open: OPEN returns fresh attributes */
	err = pohmel_handle_open(h, open_created(inode, file), &h->handle, &fa);
	if (err) {
		kfree(h);
		return err;
	}
	h->cred = get_cred(file->f_cred);
	err = pohmel_refresh_inode(inode, &fa, 0);
	if (!err)
		err = pohmel_revalidate_mapping(inode);
	if (err) {
		pohmel_put_handle(h);
		return err;
	}
listed:
	kref_get(&h->ref);		/* the list's reference */
	spin_lock(&pi->lock);
	list_add(&h->list, &pi->handles);
	spin_unlock(&pi->lock);
	atomic_inc(&sbi->listed_handles);
	if (h->deferred)
		atomic_inc(&sbi->deferred_handles);
	file->private_data = h;
	pohmel_allow_odirect(file);
	return 0;
}

/*
 * A task killed by a signal, in its close or at exit (get_signal() has
 * taken SIGKILL off the pending set by then; the group's exit code still
 * names the signal). It must not wait for write-back: on a hard mount
 * that waits for a server that may never answer, and nobody is left to
 * get the error. Its dirty pages stay for the flusher, fsync or a recall,
 * written with its handle, which stays listed on the inode for that.
 * A normal exit still writes back at close (close-to-open).
 */
static bool killed_task(void)
{
	return fatal_signal_pending(current) ||
	       ((current->flags & PF_EXITING) &&
		(READ_ONCE(current->signal->group_exit_code) & 0x7f));
}

/*
 * Write back at close? Not under writeback's EXCL (the recall does it),
 * unless the mount lists so many handles that this file's is dropped
 * at release: dirty pages are written with their opener's handle.
 */
static bool close_writes_back(struct inode *inode)
{
	return !pohmel_wb_keeps_dirty(inode) ||
	       pohmel_server_handles(POHMEL_SB(inode->i_sb)) >
	       POHMEL_LISTED_HANDLES_MAX;
}

static int pohmel_release(struct inode *inode, struct file *file)
{
	struct pohmel_handle *h = file->private_data;
	bool killed = killed_task();

	if ((file->f_mode & FMODE_WRITE) && !killed &&
	    close_writes_back(inode))
		filemap_write_and_wait(inode->i_mapping);
	pohmel_put_handle(h);
	if (killed)
		return 0;
	/*
	 * Without a grant the next open asks the server anyway; past the
	 * cap an idle handle would take a slot an open file may need.
	 */
	if (pohmel_grant(inode, NULL) == POHMEL_GRANT_NONE ||
	    pohmel_server_handles(POHMEL_SB(inode->i_sb)) >
	    POHMEL_LISTED_HANDLES_MAX)
		pohmel_drop_idle_handles(inode);
	return 0;
}

/* close(2): write back what this writer left, and report errors now */
static int pohmel_flush(struct file *file, fl_owner_t id)
{
	if (!(file->f_mode & FMODE_WRITE) || killed_task() ||
	    !close_writes_back(file_inode(file)))
		return 0;
	return filemap_write_and_wait(file_inode(file)->i_mapping);
}

static bool direct_io(struct kiocb *iocb)
{
	struct inode *inode = file_inode(iocb->ki_filp);

	return (iocb->ki_flags & IOCB_DIRECT) ||
	       POHMEL_SB(inode->i_sb)->opts.cache_none;
}

/*
 * O_DIRECT and cache=none keep up to POHMEL_DIO_WINDOW requests of rsize
 * or wsize in flight, taking their replies in order; every request sent
 * is waited for, also after one failed or came back short.
 */
#define POHMEL_DIO_WINDOW	8

struct dio_win {
	struct pohmel_req *req[POHMEL_DIO_WINDOW];
	u32 want[POHMEL_DIO_WINDOW];
	u32 gen[POHMEL_DIO_WINDOW];
	unsigned int head, nr;
};

static void dio_push(struct dio_win *w, struct pohmel_req *req, u32 want,
		     u32 gen)
{
	unsigned int i = (w->head + w->nr++) % POHMEL_DIO_WINDOW;

	w->req[i] = req;
	w->want[i] = want;
	w->gen[i] = gen;
}

static struct pohmel_req *dio_pop(struct dio_win *w, u32 *want, u32 *gen)
{
	unsigned int i = w->head;

	w->head = (w->head + 1) % POHMEL_DIO_WINDOW;
	w->nr--;
	*want = w->want[i];
	*gen = w->gen[i];
	return w->req[i];
}

static ssize_t direct_read(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_handle *h = file->private_data;
	size_t left = iov_iter_count(to);
	loff_t pos = iocb->ki_pos;
	struct pohmel_fattr fa;
	struct dio_win w = {};
	ssize_t done = 0, n;
	bool sending = true, taking = true;
	u32 want, gen;
	int err;

	/* what we wrote through mmap must be visible to direct reads */
	err = filemap_write_and_wait(inode->i_mapping);
	if (!err)
		err = pohmel_handle_ready(h);
	if (err)
		return err;
	while ((sending && left) || w.nr) {
		while (sending && left && w.nr < POHMEL_DIO_WINDOW) {
			struct pohmel_req *req;

			want = min_t(size_t, left, sbi->rsize);
			req = pohmel_rpc_read_send(&sbi->conn, &h->oid,
						   h->handle, pos, want);
			if (IS_ERR(req)) {
				err = PTR_ERR(req);
				sending = false;
				break;
			}
			dio_push(&w, req, want, 0);
			pos += want;
			left -= want;
		}
		if (!w.nr)
			break;
		n = pohmel_rpc_read_wait(&sbi->conn, dio_pop(&w, &want, &gen),
					 taking ? to : NULL, &fa);
		if (!taking)
			continue;	/* past an error or a short read */
		if (n < 0) {
			err = n;
			sending = false;
			taking = false;
			continue;
		}
		pohmel_refresh_inode(inode, &fa, 0);
		iocb->ki_pos += n;
		done += n;
		if (n < want) {
			sending = false;
			taking = false;
		}
	}
	if (done > 0) {
		atomic64_add(done, &sbi->stats.direct_read);
		file_accessed(file);
	}
	return done ?: err;
}

static ssize_t pohmel_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	int err;

	if (!iov_iter_count(to))
		return 0;
	if (direct_io(iocb))
		return direct_read(iocb, to);
	err = pohmel_revalidate_data(inode);
	if (err)
		return err;
	return generic_file_read_iter(iocb, to);
}

/*
 * Send @from to the server in wsize pieces, up to POHMEL_DIO_WINDOW of
 * them in flight. With O_SYNC/O_DSYNC each piece is written stable, so
 * no separate FSYNC is needed.
 */
static ssize_t write_through(struct kiocb *iocb, struct iov_iter *from)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_handle *h = file->private_data;
	u32 flags = (iocb->ki_flags & IOCB_DSYNC) ? POHMEL_IO_STABLE : 0;
	size_t total = iov_iter_count(from);
	loff_t start = iocb->ki_pos, pos = start;
	bool sending = true, taking = true;
	struct pohmel_fattr fa;
	struct dio_win w = {};
	ssize_t done = 0, n;
	u32 want, gen;
	int err;

	err = filemap_write_and_wait_range(inode->i_mapping, start,
					   start + total - 1);
	if (!err)
		err = pohmel_handle_ready(h);
	if (err)
		return err;
	while ((sending && iov_iter_count(from)) || w.nr) {
		while (sending && iov_iter_count(from) &&
		       w.nr < POHMEL_DIO_WINDOW) {
			struct pohmel_req *req;

			want = min_t(size_t, iov_iter_count(from), sbi->wsize);
			gen = pohmel_verf_gen(inode);
			req = pohmel_rpc_write_req(&sbi->conn, &h->oid,
						   h->handle, pos, want, flags,
						   NULL, NULL, from);
			err = IS_ERR(req) ? PTR_ERR(req) :
			      pohmel_rpc_write_send(&sbi->conn, req);
			if (err) {
				sending = false;
				break;
			}
			dio_push(&w, req, want, gen);
			pos += want;
		}
		if (!w.nr)
			break;
		n = pohmel_rpc_write_wait(&sbi->conn, dio_pop(&w, &want, &gen),
					  &fa);
		if (!taking)
			continue;	/* past an error or a short write */
		if (n < 0) {
			err = n;
			sending = false;
			taking = false;
			continue;
		}
		pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
		if (!(flags & POHMEL_IO_STABLE) && n > 0)
			pohmel_write_through_done(inode, gen);
		iocb->ki_pos += n;
		done += n;
		if (n < want) {
			sending = false;
			taking = false;
		}
	}
	/* give back what was taken from @from but not written */
	iov_iter_revert(from, total - iov_iter_count(from) - done);
	if (iocb->ki_pos > start && inode->i_mapping->nrpages)
		invalidate_inode_pages2_range(inode->i_mapping,
					      start >> PAGE_SHIFT,
					      (iocb->ki_pos - 1) >> PAGE_SHIFT);
	if (done > 0)
		atomic64_add(done, &sbi->stats.direct_written);
	return done ?: err;
}

static ssize_t pohmel_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct pohmel_handle *h = iocb->ki_filp->private_data;
	ssize_t ret;

	inode_lock(inode);
	if (iocb->ki_flags & IOCB_APPEND) {
		/* append goes to the server's end of file */
		ret = pohmel_revalidate_inode(inode, true);
		if (ret)
			goto out;
	}
	ret = generic_write_checks(iocb, from);
	if (ret <= 0)
		goto out;
	/*
	 * An append is written through: buffered, it would land at a size
	 * another client's append has already moved on the server. So is
	 * a write through a handle that cannot read a partial page in.
	 */
	if (direct_io(iocb) || (iocb->ki_flags & IOCB_APPEND) ||
	    !(h->flags & POHMEL_OPEN_READ)) {
		ret = write_through(iocb, from);
		goto out;
	}
	/* buffered: drop a stale cache first, then copy into it */
	ret = pohmel_revalidate_data(inode);
	if (!ret)
		ret = pohmel_perform_write(iocb, from);
	/*
	 * Only EXCL lets written data wait in the page cache: without it,
	 * another client's read would not recall us and would miss it. The
	 * WRITE's reply brings EXCL, so later writes are buffered again. A
	 * recall lowering EXCL after this check flushes what we copied.
	 */
	if (ret > 0 && pohmel_conn_grants(pohmel_conn(inode)) &&
	    pohmel_grant(inode, NULL) != POHMEL_GRANT_EXCL) {
		int err = filemap_write_and_wait_range(inode->i_mapping,
						       iocb->ki_pos - ret,
						       iocb->ki_pos - 1);
		if (err)
			ret = err;
	}
out:
	inode_unlock(inode);
	if (ret > 0 && !(iocb->ki_flags & IOCB_DSYNC))
		ret = generic_write_sync(iocb, ret);
	return ret;
}

/*
 * fsync: write back, then commit (commit.c): what the server applied is
 * on its stable storage once this returns 0.
 */
static int pohmel_fsync(struct file *file, loff_t start, loff_t end,
			int datasync)
{
	struct inode *inode = file_inode(file);
	struct pohmel_handle *h = file->private_data;
	struct pohmel_fattr fa;
	int err;

	/* data, then attributes changed locally (a WRITE moves mtime) */
	err = filemap_write_and_wait_range(inode->i_mapping, start, end);
	if (!err)
		err = pohmel_wb_attr_flush(inode);
	if (!err)
		err = pohmel_write_and_commit(inode, h, start, end,
					      datasync ? POHMEL_FSYNC_DATAONLY :
					      0, &fa);
	if (err)
		return err;
	return pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
}

static int pohmel_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct inode *inode = file_inode(file);
	int err;

	err = pohmel_revalidate_mapping(inode);
	if (err)
		return err;
	file_accessed(file);
	vma->vm_ops = &pohmel_vm_ops;
	return 0;
}

static loff_t pohmel_llseek(struct file *file, loff_t off, int whence)
{
	int err;

	if (whence == SEEK_END || whence == SEEK_DATA || whence == SEEK_HOLE) {
		err = pohmel_revalidate_inode(file_inode(file), false);
		if (err)
			return err;
	}
	return generic_file_llseek(file, off, whence);
}

const struct file_operations pohmel_file_fops = {
	.open		= pohmel_open,
	.release	= pohmel_release,
	.flush		= pohmel_flush,
	.llseek		= pohmel_llseek,
	.read_iter	= pohmel_read_iter,
	.write_iter	= pohmel_write_iter,
	.fsync		= pohmel_fsync,
	.mmap		= pohmel_mmap,
	.lock		= pohmel_lock,
	.flock		= pohmel_flock,
	.splice_read	= filemap_splice_read,
	.splice_write	= iter_file_splice_write,
};
