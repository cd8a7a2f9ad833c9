// SPDX-License-Identifier: GPL-2.0
/*
 * proto.c - building requests and validating replies. Every length that
 * comes from the network is checked here, once, by the receive thread,
 * before anyone looks at a reply; decoders in rpc.c may then trust the
 * shapes (and still use bounds-checked cursors).
 */
#include <linux/cred.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/stat.h>
#include <linux/string.h>
#include <linux/uidgid.h>

#include "conn.h"

bool pohmel_op_needs_seq(u16 op)
{
	switch (op) {
	case POHMEL_OP_CREATE:
	case POHMEL_OP_MKDIR:
	case POHMEL_OP_MKNOD:
	case POHMEL_OP_SYMLINK:
	case POHMEL_OP_LINK:
	case POHMEL_OP_UNLINK:
	case POHMEL_OP_RMDIR:
	case POHMEL_OP_RENAME:
	case POHMEL_OP_SETATTR:
	case POHMEL_OP_WRITE:
	case POHMEL_OP_SETXATTR:
	case POHMEL_OP_REMOVEXATTR:
	case POHMEL_OP_LOCK:
	case POHMEL_OP_IDRANGE:
		return true;
	default:
		return false;
	}
}

static void pohmel_req_release(struct kref *ref)
{
	struct pohmel_req *req = container_of(ref, struct pohmel_req, ref);
	u32 i;

	for (i = 0; i < req->data.nr; i++)
		put_page(req->data.bv[i].bv_page);
	kfree(req->data.bv);
	kvfree(req->rbuf);
	kvfree(req->sbuf);
	kfree(req->bops);
	kfree(req);
}

void pohmel_req_put(struct pohmel_req *req)
{
	if (req)
		kref_put(&req->ref, pohmel_req_release);
}

/*
 * A message buffer (up to max_msg, 1 MiB and more), without recursing
 * into the filesystem. kvmalloc() with GFP_NOFS never falls back to
 * vmalloc before 5.17: every large message would need a physically
 * contiguous order-9 block and fail under fragmentation. GFP_KERNEL
 * inside a NOFS scope may fall back, on every kernel, and the scope keeps
 * vmalloc's own allocations out of the filesystem too.
 */
void *pohmel_msg_alloc(size_t size, gfp_t extra)
{
	unsigned int nofs = memalloc_nofs_save();
	void *p = kvmalloc(size, GFP_KERNEL | extra);

	memalloc_nofs_restore(nofs);
	return p;
}

/*
 * Allocate a request for @op with room for @payload body bytes. With
 * @creds the caller's fsuid/fsgid go into the header and its
 * supplementary groups (up to POHMEL_MAX_GROUPS) into a groups block.
 */
struct pohmel_req *pohmel_req_alloc(struct pohmel_conn *c, u16 op,
				    u32 payload, bool creds)
{
	struct pohmel_hdr *h;
	struct pohmel_req *req;
	struct group_info *gi = NULL;
	u32 ngroups = 0, gsize = 0, i;

	if (creds) {
		gi = get_current_groups();
		ngroups = min_t(u32, gi->ngroups, POHMEL_MAX_GROUPS);
		if (ngroups)
			gsize = pohmel_groups_size(ngroups);
	}
	req = kzalloc(sizeof(*req), GFP_NOFS);
	if (!req)
		goto err_groups;
	kref_init(&req->ref);
	INIT_LIST_HEAD(&req->list);
	init_completion(&req->done);
	req->op = op;
	req->needs_seq = pohmel_op_needs_seq(op);
	req->scap = POHMEL_HDR_SIZE + gsize + payload;
	req->sbuf = pohmel_msg_alloc(req->scap, __GFP_ZERO);
	if (!req->sbuf)
		goto err_req;
	req->slen = POHMEL_HDR_SIZE;
	h = (struct pohmel_hdr *)req->sbuf;
	h->op = cpu_to_be16(op);
	if (creds) {
		h->uid = cpu_to_be32(from_kuid_munged(&init_user_ns,
						      current_fsuid()));
		h->gid = cpu_to_be32(from_kgid_munged(&init_user_ns,
						      current_fsgid()));
	}
	if (ngroups) {
		__be32 *g = pohmel_req_append(req, gsize);

		h->flags = cpu_to_be16(POHMEL_HF_GROUPS);
		g[0] = cpu_to_be32(ngroups);
		for (i = 0; i < ngroups; i++)
			g[1 + i] = cpu_to_be32(from_kgid_munged(&init_user_ns, gi->gid[i]));
	}
	if (gi)
		put_group_info(gi);
	return req;

err_req:
	kfree(req);
err_groups:
	if (gi)
		put_group_info(gi);
	return NULL;
}

