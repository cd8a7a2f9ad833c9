// SPDX-License-Identifier: GPL-2.0
/*
 * rpc.c - the only place that pairs an opcode with its arguments: encode
 * a request, call it, decode the (already validated) reply.
 */
#include <linux/cred.h>
#include <linux/errno.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uio.h>

#include "conn.h"
#include "rpc.h"
#include "rpc_int.h"

static void get_time(struct timespec64 *ts, const struct pohmel_time *w)
{
	ts->tv_sec = (s64)be64_to_cpu(w->sec);
	ts->tv_nsec = be32_to_cpu(w->nsec);
}

void pohmel_decode_attr(const void *wire, struct pohmel_fattr *fa)
{
	const struct pohmel_attr *a = wire;

	if (!fa)
		return;
	fa->oid.id = be64_to_cpu(a->oid.id);
	fa->oid.gen = be64_to_cpu(a->oid.gen);
	fa->size = be64_to_cpu(a->size);
	fa->blocks = be64_to_cpu(a->blocks);
	fa->change = be64_to_cpu(a->change);
	get_time(&fa->atime, &a->atime);
	get_time(&fa->mtime, &a->mtime);
	get_time(&fa->ctime, &a->ctime);
	fa->mode = be32_to_cpu(a->mode);
	fa->nlink = be32_to_cpu(a->nlink);
	fa->uid = be32_to_cpu(a->uid);
	fa->gid = be32_to_cpu(a->gid);
	fa->rdev = be32_to_cpu(a->rdev);
	fa->blksize = be32_to_cpu(a->blksize);
	fa->grant = be32_to_cpu(a->grant);
	fa->stamp = 0;
	fa->gen = 0;		/* no grant unless it came in a reply */
	fa->rseq = 0;
}

static int check_name_arg(const char *name, u32 len)
{
	if (len > POHMEL_NAME_MAX)
		return -ENAMETOOLONG;
	return pohmel_check_name(name, len);
}

/*
 * Call and hand back the request (caller puts it), or an error. Creates
 * made locally go first (wb.c): nothing reaches the server ahead of an
 * object it may name. The log's own creates go by send() below.
 */
int pohmel_rpc_call(struct pohmel_conn *c, struct pohmel_req *req)
{
	int err = pohmel_rpc_log_first(c);

	if (!err)
		err = pohmel_conn_call(c, req);
	if (err)
		pohmel_req_put(req);
	return err;
}

/* pohmel_rpc_call() without the log: for the log's own entries. */
static int send(struct pohmel_conn *c, struct pohmel_req *req)
{
	int err = pohmel_conn_call(c, req);

	if (err)
		pohmel_req_put(req);
	return err;
}

int pohmel_rpc_ping(struct pohmel_conn *c)
{
	struct pohmel_req *req = pohmel_req_alloc(c, POHMEL_OP_PING, 0, false);
	int err;

	if (!req)
		return -ENOMEM;
	err = pohmel_rpc_call(c, req);
	if (!err)
		pohmel_req_put(req);
	return err;
}

/* GETATTR/READLINK/STATFS: body is an oid. */
static struct pohmel_req *oid_req(struct pohmel_conn *c, u16 op,
				  const struct pohmel_foid *oid)
{
	struct pohmel_req *req = pohmel_req_alloc(c, op, POHMEL_OID_SIZE,
						  true);

	if (req)
		put_oid(pohmel_req_append(req, POHMEL_OID_SIZE), oid);
	return req;
}

int pohmel_rpc_getattr(struct pohmel_conn *c, const struct pohmel_foid *oid,
		       struct pohmel_fattr *fa)
{
	struct pohmel_req *req = oid_req(c, POHMEL_OP_GETATTR, oid);
	int err;

	if (!req)
		return -ENOMEM;
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	reply_attr(req, req->rbuf, fa);
	pohmel_req_put(req);
	return 0;
}

static struct pohmel_req *name_req(struct pohmel_conn *c, u16 op,
				   const struct pohmel_foid *dir,
				   const char *name, u32 len)
{
	struct pohmel_name_req *b;
	struct pohmel_req *req;

	req = pohmel_req_alloc(c, op, POHMEL_NAME_REQ_SIZE + len, true);
	if (!req)
		return NULL;
	b = pohmel_req_append(req, POHMEL_NAME_REQ_SIZE);
	put_oid(&b->dir, dir);
	b->namelen = cpu_to_be16(len);
	pohmel_req_append_name(req, name, len);
	return req;
}

