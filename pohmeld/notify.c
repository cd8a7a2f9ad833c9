// SPDX-License-Identifier: MIT
/*
 * notify.c - changes made in the export directly on the server host.
 *
 * Every object some connection holds a grant on has an inotify watch
 * (grants.c adds it with the first holder and removes it with the last).
 * One thread reads the events and hands each to grants_local_change(),
 * which recalls the holders unless the object's ctime is still what
 * pohmeld last replied (its own changes). Events are read as they come:
 * the recall goes out within milliseconds of the local change (the
 * documented bound is 1 s). A queue overflow recalls every grant.
 *
 * Watched per object: a file's IN_MODIFY/IN_ATTRIB/IN_DELETE_SELF/
 * IN_MOVE_SELF; for a directory also entries created, removed or renamed
 * in it. Events a directory reports about a child's data or attributes
 * are ignored: a held child has its own watch.
 *
 * An id is an inode number, and ext4 hands a freed one out again at
 * once. When the kernel drops a watch (IN_IGNORED: the inode is gone)
 * its entry goes and grants.c forgets it (grants_watch_gone), so a new
 * object under the same number is watched anew; grants.c also moves the
 * watch when a reply shows another gen under a watched id (an IN_IGNORED
 * not read yet, or lost in an overflow).
 *
 * pohmeld's own changes cause events too. A modifying request marks its
 * objects in flight (grants.c), and events for such objects are skipped.
 * Before the marks go, the request waits until this thread has read
 * every event it caused: it takes a ticket (notify_ticket) and waits
 * (notify_wait) until this thread has seen the queue empty after the
 * ticket was taken. The kernel queues the events within the system
 * calls that cause them, and this thread is the only reader, so an
 * empty queue means they were read and handled. To be sure to wake up,
 * a ticket taker writes a byte into SYNC_FIFO, a FIFO in the state
 * directory watched for IN_MODIFY, unless a byte written earlier is not
 * drained yet (its event is then still ahead: armed). So a busy server
 * pays one write per wake-up of this thread, not one per request (before,
 * each request created and removed a file in the state directory).
 * A local change to an object while pohmeld itself modifies it is thus
 * taken for pohmeld's (the next one is seen). If the queue does not run
 * empty for SYNC_MAX_MS (a flood of local changes), the wait ends anyway.
 *
 * Lock rules: notify_mu protects the wd -> id table and the tickets
 * (sync_req, sync_done, armed, sync_since; sync_cv signals sync_done);
 * taken under grants_mu
 * (notify_watch/unwatch), never the other way round: the thread copies
 * the id and drops notify_mu before calling grants.c. notify_watch holds
 * it across inotify_add_watch() and the insert.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pohmeld.h"

#define WD_BUCKETS	1024
#define FILE_MASK	(IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
#define SYNC_FIFO	".pohmeld-sync"
#define SYNC_MAX_MS	1000
#define DIR_MASK	(FILE_MASK | IN_CREATE | IN_DELETE | IN_MOVED_FROM | \
			 IN_MOVED_TO)

struct wd_ent {
	struct wd_ent *next;
	int wd;
	uint64_t id;
};

static pthread_mutex_t notify_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cv;		/* sync_done moved */
static struct wd_ent *wds[WD_BUCKETS];	/* under notify_mu */
static uint64_t sync_req, sync_done;	/* under notify_mu */
static bool armed;			/* under notify_mu */
static struct timespec sync_since;	/* under notify_mu: oldest ticket */
static int ifd = -1;			/* set before any connection */
static int sync_wd = -1, fifo_fd = -1, fifo_wd = -1;	/* likewise */
static const char *test_hold_path;		/* likewise */

/*
 * The FIFO this thread is woken through, made anew (a leftover of an
 * earlier run may be anything). Returns its watch, or -1 (logged).
 */
static int fifo_init(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	int wd;

	snprintf(path, sizeof(path), "%s/" SYNC_FIFO, dir);
	if ((unlink(path) && errno != ENOENT) || mkfifo(path, 0600)) {
		log_warn("%s: %s: no grants will be given", path,
			 strerror(errno));
		return -1;
	}
	/* O_RDWR: never blocks, and the FIFO always has a reader */
	fifo_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fifo_fd < 0 || fstat(fifo_fd, &st) || !S_ISFIFO(st.st_mode)) {
		log_warn("%s: %s: no grants will be given", path,
			 fifo_fd < 0 ? strerror(errno) : "not the FIFO made");
		goto err;
	}
	wd = inotify_add_watch(ifd, path, IN_MODIFY);
	if (wd < 0) {
		log_warn("inotify watch of %s: %s: no grants will be given",
			 path, strerror(errno));
		goto err;
	}
	return wd;
