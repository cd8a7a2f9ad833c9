/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - every shim for kernels older than the newest API we write
 * against (7.x). The choices come from compile probes (compat/probes/,
 * run by Kbuild into compat/generated.h), never from version numbers.
 * Source files use the newest API and include this header; nothing else
 * tests the kernel version.
 */
#ifndef POHMEL_COMPAT_H
#define POHMEL_COMPAT_H

#include "compat/generated.h"

#include <linux/fs.h>
#include <linux/dcache.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include <linux/writeback.h>
#include <linux/uio.h>

/* --- idmapped mounts: 5.12 user_namespace, 6.3 mnt_idmap ------------- */
#if defined(HAVE_MNT_IDMAP)
#include <linux/mnt_idmapping.h>
#define POHMEL_IDMAP_PARAM	struct mnt_idmap *idmap,
#define POHMEL_IDMAP_ARG	idmap,
#elif defined(HAVE_USERNS_IOPS)
#define POHMEL_IDMAP_PARAM	struct user_namespace *idmap,
#define POHMEL_IDMAP_ARG	idmap,
#else
#define POHMEL_IDMAP_PARAM
#define POHMEL_IDMAP_ARG
#endif

/*
 * Callers have POHMEL_IDMAP_PARAM in scope. 6.6 added request_mask.
 * Each argument is a whole function argument and needs no parentheses
 * ("POHMEL_IDMAP_ARG (x)" would also read as a function call).
 */
#ifdef HAVE_FILLATTR_REQUEST_MASK
#define pohmel_generic_fillattr(mask, inode, stat) \
	generic_fillattr(POHMEL_IDMAP_ARG mask, inode, stat)
#else
#define pohmel_generic_fillattr(mask, inode, stat) \
	generic_fillattr(POHMEL_IDMAP_ARG inode, stat)
#endif
#define pohmel_setattr_prepare(dentry, attr) \
	setattr_prepare(POHMEL_IDMAP_ARG dentry, attr)
#define pohmel_setattr_copy(inode, attr) \
	setattr_copy(POHMEL_IDMAP_ARG inode, attr)
#define pohmel_generic_permission(inode, mask) \
	generic_permission(POHMEL_IDMAP_ARG inode, mask)

/* generic_permission() outside an inode operation (no idmapped mounts) */
#if defined(HAVE_MNT_IDMAP)
#define pohmel_permission_noidmap(inode, mask) \
	generic_permission(&nop_mnt_idmap, (inode), (mask))
#elif defined(HAVE_USERNS_IOPS)
#define pohmel_permission_noidmap(inode, mask) \
	generic_permission(&init_user_ns, (inode), (mask))
#else
#define pohmel_permission_noidmap(inode, mask) \
	generic_permission((inode), (mask))
#endif

/* --- 6.15: ->mkdir returns a dentry (ERR_PTR(0) == NULL: "use mine") -- */
#ifdef HAVE_MKDIR_RETURNS_DENTRY
#define POHMEL_MKDIR_RET	struct dentry *
#define pohmel_mkdir_return(err)	ERR_PTR(err)
#else
#define POHMEL_MKDIR_RET	int
#define pohmel_mkdir_return(err)	(err)
#endif

/* --- 6.14: ->d_revalidate(dir, name, dentry, flags) ------------------ */
#ifdef HAVE_D_REVALIDATE_DIR
#define POHMEL_D_REVALIDATE_PARAMS \
	struct inode *dir, const struct qstr *name, struct dentry *dentry, \
	unsigned int flags
/* the directory's inode, also in RCU walk: the one the VFS passes */
#define pohmel_revalidate_dir_rcu(dentry)	(dir)
#else
#define POHMEL_D_REVALIDATE_PARAMS struct dentry *dentry, unsigned int flags
/*
 * In RCU walk d_parent may change under us (a rename) and its inode go
 * (NULL: the caller falls back to ref-walk); the walk checks the
 * dentry's sequence count after, so an answer about a stale parent is
 * thrown away.
 */
#define pohmel_revalidate_dir_rcu(dentry) \
	d_inode_rcu(READ_ONCE((dentry)->d_parent))
#endif

/* --- 6.17: set_default_d_op() --------------------------------------- */
#ifndef HAVE_SET_DEFAULT_D_OP
static inline void set_default_d_op(struct super_block *sb,
				    const struct dentry_operations *ops)
{
	sb->s_d_op = ops;
}
#endif

/* --- 6.7: inode time accessors -------------------------------------- */
#ifndef HAVE_INODE_TIME_ACCESSORS
static inline struct timespec64 inode_get_mtime(const struct inode *inode)
{
	return inode->i_mtime;
}

static inline struct timespec64 inode_get_atime(const struct inode *inode)
{
	return inode->i_atime;
}

