// SPDX-License-Identifier: MIT
/*
 * test_systemd.c - pohmeld under systemd's protocols, played by this test
 * as the service manager: the sockets it passes (LISTEN_FDS), the notify
 * socket (READY, STATUS, STOPPING), the watchdog (WATCHDOG_USEC: pings
 * that stop when the server stops running, none when WATCHDOG_PID names
 * another process), and journal output that falls back to stderr.
 * argv[1]: the pohmeld to run.
 */
#include <sys/stat.h>
#include <time.h>
#include "integ_lib.h"

static char exp_dir[128];
static char conf_path[256], log_path[256], sock_path[100];

enum fd3 { FD3_LISTEN, FD3_FILE, FD3_UNLISTENED };

struct run {
	pid_t pid;
	int nfd;		/* our end of NOTIFY_SOCKET */
	int port;
};

/* Start pohmeld with fd 3 as asked and the environment in env (pairs). */
static int start(struct run *r, enum fd3 what, const char *const *env)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t sl = sizeof(sin);
	int fd;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	unlink(sock_path);
	r->nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (r->nfd < 0 || bind(r->nfd, (void *)&sun, sizeof(sun)))
		return -1;
	if (what == FD3_FILE) {
		fd = open(conf_path, O_RDONLY);
	} else {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || bind(fd, (void *)&sin, sizeof(sin)) ||
		    getsockname(fd, (void *)&sin, &sl))
			return -1;
		if (what == FD3_LISTEN && listen(fd, 16))
			return -1;
		r->port = ntohs(sin.sin_port);
	}
	if (fd < 0)
		return -1;
	r->pid = fork();
	if (r->pid == 0) {
		char pid[32];
		int lf = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(lf, 1);
		dup2(lf, 2);
		if (dup2(fd, 3) != 3)
			_exit(126);
		snprintf(pid, sizeof(pid), "%d", getpid());
		setenv("LISTEN_FDS", "1", 1);
		setenv("LISTEN_PID", pid, 1);
		setenv("NOTIFY_SOCKET", sock_path, 1);
		for (; env && env[0]; env += 2)
			setenv(env[0], !strcmp(env[1], "$PID") ? pid : env[1],
			       1);
		execl(server_bin, server_bin, "-c", conf_path, (char *)NULL);
		_exit(127);
	}
	close(fd);
	return r->pid > 0 ? 0 : -1;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Collect notify messages for ms milliseconds (or until one has want):
 * how many datagrams contained want; the last one in last. */
