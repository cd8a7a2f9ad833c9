// SPDX-License-Identifier: GPL-2.0
/*
 * addr.c - the page cache: read_folio, readahead (READs of up to rsize,
 * several in flight, ended on the connection's I/O workqueue), writepages
 * (contiguous dirty folios batched into WRITEs of up to wsize, several in
 * flight, ended there too), and page_mkwrite.
 */
#include <linux/bvec.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/writeback.h>

#include "pohmel.h"

static struct pohmel_handle *file_handle(struct file *file,
					 struct inode *inode, u32 want)
{
	struct pohmel_handle *h = file ? file->private_data : NULL;

	/* a write-only file's handle cannot READ the rest of a page */
	if (h && (h->flags & want) == want) {
		kref_get(&h->ref);
		return h;
	}
	return pohmel_get_handle(inode, want);
}

/*
 * @nr locked, contiguous folios that one READ filled with @n bytes (or
 * failed, @n < 0): zero what lies beyond the bytes read, mark them
 * uptodate, unlock them unless @keep_locked.
 */
static void end_folios(struct folio **folios, unsigned int nr, ssize_t n,
		       bool keep_locked)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		struct folio *folio = folios[i];
		loff_t fpos = (loff_t)i * PAGE_SIZE;

		if (n >= 0) {
			if (fpos + PAGE_SIZE > n)
				folio_zero_segment(folio,
						   n > fpos ? n - fpos : 0,
						   PAGE_SIZE);
			folio_mark_uptodate(folio);
		}
		if (!keep_locked)
			folio_unlock(folio);
	}
}

/* @it over @len bytes of @nr whole folios, through @bv (@nr entries). */
static void folios_bvec(struct bio_vec *bv, struct folio **folios,
			unsigned int nr, unsigned int dir, size_t len,
			struct iov_iter *it)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		bv[i].bv_page = folio_page(folios[i], 0);
		bv[i].bv_offset = 0;
		bv[i].bv_len = PAGE_SIZE;
	}
	iov_iter_bvec(it, dir, bv, nr, len);
}

/*
 * Fill @nr locked, contiguous folios with one READ and wait for it; zero
 * what lies beyond the end of file; unlock them all unless @keep_locked.
 */
static int fill_folios(struct file *file, struct inode *inode,
		       struct folio **folios, unsigned int nr, bool keep_locked)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_inode *pi = POHMEL_I(inode);
	struct pohmel_handle *h = file_handle(file, inode, POHMEL_OPEN_READ);
	loff_t pos = folio_pos(folios[0]);
	struct pohmel_fattr fa;
	struct bio_vec *bv;
	struct iov_iter it;
	ssize_t n;

	n = pohmel_handle_ready(h);
	if (n)
		goto out;
	bv = kmalloc_array(nr, sizeof(*bv), GFP_NOFS);
	if (!bv) {
		n = -ENOMEM;
		goto out;
	}
	folios_bvec(bv, folios, nr, ITER_DEST, nr * PAGE_SIZE, &it);
	n = pohmel_rpc_read(&sbi->conn, &pi->oid, h ? h->handle : 0, pos,
			    nr * PAGE_SIZE, &it, &fa);
	kfree(bv);
	if (n >= 0) {
		pohmel_refresh_inode(inode, &fa, 0);
		atomic64_add(n, &sbi->stats.bytes_read);
	}
out:
	end_folios(folios, nr, n, keep_locked);
	pohmel_put_handle(h);
	return n < 0 ? n : 0;
}

static int read_folios(struct file *file, struct inode *inode,
		       struct folio **folios, unsigned int nr)
{
	return fill_folios(file, inode, folios, nr, false);
}

static int pohmel_read_folio(struct file *file, struct folio *folio)
{
	return read_folios(file, folio->mapping->host, &folio, 1);
}

/*
 * One READ of readahead in flight: its folios stay locked until the
 * reply (or the end of the connection) fills or fails them on the
 * connection's I/O workqueue. A failed one is left !uptodate, and the
 * reader's read_folio asks again and waits for the answer.
 */
struct ra_read {
	struct inode *inode;
	struct pohmel_handle *h;
	unsigned int nr;
	struct iov_iter it;		/* over bv: where the data goes */
	struct bio_vec *bv;		/* nr of them, after folios[max] */
	struct folio *folios[];
};