static inline struct timespec64 inode_set_mtime_to_ts(struct inode *inode,
						      struct timespec64 ts)
{
	inode->i_mtime = ts;
	return ts;
}

static inline struct timespec64 inode_set_atime_to_ts(struct inode *inode,
						      struct timespec64 ts)
{
	inode->i_atime = ts;
	return ts;
}
#endif

/* --- 5.16: folios. 5.10 gets struct page under the folio names. ------ */
#ifndef HAVE_FOLIO
#define folio				page
#define page_folio(p)			(p)
#define folio_page(f, n)		(f)
#define folio_lock			lock_page
#define folio_unlock			unlock_page
#define folio_get			get_page
#define folio_put			put_page
#define folio_mark_uptodate		SetPageUptodate
#define folio_test_uptodate		PageUptodate
#define folio_test_dirty		PageDirty
#define folio_pos			page_offset
#define folio_size(f)			PAGE_SIZE
#define folio_nr_pages(f)		1
#define folio_start_writeback		set_page_writeback
#define folio_end_writeback		end_page_writeback
#define folio_wait_stable		wait_for_stable_page
#define folio_mark_dirty		set_page_dirty
#define folio_trylock			trylock_page
#define folio_clear_dirty_for_io	clear_page_dirty_for_io
#define folio_test_writeback		PageWriteback
#define folio_zero_segment		zero_user_segment
#define folio_zero_segments		zero_user_segments
#endif

/* 5.19: ->read_folio; 5.18: ->dirty_folio. */
#ifdef HAVE_AOPS_READ_FOLIO
#define POHMEL_AOPS_READ(fn)	.read_folio = (fn)
#else
#define POHMEL_AOPS_READ(fn)	.readpage = (fn)
#endif
#ifdef HAVE_AOPS_DIRTY_FOLIO
#define POHMEL_AOPS_DIRTY	.dirty_folio = filemap_dirty_folio
#else
#define POHMEL_AOPS_DIRTY	.set_page_dirty = __set_page_dirty_nobuffers
#endif

/* Next folio of a readahead batch, locked, no extra reference. */
static inline struct folio *pohmel_readahead_next(struct readahead_control *r)
{
#ifdef HAVE_READAHEAD_FOLIO
	return readahead_folio(r);
#else
	struct page *page = readahead_page(r);

	if (page)
		put_page(page);
	return page;
#endif
}

/*
 * Write back the dirty folios of a mapping: fn gets each folio locked and
 * cleared for I/O, and must start writeback and unlock it (the ->writepage
 * contract). 6.10 writeback_iter(); before, write_cache_pages() whose
 * callback took a page until 6.3.
 */
typedef int (*pohmel_wb_fn)(struct folio *folio, struct writeback_control *wbc,
			    void *data);
#ifdef HAVE_WRITEBACK_ITER
static inline int pohmel_write_cache_folios(struct address_space *mapping,
					    struct writeback_control *wbc,
					    pohmel_wb_fn fn, void *data)
{
	struct folio *folio = NULL;
	int err = 0;

	while ((folio = writeback_iter(mapping, wbc, folio, &err)))
		err = fn(folio, wbc, data);
	return err;
}
#else
struct pohmel_wcp {
	pohmel_wb_fn fn;
	void *data;
};

#ifdef HAVE_WRITEPAGE_T_FOLIO
static inline int pohmel_wcp_cb(struct folio *folio,
				struct writeback_control *wbc, void *d)
{
	struct pohmel_wcp *w = d;

	return w->fn(folio, wbc, w->data);
}
#else
static inline int pohmel_wcp_cb(struct page *page,
				struct writeback_control *wbc, void *d)
{
	struct pohmel_wcp *w = d;

	return w->fn(page_folio(page), wbc, w->data);
}
#endif

static inline int pohmel_write_cache_folios(struct address_space *mapping,
					    struct writeback_control *wbc,
					    pohmel_wb_fn fn, void *data)
{
	struct pohmel_wcp w = { .fn = fn, .data = data };

	return write_cache_pages(mapping, wbc, pohmel_wcp_cb, &w);
}
#endif

/*
 * --- buffered writes: ->write_begin/->write_end ----------------------
 * 6.17 const struct kiocb *; 6.12 struct folio **; 5.19 no flags.
 * Our implementations take (file, mapping, pos, len, folio) and these
 * macros adapt the prototypes.
 */
