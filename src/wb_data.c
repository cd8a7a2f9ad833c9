// SPDX-License-Identifier: GPL-2.0
/*
 * wb_data.c - a new file's data and attributes in its create's BATCH.
 *
 * A regular file made locally (wb.c) is written, chmod'ed and closed in
 * the page cache while its create waits on the log. When the log sends
 * the create, the file's dirty pages (up to POHMEL_WB_DATA_MAX bytes)
 * and its kept attributes (wb_attr.c) go in the same BATCH, right after
 * it: a WRITE by object (handle 0, POHMEL_IO_CREATED: its owner writes
 * it as through the fd its create returned, whatever the mode says
 * now) and a SETATTR, so an untarred file costs no message of its own.
 * Until then writepages leaves such a file's pages alone in background
 * writeback, and a data integrity writeback sends the log first.
 *
 * The pages are taken as ->writepages takes them (cleared for I/O, under
 * writeback until the reply, then kept until a commit like any unstable
 * WRITE's), but only with folio_trylock: the flush holds wb->flush_mu,
 * which a thread holding a folio lock may be waiting for (its READ sends
 * the log first). A file whose pages cannot all be taken goes the usual
 * way after its create: OPEN and WRITE from writepages.
 *
 * If the BATCH does not go or its outcome is unknown, the pages are
 * dirtied again and the attributes, which stay on the inode until their
 * reply, are sent later: WRITE and SETATTR may be sent twice, as any
 * writeback's.
 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/writeback.h>

#include "pohmel.h"
#include "wb_int.h"

#define WB_DATA_PAGES	(POHMEL_WB_DATA_MAX / PAGE_SIZE)
#define WB_DATA_RUNS	(POHMEL_WB_DATA_NREQ - 1)

/* Contiguous dirty folios: one WRITE. */
struct wb_run {
	loff_t pos;
	size_t len;
	unsigned int first;		/* in folios[] */
	unsigned int nr;
	struct pohmel_unstable *u;	/* NULL: written stable */
};

struct pohmel_wb_data {
	struct inode *inode;		/* the log entry's reference */
	const struct cred *cred;	/* the creator's: the WRITEs' */
	u32 gen;			/* verifier generation taken under */
	unsigned int nruns;
	unsigned int nfolios;
	struct wb_run runs[WB_DATA_RUNS];
	struct pohmel_sattr sa;		/* valid 0: none kept */
	const struct cred *sa_cred;
	struct folio *folios[WB_DATA_PAGES];
};

/* The data taken back: dirty again, writeback ended, references put. */
static void runs_undo(struct pohmel_wb_data *d)
{
	unsigned int i;

	for (i = 0; i < d->nfolios; i++) {
		folio_mark_dirty(d->folios[i]);
		folio_end_writeback(d->folios[i]);
		folio_put(d->folios[i]);
	}
	for (i = 0; i < d->nruns; i++)
		kfree(d->runs[i].u);
	d->nfolios = 0;
	d->nruns = 0;
}

/*
 * Take every dirty folio of [0, @isize) for writing, as runs of
 * contiguous folios; false (nothing taken) if one is busy (locked,
 * already under writeback) or the runs would be too many.
 */
