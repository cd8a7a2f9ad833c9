// SPDX-License-Identifier: GPL-2.0
/*
 * super.c - mount options (fs_context), superblock set-up from the AUTH
 * reply's root attributes, statfs, show_options, unmount.
 *
 *   mount -t pohmel ADDR:/[PATH] MNT -o port=N,key=HEX,keyname=NAME,
 *                                      sec=seal|auth|none,soft|hard,timeo=S,
 *                                      cache=strict|none,rsize=B,wsize=B,
 *                                      grants=on|off
 */
#include <linux/backing-dev.h>
#include <linux/ctype.h>
#include <linux/cred.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/kernel.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/writeback.h>
#include <net/net_namespace.h>

#include "pohmel.h"

enum {
	OPT_PORT, OPT_KEY, OPT_KEYFILE, OPT_SOFT, OPT_HARD, OPT_TIMEO,
	OPT_CACHE, OPT_RSIZE, OPT_WSIZE, OPT_GRANTS, OPT_WRITEBACK,
	OPT_WB_DELAY, OPT_KEYNAME, OPT_SEC, OPT_CIPHER, OPT_ADDR,
};

enum { CACHE_STRICT, CACHE_NONE };
enum { GRANTS_ON, GRANTS_OFF };

static const struct constant_table pohmel_cache_modes[] = {
	{ "strict",	CACHE_STRICT },
	{ "none",	CACHE_NONE },
	{}
};

static const struct constant_table pohmel_grant_modes[] = {
	{ "on",		GRANTS_ON },
	{ "off",	GRANTS_OFF },
	{}
};

static const struct constant_table pohmel_sec_modes[] = {
	{ "none",	POHMEL_SEC_NONE },
	{ "auth",	POHMEL_SEC_AUTH },
	{ "seal",	POHMEL_SEC_SEAL },
	{}
};

static const char * const sec_names[] = {
	[POHMEL_SEC_NONE] = "none",
	[POHMEL_SEC_AUTH] = "auth",
	[POHMEL_SEC_SEAL] = "seal",
};

/* cipher=: the names mountstats shows; "any" lets the server choose */
static const struct constant_table pohmel_ciphers[] = {
	{ "any",		POHMEL_CIPHER_ANY },
	{ "aes-256-gcm",	POHMEL_FEAT_SEAL_AES },
	{ "chacha20-poly1305",	POHMEL_FEAT_SEAL_CHACHA },
	{}
};

static const struct fs_parameter_spec pohmel_params[] = {
	fsparam_u32("port", OPT_PORT),
	fsparam_string("addr", OPT_ADDR),
	fsparam_string("key", OPT_KEY),
	fsparam_string("keyfile", OPT_KEYFILE),
	fsparam_string("keyname", OPT_KEYNAME),
	fsparam_enum("sec", OPT_SEC, pohmel_sec_modes),
	fsparam_enum("cipher", OPT_CIPHER, pohmel_ciphers),
	fsparam_flag("soft", OPT_SOFT),
	fsparam_flag("hard", OPT_HARD),
	fsparam_u32("timeo", OPT_TIMEO),
	fsparam_enum("cache", OPT_CACHE, pohmel_cache_modes),
	fsparam_u32("rsize", OPT_RSIZE),
	fsparam_u32("wsize", OPT_WSIZE),
	fsparam_enum("grants", OPT_GRANTS, pohmel_grant_modes),
	fsparam_enum("writeback", OPT_WRITEBACK, pohmel_grant_modes),
	fsparam_u32("wb_delay", OPT_WB_DELAY),
	{}
};

static int parse_key(struct fs_context *fc, struct pohmel_mount_opts *o,
		     const char *hex)
{
	size_t n = strlen(hex);

	if (n < 2 * POHMEL_KEY_MIN || n > 2 * POHMEL_KEY_MAX || n % 2 ||
	    hex2bin(o->key, hex, n / 2))
		return invalf(fc, "pohmel: key= wants %d..%d hexadecimal digits (an even number)",
			      2 * POHMEL_KEY_MIN, 2 * POHMEL_KEY_MAX);
	o->keylen = n / 2;
	return 0;
}

/* What the server's key file allows: 1..64 of [A-Za-z0-9._-]. */
static int parse_keyname(struct fs_context *fc, struct pohmel_mount_opts *o,
			 const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < n; i++)
		if (!isalnum(name[i]) && !strchr("._-", name[i]))
			break;
	if (!n || n > POHMEL_KEYNAME_MAX || i < n)
		return invalf(fc, "pohmel: keyname= wants 1..%d of A-Z a-z 0-9 . _ -",
			      POHMEL_KEYNAME_MAX);
	strscpy(o->keyname, name, sizeof(o->keyname));
	return 0;
}

