// SPDX-License-Identifier: MIT
/*
 * grants.c - coherent cache grants and RECALL (POHMEL_FEAT_GRANTS).
 *
 * A grant belongs to a connection that negotiated FEAT_GRANTS (the
 * "holder"), per object id. Every attr in a reply to such a connection
 * says the holder's grant on that object as of the reply (grant_fill);
 * other connections always see GRANT_NONE.
 *
 *   want SHARED: any reply carrying attrs (LOOKUP, GETATTR, READDIR and
 *                its entries, OPEN, READ, FSYNC, entry replies);
 *   want EXCL:   the object of a WRITE or SETATTR, or of a GRANT asking
 *                for EXCL (a directory: the write grant). Before it runs, every
 *                other holder was recalled to NONE, so the writer is the
 *                sole holder and is upgraded.
 * What is given is capped: NONE while another connection holds EXCL or
 * has a modifying request on the object in flight, SHARED while another
 * holds SHARED, and never above the target of a recall pending for the
 * holder itself.
 *
 * A grant must not outlive what its reply describes. The handler reads
 * the object (attrs, data, a listing) before grant_fill; a modifying
 * request that runs wholly in between recalls nobody (the reader holds
 * nothing yet) and its in-flight mark is gone by grant_fill, and a
 * local change may be reported meanwhile. Both move the object's change
 * tag (change.c). So grants_begin notes the point r->since before the
 * handler runs, and grant_fill gives NONE if the object's tag moved
 * since (its own bump aside: grant_mark.tag), checked under grants_mu
 * together with the holder being added: a modification that begins
 * later finds the holder and recalls it; a local change reported later
 * recalls it too. A change not yet reported is caught for a new watch
 * by its ctime (watch), else by its later recall. NONE is always safe:
 * the client revalidates next time.
 *
 * Conflicts (grants_begin, before a request runs, for every connection):
 * a modifying request on an object (namespace ops: the directory, plus
 * the child named) conflicts with every other holder (recalled to NONE);
 * a reading request conflicts with another's EXCL (recalled to SHARED).
 * RECALLs are pushed to the holder's outbox after grants_mu is dropped
 * (outbox.c: written at once as far as its socket takes them, else by
 * the holder's own connection threads; a holder that does not take a
 * RECALL within a lease is cut off, and with it go its grants), so no
 * thread here ever waits on a holder's socket. The
 * requester waits on grants_cv, holding no lock, until each holder
 * acked (RECALL_ACK with the recall_id) or its lease (grant-lease,
 * default 10 s) ran out; then the holder's grant is the recall's target
 * either way, and a holder whose outbox still holds its RECALL is cut
 * before the request goes on (outbox_expire): it cannot keep the
 * connection its grants belong to without ever having been told.
 *
 * The requester never waits on its connection's thread: that thread must
 * go on reading, or two clients recalling each other's grants would wait
 * for acks neither connection reads. A request that has to wait is handed
 * to the connection's worker thread (conn.c: conn_defer) and re-run there
 * with waiting allowed; the connection's later requests (but RECALL_ACK)
 * queue behind it, so they still run in order. Inside a BATCH the wait
 * is inline (bounded by the lease).
 *
 * Lock rules: grants_mu protects the table, every struct gobj/holder and
 * conn->grants_gone; lock order grants_mu -> notify_mu (notify.c),
 * grants_mu -> change_mu (change.c, a leaf), grants_mu -> ob.mu
 * (outbox.c, a leaf: outbox_expire). No write_mu, session or oid-table
 * lock is taken under it: RECALLs are pushed and objects opened
 * (oid_open) with grants_mu dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "grants_int.h"

#define BUCKETS		4096

pthread_mutex_t grants_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t grants_cv;	/* an ack, a holder gone, shutdown */
static struct gobj *tab[BUCKETS];	/* under grants_mu */
static uint64_t next_recall = 1;	/* under grants_mu */
static bool stopping;			/* under grants_mu */
atomic_int grant_conns;			/* connections with FEAT_GRANTS */
static const char *test_hold_path;	/* set before any connection */