static int lookup(struct pohmel_conn *c, const struct pohmel_foid *dir,
		  const char *name, u32 len, struct pohmel_fattr *fa, bool log)
{
	struct pohmel_req *req;
	int err = check_name_arg(name, len);

	if (err)
		return err;
	req = name_req(c, POHMEL_OP_LOOKUP, dir, name, len);
	if (!req)
		return -ENOMEM;
	err = log ? pohmel_rpc_call(c, req) : send(c, req);
	if (err)
		return err;
	reply_attr(req, req->rbuf, fa);
	pohmel_req_put(req);
	return 0;
}

int pohmel_rpc_lookup(struct pohmel_conn *c, const struct pohmel_foid *dir,
		      const char *name, u32 len, struct pohmel_fattr *fa)
{
	return lookup(c, dir, name, len, fa, true);
}

/* LOOKUP by the log itself (wb.c, under its flush): without its hook. */
int pohmel_rpc_lookup_nolog(struct pohmel_conn *c,
			    const struct pohmel_foid *dir, const char *name,
			    u32 len, struct pohmel_fattr *fa)
{
	return lookup(c, dir, name, len, fa, false);
}

/*
 * An UNLINK/RMDIR as the current credentials, with what it gives up (@fg,
 * may be NULL), built but not sent: pohmel_rpc_remove() calls it, the
 * log (wb.c) batches it.
 */
struct pohmel_req *pohmel_rpc_remove_req(struct pohmel_conn *c, u16 op,
					 const struct pohmel_foid *dir,
					 const char *name, u32 len,
					 const struct pohmel_forget *fg)
{
	u32 ext = fg && fg->flags ? POHMEL_REMOVE_EXT_SIZE + fg->n * 8 : 0;
	struct pohmel_remove_ext *x;
	struct pohmel_name_req *b;
	struct pohmel_req *req;
	u8 *h;
	u32 i;
	int err = check_name_arg(name, len);

	if (err)
		return ERR_PTR(err);
	req = pohmel_req_alloc(c, op, POHMEL_NAME_REQ_SIZE + ext + len, true);
	if (!req)
		return ERR_PTR(-ENOMEM);
	b = pohmel_req_append(req, POHMEL_NAME_REQ_SIZE);
	put_oid(&b->dir, dir);
	b->namelen = cpu_to_be16(len);
	if (ext) {
		b->nhandles = cpu_to_be16(fg->n);
		b->flags = cpu_to_be32(fg->flags);
		x = pohmel_req_append(req, POHMEL_REMOVE_EXT_SIZE);
		put_oid(&x->obj, &fg->obj);
		h = pohmel_req_append(req, fg->n * 8);
		for (i = 0; h && i < fg->n; i++) {
			__be64 v = cpu_to_be64(fg->h[i]);

			memcpy(h + i * 8, &v, 8);
		}
	}
	pohmel_req_append_name(req, name, len);
	return req;
}

int pohmel_rpc_remove(struct pohmel_conn *c, u16 op,
		      const struct pohmel_foid *dir, const char *name, u32 len,
		      const struct pohmel_forget *fg, struct pohmel_fattr *fdir)
{
	struct pohmel_req *req = pohmel_rpc_remove_req(c, op, dir, name, len,
						       fg);
	int err;

	if (IS_ERR(req))
		return PTR_ERR(req);
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	reply_attr(req, req->rbuf, fdir);
	pohmel_req_put(req);
	return 0;
}

/*
 * A SETATTR as the current credentials, built but not sent (the log
 * batches a new file's, wb_data.c); NULL without memory.
 */
struct pohmel_req *pohmel_rpc_setattr_req(struct pohmel_conn *c,
					  const struct pohmel_foid *oid,
					  const struct pohmel_sattr *sa)
{
	u32 fh = sa->valid & POHMEL_SET_HANDLE ? POHMEL_SETATTR_FH_SIZE : 0;
	struct pohmel_setattr_fh *t;
	struct pohmel_setattr *b;
	struct pohmel_req *req;

	req = pohmel_req_alloc(c, POHMEL_OP_SETATTR, POHMEL_SETATTR_SIZE + fh,
			       true);
	if (!req)
		return NULL;
	b = pohmel_req_append(req, POHMEL_SETATTR_SIZE);
	put_oid(&b->oid, oid);
	b->valid = cpu_to_be32(sa->valid);
	b->mode = cpu_to_be32(sa->mode);
	b->uid = cpu_to_be32(sa->uid);
	b->gid = cpu_to_be32(sa->gid);
	b->size = cpu_to_be64(sa->size);
	put_time(&b->atime, &sa->atime);
	put_time(&b->mtime, &sa->mtime);
	if (fh) {
		t = pohmel_req_append(req, fh);
		t->handle = cpu_to_be64(sa->handle);
	}
	return req;
}