/*
 * An IPv4 or IPv6 literal (hlen bytes at host; IPv6 may be in brackets)
 * into o->addr, the port set later (parse_source). False if it is none.
 */
static bool parse_addr(struct pohmel_mount_opts *o, const char *host,
		       size_t hlen)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&o->addr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&o->addr;
	bool br = hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']';

	if (br) {
		host++;
		hlen -= 2;
	}
	memset(&o->addr, 0, sizeof(o->addr));
	if (!br && in4_pton(host, hlen, (u8 *)&sin->sin_addr.s_addr, -1,
			    NULL)) {
		sin->sin_family = AF_INET;
		o->addrlen = sizeof(*sin);
		return true;
	}
	if (in6_pton(host, hlen, sin6->sin6_addr.s6_addr, -1, NULL)) {
		sin6->sin6_family = AF_INET6;
		o->addrlen = sizeof(*sin6);
		return true;
	}
	o->addrlen = 0;
	return false;
}

static int pohmel_parse_param(struct fs_context *fc,
			      struct fs_parameter *param)
{
	struct pohmel_sb_info *sbi = fc->s_fs_info;
	struct pohmel_mount_opts *o = &sbi->opts;
	struct fs_parse_result r;
	int opt;

	if (!sbi)	/* remount: connection parameters stay as they are */
		return 0;
	opt = fs_parse(fc, pohmel_params, param, &r);
	if (opt < 0)
		return opt;
	switch (opt) {
	case OPT_PORT:
		if (!r.uint_32 || r.uint_32 > 65535)
			return invalf(fc, "pohmel: port=%u is not a TCP port (1..65535)",
				      r.uint_32);
		o->port = r.uint_32;
		break;
	case OPT_ADDR:
		if (!parse_addr(o, param->string, strlen(param->string)))
			return invalf(fc, "pohmel: addr=%s is not an IPv4 or IPv6 address",
				      param->string);
		o->addr_opt = true;
		break;
	case OPT_KEY:
		return parse_key(fc, o, param->string);
	case OPT_KEYFILE:
		o->keyfile = true;
		break;
	case OPT_KEYNAME:
		return parse_keyname(fc, o, param->string);
	case OPT_SEC:
		o->sec = r.uint_32;
		break;
	case OPT_CIPHER:
		o->ciphers = r.uint_32;
		break;
	case OPT_SOFT:
		o->soft = true;
		break;
	case OPT_HARD:
		o->soft = false;
		break;
	case OPT_TIMEO:
		if (!r.uint_32 || r.uint_32 > 24 * 3600)
			return invalf(fc, "pohmel: timeo=%u must be 1..86400 seconds",
				      r.uint_32);
		o->timeo = r.uint_32;
		break;
	case OPT_CACHE:
		o->cache_none = r.uint_32 == CACHE_NONE;
		break;
	case OPT_GRANTS:
		o->no_grants = r.uint_32 == GRANTS_OFF;
		break;
	case OPT_WRITEBACK:
		o->writeback = r.uint_32 == GRANTS_ON;
		break;
	case OPT_WB_DELAY:
		if (!r.uint_32 || r.uint_32 > 3600)
			return invalf(fc, "pohmel: wb_delay=%u must be 1..3600 seconds",
				      r.uint_32);
		o->wb_delay = r.uint_32;
		break;
	case OPT_RSIZE:
	case OPT_WSIZE:
		if (r.uint_32 < PAGE_SIZE || r.uint_32 > POHMEL_MAX_DATA)
			return invalf(fc, "pohmel: %s=%u must be %lu..%u bytes",
				      param->key, r.uint_32, PAGE_SIZE,
				      POHMEL_MAX_DATA);
		if (opt == OPT_RSIZE)
			o->rsize = rounddown(r.uint_32, PAGE_SIZE);
		else
			o->wsize = rounddown(r.uint_32, PAGE_SIZE);
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

/*
 * "HOST:/path": HOST an IPv4 literal or an [IPv6] literal; or, with addr=
 * (mount.pohmel resolves HOST and passes the address and port=), the spec
 * as the user wrote it, "name:/path" or "name:port:/path", so that
 * /proc/mounts shows the fstab source (mount -a and umount HOST:/ find
 * it) and addr= the address, as NFS does.
 */
static int parse_source(struct fs_context *fc, struct pohmel_mount_opts *o)
{
	const char *src = fc->source, *path, *hend;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&o->addr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&o->addr;

	if (!src)
		return invalf(fc, "pohmel: no source: mount -t pohmel ADDR:/ DIR");
	/* an IPv6 address holds no '/': the first ":/" ends the host part */
	path = strstr(src, ":/");
	if (!path || path == src)
		goto bad;
	path++;
	if (!o->addr_opt) {
		hend = src[0] == '[' ? strchr(src, ']') : path - 1;
		if (!hend || hend + (src[0] == '[') != path - 1 ||
		    !parse_addr(o, src, path - 1 - src))
			goto bad;
	}
	if (o->addr.ss_family == AF_INET)
		sin->sin_port = htons(o->port);
	else
		sin6->sin6_port = htons(o->port);
	o->path = kstrdup(path, GFP_KERNEL);
	return o->path ? 0 : -ENOMEM;
bad:
	return invalf(fc,
		      "pohmel: source '%s' is not HOST:/PATH with an IPv4 or [IPv6] literal, or a name with addr= (mount.pohmel resolves names)",
		      src);
}

static const char *connect_hint(int err)
{
	switch (err) {
	case -ECONNREFUSED:
		return "connection refused: is pohmeld running and listening on that port (port=)?";
	case -EHOSTUNREACH:
	case -ENETUNREACH:
		return "server unreachable: check the address and the network";
	case -ETIMEDOUT:
		return "no answer in time: check the address, port= and firewalls";
	case -EKEYREJECTED:
		return "authentication refused: client and server must use the same key under the same name (key=, keyname=, or keyfile= through mount.pohmel)";
	case -EPROTONOSUPPORT:
	case -EPROTO:
		return "not a compatible pohmeld at that address and port";
	default:
		return "could not connect";
	}
}

/* Walk a non-root export path component by component. */
static int walk_path(struct pohmel_sb_info *sbi, struct pohmel_fattr *fa)
{
	char *p = sbi->opts.path, *comp;
	int err;

	while ((comp = strsep(&p, "/"))) {
		if (!*comp || !strcmp(comp, "."))
			continue;
		if (!S_ISDIR(fa->mode))
			return -ENOTDIR;
		err = pohmel_rpc_lookup(&sbi->conn, &fa->oid, comp,
					strlen(comp), fa);
		if (err)
			return err;
	}
	return S_ISDIR(fa->mode) ? 0 : -ENOTDIR;
}

static int pohmel_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(dentry->d_sb);
	struct pohmel_fstatfs st;
	int err;

	/*
	 * Free space is no part of what grants cover; with grants a recent
	 * answer (POHMEL_STATFS_TIMEO) is reused, so that a cached tree
	 * walk (find calls fstatfs) costs no request at all.
	 */
	if (pohmel_conn_grants(&sbi->conn) && sbi->statfs_known &&
	    time_before(jiffies, READ_ONCE(sbi->statfs_time) +
			POHMEL_STATFS_TIMEO)) {
		spin_lock(&sbi->statfs_lock);
		st = sbi->statfs;
		spin_unlock(&sbi->statfs_lock);
	} else if (pohmel_conn_is_up(&sbi->conn) || !sbi->statfs_known) {
		err = pohmel_rpc_statfs(&sbi->conn,
					&POHMEL_I(d_inode(dentry))->oid, &st);
		if (err)
			return err;
		spin_lock(&sbi->statfs_lock);
		sbi->statfs = st;
		sbi->statfs_known = true;
		WRITE_ONCE(sbi->statfs_time, jiffies);
		spin_unlock(&sbi->statfs_lock);
	} else {
		/* the server is away: umount(8) calls statfs first */
		spin_lock(&sbi->statfs_lock);
		st = sbi->statfs;
		spin_unlock(&sbi->statfs_lock);
	}
	buf->f_type = POHMEL_SUPER_MAGIC;
	buf->f_bsize = st.bsize;
	buf->f_frsize = st.bsize;
	buf->f_blocks = st.blocks;
	buf->f_bfree = st.bfree;
	buf->f_bavail = st.bavail;
	buf->f_files = st.files;
	buf->f_ffree = st.ffree;
	buf->f_namelen = min_t(u32, st.namelen, POHMEL_NAME_MAX);
	return 0;
}

static int pohmel_show_options(struct seq_file *m, struct dentry *root)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(root->d_sb);
	struct pohmel_mount_opts *o = &sbi->opts;

