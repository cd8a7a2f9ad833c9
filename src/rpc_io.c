// SPDX-License-Identifier: GPL-2.0
/*
 * rpc_io.c - READ, WRITE and FSYNC: waited for (reads and writes of
 * O_DIRECT, a soft mount's page cache, commit.c), or submitted without a
 * waiter and ended on the connection's I/O workqueue (readahead and
 * writeback, addr.c).
 */
#include <linux/errno.h>
#include <linux/uio.h>

#include "rpc_int.h"

static struct pohmel_req *io_req(struct pohmel_conn *c, u16 op,
				 const struct pohmel_foid *oid, u64 handle,
				 u64 off, u32 count, u32 flags, u32 extra)
{
	struct pohmel_req *req;
	struct pohmel_io *b;

	req = pohmel_req_alloc(c, op, POHMEL_IO_SIZE + extra, true);
	if (!req)
		return NULL;
	b = pohmel_req_append(req, POHMEL_IO_SIZE);
	put_oid(&b->oid, oid);
	b->handle = cpu_to_be64(handle);
	b->offset = cpu_to_be64(off);
	b->count = cpu_to_be32(count);
	b->flags = cpu_to_be32(flags);
	req->want = count;
	return req;
}

/*
 * A READ reply's attributes into @fa and its bytes into @to (NULL: left
 * where they are); *@count is what the server read. Returns the bytes
 * copied (*@count when @to is NULL).
 */
static size_t read_reply(const struct pohmel_req *req, struct iov_iter *to,
			 struct pohmel_fattr *fa, size_t *count)
{
	const struct pohmel_io_reply *r = (const void *)req->rbuf;

	reply_attr(req, &r->attr, fa);
	*count = be32_to_cpu(r->count);
	if (!to)
		return *count;
	return copy_to_iter(req->rbuf + POHMEL_IO_REPLY_SIZE, *count, to);
}

/*
 * A READ nobody waits for (readahead): its data goes into @to (pages that
 * stay where they are until @end has run), straight from the socket when
 * it can. @end runs with the request on the connection's I/O workqueue
 * once it has ended, and learns the outcome from pohmel_rpc_read_done().
 * Returns 0 once it is submitted (@end will run), or -errno (it will not).
 */
int pohmel_rpc_read_submit(struct pohmel_conn *c,
			   const struct pohmel_foid *oid, u64 handle, u64 off,
			   u32 count, struct iov_iter *to,
			   void (*end)(struct pohmel_req *req), void *priv)
{
	struct pohmel_req *req;
	int err = pohmel_rpc_log_first(c);

	if (err)
		return err;
	req = io_req(c, POHMEL_OP_READ, oid, handle, off, count, 0, 0);
	if (!req)
		return -ENOMEM;
	req->end = end;
	req->end_priv = priv;
	req->dest = to;
	return pohmel_conn_submit(c, req);
}

/*
 * An ended READ of pohmel_rpc_read_submit: the bytes now in its pages
 * (copied there from the reply unless they went there directly), or
 * -errno.
 */
ssize_t pohmel_rpc_read_done(struct pohmel_req *req, struct pohmel_fattr *fa)
{
	size_t n;

	if (req->err)
		return req->err;
	/* direct: in the pages already */
	return read_reply(req, req->direct ? NULL : req->dest, fa, &n);
}

/*
 * A READ of up to @count bytes at @off, sent now; pohmel_rpc_read_wait
 * takes its reply (O_DIRECT keeps several in flight). Returns the
 * request or an ERR_PTR.
 */
struct pohmel_req *pohmel_rpc_read_send(struct pohmel_conn *c,
					const struct pohmel_foid *oid,
					u64 handle, u64 off, u32 count)
{
	struct pohmel_req *req;
	int err = pohmel_rpc_log_first(c);

	if (err)
		return ERR_PTR(err);
	req = io_req(c, POHMEL_OP_READ, oid, handle, off, count, 0, 0);
	if (!req)
		return ERR_PTR(-ENOMEM);
	err = pohmel_conn_send(c, req);
	if (err) {
		pohmel_req_put(req);
		return ERR_PTR(err);
	}
	return req;
}

