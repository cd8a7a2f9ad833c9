/* SPDX-License-Identifier: MIT */
/* tap.h - the smallest test harness: CHECK() prints PASS/FAIL lines that
 * tests/run-tests counts; SKIP() a check that could not run here (counted
 * as skipped, never as passed). */
#ifndef POHMEL_TAP_H
#define POHMEL_TAP_H
#include <stdio.h>
#include <stdlib.h>

static int tap_pass, tap_fail, tap_skip;

#define CHECK(cond, ...) do { \
	if (cond) { \
		tap_pass++; \
		printf("PASS "); \
	} else { \
		tap_fail++; \
		printf("FAIL %s:%d: ", __FILE__, __LINE__); \
	} \
	printf(__VA_ARGS__); \
	printf("\n"); \
	fflush(stdout); \
} while (0)

/* A check that cannot run here, and why: say so, count it apart. */
#define SKIP(...) do { \
	tap_skip++; \
	printf("SKIP "); \
	printf(__VA_ARGS__); \
	printf("\n"); \
	fflush(stdout); \
} while (0)

static inline int tap_done(void)
{
	printf("# %d passed, %d failed, %d skipped\n", tap_pass, tap_fail,
	       tap_skip);
	return tap_fail ? 1 : 0;
}
#endif