	/* the key is never shown; addr= always, as NFS does */
	seq_printf(m, ",addr=%pISc,port=%u,%s,timeo=%u,cache=%s,rsize=%u,wsize=%u,grants=%s",
		   &o->addr, o->port, o->soft ? "soft" : "hard", o->timeo,
		   o->cache_none ? "none" : "strict", sbi->rsize, sbi->wsize,
		   pohmel_conn_grants(&sbi->conn) ? "on" : "off");
	if (o->writeback)
		seq_printf(m, ",writeback=on,wb_delay=%u", o->wb_delay);
	if (!o->keylen) {
		seq_puts(m, ",sec=none");
		return 0;
	}
	seq_printf(m, ",keyname=%s,sec=%s", o->keyname, sec_names[o->sec]);
	/* cipher= only when the mount restricted it */
	if (o->ciphers == POHMEL_FEAT_SEAL_AES)
		seq_puts(m, ",cipher=aes-256-gcm");
	else if (o->ciphers == POHMEL_FEAT_SEAL_CHACHA)
		seq_puts(m, ",cipher=chacha20-poly1305");
	return 0;
}

/* umount -f: whatever waits for the server fails now. */
static void pohmel_umount_begin(struct super_block *sb)
{
	pohmel_conn_abort(&POHMEL_SB(sb)->conn);
}

