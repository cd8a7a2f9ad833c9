// SPDX-License-Identifier: GPL-2.0
/*
 * readdir.c - iterate_shared over server cookies.
 *
 * The server's cookies are opaque 64-bit values, so they are not used as
 * f_pos: positions are 2 + the index of the entry, and the open directory
 * remembers which cookie resumes at which position. A seek elsewhere
 * restarts from the beginning and skips (telldir/seekdir stay correct,
 * only slower). Entries carry their attributes (readdir-plus): inodes
 * already in the cache get them for free.
 *
 * Directory cache: a listing read from the start to the end while the
 * directory held one grant epoch is kept (struct pohmel_dcache) and is
 * complete while that epoch lasts: later listings are served from it and
 * a name it lacks does not exist (pohmel_lookup answers ENOENT without
 * asking). Our own namespace changes edit it (the server does not recall
 * its own holder); any other change recalls the grant, which drops it.
 * A listing is changed only under the directory's i_rwsem held exclusive
 * (create, unlink, rename...), and read under it shared (readdir,
 * lookup), so readers never see it change under them; an open directory
 * that started from a listing keeps a reference to it and goes on with
 * it, with positions 2 + entry index (removed entries stay as holes).
 *
 * Relisting: a small directory (at most POHMEL_RELIST_MAX entries) that
 * had a listing and lost it to someone else's change is read again whole
 * (one READDIR) at the next lookup that misses, instead of being looked
 * up name by name: after a recall, a stat of every entry costs one
 * request, not one per name. POHMEL_I_RELIST marks such a directory; a
 * relist that does not fit one reply clears it.
 *
 * Bounds: a listing holds at most dcache_max_entries entries (module
 * parameter, default POHMEL_DCACHE_ENTRIES; holes count) and
 * POHMEL_DCACHE_BYTES of entries. A directory that outgrows them is not
 * cached (a listing being read is dropped, a kept one that our own create
 * would push past them is forgotten): it is listed and looked up through
 * the server, correct, only slower. Names are found through a hash index
 * (open addressing on the name hash), so n creates in one directory cost
 * O(n), not O(n^2) scans of the listing.
 */
#include <linux/dcache.h>
#include <linux/fs.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/stringhash.h>

#include "pohmel.h"

#define POHMEL_READDIR_BYTES	(64 * 1024)
#define POHMEL_RELIST_MAX	128
#define POHMEL_DCACHE_ENTRIES	16384
#define POHMEL_DCACHE_BYTES	(2 << 20)

static unsigned int dcache_max = POHMEL_DCACHE_ENTRIES;
module_param_named(dcache_max_entries, dcache_max, uint, 0644);
MODULE_PARM_DESC(dcache_max_entries,
		 "largest directory listing kept in memory, in entries (default 16384)");

struct pohmel_dcache {
	struct kref ref;
	u64 epoch;			/* of the directory, when complete */
	u32 len;			/* bytes used in buf */
	u32 cap;
	u32 count;			/* entries, holes included */
	u8 *buf;			/* struct dc_ent, each padded to 8 */
	u32 *index;			/* offset + 1 of an entry, 0: free */
	u32 slots;			/* of index: a power of 2, >= 2 * count */
};

struct dc_ent {
	u64 ino;
	u64 gen;
	u32 hash;			/* full_name_hash(NULL, ...) */
	u16 namelen;
	u8 type;			/* DT_*; DT_UNKNOWN: a hole */
	u8 dead;
	char name[];
};

#define DC_ENT_SIZE(nl)		ALIGN(sizeof(struct dc_ent) + (nl), 8)

struct pohmel_dir_ctx {
	struct mutex lock;		/* protects pos, cookie, eof, dc... */
	loff_t pos;			/* position that @cookie resumes at */
	u64 cookie;
	bool eof;
	/*
	 * A broken server's listing stays broken at this position: the
	 * getdents that found it may have returned entries (which hides the
	 * error), so the next one must fail rather than end quietly.
	 */
	int err;
	struct pohmel_dcache *dc;	/* listing served from, or NULL */
	u32 dc_off;			/* byte offset of entry dc_pos - 2 */
	loff_t dc_pos;
	struct pohmel_dcache *build;	/* listing being read, or NULL */
	u64 build_epoch;
};