#if defined(HAVE_WRITE_BEGIN_KIOCB)
#define POHMEL_WB_FILE_PARAM	const struct kiocb *iocb
#define pohmel_wb_file()	(iocb->ki_filp)
#else
#define POHMEL_WB_FILE_PARAM	struct file *file
#define pohmel_wb_file()	(file)
#endif
#if defined(HAVE_WRITE_BEGIN_KIOCB) || defined(HAVE_WRITE_BEGIN_FOLIO)
#define POHMEL_WB_FOLIO_T	struct folio
#define pohmel_wb_out(folio)	(folio)
#define pohmel_wb_in(p)		(p)
#else
#define POHMEL_WB_FOLIO_T	struct page
#define pohmel_wb_out(folio)	folio_page(folio, 0)
#define pohmel_wb_in(p)		page_folio(p)
#endif
#if defined(HAVE_WRITE_BEGIN_NO_FLAGS) || defined(HAVE_WRITE_BEGIN_FOLIO) || \
	defined(HAVE_WRITE_BEGIN_KIOCB)
#define POHMEL_WB_FLAGS_PARAM
#else
#define POHMEL_WB_FLAGS_PARAM	unsigned int flags,
#endif

/* A locked folio of @mapping at @index for writing, or ERR_PTR. */
static inline struct folio *pohmel_grab_folio(struct address_space *mapping,
					      pgoff_t index)
{
#if defined(FGP_WRITEBEGIN)
	/* NULL before 6.4, ERR_PTR since */
	struct folio *folio = __filemap_get_folio(mapping, index,
				FGP_WRITEBEGIN, mapping_gfp_mask(mapping));

	return folio ?: ERR_PTR(-ENOMEM);
#else
#ifdef HAVE_WRITE_BEGIN_NO_FLAGS
	struct page *page = grab_cache_page_write_begin(mapping, index);
#else
	struct page *page = grab_cache_page_write_begin(mapping, index, 0);
#endif
	return page ? page_folio(page) : ERR_PTR(-ENOMEM);
#endif
}

/* generic_perform_write(), advancing ki_pos on every kernel. */
static inline ssize_t pohmel_perform_write(struct kiocb *iocb,
					   struct iov_iter *from)
{
	loff_t before = iocb->ki_pos;
	ssize_t ret;

#ifdef HAVE_GENERIC_PERFORM_WRITE_IOCB
	ret = generic_perform_write(iocb, from);
#else
	ret = generic_perform_write(iocb->ki_filp, from, iocb->ki_pos);
#endif
	/* 6.5 moved the ki_pos update into generic_perform_write */
	if (ret > 0 && iocb->ki_pos == before)
		iocb->ki_pos += ret;
	return ret;
}

/* --- 6.0: FMODE_CAN_ODIRECT ----------------------------------------- */
static inline void pohmel_allow_odirect(struct file *file)
{
#ifdef HAVE_FMODE_CAN_ODIRECT
	file->f_mode |= FMODE_CAN_ODIRECT;
#endif
}

/* --- 5.12: ->map_pages returns vm_fault_t ------------------------- */
/*
 * ->map_pages and filemap_map_pages() return vm_fault_t since 5.12
 * (void before). Write ->map_pages as a vm_fault_t function FN calling
 * pohmel_filemap_map_pages(), put POHMEL_DEFINE_MAP_PAGES_VOID(FN)
 * after it and POHMEL_MAP_PAGES(FN) in the vm_operations_struct.
 */
#ifdef HAVE_MAP_PAGES_VM_FAULT_T
#define pohmel_filemap_map_pages	filemap_map_pages
#define POHMEL_MAP_PAGES(fn)		fn
#else
static inline vm_fault_t pohmel_filemap_map_pages(struct vm_fault *vmf,
						  pgoff_t start, pgoff_t end)
{
	filemap_map_pages(vmf, start, end);
	return 0;
}

#define POHMEL_MAP_PAGES(fn)		fn##_void
#endif
#define POHMEL_DEFINE_MAP_PAGES_VOID(fn)				\
static void __maybe_unused fn##_void(struct vm_fault *vmf,		\
				     pgoff_t start, pgoff_t end)	\
{									\
	fn(vmf, start, end);						\
}

/* --- 6.5: filemap_splice_read --------------------------------------- */
#ifndef HAVE_FILEMAP_SPLICE_READ
#define filemap_splice_read	generic_file_splice_read
#endif

/* --- 6.2: ITER_SOURCE / ITER_DEST ----------------------------------- */
#ifndef ITER_DEST
#define ITER_DEST	READ
#define ITER_SOURCE	WRITE
#endif

/* --- 6.19: kernel_connect() takes struct sockaddr_unsized ----------- */
#ifdef HAVE_SOCKADDR_UNSIZED
#define pohmel_connect_addr(a)	((struct sockaddr_unsized *)(a))
#else
#define pohmel_connect_addr(a)	((struct sockaddr *)(a))
#endif