/*
 * The flusher's second step after writing an inode's pages: commit them
 * (commit.c), and what a server restart lost is written again.
 */
static int pohmel_write_inode(struct inode *inode,
			      struct writeback_control *wbc)
{
	int err;

	/* changed locally (wb_attr.c): sent after the pages, just written */
	if (pohmel_conn_is_up(pohmel_conn(inode)) ||
	    !READ_ONCE(POHMEL_SB(inode->i_sb)->umounting)) {
		err = pohmel_wb_attr_flush(inode);
		if (err)
			return err;
	}
	if (!S_ISREG(inode->i_mode) || !pohmel_has_unstable(inode))
		return 0;
	/* sync(2), syncfs(2): their FSYNC_FS commits every inode at once */
	if (pohmel_sync_commits_all(inode, wbc))
		return 0;
	/*
	 * Unmounting from a server that is not there: what it applied is
	 * lost only if its machine crashed; waiting (a hard mount: for
	 * ever) would make umount hang on every file written before.
	 */
	if (READ_ONCE(POHMEL_SB(inode->i_sb)->umounting) &&
	    !pohmel_conn_is_up(pohmel_conn(inode))) {
		pr_warn_ratelimited("%s (%pISpc): umount: server unreachable: written data not committed to its stable storage\n",
				    pohmel_conn(inode)->name,
				    &pohmel_conn(inode)->addr);
		return 0;
	}
	err = pohmel_commit_inode(inode);
	if (err && pohmel_has_unstable(inode))
		__mark_inode_dirty(inode, I_DIRTY_DATASYNC);	/* again later */
	return err;
}

/*
 * sync(2), syncfs(2): after every inode's pages were written and
 * committed (write_inode), the server syncs the whole export, so names
 * created, removed and renamed are stable too.
 */
static int pohmel_sync_fs(struct super_block *sb, int wait)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(sb);

	if (!wait || !(READ_ONCE(sbi->conn.sess.features) &
		       POHMEL_FEAT_STABLE))
		return 0;
	/* see write_inode: umount does not wait for a server that is gone */
	if (READ_ONCE(sbi->umounting) && !pohmel_conn_is_up(&sbi->conn))
		return 0;
	return pohmel_commit_fs(sb);
}

static const struct super_operations pohmel_sops = {
	.umount_begin	= pohmel_umount_begin,
	.alloc_inode	= pohmel_alloc_inode,
	.free_inode	= pohmel_free_inode,
	.evict_inode	= pohmel_evict_inode,
	.write_inode	= pohmel_write_inode,
	.sync_fs	= pohmel_sync_fs,
	.statfs		= pohmel_statfs,
	.show_options	= pohmel_show_options,
	.show_stats	= pohmel_show_stats,
};

/* What was made under a grant goes out before the grant does. */
static void pohmel_recall(void *priv, const struct pohmel_recall *rec)
{
	struct pohmel_sb_info *sbi = priv;

	pohmel_wb_recall_begin(sbi);
	pohmel_recall_inode(sbi->sb, rec);
	pohmel_wb_recall_end(sbi);
}