static struct pohmel_dcache *dcache_new(u64 epoch)
{
	struct pohmel_dcache *dc = kzalloc(sizeof(*dc), GFP_KERNEL);

	if (!dc)
		return NULL;
	kref_init(&dc->ref);
	dc->epoch = epoch;
	return dc;
}

static void dcache_release(struct kref *ref)
{
	struct pohmel_dcache *dc = container_of(ref, struct pohmel_dcache,
						ref);

	kvfree(dc->index);
	kvfree(dc->buf);
	kfree(dc);
}

void pohmel_dcache_put(struct pohmel_dcache *dc)
{
	if (dc)
		kref_put(&dc->ref, dcache_release);
}

static struct dc_ent *dc_at(struct pohmel_dcache *dc, u32 off)
{
	return (struct dc_ent *)(dc->buf + off);
}

static void index_put(u32 *index, u32 slots, u32 hash, u32 off)
{
	u32 i = hash & (slots - 1);

	while (index[i])
		i = (i + 1) & (slots - 1);
	index[i] = off + 1;
}

/* Room in the index for one more entry: at most half full. */
static bool index_grow(struct pohmel_dcache *dc)
{
	u32 slots = max_t(u32, dc->slots, 64), off;
	u32 *index;

	if (dc->slots && 2 * (dc->count + 1) <= dc->slots)
		return true;
	while (2 * (dc->count + 1) > slots)
		slots *= 2;
	index = kvcalloc(slots, sizeof(*index), GFP_KERNEL);
	if (!index)
		return false;
	for (off = 0; off < dc->len; off += DC_ENT_SIZE(dc_at(dc, off)->namelen))
		index_put(index, slots, dc_at(dc, off)->hash, off);
	kvfree(dc->index);
	dc->index = index;
	dc->slots = slots;
	return true;
}

/*
 * Append an entry; false (and the listing is no longer usable) on ENOMEM
 * or past the bounds (see the top).
 */
static bool dcache_append(struct pohmel_dcache *dc, const char *name,
			  u32 namelen, const struct pohmel_foid *oid, u8 type)
{
	u32 need = DC_ENT_SIZE(namelen);
	struct dc_ent *e;

	if (dc->count >= READ_ONCE(dcache_max) ||
	    dc->len + need > POHMEL_DCACHE_BYTES || !index_grow(dc))
		return false;
	if (dc->len + need > dc->cap) {
		u32 cap = max_t(u32, 2 * dc->cap, 4096);
		u8 *nb;

		while (cap < dc->len + need)
			cap *= 2;
		nb = kvmalloc(cap, GFP_KERNEL);
		if (!nb)
			return false;
		if (dc->len)
			memcpy(nb, dc->buf, dc->len);
		kvfree(dc->buf);
		dc->buf = nb;
		dc->cap = cap;
	}
	e = (struct dc_ent *)(dc->buf + dc->len);
	memset(e, 0, need);
	e->ino = oid->id;
	e->gen = oid->gen;
	e->hash = full_name_hash(NULL, name, namelen);
	e->namelen = namelen;
	e->type = type;
	memcpy(e->name, name, namelen);
	index_put(dc->index, dc->slots, e->hash, dc->len);
	dc->len += need;
	dc->count++;
	return true;
}

/* The entry named @name; a removed one (a hole) too if @holes. */
static struct dc_ent *dcache_find(struct pohmel_dcache *dc, const char *name,
				  u32 namelen, bool holes)
{
	u32 hash = full_name_hash(NULL, name, namelen), i, n = 0;
	struct dc_ent *e;

	if (!dc->slots)
		return NULL;
	for (i = hash & (dc->slots - 1); dc->index[i] && n < dc->slots;
	     i = (i + 1) & (dc->slots - 1), n++) {
		e = dc_at(dc, dc->index[i] - 1);
		if ((holes || !e->dead) && e->hash == hash &&
		    e->namelen == namelen && !memcmp(e->name, name, namelen))
			return e;
	}
	return NULL;
}

