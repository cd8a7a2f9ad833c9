// SPDX-License-Identifier: MIT
/*
 * log.c - the one log API. Lines go to stderr prefixed with "<N>", the
 * syslog priority, which journald turns into the entry's priority.
 */
#include <stdarg.h>
#include <time.h>
#include "pohmeld.h"

int log_level = LOG_INFO;

void log_msg(int prio, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (prio > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* One fprintf per line: stdio locks the stream, lines never mix. */
	fprintf(stderr, "<%d>%s\n", prio, buf);
}

/*
 * Log lines a client can cause at will (refusals, timeouts, cut
 * connections) are rate-limited per kind: at most RL_LINES in RL_SECS
 * seconds; the first line after a quiet spell says how many were left
 * out. The stats counters count every event.
 */
#define RL_LINES	10
#define RL_SECS		10

void log_limited(struct ratelimit *rl, int prio, const char *fmt, ...)
{
	unsigned long dropped = 0;
	struct timespec now;
	char buf[512];
	va_list ap;
	bool emit;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&rl->mu);
	if (!rl->started || now.tv_sec - rl->start >= RL_SECS) {
		rl->started = true;
		rl->start = now.tv_sec;
		rl->lines = 0;
	}
	emit = rl->lines < RL_LINES;
	if (emit) {
		rl->lines++;
		dropped = rl->dropped;
		rl->dropped = 0;
	} else {
		rl->dropped++;
	}
	pthread_mutex_unlock(&rl->mu);
	if (!emit)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (dropped)
		log_msg(prio, "%s (%lu more like this not logged)", buf,
			dropped);
	else
		log_msg(prio, "%s", buf);
}
