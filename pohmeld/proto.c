// SPDX-License-Identifier: MIT
/*
 * proto.c - decode and validate every message, in one place.
 *
 * Nothing else in pohmeld reads a byte of the wire. proto_hdr() checks the
 * framing before the payload is even read; proto_parse() checks that the
 * body's lengths add up exactly to hdr.len (else the connection is
 * dropped) and then the contents: names, flags, ranges (else an errno is
 * answered). Handlers only ever see a struct msg.
 */
#include <errno.h>
#include "pohmeld.h"

int proto_hdr(const uint8_t *raw, struct whdr *h, uint32_t max_msg)
{
	whdr_get(raw, h);
	/* max_msg bounds hdr.len, the payload, as the header says. */
	if (h->len > max_msg || h->len > POHMEL_MAX_MSG)
		return PROTO_DROP;
	if (h->tag == 0)
		return PROTO_DROP;	/* tag 0 is for server messages */
	return 0;
}

/*
 * The outer header of a record (1.3): flags POHMEL_HF_SEALED and len,
 * nothing else. As in every header, len is the bytes after it: the
 * inner message (n bytes, a header at least) and the tag, so
 * POHMEL_HDR_SIZE + POHMEL_TAG_LEN <= len <= that + max_msg. NULL with
 * *n = the inner message's length, or what is wrong.
 */
const char *proto_record(const uint8_t *raw, uint32_t max_msg, uint32_t *n)
{
	static const uint8_t zero[POHMEL_HDR_SIZE];
	struct whdr h;

	whdr_get(raw, &h);
	if (h.flags != POHMEL_HF_SEALED)
		return "a plain message where a record is due";
	/* every field but len (0..3) and flags (6..7) is zero */
	if (memcmp(raw + 4, zero, 2) || memcmp(raw + 8, zero, 24))
		return "a record's outer header with a field set";
	/* len: the inner message (a header at least) and the tag */
	if (h.len < POHMEL_HDR_SIZE + POHMEL_TAG_LEN ||
	    h.len - POHMEL_HDR_SIZE - POHMEL_TAG_LEN > max_msg ||
	    h.len - POHMEL_HDR_SIZE - POHMEL_TAG_LEN > POHMEL_MAX_MSG)
		return "a record's length out of bounds";
	*n = h.len - POHMEL_TAG_LEN;
	return NULL;
}

/* An opened record's inner message of n bytes: a whole message. */
const char *proto_inner(const uint8_t *inner, uint32_t n, struct whdr *h,
			uint32_t max_msg)
{
	if (proto_hdr(inner, h, max_msg))
		return "bad framing inside a record";
	if (h->len != n - POHMEL_HDR_SIZE)
		return "a record's inner length does not match";
	if (h->flags & POHMEL_HF_SEALED)
		return "a record inside a record";
	return NULL;
}

/* A name component: 1..255 bytes, no '/', no NUL, not "." or "..". */
int proto_name_check(const char *name, uint32_t len)
{
	if (len == 0)
		return EINVAL;
	if (len > POHMEL_NAME_MAX)
		return ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, 0, len))
		return EINVAL;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return EINVAL;
	return 0;
}

/* Copy a checked name into a NUL-terminated buffer. */
static int take_name(const uint8_t *p, uint32_t len, char *dst)
{
	int err = proto_name_check((const char *)p, len);

	if (err)
		return err;
	memcpy(dst, p, len);
	dst[len] = 0;
	return 0;
}

/* xattr names are full ("user.x"): 1..255 bytes without NUL. */
static int take_xname(const uint8_t *p, uint32_t len, char *dst)
{
	if (len == 0)
		return EINVAL;
	if (len > POHMEL_XATTR_NAME_MAX)
		return ERANGE;
	if (memchr(p, 0, len))
		return EINVAL;
	memcpy(dst, p, len);
	dst[len] = 0;
	return 0;
}

static int check_time(const struct wtime *t)
{
	return t->nsec > 999999999 ? EINVAL : 0;
}