/* srv.grants_per_conn: max-grants-per-connection, or by default a
 * quarter of the user's inotify watches (at least 1024): one client
 * cannot take them all, and a warm walk of a large tree is still served
 * from the cache. */
static int derived_grants_per_conn(void)
{
	FILE *f = fopen("/proc/sys/fs/inotify/max_user_watches", "re");
	long w = 0;

	if (f) {
		if (fscanf(f, "%ld", &w) != 1)
			w = 0;
		fclose(f);
	}
	return w / 4 > 1024 ? (int)MIN(w / 4, 1000000L) : 1024;
}

void grants_init(void)
{
	pthread_condattr_t ca;

	srv.grants_per_conn = srv.cfg.max_grants_per_conn ?
			      srv.cfg.max_grants_per_conn :
			      derived_grants_per_conn();
	log_info("grants: at most %d objects per connection",
		 srv.grants_per_conn);

	test_hold_path = getenv("POHMELD_TEST_GRANT_HOLD");
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&grants_cv, &ca);
	pthread_condattr_destroy(&ca);
}

static size_t bucket(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 52) % BUCKETS;
}

/* Must hold grants_mu. */
struct gobj *gobj_find(uint64_t id, bool create)
{
	struct gobj *o;

	for (o = tab[bucket(id)]; o; o = o->next)
		if (o->oid.id == id)
			return o;
	if (!create)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->oid.id = id;
	o->wd = -1;
	o->next = tab[bucket(id)];
	tab[bucket(id)] = o;
	return o;
}

/* Must hold grants_mu. Frees o if nothing refers to it any more. */
void gobj_maybe_free(struct gobj *o)
{
	struct gobj **pp;

	if (o->holders || o->busy)
		return;
	if (o->wd >= 0)
		notify_unwatch(o->wd);
	for (pp = &tab[bucket(o->oid.id)]; *pp; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	}
	free(o);
}

static struct holder *holder_of(struct gobj *o, const struct conn *c)
{
	struct holder *h;

	for (h = o->holders; h; h = h->next)
		if (h->c == c)
			return h;
	return NULL;
}

/* Must hold grants_mu. */
void holder_del(struct gobj *o, struct holder *h)
{
	struct holder **pp;

	for (pp = &o->holders; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	}
	h->c->ngrants--;
	conn_put(h->c);
	free(h);
}

/*
 * Must hold grants_mu. Whether c may hold a grant on one more object:
 * max-grants-per-connection bounds the inotify watches one client can
 * make pohmeld add (the watches count against the user's
 * max_user_watches). Beyond it the reply carries no grant and the
 * client revalidates, which is always safe; counted and logged
 * (log_limited).
 */
static bool grant_quota_ok(struct conn *c)
{
	static struct ratelimit rl = RATELIMIT_INIT;

	if (c->ngrants < srv.grants_per_conn)
		return true;
	stats.grants_refused_quota++;
	log_limited(&rl, LOG_INFO, "%s: no more grants (and watches): it "
		    "holds max-grants-per-connection (%d)", c->peer,
		    srv.grants_per_conn);
	return false;
}

static bool expired(const struct timespec *dl, const struct timespec *now)
{
	return now->tv_sec > dl->tv_sec ||
	       (now->tv_sec == dl->tv_sec && now->tv_nsec >= dl->tv_nsec);
}

/*
 * Must hold grants_mu. A pending recall whose lease ran out, or an ack:
 * the holder's grant is the recall's target. Returns true if h is gone.
 */
static bool settle(struct gobj *o, struct holder *h)
{
	h->grant = h->recall_to;
	h->recall_id = 0;
	if (h->grant == POHMEL_GRANT_NONE) {
		holder_del(o, h);
		return true;
	}
	return false;
}

/* Must hold grants_mu. Queue a RECALL of h down to `to`. */
static int recall(struct gobj *o, struct holder *h, uint32_t to,
		  struct recall_msg **out)
{
	struct recall_msg *rm = malloc(sizeof(*rm));
	struct whdr hd = {
		.len = POHMEL_RECALL_SIZE, .op = POHMEL_OP_RECALL,
		.flags = POHMEL_HF_SERVER,
	};
	uint8_t *b;