/* Room for @len more payload bytes (zeroed), or NULL (and overflow set). */
void *pohmel_req_append(struct pohmel_req *req, u32 len)
{
	void *p;

	if (req->overflow || len > req->scap - req->slen) {
		WARN_ON_ONCE(1);
		req->overflow = true;
		return NULL;
	}
	p = req->sbuf + req->slen;
	req->slen += len;
	return p;
}

int pohmel_req_append_name(struct pohmel_req *req, const char *name, u32 len)
{
	void *p = pohmel_req_append(req, len);

	if (!p)
		return -EOVERFLOW;
	memcpy(p, name, len);
	return 0;
}

/* A BATCH's seqs: req->seq + i into inner request i's header. */
void pohmel_batch_set_seqs(struct pohmel_req *req)
{
	u32 off = POHMEL_HDR_SIZE, i;

	for (i = 0; i < req->bn; i++) {
		struct pohmel_hdr *h = (struct pohmel_hdr *)(req->sbuf + off);

		h->seq = cpu_to_be64(req->seq + i);
		off += POHMEL_HDR_SIZE + be32_to_cpu(h->len);
	}
}

/* Finish the header once the payload is complete. */
void pohmel_req_set_hdr(struct pohmel_req *req)
{
	struct pohmel_hdr *h = (struct pohmel_hdr *)req->sbuf;

	h->len = cpu_to_be32(req->slen - POHMEL_HDR_SIZE + req->data.len);
}

/*
 * @len bytes of @nr folios as the request's data, sent from the pages
 * (no copy into sbuf); each page is referenced until the request goes.
 */
int pohmel_req_attach_folios(struct pohmel_req *req, struct folio **folios,
			     unsigned int nr, u32 len)
{
	unsigned int i, n = 0, pages = 0;
	struct bio_vec *bv;
	u32 left = len;
	long j;

	for (i = 0; i < nr; i++)
		pages += folio_nr_pages(folios[i]);
	bv = kmalloc_array(pages, sizeof(*bv), GFP_NOFS);
	if (!bv)
		return -ENOMEM;
	for (i = 0; i < nr && left; i++) {
		for (j = 0; j < folio_nr_pages(folios[i]) && left; j++) {
			bv[n].bv_page = folio_page(folios[i], j);
			bv[n].bv_offset = 0;
			bv[n].bv_len = min_t(u32, left, PAGE_SIZE);
			get_page(bv[n].bv_page);
			left -= bv[n++].bv_len;
		}
	}
	req->data.bv = bv;
	req->data.nr = n;
	req->data.len = len - left;
	return left ? -EINVAL : 0;
}

/* A header from the server: framing checks common to every message. */
int pohmel_check_hdr(const struct pohmel_hdr *h, u32 max_msg)
{
	u16 flags = be16_to_cpu(h->flags);
	u32 len = be32_to_cpu(h->len);

	if (len > max_msg || len > POHMEL_MAX_MSG)
		return -EMSGSIZE;
	if (flags & ~(POHMEL_HF_REPLY | POHMEL_HF_SERVER))
		return -EPROTO;
	if (flags & POHMEL_HF_SERVER) {
		if (flags & POHMEL_HF_REPLY || h->tag)
			return -EPROTO;
		if (be16_to_cpu(h->op) != POHMEL_OP_RECALL ||
		    len != POHMEL_RECALL_SIZE)
			return -EPROTO;
		return 0;
	}
	if (!(flags & POHMEL_HF_REPLY) || !h->tag)
		return -EPROTO;
	if (h->status && len)
		return -EPROTO;
	return 0;
}

/*
 * Only errnos userspace knows pass: 512 and up are the kernel's own
 * (-ERESTARTSYS, -EIOCBQUEUED, ...) and mean something else to the VFS.
 */
int pohmel_status_to_errno(u32 status)
{
	if (status == 0 || status >= ERESTARTSYS)
		return -EIO;
	return -(int)status;
}

