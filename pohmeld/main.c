// SPDX-License-Identifier: MIT
/*
 * main.c - pohmeld: command line, configuration, setup order, the accept
 * loop and clean shutdown. See pohmeld(8) and doc/CONTRACTS.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>
#include "pohmeld.h"

#ifndef POHMEL_VERSION
#error "POHMEL_VERSION comes from ../VERSION through the Makefile"
#endif

#define MAX_LISTEN	16
#define DEFAULT_CONFIG	"/etc/pohmeld.conf"

struct server srv;

static void usage(FILE *f)
{
	fprintf(f,
"usage: pohmeld [-c FILE] [-e DIR] [-p PORT] [-k KEYFILE] [-s STATEDIR] [-n] [-d]\n"
"       pohmeld -h|--help | -V|--version\n"
"  -c FILE     configuration file (default " DEFAULT_CONFIG ", read if it exists)\n"
"  -e DIR      export DIR as \"/\" (overrides the config's export directory)\n"
"  -p PORT     TCP port (default %d)\n"
"  -k KEYFILE  pre-shared key file, or \"none\" (default /etc/pohmelfs/key if it exists)\n"
"  -s STATEDIR state directory (default /var/lib/pohmeld)\n"
"  -n          check the configuration and exit\n"
"  -d          debug logging\n"
"  -h, --help  this help\n"
"  -V, --version  print the version and exit\n"
"Runs in the foreground; logs to stderr with <N> priority prefixes.\n",
		POHMEL_DEFAULT_PORT);
}

/* Complain about the configuration: plain for -n, <N>-prefixed else. */
static void cfg_error(bool check, const char *msg)
{
	if (check)
		fprintf(stderr, "pohmeld: %s\n", msg);
	else
		log_err("%s", msg);
}

