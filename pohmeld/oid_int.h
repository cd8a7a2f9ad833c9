/* SPDX-License-Identifier: MIT */
/*
 * oid_int.h - what oid.c (the object id table) and oid_log.c (its file,
 * STATE_DIR/handles) share; nothing else includes it.
 */
#ifndef POHMELD_OID_INT_H
#define POHMELD_OID_INT_H

#include "pohmeld.h"

#define HANDLE_BYTES	128	/* MAX_HANDLE_SZ */

struct oid_ent {
	struct oid_ent *next;	/* in oid_tab[slot(id)] */
	struct oid_ent *inext;	/* in itab[slot(ino)] (oid.c) */
	uint64_t id;
	uint64_t ino;
	uint64_t gen;
	uint64_t seq;		/* put_seq when the handle was last set */
	int type;
	unsigned int hlen;
	uint8_t h[];		/* hlen bytes: usually 8..20, not 128 */
};

/*
 * oid_lock protects the table (oid.c: oid_tab, oid_tab_size and the
 * index, entry count and put_seq beside them), the log file (oid_log.c:
 * fd, line count) and the compaction state (oid_log.c).
 * Readers (every request) take it shared, registration exclusive.
 */
extern pthread_rwlock_t oid_lock;
extern struct oid_ent **oid_tab;	/* by id; oid_tab_size slots */
extern size_t oid_tab_size;

/* Set once by oid_init before any thread runs: read without a lock. */
extern int oid_root_fd;
extern ino_t oid_root_ino;

/* oid.c: the table. Must hold oid_lock (oid_find: shared or exclusive;
 * the others exclusively). */
struct oid_ent *oid_find(uint64_t id);
void oid_del_ent(struct oid_ent *e);
int oid_put_ent(uint64_t id, uint64_t ino, int type, const uint8_t *h,
		unsigned int n, bool persist, uint64_t *gen);

/* oid_log.c: the file. A copy of the table for online compaction. */
struct snap {
	char *buf;
	size_t len;
};

void oid_log_append(const struct oid_ent *e);
bool oid_compact_start(struct snap *s);
void oid_compact_online(struct snap *s);
int oid_log_init(const char *state_dir);
void oid_log_fini(void);

#endif
