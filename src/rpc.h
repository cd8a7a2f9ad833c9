/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpc.h - one typed call per opcode: what the VFS side of pohmelfs uses
 * to talk to the server. Arguments and results are plain CPU-order
 * values; no wire struct and no socket leaks out of rpc.c.
 */
#ifndef POHMEL_RPC_H
#define POHMEL_RPC_H

#include <linux/time64.h>
#include <linux/types.h>

#include "compat.h"

struct pohmel_conn;
struct iov_iter;

struct pohmel_foid {
	u64 id;
	u64 gen;
};

/* Decoded struct pohmel_attr. */
struct pohmel_fattr {
	struct pohmel_foid oid;
	u64 size;
	u64 blocks;
	u64 change;
	struct timespec64 atime;
	struct timespec64 mtime;
	struct timespec64 ctime;
	u32 mode;
	u32 nlink;
	u32 uid;
	u32 gid;
	u32 rdev;
	u32 blksize;
	u32 grant;			/* as sent; see stamp and gen */
	/* which reply it came in: for the grant rules (conn.h) */
	u64 stamp;			/* recalls seen when the request left */
	u32 gen;			/* connection it was answered on; 0: none */
	u64 rseq;			/* arrival order of that reply; 0: none */
};

struct pohmel_sattr {
	u32 valid;			/* POHMEL_SET_* */
	u32 mode;
	u32 uid;
	u32 gid;
	u64 size;
	struct timespec64 atime;
	struct timespec64 mtime;
	u64 handle;			/* with POHMEL_SET_HANDLE */
};

struct pohmel_fstatfs {
	u64 blocks, bfree, bavail, files, ffree;
	u32 bsize, namelen;
};

struct pohmel_flock {
	u64 owner;
	u64 start;
	u64 len;			/* 0: to end of file */
	u32 type;			/* POHMEL_LOCK_RD/WR/UN */
	u32 flags;			/* POHMEL_LOCK_* */
	u32 pid;
};

/* Walks the entries of one READDIR reply. */
struct pohmel_dir_iter {
	void *req;			/* opaque */
	const u8 *p;
	const u8 *end;
	u32 left;
	bool eof;
};

struct pohmel_dirent_info {
	struct pohmel_fattr attr;
	u64 cookie;
	const char *name;
	u32 namelen;
};

int pohmel_rpc_ping(struct pohmel_conn *c);
int pohmel_rpc_getattr(struct pohmel_conn *c, const struct pohmel_foid *oid,
		       struct pohmel_fattr *fa);
int pohmel_rpc_lookup_nolog(struct pohmel_conn *c,
			    const struct pohmel_foid *dir, const char *name,
			    u32 len, struct pohmel_fattr *fa);
int pohmel_rpc_lookup(struct pohmel_conn *c, const struct pohmel_foid *dir,
		      const char *name, u32 len, struct pohmel_fattr *fa);
struct pohmel_req *pohmel_rpc_setattr_req(struct pohmel_conn *c,
					  const struct pohmel_foid *oid,
					  const struct pohmel_sattr *sa);
int pohmel_rpc_setattr(struct pohmel_conn *c, const struct pohmel_foid *oid,
		       const struct pohmel_sattr *sa, struct pohmel_fattr *fa);
int pohmel_rpc_idrange(struct pohmel_conn *c, u32 want, u64 *start,
		       u64 *gen, u32 *count);
int pohmel_rpc_grant(struct pohmel_conn *c, const struct pohmel_foid *oid,
		     u32 want, struct pohmel_fattr *fa);
int pohmel_wb_flush_conn(struct pohmel_conn *c);
struct pohmel_req *pohmel_rpc_create_req(struct pohmel_conn *c, u16 op,
					 const struct pohmel_foid *dir,
					 const char *name, u32 len, u32 mode,
					 u32 rdev, u32 flags,
					 const char *target, u32 tlen, u64 id,
					 const struct timespec64 *t);
int pohmel_rpc_log_send(struct pohmel_conn *c, struct pohmel_req *req,
			struct pohmel_fattr *obj, struct pohmel_fattr *pdir);
struct pohmel_req *pohmel_rpc_batch(struct pohmel_conn *c,
				    struct pohmel_req **in, u32 n);
int pohmel_rpc_batch_entry(struct pohmel_req *b, u32 *off,
			   struct pohmel_fattr *obj, struct pohmel_fattr *pdir);
int pohmel_rpc_create(struct pohmel_conn *c, u16 op,
		      const struct pohmel_foid *dir, const char *name, u32 len,
		      u32 mode, u32 rdev, u32 flags, const char *target,
		      u32 tlen, struct pohmel_fattr *obj,
		      struct pohmel_fattr *pdir);
int pohmel_rpc_link(struct pohmel_conn *c, const struct pohmel_foid *obj,
		    const struct pohmel_foid *dir, const char *name, u32 len,
		    struct pohmel_fattr *fobj, struct pohmel_fattr *fdir);
/*
 * What an UNLINK/RMDIR gives up with the object it removes (1.4,
 * POHMEL_FEAT_FORGET; file.c fills it): flags POHMEL_REMOVE_*, the
 * server handles of the idle handles taken off the inode (n of them in
 * h[], the handles themselves on list), and the object.
 */
struct pohmel_forget {
	u32 flags;
	u32 n;
	struct pohmel_foid obj;
	u64 h[POHMEL_REMOVE_HANDLES_MAX];
	struct list_head list;
};