/*
 * Wait for a READ of pohmel_rpc_read_send and put it: its bytes into @to
 * (NULL: dropped). Returns the bytes read or -errno.
 */
ssize_t pohmel_rpc_read_wait(struct pohmel_conn *c, struct pohmel_req *req,
			     struct iov_iter *to, struct pohmel_fattr *fa)
{
	size_t n, copied;
	int err;

	err = pohmel_conn_wait(c, req);
	if (err) {
		pohmel_req_put(req);
		return err;
	}
	copied = read_reply(req, to, fa, &n);
	pohmel_req_put(req);
	/*
	 * A fault in the user's buffer ends the read where it hit: the
	 * bytes before it count (a short read), none at all is -EFAULT.
	 */
	if (copied < n && !copied)
		return -EFAULT;
	return copied;
}

/* Read up to @count bytes at @off into @to; returns bytes read. */
ssize_t pohmel_rpc_read(struct pohmel_conn *c, const struct pohmel_foid *oid,
			u64 handle, u64 off, u32 count, struct iov_iter *to,
			struct pohmel_fattr *fa)
{
	struct pohmel_req *req = pohmel_rpc_read_send(c, oid, handle, off,
						      count);

	if (IS_ERR(req))
		return PTR_ERR(req);
	return pohmel_rpc_read_wait(c, req, to, fa);
}

ssize_t pohmel_rpc_write(struct pohmel_conn *c, const struct pohmel_foid *oid,
			 u64 handle, u64 off, u32 count, u32 flags,
			 struct iov_iter *from, struct pohmel_fattr *fa)
{
	return pohmel_rpc_write_times(c, oid, handle, off, count, flags, NULL,
				      NULL, from, fa);
}

/* A WRITE's request up to its data, with room for @room bytes of it. */
static struct pohmel_req *write_head(struct pohmel_conn *c,
				     const struct pohmel_foid *oid, u64 handle,
				     u64 off, u32 count, u32 flags,
				     const struct timespec64 *mt,
				     const struct timespec64 *ct, u32 room)
{
	struct pohmel_req *req;

	if (mt && ct)
		flags |= POHMEL_IO_TIMES;
	req = io_req(c, POHMEL_OP_WRITE, oid, handle, off, count, flags,
		     room + 2 * sizeof(struct pohmel_time));
	if (req && mt && ct) {
		struct pohmel_time *w = pohmel_req_append(req, 2 * sizeof(*w));

		if (w) {
			put_time(&w[0], mt);
			put_time(&w[1], ct);
		}
	}
	return req;
}

/*
 * The WRITE of @count bytes from @from at @off; with @mt and @ct
 * (POHMEL_IO_TIMES), the times the client showed. Built under the
 * caller's credentials. Returns the request or an ERR_PTR.
 */
struct pohmel_req *pohmel_rpc_write_req(struct pohmel_conn *c,
					const struct pohmel_foid *oid,
					u64 handle, u64 off, u32 count,
					u32 flags, const struct timespec64 *mt,
					const struct timespec64 *ct,
					struct iov_iter *from)
{
	struct pohmel_req *req;
	void *data;

	req = write_head(c, oid, handle, off, count, flags, mt, ct, count);
	if (!req)
		return ERR_PTR(-ENOMEM);
	data = pohmel_req_append(req, count);
	if (data && copy_from_iter(data, count, from) != count) {
		pohmel_req_put(req);
		return ERR_PTR(-EFAULT);
	}
	return req;
}

/*
 * As pohmel_rpc_write_req, the data being @count bytes of @nr page cache
 * folios under writeback: sent from the pages (pohmel_req_attach_folios),
 * by reference where the socket can, not copied into the request.
 */