static void ra_end(struct pohmel_req *req)
{
	struct ra_read *ra = req->end_priv;
	struct inode *inode = ra->inode;
	struct pohmel_fattr fa;
	ssize_t n;

	n = pohmel_rpc_read_done(req, &fa);
	if (n >= 0) {
		pohmel_refresh_inode(inode, &fa, 0);
		atomic64_add(n, &POHMEL_SB(inode->i_sb)->stats.bytes_read);
	}
	pohmel_put_handle(ra->h);
	/* last: once unlocked, eviction may free the inode */
	end_folios(ra->folios, ra->nr, n, false);
	kfree(ra);
}

/* Submit a READ for @ra's folios; on failure they are ended here. */
static void ra_submit(struct file *file, struct inode *inode,
		      struct ra_read *ra)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	int err;

	ra->inode = inode;
	ra->h = file_handle(file, inode, POHMEL_OPEN_READ);
	err = pohmel_handle_ready(ra->h);
	folios_bvec(ra->bv, ra->folios, ra->nr, ITER_DEST, ra->nr * PAGE_SIZE,
		    &ra->it);
	if (!err)
		err = pohmel_rpc_read_submit(&sbi->conn, &POHMEL_I(inode)->oid,
					     ra->h ? ra->h->handle : 0,
					     folio_pos(ra->folios[0]),
					     ra->nr * PAGE_SIZE, &ra->it,
					     ra_end, ra);
	if (!err)
		return;
	pohmel_put_handle(ra->h);
	end_folios(ra->folios, ra->nr, err, false);
	kfree(ra);
}

static struct ra_read *ra_alloc(unsigned int max)
{
	struct ra_read *ra;

	ra = kmalloc(struct_size(ra, folios, max) +
		     max * sizeof(struct bio_vec), GFP_NOFS);
	if (ra) {
		ra->nr = 0;
		ra->bv = (struct bio_vec *)&ra->folios[max];
	}
	return ra;
}

/*
 * Readahead sends a READ of up to rsize per run of contiguous folios and
 * returns without waiting: several are in flight at once, and the reader
 * waits only on the folio it needs. A soft mount reads each batch with a
 * call that gives up after timeo (a READ nobody waits for has no limit).
 */
static void pohmel_readahead(struct readahead_control *ractl)
{
	struct inode *inode = ractl->mapping->host;
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	unsigned int max = sbi->rsize / PAGE_SIZE;
	bool wait = sbi->conn.soft;
	struct ra_read *ra;
	struct folio *folio;

	ra = ra_alloc(max);
	if (!ra)
		return;		/* the VFS falls back to read_folio */
	while ((folio = pohmel_readahead_next(ractl))) {
		if (ra->nr && (ra->nr == max || folio_pos(folio) !=
			       folio_pos(ra->folios[0]) +
			       (loff_t)ra->nr * PAGE_SIZE)) {
			if (wait) {
				read_folios(ractl->file, inode, ra->folios,
					    ra->nr);
			} else {
				ra_submit(ractl->file, inode, ra);
				ra = ra_alloc(max);
				if (!ra) {
					/* unread: the VFS reads them later */
					folio_unlock(folio);
					while ((folio = pohmel_readahead_next(ractl)))
						folio_unlock(folio);
					return;
				}
			}
			ra->nr = 0;
		}
		ra->folios[ra->nr++] = folio;
	}
	if (ra->nr && !wait) {
		ra_submit(ractl->file, inode, ra);
		return;
	}
	if (ra->nr)
		read_folios(ractl->file, inode, ra->folios, ra->nr);
	kfree(ra);
}

/*
 * The WRITEs of one writepages call that must be waited for (a data
 * integrity sync, WB_SYNC_ALL): writepages holds one count, each WRITE in
 * flight one; the first error of any of them is what writepages returns.
 * On writepages' stack: it returns only after done.
 */
struct wb_wait {
	atomic_t pending;
	int err;
	struct completion done;
	spinlock_t lock;		/* protects writes */
	struct list_head writes;	/* wb_write.node: in flight */
};

/* Contiguous folios under writeback, waiting to go out in one WRITE. */
struct wb_batch {
	struct inode *inode;
	struct folio **folios;
	unsigned int nr;
	unsigned int max;
	bool wait;		/* each WRITE waited for (soft mounts) */
	struct wb_wait *sync;	/* NULL: nobody waits for the result */
	int err;
};

/*
 * A failed WRITE: the pages stay dirty and are sent again unless the
 * error is the server's final answer. A soft mount's timeout, a killed
 * writer (-EINTR, -ERESTARTSYS: never an errno another process's fsync
 * may see) or a lack of memory are no verdict on the data.
 */