/* Lengths: fixed part + variable parts must equal blen exactly. */
#define NEED(n) do { if (m->blen != (uint64_t)(n)) return PROTO_DROP; } while (0)

static int parse_body(struct msg *m)
{
	const uint8_t *b = m->body;
	int err;

	switch (m->hdr.op) {
	case POHMEL_OP_HELLO:
		if (m->blen < POHMEL_HELLO_SIZE)
			return PROTO_DROP;
		m->namelen = get16(b + 20);	/* key_len (1.3) */
		NEED(POHMEL_HELLO_SIZE + m->namelen);
		if (m->namelen && !keyname_valid((const char *)b +
						 POHMEL_HELLO_SIZE,
						 m->namelen))
			return EINVAL;
		memcpy(m->name, b + POHMEL_HELLO_SIZE, m->namelen);
		m->name[m->namelen] = 0;
		return 0;
	case POHMEL_OP_AUTH:
		NEED(POHMEL_AUTH_SIZE);
		return 0;
	case POHMEL_OP_STATS:
		if (!m->blen)
			return 0;
		NEED(POHMEL_STATS_SIZE);
		m->flags = get32(b);
		return m->flags & ~(uint32_t)POHMEL_STATS_SESSIONS ? EINVAL : 0;
	case POHMEL_OP_PING:
	case POHMEL_OP_BYE:
		NEED(0);
		return 0;
	case POHMEL_OP_GETATTR:
	case POHMEL_OP_READLINK:
	case POHMEL_OP_STATFS:
		NEED(POHMEL_OID_SIZE);
		woid_get(b, &m->oid);
		return 0;
	case POHMEL_OP_LOOKUP:
	case POHMEL_OP_UNLINK:
	case POHMEL_OP_RMDIR:
	{
		uint32_t ext = 0;

		if (m->blen < POHMEL_NAME_REQ_SIZE)
			return PROTO_DROP;
		m->namelen = get16(b + 16);
		m->count = get16(b + 18);	/* nhandles */
		m->flags = get32(b + 20);
		/* A layout it does not know: refused, the stream is framed.
		 * Whether the connection may send these: op_remove. */
		if ((m->flags & ~(uint32_t)POHMEL_REMOVE_ALL) ||
		    (m->flags && m->hdr.op == POHMEL_OP_LOOKUP) ||
		    (!(m->flags & POHMEL_REMOVE_CLOSE) && m->count) ||
		    m->count > POHMEL_REMOVE_HANDLES_MAX)
			return EINVAL;
		if (m->flags)
			ext = POHMEL_REMOVE_EXT_SIZE + m->count * 8;
		NEED(POHMEL_NAME_REQ_SIZE + ext + m->namelen);
		woid_get(b, &m->oid);
		if (ext) {
			woid_get(b + POHMEL_NAME_REQ_SIZE, &m->oid2);
			m->data = b + POHMEL_NAME_REQ_SIZE +
				  POHMEL_REMOVE_EXT_SIZE;
			m->dlen = m->count * 8;
		}
		return take_name(b + POHMEL_NAME_REQ_SIZE + ext, m->namelen,
				 m->name);
	}
	case POHMEL_OP_SETATTR:
		if (m->blen < POHMEL_SETATTR_SIZE)
			return PROTO_DROP;
		m->valid = get32(b + 16);
		NEED(POHMEL_SETATTR_SIZE + (m->valid & POHMEL_SET_HANDLE ?
					    POHMEL_SETATTR_FH_SIZE : 0));
		woid_get(b, &m->oid);
		m->mode = get32(b + 20);
		m->uid = get32(b + 24);
		m->gid = get32(b + 28);
		m->size = get64(b + 32);
		wtime_get(b + 40, &m->atime);
		wtime_get(b + 56, &m->mtime);
		if (m->valid & POHMEL_SET_HANDLE)
			m->handle = get64(b + POHMEL_SETATTR_SIZE);
		if (m->valid & ~(POHMEL_SET_ALL | POHMEL_SET_HANDLE))
			return EOPNOTSUPP;
		if ((m->valid & POHMEL_SET_HANDLE) &&
		    !(m->valid & POHMEL_SET_SIZE))
			return EINVAL;
		if ((m->valid & POHMEL_SET_ATIME && check_time(&m->atime)) ||
		    (m->valid & POHMEL_SET_MTIME && check_time(&m->mtime)))
			return EINVAL;
		if (m->valid & POHMEL_SET_SIZE && m->size > INT64_MAX)
			return EFBIG;
		return 0;
	case POHMEL_OP_READDIR:
		NEED(POHMEL_READDIR_SIZE);
		woid_get(b, &m->oid);
		m->cookie = get64(b + 16);
		m->count = get32(b + 24);	/* maxbytes */
		return 0;
	case POHMEL_OP_CREATE:
	case POHMEL_OP_MKDIR:
	case POHMEL_OP_MKNOD:
	case POHMEL_OP_SYMLINK:
	{
		uint32_t idlen;

		if (m->blen < POHMEL_CREATE_SIZE)
			return PROTO_DROP;
		m->flags = get32(b + 24);
		idlen = (m->flags & POHMEL_CREATE_ID ? 8 : 0) +
			(m->flags & POHMEL_CREATE_TIME ? 16 : 0);
		m->namelen = get16(b + 36);
		m->dlen = get16(b + 38);
		NEED(POHMEL_CREATE_SIZE + idlen + m->namelen + m->dlen);
		woid_get(b, &m->oid);
		m->mode = get32(b + 16);
		m->rdev = get32(b + 20);
		m->uid = get32(b + 28);
		m->gid = get32(b + 32);
		if (m->flags & POHMEL_CREATE_ID) {
			m->cid = get64(b + POHMEL_CREATE_SIZE);
			if (!m->cid)
				return EINVAL;
		}
		if (m->flags & POHMEL_CREATE_TIME) {
			if (!(m->flags & POHMEL_CREATE_ID))
				return EINVAL;
			wtime_get(b + POHMEL_CREATE_SIZE + 8, &m->ctime);
			if (m->ctime.nsec >= 1000000000U)
				return EINVAL;
		}
		b += idlen;
		m->data = b + POHMEL_CREATE_SIZE + m->namelen;
		err = take_name(b + POHMEL_CREATE_SIZE, m->namelen, m->name);
		if (err)
			return err;
		if (m->hdr.op == POHMEL_OP_SYMLINK) {
			if (m->dlen == 0 || memchr(m->data, 0, m->dlen))
				return EINVAL;
			if (m->dlen > POHMEL_PATH_MAX)
				return ENAMETOOLONG;
		} else if (m->dlen) {
			return EINVAL;
		}
		if (m->flags & ~POHMEL_CREATE_ALL)
			return EOPNOTSUPP;
		return 0;
	}
	case POHMEL_OP_LINK:
		if (m->blen < POHMEL_LINK_SIZE)
			return PROTO_DROP;
		m->namelen = get16(b + 32);
		NEED(POHMEL_LINK_SIZE + m->namelen);
		woid_get(b, &m->oid);		/* object */
		woid_get(b + 16, &m->oid2);	/* directory */
		return take_name(b + POHMEL_LINK_SIZE, m->namelen, m->name);
	case POHMEL_OP_RENAME:
		if (m->blen < POHMEL_RENAME_SIZE)
			return PROTO_DROP;
		m->namelen = get16(b + 36);
		m->namelen2 = get16(b + 38);
		NEED(POHMEL_RENAME_SIZE + m->namelen + m->namelen2);
		woid_get(b, &m->oid);
		woid_get(b + 16, &m->oid2);
		m->flags = get32(b + 32);
		err = take_name(b + POHMEL_RENAME_SIZE, m->namelen, m->name);
		if (!err)
			err = take_name(b + POHMEL_RENAME_SIZE + m->namelen,
					m->namelen2, m->name2);
		if (err)
			return err;
		if (m->flags & ~POHMEL_RENAME_ALL)
			return EOPNOTSUPP;
		if (m->flags == POHMEL_RENAME_ALL)
			return EINVAL;
		return 0;
	case POHMEL_OP_OPEN:
		NEED(POHMEL_OPEN_SIZE);
		woid_get(b, &m->oid);
		m->flags = get32(b + 16);
		return m->flags & ~(POHMEL_OPEN_ALL | POHMEL_OPEN_CREATED) ?
		       EOPNOTSUPP : 0;
	case POHMEL_OP_CLOSE:
		NEED(POHMEL_HANDLE_REQ_SIZE);
		woid_get(b, &m->oid);
		m->handle = get64(b + 16);
		return 0;
	case POHMEL_OP_READ:
	case POHMEL_OP_WRITE:
		if (m->blen < POHMEL_IO_SIZE)
			return PROTO_DROP;
		m->count = get32(b + 32);
		m->flags = get32(b + 36);
		if (m->hdr.op == POHMEL_OP_WRITE) {
			uint32_t tl = m->flags & POHMEL_IO_TIMES ? 32 : 0;

			NEED(POHMEL_IO_SIZE + tl + (uint64_t)m->count);
			if (tl) {
				wtime_get(b + POHMEL_IO_SIZE, &m->mtime);
				wtime_get(b + POHMEL_IO_SIZE + 16, &m->ctime);
				if (m->mtime.nsec >= 1000000000U ||
				    m->ctime.nsec >= 1000000000U)
					return EINVAL;
			}
			m->data = b + POHMEL_IO_SIZE + tl;
			m->dlen = m->count;
		} else {
			if (m->flags & (POHMEL_IO_TIMES | POHMEL_IO_CREATED))
				return EINVAL;
			NEED(POHMEL_IO_SIZE);
		}
		woid_get(b, &m->oid);
		m->handle = get64(b + 16);
		m->offset = get64(b + 24);
		if (m->flags & ~POHMEL_IO_ALL)
			return EOPNOTSUPP;
		if (m->count > POHMEL_MAX_DATA)
			return EINVAL;
		if (m->offset > INT64_MAX || m->count > INT64_MAX - m->offset)
			return EFBIG;
		return 0;
	case POHMEL_OP_FSYNC:
		NEED(POHMEL_FSYNC_SIZE);
		woid_get(b, &m->oid);
		m->handle = get64(b + 16);
		m->flags = get32(b + 24);
		return m->flags & ~POHMEL_FSYNC_ALL ? EOPNOTSUPP : 0;
	case POHMEL_OP_GETXATTR:
	case POHMEL_OP_SETXATTR:
	case POHMEL_OP_LISTXATTR:
	case POHMEL_OP_REMOVEXATTR:
		if (m->blen < POHMEL_XATTR_SIZE)
			return PROTO_DROP;
		woid_get(b, &m->oid);
		m->flags = get32(b + 16);
		m->count = get32(b + 20);	/* valuelen */
		m->namelen = get16(b + 24);
		if (m->hdr.op == POHMEL_OP_SETXATTR) {
			NEED(POHMEL_XATTR_SIZE + m->namelen +
			     (uint64_t)m->count);
			m->data = b + POHMEL_XATTR_SIZE + m->namelen;
			m->dlen = m->count;
		} else {
			NEED(POHMEL_XATTR_SIZE + m->namelen);
		}
		if (m->flags & ~POHMEL_XATTR_ALL)
			return EOPNOTSUPP;
		if (m->hdr.op == POHMEL_OP_LISTXATTR)
			return m->namelen ? EINVAL : 0;
		err = take_xname(b + POHMEL_XATTR_SIZE, m->namelen, m->name);
		if (err)
			return err;
		if (m->hdr.op == POHMEL_OP_SETXATTR &&
		    m->count > POHMEL_XATTR_SIZE_MAX)
			return E2BIG;
		return 0;
	case POHMEL_OP_LOCK:
		NEED(POHMEL_LOCK_SIZE);
		woid_get(b, &m->oid);
		m->owner = get64(b + 16);
		m->start = get64(b + 24);
		m->len = get64(b + 32);
		m->type = get32(b + 40);
		m->flags = get32(b + 44);
		m->pid = get32(b + 48);
		if (m->flags & ~POHMEL_LOCK_ALL)
			return EOPNOTSUPP;
		if (m->type > POHMEL_LOCK_WR)
			return EINVAL;
		if (m->start > INT64_MAX || m->len > INT64_MAX ||
		    (m->len && m->start + m->len - 1 > INT64_MAX))
			return EINVAL;
		return 0;
	case POHMEL_OP_BATCH:
		return 0;	/* inner messages are parsed one by one */
	case POHMEL_OP_RELEASE:
		if (!m->blen || m->blen % POHMEL_OID_SIZE ||
		    m->blen > POHMEL_RELEASE_MAX * POHMEL_OID_SIZE)
			return PROTO_DROP;
		m->count = m->blen / POHMEL_OID_SIZE;
		return 0;
	case POHMEL_OP_GRANT:
		NEED(POHMEL_GRANT_REQ_SIZE);
		woid_get(b, &m->oid);
		m->type = get32(b + 16);	/* want */
		if (get32(b + 20))
			return EINVAL;
		if (m->type != POHMEL_GRANT_SHARED &&
		    m->type != POHMEL_GRANT_EXCL)
			return EINVAL;
		return 0;
	case POHMEL_OP_IDRANGE:
		NEED(POHMEL_IDRANGE_SIZE);
		m->count = get32(b + 16);
		if (get64(b) || get64(b + 8) || get32(b + 20))
			return EINVAL;
		if (!m->count || m->count > POHMEL_IDRANGE_MAX)
			return EINVAL;
		return 0;
	case POHMEL_OP_RECALL_ACK:
		NEED(POHMEL_RECALL_SIZE);
		woid_get(b, &m->oid);
		m->type = get32(b + 16);	/* to */
		m->cookie = get64(b + 24);	/* recall_id */
		if (m->type > POHMEL_GRANT_SHARED)
			return EINVAL;
		return 0;
	default:
		return ENOSYS;
	}
}