int pohmel_rpc_setattr(struct pohmel_conn *c, const struct pohmel_foid *oid,
		       const struct pohmel_sattr *sa, struct pohmel_fattr *fa)
{
	struct pohmel_req *req = pohmel_rpc_setattr_req(c, oid, sa);
	int err;

	if (!req)
		return -ENOMEM;
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	reply_attr(req, req->rbuf, fa);
	pohmel_req_put(req);
	return 0;
}

/*
 * A create's reply (object, directory), a removal's (directory), or a
 * SETATTR's (object) of the write-back log.
 */
static void decode_entry(struct pohmel_req *req, struct pohmel_fattr *obj,
			 struct pohmel_fattr *dir)
{
	if (req->op == POHMEL_OP_SETATTR) {
		reply_attr(req, req->rbuf, obj);
	} else if (pohmel_op_removal(req->op)) {
		reply_attr(req, req->rbuf, dir);
	} else {
		reply_attr(req, req->rbuf, obj);
		reply_attr(req, req->rbuf + POHMEL_ATTR_SIZE, dir);
	}
	pohmel_req_put(req);
}

/*
 * A CREATE/MKDIR/MKNOD/SYMLINK as the current credentials, built but not
 * sent: pohmel_rpc_create() calls it, the log (wb.c) batches it.
 */
struct pohmel_req *pohmel_rpc_create_req(struct pohmel_conn *c, u16 op,
					 const struct pohmel_foid *dir,
					 const char *name, u32 len, u32 mode,
					 u32 rdev, u32 flags,
					 const char *target, u32 tlen, u64 id,
					 const struct timespec64 *t)
{
	struct pohmel_create *b;
	struct pohmel_req *req;
	int err = check_name_arg(name, len);

	if (err)
		return ERR_PTR(err);
	if (tlen > POHMEL_PATH_MAX)
		return ERR_PTR(-ENAMETOOLONG);
	req = pohmel_req_alloc(c, op, POHMEL_CREATE_SIZE + 8 +
			       sizeof(struct pohmel_time) + len + tlen, true);
	if (!req)
		return ERR_PTR(-ENOMEM);
	b = pohmel_req_append(req, POHMEL_CREATE_SIZE);
	put_oid(&b->dir, dir);
	b->mode = cpu_to_be32(mode);
	b->rdev = cpu_to_be32(rdev);
	b->flags = cpu_to_be32(flags);
	b->uid = cpu_to_be32(from_kuid_munged(&init_user_ns, current_fsuid()));
	b->gid = cpu_to_be32(from_kgid_munged(&init_user_ns, current_fsgid()));
	b->namelen = cpu_to_be16(len);
	b->tgtlen = cpu_to_be16(tlen);
	if (flags & POHMEL_CREATE_ID) {
		__be64 *w = pohmel_req_append(req, sizeof(*w));

		if (w)
			*w = cpu_to_be64(id);
	}
	if (flags & POHMEL_CREATE_TIME) {
		struct pohmel_time *w = pohmel_req_append(req, sizeof(*w));

		if (w)
			put_time(w, t);
	}
	pohmel_req_append_name(req, name, len);
	if (tlen)
		pohmel_req_append_name(req, target, tlen);
	return req;
}

/* A create made at once (not from the log: wb.c sends its own). */
int pohmel_rpc_create(struct pohmel_conn *c, u16 op,
		      const struct pohmel_foid *dir, const char *name, u32 len,
		      u32 mode, u32 rdev, u32 flags, const char *target,
		      u32 tlen, struct pohmel_fattr *obj,
		      struct pohmel_fattr *pdir)
{
	struct pohmel_req *req;
	int err;

