// SPDX-License-Identifier: MIT
/*
 * listen.c - listening sockets: systemd socket activation without
 * libsystemd (LISTEN_PID/LISTEN_FDS, fds from 3), else bind the port on
 * all addresses; and READY=1 to $NOTIFY_SOCKET.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/un.h>
#include <unistd.h>
#include "pohmeld.h"

#define SD_LISTEN_FDS_START 3

/* Did systemd pass this process listening sockets? (Not consumed.) */
bool listen_activated(void)
{
	const char *pid = getenv("LISTEN_PID");
	char *end;
	long p;

	if (!pid || !getenv("LISTEN_FDS"))
		return false;
	errno = 0;
	p = strtol(pid, &end, 10);
	return !errno && !*end && p == (long)getpid();
}

/* Returns how many fds systemd passed (0: none), -1 on a bad setup. */
int listen_fds(int *fds, int max)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
	char *end;
	long p, k;
	int i;

	if (!pid || !n)
		return 0;
	errno = 0;
	p = strtol(pid, &end, 10);
	if (errno || *end || p != (long)getpid())
		return 0;	/* meant for another process */
	k = strtol(n, &end, 10);
	/* Not for our children, whatever happens next. */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (errno || *end || k < 1 || k > max) {
		log_err("LISTEN_FDS=%s: expected 1..%d", n, max);
		return -1;
	}
	for (i = 0; i < k; i++) {
		int fd = SD_LISTEN_FDS_START + i;

		if (fcntl(fd, F_SETFD, FD_CLOEXEC)) {
			log_err("LISTEN_FDS: fd %d: %s", fd, strerror(errno));
			return -1;
		}
		fds[i] = fd;
	}
	return (int)k;
}

/* One dual-stack socket on [::]:port; IPv4-only if IPv6 is missing. */
int listen_bind(int port, int *fds, int max)
{
	struct sockaddr_in6 s6 = {
		.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
		.sin6_addr = IN6ADDR_ANY_INIT,
	};
	struct sockaddr_in s4 = {
		.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int fd, one = 1, zero = 0;

	if (max < 1)
		return -1;
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, (void *)&s6, sizeof(s6)) == 0)
			goto do_listen;
		close(fd);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (void *)&s4, sizeof(s4)))
		goto err_close;
do_listen:
	if (listen(fd, 128))
		goto err_close;
	fds[0] = fd;
	return 1;

err_close:
	close(fd);
err:
	log_err("port %d: %s", port, strerror(errno));
	return -1;
}

void notify_ready(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len;
	size_t n;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return;
	n = strlen(path);
	if (n >= sizeof(sun.sun_path))
		return;
	memcpy(sun.sun_path, path, n);
	if (path[0] == '@')
		sun.sun_path[0] = 0;	/* abstract namespace */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (void *)&sun,
		   len) < 0)
		log_warn("NOTIFY_SOCKET: %s", strerror(errno));
	close(fd);
}
