// SPDX-License-Identifier: MIT
/*
 * log.c - the one log API.
 *
 * Under systemd, with stderr connected to the journal (JOURNAL_STREAM
 * names stderr's device and inode, as systemd.exec(5) says to check),
 * each line logged while serving is a structured journal entry:
 * PRIORITY, CODE_FILE/LINE/FUNC of the call, POHMEL_EXPORT, and
 * POHMEL_CLIENT and POHMEL_KEY when a connection's thread logs it, so
 * that "journalctl POHMEL_CLIENT=..." finds one client's lines.
 * Elsewhere (a terminal, a file, the tests, pohmeld -n) lines go to
 * stderr prefixed with "<N>", the syslog priority, which journald also
 * understands.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#define SD_JOURNAL_SUPPRESS_LOCATION	/* the caller's, passed in */
#include <systemd/sd-journal.h>
#include "pohmeld.h"

int log_level = LOG_INFO;

#define LOG_LINE_MAX	1024

/* Only while serving: see log_journal(). */
static atomic_bool to_journal;
static char export_field[sizeof("POHMEL_EXPORT=") + PATH_MAX];

/* The connection this thread serves (its conn outlives the thread). */
static __thread const char *tl_peer, *tl_key;

/*
 * Journal entries only while serving, from a process that lives on:
 * journald finds an entry's unit from the sender's /proc, which a
 * process that just exited (pohmeld -n, a failed start) no longer has,
 * while lines on the stderr stream always carry it.
 */
void log_journal(bool on)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	/*
	 * sd_journal_sendv() returns success when no journald listens
	 * (ENOENT), and the line would be lost: stderr unless its socket
	 * is there.
	 */
	atomic_store(&to_journal,
		     on && js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
		     !fstat(2, &st) && (unsigned long long)st.st_dev == dev &&
		     (unsigned long long)st.st_ino == ino &&
		     !access("/run/systemd/journal/socket", W_OK));
}

void log_set_export(const char *path)
{
	snprintf(export_field, sizeof(export_field), "POHMEL_EXPORT=%s",
		 path);
}

void log_set_client(const char *peer, const char *key)
{
	tl_peer = peer;
	tl_key = key;
}

static int journal_line(const char *file, int line, const char *func,
			int prio, const char *msg)
{
	char p[16], cf[sizeof("CODE_FILE=") + 64], cl[32];
	char cfn[sizeof("CODE_FUNC=") + 64];
	char cli[sizeof("POHMEL_CLIENT=") + 96];
	char key[sizeof("POHMEL_KEY=") + POHMEL_KEYNAME_MAX + 1];
	char m[sizeof("MESSAGE=") + LOG_LINE_MAX];
	struct iovec iov[10];
	int n = 0;

#define ADD(s) do { \
	iov[n].iov_base = (void *)(s); \
	iov[n].iov_len = strlen(s); \
	n++; \
} while (0)
	snprintf(p, sizeof(p), "PRIORITY=%d", prio);
	snprintf(cf, sizeof(cf), "CODE_FILE=%s", file);
	snprintf(cl, sizeof(cl), "CODE_LINE=%d", line);
	snprintf(cfn, sizeof(cfn), "CODE_FUNC=%s", func);
	ADD("SYSLOG_IDENTIFIER=pohmeld");
	ADD(p);
	ADD(cf);
	ADD(cl);
	ADD(cfn);
	if (export_field[0])
		ADD(export_field);
	if (tl_peer && tl_peer[0]) {
		snprintf(cli, sizeof(cli), "POHMEL_CLIENT=%s", tl_peer);
		ADD(cli);
	}
	if (tl_key && tl_key[0]) {
		snprintf(key, sizeof(key), "POHMEL_KEY=%s", tl_key);
		ADD(key);
	}
	snprintf(m, sizeof(m), "MESSAGE=%s", msg);
	ADD(m);
#undef ADD
	return sd_journal_sendv(iov, n);
}

void log_at(const char *file, int line, const char *func, int prio,
	    const char *fmt, ...)
{
	char buf[LOG_LINE_MAX];
	va_list ap;

	if (prio > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (atomic_load(&to_journal) &&
	    journal_line(file, line, func, prio, buf) >= 0)
		return;
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

void log_limited_at(const char *file, int line, const char *func,
		    struct ratelimit *rl, int prio, const char *fmt, ...)
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
		log_at(file, line, func, prio,
		       "%s (%lu more like this not logged)", buf, dropped);
	else
		log_at(file, line, func, prio, "%s", buf);
}
