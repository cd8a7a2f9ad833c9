/* SPDX-License-Identifier: MIT */
/*
 * grants_int.h - what the two files of grants share (grants.c: holders,
 * recalls, conflicts and the grant a reply gives; grants_local.c: the
 * marks of pohmeld's own changes and the changes notify.c reports);
 * nothing else includes it. Lock rules are in grants.c's header.
 */
#ifndef POHMELD_GRANTS_INT_H
#define POHMELD_GRANTS_INT_H

#include "pohmeld.h"

struct holder {
	struct holder *next;
	struct conn *c;			/* a reference */
	uint32_t grant;			/* POHMEL_GRANT_* as last told */
	uint32_t recall_to;		/* valid while recall_id != 0 */
	uint64_t recall_id;		/* 0: no recall pending */
	struct timespec deadline;	/* CLOCK_MONOTONIC lease end */
};

struct gobj {
	struct gobj *next;
	struct woid oid;		/* gen as last seen in a reply */
	int wd;				/* inotify watch, -1: none */
	struct holder *holders;
	struct grant_mark *busy;	/* modifying requests in flight */
};

struct recall_msg {
	struct recall_msg *next;
	struct conn *c;			/* a reference */
	uint8_t buf[POHMEL_HDR_SIZE + POHMEL_RECALL_SIZE];
};

extern pthread_mutex_t grants_mu;
extern pthread_cond_t grants_cv;	/* an ack, a holder gone, shutdown */

/* All under grants_mu. */
struct gobj *gobj_find(uint64_t id, bool create);
void gobj_maybe_free(struct gobj *o);
void holder_del(struct gobj *o, struct holder *h);
void recall_holders(struct gobj *o, struct recall_msg **out);
/* Without grants_mu. */
void send_recalls(struct recall_msg *rm);

#endif /* POHMELD_GRANTS_INT_H */
