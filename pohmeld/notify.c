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
 * Before the marks go, the request reads the queue itself (notify_sync):
 * the kernel queues an event within the system call that causes it, so
 * once the request has read the queue empty, every event it caused was
 * handled while its marks stood. No other thread is woken and nobody
 * waits for one (before, each request woke this thread through a FIFO
 * and waited for it). A flood of local changes ends the read after
 * DRAIN_MAX reads; an event of the request's own still queued then looks
 * local (a needless recall, never a missed one). A local change to an
 * object while pohmeld itself modifies it is taken for pohmeld's (the
 * next one is seen).
 *
 * The thread reads what no request reads for it: local changes. After
 * each read it naps NAP_MS, so that under load, when requests keep the
 * queue empty, it wakes a few hundred times a second at most rather than
 * for each request's events.
 *
 * Lock rules: reader_mu serializes reading ifd and handling what was
 * read (the buffer, and events handled in queue order); it is taken with
 * no other lock held, before grants_mu and notify_mu. notify_mu protects
 * the wd -> id table; it is taken under grants_mu (notify_watch/unwatch)
 * and under reader_mu, never the other way round: an event's id is
 * copied and notify_mu dropped before grants.c is called. notify_watch
 * holds it across inotify_add_watch() and the insert.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <sys/inotify.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pohmeld.h"

#define WD_BUCKETS	1024
#define FILE_MASK	(IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
#define OLD_FIFO	".pohmeld-sync"	/* used up to 0.9: removed */
#define DRAIN_MAX	16	/* reads of EVBUF by one notify_sync */
#define NAP_MS		5
#define EVBUF		16384
#define EV_MAX		(sizeof(struct inotify_event) + NAME_MAX + 1)
#define DIR_MASK	(FILE_MASK | IN_CREATE | IN_DELETE | IN_MOVED_FROM | \
			 IN_MOVED_TO)

struct wd_ent {
	struct wd_ent *next;
	int wd;
	uint64_t id;
};

static pthread_mutex_t notify_mu = PTHREAD_MUTEX_INITIALIZER;
static struct wd_ent *wds[WD_BUCKETS];	/* under notify_mu */
static pthread_mutex_t reader_mu = PTHREAD_MUTEX_INITIALIZER;
static char evbuf[EVBUF] __attribute__((aligned(8)));	/* reader_mu */
static int ifd = -1;			/* set before any connection */
static int sync_wd = -1;		/* likewise */
static const char *test_hold_path;	/* likewise */

int notify_init(const char *dir)
{
	char path[PATH_MAX];
	pthread_attr_t attr;
	pthread_t th;
	int err;

	test_hold_path = getenv("POHMELD_TEST_NOTIFY_HOLD");
	/* the wake-up FIFO of earlier versions, if one is left */
	snprintf(path, sizeof(path), "%s/" OLD_FIFO, dir);
	unlink(path);
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
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
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, notify_thread, NULL);
	pthread_attr_destroy(&attr);
	if (!err)
		return 0;
	log_warn("notify thread: %s: no grants will be given",
		 strerror(err));
err:
	close(ifd);
	ifd = -1;
	return 0;
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

	if (ev->mask & IN_Q_OVERFLOW) {
		log_warn("inotify queue overflow: recalling every grant");
		grants_recall_all();
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

/* Tests: while the file named by POHMELD_TEST_NOTIFY_HOLD exists, no
 * events are read (the queue can then overflow). */
static bool held(void)
{
	return test_hold_path && access(test_hold_path, F_OK) == 0;
}

static void test_hold(void)
{
	while (held())
		usleep(10000);
}

/*
 * Must hold reader_mu. Read and handle what is queued, at most max
 * buffers; false if ifd failed (logged).
 */
static bool drain(int max)
{
	int i;

	for (i = 0; i < max; i++) {
		ssize_t n, off;

		n = read(ifd, evbuf, sizeof(evbuf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0) {
			log_err("inotify read: %s", n ? strerror(errno) :
				"end of file");
			return false;
		}
		for (off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev =
				(const void *)(evbuf + off);

			event(ev);
			off += (ssize_t)sizeof(*ev) + ev->len;
		}
		/* A read takes every queued event that fits: with room
		 * left for the largest, the queue was empty (no EAGAIN
		 * read needed to know). */
		if (n <= EVBUF - (ssize_t)EV_MAX)
			return true;
	}
	return true;
}

/*
 * A modifying request, before its in-flight marks go (grants_end): read
 * every event it caused, so that they are skipped as its own.
 */
void notify_sync(void)
{
	if (ifd < 0 || held())
		return;
	pthread_mutex_lock(&reader_mu);
	drain(DRAIN_MAX);
	pthread_mutex_unlock(&reader_mu);
}

void *notify_thread(void *arg)
{
	const struct timespec nap = { .tv_nsec = NAP_MS * 1000000L };
	struct pollfd p = { .fd = ifd, .events = POLLIN };
	bool ok;

	(void)arg;
	for (;;) {
		if (poll(&p, 1, -1) < 0 && errno != EINTR) {
			log_err("inotify poll: %s", strerror(errno));
			return NULL;
		}
		/* one buffer a round: a test hold stops after it */
		pthread_mutex_lock(&reader_mu);
		ok = drain(1);
		pthread_mutex_unlock(&reader_mu);
		if (!ok)
			return NULL;
		test_hold();
		nanosleep(&nap, NULL);
	}
}
