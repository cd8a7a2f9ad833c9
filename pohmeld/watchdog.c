// SPDX-License-Identifier: MIT
/*
 * watchdog.c - systemd's service watchdog (WatchdogSec= in
 * pohmeld.service) and the STATUS= line of "systemctl status".
 *
 * The accept loop calls watchdog_tick() at least every quarter of the
 * interval. WATCHDOG=1 goes out only after the tick has taken, one after
 * the other, the locks every request shares: sessions, connections,
 * grants, byte-range locks, the object table and the change clock (what
 * STATS reads). A deadlock in any of them blocks the tick, the pings
 * stop, and systemd kills the server with SIGABRT, so that a core dump
 * shows where it hung, and starts it again; clients reconnect and
 * replay. A loop that stopped running (SIGSTOP, a stuck accept) stops
 * the pings as well.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include "pohmeld.h"

/* STATUS= is refreshed this often without a watchdog (under systemd). */
#define STATUS_EVERY_US	(10ULL * 1000000)

static uint64_t every_us;	/* 0: neither watchdog nor status */
static bool pinging;		/* WatchdogSec= asked for pings */
static uint64_t last_us;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Before the first thread; returns poll()'s timeout in ms, -1: none. */
int watchdog_setup(void)
{
	uint64_t usec = 0;
	int r;

	r = sd_watchdog_enabled(1, &usec);
	if (r < 0)
		log_warn("WATCHDOG_USEC: %s: no watchdog pings", strerror(-r));
	if (r > 0 && usec >= 4000) {
		pinging = true;
		every_us = usec / 4;
		log_info("systemd watchdog: %llu ms, pinged every %llu ms after a walk of the shared state",
			 (unsigned long long)usec / 1000,
			 (unsigned long long)every_us / 1000);
	} else if (r > 0) {
		log_warn("WatchdogSec= of %llu us is too short: no watchdog pings",
			 (unsigned long long)usec);
	}
	if (!every_us && getenv("NOTIFY_SOCKET"))
		every_us = STATUS_EVERY_US;
	last_us = now_us();
	return every_us ? (int)(every_us / 1000) : -1;
}

/*
 * Take every shared lock once (each call takes and drops one) and say
 * what the server holds. Blocks while any of them is held forever.
 */
void watchdog_tick(void)
{
	size_t holders, watched, objects;
	uint64_t now = now_us();
	int sessions;
	long locks;

	if (!every_us || now - last_us < every_us)
		return;
	last_us = now;
	sessions = sessions_count();
	conns_info(NULL, 0);
	grants_counts(&holders, &watched);
	locks = lock_count();
	objects = oid_count();
	change_now();
	sd_notifyf(0, "%sSTATUS=serving: %d connections, %d sessions, %zu objects, %zu grants, %ld locks",
		   pinging ? "WATCHDOG=1\n" : "",
		   atomic_load(&stats.conns_now), sessions, objects, holders,
		   locks);
}
