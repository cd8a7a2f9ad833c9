// SPDX-License-Identifier: MIT
/*
 * pohmel_clients.c - "pohmel HOST clients": the server's sessions as a
 * table (or, with -r, the server's "session ..." lines as they come).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libpohmel.h"
#include "pohmel_cmd.h"

#define LIST_CAP	(4U << 20)

/* key=value of a "session ..." line into out ("?" if missing) */
static void field(const char *line, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key);
	const char *p = line;

	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[kl] == '=') {
			size_t n = strcspn(p + kl + 1, " \n");

			if (n >= cap)
				n = cap - 1;
			memcpy(out, p + kl + 1, n);
			out[n] = 0;
			return;
		}
		p += kl;
	}
	snprintf(out, cap, "?");
}

/* seconds as 45s, 12m, 3h05m, 2d04h */
static void dur(const char *s, char *out, size_t cap)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	if (*s < '0' || *s > '9' || *end)
		snprintf(out, cap, "%s", s);
	else if (v < 60)
		snprintf(out, cap, "%llds", v);
	else if (v < 3600)
		snprintf(out, cap, "%lldm", v / 60);
	else if (v < 86400)
		snprintf(out, cap, "%lldh%02lldm", v / 3600, v / 60 % 60);
	else
		snprintf(out, cap, "%lldd%02lldh", v / 86400, v / 3600 % 24);
}

/* bytes as 512, 3.1K, 20M, 1.5G (powers of 1024) */
static void size(const char *s, char *out, size_t cap)
{
	static const char units[] = "KMGTP";
	char *end;
	double v = strtod(s, &end);
	int u = -1;

	if (*s < '0' || *s > '9' || *end) {
		snprintf(out, cap, "%s", s);
		return;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(out, cap, "%.0f", v);
	else
		snprintf(out, cap, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

/* The fields of a "session ..." line the table shows, in its order. */
enum { F_KEY, F_PEER, F_SEC, F_CONNS, F_AGE, F_IDLE, F_HANDLES, F_LOCKS,
       F_GRANTS, F_REQ, F_IN, F_OUT, F_N };
static const char *const fields[F_N] = {
	"key", "peer", "sec", "conns", "age", "idle", "handles", "locks",
	"grants", "requests", "bytes_in", "bytes_out",
};

static void print_row(const char *line)
{
	char id[24], v[F_N][256], age[24], idle[24], in[24], out[24];
	bool idle_now;
	int i;

	if (sscanf(line, "session %23s", id) != 1)
		return;
	for (i = 0; i < F_N; i++)
		field(line, fields[i], v[i], sizeof(v[i]));
	idle_now = !strcmp(v[F_CONNS], "0");
	dur(v[F_AGE], age, sizeof(age));
	if (idle_now)
		dur(v[F_IDLE], idle, sizeof(idle));
	else
		snprintf(idle, sizeof(idle), "-");
	size(v[F_IN], in, sizeof(in));
	size(v[F_OUT], out, sizeof(out));
	printf("%-7s %-12s %-26s %-4s %-8s %-8s %7s %5s %6s %9s %6s %6s\n",
	       id, v[F_KEY], idle_now ? "(idle)" : v[F_PEER], v[F_SEC], age,
	       idle, v[F_HANDLES], v[F_LOCKS], v[F_GRANTS], v[F_REQ], in, out);
}

int pohmel_clients(struct pc *pc, int argc, char **argv)
{
	bool raw = argc == 2 && !strcmp(argv[1], "-r");
	char *buf, *line, *save = NULL;
	int err, n = 0;

	if (argc != 1 && !raw)
		return -EINVAL;
	buf = malloc(LIST_CAP);
	if (!buf) {
		fprintf(stderr, "pohmel: clients: out of memory\n");
		return 1;
	}
	err = pc_stats_what(pc, POHMEL_STATS_SESSIONS, buf, LIST_CAP);
	if (err) {
		if (err == EACCES)
			fprintf(stderr, "pohmel: clients: permission denied: the listing is for keys that the export's admin= names (without a key file: clients on a loopback address)\n");
		else if (err < 0)
			fprintf(stderr, "pohmel: clients: %s (a pohmeld older than this tool closes the connection on this request)\n",
				pc->err[0] ? pc->err : strerror(-err));
		else
			fprintf(stderr, "pohmel: clients: %s\n", strerror(err));
		free(buf);
		return 1;
	}
	if (!raw)
		printf("%-7s %-12s %-26s %-4s %-8s %-8s %7s %5s %6s %9s %6s %6s\n",
		       "SESSION", "KEY", "ADDRESS", "SEC", "AGE", "IDLE",
		       "HANDLES", "LOCKS", "GRANTS", "REQUESTS", "IN", "OUT");
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "truncated ", 10)) {
			fprintf(stderr, "pohmel: clients: %s more sessions did not fit in the reply\n",
				line + 10);
			continue;
		}
		if (strncmp(line, "session ", 8))
			continue;
		n++;
		if (raw)
			printf("%s\n", line);
		else
			print_row(line);
	}
	if (!raw)
		printf("%d session%s\n", n, n == 1 ? "" : "s");
	free(buf);
	return 0;
}