err:
	if (fifo_fd >= 0)
		close(fifo_fd);
	fifo_fd = -1;
	return -1;
}

int notify_init(const char *dir)
{
	pthread_attr_t attr;
	pthread_t th;
	int err;

	pthread_condattr_t ca;

	test_hold_path = getenv("POHMELD_TEST_NOTIFY_HOLD");
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sync_cv, &ca);
	pthread_condattr_destroy(&ca);
	ifd = inotify_init1(IN_CLOEXEC);
	if (ifd < 0) {
		log_warn("inotify: %s: no grants will be given",
			 strerror(errno));
		return 0;
	}
	/* Known, so that the state directory is never watched for a
	 * client (notify_watch); no event of it is wanted. */
	sync_wd = inotify_add_watch(ifd, dir, IN_DELETE_SELF | IN_ONLYDIR);
	if (sync_wd < 0) {
		log_warn("inotify watch of %s: %s: no grants will be given",
			 dir, strerror(errno));
		goto err;
	}
	fifo_wd = fifo_init(dir);
	if (fifo_wd < 0)
		goto err;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, notify_thread, NULL);
	pthread_attr_destroy(&attr);
	if (!err)
		return 0;
	log_warn("notify thread: %s: no grants will be given",
		 strerror(err));
	close(fifo_fd);
	fifo_fd = -1;
err:
	close(ifd);
	ifd = -1;
	return 0;
}

/*
 * A ticket for the events a request caused so far, for notify_wait().
 * 0: there is no notify thread, or it cannot be woken; nothing to wait
 * for then.
 */
uint64_t notify_ticket(void)
{
	static atomic_bool warned;
	uint64_t t;
	bool wake;

	if (ifd < 0)
		return 0;
	pthread_mutex_lock(&notify_mu);
	t = ++sync_req;
	if (sync_done == t - 1)
		clock_gettime(CLOCK_MONOTONIC, &sync_since);
	wake = !armed;
	armed = true;
	pthread_mutex_unlock(&notify_mu);
	if (!wake || write(fifo_fd, "", 1) == 1)
		return t;
	/* Not woken: no wait (an event of ours may look local). */
	pthread_mutex_lock(&notify_mu);
	armed = false;
	pthread_mutex_unlock(&notify_mu);
	if (!atomic_exchange(&warned, true))
		log_warn("%s: write: %s: pohmeld's own changes may be taken "
			 "for local ones (needless recalls)", SYNC_FIFO,
			 strerror(errno));
	return 0;
}

/*
 * After a batch of events: if tickets wait and the queue is empty (or
 * they waited SYNC_MAX_MS), every ticket taken before this check is done.
 */
static void sync_check(void)
{
	struct timespec now;
	uint64_t snap;
	bool late;
	int n = 0;

	pthread_mutex_lock(&notify_mu);
	snap = sync_req;
	clock_gettime(CLOCK_MONOTONIC, &now);
	late = (now.tv_sec - sync_since.tv_sec) * 1000 +
	       (now.tv_nsec - sync_since.tv_nsec) / 1000000 >= SYNC_MAX_MS;
	pthread_mutex_unlock(&notify_mu);
	if (snap == sync_done)
		return;		/* only this thread moves sync_done */
	if (!late && (ioctl(ifd, FIONREAD, &n) || n))
		return;
	pthread_mutex_lock(&notify_mu);
	sync_done = snap;
	if (sync_req != snap)
		sync_since = now;
	pthread_cond_broadcast(&sync_cv);
	pthread_mutex_unlock(&notify_mu);
}

/* Wait until every event queued before ticket t was read (at most
 * SYNC_MAX_MS, then carry on). */
void notify_wait(uint64_t t)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += SYNC_MAX_MS / 1000;
	pthread_mutex_lock(&notify_mu);
	while (sync_done < t)
		if (pthread_cond_timedwait(&sync_cv, &notify_mu, &dl) ==
		    ETIMEDOUT)
			break;
	pthread_mutex_unlock(&notify_mu);
}

/* The FIFO's byte woke us: drain it, let the next ticket write again. */
static void fifo_event(void)
{
	char buf[64];

	pthread_mutex_lock(&notify_mu);
	armed = false;
	pthread_mutex_unlock(&notify_mu);
	while (read(fifo_fd, buf, sizeof(buf)) > 0)
		;
}

/* Must hold notify_mu. Unlink wd's entry from the table; NULL if none. */
static struct wd_ent *take_wd(int wd)
{
	struct wd_ent *e, **pp;

	for (pp = &wds[(unsigned int)wd % WD_BUCKETS]; *pp;
	     pp = &(*pp)->next) {
		if ((*pp)->wd == wd) {
			e = *pp;
			*pp = e->next;
			return e;
		}
	}
	return NULL;
}