bool pohmel_err_transient(int err)
{
	return err == -ETIMEDOUT || err == -EINTR || err == -ERESTARTSYS ||
	       err == -ENOMEM || err == -EAGAIN;
}

/*
 * The WRITE of @len bytes at @pos from @nr whole folios, built with the
 * credentials of @h's opener (not the flusher thread's). Written locally,
 * sent later (writeback mounts): the server is told the times the client
 * showed, not the WRITE's own. Not only under EXCL: a recall lowers the
 * grant before it writes the pages back.
 */
static struct pohmel_req *folios_write_req(struct inode *inode,
					   struct pohmel_handle *h,
					   struct folio **folios,
					   unsigned int nr, loff_t pos,
					   size_t len, u32 flags)
{
	struct pohmel_conn *c = pohmel_conn(inode);
	const struct timespec64 *mtp = NULL, *ctp = NULL;
	struct timespec64 mt, ct;
	const struct cred *old = NULL;
	struct pohmel_req *req;

	if (POHMEL_SB(inode->i_sb)->opts.writeback &&
	    (READ_ONCE(c->sess.features) & POHMEL_FEAT_IDRANGE)) {
		mt = inode_get_mtime(inode);
		ct = inode_get_ctime(inode);
		mtp = &mt;
		ctp = &ct;
	}
	if (h)
		old = override_creds(h->cred);
	req = pohmel_rpc_write_req_folios(c, &POHMEL_I(inode)->oid,
					  h ? h->handle : 0, pos, len, flags,
					  mtp, ctp, folios, nr);
	if (h)
		revert_creds(old);
	return req;
}

/*
 * One WRITE of @len bytes at @pos from @nr whole folios, waited for, as
 * the opener of a handle for writing if one is open; the reply refreshes
 * @inode. Returns the bytes written or -errno. Soft mounts' writeback and
 * commit.c's resend after a server restart use it.
 */
ssize_t pohmel_write_folios(struct inode *inode, struct folio **folios,
			    unsigned int nr, loff_t pos, size_t len, u32 flags)
{
	struct pohmel_handle *h = pohmel_get_handle(inode, POHMEL_OPEN_WRITE);
	struct pohmel_fattr fa;
	struct pohmel_req *req;
	ssize_t n;

	n = pohmel_handle_ready(h);
	if (n)
		goto out;
	req = folios_write_req(inode, h, folios, nr, pos, len, flags);
	if (IS_ERR(req)) {
		n = PTR_ERR(req);
		goto out;
	}
	n = pohmel_rpc_write_call(pohmel_conn(inode), req, &fa);
	if (n >= 0)
		pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
out:
	pohmel_put_handle(h);
	return n;
}

/* One WRITE of writeback in flight, and what its end needs. */
struct wb_write {
	struct inode *inode;
	struct pohmel_handle *h;
	struct pohmel_unstable *u;	/* NULL: written stable */
	struct wb_wait *sync;
	/* with sync: on sync->writes while in flight, holding a ref of req */
	struct list_head node;
	struct pohmel_req *req;
	bool taken;			/* sync->lock: wb_take_back saw it */
	loff_t pos;
	size_t len;
	u32 gen;
	unsigned int nr;
	struct folio *folios[];
};

/*
 * A WRITE of @nr folios under writeback, @len bytes at @pos submitted
 * under verifier generation @gen, ended with @n (bytes written, or
 * -errno): the pages are redirtied (transient errors) or the error is
 * the mapping's, their writeback ends, and a WRITE the server holds
 * unstable keeps them on the inode's unstable list (taking @u and the
 * folio references) until a commit (commit.c); else both are put.
 * Returns @n, a short write made -EIO. Writeback's and the log's
 * (wb_data.c).
 */
ssize_t pohmel_write_ended(struct inode *inode, struct folio **folios,
			   unsigned int nr, loff_t pos, size_t len,
			   struct pohmel_unstable *u, u32 gen, ssize_t n)
{
	unsigned int i;

	if (n >= 0) {
		atomic64_add(n, &POHMEL_SB(inode->i_sb)->stats.bytes_written);
		if (n < len)
			n = -EIO;
	}
	if (n < 0 && pohmel_err_transient(n)) {
		/* still under writeback, so not truncated: safe to redirty */
		for (i = 0; i < nr; i++)
			folio_mark_dirty(folios[i]);
	} else if (n < 0) {
		mapping_set_error(inode->i_mapping, n);
	}
	/*
	 * Pinned before their writeback ends, so that a sync that waited
	 * for it finds the pins for its FSYNC_FS (commit.c); the page
	 * cache keeps the folios until then (truncate waits for it).
	 */
	if (n > 0 && u)
		pohmel_unstable_add(inode, u, folios, nr, pos, len, gen);
	for (i = 0; i < nr; i++)
		folio_end_writeback(folios[i]);
	if (n <= 0 || !u) {
		kfree(u);
		for (i = 0; i < nr; i++)
			folio_put(folios[i]);
	}
	return n;
}

