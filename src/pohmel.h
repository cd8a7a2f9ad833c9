/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pohmel.h - the VFS side of pohmelfs: superblock, inode and open-file
 * state, and what the VFS files export to each other. The network is
 * reached only through rpc.h.
 */
#ifndef POHMEL_H
#define POHMEL_H

#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/socket.h>
#include <linux/spinlock.h>

#include "compat.h"
#include "conn.h"
#include "rpc.h"

#define POHMEL_SUPER_MAGIC	0x504f484d	/* "POHM" */
/*
 * How long fetched attributes and dentries are trusted without asking the
 * server when no grant covers them. Zero: the promise is that a stat or
 * read that starts after a change completed on another client sees it,
 * and no timeout can keep that promise; grants (POHMEL_FEAT_GRANTS) do,
 * and while one is held nothing is asked at all.
 */
#define POHMEL_ATTR_TIMEO	0
/* readahead window at its widest, in READs of rsize (super.c) */
#define POHMEL_RA_READS		8
/* statfs answers are reused this long with grants (free space only) */
#define POHMEL_STATFS_TIMEO	(5 * HZ)

struct pohmel_mount_opts {
	struct sockaddr_storage addr;	/* addr=, else the source's host */
	int addrlen;			/* 0 until one of them set it */
	bool addr_opt;			/* addr= given: HOST may be a name */
	char *path;			/* export path after "HOST:" */
	u16 port;
	u8 key[POHMEL_KEY_MAX];
	unsigned int keylen;
	char keyname[POHMEL_KEYNAME_MAX + 1];	/* keyname=, or "default" */
	int sec;			/* sec=: enum pohmel_sec, -1 unset */
	u64 ciphers;			/* cipher=: feature bits, 0 any */
	bool keyfile;			/* keyfile= seen (mount.pohmel's) */
	bool soft;
	bool cache_none;
	bool no_grants;			/* grants=off */
	bool writeback;			/* writeback=on: wb.c */
	unsigned int wb_delay;		/* seconds before the log is sent */
	unsigned int timeo;		/* seconds */
	u32 rsize;
	u32 wsize;
};

/* Client-side counters (the transport keeps its own in conn->stats). */
struct pohmel_vfs_stats {
	atomic64_t attr_hits;		/* attributes served from cache */
	atomic64_t attr_misses;		/* ... fetched from the server */
	atomic64_t dentry_hits;		/* d_revalidate without a lookup */
	atomic64_t dentry_rcu_hits;	/* ... of them, in RCU walk */
	atomic64_t dentry_misses;
	atomic64_t page_invalidations;	/* mapping dropped: change moved */
	atomic64_t bytes_read;
	atomic64_t bytes_written;
	atomic64_t direct_read;
	atomic64_t direct_written;
	atomic64_t open_hits;		/* open without OPEN (cached handle) */
	atomic64_t open_misses;
	atomic64_t readdir_hits;	/* listing served from the dir cache */
	atomic64_t readdir_misses;
	atomic64_t neg_lookup_hits;	/* missing name answered locally */
	atomic64_t dir_relists;		/* small listings read again whole */
	atomic64_t recall_drops;	/* recalls to NONE applied to an inode */
	atomic64_t unstable_pages;	/* written, pinned until committed */
	atomic64_t commits;		/* FSYNCs sent by commit.c */
	atomic64_t commit_resends;	/* pages sent again: verifier changed */
	atomic64_t commit_dropped;	/* pages given up: object gone (ESTALE) */
	atomic64_t wb_local;		/* objects created locally (wb.c) */
	atomic64_t wb_batches;		/* BATCHes of the log sent */
	atomic64_t wb_settled;		/* found applied after a lost reply */
	atomic64_t wb_attr_local;	/* setattrs done locally (wb_attr.c) */
	atomic64_t open_deferred;	/* a new file's OPEN left for first use */
	atomic64_t wb_flushed;		/* ... and their creates sent */
	atomic64_t wb_errors;		/* ... refused by the server */
	atomic64_t wb_removed;		/* unlinks, rmdirs made locally */
	atomic64_t wb_cancelled;	/* ... whose create never went */
	atomic64_t wb_data;		/* new files' data, attributes in */
					/* their create's BATCH */
};

