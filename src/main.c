// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - module entry: wire layout checks, inode cache, filesystem type.
 */
#include <linux/build_bug.h>
#include <linux/module.h>
#include <linux/stddef.h>

#include "pohmel.h"

/* The wire structs must have exactly the sizes the header promises. */
static void __init pohmel_check_layout(void)
{
	BUILD_BUG_ON(sizeof(struct pohmel_hdr) != POHMEL_HDR_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_oid) != POHMEL_OID_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_time) != POHMEL_TIME_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_attr) != POHMEL_ATTR_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_hello) != POHMEL_HELLO_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_auth) != POHMEL_AUTH_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_name_req) != POHMEL_NAME_REQ_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_create) != POHMEL_CREATE_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_entry_reply) !=
		     POHMEL_ENTRY_REPLY_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_link) != POHMEL_LINK_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_rename) != POHMEL_RENAME_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_setattr) != POHMEL_SETATTR_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_readdir) != POHMEL_READDIR_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_readdir_reply) !=
		     POHMEL_READDIR_REPLY_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_dirent) != POHMEL_DIRENT_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_open) != POHMEL_OPEN_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_open_reply) !=
		     POHMEL_OPEN_REPLY_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_handle_req) !=
		     POHMEL_HANDLE_REQ_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_io) != POHMEL_IO_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_io_reply) != POHMEL_IO_REPLY_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_fsync) != POHMEL_FSYNC_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_statfs) != POHMEL_STATFS_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_xattr) != POHMEL_XATTR_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_xattr_reply) !=
		     POHMEL_XATTR_REPLY_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_lock) != POHMEL_LOCK_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_recall) != POHMEL_RECALL_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_idrange) != POHMEL_IDRANGE_SIZE);
	BUILD_BUG_ON(sizeof(struct pohmel_grant_req) != POHMEL_GRANT_REQ_SIZE);
	/* a few offsets both sides rely on */
	BUILD_BUG_ON(offsetof(struct pohmel_hdr, seq) != 16);
	BUILD_BUG_ON(offsetof(struct pohmel_attr, mode) != 88);
	BUILD_BUG_ON(offsetof(struct pohmel_hello, nonce) != 48);
	BUILD_BUG_ON(offsetof(struct pohmel_hello, key_len) != 20);
	BUILD_BUG_ON(offsetof(struct pohmel_dirent, cookie) != 120);
	BUILD_BUG_ON(POHMEL_OP_MAX != 36);
	BUILD_BUG_ON(pohmel_groups_size(POHMEL_MAX_GROUPS) > 136);
}

static int __init pohmel_init(void)
{
	int err;

	pohmel_check_layout();
	/* crypto that disagrees with pohmeld's must not reach a mount */
	err = pohmel_seal_selftest();
	if (err && err != -ENOENT)
		return err;
	if (err)
		pr_warn("self-test: hmac(sha256) missing: only mounts without a key work\n");
	pohmel_lock_init();
	err = pohmel_inode_cache_init();
	if (err)
		return err;
	err = register_filesystem(&pohmel_fs_type);
	if (err)
		goto err_cache;
	pr_info("version %s, protocol %d.%d loaded\n", POHMEL_VERSION,
		POHMEL_PROTO_MAJOR, POHMEL_PROTO_MINOR);
	return 0;

err_cache:
	pohmel_inode_cache_exit();
	return err;
}

static void __exit pohmel_exit(void)
{
	unregister_filesystem(&pohmel_fs_type);
	pohmel_inode_cache_exit();
}

module_init(pohmel_init);
module_exit(pohmel_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("POHMELFS network filesystem client");
MODULE_VERSION(POHMEL_VERSION);	/* from VERSION, see Kbuild */
MODULE_ALIAS_FS("pohmel");
MODULE_SOFTDEP("pre: hmac sha256");