	req = pohmel_rpc_create_req(c, op, dir, name, len, mode, rdev, flags,
				    target, tlen, 0, NULL);
	if (IS_ERR(req))
		return PTR_ERR(req);
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	decode_entry(req, obj, pdir);
	return 0;
}

/*
 * A request of pohmel_rpc_create_req(), _remove_req() or _setattr_req()
 * alone, without the log's hook (@obj is left alone for a removal,
 * @pdir for a SETATTR).
 */
int pohmel_rpc_log_send(struct pohmel_conn *c, struct pohmel_req *req,
			struct pohmel_fattr *obj, struct pohmel_fattr *pdir)
{
	int err = send(c, req);

	if (err)
		return err;
	decode_entry(req, obj, pdir);
	return 0;
}

/*
 * Send @n sequenced requests built by a *_req helper in one BATCH, the
 * server applying them in order; without the log's hook (the log's own
 * entries go this way). The inner requests are put. Returns the answered
 * BATCH, whose replies pohmel_rpc_batch_entry() reads in order, or an
 * ERR_PTR (then nothing is known of what the server applied).
 */
struct pohmel_req *pohmel_rpc_batch(struct pohmel_conn *c,
				    struct pohmel_req **in, u32 n)
{
	struct pohmel_req *req;
	u32 len = 0, i;
	int err;

	for (i = 0; i < n; i++) {
		pohmel_req_set_hdr(in[i]);
		len += in[i]->slen + in[i]->data.len;
	}
	req = pohmel_req_alloc(c, POHMEL_OP_BATCH, len, false);
	if (req)
		req->bops = kmalloc_array(n, sizeof(*req->bops), GFP_NOFS);
	err = -ENOMEM;
	if (!req || !req->bops)
		goto put;
	for (i = 0; i < n; i++) {
		struct pohmel_hdr *h = pohmel_req_append(req, in[i]->slen);
		void *d;

		if (WARN_ON_ONCE(!in[i]->needs_seq) || !h) {
			err = -EINVAL;
			goto put;
		}
		memcpy(h, in[i]->sbuf, in[i]->slen);
		/* a WRITE's pages (counted in its header's len): copied in */
		if (in[i]->data.len) {
			struct iov_iter it;

			d = pohmel_req_append(req, in[i]->data.len);
			if (!d) {
				err = -EINVAL;
				goto put;
			}
			iov_iter_bvec(&it, ITER_SOURCE, in[i]->data.bv,
				      in[i]->data.nr, in[i]->data.len);
			if (copy_from_iter(d, in[i]->data.len, &it) !=
			    in[i]->data.len) {
				err = -EFAULT;
				goto put;
			}
		}
		h->tag = cpu_to_be32(i + 1);
		req->bops[i] = in[i]->op;
	}
	req->bn = n;
	req->nseq = n;
	for (i = 0; i < n; i++)
		pohmel_req_put(in[i]);
	err = send(c, req);
	return err ? ERR_PTR(err) : req;

put:
	pohmel_req_put(req);
	for (i = 0; i < n; i++)
		pohmel_req_put(in[i]);
	return ERR_PTR(err);
}

/*
 * The next inner reply of an answered BATCH of the log's requests (@off:
 * where it starts, advanced), or the server's -errno for it: a create's
 * gives the new object's and the directory's attributes (0), a
 * removal's the directory's (0), a SETATTR's the object's (0), a
 * WRITE's the object's and the bytes written (>= 0). The reply was
 * checked whole on arrival (proto.c check_batch).
 */
int pohmel_rpc_batch_entry(struct pohmel_req *b, u32 *off,
			   struct pohmel_fattr *obj, struct pohmel_fattr *pdir)
{
	const struct pohmel_hdr *h = (const void *)(b->rbuf + *off);
	const u8 *body = b->rbuf + *off + POHMEL_HDR_SIZE;
	u32 status = be32_to_cpu(h->status);

	*off += POHMEL_HDR_SIZE + be32_to_cpu(h->len);
	if (status)
		return pohmel_status_to_errno(status);
	switch (be16_to_cpu(h->op)) {
	case POHMEL_OP_SETATTR:
		reply_attr(b, body, obj);
		return 0;
	case POHMEL_OP_WRITE:
		reply_attr(b, body, obj);
		return min_t(u32, be32_to_cpu(((const struct pohmel_io_reply *)
					       body)->count), INT_MAX);
	}
	if (pohmel_op_removal(be16_to_cpu(h->op))) {
		reply_attr(b, body, pdir);
		return 0;
	}
	reply_attr(b, body, obj);
	reply_attr(b, body + POHMEL_ATTR_SIZE, pdir);
	return 0;
}

