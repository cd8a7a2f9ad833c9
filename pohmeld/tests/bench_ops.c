// SPDX-License-Identifier: MIT
/*
 * bench_ops - small-operation throughput of pohmeld on loopback: each of
 * C client connections (one thread each, one request in flight at a time,
 * as a synchronous caller sees it) runs one kind of operation for S
 * seconds; prints operations per second, mean latency and pohmeld's CPU
 * time per operation for each kind and connection count. The "held"
 * kinds ask for grants and hold one on their directory, as a kernel
 * mount does (every change in it then goes through grants.c and
 * notify.c). Numbers, not assertions (make bench-ops).
 *   bench_ops PATH-TO-POHMELD [SECONDS] [CONNS...]
 * BENCH_KIND=TEXT runs only the kinds whose name contains TEXT (for a
 * profiler: perf record -p "$(pidof pohmeld)").
 */
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include "integ_lib.h"

enum kind { K_GETATTR, K_LOOKUP, K_CREATE_UNLINK, K_CREATE_UNLINK_HELD,
	    K_WRITE4K, K_READ4K, K_WRITE1M, K_WRITE1M_HELD, K_READ1M, K_READDIR,
	    K_NKINDS };

static const char *const kind_name[K_NKINDS] = {
	[K_GETATTR]		= "getattr",
	[K_LOOKUP]		= "lookup",
	[K_CREATE_UNLINK]	= "create+unlink",
	[K_CREATE_UNLINK_HELD]	= "create+unlink, directory held",
	[K_WRITE4K]		= "write 4 KiB",
	[K_READ4K]		= "read 4 KiB",
	[K_WRITE1M]		= "write 1 MiB",
	[K_WRITE1M_HELD]	= "write 1 MiB, file held",
	[K_READ1M]		= "read 1 MiB",
	[K_READDIR]		= "readdir (64 entries)",
};

struct worker {
	pthread_t th;
	struct srvproc *sp;
	enum kind kind;
	int id;
	double seconds;
	unsigned long ops;	/* completed operations (one per pair) */
	int err;		/* first error, 0 if none */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int count_ent(void *arg, const char *name, const struct wattr *a,
		     uint64_t cookie)
{
	(void)name, (void)a, (void)cookie;
	(*(unsigned long *)arg)++;
	return 0;
}

/* One op of w->kind; the fixture (dir d, file f, handle h) is per worker. */
static int one_op(struct worker *w, struct pc *c, const struct wattr *d,
		  const struct wattr *f, uint64_t h, unsigned long i)
{
	static const uint8_t zero[4096];
	static __thread uint8_t big[1 << 20];
	uint8_t buf[4096];
	unsigned long n = 0;
	struct wattr a;
	char name[64];
	uint32_t got;
	int err;

	switch (w->kind) {
	case K_GETATTR:
		return pc_getattr(c, &f->oid, &a);
	case K_LOOKUP:
		return pc_lookup(c, &d->oid, "f", &a);
	case K_CREATE_UNLINK:
	case K_CREATE_UNLINK_HELD:
		snprintf(name, sizeof(name), "n%lu", i);
		err = pc_mkobj(c, POHMEL_OP_CREATE, &d->oid, name, 0644, 0, 0,
			       NULL, &a, NULL);
		return err ? err : pc_remove(c, POHMEL_OP_UNLINK, &d->oid, name);
	case K_WRITE4K:
		return pc_write(c, &f->oid, h, (i % 256) * 4096, zero,
				sizeof(zero), 0, &got);
	case K_READ4K:
		return pc_read(c, &f->oid, h, (i % 256) * 4096, buf,
			       sizeof(buf), &got);
	case K_WRITE1M:
	case K_WRITE1M_HELD:
		return pc_write(c, &f->oid, h, (i % 16) << 20, big, sizeof(big),
				0, &got);
	case K_READ1M:
		return pc_read(c, &f->oid, h, (i % 16) << 20, big, sizeof(big),
			       &got);
	case K_READDIR:
		err = pc_readdir_all(c, &d->oid, count_ent, &n);
		return err ? err : (n >= 64 ? 0 : -EIO);
	default:
		return -EINVAL;
	}
}

static void *run_worker(void *arg)
{
	static const uint8_t block[1 << 20];
	struct worker *w = arg;
	struct wattr d, f, e;
	uint64_t h = 0;
	unsigned long i;
	char name[32];
	struct pc c;
	uint32_t got;
	double end;
	int err;

	if (w->kind == K_CREATE_UNLINK_HELD || w->kind == K_WRITE1M_HELD) {
		err = pc_init(&c) ? -ENOMEM : 0;
		if (err)
			goto out;
		c.want_features = POHMEL_FEAT_BATCH | POHMEL_FEAT_GRANTS;
		err = pc_connect(&c, "127.0.0.1", w->sp->port);
		if (!err)
			err = pc_handshake(&c);
	} else {
		err = cl_open(&c, w->sp, 0, 0);
	}
	if (err)
		goto out;
	snprintf(name, sizeof(name), "w%d-%d", w->kind, w->id);
	err = pc_mkobj(&c, POHMEL_OP_MKDIR, &c.root.oid, name, 0755, 0, 0,
		       NULL, &d, NULL);
	if (!err && (w->kind == K_CREATE_UNLINK_HELD ||
		     w->kind == K_WRITE1M_HELD)) {
		err = pc_getattr(&c, &d.oid, &d);
		if (!err && d.grant == POHMEL_GRANT_NONE)
			err = -ENOLCK;	/* the bench would measure nothing */
	}
	if (err)
		goto out_close;
	err = pc_mkobj(&c, POHMEL_OP_CREATE, &d.oid, "f", 0644, 0, 0, NULL,
		       &f, NULL);
	if (!err)
		err = pc_open(&c, &f.oid, POHMEL_OPEN_ALL, &h, &f);
	/* the 1 MiB kinds use 16 MiB of the file, the others its first */
	for (i = 0; !err && i < (w->kind == K_READ1M ? 16 : 1); i++)
		err = pc_write(&c, &f.oid, h, i << 20, block, sizeof(block), 0,
			       &got);
	for (i = 0; !err && w->kind == K_READDIR && i < 63; i++) {
		snprintf(name, sizeof(name), "e%lu", i);
		err = pc_mkobj(&c, POHMEL_OP_CREATE, &d.oid, name, 0644, 0, 0,
			       NULL, &e, NULL);
	}
	if (!err && w->kind == K_WRITE1M_HELD) {
		err = pc_getattr(&c, &f.oid, &f);
		if (!err && f.grant == POHMEL_GRANT_NONE)
			err = -ENOLCK;
	}
	if (err)
		goto out_close;
	end = now() + w->seconds;
	for (i = 0; now() < end; i++) {
		err = one_op(w, &c, &d, &f, h, i);
		if (err)
			break;
		w->ops++;
	}
	pc_close(&c, &f.oid, h);
out_close:
	cl_close(&c);
out:
	w->err = err;
	return NULL;
}

/* pohmeld's user + system CPU time so far, in seconds (-1 if unknown). */
static double server_cpu(pid_t pid)
{
	unsigned long ut, st;
	char path[64], buf[1024], *p;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	if (!p)
		return -1;
	/* fields 14 and 15 (utime, stime) are the 12th and 13th after ')' */
	n = sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
		   &ut, &st);
	return n == 2 ? (double)(ut + st) / (double)sysconf(_SC_CLK_TCK) : -1;
}

