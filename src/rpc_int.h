/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpc_int.h - what rpc.c and rpc_io.c share: wire encoders, the reply's
 * attributes, and the call that puts the write-back log first.
 */
#ifndef POHMEL_RPC_INT_H
#define POHMEL_RPC_INT_H

#include "conn.h"
#include "rpc.h"

static inline void put_oid(struct pohmel_oid *w, const struct pohmel_foid *oid)
{
	w->id = cpu_to_be64(oid->id);
	w->gen = cpu_to_be64(oid->gen);
}

static inline void put_time(struct pohmel_time *w, const struct timespec64 *ts)
{
	w->sec = cpu_to_be64((u64)ts->tv_sec);
	w->nsec = cpu_to_be32((u32)ts->tv_nsec);
}

/* An attr of @req's reply: remember which request and connection. */
static inline void reply_attr(const struct pohmel_req *req,
			      const void *wire, struct pohmel_fattr *fa)
{
	if (!fa)
		return;
	pohmel_decode_attr(wire, fa);
	fa->stamp = req->stamp;
	fa->gen = req->gen;
	fa->rseq = req->rseq;
}

/*
 * Creates made locally go first (wb.c): nothing reaches the server ahead
 * of an object it may name. 0, or the error of sending them.
 */
static inline int pohmel_rpc_log_first(struct pohmel_conn *c)
{
	if (unlikely(atomic_read(&c->wb_pending)))
		return pohmel_wb_flush_conn(c);
	return 0;
}

int pohmel_rpc_call(struct pohmel_conn *c, struct pohmel_req *req);

#endif /* POHMEL_RPC_INT_H */