/* The write-back log (wb.c, whose top says what each lock protects). */
struct pohmel_wb {
	struct mutex flush_mu;		/* one flush at a time, in order */
	struct mutex create_mu;		/* id taken to entry logged: wb.c */
	spinlock_t lock;		/* protects log, id_* */
	struct list_head log;		/* pohmel_wb_ent, oldest first */
	u64 id_next, id_end, id_gen;	/* delegated ids left */
	struct rw_semaphore grant_sem;	/* creators shared, RECALL excl */
	struct delayed_work age;	/* sends the log after wb_delay */
	struct work_struct reconnected;	/* sends what grants kept */
	/*
	 * st_size of a new directory on the server's filesystem (4096 on
	 * ext4), as its last MKDIR reply said: a local mkdir shows it too.
	 */
	u64 dir_size;
};

struct pohmel_sb_info {
	struct pohmel_conn conn;	/* first: transport of this mount */
	struct super_block *sb;
	struct pohmel_mount_opts opts;
	struct pohmel_foid root;
	unsigned long attr_timeo;	/* jiffies; 0 with cache=none */
	u32 rsize;
	u32 wsize;
	struct pohmel_vfs_stats stats;
	bool umounting;			/* kill_sb began: see write_inode */
	atomic64_t epochs;		/* source of pohmel_inode.epoch */
	atomic_t listed_handles;	/* on inode lists, open or idle */
	/* of those, OPENs deferred and never sent: no server handle */
	atomic_t deferred_handles;
	spinlock_t statfs_lock;		/* protects statfs, statfs_known */
	struct pohmel_fstatfs statfs;	/* last answer, for a server away */
	bool statfs_known;
	unsigned long statfs_time;	/* jiffies of that answer */
	time64_t mounted_at;		/* boot-time seconds (mountstats age) */
	struct pohmel_wb wb;		/* write-back log (wb.c) */
	spinlock_t wt_lock;		/* protects wt_state, wt_gen, committed */
	u8 wt_state;			/* POHMEL_WT_*, mount-wide: syncfs */
	u32 wt_gen;
	s64 committed;			/* conn.changes_done at the last FSYNC_FS */
};

/* Bits of pohmel_inode.flags */
enum {
	POHMEL_I_DATA_STALE,		/* change moved: drop the page cache */
	POHMEL_I_GRANT_REFUSED,		/* the last reply on this conn: NONE */
	POHMEL_I_RELIST,		/* dir: small, listed: relist on a miss */
	POHMEL_I_WB_NEW,		/* created locally by this mount (wb.c) */
};

/*
 * Closed files keep their handle idle on the inode (file.c) only while
 * fewer than this many are listed on the mount: the server caps a
 * session's open handles (4096 in pohmeld), and idle ones must never
 * use up what open files need.
 */
#define POHMEL_LISTED_HANDLES_MAX	1024

/*
 * An open handle on the server. Files hold one each; writeback borrows
 * a writable one from the inode (with a reference) and acts with the
 * credentials of whoever opened it.
 */
struct pohmel_handle {
	struct kref ref;
	struct list_head list;		/* pohmel_inode.handles; ->lock */
	struct pohmel_conn *conn;
	struct pohmel_foid oid;
	/*
	 * A new file's OPEN is sent when the handle is first used
	 * (pohmel_handle_ready): while deferred, handle is 0. open_mu
	 * serializes that OPEN; deferred goes false (release) after
	 * handle is set, and is read with acquire.
	 */
	struct mutex open_mu;
	bool deferred;
	bool closed;			/* by a removal (forget): no CLOSE */
	u64 handle;
	u32 flags;			/* POHMEL_OPEN_* */
	u32 want;			/* what the opener asked for */
	const struct cred *cred;
};