static bool runs_take(struct pohmel_wb_data *d, loff_t isize)
{
	struct address_space *mapping = d->inode->i_mapping;
	pgoff_t index = 0, last = (isize - 1) >> PAGE_SHIFT;
	struct wb_run *r = NULL;
	struct folio *folio;
	unsigned int i;

	while (index <= last) {
		struct page *page = find_get_page(mapping, index);

		if (!page) {
			r = NULL;
			index++;
			continue;
		}
		folio = page_folio(page);
		index = folio->index + folio_nr_pages(folio);
		if (!folio_test_dirty(folio)) {
			folio_put(folio);
			r = NULL;
			continue;
		}
		if ((!r && d->nruns == WB_DATA_RUNS) ||
		    d->nfolios == WB_DATA_PAGES || !folio_trylock(folio))
			goto busy;
		if (folio->mapping != mapping || folio_test_writeback(folio) ||
		    !folio_clear_dirty_for_io(folio)) {
			folio_unlock(folio);
			goto busy;
		}
		folio_start_writeback(folio);
		folio_unlock(folio);
		if (!r) {
			r = &d->runs[d->nruns++];
			r->pos = folio_pos(folio);
			r->first = d->nfolios;
			r->nr = 0;
			r->u = NULL;
		}
		d->folios[d->nfolios++] = folio;
		r->nr++;
	}
	for (i = 0; i < d->nruns; i++) {
		r = &d->runs[i];
		folio = d->folios[r->first + r->nr - 1];
		r->len = min_t(loff_t, folio_pos(folio) + folio_size(folio),
			       isize) - r->pos;
		/* nowhere to keep it until a commit: written stable */
		r->u = pohmel_unstable_alloc(r->nr);
	}
	return true;

busy:
	folio_put(folio);
	runs_undo(d);
	return false;
}

/*
 * Does @inode's data wait for its create's BATCH (writepages leaves it)?
 * A hint: the flush takes what is there when it runs.
 */
bool pohmel_wb_data_waits(struct inode *inode)
{
	return S_ISREG(inode->i_mode) && READ_ONCE(POHMEL_I(inode)->wb_create) &&
	       i_size_read(inode) <= POHMEL_WB_DATA_MAX &&
	       (READ_ONCE(pohmel_conn(inode)->sess.features) &
		POHMEL_FEAT_WB_DATA);
}

/*
 * What of @ent's new file goes with its create, in at most @room bytes
 * of the BATCH: NULL if nothing (no dirty data nor kept attributes, too
 * much data, a busy page, no memory), or what was taken off the inode,
 * for pohmel_wb_data_done() or pohmel_wb_data_undo(). Under flush_mu.
 */
struct pohmel_wb_data *pohmel_wb_data_take(struct pohmel_wb_ent *ent,
					   u32 room)
{
	struct inode *inode = ent->inode;
	struct pohmel_inode *pi = POHMEL_I(inode);
	loff_t isize = i_size_read(inode);
	struct pohmel_wb_data *d;
	bool dirty;

	if (ent->op != POHMEL_OP_CREATE || !S_ISREG(inode->i_mode) ||
	    !(READ_ONCE(pohmel_conn(inode)->sess.features) &
	      POHMEL_FEAT_WB_DATA))
		return NULL;
	/*
	 * A WRITE of it in flight (writepages' own, sending the log first):
	 * the attributes go after it, by ->write_inode, not before it here.
	 */
	if (mapping_tagged(inode->i_mapping, PAGECACHE_TAG_WRITEBACK))
		return NULL;
	dirty = isize > 0 &&
		mapping_tagged(inode->i_mapping, PAGECACHE_TAG_DIRTY);
	if (!dirty && !READ_ONCE(pi->dsa.valid))
		return NULL;
	if (dirty && (isize > POHMEL_WB_DATA_MAX ||
		      isize + WB_DATA_RUNS * POHMEL_WB_DATA_REQ > room))
		return NULL;
	d = kzalloc(sizeof(*d), GFP_NOFS);
	if (!d)
		return NULL;
	d->inode = inode;
	d->cred = ent->cred;
	d->gen = pohmel_verf_gen(inode);
	if (dirty && !runs_take(d, isize)) {
		kfree(d);
		return NULL;
	}
	/*
	 * A copy: they stay on the inode until the SETATTR's reply, so that
	 * the replies before it (the create's, the WRITE's) do not undo
	 * them meanwhile (pohmel_wb_attr_reapply).
	 */
	spin_lock(&pi->lock);
	d->sa = pi->dsa;
	if (d->sa.valid)
		d->sa_cred = get_cred(pi->dsa_cred);
	spin_unlock(&pi->lock);
	if (!d->nruns && !d->sa.valid) {
		if (d->sa_cred)
			put_cred(d->sa_cred);
		kfree(d);
		return NULL;
	}
	return d;
}

