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
 */
#include <linux/fs.h>
#include <linux/slab.h>

#include "pohmel.h"

#define POHMEL_READDIR_BYTES	(64 * 1024)

struct pohmel_dir_ctx {
	struct mutex lock;		/* protects pos, cookie, eof */
	loff_t pos;			/* position that @cookie resumes at */
	u64 cookie;
	bool eof;
};

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
	if (ctx->pos == dc->pos) {
		if (dc->eof)
			goto out;
		cookie = dc->cookie;
	} else {
		cookie = 0;
		skip = ctx->pos - 2;
		dc->eof = false;
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
			pohmel_prime_inode(dir->i_sb, &e.attr);
			ctx->pos++;
			cookie = e.cookie;
		}
		if (it.eof) {
			pohmel_dir_iter_end(&it);
			dc->eof = true;
			break;
		}
		pohmel_dir_iter_end(&it);
		if (!any) {
			/* not at the end, yet nothing came: a broken server */
			pr_warn_ratelimited("empty READDIR reply before the end of directory %llu\n",
					    POHMEL_I(dir)->oid.id);
			err = -EIO;
			break;
		}
		if (cookie == asked) {
			/*
			 * It resumes where we asked again: a broken server
			 * would have us list the same entries for ever.
			 */
			pr_warn_ratelimited("READDIR of directory %llu does not advance\n",
					    POHMEL_I(dir)->oid.id);
			dc->eof = true;
			err = -EIO;
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
	kfree(file->private_data);
	return 0;
}

const struct file_operations pohmel_dir_fops = {
	.open		= pohmel_dir_open,
	.release	= pohmel_dir_release,
	.iterate_shared	= pohmel_readdir,
	.read		= generic_read_dir,
	.llseek		= generic_file_llseek,
	.fsync		= noop_fsync,
};