/* The complete listing of @dir if its grant epoch is @epoch, referenced. */
static struct pohmel_dcache *dcache_get(struct inode *dir, u64 epoch)
{
	struct pohmel_inode *pi = POHMEL_I(dir);
	struct pohmel_dcache *dc;

	spin_lock(&pi->lock);
	dc = pi->dcache;
	if (dc && epoch && dc->epoch == epoch)
		kref_get(&dc->ref);
	else
		dc = NULL;
	spin_unlock(&pi->lock);
	return dc;
}

/* Forget @dir's listing (it is no longer known to be complete). */
void pohmel_dcache_drop(struct inode *dir)
{
	struct pohmel_inode *pi = POHMEL_I(dir);
	struct pohmel_dcache *dc;

	spin_lock(&pi->lock);
	dc = pi->dcache;
	pi->dcache = NULL;
	spin_unlock(&pi->lock);
	pohmel_dcache_put(dc);
}

/*
 * Lookup of a name in @dir's listing valid under @epoch (caller holds
 * i_rwsem): 1 present (*@oid, if given, is its object), 0 absent,
 * -ENOENT: no complete listing.
 */
int pohmel_dcache_lookup(struct inode *dir, const struct qstr *name,
			 u64 epoch, struct pohmel_foid *oid)
{
	struct pohmel_dcache *dc = dcache_get(dir, epoch);
	struct dc_ent *e;

	if (!dc)
		return -ENOENT;
	e = dcache_find(dc, name->name, name->len, false);
	if (e && oid) {
		oid->id = e->ino;
		oid->gen = e->gen;
	}
	pohmel_dcache_put(dc);
	return e ? 1 : 0;
}

/*
 * Our own create/link/rename put @name in @dir (i_rwsem exclusive): the
 * listing, if any, gains it. A new, empty directory of ours starts one.
 * A name removed before (a rename over it, say) comes back in its old
 * place: a reader of the listing that passed it must not list it twice.
 */
void pohmel_dcache_add(struct inode *dir, const struct qstr *name,
		       const struct pohmel_fattr *fa)
{
	u64 epoch = pohmel_grant_epoch(dir);
	struct pohmel_dcache *dc = dcache_get(dir, epoch);
	struct dc_ent *e;

	if (!dc)
		return;
	e = dcache_find(dc, name->name, name->len, true);
	if (e) {
		e->ino = fa->oid.id;
		e->gen = fa->oid.gen;
		e->type = fs_umode_to_dtype(fa->mode);
		e->dead = 0;
		pohmel_dcache_put(dc);
		return;
	}
	if (!dcache_append(dc, name->name, name->len, &fa->oid,
			   fs_umode_to_dtype(fa->mode))) {
		pohmel_dcache_put(dc);
		pohmel_dcache_drop(dir);
		return;
	}
	if (dc->count > POHMEL_RELIST_MAX)
		clear_bit(POHMEL_I_RELIST, &POHMEL_I(dir)->flags);
	pohmel_dcache_put(dc);
}

/* Our own unlink/rmdir/rename took @name out of @dir (i_rwsem exclusive). */
void pohmel_dcache_remove(struct inode *dir, const struct qstr *name)
{
	struct pohmel_dcache *dc = dcache_get(dir, pohmel_grant_epoch(dir));
	struct dc_ent *e;

	if (!dc)
		return;
	e = dcache_find(dc, name->name, name->len, false);
	if (e)
		e->dead = 1;
	pohmel_dcache_put(dc);
}

/*
 * Is @dir known empty: a complete listing under its grant epoch, every
 * name in it removed (i_rwsem held)? false when unknown.
 */