/* A writeback WRITE ended with @n: as pohmel_write_ended, then @w's waiter. */
static void wb_done(struct wb_write *w, ssize_t n)
{
	n = pohmel_write_ended(w->inode, w->folios, w->nr, w->pos, w->len,
			       w->u, w->gen, n);
	if (w->sync) {
		if (n < 0)
			cmpxchg(&w->sync->err, 0, (int)n);
		if (atomic_dec_and_test(&w->sync->pending))
			complete(&w->sync->done);
	}
	kfree(w);
}

/* @w's WRITE no longer in flight: off sync->writes, its ref put. */
static void wb_unlist(struct wb_write *w)
{
	if (!w->sync || !w->req)
		return;
	spin_lock(&w->sync->lock);
	list_del(&w->node);
	spin_unlock(&w->sync->lock);
	pohmel_req_put(w->req);
	w->req = NULL;
}

static void wb_end(struct pohmel_req *req)
{
	struct wb_write *w = req->end_priv;
	struct inode *inode = w->inode;
	struct pohmel_fattr fa;
	ssize_t n;

	n = pohmel_rpc_write_done(req, &fa);
	if (n >= 0)
		pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
	pohmel_put_handle(w->h);
	wb_unlist(w);
	wb_done(w, n);
	iput(inode);		/* wb_flush's igrab */
}

/*
 * The writer waiting for @sync was killed: the WRITEs it is waiting for
 * that have not ended are taken back and ended here as interrupted (the
 * pages stay dirty, no error is recorded), so that nothing it waits on
 * any more waits for a server that may not come back (a hard mount).
 * Those that ended already end on io_wq as usual.
 */
static void wb_take_back(struct wb_wait *sync, struct pohmel_conn *c)
{
	struct pohmel_req *req;
	struct wb_write *w;

	for (;;) {
		req = NULL;
		spin_lock(&sync->lock);
		list_for_each_entry(w, &sync->writes, node) {
			if (!w->taken) {
				w->taken = true;
				req = w->req;
				kref_get(&req->ref);
				break;
			}
		}
		spin_unlock(&sync->lock);
		if (!req)
			return;
		if (pohmel_conn_take_back(c, req)) {
			req->err = -EINTR;
			wb_end(req);
			pohmel_req_put(req);	/* the submitter's */
		}
		pohmel_req_put(req);		/* ours */
	}
}

/* Send @w's WRITE without waiting; an error here ends it at once. */
static void wb_submit(struct wb_write *w)
{
	struct inode *inode;
	struct pohmel_req *req;
	int err;

	w->h = pohmel_get_handle(w->inode, POHMEL_OPEN_WRITE);
	err = pohmel_handle_ready(w->h);
	if (err)
		goto fail;
	req = folios_write_req(w->inode, w->h, w->folios, w->nr, w->pos,
			       w->len, w->u ? 0 : POHMEL_IO_STABLE);
	if (IS_ERR(req)) {
		err = PTR_ERR(req);
		goto fail;
	}
	if (w->sync) {
		kref_get(&req->ref);
		w->req = req;
		spin_lock(&w->sync->lock);
		list_add_tail(&w->node, &w->sync->writes);
		spin_unlock(&w->sync->lock);
	}
	err = pohmel_rpc_write_submit(pohmel_conn(w->inode), req, wb_end, w);
	if (!err)
		return;
fail:
	inode = w->inode;
	wb_unlist(w);
	pohmel_put_handle(w->h);
	wb_done(w, err);
	iput(inode);
}

