// SPDX-License-Identifier: MIT
/*
 * fsync_shim.so - LD_PRELOAD into pohmeld for test_stable: every fsync,
 * fdatasync and syncfs that returns 0 appends "CALL PATH\n" (PATH the
 * fd's /proc/self/fd link) to $POHMEL_SHIM_LOG, in one write(2) before
 * the call returns to pohmeld. So a line present when a reply arrives
 * was synced before that reply was sent. An fsync or fdatasync of a path
 * containing $POHMEL_SHIM_SLOW first sleeps $POHMEL_SHIM_SLOW_MS (a slow
 * disk, for test_stable's worker pool checks).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fd's path (its /proc/self/fd link; "" if unknown) into path[4096]. */
static void fd_path(int fd, char *path)
{
	char link[64];
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, 4095);
	path[len < 0 ? 0 : len] = 0;
}

static void note(const char *call, int fd)
{
	const char *log = getenv("POHMEL_SHIM_LOG");
	char path[4096], line[4200];
	int lfd, n, save = errno;

	if (!log)
		return;
	fd_path(fd, path);
	n = snprintf(line, sizeof(line), "%s %s\n", call, path);
	lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (lfd >= 0) {
		if (write(lfd, line, (size_t)n) != n)
			abort();	/* the test would miss a sync */
		close(lfd);
	}
	errno = save;
}

/* fd's path contains $POHMEL_SHIM_SLOW: sleep $POHMEL_SHIM_SLOW_MS. */
static void slow(int fd)
{
	const char *what = getenv("POHMEL_SHIM_SLOW");
	const char *ms = getenv("POHMEL_SHIM_SLOW_MS");
	char path[4096];
	int save = errno;

	if (!what || !*what || !ms)
		return;
	fd_path(fd, path);
	if (strstr(path, what))
		usleep((useconds_t)atoi(ms) * 1000);
	errno = save;
}

#define WRAP(name)						\
int name(int fd)						\
{								\
	static int (*real)(int);				\
	int ret;						\
								\
	if (!real)						\
		real = (int (*)(int))dlsym(RTLD_NEXT, #name);	\
	slow(fd);						\
	ret = real(fd);						\
	if (!ret)						\
		note(#name, fd);				\
	return ret;						\
}

WRAP(fsync)
WRAP(fdatasync)
WRAP(syncfs)
