// SPDX-License-Identifier: MIT
/*
 * log.c - the one log API. Lines go to stderr prefixed with "<N>", the
 * syslog priority, which journald turns into the entry's priority.
 */
#include <stdarg.h>
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