static const struct pohmel_conn_ops pohmel_conn_ops = {
	.recall = pohmel_recall,
};

static int pohmel_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct pohmel_sb_info *sbi = sb->s_fs_info;
	struct pohmel_mount_opts *o = &sbi->opts;
	struct pohmel_conn *c = &sbi->conn;
	struct pohmel_fattr fa;
	struct inode *root;
	int err;

	sbi->sb = sb;
	sbi->mounted_at = ktime_get_boottime_seconds();
	sb->s_magic = POHMEL_SUPER_MAGIC;
	sb->s_op = &pohmel_sops;
	sb->s_xattr = pohmel_xattr_handlers;
	sb->s_maxbytes = MAX_LFS_FILESIZE;
	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_flags |= SB_POSIXACL;
	sb->s_time_gran = 1;
	sb->s_time_min = S64_MIN;
	sb->s_time_max = S64_MAX;
	set_default_d_op(sb, &pohmel_dops);
	err = super_setup_bdi(sb);
	if (err)
		return err;

	memcpy(&c->addr, &o->addr, sizeof(c->addr));
	c->addrlen = o->addrlen;
	strscpy(c->name, fc->source, sizeof(c->name));
	c->soft = o->soft;
	c->timeo = (unsigned long)o->timeo * HZ;
	memcpy(c->sess.key, o->key, o->keylen);
	c->sess.keylen = o->keylen;
	c->sess.keyname_len = strscpy(c->sess.keyname, o->keyname,
				      sizeof(c->sess.keyname));
	c->sess.sec = o->sec;
	c->sess.ciphers = o->ciphers;
	c->ops = &pohmel_conn_ops;
	c->priv = sbi;
	/* cache=none caches nothing, so it has nothing to hold grants for */
	c->grants = !o->no_grants && !o->cache_none;
	c->writeback = o->writeback && c->grants;
	err = pohmel_conn_start(c);
	/*
	 * A refused key: mount(8) takes EACCES for a write-protected device
	 * ("cannot mount read-only", "is write-protected"); EKEYREJECTED
	 * says what happened.
	 */
	if (err == -EACCES)
		err = -EKEYREJECTED;
	if (err) {
		pr_err("mount %s: %pISpc: %s (error %d)\n", fc->source,
		       &o->addr, c->why ?: connect_hint(err), err);
		return err;
	}
	sbi->rsize = min_t(u32, o->rsize, c->sess.max_msg - 4096);
	sbi->wsize = min_t(u32, o->wsize, c->sess.max_msg - 4096);
	sbi->rsize = rounddown(sbi->rsize, PAGE_SIZE);
	sbi->wsize = rounddown(sbi->wsize, PAGE_SIZE);
	/*
	 * The VFS grows a sequential reader's window up to ra_pages; with
	 * READs that do not wait (addr.c), up to POHMEL_RA_READS of them are
	 * in flight at its widest (read_ahead_kb in sysfs changes it).
	 */
	sb->s_bdi->ra_pages = max_t(unsigned long, sb->s_bdi->ra_pages,
				    POHMEL_RA_READS * sbi->rsize / PAGE_SIZE);
	sb->s_bdi->io_pages = sbi->rsize / PAGE_SIZE;

	pohmel_decode_attr(c->sess.root_attr, &fa);
	err = walk_path(sbi, &fa);
	if (err) {
		pr_err("mount %s: export path %s: error %d\n", fc->source,
		       o->path, err);
		return err;
	}
	sbi->root = fa.oid;
	root = pohmel_iget(sb, &fa);
	if (IS_ERR(root))
		return PTR_ERR(root);
	sb->s_root = d_make_root(root);
	if (!sb->s_root)
		return -ENOMEM;
	/* prime the statfs cache used while the server is away */
	{
		struct kstatfs kst;

		pohmel_statfs(sb->s_root, &kst);
	}
	return 0;
}