	if (!rm)
		return ENOMEM;
	h->recall_id = next_recall++;
	h->recall_to = to;
	clock_gettime(CLOCK_MONOTONIC, &h->deadline);
	h->deadline.tv_sec += srv.cfg.grant_lease;
	whdr_put(rm->buf, &hd);
	b = rm->buf + POHMEL_HDR_SIZE;
	memset(b, 0, POHMEL_RECALL_SIZE);
	woid_put(b, &o->oid);
	put32(b + 16, to);
	put64(b + 24, h->recall_id);
	conn_get(h->c);
	rm->c = h->c;
	rm->next = *out;
	*out = rm;
	return 0;
}

/* Must hold grants_mu. Queue a RECALL to NONE for every holder of o
 * not already being recalled to NONE. */
void recall_holders(struct gobj *o, struct recall_msg **out)
{
	struct holder *h;

	if (stopping)
		return;
	for (h = o->holders; h; h = h->next)
		if (!(h->recall_id && h->recall_to == POHMEL_GRANT_NONE))
			recall(o, h, POHMEL_GRANT_NONE, out);
}

/*
 * Without grants_mu: push queued RECALLs to their holders' outboxes and
 * drop the references. Never waits for a holder (outbox_push). A RECALL
 * that cannot be queued cuts its holder (outbox.c), which ends its
 * grants: no holder keeps a grant whose RECALL was lost.
 */
void send_recalls(struct recall_msg *rm)
{
	struct recall_msg *next;

	for (; rm; rm = next) {
		next = rm->next;
		log_debug("%s: RECALL id %llu", rm->c->peer,
			  (unsigned long long)get64(rm->buf + POHMEL_HDR_SIZE +
						    24));
		outbox_push(rm->c, rm->buf, sizeof(rm->buf));
		conn_put(rm->c);
		free(rm);
	}
}

/* The child named `name` under directory dir, by id (0: none). */
static uint64_t child_id(struct req *r, const struct woid *dir,
			 const char *name)
{
	struct stat dst, st;
	uint64_t id = 0;
	int fd;

	if (!name[0] || oid_open(dir, &fd, &dst))
		return 0;
	if (!fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW))
		id = oid_id_of_ino(st.st_ino);
	req_keep_pre(r, dir, fd, &dst);	/* the handler opens it next */
	return id;
}

/* The objects a request reads or modifies; returns how many. */
static int targets(struct req *r, struct grant_mark *t)
{
	const struct msg *m = r->m;
	int n = 0;

	/* i once: child_id() costs a handle open and a stat */
#define T(i, w) do { uint64_t id_ = (i); \
		     if (id_) { t[n].id = id_; t[n].write = (w); n++; } } \
		while (0)
	switch (m->hdr.op) {
	case POHMEL_OP_GETATTR: case POHMEL_OP_READ: case POHMEL_OP_OPEN:
	case POHMEL_OP_READDIR: case POHMEL_OP_GETXATTR:
	case POHMEL_OP_LISTXATTR: case POHMEL_OP_READLINK:
	case POHMEL_OP_FSYNC:
		T(m->oid.id, false);
		break;
	case POHMEL_OP_GRANT:	/* EXCL: as for a WRITE, but nothing moves */
		T(m->oid.id, m->type == POHMEL_GRANT_EXCL);
		break;
	case POHMEL_OP_LOOKUP:
		T(m->oid.id, false);
		if (atomic_load(&grant_conns))
			T(child_id(r, &m->oid, m->name), false);
		break;
	case POHMEL_OP_SETATTR: case POHMEL_OP_WRITE:
	case POHMEL_OP_SETXATTR: case POHMEL_OP_REMOVEXATTR:
	case POHMEL_OP_CREATE: case POHMEL_OP_MKDIR: case POHMEL_OP_MKNOD:
	case POHMEL_OP_SYMLINK:
		T(m->oid.id, true);
		break;
	case POHMEL_OP_LINK:
		T(m->oid.id, true);
		T(m->oid2.id, true);
		break;
	/* The children's link counts and ctimes change as well: their
	 * change attribute has to move (dispatch.c) with or without grants. */
	case POHMEL_OP_UNLINK: case POHMEL_OP_RMDIR:
		T(m->oid.id, true);
		T(child_id(r, &m->oid, m->name), true);
		break;
	case POHMEL_OP_RENAME:
		T(m->oid.id, true);
		if (m->oid2.id != m->oid.id)
			T(m->oid2.id, true);
		T(child_id(r, &m->oid, m->name), true);
		T(child_id(r, &m->oid2, m->name2), true);
		break;
	}