struct pohmel_wb_ent;

struct pohmel_inode {
	struct inode vfs_inode;
	struct pohmel_foid oid;
	/* lock protects: change, attr_time, handles, link */
	spinlock_t lock;
	u64 change;
	unsigned long attr_time;	/* jiffies of the last refresh; 0 stale */
	unsigned long flags;		/* POHMEL_I_* (atomic bitops) */
	struct list_head handles;
	char *link;			/* cached symlink target */
	bool new_inode;			/* set by iget's set(): I_NEW for us */
	/*
	 * Grant (POHMEL_GRANT_*) from the last reply, valid only while
	 * grant_gen is the connection's gen (grants end with it). epoch
	 * names one unbroken stretch of holding a grant: it changes each
	 * time a grant is taken after none, so a dentry (d_time) or a
	 * directory listing checked under an epoch is good while the epoch
	 * is. All under lock, like dcache (the pointer; the listing itself
	 * changes only under the directory's i_rwsem held exclusive).
	 */
	u32 grant;
	u32 grant_gen;
	u64 epoch;
	u64 attr_rseq;			/* arrival order of the reply applied */
	struct pohmel_dcache *dcache;	/* complete listing, or NULL */
	/*
	 * Not yet stable on the server (commit.c), under lock: the pinned
	 * folios of buffered WRITEs, and whether write-through WRITEs were
	 * applied since the last commit (wt_state, POHMEL_WT_*) under which
	 * verifier generation (wt_gen).
	 */
	struct list_head unstable;
	u32 wt_gen;
	u8 wt_state;
	/* attributes changed locally, not yet sent (wb_attr.c); under lock */
	struct pohmel_sattr dsa;
	const struct cred *dsa_cred;
	/* its create, while on the write-back log; under sbi->wb.lock */
	struct pohmel_wb_ent *wb_create;
	/* a directory's SETATTR entries on that log; under sbi->wb.lock */
	unsigned int wb_setattrs;
};

#define POHMEL_WT_NONE		0
#define POHMEL_WT_PENDING	1	/* applied under wt_gen */
#define POHMEL_WT_LOST		2	/* under two generations: lost */

static inline struct pohmel_inode *POHMEL_I(struct inode *inode)
{
	return container_of(inode, struct pohmel_inode, vfs_inode);
}

static inline struct pohmel_sb_info *POHMEL_SB(struct super_block *sb)
{
	return sb->s_fs_info;
}

static inline struct pohmel_conn *pohmel_conn(struct inode *inode)
{
	return &POHMEL_SB(inode->i_sb)->conn;
}

/* flags for pohmel_refresh_inode */
#define POHMEL_REFRESH_OWN	0x1	/* our own change: keep the cache */
/*
 * ... and it changed no ACL: a name made or removed in a directory, or
 * the object's own create from the write-back log (made with none)
 */
#define POHMEL_REFRESH_SAME_ACL	0x2

/* super.c */
extern struct file_system_type pohmel_fs_type;

/* inode.c */
struct inode *pohmel_iget(struct super_block *sb,
			  const struct pohmel_fattr *fa);
int pohmel_refresh_inode(struct inode *inode, const struct pohmel_fattr *fa,
			 unsigned int flags);
void pohmel_extend_size(struct inode *inode, loff_t end);
int pohmel_revalidate_inode(struct inode *inode, bool force);
int pohmel_revalidate_mapping(struct inode *inode);
int pohmel_revalidate_data(struct inode *inode);
void pohmel_invalidate_attrs(struct inode *inode);
void pohmel_take_grant(struct inode *inode, const struct pohmel_fattr *fa);
u32 pohmel_grant(struct inode *inode, u64 *epoch);
void pohmel_grant_ended(struct inode *inode);
u64 pohmel_grant_epoch(struct inode *inode);
u64 pohmel_dir_epoch(struct inode *dir);
void pohmel_recall_inode(struct super_block *sb,
			 const struct pohmel_recall *rec);