static void wb_flush(struct wb_batch *b)
{
	struct inode *inode = b->inode;
	loff_t len, pos, isize = i_size_read(inode);
	struct wb_write *w;
	unsigned int i;
	ssize_t n;

	if (!b->nr)
		return;
	pos = folio_pos(b->folios[0]);
	w = kmalloc(struct_size(w, folios, b->nr), GFP_NOFS);
	if (!w) {
		/* no verdict on the data: the pages stay dirty */
		for (i = 0; i < b->nr; i++) {
			folio_mark_dirty(b->folios[i]);
			folio_end_writeback(b->folios[i]);
			folio_put(b->folios[i]);
		}
		b->err = b->err ?: -ENOMEM;
		b->nr = 0;
		return;
	}
	w->inode = inode;
	w->h = NULL;
	w->req = NULL;
	w->taken = false;
	/* each WRITE in flight holds a count of sync; wb_done drops it */
	w->sync = b->wait ? NULL : b->sync;
	if (w->sync)
		atomic_inc(&w->sync->pending);
	w->pos = pos;
	len = min_t(loff_t, (loff_t)b->nr * PAGE_SIZE, isize - pos);
	w->len = max_t(loff_t, len, 0);
	w->nr = b->nr;
	memcpy(w->folios, b->folios, b->nr * sizeof(*w->folios));
	b->nr = 0;
	/* nowhere to keep it until a commit: written stable instead */
	w->u = pohmel_unstable_alloc(w->nr);
	w->gen = pohmel_verf_gen(inode);
	if (!w->len) {
		/* truncated meanwhile: nothing to write */
		wb_done(w, 0);
		return;
	}
	/*
	 * The end touches the inode after the folios' writeback ended, when
	 * nothing else keeps it from eviction: it holds a reference. An
	 * inode on its way out is written waiting, as before.
	 */
	if (!b->wait && igrab(inode)) {
		wb_submit(w);
		return;
	}
	n = pohmel_write_folios(inode, w->folios, w->nr, pos, w->len,
				w->u ? 0 : POHMEL_IO_STABLE);
	if (n < 0)
		b->err = b->err ?: n;
	wb_done(w, n);
}

static int wb_folio(struct folio *folio, struct writeback_control *wbc,
		    void *data)
{
	struct wb_batch *b = data;
	loff_t pos = folio_pos(folio);

	if (pos >= i_size_read(b->inode)) {
		folio_unlock(folio);
		return 0;
	}
	if (b->nr && (b->nr == b->max || pos != folio_pos(b->folios[0]) +
		      (loff_t)b->nr * PAGE_SIZE))
		wb_flush(b);
	folio_get(folio);
	folio_start_writeback(folio);
	folio_unlock(folio);
	b->folios[b->nr++] = folio;
	return 0;
}

/*
 * Writeback sends a WRITE of up to wsize per run of contiguous dirty
 * folios without waiting for it, so several are in flight per file (and
 * per mount: the flusher moves on to the next inode). A data integrity
 * sync (fsync, sync) then waits for them all and returns the first
 * error; a fatal signal ends that wait (wb_take_back). Background
 * writeback does not wait. Soft mounts wait for each WRITE, which gives
 * up after timeo.
 */
static int pohmel_writepages(struct address_space *mapping,
			     struct writeback_control *wbc)
{
	struct inode *inode = mapping->host;
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct wb_batch b = {
		.inode = inode,
		.max = sbi->wsize / PAGE_SIZE,
		.wait = sbi->conn.soft,
	};
	struct wb_wait sync;
	int err;

	/*
	 * A new file whose create waits on the log: its pages go with the
	 * create (wb_data.c). Background writeback makes the log go now;
	 * a data integrity one sends it first, and then what is left.
	 */
	if (pohmel_wb_data_waits(inode)) {
		if (wbc->sync_mode != WB_SYNC_ALL) {
			pohmel_wb_flush_soon(sbi);
			return 0;
		}
		pohmel_wb_flush(sbi);
	}
	if (wbc->sync_mode == WB_SYNC_ALL) {
		atomic_set(&sync.pending, 1);
		sync.err = 0;
		init_completion(&sync.done);
		spin_lock_init(&sync.lock);
		INIT_LIST_HEAD(&sync.writes);
		b.sync = &sync;
	}
	b.folios = kmalloc_array(b.max, sizeof(*b.folios), GFP_NOFS);
	if (!b.folios)
		return -ENOMEM;
	err = pohmel_write_cache_folios(mapping, wbc, wb_folio, &b);
	wb_flush(&b);
	kfree(b.folios);
	if (b.sync) {
		/* a fatal signal ends the wait, as it ends a call's */
		if (!atomic_dec_and_test(&sync.pending) &&
		    wait_for_completion_killable(&sync.done)) {
			wb_take_back(&sync, pohmel_conn(inode));
			wait_for_completion(&sync.done);
		}
		b.err = b.err ?: sync.err;
	}
	return err ?: b.err;
}