#undef T
	return n;
}

/*
 * Must hold grants_mu. Recall what conflicts with r's targets; returns
 * the number of conflicts still pending (recalls sent or in flight) and
 * the earliest lease end among them in *dl.
 */
static int conflicts(struct req *r, struct recall_msg **out,
		     struct timespec *dl)
{
	struct timespec now;
	int i, n = 0;

	clock_gettime(CLOCK_MONOTONIC, &now);
	for (i = 0; i < r->ngm; i++) {
		struct gobj *o = gobj_find(r->gm[i].id, false);
		struct holder *h, *next;
		uint32_t to = r->gm[i].write ? POHMEL_GRANT_NONE :
					       POHMEL_GRANT_SHARED;

		for (h = o ? o->holders : NULL; h; h = next) {
			next = h->next;
			if (h->c == r->c)
				continue;
			if (h->recall_id && expired(&h->deadline, &now)) {
				stats.grants_lease_expired++;
				log_info("%s: lease expired, grant on %llu "
					 "revoked", h->c->peer,
					 (unsigned long long)o->oid.id);
				/* RECALL not taken: cut before r goes on */
				outbox_expire(h->c);
				if (settle(o, h))
					continue;
			}
			if (h->grant <= to)
				continue;	/* no conflict */
			if (!(h->recall_id && h->recall_to <= to) &&
			    (stopping || recall(o, h, to, out))) {
				h->recall_to = to;	/* revoke unasked */
				settle(o, h);
				continue;
			}
			if (++n == 1 || h->deadline.tv_sec < dl->tv_sec ||
			    (h->deadline.tv_sec == dl->tv_sec &&
			     h->deadline.tv_nsec < dl->tv_nsec))
				*dl = h->deadline;
		}
		if (o)
			gobj_maybe_free(o);
	}
	return n;
}

int grants_begin(struct req *r, bool may_wait)
{
	struct recall_msg *rm = NULL;
	struct timespec dl = { 0 };
	bool waited = false;
	int i, n;

	/* A GRANT that op_grant will refuse recalls nobody. */
	if (r->m->hdr.op == POHMEL_OP_GRANT &&
	    ((~r->c->features & (POHMEL_FEAT_GRANTS | POHMEL_FEAT_ASK_GRANT)) ||
	     !grant_precheck(r)))
		r->ngm = 0;
	else
		r->ngm = targets(r, r->gm);
	if (!r->ngm) {
		r->since = change_now();
		return 0;
	}
	pthread_mutex_lock(&grants_mu);
	for (;;) {
		n = conflicts(r, &rm, &dl);
		if (!n || stopping)
			break;
		waited = true;
		if (!may_wait) {
			pthread_mutex_unlock(&grants_mu);
			send_recalls(rm);
			r->ngm = 0;
			return GRANTS_DEFER;
		}
		if (rm) {
			pthread_mutex_unlock(&grants_mu);
			send_recalls(rm);
			rm = NULL;
			pthread_mutex_lock(&grants_mu);
			continue;
		}
		pthread_cond_timedwait(&grants_cv, &grants_mu, &dl);
	}
	/* No conflict left: mark the modifications in flight, atomically
	 * with the check, so nobody is granted what is being changed. */
	for (i = 0; i < r->ngm; i++) {
		struct gobj *o;

		r->gm[i].obj = NULL;
		if (!r->gm[i].write)
			continue;
		o = gobj_find(r->gm[i].id, true);
		if (!o)
			continue;
		r->gm[i].c = r->c;
		r->gm[i].next = o->busy;
		o->busy = &r->gm[i];
		r->gm[i].obj = o;
	}
	/* Before the handler reads anything: what it reads is as of now
	 * or later (grant_fill). */
	r->since = change_now();
	pthread_mutex_unlock(&grants_mu);
	send_recalls(rm);
	if (waited)	/* what child_id saw may have changed since */
		req_drop_pre(r);
	return 0;
}