int pohmel_rpc_idrange(struct pohmel_conn *c, u32 want, u64 *start,
		       u64 *gen, u32 *count)
{
	const struct pohmel_idrange *r;
	struct pohmel_idrange *b;
	struct pohmel_req *req;
	int err;

	req = pohmel_req_alloc(c, POHMEL_OP_IDRANGE, POHMEL_IDRANGE_SIZE,
			       true);
	if (!req)
		return -ENOMEM;
	req->want = want;
	b = pohmel_req_append(req, POHMEL_IDRANGE_SIZE);
	b->count = cpu_to_be32(want);
	/* it names no object: it need not send the log first */
	err = send(c, req);
	if (err)
		return err;
	r = (const void *)req->rbuf;
	*start = be64_to_cpu(r->start);
	*gen = be64_to_cpu(r->gen);
	*count = be32_to_cpu(r->count);
	pohmel_req_put(req);
	return 0;
}

int pohmel_rpc_grant(struct pohmel_conn *c, const struct pohmel_foid *oid,
		     u32 want, struct pohmel_fattr *fa)
{
	struct pohmel_grant_req *b;
	struct pohmel_req *req;
	int err;

	req = pohmel_req_alloc(c, POHMEL_OP_GRANT, POHMEL_GRANT_REQ_SIZE, true);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_GRANT_REQ_SIZE);
	put_oid(&b->oid, oid);
	b->want = cpu_to_be32(want);
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	reply_attr(req, req->rbuf, fa);
	pohmel_req_put(req);
	return 0;
}

int pohmel_rpc_link(struct pohmel_conn *c, const struct pohmel_foid *obj,
		    const struct pohmel_foid *dir, const char *name, u32 len,
		    struct pohmel_fattr *fobj, struct pohmel_fattr *fdir)
{
	struct pohmel_link *b;
	struct pohmel_req *req;
	int err = check_name_arg(name, len);

	if (err)
		return err;
	req = pohmel_req_alloc(c, POHMEL_OP_LINK, POHMEL_LINK_SIZE + len, true);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_LINK_SIZE);
	put_oid(&b->obj, obj);
	put_oid(&b->dir, dir);
	b->namelen = cpu_to_be16(len);
	pohmel_req_append_name(req, name, len);
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	decode_entry(req, fobj, fdir);
	return 0;
}

int pohmel_rpc_rename(struct pohmel_conn *c, const struct pohmel_foid *odir,
		      const char *oname, u32 olen,
		      const struct pohmel_foid *ndir, const char *nname,
		      u32 nlen, u32 flags, struct pohmel_fattr *fobj,
		      struct pohmel_fattr *fdir)
{
	struct pohmel_rename *b;
	struct pohmel_req *req;
	int err = check_name_arg(oname, olen) ?: check_name_arg(nname, nlen);

	if (err)
		return err;
	req = pohmel_req_alloc(c, POHMEL_OP_RENAME,
			       POHMEL_RENAME_SIZE + olen + nlen, true);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_RENAME_SIZE);
	put_oid(&b->olddir, odir);
	put_oid(&b->newdir, ndir);
	b->flags = cpu_to_be32(flags);
	b->oldlen = cpu_to_be16(olen);
	b->newlen = cpu_to_be16(nlen);
	pohmel_req_append_name(req, oname, olen);
	pohmel_req_append_name(req, nname, nlen);
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	decode_entry(req, fobj, fdir);
	return 0;
}

int pohmel_rpc_readlink(struct pohmel_conn *c, const struct pohmel_foid *oid,
			char **target)
{
	struct pohmel_req *req = oid_req(c, POHMEL_OP_READLINK, oid);
	int err;

	if (!req)
		return -ENOMEM;
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	*target = kmemdup_nul(req->rbuf, req->rlen, GFP_KERNEL);
	pohmel_req_put(req);
	return *target ? 0 : -ENOMEM;
}

