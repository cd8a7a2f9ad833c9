// SPDX-License-Identifier: MIT
/*
 * encode.c - libpohmel's request body encoders, one per body struct of
 * pohmel_proto.h. Pure functions over a buffer, so tests/test_proto.c can
 * feed their output straight into pohmeld's decoder.
 */
#include <string.h>
#include "libpohmel.h"

uint32_t pc_enc_oid(uint8_t *b, const struct woid *o)
{
	woid_put(b, o);
	return POHMEL_OID_SIZE;
}

uint32_t pc_enc_name_req(uint8_t *b, const struct woid *dir,
			 const char *name, uint32_t nl)
{
	memset(b, 0, POHMEL_NAME_REQ_SIZE);
	woid_put(b, dir);
	put16(b + 16, (uint16_t)nl);
	memcpy(b + POHMEL_NAME_REQ_SIZE, name, nl);
	return POHMEL_NAME_REQ_SIZE + nl;
}

/* UNLINK/RMDIR with POHMEL_REMOVE_* (1.4): obj and n handles before
 * the name; flags 0: as pc_enc_name_req. */
uint32_t pc_enc_remove(uint8_t *b, const struct woid *dir, const char *name,
		       uint32_t nl, uint32_t flags, const struct woid *obj,
		       const uint64_t *h, uint32_t n)
{
	uint32_t i, off = POHMEL_NAME_REQ_SIZE;

	memset(b, 0, POHMEL_NAME_REQ_SIZE);
	woid_put(b, dir);
	put16(b + 16, (uint16_t)nl);
	put16(b + 18, (uint16_t)n);
	put32(b + 20, flags);
	if (flags) {
		woid_put(b + off, obj);
		off += POHMEL_REMOVE_EXT_SIZE;
		for (i = 0; i < n; i++, off += 8)
			put64(b + off, h[i]);
	}
	memcpy(b + off, name, nl);
	return off + nl;
}

uint32_t pc_enc_setattr(uint8_t *b, const struct woid *o, uint32_t valid,
			uint32_t mode, uint32_t uid, uint32_t gid,
			uint64_t size, const struct wtime *at,
			const struct wtime *mt)
{
	static const struct wtime zero;

	woid_put(b, o);
	put32(b + 16, valid);
	put32(b + 20, mode);
	put32(b + 24, uid);
	put32(b + 28, gid);
	put64(b + 32, size);
	wtime_put(b + 40, at ? at : &zero);
	wtime_put(b + 56, mt ? mt : &zero);
	return POHMEL_SETATTR_SIZE;
}

uint32_t pc_enc_readdir(uint8_t *b, const struct woid *dir, uint64_t cookie,
			uint32_t maxbytes)
{
	woid_put(b, dir);
	put64(b + 16, cookie);
	put32(b + 24, maxbytes);
	put32(b + 28, 0);
	return POHMEL_READDIR_SIZE;
}

uint32_t pc_enc_create(uint8_t *b, const struct woid *dir, uint32_t mode,
		       uint32_t rdev, uint32_t flags, uint32_t uid,
		       uint32_t gid, const char *name, uint32_t nl,
		       const char *tgt, uint32_t tl)
{
	woid_put(b, dir);
	put32(b + 16, mode);
	put32(b + 20, rdev);
	put32(b + 24, flags);
	put32(b + 28, uid);
	put32(b + 32, gid);
	put16(b + 36, (uint16_t)nl);
	put16(b + 38, (uint16_t)tl);
	memcpy(b + POHMEL_CREATE_SIZE, name, nl);
	if (tl)
		memcpy(b + POHMEL_CREATE_SIZE + nl, tgt, tl);
	return POHMEL_CREATE_SIZE + nl + tl;
}

uint32_t pc_enc_link(uint8_t *b, const struct woid *obj,
		     const struct woid *dir, const char *name, uint32_t nl)
{
	memset(b, 0, POHMEL_LINK_SIZE);
	woid_put(b, obj);
	woid_put(b + 16, dir);
	put16(b + 32, (uint16_t)nl);
	memcpy(b + POHMEL_LINK_SIZE, name, nl);
	return POHMEL_LINK_SIZE + nl;
}

