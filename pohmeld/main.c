// SPDX-License-Identifier: MIT
/*
 * main.c - pohmeld: command line, configuration, setup order, the accept
 * loop and clean shutdown. See pohmeld(8) and doc/CONTRACTS.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
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
"       pohmeld --make-key [-c FILE] [-k KEYFILE]\n"
"       pohmeld -h|--help | -V|--version\n"
"  -c FILE     configuration file (default " DEFAULT_CONFIG ", read if it exists)\n"
"  -e DIR      export DIR as \"/\" (overrides the config's export directory)\n"
"  -p PORT     TCP port (default %d)\n"
"  -k KEYFILE  pre-shared key file, or \"none\" (default /etc/pohmelfs/key if it exists)\n"
"  -s STATEDIR state directory (default /var/lib/pohmeld)\n"
"  -n          check the configuration and exit\n"
"  --make-key  write a new random key to the key file unless it exists\n"
"              (the units run it before the first start), and exit\n"
"  -d          debug logging\n"
"  -h, --help  this help\n"
"  -V, --version  print the version and exit\n"
"Runs in the foreground; logs to stderr with <N> priority prefixes.\n",
		POHMEL_DEFAULT_PORT);
}

/* The command line's settings: applied again over the file on SIGHUP. */
static struct {
	const char *cfile, *edir, *port, *kfile, *sdir;
} opt;

static bool make_key_only;

static void parse_args(int argc, char **argv, bool *check)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "make-key", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:e:p:k:s:ndhV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'c': opt.cfile = optarg; break;
		case 'e': opt.edir = optarg; break;
		case 'p': opt.port = optarg; break;
		case 'k': opt.kfile = optarg; break;
		case 's': opt.sdir = optarg; break;
		case 'n': *check = true; break;
		case 'M': make_key_only = true; break;
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
}

/* The configuration file, then the command line over it, into cf. */
static int load_config(struct config *cf, bool plain)
{
	char err[8400];

	config_defaults(cf);
	if (opt.cfile || access(DEFAULT_CONFIG, F_OK) == 0) {
		if (config_load(cf, opt.cfile ? opt.cfile : DEFAULT_CONFIG, err,
				sizeof(err))) {
			cfg_say(plain, LOG_ERR, "%s", err);
			return -1;
		}
	}
	if (opt.edir) {
		cf->have_export = true;
		if (strlen(opt.edir) >= sizeof(cf->ex.path)) {
			cfg_say(plain, LOG_ERR, "-e: path too long");
			return -1;
		}
		strcpy(cf->ex.path, opt.edir);
		cf->line_export = -1;
	}
	if (opt.port) {
		char *end;
		long p = strtol(opt.port, &end, 10);

		if (*end || p < 1 || p > 65535) {
			cfg_say(plain, LOG_ERR, "-p %s: bad port", opt.port);
			return -1;
		}
		cf->port = (int)p;
		cf->line_port = -1;
	}
	if (opt.kfile) {
		snprintf(cf->key_file, sizeof(cf->key_file), "%s", opt.kfile);
		cf->key_file_set = true;
		cf->line_key = -1;
	}
	if (opt.sdir) {
		snprintf(cf->state_dir, sizeof(cf->state_dir), "%s", opt.sdir);
		cf->line_state = -1;
	}
	return 0;
}

static void log_policy(const char *what, const struct policy *p)
{
	log_info("%s %s (%s%s%s), authentication %s", what, srv.cfg.ex.path,
		 p->ex.ro ? "ro" : "rw",
		 p->ex.all_squash ? ", all_squash" :
		 p->ex.root_squash ? ", root_squash" : "",
		 p->ex.nallow ? ", allow list" : "",
		 p->keys.n ? "on" : "off");
}

/*
 * SIGHUP: the file is read and checked as at start (config_check); if
 * it passes, new connections get its export options, allow list and
 * key, while connections already accepted keep the policy they hold.
 * The export directory and state-dir cannot move under a running
 * server (object ids and state belong to them): such a file is refused
 * as a whole. Numbers sized at start keep their old values (warned).
 */
static void reload(void)
{
	struct checked ck;
	struct config cf;
	struct policy *p;
	char names[512];

	log_info("SIGHUP: reloading the configuration");
	if (load_config(&cf, false) ||
	    config_check(&cf, listen_activated() || srv.activated, false,
			 &ck))
		goto refused;
	close(ck.rootfd);
	if (strcmp(cf.ex.path, srv.cfg.ex.path) ||
	    strcmp(cf.state_dir, srv.cfg.state_dir)) {
		log_err("%s changed (%s -> %s): that needs a restart",
			strcmp(cf.ex.path, srv.cfg.ex.path) ?
			"the export directory" : "state-dir",
			strcmp(cf.ex.path, srv.cfg.ex.path) ?
			srv.cfg.ex.path : srv.cfg.state_dir,
			strcmp(cf.ex.path, srv.cfg.ex.path) ?
			cf.ex.path : cf.state_dir);
		keys_free(&ck.keys);
		goto refused;
	}
	if (config_restart_only(&srv.cfg, &cf, names, sizeof(names)))
		log_warn("SIGHUP: changed, kept until a restart:%s", names);
	p = policy_new(&cf.ex, &ck.keys);
	if (!p) {
		log_err("SIGHUP: out of memory");
		goto refused;
	}
	policy_install(p);
	log_policy("reloaded: serving", p);
	conns_revoke(p);
	return;

refused:
	log_err("SIGHUP: configuration refused; the one in force stays");
}