int pohmel_rpc_open(struct pohmel_conn *c, const struct pohmel_foid *oid,
		    u32 flags, u64 *handle, struct pohmel_fattr *fa)
{
	const struct pohmel_open_reply *r;
	struct pohmel_open *b;
	struct pohmel_req *req;
	int err;

	req = pohmel_req_alloc(c, POHMEL_OP_OPEN, POHMEL_OPEN_SIZE, true);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_OPEN_SIZE);
	put_oid(&b->oid, oid);
	b->flags = cpu_to_be32(flags);
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	r = (const void *)req->rbuf;
	reply_attr(req, &r->attr, fa);
	*handle = be64_to_cpu(r->handle);
	pohmel_req_put(req);
	return 0;
}

/* CLOSE does not wait: close(2) must not hang on a dead server. */
int pohmel_rpc_close(struct pohmel_conn *c, const struct pohmel_foid *oid,
		     u64 handle)
{
	struct pohmel_handle_req *b;
	struct pohmel_req *req;

	req = pohmel_req_alloc(c, POHMEL_OP_CLOSE, POHMEL_HANDLE_REQ_SIZE,
			       false);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_HANDLE_REQ_SIZE);
	put_oid(&b->oid, oid);
	b->handle = cpu_to_be64(handle);
	return pohmel_conn_call_async(c, req);
}

int pohmel_rpc_statfs(struct pohmel_conn *c, const struct pohmel_foid *oid,
		      struct pohmel_fstatfs *st)
{
	struct pohmel_req *req = oid_req(c, POHMEL_OP_STATFS, oid);
	const struct pohmel_statfs *r;
	int err;

	if (!req)
		return -ENOMEM;
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	r = (const void *)req->rbuf;
	st->blocks = be64_to_cpu(r->blocks);
	st->bfree = be64_to_cpu(r->bfree);
	st->bavail = be64_to_cpu(r->bavail);
	st->files = be64_to_cpu(r->files);
	st->ffree = be64_to_cpu(r->ffree);
	st->bsize = be32_to_cpu(r->bsize);
	st->namelen = be32_to_cpu(r->namelen);
	pohmel_req_put(req);
	return 0;
}

int pohmel_rpc_readdir(struct pohmel_conn *c, const struct pohmel_foid *dir,
		       u64 cookie, u32 maxbytes, struct pohmel_dir_iter *it,
		       struct pohmel_fattr *fdir)
{
	const struct pohmel_readdir_reply *r;
	struct pohmel_readdir *b;
	struct pohmel_req *req;
	int err;

	req = pohmel_req_alloc(c, POHMEL_OP_READDIR, POHMEL_READDIR_SIZE, true);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_READDIR_SIZE);
	put_oid(&b->dir, dir);
	b->cookie = cpu_to_be64(cookie);
	b->maxbytes = cpu_to_be32(maxbytes);
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	r = (const void *)req->rbuf;
	reply_attr(req, &r->dir, fdir);
	it->req = req;
	it->p = req->rbuf + POHMEL_READDIR_REPLY_SIZE;
	it->end = req->rbuf + req->rlen;
	it->left = be32_to_cpu(r->count);
	it->eof = be32_to_cpu(r->flags) & POHMEL_READDIR_EOF;
	return 0;
}

/* Next entry: 1 with @e filled, 0 at the end of this reply. */
int pohmel_dir_next(struct pohmel_dir_iter *it, struct pohmel_dirent_info *e)
{
	const struct pohmel_dirent *d;
	u32 nl;

	if (!it->left || it->end - it->p < POHMEL_DIRENT_SIZE)
		return 0;
	d = (const void *)it->p;
	nl = be16_to_cpu(d->namelen);
	if (it->end - it->p < POHMEL_DIRENT_SIZE + ALIGN(nl, 8))
		return 0;
	reply_attr(it->req, &d->attr, &e->attr);
	e->cookie = be64_to_cpu(d->cookie);
	e->name = (const char *)(it->p + POHMEL_DIRENT_SIZE);
	e->namelen = nl;
	it->p += POHMEL_DIRENT_SIZE + ALIGN(nl, 8);
	it->left--;
	return 1;
}

void pohmel_dir_iter_end(struct pohmel_dir_iter *it)
{
	pohmel_req_put(it->req);
	it->req = NULL;
}

/*
 * GETXATTR (@name) or LISTXATTR (@name NULL): copy the value into @buf
 * when @size is large enough; returns the value's size.
 */