bool pohmel_dcache_empty(struct inode *dir)
{
	struct pohmel_dcache *dc = dcache_get(dir, pohmel_grant_epoch(dir));
	struct dc_ent *e;
	bool empty = true;
	u32 off;

	if (!dc)
		return false;
	for (off = 0; off < dc->len && empty; off += DC_ENT_SIZE(e->namelen)) {
		e = dc_at(dc, off);
		empty = e->dead || e->type == DT_UNKNOWN;
	}
	pohmel_dcache_put(dc);
	return empty;
}

/* A directory we just made, granted: its (empty) listing is complete. */
void pohmel_dcache_new_dir(struct inode *dir)
{
	struct pohmel_inode *pi = POHMEL_I(dir);
	u64 epoch = pohmel_grant_epoch(dir);
	struct pohmel_dcache *dc, *old;

	if (!epoch)
		return;
	dc = dcache_new(epoch);
	if (!dc)
		return;
	spin_lock(&pi->lock);
	old = pi->dcache;
	pi->dcache = dc;
	spin_unlock(&pi->lock);
	pohmel_dcache_put(old);
	set_bit(POHMEL_I_RELIST, &pi->flags);
}

/* Install a listing read to the end under @epoch, if the epoch lasted. */
static void dcache_install(struct inode *dir, struct pohmel_dcache *dc)
{
	struct pohmel_inode *pi = POHMEL_I(dir);
	struct pohmel_dcache *old = NULL;

	if (pohmel_grant_epoch(dir) != dc->epoch)
		return;
	kref_get(&dc->ref);
	spin_lock(&pi->lock);
	if (pi->epoch == dc->epoch) {
		old = pi->dcache;
		pi->dcache = dc;
	} else {
		old = dc;
	}
	spin_unlock(&pi->lock);
	pohmel_dcache_put(old);
	if (dc->count <= POHMEL_RELIST_MAX)
		set_bit(POHMEL_I_RELIST, &pi->flags);
	else
		clear_bit(POHMEL_I_RELIST, &pi->flags);
}

/* Emit from a listing; returns 0, the caller saves the position. */
static int readdir_cached(struct pohmel_dir_ctx *dc, struct dir_context *ctx)
{
	struct pohmel_dcache *l = dc->dc;
	u32 off = 0;
	loff_t pos = 2;
	struct dc_ent *e;

	if (ctx->pos >= dc->dc_pos && dc->dc_pos >= 2) {
		off = dc->dc_off;
		pos = dc->dc_pos;
	}
	while (off < l->len && pos < ctx->pos) {
		e = (struct dc_ent *)(l->buf + off);
		off += DC_ENT_SIZE(e->namelen);
		pos++;
	}
	while (off < l->len) {
		e = (struct dc_ent *)(l->buf + off);
		if (!e->dead && !dir_emit(ctx, e->name, e->namelen, e->ino,
					  e->type))
			break;
		off += DC_ENT_SIZE(e->namelen);
		ctx->pos++;
	}
	dc->dc_off = off;
	dc->dc_pos = ctx->pos;
	return 0;
}

static unsigned char dt_of(u32 mode)
{
	return fs_umode_to_dtype(mode);
}