/*
 * A create under a delegated id, and a is the object made: the client
 * made it first, under the directory's EXCL, and what it buffered for
 * the object since (data, attributes) is its alone still.
 */
static bool created_here(const struct req *r, const struct wattr *a)
{
	switch (r->m->hdr.op) {
	case POHMEL_OP_CREATE:
	case POHMEL_OP_MKDIR:
	case POHMEL_OP_MKNOD:
	case POHMEL_OP_SYMLINK:
		return (r->m->flags & POHMEL_CREATE_ID) &&
		       a->oid.id != r->m->oid.id;
	}
	return false;
}

static uint32_t want_of(const struct req *r, const struct wattr *a)
{
	switch (r->m->hdr.op) {
	case POHMEL_OP_AUTH:
		return POHMEL_GRANT_NONE;
	case POHMEL_OP_WRITE:
	case POHMEL_OP_SETATTR:
		return a->oid.id == r->m->oid.id ? POHMEL_GRANT_EXCL :
						   POHMEL_GRANT_SHARED;
	case POHMEL_OP_GRANT:
		return r->m->type;
	}
	return created_here(r, a) ? POHMEL_GRANT_EXCL : POHMEL_GRANT_SHARED;
}

/*
 * Must hold grants_mu. Add a watch for o (first holder); false if none
 * can be had, then no grant is given. A change between the reply's stat
 * and the watch shows as a changed ctime.
 */
static bool watch(struct gobj *o, int fd, const struct wattr *a)
{
	struct wtime ct;
	struct stat st;

	if (o->wd >= 0)
		return true;
	o->wd = notify_watch(fd, o->oid.id, S_ISDIR(a->mode));
	if (o->wd < 0)
		return false;
	if (fstat(fd, &st))
		goto unwatch;
	/* as a reply reports it (a creating client's: ctimes.c) */
	ct.sec = st.st_ctim.tv_sec;
	ct.nsec = (uint32_t)st.st_ctim.tv_nsec;
	ctime_report(o->oid.id, &st, &ct, NULL);
	if (ct.sec != a->ctime.sec || ct.nsec != a->ctime.nsec)
		goto unwatch;
	return true;

unwatch:
	notify_unwatch(o->wd);
	o->wd = -1;
	return false;
}

/*
 * Tests: while the file named by POHMELD_TEST_GRANT_HOLD exists, a
 * reading request (no write target) waits here, after it took what its
 * reply describes and before its grant; it creates "FILE.held" first,
 * so that a test knows when to make its change.
 */
static void test_hold(const struct req *r)
{
	char mark[PATH_MAX];
	int i, fd;

	if (access(test_hold_path, F_OK))
		return;
	for (i = 0; i < r->ngm; i++)
		if (r->gm[i].write)
			return;
	snprintf(mark, sizeof(mark), "%s.held", test_hold_path);
	fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	while (access(test_hold_path, F_OK) == 0)
		usleep(10000);
}

/* The tag of r's own bump of id, 0 if none (grant_mark.tag). */
static uint64_t own_tag(const struct req *r, uint64_t id)
{
	int i;

	for (i = 0; i < r->ngm; i++)
		if (r->gm[i].write && r->gm[i].id == id)
			return r->gm[i].tag;
	return 0;
}