uint32_t pc_enc_rename(uint8_t *b, const struct woid *od, const char *on,
		       uint32_t onl, const struct woid *nd, const char *nn,
		       uint32_t nnl, uint32_t flags)
{
	woid_put(b, od);
	woid_put(b + 16, nd);
	put32(b + 32, flags);
	put16(b + 36, (uint16_t)onl);
	put16(b + 38, (uint16_t)nnl);
	memcpy(b + POHMEL_RENAME_SIZE, on, onl);
	memcpy(b + POHMEL_RENAME_SIZE + onl, nn, nnl);
	return POHMEL_RENAME_SIZE + onl + nnl;
}

uint32_t pc_enc_open(uint8_t *b, const struct woid *o, uint32_t flags)
{
	woid_put(b, o);
	put32(b + 16, flags);
	put32(b + 20, 0);
	return POHMEL_OPEN_SIZE;
}

uint32_t pc_enc_handle(uint8_t *b, const struct woid *o, uint64_t handle)
{
	woid_put(b, o);
	put64(b + 16, handle);
	return POHMEL_HANDLE_REQ_SIZE;
}

uint32_t pc_enc_io(uint8_t *b, const struct woid *o, uint64_t handle,
		   uint64_t off, uint32_t count, uint32_t flags,
		   const void *data)
{
	woid_put(b, o);
	put64(b + 16, handle);
	put64(b + 24, off);
	put32(b + 32, count);
	put32(b + 36, flags);
	if (!data)
		return POHMEL_IO_SIZE;
	memcpy(b + POHMEL_IO_SIZE, data, count);
	return POHMEL_IO_SIZE + count;
}

uint32_t pc_enc_fsync(uint8_t *b, const struct woid *o, uint64_t handle,
		      uint32_t flags)
{
	woid_put(b, o);
	put64(b + 16, handle);
	put32(b + 24, flags);
	put32(b + 28, 0);
	return POHMEL_FSYNC_SIZE;
}

uint32_t pc_enc_xattr(uint8_t *b, const struct woid *o, uint32_t flags,
		      uint32_t valuelen, const char *name, uint32_t nl,
		      const void *val, uint32_t vl)
{
	memset(b, 0, POHMEL_XATTR_SIZE);
	woid_put(b, o);
	put32(b + 16, flags);
	put32(b + 20, valuelen);
	put16(b + 24, (uint16_t)nl);
	if (nl)
		memcpy(b + POHMEL_XATTR_SIZE, name, nl);
	if (vl)
		memcpy(b + POHMEL_XATTR_SIZE + nl, val, vl);
	return POHMEL_XATTR_SIZE + nl + vl;
}

uint32_t pc_enc_lock(uint8_t *b, const struct woid *o, uint64_t owner,
		     uint64_t start, uint64_t len, uint32_t type,
		     uint32_t flags, uint32_t pid)
{
	woid_put(b, o);
	put64(b + 16, owner);
	put64(b + 24, start);
	put64(b + 32, len);
	put32(b + 40, type);
	put32(b + 44, flags);
	put32(b + 48, pid);
	put32(b + 52, 0);
	return POHMEL_LOCK_SIZE;
}

uint32_t pc_enc_hello(uint8_t *b, uint64_t features, uint32_t max_msg,
		      const uint8_t uuid[16], uint64_t boot_gen,
		      const uint8_t *nonce)
{
	memset(b, 0, POHMEL_HELLO_SIZE);
	put32(b, POHMEL_MAGIC);
	put16(b + 4, POHMEL_PROTO_MAJOR);
	put16(b + 6, POHMEL_PROTO_MINOR);
	put64(b + 8, features);
	put32(b + 16, max_msg);
	memcpy(b + 24, uuid, 16);
	put64(b + 40, boot_gen);
	memcpy(b + 48, nonce, POHMEL_NONCE_LEN);
	return POHMEL_HELLO_SIZE;
}

/* 1.3: the body, then the key name (key_len bytes; none without). */
uint32_t pc_enc_hello13(uint8_t *b, uint64_t features, uint32_t max_msg,
			const uint8_t uuid[16], uint64_t boot_gen,
			const uint8_t *nonce, const char *keyname)
{
	size_t n = keyname ? strlen(keyname) : 0;

	pc_enc_hello(b, features, max_msg, uuid, boot_gen, nonce);
	put16(b + 20, (uint16_t)n);
	if (n)
		memcpy(b + POHMEL_HELLO_SIZE, keyname, n);
	return POHMEL_HELLO_SIZE + (uint32_t)n;
}