/* --- 6.2: sk_use_task_frag ------------------------------------------ */
#ifdef HAVE_SK_USE_TASK_FRAG
#define pohmel_sk_no_task_frag(sk)	((sk)->sk_use_task_frag = false)
#else
#define pohmel_sk_no_task_frag(sk)	do { } while (0)
#endif

/*
 * --- 6.5: pages sent by reference through sendmsg(MSG_SPLICE_PAGES),
 * kernel_sendpage() gone. Either way the socket takes a reference of each
 * page rather than a copy. Returns 0 once all @len bytes went, or -errno.
 */
#include <linux/net.h>
static inline int pohmel_sock_send_pages(struct socket *sock,
					 const struct bio_vec *bv,
					 unsigned int nr, size_t len)
{
#ifdef HAVE_MSG_SPLICE_PAGES
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | MSG_SPLICE_PAGES };
	int ret;

	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, bv, nr, len);
	while (msg_data_left(&msg)) {
		ret = sock_sendmsg(sock, &msg);
		if (ret <= 0)
			return ret ? ret : -EPIPE;
	}
	return 0;
#else
	unsigned int i;
	int ret;

	for (i = 0; i < nr && len; i++) {
		size_t off = bv[i].bv_offset, n = min_t(size_t, bv[i].bv_len, len);

		len -= n;
		while (n) {
			ret = kernel_sendpage(sock, bv[i].bv_page, off, n,
					      MSG_NOSIGNAL |
					      (len ? MSG_MORE | MSG_SENDPAGE_NOTLAST : 0));
			if (ret <= 0)
				return ret ? ret : -EPIPE;
			off += ret;
			n -= ret;
		}
	}
	return 0;
#endif
}

/* --- <linux/hex.h> split out of kernel.h --------------------------- */
#ifdef HAVE_LINUX_HEX_H
#include <linux/hex.h>
#endif

/* --- 5.18: alloc_inode_sb ------------------------------------------ */
#ifndef HAVE_ALLOC_INODE_SB
#define alloc_inode_sb(sb, cache, gfp)	kmem_cache_alloc(cache, gfp)
#endif

/*
 * --- POSIX ACL inode operations -------------------------------------
 * 6.2: ->get_inode_acl(inode, type, rcu) and ->set_acl(idmap, dentry, ..),
 * the VFS routes system.posix_acl_* itself. Before: ->get_acl (5.15 added
 * rcu) and ->set_acl([userns,] inode, ..), routed by the kernel's
 * posix_acl_{access,default}_xattr_handler in s_xattr.
 * 7.0: posix_acl_to_xattr() allocates the buffer.
 */
#ifdef HAVE_INODE_ACL_OPS
#define POHMEL_IOP_GET_ACL(fn)	.get_inode_acl = (fn)
#define POHMEL_SET_ACL_PARAMS \
	POHMEL_IDMAP_PARAM struct dentry *dentry, struct posix_acl *acl, int type
#define pohmel_set_acl_inode()	d_inode(dentry)
#else
#define POHMEL_IOP_GET_ACL(fn)	.get_acl = (fn)
#define POHMEL_SET_ACL_PARAMS \
	POHMEL_IDMAP_PARAM struct inode *acl_inode, struct posix_acl *acl, \
	int type
#define pohmel_set_acl_inode()	acl_inode
#define POHMEL_ACL_XATTR_HANDLERS
#endif
#if defined(HAVE_INODE_ACL_OPS) || defined(HAVE_GET_ACL_RCU)
#define POHMEL_GET_ACL_PARAMS	struct inode *inode, int type, bool rcu
#define pohmel_get_acl_rcu()	(rcu)
#else
#define POHMEL_GET_ACL_PARAMS	struct inode *inode, int type
#define pohmel_get_acl_rcu()	false
#endif

struct posix_acl;
/* The xattr form of @acl in a kmalloc'ed buffer (size in *size), or NULL. */
void *pohmel_acl_to_xattr(const struct posix_acl *acl, size_t *size);

/* --- 6.3: <linux/filelock.h>; 6.9: struct file_lock_core ---------- */
#ifdef HAVE_LOCKS_IN_FILELOCK
#include <linux/filelock.h>
#endif
#ifdef HAVE_FILE_LOCK_CORE
#define pohmel_fl_type(fl)	((fl)->c.flc_type)
#define pohmel_fl_flags(fl)	((fl)->c.flc_flags)
#define pohmel_fl_owner(fl)	((fl)->c.flc_owner)
#define pohmel_fl_pid(fl)	((fl)->c.flc_pid)
#else
#define pohmel_fl_type(fl)	((fl)->fl_type)
#define pohmel_fl_flags(fl)	((fl)->fl_flags)
#define pohmel_fl_owner(fl)	((fl)->fl_owner)
#define pohmel_fl_pid(fl)	((fl)->fl_pid)
#endif

#endif /* POHMEL_COMPAT_H */