void pohmel_prime_inode(struct super_block *sb, const struct pohmel_fattr *fa);
struct inode *pohmel_ilookup(struct super_block *sb,
			     const struct pohmel_foid *oid);
struct inode *pohmel_alloc_inode(struct super_block *sb);
void pohmel_free_inode(struct inode *inode);
void pohmel_evict_inode(struct inode *inode);
int pohmel_inode_cache_init(void);
void pohmel_inode_cache_exit(void);
int pohmel_getattr(POHMEL_IDMAP_PARAM const struct path *path,
		   struct kstat *stat, u32 mask, unsigned int flags);
int pohmel_setattr(POHMEL_IDMAP_PARAM struct dentry *dentry,
		   struct iattr *attr);
extern const struct inode_operations pohmel_file_iops;
extern const struct inode_operations pohmel_symlink_iops;
extern const struct inode_operations pohmel_special_iops;

/* dir.c */
extern const struct inode_operations pohmel_dir_iops;
extern const struct dentry_operations pohmel_dops;

/* readdir.c */
extern const struct file_operations pohmel_dir_fops;
struct pohmel_dcache;
void pohmel_dcache_put(struct pohmel_dcache *dc);
void pohmel_dcache_drop(struct inode *dir);
int pohmel_dcache_lookup(struct inode *dir, const struct qstr *name,
			 u64 epoch, struct pohmel_foid *oid);
int pohmel_dcache_relist(struct inode *dir, u64 epoch);
void pohmel_dcache_add(struct inode *dir, const struct qstr *name,
		       const struct pohmel_fattr *fa);
void pohmel_dcache_remove(struct inode *dir, const struct qstr *name);
void pohmel_dcache_new_dir(struct inode *dir);
bool pohmel_dcache_empty(struct inode *dir);

/* file.c */
extern const struct file_operations pohmel_file_fops;
struct pohmel_handle *pohmel_get_handle(struct inode *inode, u32 want);
struct pohmel_handle *pohmel_reuse_handle(struct inode *inode, u32 want,
					  const struct cred *cred);
int pohmel_handle_open(struct pohmel_handle *h, u32 extra, u64 *handle,
		       struct pohmel_fattr *fa);
void pohmel_put_handle(struct pohmel_handle *h);
int pohmel_handle_ready(struct pohmel_handle *h);
int pohmel_handles_ready(struct inode *inode);
int pohmel_server_handles(struct pohmel_sb_info *sbi);
void pohmel_drop_idle_handles(struct inode *inode);
void pohmel_forget_begin(struct inode *inode, u16 op, struct pohmel_forget *fg);
void pohmel_forget_end(struct inode *inode, struct pohmel_forget *fg,
		       bool done);

/* addr.c */
bool pohmel_err_transient(int err);
extern const struct address_space_operations pohmel_aops;
extern const struct vm_operations_struct pohmel_vm_ops;
ssize_t pohmel_write_folios(struct inode *inode, struct folio **folios,
			    unsigned int nr, loff_t pos, size_t len, u32 flags);

/* xattr.c */
extern const struct xattr_handler *pohmel_xattr_handlers[];
ssize_t pohmel_listxattr(struct dentry *dentry, char *buf, size_t size);

/* acl.c */
struct posix_acl *pohmel_get_acl(POHMEL_GET_ACL_PARAMS);
int pohmel_set_acl(POHMEL_SET_ACL_PARAMS);
int pohmel_acl_create_mode(struct inode *dir, umode_t *mode);

/* lock.c */
void pohmel_lock_init(void);
int pohmel_lock(struct file *file, int cmd, struct file_lock *fl);
int pohmel_flock(struct file *file, int cmd, struct file_lock *fl);

