// SPDX-License-Identifier: MIT
/*
 * proto_check.c - the wire structs have the sizes the header promises.
 * Compiled into pohmeld: a mismatch fails the build.
 */
#include <stddef.h>
#include "pohmel_proto.h"

#define SIZE(s, n) _Static_assert(sizeof(struct s) == (n), #s " size")
SIZE(pohmel_hdr, POHMEL_HDR_SIZE);
SIZE(pohmel_oid, POHMEL_OID_SIZE);
SIZE(pohmel_time, POHMEL_TIME_SIZE);
SIZE(pohmel_attr, POHMEL_ATTR_SIZE);
SIZE(pohmel_hello, POHMEL_HELLO_SIZE);
SIZE(pohmel_auth, POHMEL_AUTH_SIZE);
SIZE(pohmel_name_req, POHMEL_NAME_REQ_SIZE);
SIZE(pohmel_remove_ext, POHMEL_REMOVE_EXT_SIZE);
SIZE(pohmel_create, POHMEL_CREATE_SIZE);
SIZE(pohmel_entry_reply, POHMEL_ENTRY_REPLY_SIZE);
SIZE(pohmel_link, POHMEL_LINK_SIZE);
SIZE(pohmel_rename, POHMEL_RENAME_SIZE);
SIZE(pohmel_setattr, POHMEL_SETATTR_SIZE);
SIZE(pohmel_readdir, POHMEL_READDIR_SIZE);
SIZE(pohmel_readdir_reply, POHMEL_READDIR_REPLY_SIZE);
SIZE(pohmel_dirent, POHMEL_DIRENT_SIZE);
SIZE(pohmel_open, POHMEL_OPEN_SIZE);
SIZE(pohmel_open_reply, POHMEL_OPEN_REPLY_SIZE);
SIZE(pohmel_handle_req, POHMEL_HANDLE_REQ_SIZE);
SIZE(pohmel_io, POHMEL_IO_SIZE);
SIZE(pohmel_io_reply, POHMEL_IO_REPLY_SIZE);
SIZE(pohmel_fsync, POHMEL_FSYNC_SIZE);
SIZE(pohmel_statfs, POHMEL_STATFS_SIZE);
SIZE(pohmel_xattr, POHMEL_XATTR_SIZE);
SIZE(pohmel_xattr_reply, POHMEL_XATTR_REPLY_SIZE);
SIZE(pohmel_lock, POHMEL_LOCK_SIZE);
SIZE(pohmel_recall, POHMEL_RECALL_SIZE);
SIZE(pohmel_idrange, POHMEL_IDRANGE_SIZE);
SIZE(pohmel_grant_req, POHMEL_GRANT_REQ_SIZE);

/* Offsets wire.h and proto.c hard-code. */
#define OFF(s, f, n) _Static_assert(offsetof(struct s, f) == (n), #s "." #f)
OFF(pohmel_hdr, seq, 16);
OFF(pohmel_attr, mode, 88);
OFF(pohmel_attr, grant, 112);
OFF(pohmel_hello, uuid, 24);
OFF(pohmel_hello, boot_gen, 40);
OFF(pohmel_hello, nonce, 48);
OFF(pohmel_hello, mac, 80);
OFF(pohmel_create, namelen, 36);
OFF(pohmel_link, namelen, 32);
OFF(pohmel_rename, oldlen, 36);
OFF(pohmel_setattr, size, 32);
OFF(pohmel_setattr, atime, 40);
OFF(pohmel_io, count, 32);
OFF(pohmel_xattr, namelen, 24);
OFF(pohmel_lock, type, 40);
OFF(pohmel_dirent, cookie, 120);

int proto_check_dummy;