int pohmel_check_name(const u8 *name, u32 len)
{
	if (len == 0 || len > POHMEL_NAME_MAX)
		return -EINVAL;
	if (memchr(name, '/', len) || memchr(name, 0, len))
		return -EINVAL;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return -EINVAL;
	return 0;
}

int pohmel_check_attr(const struct pohmel_attr *a)
{
	u32 mode = be32_to_cpu(a->mode);

	if (!a->oid.id)
		return -EINVAL;
	if (be32_to_cpu(a->atime.nsec) >= NSEC_PER_SEC ||
	    be32_to_cpu(a->mtime.nsec) >= NSEC_PER_SEC ||
	    be32_to_cpu(a->ctime.nsec) >= NSEC_PER_SEC)
		return -EINVAL;
	if (mode & ~(S_IFMT | 07777))
		return -EINVAL;
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		break;
	default:
		return -EINVAL;
	}
	if (be32_to_cpu(a->grant) > POHMEL_GRANT_EXCL)
		return -EINVAL;
	if ((s64)be64_to_cpu(a->size) < 0)
		return -EINVAL;
	return 0;
}

/* A RECALL body: a real object, and a grant it can be lowered to. */
int pohmel_check_recall(const struct pohmel_recall *r)
{
	if (!r->oid.id)
		return -EPROTO;
	if (be32_to_cpu(r->to) > POHMEL_GRANT_SHARED)
		return -EPROTO;
	return 0;
}

static int check_attrs(const u8 *p, u32 len, u32 n)
{
	u32 i;

	if (len != n * POHMEL_ATTR_SIZE)
		return -EPROTO;
	for (i = 0; i < n; i++)
		if (pohmel_check_attr((const void *)(p + i * POHMEL_ATTR_SIZE)))
			return -EPROTO;
	return 0;
}

static int check_readdir(const u8 *p, u32 len)
{
	const struct pohmel_readdir_reply *r = (const void *)p;
	u32 count, i, off = POHMEL_READDIR_REPLY_SIZE;

	if (len < POHMEL_READDIR_REPLY_SIZE || pohmel_check_attr(&r->dir))
		return -EPROTO;
	if (be32_to_cpu(r->flags) & ~POHMEL_READDIR_EOF)
		return -EPROTO;
	count = be32_to_cpu(r->count);
	for (i = 0; i < count; i++) {
		const struct pohmel_dirent *d;
		u32 nl;

		if (len - off < POHMEL_DIRENT_SIZE)
			return -EPROTO;
		d = (const void *)(p + off);
		nl = be16_to_cpu(d->namelen);
		off += POHMEL_DIRENT_SIZE;
		if (len - off < ALIGN(nl, 8) ||
		    pohmel_check_attr(&d->attr) ||
		    pohmel_check_name(p + off, nl))
			return -EPROTO;
		off += ALIGN(nl, 8);
	}
	return off == len ? 0 : -EPROTO;
}

static int check_xattr(const struct pohmel_req *req, const u8 *p, u32 len)
{
	const struct pohmel_xattr_reply *r = (const void *)p;
	u32 vlen;

	if (len < POHMEL_XATTR_REPLY_SIZE)
		return -EPROTO;
	vlen = be32_to_cpu(r->valuelen);
	if (vlen > POHMEL_XATTR_SIZE_MAX)
		return -EPROTO;
	len -= POHMEL_XATTR_REPLY_SIZE;
	/* value sent only when the caller had room for it */
	if (len && (len != vlen || vlen > req->want))
		return -EPROTO;
	if (!len && req->want && vlen && vlen <= req->want)
		return -EPROTO;
	return 0;
}

/*
 * A BATCH reply: exactly one reply per inner request, in order, each
 * with its op, tag and seq, framed as a reply and shaped as its op's.
 */
