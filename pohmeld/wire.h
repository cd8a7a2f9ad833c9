/* SPDX-License-Identifier: MIT */
/*
 * wire.h - big-endian load/store helpers and host-order views of the
 * structs in pohmel_proto.h. Shared by pohmeld and libpohmel so that the
 * round-trip tests exercise the same encoders both sides use.
 */
#ifndef POHMEL_WIRE_H
#define POHMEL_WIRE_H

#include <stdint.h>
#include <string.h>
#include "pohmel_proto.h"

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, (uint32_t)v);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* Host-order message header. */
struct whdr {
	uint32_t len;
	uint16_t op;
	uint16_t flags;
	uint32_t tag;
	uint32_t status;
	uint64_t seq;
	uint32_t uid;
	uint32_t gid;
};

static inline void whdr_put(uint8_t *p, const struct whdr *h)
{
	put32(p, h->len);
	put16(p + 4, h->op);
	put16(p + 6, h->flags);
	put32(p + 8, h->tag);
	put32(p + 12, h->status);
	put64(p + 16, h->seq);
	put32(p + 24, h->uid);
	put32(p + 28, h->gid);
}

static inline void whdr_get(const uint8_t *p, struct whdr *h)
{
	h->len = get32(p);
	h->op = get16(p + 4);
	h->flags = get16(p + 6);
	h->tag = get32(p + 8);
	h->status = get32(p + 12);
	h->seq = get64(p + 16);
	h->uid = get32(p + 24);
	h->gid = get32(p + 28);
}

struct woid {
	uint64_t id;
	uint64_t gen;
};

static inline void woid_put(uint8_t *p, const struct woid *o)
{
	put64(p, o->id);
	put64(p + 8, o->gen);
}

static inline void woid_get(const uint8_t *p, struct woid *o)
{
	o->id = get64(p);
	o->gen = get64(p + 8);
}

struct wtime {
	int64_t sec;
	uint32_t nsec;
};

static inline void wtime_put(uint8_t *p, const struct wtime *t)
{
	put64(p, (uint64_t)t->sec);
	put32(p + 8, t->nsec);
	put32(p + 12, 0);
}

static inline void wtime_get(const uint8_t *p, struct wtime *t)
{
	t->sec = (int64_t)get64(p);
	t->nsec = get32(p + 8);
}

struct wattr {
	struct woid oid;
	uint64_t size, blocks, change;
	struct wtime atime, mtime, ctime;
	uint32_t mode, nlink, uid, gid, rdev, blksize, grant;
};

static inline void wattr_put(uint8_t *p, const struct wattr *a)
{
	woid_put(p, &a->oid);
	put64(p + 16, a->size);
	put64(p + 24, a->blocks);
	put64(p + 32, a->change);
	wtime_put(p + 40, &a->atime);
	wtime_put(p + 56, &a->mtime);
	wtime_put(p + 72, &a->ctime);
	put32(p + 88, a->mode);
	put32(p + 92, a->nlink);
	put32(p + 96, a->uid);
	put32(p + 100, a->gid);
	put32(p + 104, a->rdev);
	put32(p + 108, a->blksize);
	put32(p + 112, a->grant);
	put32(p + 116, 0);
}

static inline void wattr_get(const uint8_t *p, struct wattr *a)
{
	woid_get(p, &a->oid);
	a->size = get64(p + 16);
	a->blocks = get64(p + 24);
	a->change = get64(p + 32);
	wtime_get(p + 40, &a->atime);
	wtime_get(p + 56, &a->mtime);
	wtime_get(p + 72, &a->ctime);
	a->mode = get32(p + 88);
	a->nlink = get32(p + 92);
	a->uid = get32(p + 96);
	a->gid = get32(p + 100);
	a->rdev = get32(p + 104);
	a->blksize = get32(p + 108);
	a->grant = get32(p + 112);
}

static inline uint32_t pad8(uint32_t n)
{
	return (n + 7) & ~7U;
}

/* Linux new_encode_dev()/new_decode_dev(), as attr.rdev carries. */
static inline uint32_t wire_encode_dev(unsigned int major, unsigned int minor)
{
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffU) << 12);
}

static inline unsigned int wire_dev_major(uint32_t d)
{
	return (d & 0xfff00) >> 8;
}

static inline unsigned int wire_dev_minor(uint32_t d)
{
	return (d & 0xff) | ((d >> 12) & 0xfff00);
}

#endif /* POHMEL_WIRE_H */