void grant_fill(struct req *r, int fd, struct wattr *a)
{
	bool grants = r->c && (r->c->features & POHMEL_FEAT_GRANTS);
	uint32_t level = grants ? want_of(r, a) : POHMEL_GRANT_NONE;
	/*
	 * The creator may hold the object's data and attributes already
	 * (created_here). Whatever this reply can give, the record says
	 * EXCL, so another client's access recalls what only the creator
	 * has; given less, the creator writes it back at once (wb.c
	 * write_unkept), but a reader that came first must not see the
	 * object without it.
	 */
	bool buffered = grants && created_here(r, a);
	struct recall_msg *rm = NULL;
	struct grant_mark *g;
	struct holder *h, *x;
	struct gobj *o;

	a->grant = POHMEL_GRANT_NONE;
	if (!grants && !atomic_load(&grant_conns))
		return;
	if (test_hold_path && level != POHMEL_GRANT_NONE)
		test_hold(r);
	pthread_mutex_lock(&grants_mu);
	o = gobj_find(a->oid.id, level != POHMEL_GRANT_NONE);
	if (!o)
		goto out;
	/*
	 * Another object under this id: its inode number was reused. The
	 * watch (if the kernel has not dropped it yet) is on the old inode,
	 * and what the holders cache may be the old object: recall them,
	 * and watch the new inode below.
	 */
	if (o->oid.gen && o->oid.gen != a->oid.gen) {
		if (o->wd >= 0)
			notify_unwatch(o->wd);
		o->wd = -1;
		recall_holders(o, &rm);
	}
	o->oid.gen = a->oid.gen;
	if (level == POHMEL_GRANT_NONE || r->c->grants_gone || stopping)
		goto out_free;
	h = holder_of(o, r->c);
	for (x = o->holders; x; x = x->next) {
		if (x == h)
			continue;
		if (x->grant == POHMEL_GRANT_EXCL)
			level = POHMEL_GRANT_NONE;
		else if (x->grant && level == POHMEL_GRANT_EXCL)
			level = POHMEL_GRANT_SHARED;
	}
	for (g = o->busy; g; g = g->next)
		if (g->c != r->c)
			level = POHMEL_GRANT_NONE;
	/* Modified since r began, by another request or locally: what
	 * the reply describes may be older than that (no mark is left
	 * of a request that ran wholly in between). */
	if (level != POHMEL_GRANT_NONE &&
	    change_moved(o->oid.id, r->since, own_tag(r, o->oid.id)))
		level = POHMEL_GRANT_NONE;
	if (h && h->grant > level && level != POHMEL_GRANT_NONE)
		level = h->grant;
	if (h && h->recall_id && level > h->recall_to)
		level = h->recall_to;
	if (!h && level != POHMEL_GRANT_NONE && !grant_quota_ok(r->c))
		level = POHMEL_GRANT_NONE;
	if (level != POHMEL_GRANT_NONE && !watch(o, fd, a))
		level = POHMEL_GRANT_NONE;
	if (!h && (level != POHMEL_GRANT_NONE || buffered)) {
		h = calloc(1, sizeof(*h));
		if (!h) {
			level = POHMEL_GRANT_NONE;
			goto out_free;
		}
		conn_get(r->c);
		h->c = r->c;
		h->c->ngrants++;
		h->next = o->holders;
		o->holders = h;
	}
	/*
	 * While a recall is pending the holder may still be flushing what
	 * the higher grant let it buffer: its record stays at that grant
	 * until the ack (settle), however low this reply caps it, or a
	 * waiting requester would take the conflict as gone. Likewise a
	 * reply that gives a holder nothing (what it describes may be
	 * older than a change in flight) does not end the record: what the
	 * client buffered under the grant (write-back: data kept past
	 * close, local creates) is still only there, and another client's
	 * access must recall it. Only a recall, RELEASE or the connection's
	 * end does.
	 */
	if (h && !h->recall_id && buffered)
		h->grant = POHMEL_GRANT_EXCL;
	else if (h && !h->recall_id && level != POHMEL_GRANT_NONE)
		h->grant = level;
	a->grant = level;
out_free:
	gobj_maybe_free(o);
out:
	pthread_mutex_unlock(&grants_mu);
	send_recalls(rm);
}

int op_recall_ack(struct req *r)
{
	const struct msg *m = r->m;
	struct gobj *o;
	struct holder *h;

	pthread_mutex_lock(&grants_mu);
	o = gobj_find(m->oid.id, false);
	h = o ? holder_of(o, r->c) : NULL;
	if (h && h->recall_id && h->recall_id == m->cookie) {
		settle(o, h);
		gobj_maybe_free(o);
		pthread_cond_broadcast(&grants_cv);
	}
	pthread_mutex_unlock(&grants_mu);
	return 0;
}