static int check_batch(const struct pohmel_req *req, const u8 *p, u32 len)
{
	struct pohmel_req inner = {};
	u32 off = 0, i;

	for (i = 0; i < req->bn; i++) {
		const struct pohmel_hdr *h = (const void *)(p + off);
		u32 ilen;

		if (len - off < POHMEL_HDR_SIZE ||
		    pohmel_check_hdr(h, POHMEL_MAX_MSG) ||
		    be16_to_cpu(h->flags) & POHMEL_HF_SERVER ||
		    be16_to_cpu(h->op) != req->bops[i] ||
		    be32_to_cpu(h->tag) != i + 1 ||
		    be64_to_cpu(h->seq) != req->seq + i)
			return -EPROTO;
		off += POHMEL_HDR_SIZE;
		ilen = be32_to_cpu(h->len);
		if (ilen > len - off)
			return -EPROTO;
		inner.op = req->bops[i];
		/* a WRITE's count is checked against what it sent (wb_data.c) */
		inner.want = inner.op == POHMEL_OP_WRITE ? POHMEL_MAX_DATA : 0;
		if (!h->status && pohmel_check_reply(&inner, p + off, ilen))
			return -EPROTO;
		off += ilen;
	}
	return off == len ? 0 : -EPROTO;
}

/*
 * Does @len bytes at @p have the shape of a successful reply to @req?
 * (Error replies have no body; pohmel_check_hdr already checked that.)
 */
int pohmel_check_reply(const struct pohmel_req *req, const u8 *p, u32 len)
{
	switch (req->op) {
	case POHMEL_OP_BATCH:
		return req->bops ? check_batch(req, p, len) : -EPROTO;
	case POHMEL_OP_PING:
	case POHMEL_OP_CLOSE:
	case POHMEL_OP_SETXATTR:
	case POHMEL_OP_REMOVEXATTR:
	case POHMEL_OP_BYE:
	case POHMEL_OP_RECALL_ACK:
		return len ? -EPROTO : 0;
	case POHMEL_OP_AUTH:
	case POHMEL_OP_LOOKUP:
	case POHMEL_OP_GETATTR:
	case POHMEL_OP_SETATTR:
	case POHMEL_OP_UNLINK:
	case POHMEL_OP_RMDIR:
	case POHMEL_OP_FSYNC:
	case POHMEL_OP_GRANT:
		return check_attrs(p, len, 1);
	case POHMEL_OP_IDRANGE: {
		const struct pohmel_idrange *r = (const void *)p;
		u64 start;
		u32 n;

		if (len != POHMEL_IDRANGE_SIZE)
			return -EPROTO;
		start = be64_to_cpu(r->start);
		n = be32_to_cpu(r->count);
		/* ids are never 0 and never wrap; the range is not empty */
		if (!start || !r->gen || !n || n > req->want ||
		    start + n < start)
			return -EPROTO;
		return 0;
	}
	case POHMEL_OP_CREATE:
	case POHMEL_OP_MKDIR:
	case POHMEL_OP_MKNOD:
	case POHMEL_OP_SYMLINK:
	case POHMEL_OP_LINK:
	case POHMEL_OP_RENAME:
		return check_attrs(p, len, 2);
	case POHMEL_OP_OPEN:
		if (len != POHMEL_OPEN_REPLY_SIZE)
			return -EPROTO;
		return pohmel_check_attr((const void *)p) ? -EPROTO : 0;
	case POHMEL_OP_READ:
	case POHMEL_OP_WRITE: {
		const struct pohmel_io_reply *r = (const void *)p;
		u32 n;

		if (len < POHMEL_IO_REPLY_SIZE || pohmel_check_attr(&r->attr))
			return -EPROTO;
		n = be32_to_cpu(r->count);
		if (n > req->want)
			return -EPROTO;
		if (req->op == POHMEL_OP_READ)
			return len == POHMEL_IO_REPLY_SIZE + n ? 0 : -EPROTO;
		return len == POHMEL_IO_REPLY_SIZE ? 0 : -EPROTO;
	}
	case POHMEL_OP_READLINK:
		return len >= 1 && len <= POHMEL_PATH_MAX &&
		       !memchr(p, 0, len) ? 0 : -EPROTO;
	case POHMEL_OP_STATFS:
		return len == POHMEL_STATFS_SIZE ? 0 : -EPROTO;
	case POHMEL_OP_READDIR:
		return check_readdir(p, len);
	case POHMEL_OP_GETXATTR:
	case POHMEL_OP_LISTXATTR:
		return check_xattr(req, p, len);
	case POHMEL_OP_LOCK:
		if (req->xflags & POHMEL_LOCK_TEST)
			return len == POHMEL_LOCK_SIZE ? 0 : -EPROTO;
		return len ? -EPROTO : 0;
	case POHMEL_OP_STATS:
		return memchr(p, 0, len) ? -EPROTO : 0;
	default:
		return -EPROTO;
	}
}