ssize_t pohmel_rpc_getxattr(struct pohmel_conn *c, u16 op,
			    const struct pohmel_foid *oid, const char *name,
			    void *buf, size_t size)
{
	u32 nlen = name ? strlen(name) : 0, vlen;
	const struct pohmel_xattr_reply *r;
	struct pohmel_xattr *b;
	struct pohmel_req *req;
	int err;

	if (nlen > POHMEL_XATTR_NAME_MAX)
		return -ERANGE;
	size = min_t(size_t, size, POHMEL_XATTR_SIZE_MAX);
	req = pohmel_req_alloc(c, op, POHMEL_XATTR_SIZE + nlen, true);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_XATTR_SIZE);
	put_oid(&b->oid, oid);
	b->valuelen = cpu_to_be32(size);
	b->namelen = cpu_to_be16(nlen);
	if (nlen)
		pohmel_req_append_name(req, name, nlen);
	req->want = size;
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	r = (const void *)req->rbuf;
	vlen = be32_to_cpu(r->valuelen);
	if (size) {
		if (vlen > size) {
			pohmel_req_put(req);
			return -ERANGE;
		}
		memcpy(buf, req->rbuf + POHMEL_XATTR_REPLY_SIZE, vlen);
	}
	pohmel_req_put(req);
	return vlen;
}

/* SETXATTR (@value non-NULL) or REMOVEXATTR (@value NULL). */
int pohmel_rpc_setxattr(struct pohmel_conn *c, const struct pohmel_foid *oid,
			const char *name, const void *value, size_t size,
			u32 flags)
{
	u16 op = value ? POHMEL_OP_SETXATTR : POHMEL_OP_REMOVEXATTR;
	u32 nlen = strlen(name);
	struct pohmel_xattr *b;
	struct pohmel_req *req;
	int err;

	if (nlen > POHMEL_XATTR_NAME_MAX)
		return -ERANGE;
	if (size > POHMEL_XATTR_SIZE_MAX)
		return -E2BIG;
	if (!value)
		size = 0;
	req = pohmel_req_alloc(c, op, POHMEL_XATTR_SIZE + nlen + size, true);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_XATTR_SIZE);
	put_oid(&b->oid, oid);
	b->flags = cpu_to_be32(flags);
	b->valuelen = cpu_to_be32(size);
	b->namelen = cpu_to_be16(nlen);
	pohmel_req_append_name(req, name, nlen);
	if (size)
		pohmel_req_append_name(req, value, size);
	err = pohmel_rpc_call(c, req);
	if (!err)
		pohmel_req_put(req);
	return err;
}

int pohmel_rpc_lock(struct pohmel_conn *c, const struct pohmel_foid *oid,
		    struct pohmel_flock *fl)
{
	struct pohmel_lock *b;
	struct pohmel_req *req;
	int err;

	req = pohmel_req_alloc(c, POHMEL_OP_LOCK, POHMEL_LOCK_SIZE, true);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_LOCK_SIZE);
	put_oid(&b->oid, oid);
	b->owner = cpu_to_be64(fl->owner);
	b->start = cpu_to_be64(fl->start);
	b->len = cpu_to_be64(fl->len);
	b->type = cpu_to_be32(fl->type);
	b->flags = cpu_to_be32(fl->flags);
	b->pid = cpu_to_be32(fl->pid);
	req->xflags = fl->flags;
	/*
	 * A lock that may wait goes without a seq: it may stay unanswered
	 * for ever, and a seq would hold the reply-cache window (conn.h).
	 * Run twice for the same owner it ends in the same state.
	 */
	if ((fl->flags & POHMEL_LOCK_WAIT) && fl->type != POHMEL_LOCK_UN)
		req->needs_seq = false;
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	if (fl->flags & POHMEL_LOCK_TEST) {
		const struct pohmel_lock *r = (const void *)req->rbuf;

		fl->owner = be64_to_cpu(r->owner);
		fl->start = be64_to_cpu(r->start);
		fl->len = be64_to_cpu(r->len);
		fl->type = be32_to_cpu(r->type);
		fl->pid = be32_to_cpu(r->pid);
	}
	pohmel_req_put(req);
	return 0;
}

int pohmel_rpc_bye(struct pohmel_conn *c)
{
	struct pohmel_req *req = pohmel_req_alloc(c, POHMEL_OP_BYE, 0, false);
	int err;

	if (!req)
		return -ENOMEM;
	err = pohmel_rpc_call(c, req);
	if (!err)
		pohmel_req_put(req);
	return err;
}