/* Whether @op's reply is the directory's attributes alone (a removal). */
static inline bool pohmel_op_removal(u16 op)
{
	return op == POHMEL_OP_UNLINK || op == POHMEL_OP_RMDIR;
}

struct pohmel_req *pohmel_rpc_remove_req(struct pohmel_conn *c, u16 op,
					 const struct pohmel_foid *dir,
					 const char *name, u32 len,
					 const struct pohmel_forget *fg);
int pohmel_rpc_remove(struct pohmel_conn *c, u16 op,
		      const struct pohmel_foid *dir, const char *name, u32 len,
		      const struct pohmel_forget *fg, struct pohmel_fattr *fdir);
int pohmel_rpc_rename(struct pohmel_conn *c, const struct pohmel_foid *odir,
		      const char *oname, u32 olen,
		      const struct pohmel_foid *ndir, const char *nname,
		      u32 nlen, u32 flags, struct pohmel_fattr *fobj,
		      struct pohmel_fattr *fdir);
int pohmel_rpc_readlink(struct pohmel_conn *c, const struct pohmel_foid *oid,
			char **target);
int pohmel_rpc_open(struct pohmel_conn *c, const struct pohmel_foid *oid,
		    u32 flags, u64 *handle, struct pohmel_fattr *fa);
int pohmel_rpc_close(struct pohmel_conn *c, const struct pohmel_foid *oid,
		     u64 handle);
ssize_t pohmel_rpc_read(struct pohmel_conn *c, const struct pohmel_foid *oid,
			u64 handle, u64 off, u32 count, struct iov_iter *to,
			struct pohmel_fattr *fa);
int pohmel_rpc_read_submit(struct pohmel_conn *c,
			   const struct pohmel_foid *oid, u64 handle, u64 off,
			   u32 count, struct iov_iter *to,
			   void (*end)(struct pohmel_req *req), void *priv);
ssize_t pohmel_rpc_read_done(struct pohmel_req *req, struct pohmel_fattr *fa);
ssize_t pohmel_rpc_write(struct pohmel_conn *c, const struct pohmel_foid *oid,
			 u64 handle, u64 off, u32 count, u32 flags,
			 struct iov_iter *from, struct pohmel_fattr *fa);
ssize_t pohmel_rpc_write_times(struct pohmel_conn *c,
			       const struct pohmel_foid *oid, u64 handle,
			       u64 off, u32 count, u32 flags,
			       const struct timespec64 *mt,
			       const struct timespec64 *ct,
			       struct iov_iter *from, struct pohmel_fattr *fa);
struct pohmel_req *pohmel_rpc_write_req(struct pohmel_conn *c,
					const struct pohmel_foid *oid,
					u64 handle, u64 off, u32 count,
					u32 flags, const struct timespec64 *mt,
					const struct timespec64 *ct,
					struct iov_iter *from);
struct pohmel_req *pohmel_rpc_write_req_folios(struct pohmel_conn *c,
					       const struct pohmel_foid *oid,
					       u64 handle, u64 off, u32 count,
					       u32 flags,
					       const struct timespec64 *mt,
					       const struct timespec64 *ct,
					       struct folio **folios,
					       unsigned int nr);
ssize_t pohmel_rpc_write_done(struct pohmel_req *req, struct pohmel_fattr *fa);
ssize_t pohmel_rpc_write_call(struct pohmel_conn *c, struct pohmel_req *req,
			      struct pohmel_fattr *fa);
int pohmel_rpc_write_send(struct pohmel_conn *c, struct pohmel_req *req);
ssize_t pohmel_rpc_write_wait(struct pohmel_conn *c, struct pohmel_req *req,
			      struct pohmel_fattr *fa);
struct pohmel_req *pohmel_rpc_read_send(struct pohmel_conn *c,
					const struct pohmel_foid *oid,
					u64 handle, u64 off, u32 count);
ssize_t pohmel_rpc_read_wait(struct pohmel_conn *c, struct pohmel_req *req,
			     struct iov_iter *to, struct pohmel_fattr *fa);
int pohmel_rpc_write_submit(struct pohmel_conn *c, struct pohmel_req *req,
			    void (*end)(struct pohmel_req *req), void *priv);
int pohmel_rpc_fsync(struct pohmel_conn *c, const struct pohmel_foid *oid,
		     u64 handle, u32 flags, struct pohmel_fattr *fa);
int pohmel_rpc_statfs(struct pohmel_conn *c, const struct pohmel_foid *oid,
		      struct pohmel_fstatfs *st);
int pohmel_rpc_readdir(struct pohmel_conn *c, const struct pohmel_foid *dir,
		       u64 cookie, u32 maxbytes, struct pohmel_dir_iter *it,
		       struct pohmel_fattr *fdir);
int pohmel_dir_next(struct pohmel_dir_iter *it, struct pohmel_dirent_info *e);
void pohmel_dir_iter_end(struct pohmel_dir_iter *it);
ssize_t pohmel_rpc_getxattr(struct pohmel_conn *c, u16 op,
			    const struct pohmel_foid *oid, const char *name,
			    void *buf, size_t size);
int pohmel_rpc_setxattr(struct pohmel_conn *c, const struct pohmel_foid *oid,
			const char *name, const void *value, size_t size,
			u32 flags);
int pohmel_rpc_lock(struct pohmel_conn *c, const struct pohmel_foid *oid,
		    struct pohmel_flock *fl);
int pohmel_rpc_bye(struct pohmel_conn *c);
void pohmel_decode_attr(const void *wire, struct pohmel_fattr *fa);

#endif /* POHMEL_RPC_H */