/* Its requests in the BATCH, and the bytes they take there. */
u32 pohmel_wb_data_nreq(const struct pohmel_wb_data *d)
{
	return d->nruns + !!d->sa.valid;
}

u32 pohmel_wb_data_size(const struct pohmel_wb_data *d)
{
	u32 i, size = pohmel_wb_data_nreq(d) * POHMEL_WB_DATA_REQ;

	for (i = 0; i < d->nruns; i++)
		size += d->runs[i].len;
	return size;
}

/*
 * Its requests, into @out (pohmel_wb_data_nreq of them): the WRITEs as
 * the file's creator, the SETATTR as who changed the attributes. 0 or
 * -ENOMEM (nothing built).
 */
int pohmel_wb_data_reqs(struct pohmel_wb_data *d, struct pohmel_req **out)
{
	struct inode *inode = d->inode;
	struct pohmel_conn *c = pohmel_conn(inode);
	struct timespec64 mt = inode_get_mtime(inode);
	struct timespec64 ct = inode_get_ctime(inode);
	const struct cred *old;
	struct pohmel_req *req;
	u32 i, n = 0;

	old = override_creds(d->cred);
	for (i = 0; i < d->nruns; i++) {
		struct wb_run *r = &d->runs[i];

		req = pohmel_rpc_write_req_folios(c, &POHMEL_I(inode)->oid, 0,
						  r->pos, r->len,
						  POHMEL_IO_CREATED |
						  (r->u ? 0 : POHMEL_IO_STABLE),
						  &mt, &ct,
						  d->folios + r->first, r->nr);
		if (IS_ERR(req))
			break;
		out[n++] = req;
	}
	revert_creds(old);
	if (n < d->nruns)
		goto fail;
	if (d->sa.valid) {
		old = override_creds(d->sa_cred);
		req = pohmel_rpc_setattr_req(c, &POHMEL_I(inode)->oid, &d->sa);
		revert_creds(old);
		if (!req)
			goto fail;
		out[n++] = req;
	}
	return 0;

fail:
	while (n--)
		pohmel_req_put(out[n]);
	return -ENOMEM;
}

/* The BATCH did not go, or its outcome is unknown: all of it back. */
void pohmel_wb_data_undo(struct pohmel_wb_data *d)
{
	runs_undo(d);
	if (d->sa_cred)
		put_cred(d->sa_cred);
	kfree(d);
}

/*
 * Its replies in the answered BATCH @b, from *@off (advanced past them).
 * A refusal is reported as a failed write is (errseq: the next fsync)
 * and counted; the create's own refusal was already.
 */
void pohmel_wb_data_done(struct pohmel_wb_data *d, struct pohmel_req *b,
			 u32 *off)
{
	struct inode *inode = d->inode;
	struct pohmel_sb_info *sbi = POHMEL_SB(inode->i_sb);
	struct pohmel_fattr fa, unused;
	struct wb_run *r;
	unsigned int i;
	int err;

	for (i = 0; i < d->nruns; i++) {
		err = pohmel_rpc_batch_entry(b, off, &fa, &unused);
		if (err >= 0)
			pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
		r = &d->runs[i];
		pohmel_write_ended(inode, d->folios + r->first, r->nr, r->pos,
				   r->len, r->u, d->gen, err);
	}
	atomic64_inc(&sbi->stats.wb_data);
	if (d->sa.valid) {
		err = pohmel_rpc_batch_entry(b, off, &fa, &unused);
		if (!err) {
			pohmel_wb_attr_sent(inode, &d->sa, d->sa_cred);
			pohmel_refresh_inode(inode, &fa, POHMEL_REFRESH_OWN);
		} else if (!pohmel_err_transient(err)) {
			/* not sent again: dropped to agree with the server */
			pohmel_wb_attr_sent(inode, &d->sa, d->sa_cred);
			pohmel_wb_attr_refused(inode, err);
		} else {
			/* kept on the inode: ->write_inode sends them */
			__mark_inode_dirty(inode, I_DIRTY_SYNC);
		}
	}
	if (d->sa_cred)
		put_cred(d->sa_cred);
	kfree(d);
}