static vm_fault_t pohmel_page_mkwrite(struct vm_fault *vmf)
{
	struct folio *folio = page_folio(vmf->page);
	struct inode *inode = file_inode(vmf->vma->vm_file);

	sb_start_pagefault(inode->i_sb);
	folio_lock(folio);
	if (folio->mapping != inode->i_mapping) {
		folio_unlock(folio);
		sb_end_pagefault(inode->i_sb);
		return VM_FAULT_NOPAGE;
	}
	folio_wait_stable(folio);
	sb_end_pagefault(inode->i_sb);
	return VM_FAULT_LOCKED;
}

/*
 * A recall cannot drop a page that is still referenced (it takes no
 * folio lock, see pohmel_recall_inode), so a mapped page can outlive it.
 * A fault after the recall (the recall unmapped the range) drops what
 * is left first; fault-around maps nothing from a stale cache meanwhile.
 */
static bool vmf_stale(struct vm_fault *vmf)
{
	struct inode *inode = file_inode(vmf->vma->vm_file);

	return test_bit(POHMEL_I_DATA_STALE, &POHMEL_I(inode)->flags);
}

static vm_fault_t pohmel_map_pages(struct vm_fault *vmf, pgoff_t start,
				   pgoff_t end)
{
	if (vmf_stale(vmf))
		return 0;
	return pohmel_filemap_map_pages(vmf, start, end);
}

POHMEL_DEFINE_MAP_PAGES_VOID(pohmel_map_pages)

static vm_fault_t pohmel_fault(struct vm_fault *vmf)
{
	struct inode *inode = file_inode(vmf->vma->vm_file);
	int err;

	if (vmf_stale(vmf)) {
		/* the size may have moved with the data */
		err = pohmel_revalidate_data(inode);
		if (err)
			return vmf_error(err);
	}
	return filemap_fault(vmf);
}

const struct vm_operations_struct pohmel_vm_ops = {
	.fault		= pohmel_fault,
	.map_pages	= POHMEL_MAP_PAGES(pohmel_map_pages),
	.page_mkwrite	= pohmel_page_mkwrite,
};

/*
 * Buffered writes: the folio is made uptodate first (read from the server
 * for a partial write inside the file, zeroed beyond its end) so a short
 * copy never exposes stale memory; writepages sends it later.
 */
static int pohmel_write_begin(POHMEL_WB_FILE_PARAM,
			      struct address_space *mapping, loff_t pos,
			      unsigned int len, POHMEL_WB_FLAGS_PARAM
			      POHMEL_WB_FOLIO_T **foliop, void **fsdata)
{
	struct inode *inode = mapping->host;
	struct folio *folio;
	int err;

	folio = pohmel_grab_folio(mapping, pos >> PAGE_SHIFT);
	if (IS_ERR(folio))
		return PTR_ERR(folio);
	if (!folio_test_uptodate(folio) && len < PAGE_SIZE) {
		if (folio_pos(folio) >= i_size_read(inode)) {
			folio_zero_segment(folio, 0, PAGE_SIZE);
			folio_mark_uptodate(folio);
		} else {
			err = fill_folios(pohmel_wb_file(), inode, &folio, 1,
					  true);
			if (err) {
				folio_unlock(folio);
				folio_put(folio);
				return err;
			}
		}
	}
	*foliop = pohmel_wb_out(folio);
	return 0;
}

static int pohmel_write_end(POHMEL_WB_FILE_PARAM,
			    struct address_space *mapping, loff_t pos,
			    unsigned int len, unsigned int copied,
			    POHMEL_WB_FOLIO_T *wbf, void *fsdata)
{
	struct folio *folio = pohmel_wb_in(wbf);
	struct inode *inode = mapping->host;

	if (!folio_test_uptodate(folio)) {
		/* a whole-page write that came up short: let it retry */
		if (copied < len) {
			copied = 0;
			goto out;
		}
		folio_mark_uptodate(folio);
	}
	folio_mark_dirty(folio);
	pohmel_extend_size(inode, pos + copied);
out:
	folio_unlock(folio);
	folio_put(folio);
	return copied;
}

const struct address_space_operations pohmel_aops = {
	POHMEL_AOPS_READ(pohmel_read_folio),
	.write_begin	= pohmel_write_begin,
	.write_end	= pohmel_write_end,
	.readahead	= pohmel_readahead,
	.writepages	= pohmel_writepages,
	POHMEL_AOPS_DIRTY,
	.direct_IO	= noop_direct_IO,
};