static int pohmel_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *dir = file_inode(file);
	struct pohmel_sb_info *sbi = POHMEL_SB(dir->i_sb);
	struct pohmel_dir_ctx *dc = file->private_data;
	struct pohmel_dirent_info e;
	struct pohmel_dir_iter it;
	struct pohmel_fattr fdir;
	loff_t skip = 0;
	u64 cookie;
	int err = 0;

	if (!dir_emit_dots(file, ctx))
		return 0;
	mutex_lock(&dc->lock);
	if (ctx->pos == 2 && !dc->dc) {
		u64 epoch = pohmel_grant_epoch(dir);

		dc->dc = dcache_get(dir, epoch);
		pohmel_dcache_put(dc->build);
		dc->build = NULL;
		/*
		 * Read it all under this epoch: keep the listing. Only if we
		 * may search the directory: the server leaves out entries
		 * it cannot open as a caller who may not.
		 */
		if (!dc->dc && epoch &&
		    !pohmel_permission_noidmap(dir, MAY_EXEC)) {
			dc->build = dcache_new(epoch);
			dc->build_epoch = epoch;
		}
	}
	if (dc->dc) {
		atomic64_inc(&sbi->stats.readdir_hits);
		err = readdir_cached(dc, ctx);
		goto out;
	}
	atomic64_inc(&sbi->stats.readdir_misses);
	if (ctx->pos == dc->pos) {
		err = dc->err;
		if (dc->eof || err)
			goto out;
		cookie = dc->cookie;
	} else {
		cookie = 0;
		skip = ctx->pos - 2;
		dc->eof = false;
		dc->err = 0;
	}
	/* a listing is built only from the start, in one run of positions */
	if (dc->build && (skip || ctx->pos != dc->pos ||
			  dc->build->count != ctx->pos - 2)) {
		pohmel_dcache_put(dc->build);
		dc->build = NULL;
	}
	for (;;) {
		u64 asked = cookie;
		bool any = false;

		err = pohmel_rpc_readdir(&sbi->conn, &POHMEL_I(dir)->oid,
					 cookie, min_t(u32, sbi->rsize,
						       POHMEL_READDIR_BYTES),
					 &it, &fdir);
		if (err)
			break;
		pohmel_refresh_inode(dir, &fdir, POHMEL_REFRESH_OWN);
		while (pohmel_dir_next(&it, &e)) {
			any = true;
			if (skip > 0) {
				skip--;
				cookie = e.cookie;
				continue;
			}
			if (!dir_emit(ctx, e.name, e.namelen, e.attr.oid.id,
				      dt_of(e.attr.mode))) {
				pohmel_dir_iter_end(&it);
				goto save;
			}
			if (dc->build &&
			    !dcache_append(dc->build, e.name, e.namelen,
					   &e.attr.oid, dt_of(e.attr.mode))) {
				pohmel_dcache_put(dc->build);
				dc->build = NULL;
			}
			pohmel_prime_inode(dir->i_sb, &e.attr);
			ctx->pos++;
			cookie = e.cookie;
		}
		if (it.eof) {
			pohmel_dir_iter_end(&it);
			dc->eof = true;
			if (dc->build)
				dcache_install(dir, dc->build);
			pohmel_dcache_put(dc->build);
			dc->build = NULL;
			break;
		}
		pohmel_dir_iter_end(&it);
		if (!any) {
			/* not at the end, yet nothing came: a broken server */
			pr_warn_ratelimited("%s (%pISpc): empty READDIR reply before the end of directory %llu\n",
					    pohmel_conn(dir)->name,
					    &pohmel_conn(dir)->addr,
					    POHMEL_I(dir)->oid.id);
			err = -EIO;
			break;
		}
		if (cookie == asked) {
			/*
			 * It resumes where we asked again: a broken server
			 * would have us list the same entries for ever.
			 */
			pr_warn_ratelimited("%s (%pISpc): READDIR of directory %llu does not advance\n",
					    pohmel_conn(dir)->name,
					    &pohmel_conn(dir)->addr,
					    POHMEL_I(dir)->oid.id);
			err = -EIO;
			dc->err = err;
			break;
		}
	}
save:
	dc->pos = ctx->pos;
	dc->cookie = cookie;
out:
	mutex_unlock(&dc->lock);
	return err;
}

/*
 * Read small directory @dir's whole listing again in one READDIR (caller
 * holds i_rwsem, shared at least; @epoch is the directory's grant epoch,
 * nonzero), if it is a relisting candidate (see the top). Entries' cached
 * inodes take their attributes and grants from it. Returns 0 when a
 * listing complete under @epoch is installed.
 */