/*
 * raw is a whole message whose header proto_hdr() accepted and whose
 * rawlen == POHMEL_HDR_SIZE + hdr.len. Returns 0, a positive errno to
 * answer, or PROTO_DROP.
 */
int proto_parse(struct msg *m, const uint8_t *raw, uint32_t rawlen)
{
	const uint8_t *p = raw + POHMEL_HDR_SIZE;
	uint32_t len, i;

	/* Everything but the two name buffers (4 KiB of memset saved). */
	memset(m, 0, offsetof(struct msg, name));
	memset(&m->namelen, 0, sizeof(*m) - offsetof(struct msg, namelen));
	m->name[0] = m->name2[0] = 0;
	whdr_get(raw, &m->hdr);
	len = m->hdr.len;
	if (rawlen != POHMEL_HDR_SIZE + (uint64_t)len || len > POHMEL_MAX_MSG)
		return PROTO_DROP;
	m->cr.uid = m->hdr.uid;
	m->cr.gid = m->hdr.gid;

	if (m->hdr.flags & POHMEL_HF_GROUPS) {
		uint32_t gsz;

		if (len < 8)
			return PROTO_DROP;
		m->cr.ngroups = get32(p);
		if (m->cr.ngroups > POHMEL_MAX_GROUPS)
			return PROTO_DROP;
		gsz = pohmel_groups_size(m->cr.ngroups);
		if (gsz > len)
			return PROTO_DROP;
		for (i = 0; i < m->cr.ngroups; i++)
			m->cr.groups[i] = get32(p + 4 + 4 * i);
		p += gsz;
		len -= gsz;
	}
	m->body = p;
	m->blen = len;

	if (m->hdr.op == 0 || m->hdr.op >= POHMEL_OP_MAX ||
	    m->hdr.op == POHMEL_OP_RECALL)
		return ENOSYS;
	if (m->hdr.flags & ~POHMEL_HF_ALL)
		return EOPNOTSUPP;
	if (m->hdr.flags & (POHMEL_HF_REPLY | POHMEL_HF_SERVER))
		return PROTO_DROP;	/* a reply where a request belongs */
	return parse_body(m);
}
