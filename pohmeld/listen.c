// SPDX-License-Identifier: MIT
/*
 * listen.c - listening sockets: those systemd passed (socket activation,
 * sd_listen_fds), else the configured port bound on all addresses; and
 * the service manager's notifications (sd_notify: READY, STATUS,
 * STOPPING). Without systemd the libsystemd calls find nothing and do
 * nothing.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "pohmeld.h"

/* Did systemd pass this process listening sockets? (Not consumed.) */
bool listen_activated(void)
{
	return sd_listen_fds(0) > 0;
}

/*
 * Returns how many fds systemd passed (0: none), -1 on a bad setup. The
 * environment is cleared (nothing we start must take them), and each fd
 * must be a listening stream socket: anything else is a unit file error.
 */
int listen_fds(int *fds, int max)
{
	int n = sd_listen_fds(1), i;

	if (n < 0) {
		log_err("LISTEN_FDS: %s", strerror(-n));
		return -1;
	}
	if (n > max) {
		log_err("systemd passed %d sockets: expected 1..%d (one ListenStream= in pohmeld.socket)",
			n, max);
		return -1;
	}
	for (i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		int r = sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1);

		if (r <= 0) {
			log_err("systemd passed fd %d, which is not a listening stream socket%s%s (ListenStream= in pohmeld.socket)",
				fd, r < 0 ? ": " : "",
				r < 0 ? strerror(-r) : "");
			return -1;
		}
		fds[i] = fd;
	}
	return n;
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
	int r = sd_notify(0, state);

	if (r < 0)
		log_warn("NOTIFY_SOCKET: %s", strerror(-r));
}
