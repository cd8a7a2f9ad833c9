// SPDX-License-Identifier: MIT
/*
 * bench_mem - memory pohmeld uses per connection: RSS of the server
 * before and after N idle authenticated connections, and after each did
 * one 1 MiB write + read (buffers touched). Numbers, not assertions.
 *   bench_mem PATH-TO-POHMELD [N]
 */
#include <sys/stat.h>
#include "integ_lib.h"

static long rss_kib(pid_t pid)
{
	return proc_status(pid, "VmRSS:");
}

int main(int argc, char **argv)
{
	char extra[128];
	int n = argc > 2 ? atoi(argv[2]) : 100, i, ok = 0;
	static uint8_t data[POHMEL_MAX_DATA];
	long r0, r1, r2;
	struct srvproc sp;
	struct wattr f;
	struct pc *c;
	uint32_t got;

	if (argc < 2 || n < 1)
		return 2;
	server_bin = argv[1];
	/* all from 127.0.0.1: no per-address limit */
	snprintf(extra, sizeof(extra), "max-connections %d\n"
		 "max-connections-per-address 0\n", n + 8);
	if (start_tmp_server("bench", extra, &sp))
		return 1;
	usleep(200000);
	r0 = rss_kib(sp.pid);
	c = calloc((size_t)n, sizeof(*c));
	for (i = 0; i < n; i++)
		ok += cl_open(&c[i], &sp, 0, 0) == 0;
	usleep(200000);
	r1 = rss_kib(sp.pid);
	pc_mkobj(&c[0], POHMEL_OP_CREATE, &c[0].root.oid, "big", 0644, 0, 0,
		 NULL, &f, NULL);
	for (i = 0; i < n; i++) {
		pc_write(&c[i], &f.oid, 0, 0, data, sizeof(data), 0, &got);
		pc_read(&c[i], &f.oid, 0, 0, data, sizeof(data), &got);
	}
	usleep(200000);
	r2 = rss_kib(sp.pid);
	printf("connections: %d (%d authenticated)\n", n, ok);
	printf("server RSS idle: %ld KiB\n", r0);
	printf("with %d idle connections: %ld KiB (%.1f KiB each)\n", n, r1,
	       (double)(r1 - r0) / n);
	printf("after a 1 MiB write+read on each: %ld KiB (%.1f KiB each)\n",
	       r2, (double)(r2 - r0) / n);
	for (i = 0; i < n; i++)
		cl_close(&c[i]);
	stop_server(&sp);
	return remove_base() ? 1 : 0;
}