static void accept_one(int lfd)
{
	static struct ratelimit rl = RATELIMIT_INIT;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct policy *pol;
	char peer[64];
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
	conn_peer_name((void *)&ss, peer, sizeof(peer));
	log_set_client(peer, NULL);	/* refusals below name it */
	pol = policy_get();
	if (!export_allows(&pol->ex, (void *)&ss)) {
		stats.refused++;
		log_limited(&rl, LOG_WARNING,
			    "%s: refused a client not in the allow list (allow=)",
			    peer);
		close(fd);
	} else {
		conn_start(fd, (void *)&ss, peer, pol);
	}
	policy_put(pol);
	log_set_client(NULL, NULL);
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

/*
 * --make-key: the packages generate no key; the units run this before the
 * server's first start, so it never starts keyless by default (the key
 * file is optional to pohmeld) and each server gets its own key.
 */
static int make_key(const struct config *cf)
{
	int err;

	if (!strcmp(cf->key_file, "none") || access(cf->key_file, F_OK) == 0)
		return 0;
	err = keys_create(cf->key_file, "default");
	if (err == EEXIST)
		return 0;	/* made meanwhile by another start */
	if (err) {
		fprintf(stderr, "pohmeld: --make-key: %s: %s\n", cf->key_file,
			strerror(err));
		return 1;
	}
	printf("pohmeld: made a new key in %s (mode 0600): copy it to each "
	       "client's %s\n", cf->key_file, cf->key_file);
	return 0;
}

/*
 * Memory given back when clients leave. Each connection and worker
 * thread mallocs buffers of max_msg (1 MiB and more): with glibc's
 * sliding mmap threshold those came from per-thread arenas after the
 * first free, and with transparent huge pages a touched byte of them
 * made 2 MiB resident; nothing of it went back when the threads ended
 * (64 clients, three times in a row: 91, 145, 160 MiB resident after
 * they all left, 143 MiB of it huge pages). A fixed threshold maps
 * every large buffer on its own (munmap on free), and no huge pages.
 */
static void memory_setup(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		log_warn("cannot turn transparent huge pages off: %s",
			 strerror(errno));
}

int main(int argc, char **argv)
{
	struct pollfd pfd[MAX_LISTEN + 1];
	int lfds[MAX_LISTEN], nl, i, sfd, err, tick_ms;
	struct timespec now;
	struct checked ck;
	bool check = false;
	struct policy *pol;
	sigset_t mask;

	parse_args(argc, argv, &check);
	if (make_key_only)
		return load_config(&srv.cfg, true) ? 1 : make_key(&srv.cfg);
	srv.activated = listen_activated();
	if (load_config(&srv.cfg, check) ||
	    config_check(&srv.cfg, srv.activated, check, &ck))
		return 1;
	if (check) {
		close(ck.rootfd);
		keys_free(&ck.keys);
		printf("configuration OK\n");
		return 0;
	}
	srv.rootfd = ck.rootfd;
	srv.rootdev = ck.rootdev;
	log_set_export(srv.cfg.ex.path);
	pol = policy_new(&srv.cfg.ex, &ck.keys);
	if (!pol) {
		log_err("out of memory");
		goto err_root;
	}
	policy_install(pol);	/* before sessions_load: it reads the key */

	umask(0);	/* clients send modes with their umask applied */
	memory_setup();
	err = creds_init();
	if (err)	/* then every request switches ids, as a non-root's */
		log_warn("setgroups: %s", strerror(err));
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

	log_journal(true);
	log_policy("serving", pol);
	tick_ms = watchdog_setup();
	notify_ready("READY=1\nSTATUS=serving");

	while (!atomic_load(&srv.stopping)) {
		int r = poll(pfd, (nfds_t)nl + 1, tick_ms);

		watchdog_tick();
		if (r < 0) {
			if (errno == EINTR)
				continue;
			log_err("poll: %s", strerror(errno));
			break;
		}
		if (pfd[nl].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) != sizeof(si))
				si.ssi_signo = 0;
			if (si.ssi_signo == SIGHUP) {
				reload();
			} else if (si.ssi_signo) {
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
	log_journal(false);	/* the last lines: see log_journal() */
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
	policy_install(NULL);
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