static int pohmel_get_tree(struct fs_context *fc)
{
	struct pohmel_sb_info *sbi = fc->s_fs_info;
	struct pohmel_mount_opts *o = &sbi->opts;
	int err;

	if (o->keyfile && !o->keylen)
		return invalf(fc,
			      "pohmel: keyfile= is read by mount.pohmel; the kernel needs key=HEX");
	/* a key means sealed unless asked otherwise; no key, nothing */
	if (o->sec < 0)
		o->sec = o->keylen ? POHMEL_SEC_SEAL : POHMEL_SEC_NONE;
	if (o->sec != POHMEL_SEC_NONE && !o->keylen)
		return invalf(fc,
			      "pohmel: sec=%s needs a key (key=, or keyfile= through mount.pohmel)",
			      sec_names[o->sec]);
	if (o->ciphers != POHMEL_CIPHER_ANY && o->sec == POHMEL_SEC_NONE)
		return invalf(fc, "pohmel: cipher= needs sec=seal or sec=auth");
	if (!o->keyname[0])
		strscpy(o->keyname, "default", sizeof(o->keyname));
	err = parse_source(fc, &sbi->opts);
	if (err)
		return err;
	sbi->attr_timeo = sbi->opts.cache_none ? 0 : POHMEL_ATTR_TIMEO;
	return get_tree_nodev(fc, pohmel_fill_super);
}

static void pohmel_free_sbi(struct pohmel_sb_info *sbi)
{
	if (!sbi)
		return;
	if (sbi->conn.recall_wq)	/* the connection never started */
		destroy_workqueue(sbi->conn.recall_wq);
	if (sbi->conn.io_wq)
		destroy_workqueue(sbi->conn.io_wq);
	kfree(sbi->opts.path);
	if (sbi->conn.net)
		put_net(sbi->conn.net);
	memzero_explicit(sbi->opts.key, sizeof(sbi->opts.key));
	memzero_explicit(sbi->conn.sess.key, sizeof(sbi->conn.sess.key));
	kfree(sbi);
}

static void pohmel_free_fc(struct fs_context *fc)
{
	pohmel_free_sbi(fc->s_fs_info);
}

static int pohmel_reconfigure(struct fs_context *fc)
{
	/* the connection parameters are fixed at mount time */
	sync_filesystem(fc->root->d_sb);
	return 0;
}

static const struct fs_context_operations pohmel_context_ops = {
	.parse_param	= pohmel_parse_param,
	.get_tree	= pohmel_get_tree,
	.reconfigure	= pohmel_reconfigure,
	.free		= pohmel_free_fc,
};

static int pohmel_init_fs_context(struct fs_context *fc)
{
	struct pohmel_sb_info *sbi;

	if (fc->purpose == FS_CONTEXT_FOR_RECONFIGURE) {
		fc->ops = &pohmel_context_ops;
		return 0;
	}
	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	if (pohmel_conn_init(&sbi->conn)) {
		kfree(sbi);
		return -ENOMEM;
	}
	/*
	 * The mounter's network namespace, as NFS does: a mount made in a
	 * container reaches the server through the container's network.
	 */
	sbi->conn.net = get_net(fc->net_ns);
	spin_lock_init(&sbi->statfs_lock);
	spin_lock_init(&sbi->wt_lock);
	pohmel_wb_init(sbi);
	sbi->opts.wb_delay = 5;
	sbi->opts.port = POHMEL_DEFAULT_PORT;
	sbi->opts.timeo = 60;
	sbi->opts.sec = -1;
	sbi->opts.rsize = POHMEL_MAX_DATA;
	sbi->opts.wsize = POHMEL_MAX_DATA;
	fc->s_fs_info = sbi;
	fc->ops = &pohmel_context_ops;
	return 0;
}

static void pohmel_kill_sb(struct super_block *sb)
{
	struct pohmel_sb_info *sbi = sb->s_fs_info;
	struct pohmel_conn *c = &sbi->conn;

	/* no recall may look at the superblock once it is going */
	pohmel_conn_stop_recalls(c);
	WRITE_ONCE(sbi->umounting, true);
	/* the log holds inodes: sent (or dropped) before they are evicted */
	if (sb->s_root)
		pohmel_wb_shutdown(sbi);
	kill_anon_super(sb);
	/* say goodbye if the server is there, but never wait for long */
	if (READ_ONCE(c->up)) {
		c->soft = true;
		c->timeo = 2 * HZ;
		pohmel_rpc_bye(c);
	}
	pohmel_conn_stop(c);
	cancel_work_sync(&sbi->wb.reconnected);	/* none is queued now */
	pohmel_free_sbi(sbi);
}

struct file_system_type pohmel_fs_type = {
	.owner			= THIS_MODULE,
	.name			= "pohmel",
	.init_fs_context	= pohmel_init_fs_context,
	.parameters		= pohmel_params,
	.kill_sb		= pohmel_kill_sb,
};