/*
 * Must hold grants_mu. Returns the watch descriptor or -1. notify_mu is
 * held across inotify_add_watch() and the table insert, so that an
 * IN_IGNORED for the new watch (the object removed at once) finds it.
 */
int notify_watch(int fd, uint64_t id, bool dir)
{
	struct wd_ent *e, **pp;
	char path[64];
	int wd;

	if (ifd < 0)
		return -1;
	e = malloc(sizeof(*e));
	if (!e)
		return -1;
	proc_path(path, sizeof(path), fd);
	pthread_mutex_lock(&notify_mu);
	/* follows the /proc link to fd's inode */
	wd = inotify_add_watch(ifd, path, (dir ? DIR_MASK : FILE_MASK));
	if (wd < 0) {
		static atomic_bool warned;
		int err = errno;

		pthread_mutex_unlock(&notify_mu);
		free(e);
		if (!atomic_exchange(&warned, true))
			log_warn("inotify_add_watch: %s: objects without a "
				 "watch get no grant", strerror(err));
		return -1;
	}
	if (wd == sync_wd) {	/* the state directory, inside the export */
		pthread_mutex_unlock(&notify_mu);
		free(e);
		return -1;
	}
	/* The inode is watched already: not through another id (id is the
	 * inode number), so through a stale entry of this one. */
	for (pp = &wds[(unsigned int)wd % WD_BUCKETS]; *pp;
	     pp = &(*pp)->next) {
		if ((*pp)->wd == wd) {
			struct wd_ent *old = *pp;

			*pp = old->next;
			free(old);
			break;
		}
	}
	e->wd = wd;
	e->id = id;
	pp = &wds[(unsigned int)wd % WD_BUCKETS];
	e->next = *pp;
	*pp = e;
	pthread_mutex_unlock(&notify_mu);
	return wd;
}

/* Must hold grants_mu. */
void notify_unwatch(int wd)
{
	struct wd_ent *e;

	pthread_mutex_lock(&notify_mu);
	e = take_wd(wd);
	/* Without an entry the kernel dropped the watch (IN_IGNORED). */
	if (e)
		inotify_rm_watch(ifd, wd);
	pthread_mutex_unlock(&notify_mu);
	free(e);
}

static bool id_of_wd(int wd, uint64_t *id)
{
	struct wd_ent *e;
	bool found = false;

	pthread_mutex_lock(&notify_mu);
	for (e = wds[(unsigned int)wd % WD_BUCKETS]; e; e = e->next) {
		if (e->wd == wd) {
			*id = e->id;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&notify_mu);
	return found;
}

static void event(const struct inotify_event *ev)
{
	struct wd_ent *e;
	uint64_t id;

	if (ev->wd == fifo_wd && fifo_wd >= 0) {
		if (ev->mask & IN_MODIFY)
			fifo_event();
		return;
	}
	if (ev->mask & IN_Q_OVERFLOW) {
		log_warn("inotify queue overflow: recalling every grant");
		grants_recall_all();
		fifo_event();	/* its event may be among those lost */
		return;
	}
	/*
	 * The kernel dropped the watch: the inode is gone (removed), or we
	 * removed it (then the entry went first). Its number may come back
	 * as a new object's id at once, so the entry must not outlive it:
	 * grants.c forgets the watch and the grants on the gone inode.
	 */
	if (ev->mask & IN_IGNORED) {
		pthread_mutex_lock(&notify_mu);
		e = take_wd(ev->wd);
		pthread_mutex_unlock(&notify_mu);
		if (e)
			grants_watch_gone(e->id, ev->wd);
		free(e);
		return;
	}
	/* A child's own data or attributes: its watch reports it. */
	if (ev->len && !(ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM |
				     IN_MOVED_TO)))
		return;
	if (!id_of_wd(ev->wd, &id))
		return;
	grants_local_change(id);
}

/* Tests: while the file named by POHMELD_TEST_NOTIFY_HOLD exists, the
 * thread reads no events (the queue can then overflow). */
static void test_hold(void)
{
	while (test_hold_path && access(test_hold_path, F_OK) == 0)
		usleep(10000);
}

void *notify_thread(void *arg)
{
	char buf[16384] __attribute__((aligned(8)));

	(void)arg;
	for (;;) {
		ssize_t n, off;

		test_hold();
		n = read(ifd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_err("inotify read: %s", strerror(errno));
			return NULL;
		}
		for (off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const void *)(buf + off);

			event(ev);
			off += (ssize_t)sizeof(*ev) + ev->len;
		}
		sync_check();
	}
}
