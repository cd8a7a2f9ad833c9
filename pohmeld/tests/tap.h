/* SPDX-License-Identifier: MIT */
/* tap.h - the smallest test harness: CHECK() prints PASS/FAIL lines that
 * tests/run-tests counts. */
#ifndef POHMEL_TAP_H
#define POHMEL_TAP_H
#include <stdio.h>
#include <stdlib.h>

static int tap_pass, tap_fail;

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

static inline int tap_done(void)
{
	printf("# %d passed, %d failed\n", tap_pass, tap_fail);
	return tap_fail ? 1 : 0;
}
#endif
