// SPDX-License-Identifier: MIT
/*
 * test_stall - a slow or malicious client stalls only itself: while one
 * connection sends half a header and goes quiet, one never finishes its
 * HELLO, and one pipelines 1 MiB READs without ever reading a reply (the
 * server's writes to it block), other clients are served in full and the
 * server still shuts down cleanly on SIGTERM. A LOCK waiter that stops
 * reading does not hold up the client whose unlock grants it the lock.
 * The deadlines only tell a hang from progress (they are tens of seconds
 * for work that takes milliseconds), never a speed.
 *   test_stall POHMELD
 */
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include "integ_lib.h"
#include "tap.h"

#define HANG_SECONDS	30
#define NREADS		64

static struct srvproc sp;
static struct woid root;

struct work {
	pthread_t th;
	int id;
	int done;		/* rounds completed */
	int err;
};

/* A well-behaved client: create, write, read back, getattr, unlink. */
static void *good_client(void *arg)
{
	struct work *w = arg;
	char name[32], buf[64], back[64];
	struct wattr f, a;
	uint32_t got;
	struct pc c;
	int k;

	w->err = cl_open(&c, &sp, 0, 0);
	if (w->err)
		return NULL;
	for (k = 0; k < 50; k++) {
		snprintf(name, sizeof(name), "g%d-%d", w->id, k);
		snprintf(buf, sizeof(buf), "client %d round %d", w->id, k);
		w->err = pc_mkobj(&c, POHMEL_OP_CREATE, &root, name, 0644, 0, 0,
				  NULL, &f, NULL);
		if (!w->err)
			w->err = pc_write(&c, &f.oid, 0, 0, buf,
					  (uint32_t)strlen(buf), 0, &got);
		memset(back, 0, sizeof(back));
		if (!w->err)
			w->err = pc_read(&c, &f.oid, 0, 0, back, sizeof(back),
					 &got);
		if (!w->err && strcmp(back, buf))
			w->err = -EIO;
		if (!w->err)
			w->err = pc_getattr(&c, &f.oid, &a);
		if (!w->err)
			w->err = pc_remove(&c, POHMEL_OP_UNLINK, &root, name);
		if (w->err)
			break;
		w->done++;
	}
	cl_close(&c);
	return NULL;
}

static int join_within(pthread_t th, int seconds)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += seconds;
	return pthread_timedjoin_np(th, NULL, &dl);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct unlock {
	pthread_t th;
	struct pc *c;
	const struct woid *o;
	int err;
};

static void *unlocker(void *arg)
{
	struct unlock *u = arg;

	u->err = pc_lock(u->c, u->o, 1, 0, 0, POHMEL_LOCK_UN,
			 POHMEL_LOCK_FLOCK, 1, NULL);
	if (!u->err)
		u->err = pc_ping(u->c);
	return NULL;
}

/*
 * H holds a flock; W waits for it, then pipelines READs and reads no
 * reply, so the server's writes to W block. H's unlock grants W's wait:
 * the grant's reply to W must not hold up H's own reply.
 */
static void t_lock_waiter_mute(const struct woid *f)
{
	uint8_t body[128];
	struct unlock u;
	struct pc h, w;
	uint32_t n;
	int i, ok;
	double t0;

	CHECK(cl_open(&h, &sp, 0, 0) == 0 &&
	      pc_lock(&h, f, 1, 0, 0, POHMEL_LOCK_WR, POHMEL_LOCK_FLOCK, 1,
		      NULL) == 0, "H takes a flock");
	CHECK(cl_open(&w, &sp, 0, 0) == 0, "W connects");
	n = pc_enc_lock(body, f, 2, 0, 0, POHMEL_LOCK_WR,
			POHMEL_LOCK_FLOCK | POHMEL_LOCK_WAIT, 2);
	CHECK(pc_send(&w, POHMEL_OP_LOCK, 1, 0, body, n) == 0,
	      "W waits for it");
	usleep(100000);
	n = pc_enc_io(body, f, 0, 0, 1 << 20, 0, NULL);
	for (ok = 1, i = 0; i < NREADS && ok; i++)
		ok = pc_send(&w, POHMEL_OP_READ, (uint32_t)i + 2, 0, body,
			     n) == 0;
	CHECK(ok, "W pipelines %d 1 MiB READs and reads no reply", NREADS);
	usleep(300000);

	u = (struct unlock){ .c = &h, .o = f, .err = -1 };
	t0 = now();
	pthread_create(&u.th, NULL, unlocker, &u);
	ok = join_within(u.th, HANG_SECONDS) == 0;
	CHECK(ok && !u.err, "H's unlock and a ping answered while W does not "
	      "read (%.2f s)", now() - t0);
	cl_close(&w);		/* unblocks the server if it hung */
	if (!ok)
		pthread_join(u.th, NULL);
	cl_close(&h);
}