/* commit.c */
struct pohmel_unstable;
u32 pohmel_verf_gen(struct inode *inode);
int pohmel_commit_fs(struct super_block *sb);
bool pohmel_sync_commits_all(struct inode *inode,
			     const struct writeback_control *wbc);

/* wb.c */
void pohmel_wb_init(struct pohmel_sb_info *sbi);
/* wb_attr.c */
int pohmel_wb_setattr(struct inode *inode, const struct iattr *attr);
int pohmel_wb_attr_flush(struct inode *inode);
void pohmel_wb_attr_reapply(struct inode *inode);
void pohmel_wb_attr_forget(struct inode *inode);
bool pohmel_same_caller(const struct cred *a, const struct cred *b);
void pohmel_wb_attr_refused(struct inode *inode, int err);
void pohmel_wb_attr_sent(struct inode *inode, const struct pohmel_sattr *sa,
			 const struct cred *cred);
void pohmel_sattr_merge(struct pohmel_sattr *to, const struct pohmel_sattr *sa);
void pohmel_wb_dir_apply(struct inode *dir, const struct pohmel_sattr *sa,
			 struct timespec64 now);
void pohmel_wb_dir_sent(struct inode *dir);
int pohmel_wb_dir_setattr(struct inode *dir, const struct pohmel_sattr *sa,
			  struct timespec64 now);
void pohmel_wb_attr_discard(struct inode *inode);

/* wb.c */
bool pohmel_wb_keeps_dirty(struct inode *inode);
/* wb_data.c */
bool pohmel_wb_data_waits(struct inode *inode);
void pohmel_wb_new_dir_size(struct pohmel_sb_info *sbi, u16 op,
			    const struct pohmel_fattr *obj);
int pohmel_wb_create(struct inode *dir, struct dentry *dentry, u16 op,
		     umode_t mode, dev_t rdev, const char *target);
int pohmel_wb_remove(struct inode *dir, struct dentry *dentry, u16 op);
int pohmel_wb_flush(struct pohmel_sb_info *sbi);
void pohmel_wb_flush_soon(struct pohmel_sb_info *sbi);
void pohmel_wb_recall_begin(struct pohmel_sb_info *sbi);
void pohmel_wb_recall_end(struct pohmel_sb_info *sbi);
void pohmel_wb_age(struct work_struct *work);
void pohmel_wb_reconnected_work(struct work_struct *work);
void pohmel_wb_shutdown(struct pohmel_sb_info *sbi);
void pohmel_touch_dir(struct inode *dir, const struct timespec64 *now);
bool pohmel_acl_create_plain(struct inode *dir, umode_t *mode);
ssize_t pohmel_write_ended(struct inode *inode, struct folio **folios,
			   unsigned int nr, loff_t pos, size_t len,
			   struct pohmel_unstable *u, u32 gen, ssize_t n);
struct pohmel_unstable *pohmel_unstable_alloc(unsigned int nr);
void pohmel_unstable_add(struct inode *inode, struct pohmel_unstable *u,
			 struct folio **folios, unsigned int nr, loff_t pos,
			 size_t len, u32 gen);
void pohmel_write_through_done(struct inode *inode, u32 gen);
bool pohmel_has_unstable(struct inode *inode);
int pohmel_commit(struct inode *inode, struct pohmel_handle *h, u32 flags,
		  struct pohmel_fattr *fa);
int pohmel_write_and_commit(struct inode *inode, struct pohmel_handle *h,
			    loff_t start, loff_t end, u32 flags,
			    struct pohmel_fattr *fa);
int pohmel_commit_inode(struct inode *inode);
void pohmel_unstable_truncate(struct inode *inode, loff_t size);
void pohmel_unstable_drop(struct inode *inode);

/* stats.c */
int pohmel_show_stats(struct seq_file *m, struct dentry *root);

#endif /* POHMEL_H */