int main(int argc, char **argv)
{
	static const int def_conns[] = { 1, 4, 16 };
	double seconds = argc > 2 ? atof(argv[2]) : 3;
	int nconns = argc > 3 ? argc - 3 : 3, ci, k, i, rc = 0;
	struct srvproc sp;

	if (argc < 2 || seconds <= 0)
		return 2;
	server_bin = argv[1];
	if (start_tmp_server("bench", "max-connections 128\n", &sp))
		return 1;
	printf("pohmeld small-op throughput on loopback, %.0f s per cell; one "
	       "request in flight per connection\n", seconds);
	printf("| operation | connections | ops/s | mean latency (us) | "
	       "pohmeld CPU per op (us) |\n");
	printf("|---|---:|---:|---:|---:|\n");
	for (k = 0; k < K_NKINDS; k++) {
		if (getenv("BENCH_KIND") &&
		    !strstr(kind_name[k], getenv("BENCH_KIND")))
			continue;
		for (ci = 0; ci < nconns; ci++) {
			int n = argc > 3 ? atoi(argv[3 + ci]) : def_conns[ci];
			struct worker *w = calloc((size_t)n, sizeof(*w));
			unsigned long total = 0;
			double t0, el, cpu0, cpu;

			if (!w || n < 1 || n > 64) {
				rc = 2;
				free(w);
				continue;
			}
			t0 = now();
			cpu0 = server_cpu(sp.pid);
			for (i = 0; i < n; i++) {
				w[i] = (struct worker){ .sp = &sp, .kind = k,
					.id = ci * 100 + i, .seconds = seconds };
				pthread_create(&w[i].th, NULL, run_worker, &w[i]);
			}
			for (i = 0; i < n; i++) {
				pthread_join(w[i].th, NULL);
				total += w[i].ops;
				if (w[i].err) {
					fprintf(stderr, "%s x%d: worker %d: %s\n",
						kind_name[k], n, i,
						strerror(-w[i].err));
					rc = 1;
				}
			}
			el = now() - t0;
			cpu = server_cpu(sp.pid) - cpu0;
			printf("| %s | %d | %.0f | %.1f | %.1f |\n", kind_name[k],
			       n, total / el, total ? el * 1e6 * n / total : 0.0,
			       total && cpu0 >= 0 ? cpu * 1e6 / total : 0.0);
			fflush(stdout);
			free(w);
		}
	}
	stop_server(&sp);
	if (remove_base())
		rc = 1;
	return rc;
}