int main(int argc, char **argv)
{
	static uint8_t block[1 << 20];
	struct pc half, mute, hog, c;
	struct work w[4];
	uint8_t body[128];
	int i, ok, hung = 0;
	uint32_t got, n;
	struct wattr f;
	double t0;

	if (argc != 2) {
		fprintf(stderr, "usage: test_stall POHMELD\n");
		return 2;
	}
	server_bin = argv[1];
	CHECK(start_tmp_server("stall", "", &sp) == 0, "pohmeld starts");
	if (tap_fail)
		return tap_done();

	CHECK(cl_open(&c, &sp, 0, 0) == 0, "connect");
	root = c.root.oid;
	CHECK(pc_mkobj(&c, POHMEL_OP_CREATE, &root, "big", 0644, 0, 0, NULL,
		       &f, NULL) == 0 &&
	      pc_write(&c, &f.oid, 0, 0, block, sizeof(block), 0, &got) == 0,
	      "a 1 MiB file to read");

	/* Half a header after HELLO, then silence. */
	CHECK(cl_open(&half, &sp, 0, 0) == 0 &&
	      pc_send_raw(&half, "\x50\x4f\x48\x4d\x00\x01\x00\x00\x00\x00",
			  10) == 0, "client A sends half a header and stalls");
	/* Connected, never says HELLO. */
	pc_init(&mute);
	CHECK(pc_connect(&mute, "127.0.0.1", sp.port) == 0,
	      "client B connects and never sends HELLO");
	/* 64 pipelined 1 MiB READs, no reply ever read: the server's
	 * thread for this connection blocks in write. */
	CHECK(cl_open(&hog, &sp, 0, 0) == 0, "client C connects");
	n = pc_enc_io(body, &f.oid, 0, 0, sizeof(block), 0, NULL);
	for (ok = 1, i = 0; i < NREADS && ok; i++)
		ok = pc_send(&hog, POHMEL_OP_READ, (uint32_t)i + 1, 0, body,
			     n) == 0;
	CHECK(ok, "client C pipelines %d 1 MiB READs and reads no reply",
	      NREADS);
	usleep(300000);

	t0 = now();
	for (i = 0; i < 4; i++) {
		w[i] = (struct work){ .id = i };
		pthread_create(&w[i].th, NULL, good_client, &w[i]);
	}
	for (i = 0; i < 4; i++) {
		if (join_within(w[i].th, HANG_SECONDS)) {
			hung++;
			pthread_detach(w[i].th);
		}
	}
	CHECK(!hung, "4 other clients finish while A, B, C stall (%d hung)",
	      hung);
	for (ok = 1, i = 0; i < 4 && !hung; i++)
		ok &= w[i].done == 50 && !w[i].err;
	CHECK(!hung && ok, "each did 50 create/write/read/getattr/unlink "
	      "rounds without an error (%.2f s)", now() - t0);
	CHECK(pc_ping(&c) == 0, "an earlier connection is still served");
	cl_close(&c);
	t_lock_waiter_mute(&f.oid);

	t0 = now();
	CHECK(stop_server(&sp) == 0, "SIGTERM with stalled clients: clean "
	      "exit 0 (%.1f s)", now() - t0);
	cl_close(&half);
	pc_disconnect(&mute);
	cl_close(&hog);
	return finish_base();
}