static int collect(struct run *r, int ms, const char *want, bool first,
		   char *last, size_t lastlen)
{
	struct pollfd pfd = { .fd = r->nfd, .events = POLLIN };
	long long end = now_ms() + ms, left;
	char buf[512];
	int hits = 0;
	ssize_t n;

	while ((left = end - now_ms()) >= 0 && poll(&pfd, 1, (int)left) == 1) {
		n = recv(r->nfd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			break;
		buf[n] = 0;
		if (!strstr(buf, want))
			continue;
		hits++;
		if (last)
			snprintf(last, lastlen, "%s", buf);
		if (first)
			break;
	}
	return hits;
}

static int finish(struct run *r)
{
	int st;

	close(r->nfd);
	if (r->pid <= 0 || waitpid(r->pid, &st, 0) != r->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool log_has(const char *s)
{
	static char buf[65536];
	int fd = open(log_path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	return strstr(buf, s) != NULL;
}

/* WATCHDOG_USEC=400 ms: pings every 100 ms, with a STATUS= that counts a
 * client; none while the server is stopped; STOPPING=1 and exit 0. */
static void check_watchdog(void)
{
	const char *env[] = { "WATCHDOG_USEC", "400000", "WATCHDOG_PID",
			      "$PID", NULL };
	char last[512] = "";
	struct srvproc sp;
	struct run r;
	struct pc c;
	int n, rc;

	if (start(&r, FD3_LISTEN, env)) {
		CHECK(0, "watchdog: server started");
		return;
	}
	CHECK(collect(&r, 20000, "READY=1", true, NULL, 0) == 1,
	      "watchdog: READY=1");
	n = collect(&r, 1000, "WATCHDOG=1", false, last, sizeof(last));
	CHECK(n >= 5 && n <= 14, "watchdog: %d pings in 1 s at 400 ms (every 100 ms)",
	      n);
	CHECK(strstr(last, "STATUS=serving: 0 connections, 0 sessions") != NULL,
	      "watchdog: STATUS= says what is served: '%s'", last);
	CHECK(log_has("systemd watchdog: 400 ms"),
	      "watchdog: the interval is logged");
	sp.pid = r.pid;
	sp.port = r.port;
	rc = cl_open(&c, &sp, 0, 0);
	CHECK(rc == 0, "watchdog: a client connects (%d)", rc);
	collect(&r, 300, "WATCHDOG=1", false, last, sizeof(last));
	CHECK(strstr(last, "1 connections, 1 sessions") != NULL,
	      "watchdog: STATUS= counts the client: '%s'", last);
	cl_close(&c);

	kill(r.pid, SIGSTOP);
	usleep(100000);	/* a ping already sent may still arrive */
	collect(&r, 1, "WATCHDOG=1", false, NULL, 0);
	n = collect(&r, 800, "WATCHDOG=1", false, NULL, 0);
	CHECK(n == 0, "watchdog: no pings while the server does not run (%d)",
	      n);
	kill(r.pid, SIGCONT);
	n = collect(&r, 1000, "WATCHDOG=1", false, NULL, 0);
	CHECK(n >= 5, "watchdog: pings again after SIGCONT (%d)", n);
	kill(r.pid, SIGTERM);
	CHECK(collect(&r, 10000, "STOPPING=1", true, NULL, 0) == 1,
	      "watchdog: STOPPING=1 on SIGTERM");
	rc = finish(&r);
	CHECK(rc == 0, "watchdog: exit status %d", rc);
}

/* WATCHDOG_PID names another process: the pings are not ours to send. */
static void check_watchdog_other_pid(void)
{
	const char *env[] = { "WATCHDOG_USEC", "400000", "WATCHDOG_PID", "1",
			      NULL };
	struct srvproc sp;
	struct run r;
	int n;

	if (start(&r, FD3_LISTEN, env)) {
		CHECK(0, "watchdog of another pid: server started");
		return;
	}
	CHECK(collect(&r, 20000, "READY=1", true, NULL, 0) == 1,
	      "watchdog of another pid: READY=1");
	n = collect(&r, 800, "WATCHDOG=1", false, NULL, 0);
	CHECK(n == 0, "watchdog of another pid: no pings (%d)", n);
	sp.pid = r.pid;
	close(r.nfd);
	CHECK(stop_server(&sp) == 0, "watchdog of another pid: exit 0");
}

/* fd 3 not a listening stream socket: a unit file error, said so. */
static void check_bad_fd(enum fd3 what, const char *what_s)
{
	struct run r;
	int rc;

	if (start(&r, what, NULL)) {
		CHECK(0, "%s passed as fd 3: server started", what_s);
		return;
	}
	rc = finish(&r);
	CHECK(rc == 1 && log_has("systemd passed fd 3, which is not a listening stream socket"),
	      "%s passed as fd 3: exit %d, says so", what_s, rc);
}

/* JOURNAL_STREAM names stderr but no journald listens (as here): every
 * line still reaches stderr. A JOURNAL_STREAM of another file: stderr. */
static void check_journal_fallback(void)
{
	const char *env[] = { "JOURNAL_STREAM", NULL, NULL };
	char js[64];
	struct stat st;
	struct run r;
	int fd;

	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || fstat(fd, &st)) {
		CHECK(0, "journal fallback: log file");
		return;
	}
	close(fd);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	env[1] = js;
	if (access("/run/systemd/journal/socket", F_OK) == 0) {
		SKIP("journal fallback: journald runs here, lines would go to it");
		return;
	}
	/* start() truncates the log with O_TRUNC: same inode. */
	if (start(&r, FD3_LISTEN, env)) {
		CHECK(0, "journal fallback: server started");
		return;
	}
	collect(&r, 20000, "READY=1", true, NULL, 0);
	kill(r.pid, SIGTERM);
	CHECK(finish(&r) == 0 && log_has("<6>serving ") && log_has("<6>stopped"),
	      "journal fallback: without journald the lines reach stderr");
}

int main(int argc, char **argv)
{
	char conf[512];
	int rc = setup_base(argc, argv, "systemd", exp_dir, sizeof(exp_dir));

	if (rc)
		return rc;
	snprintf(conf_path, sizeof(conf_path), "%s/p.conf", base);
	snprintf(log_path, sizeof(log_path), "%s/p.log", base);
	snprintf(sock_path, sizeof(sock_path), "%s/notify", base);
	snprintf(conf, sizeof(conf),
		 "export / %s rw no_root_squash\nstate-dir %s/state\nkey-file none\n",
		 exp_dir, base);
	if (write_file(conf_path, conf)) {
		CHECK(0, "config written");
		return tap_done();
	}
	check_watchdog();
	check_watchdog_other_pid();
	check_bad_fd(FD3_FILE, "a regular file");
	check_bad_fd(FD3_UNLISTENED, "a socket that does not listen");
	check_journal_fallback();
	return finish_base();
}