struct pohmel_req *pohmel_rpc_write_req_folios(struct pohmel_conn *c,
					       const struct pohmel_foid *oid,
					       u64 handle, u64 off, u32 count,
					       u32 flags,
					       const struct timespec64 *mt,
					       const struct timespec64 *ct,
					       struct folio **folios,
					       unsigned int nr)
{
	struct pohmel_req *req;
	int err;

	req = write_head(c, oid, handle, off, count, flags, mt, ct, 0);
	if (!req)
		return ERR_PTR(-ENOMEM);
	err = pohmel_req_attach_folios(req, folios, nr, count);
	if (err) {
		pohmel_req_put(req);
		return ERR_PTR(err);
	}
	return req;
}

/* An ended WRITE: the bytes the server wrote, or -errno. */
ssize_t pohmel_rpc_write_done(struct pohmel_req *req, struct pohmel_fattr *fa)
{
	const struct pohmel_io_reply *r;

	if (req->err)
		return req->err;
	r = (const void *)req->rbuf;
	reply_attr(req, &r->attr, fa);
	return be32_to_cpu(r->count);
}

/*
 * Send a WRITE of pohmel_rpc_write_req; pohmel_rpc_write_wait takes its
 * reply. On an error the request is put.
 */
int pohmel_rpc_write_send(struct pohmel_conn *c, struct pohmel_req *req)
{
	int err = pohmel_rpc_log_first(c);

	if (!err)
		err = pohmel_conn_send(c, req);
	if (err)
		pohmel_req_put(req);
	return err;
}

/* Wait for a WRITE of pohmel_rpc_write_send and put it: bytes or -errno. */
ssize_t pohmel_rpc_write_wait(struct pohmel_conn *c, struct pohmel_req *req,
			      struct pohmel_fattr *fa)
{
	ssize_t n;

	n = pohmel_conn_wait(c, req);
	if (!n)
		n = pohmel_rpc_write_done(req, fa);
	pohmel_req_put(req);
	return n;
}

/* Send a WRITE of pohmel_rpc_write_req and wait; puts it. */
ssize_t pohmel_rpc_write_call(struct pohmel_conn *c, struct pohmel_req *req,
			      struct pohmel_fattr *fa)
{
	int err = pohmel_rpc_write_send(c, req);

	return err ?: pohmel_rpc_write_wait(c, req, fa);
}

/*
 * Send a WRITE of pohmel_rpc_write_req without waiting: as
 * pohmel_rpc_read_submit, @end runs once it ended (0 returned) or never
 * (-errno; the request is put).
 */
int pohmel_rpc_write_submit(struct pohmel_conn *c, struct pohmel_req *req,
			    void (*end)(struct pohmel_req *req), void *priv)
{
	int err = pohmel_rpc_log_first(c);

	if (err) {
		pohmel_req_put(req);
		return err;
	}
	req->end = end;
	req->end_priv = priv;
	return pohmel_conn_submit(c, req);
}

ssize_t pohmel_rpc_write_times(struct pohmel_conn *c,
			       const struct pohmel_foid *oid, u64 handle,
			       u64 off, u32 count, u32 flags,
			       const struct timespec64 *mt,
			       const struct timespec64 *ct,
			       struct iov_iter *from, struct pohmel_fattr *fa)
{
	struct pohmel_req *req;

	req = pohmel_rpc_write_req(c, oid, handle, off, count, flags, mt, ct,
				   from);
	if (IS_ERR(req))
		return PTR_ERR(req);
	return pohmel_rpc_write_call(c, req, fa);
}

int pohmel_rpc_fsync(struct pohmel_conn *c, const struct pohmel_foid *oid,
		     u64 handle, u32 flags, struct pohmel_fattr *fa)
{
	struct pohmel_fsync *b;
	struct pohmel_req *req;
	int err;

	req = pohmel_req_alloc(c, POHMEL_OP_FSYNC, POHMEL_FSYNC_SIZE, true);
	if (!req)
		return -ENOMEM;
	b = pohmel_req_append(req, POHMEL_FSYNC_SIZE);
	put_oid(&b->oid, oid);
	b->handle = cpu_to_be64(handle);
	b->flags = cpu_to_be32(flags);
	err = pohmel_rpc_call(c, req);
	if (err)
		return err;
	reply_attr(req, req->rbuf, fa);
	pohmel_req_put(req);
	return 0;
}
