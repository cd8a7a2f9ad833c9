// SPDX-License-Identifier: GPL-2.0
/*
 * addr.c - the page cache: read_folio and readahead (one READ of up to
 * rsize per batch), writepages for pages dirtied through shared writable
 * mmap (contiguous dirty folios batched into WRITEs of up to wsize), and
 * page_mkwrite.
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
 * Fill @nr locked, contiguous folios with one READ; zero what lies beyond
 * the end of file; unlock them all unless @keep_locked.
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
	unsigned int i;
	ssize_t n;

	n = pohmel_handle_ready(h);
	if (n)
		goto out;
	bv = kmalloc_array(nr, sizeof(*bv), GFP_NOFS);
	if (!bv) {
		n = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr; i++) {
		bv[i].bv_page = folio_page(folios[i], 0);
		bv[i].bv_offset = 0;
		bv[i].bv_len = PAGE_SIZE;
	}
	iov_iter_bvec(&it, ITER_DEST, bv, nr, nr * PAGE_SIZE);
	n = pohmel_rpc_read(&sbi->conn, &pi->oid, h ? h->handle : 0, pos,
			    nr * PAGE_SIZE, &it, &fa);
	kfree(bv);
	if (n >= 0) {
		pohmel_refresh_inode(inode, &fa, 0);
		atomic64_add(n, &sbi->stats.bytes_read);
	}
out:
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

static void pohmel_readahead(struct readahead_control *ractl)
{
	struct inode *inode = ractl->mapping->host;
	unsigned int max = POHMEL_SB(inode->i_sb)->rsize / PAGE_SIZE;
	struct folio **batch, *folio;
	unsigned int nr = 0;

	batch = kmalloc_array(max, sizeof(*batch), GFP_NOFS);
	if (!batch)
		return;		/* the VFS falls back to read_folio */
	while ((folio = pohmel_readahead_next(ractl))) {
		if (nr && (nr == max || folio_pos(folio) !=
			   folio_pos(batch[0]) + (loff_t)nr * PAGE_SIZE)) {
			read_folios(ractl->file, inode, batch, nr);
			nr = 0;
		}
		batch[nr++] = folio;
	}
	if (nr)
		read_folios(ractl->file, inode, batch, nr);
	kfree(batch);
}

/* Contiguous folios under writeback, waiting to go out in one WRITE. */
struct wb_batch {
	struct inode *inode;
	struct folio **folios;
	unsigned int nr;
	unsigned int max;
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
 * One WRITE of @len bytes at @pos from @nr whole folios, as the opener of
 * a handle for writing if one is open (not as the flusher thread); the
 * reply refreshes @inode. Returns the bytes written or -errno.
 * Writeback and commit.c's resend after a server restart both use it.
 */
ssize_t pohmel_write_folios(struct inode *inode, struct folio **folios,
			    unsigned int nr, loff_t pos, size_t len, u32 flags)
{
	struct pohmel_handle *h = pohmel_get_handle(inode, POHMEL_OPEN_WRITE);
	const struct cred *old = NULL;
	struct pohmel_fattr fa;
	struct bio_vec *bv;
	struct iov_iter it;
	unsigned int i;
	ssize_t n;

	n = pohmel_handle_ready(h);
	if (n)
		goto out;
	n = -ENOMEM;
	bv = kmalloc_array(nr, sizeof(*bv), GFP_NOFS);
	if (!bv)
		goto out;
	for (i = 0; i < nr; i++) {
		bv[i].bv_page = folio_page(folios[i], 0);
		bv[i].bv_offset = 0;
		bv[i].bv_len = PAGE_SIZE;
	}
	iov_iter_bvec(&it, ITER_SOURCE, bv, nr, len);
	if (h)
		old = override_creds(h->cred);
	/*
	 * Written locally, sent later (writeback mounts): the server reports
	 * the times the client showed, not the WRITE's own. Not only under
	 * EXCL: a recall lowers the grant before it writes the pages back.
	 */
	if (POHMEL_SB(inode->i_sb)->opts.writeback &&
	    (READ_ONCE(pohmel_conn(inode)->sess.features) &
	     POHMEL_FEAT_IDRANGE)) {
		struct timespec64 mt = inode_get_mtime(inode);
		struct timespec64 ct = inode_get_ctime(inode);

		n = pohmel_rpc_write_times(pohmel_conn(inode),
					   &POHMEL_I(inode)->oid,
					   h ? h->handle : 0, pos, len, flags,
					   &mt, &ct, &it, &fa);
	} else {
		n = pohmel_rpc_write(pohmel_conn(inode), &POHMEL_I(inode)->oid,
				     h ? h->handle : 0, pos, len, flags, &it,
				     &fa);
	}
	if (h)
		revert_creds(old);
	kfree(bv);
	if (n >= 0)
		pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
out:
	pohmel_put_handle(h);
	return n;
}

static void wb_flush(struct wb_batch *b)
{
	struct inode *inode = b->inode;
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_unstable *u;
	loff_t pos, isize = i_size_read(inode);
	unsigned int i;
	size_t len;
	ssize_t n = 0;		/* truncated meanwhile: nothing to write */
	u32 flags = 0, gen;

	if (!b->nr)
		return;
	pos = folio_pos(b->folios[0]);
	len = min_t(loff_t, (loff_t)b->nr * PAGE_SIZE, isize - pos);
	/* nowhere to keep it until a commit: written stable instead */
	u = pohmel_unstable_alloc(b->nr);
	if (!u)
		flags |= POHMEL_IO_STABLE;
	gen = pohmel_verf_gen(inode);
	if (len > 0) {
		n = pohmel_write_folios(inode, b->folios, b->nr, pos, len,
					flags);
		if (n >= 0) {
			atomic64_add(n, &sbi->stats.bytes_written);
			if (n < len)
				n = -EIO;
		}
	}
	if (n < 0 && pohmel_err_transient(n)) {
		/* still under writeback, so not truncated: safe to redirty */
		for (i = 0; i < b->nr; i++)
			folio_mark_dirty(b->folios[i]);
		b->err = b->err ?: n;
	} else if (n < 0) {
		mapping_set_error(inode->i_mapping, n);
		b->err = n;
	}
	for (i = 0; i < b->nr; i++)
		folio_end_writeback(b->folios[i]);
	if (n > 0 && u) {
		/* the folio references pass to the unstable list */
		pohmel_unstable_add(inode, u, b->folios, b->nr, pos, len,
				    gen);
	} else {
		kfree(u);
		for (i = 0; i < b->nr; i++)
			folio_put(b->folios[i]);
	}
	b->nr = 0;
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

static int pohmel_writepages(struct address_space *mapping,
			     struct writeback_control *wbc)
{
	struct inode *inode = mapping->host;
	struct wb_batch b = {
		.inode = inode,
		.max = POHMEL_SB(inode->i_sb)->wsize / PAGE_SIZE,
	};
	int err;

	b.folios = kmalloc_array(b.max, sizeof(*b.folios), GFP_NOFS);
	if (!b.folios)
		return -ENOMEM;
	err = pohmel_write_cache_folios(mapping, wbc, wb_folio, &b);
	wb_flush(&b);
	kfree(b.folios);
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