int pohmel_dcache_relist(struct inode *dir, u64 epoch)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(dir->i_sb);
	struct pohmel_inode *pi = POHMEL_I(dir);
	struct pohmel_dirent_info e;
	struct pohmel_dir_iter it;
	struct pohmel_fattr fdir;
	struct pohmel_dcache *dc;
	int err;

	if (!test_bit(POHMEL_I_RELIST, &pi->flags) ||
	    pohmel_permission_noidmap(dir, MAY_EXEC))
		return -ENOENT;
	dc = dcache_new(epoch);
	if (!dc)
		return -ENOMEM;
	err = pohmel_rpc_readdir(&sbi->conn, &pi->oid, 0,
				 min_t(u32, sbi->rsize, POHMEL_READDIR_BYTES),
				 &it, &fdir);
	if (err)
		goto out_put;
	pohmel_refresh_inode(dir, &fdir, POHMEL_REFRESH_OWN);
	while (pohmel_dir_next(&it, &e)) {
		if (!dcache_append(dc, e.name, e.namelen, &e.attr.oid,
				   dt_of(e.attr.mode))) {
			err = -ENOMEM;
			break;
		}
		pohmel_prime_inode(dir->i_sb, &e.attr);
	}
	/* grown past one reply: back to lookups by name */
	if (!err && (!it.eof || dc->count > POHMEL_RELIST_MAX))
		err = -EFBIG;
	pohmel_dir_iter_end(&it);
	if (err)
		goto out_put;
	atomic64_inc(&sbi->stats.dir_relists);
	dcache_install(dir, dc);
	if (pohmel_grant_epoch(dir) != epoch)
		err = -ESTALE;
out_put:
	if (err == -EFBIG)
		clear_bit(POHMEL_I_RELIST, &pi->flags);
	pohmel_dcache_put(dc);
	return err;
}

static int pohmel_dir_open(struct inode *inode, struct file *file)
{
	struct pohmel_dir_ctx *dc;
	int err;

	err = pohmel_revalidate_inode(inode, false);
	if (err)
		return err;
	dc = kzalloc(sizeof(*dc), GFP_KERNEL);
	if (!dc)
		return -ENOMEM;
	mutex_init(&dc->lock);
	dc->pos = 2;
	file->private_data = dc;
	return 0;
}

static int pohmel_dir_release(struct inode *inode, struct file *file)
{
	struct pohmel_dir_ctx *dc = file->private_data;

	pohmel_dcache_put(dc->dc);
	pohmel_dcache_put(dc->build);
	kfree(dc);
	return 0;
}

/*
 * rewinddir()/seekdir(): a fresh start (position 2) may take a newer
 * listing, or go back to the server.
 */
static loff_t pohmel_dir_llseek(struct file *file, loff_t off, int whence)
{
	struct pohmel_dir_ctx *dc = file->private_data;
	loff_t ret = generic_file_llseek(file, off, whence);

	if (ret >= 0 && ret <= 2) {
		mutex_lock(&dc->lock);
		pohmel_dcache_put(dc->dc);
		dc->dc = NULL;
		dc->dc_pos = 0;
		dc->err = 0;	/* a rewind asks the server again */
		mutex_unlock(&dc->lock);
	}
	return ret;
}

/*
 * fsync(dir): the server makes the directory's entries stable (names
 * created, removed or renamed in it), as fsync(2) of a directory does
 * on ext4. Creates made locally (wb.c) are sent first, as before any
 * request; if the server's restart lost some of them, EIO (commit.c);
 * if the server refused one, its error, once per opener (errseq).
 */
static int pohmel_dir_fsync(struct file *file, loff_t start, loff_t end,
			    int datasync)
{
	struct inode *dir = file_inode(file);
	struct pohmel_fattr fa;
	int err, werr;

	err = pohmel_wb_attr_flush(dir);
	if (!err)
		err = pohmel_commit(dir, NULL, 0, &fa);
	werr = file_check_and_advance_wb_err(file);
	if (err)
		return err;
	if (werr)
		return werr;
	return pohmel_refresh_inode(dir, &fa, 0);
}

const struct file_operations pohmel_dir_fops = {
	.open		= pohmel_dir_open,
	.release	= pohmel_dir_release,
	.iterate_shared	= pohmel_readdir,
	.read		= generic_read_dir,
	.llseek		= pohmel_dir_llseek,
	.fsync		= pohmel_dir_fsync,
};