static int setup_key(bool check)
{
	char err[512];

	if (!strcmp(srv.cfg.key_file, "none"))
		return 0;
	if (!srv.cfg.key_file_set && access(srv.cfg.key_file, F_OK))
		return 0;	/* default key file absent: auth off */
	if (key_file_load(srv.cfg.key_file, srv.key, &srv.keylen, err,
			  sizeof(err))) {
		cfg_error(check, err);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, bool *check)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cfile = NULL, *edir = NULL, *port = NULL, *kfile = NULL;
	const char *sdir = NULL;
	char err[8400];
	int c;

	while ((c = getopt_long(argc, argv, "c:e:p:k:s:ndhV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'c': cfile = optarg; break;
		case 'e': edir = optarg; break;
		case 'p': port = optarg; break;
		case 'k': kfile = optarg; break;
		case 's': sdir = optarg; break;
		case 'n': *check = true; break;
		case 'd': log_level = LOG_DEBUG; break;
		case 'h': usage(stdout); exit(0);
		case 'V':
			printf("pohmeld %s (protocol %d.%d)\n", POHMEL_VERSION,
			       POHMEL_PROTO_MAJOR, POHMEL_PROTO_MINOR);
			exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(2);
	}
	config_defaults(&srv.cfg);
	if (cfile || access(DEFAULT_CONFIG, F_OK) == 0) {
		if (config_load(&srv.cfg, cfile ? cfile : DEFAULT_CONFIG, err,
				sizeof(err))) {
			cfg_error(*check, err);
			return -1;
		}
	}
	if (edir) {
		if (!srv.cfg.have_export)
			srv.cfg.have_export = true;
		if (strlen(edir) >= sizeof(srv.cfg.ex.path)) {
			cfg_error(*check, "-e: path too long");
			return -1;
		}
		strcpy(srv.cfg.ex.path, edir);
	}
	if (port) {
		char *end;
		long p = strtol(port, &end, 10);

		if (*end || p < 1 || p > 65535) {
			snprintf(err, sizeof(err), "-p %s: bad port", port);
			cfg_error(*check, err);
			return -1;
		}
		srv.cfg.port = (int)p;
	}
	if (kfile) {
		snprintf(srv.cfg.key_file, sizeof(srv.cfg.key_file), "%s",
			 kfile);
		srv.cfg.key_file_set = true;
	}
	if (sdir)
		snprintf(srv.cfg.state_dir, sizeof(srv.cfg.state_dir), "%s",
			 sdir);
	if (!srv.cfg.have_export) {
		cfg_error(*check,
			  "no export: give -e DIR or an 'export / DIR' line");
		return -1;
	}
	return setup_key(*check);
}

static int open_root(bool check)
{
	char err[4200];
	struct stat st;

	/* Not O_PATH: open_by_handle_at() wants a real fd as mount_fd. */
	srv.rootfd = open(srv.cfg.ex.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (srv.rootfd < 0 || fstat(srv.rootfd, &st)) {
		snprintf(err, sizeof(err), "export %s: %s", srv.cfg.ex.path,
			 strerror(errno));
		cfg_error(check, err);
		return -1;
	}
	srv.rootdev = st.st_dev;
	return 0;
}

static void accept_one(int lfd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd;

	fd = accept4(lfd, (void *)&ss, &len, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR &&
		    errno != ECONNABORTED)
			log_warn("accept: %s", strerror(errno));
		if (errno == EMFILE || errno == ENFILE)
			usleep(100000);	/* don't spin on a full fd table */
		return;
	}
	if (!export_allows(&srv.cfg.ex, (void *)&ss)) {
		stats.refused++;
		log_info("refused a client not in the allow list");
		close(fd);
		return;
	}
	conn_start(fd, (void *)&ss, len);
}

/*
 * The fd budget (pohmeld.conf(5)): RLIMIT_NOFILE's soft limit is raised
 * to the hard one; open handles may hold that many fds less fd-reserve
 * (listening sockets, signalfd, inotify, state files) and three per
 * connection (its socket, its outbox's eventfd and a request's temporary
 * fd), but at least a quarter of the limit. So a client that opens files
 * until refused never leaves accept() or another client's request
 * without an fd.
 */
static void fd_budget(void)
{
	struct rlimit rl;
	long lim, budget, per;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rlim_t was = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			log_info("RLIMIT_NOFILE raised from %llu to %llu",
				 (unsigned long long)was,
				 (unsigned long long)rl.rlim_max);
		else
			log_warn("RLIMIT_NOFILE: cannot raise to %llu: %s",
				 (unsigned long long)rl.rlim_max,
				 strerror(errno));
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > 1L << 30)
		lim = 1L << 30;
	else
		lim = (long)rl.rlim_cur;
	budget = lim - srv.cfg.fd_reserve - 3L * srv.cfg.max_conns;
	if (budget < lim / 4) {
		log_warn("RLIMIT_NOFILE %ld leaves little beyond fd-reserve %d "
			 "and max-connections %d: open handles may hold %ld fds",
			 lim, srv.cfg.fd_reserve, srv.cfg.max_conns, lim / 4);
		budget = lim / 4;
	}
	if (budget < 1)
		budget = 1;
	per = srv.cfg.max_handles_per_session;
	if (!per)
		per = MIN(4096, budget / 8 > 0 ? budget / 8 : 1);
	srv.fd_budget = (int)MIN(budget, (long)INT32_MAX);
	srv.handles_per_session = (int)per;
	log_info("fd budget: RLIMIT_NOFILE %ld, open handles %d in all, "
		 "%d per session, %d lock records per session", lim,
		 srv.fd_budget, srv.handles_per_session,
		 srv.cfg.max_locks_per_session);
}

int main(int argc, char **argv)
{
	struct pollfd pfd[MAX_LISTEN + 1];
	int lfds[MAX_LISTEN], nl, i, sfd, err;
	struct timespec now;
	bool check = false;
	sigset_t mask;

	if (parse_args(argc, argv, &check) || open_root(check))
		return 1;
	if (check) {
		printf("configuration OK\n");
		return 0;
	}

	umask(0);	/* clients send modes with their umask applied */
	child_open_init();
	fd_budget();
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	/* Blocked before any thread starts, so all threads inherit it. */
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sigdelset(&mask, SIGPIPE);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		log_err("signalfd: %s", strerror(errno));
		goto err_root;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	srv.boot_gen = (uint64_t)now.tv_sec * 1000000000ULL +
		       (uint64_t)now.tv_nsec;

	verifier_init();
	if (oid_init(srv.rootfd, srv.cfg.state_dir))
		goto err_sfd;
	/* Sessions of clients from before a restart, before any client. */
	err = sfile_init(srv.cfg.state_dir);
	if (err)
		log_warn("%s/sessions: %s: sessions are not kept across a restart",
			 srv.cfg.state_dir, strerror(err));
	else
		sessions_load();
	change_init(srv.boot_gen);
	grants_init();
	outbox_setup();		/* sized by grants_per_conn */
	notify_init(srv.cfg.state_dir);
	nl = listen_fds(lfds, MAX_LISTEN);
	if (nl == 0)
		nl = listen_bind(srv.cfg.port, lfds, MAX_LISTEN);
	if (nl < 0)
		goto err_oid;
	for (i = 0; i < nl; i++) {
		int fl = fcntl(lfds[i], F_GETFL);

		fcntl(lfds[i], F_SETFL, fl | O_NONBLOCK);
		pfd[i].fd = lfds[i];
		pfd[i].events = POLLIN;
	}
	pfd[nl].fd = sfd;
	pfd[nl].events = POLLIN;

	log_info("serving %s (%s%s%s), authentication %s", srv.cfg.ex.path,
		 srv.cfg.ex.ro ? "ro" : "rw",
		 srv.cfg.ex.all_squash ? ", all_squash" :
		 srv.cfg.ex.root_squash ? ", root_squash" : "",
		 srv.cfg.ex.nallow ? ", allow list" : "",
		 srv.keylen ? "on" : "off");
	notify_ready("READY=1\nSTATUS=serving");

	while (!atomic_load(&srv.stopping)) {
		if (poll(pfd, (nfds_t)nl + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("poll: %s", strerror(errno));
			break;
		}
		if (pfd[nl].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si) &&
			    si.ssi_signo != SIGHUP) {
				log_info("signal %u: shutting down",
					 si.ssi_signo);
				atomic_store(&srv.stopping, true);
			}
		}
		for (i = 0; i < nl && !atomic_load(&srv.stopping); i++)
			if (pfd[i].revents & POLLIN)
				accept_one(lfds[i]);
	}

	notify_ready("STOPPING=1");
	for (i = 0; i < nl; i++)
		close(lfds[i]);
	if (!conns_shutdown()) {
		/* Threads still run: tearing down what they use would be
		 * worse than leaving it to exit. */
		log_info("stopped (forced)");
		return 0;
	}
	sessions_fini();
	sfile_fini();
	change_fini();
	ctime_fini();
	oid_fini();
	close(sfd);
	close(srv.rootfd);
	log_info("stopped");
	return 0;

err_oid:
	sessions_fini();
	sfile_fini();
	oid_fini();
err_sfd:
	close(sfd);
err_root:
	close(srv.rootfd);
	return 1;
}