/*
 * The client dropped its cache of these objects: its grants end, a
 * pending recall of them counts as acked (a requester may go on). In
 * order with the connection's other requests (pohmel_proto.h), so a grant
 * a later request got is not taken.
 */
/* Must hold grants_mu. c's grant on id ends; whether a recall waited. */
static bool release_one(struct conn *c, uint64_t id)
{
	struct gobj *o = gobj_find(id, false);
	struct holder *h = o ? holder_of(o, c) : NULL;
	bool woke;

	if (!h)
		return false;
	woke = h->recall_id != 0;
	holder_del(o, h);
	gobj_maybe_free(o);
	return woke;
}

int op_release(struct req *r)
{
	const struct msg *m = r->m;
	bool woke = false;
	struct woid oid;
	uint32_t i;

	if (!r->c || !(r->c->features & POHMEL_FEAT_GRANTS))
		return 0;
	pthread_mutex_lock(&grants_mu);
	for (i = 0; i < m->count; i++) {
		woid_get(m->body + (size_t)i * POHMEL_OID_SIZE, &oid);
		woke |= release_one(r->c, oid.id);
	}
	if (woke)
		pthread_cond_broadcast(&grants_cv);
	pthread_mutex_unlock(&grants_mu);
	return 0;
}

/* A removal's POHMEL_REMOVE_RELEASE (ops_dir.c): as a RELEASE of o. */
void grants_release(struct conn *c, const struct woid *o)
{
	if (!(c->features & POHMEL_FEAT_GRANTS))
		return;
	pthread_mutex_lock(&grants_mu);
	if (release_one(c, o->id))
		pthread_cond_broadcast(&grants_cv);
	pthread_mutex_unlock(&grants_mu);
}

/* For STATS (rare): counted, not kept up to date on every change. */
/* Objects c holds a grant on (pohmel clients). */
int grants_held(struct conn *c)
{
	int n;

	pthread_mutex_lock(&grants_mu);
	n = c->ngrants;
	pthread_mutex_unlock(&grants_mu);
	return n;
}

void grants_counts(size_t *holders, size_t *watched)
{
	struct holder *h;
	struct gobj *o;
	size_t i;

	*holders = *watched = 0;
	pthread_mutex_lock(&grants_mu);
	for (i = 0; i < BUCKETS; i++) {
		for (o = tab[i]; o; o = o->next) {
			*watched += o->wd >= 0;
			for (h = o->holders; h; h = h->next)
				(*holders)++;
		}
	}
	pthread_mutex_unlock(&grants_mu);
}

/* A connection is gone: its grants with it, at once. */
void grants_conn_gone(struct conn *c)
{
	struct gobj *o, *next;
	struct holder *h;
	size_t i;

	if (!(c->features & POHMEL_FEAT_GRANTS))
		return;
	pthread_mutex_lock(&grants_mu);
	c->grants_gone = true;
	for (i = 0; i < BUCKETS; i++) {
		for (o = tab[i]; o; o = next) {
			next = o->next;
			h = holder_of(o, c);
			if (h) {
				holder_del(o, h);
				gobj_maybe_free(o);
			}
		}
	}
	pthread_cond_broadcast(&grants_cv);
	pthread_mutex_unlock(&grants_mu);
	atomic_fetch_sub(&grant_conns, 1);
}

/* Inotify queue overflow: every object may have changed. */
void grants_recall_all(void)
{
	struct recall_msg *rm = NULL;
	struct gobj *o;
	size_t i;

	pthread_mutex_lock(&grants_mu);
	for (i = 0; i < BUCKETS; i++)
		for (o = tab[i]; o; o = o->next)
			recall_holders(o, &rm);
	pthread_mutex_unlock(&grants_mu);
	send_recalls(rm);
}

/* SIGTERM: nobody waits for acks any more. */
void grants_shutdown(void)
{
	pthread_mutex_lock(&grants_mu);
	stopping = true;
	pthread_cond_broadcast(&grants_cv);
	pthread_mutex_unlock(&grants_mu);
}
