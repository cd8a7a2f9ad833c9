/* SPDX-License-Identifier: MIT */
/* integ_lib.h - start/stop pohmeld (socket activation + READY=1) and
 * connect clients, for test_integ.c. */
#ifndef INTEG_LIB_H
#define INTEG_LIB_H
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../client/libpohmel.h"
#include "tap.h"

static const char *server_bin;
static char base[64];

struct srvproc {
	pid_t pid;
	int port;
};

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* RLIMIT_NOFILE (soft and hard) of the servers started next; 0: ours. */
static rlim_t server_nofile;

/* Fork pohmeld with a listening socket passed as systemd would, and
 * wait for its READY=1. */
static int start_server(const char *name, const char *conf,
			struct srvproc *sp)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t sl = sizeof(sin);
	char cpath[512], log[512], buf[256];
	struct pollfd pfd;
	int lfd, nfd;
	ssize_t n;

	snprintf(cpath, sizeof(cpath), "%s/%s.conf", base, name);
	snprintf(log, sizeof(log), "%s/%s.log", base, name);
	if (write_file(cpath, conf))
		return -1;
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (void *)&sin, sizeof(sin)) ||
	    listen(lfd, 128) || getsockname(lfd, (void *)&sin, &sl))
		return -1;
	sp->port = ntohs(sin.sin_port);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/notify-%s", base,
		 name);
	unlink(sun.sun_path);
	nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (nfd < 0 || bind(nfd, (void *)&sun, sizeof(sun)))
		return -1;
	sp->pid = fork();
	if (sp->pid == 0) {
		char pid[32];
		int lf = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		/* Never outlive a crashed test. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (server_nofile) {
			struct rlimit rl = { server_nofile, server_nofile };

			if (setrlimit(RLIMIT_NOFILE, &rl))
				_exit(126);
		}
		dup2(lf, 2);
		dup2(lfd, 3);
		snprintf(pid, sizeof(pid), "%d", getpid());
		setenv("LISTEN_FDS", "1", 1);
		setenv("LISTEN_PID", pid, 1);
		setenv("NOTIFY_SOCKET", sun.sun_path, 1);
		execl(server_bin, server_bin, "-c", cpath, (char *)NULL);
		_exit(127);
	}
	close(lfd);
	pfd.fd = nfd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 20000) != 1) {
		close(nfd);
		return -1;
	}
	n = recv(nfd, buf, sizeof(buf) - 1, 0);
	close(nfd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strstr(buf, "READY=1") ? 0 : -1;
}

/* SIGTERM; returns the exit status (0 for a clean shutdown). */
static int stop_server(struct srvproc *sp)
{
	int st;

	if (sp->pid <= 0)
		return -1;
	kill(sp->pid, SIGTERM);
	if (waitpid(sp->pid, &st, 0) != sp->pid)
		return -1;
	sp->pid = 0;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

static inline int cl_open(struct pc *c, const struct srvproc *sp, uint32_t uid,
		   uint32_t gid)
{
	int err;

	if (pc_init(c))
		return -ENOMEM;
	c->uid = uid;
	c->gid = gid;
	err = pc_connect(c, "127.0.0.1", sp->port);
	if (!err)
		err = pc_handshake(c);
	return err;
}

static void cl_close(struct pc *c)
{
	pc_disconnect(c);
}

/* The usual test server: a fresh directory under /var/tmp becomes base
 * and the export (state inside it), no key, plus extra config lines. */
static inline int start_tmp_server(const char *name, const char *extra,
				   struct srvproc *sp)
{
	char tmpl[] = "/var/tmp/pohmel-test-XXXXXX", conf[1024];

	if (!mkdtemp(tmpl))
		return -1;
	snprintf(base, sizeof(base), "%s", tmpl);
	snprintf(conf, sizeof(conf),
		 "export / %s rw no_root_squash\nstate-dir %s/state\n"
		 "key-file none\n%s", base, base, extra);
	return start_server(name, conf, sp);
}

/* The number after KEY ("VmRSS:", "Threads:") in /proc/PID/status, -1
 * if there is none. */
static inline long proc_status(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen)) {
			v = strtol(line + klen, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* The server counter NAME from STATS over c; -1 if it cannot be read. */
static inline long srv_stat(struct pc *c, const char *name)
{
	static char buf[8192];
	size_t n = strlen(name);
	char *p;

	if (pc_stats(c, buf, sizeof(buf)))
		return -1;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ' ')
			return atol(p + n + 1);
	return -1;
}

/* Lines of base/NAME.log (server NAME's log) containing TEXT. */
static inline int log_count(const char *name, const char *text)
{
	char path[512], line[2048];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.log", base, name);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL;
	fclose(f);
	return n;
}

/* Does base/NAME.log have a line containing TEXT? */
static inline bool server_log_has(const char *name, const char *text)
{
	return log_count(name, text) > 0;
}

/* rm -rf base; 0 on success. */
static inline int remove_base(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	return system(cmd) ? -1 : 0;
}
/*
 * The end of an integration test's main(): base goes if every check
 * passed, else it stays for a look. Returns main()'s exit status.
 */
static inline int finish_base(void)
{
	if (tap_fail) {
		printf("# left %s for inspection\n", base);
		return tap_done();
	}
	if (remove_base())
		return 1;
	return tap_done();
}

/*
 * The start of an integration test's main(): argv[1] is the pohmeld to
 * run; base becomes a fresh /var/tmp/pohmel-NAME-XXXXXX and exp_dir its
 * "export" subdirectory. Returns 0, or the exit status for main().
 */
static inline int setup_base(int argc, char **argv, const char *name,
			     char *exp_dir, size_t exp_len)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_%s POHMELD\n", name);
		return 2;
	}
	server_bin = argv[1];
	snprintf(base, sizeof(base), "/var/tmp/pohmel-%s-XXXXXX", name);
	if (!mkdtemp(base))
		return 1;
	snprintf(exp_dir, exp_len, "%s/export", base);
	return mkdir(exp_dir, 0755) ? 1 : 0;
}

/* Append a record framed as sessfile.c does (FNV-1a checksum). */
static inline int sfile_put_rec(const char *path, uint32_t type,
				const uint8_t *body, uint32_t len)
{
	uint8_t rec[16 + 64];
	uint32_t x = 2166136261U, i;
	int fd, ok;

	if (len > 64)
		return -1;
	put32(rec, type);
	put32(rec + 4, len);
	memcpy(rec + 16, body, len);
	for (i = 0; i < 16 + len; i++) {
		if (i >= 8 && i < 16)
			continue;
		x ^= rec[i];
		x *= 16777619U;
	}
	put32(rec + 8, x);
	put32(rec + 12, 0);
	fd = open(path, O_WRONLY | O_APPEND);
	ok = fd >= 0 && write(fd, rec, 16 + len) == (ssize_t)(16 + len);
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* A record whose body is one sequence number (BEGIN, ABORT). */
static inline int sfile_put(const char *path, uint32_t type, uint64_t seq)
{
	uint8_t b[8];

	put64(b, seq);
	return sfile_put_rec(path, type, b, sizeof(b));
}

/*
 * Ask for 64 MiB of READs of file o on c and read none of it; returns
 * true once c's receive queue stopped growing for half a second (then
 * pohmeld's sending to c is blocked: the queue is far below 64 MiB, and
 * half a second lets pohmeld finish filling its own socket buffer).
 * *queued is the queue's size.
 */
static inline bool stall_reader(struct pc *c, const struct woid *o,
				uint32_t *queued)
{
	uint8_t body[POHMEL_IO_SIZE + 8];
	uint32_t n = 0;
	int i, same = 0;

	for (i = 0; i < 64; i++) {
		uint32_t len = pc_enc_io(body, o, 0, 0, 1U << 20, 0, NULL);

		if (pc_send(c, POHMEL_OP_READ, 1000 + i, 0, body, len))
			return false;
	}
	for (i = 0; i < 200 && same < 5; i++) {
		int q = 0;

		usleep(100000);
		if (ioctl(c->fd, FIONREAD, &q) == 0 && q > 0 &&
		    (uint32_t)q == n)
			same++;
		else
			same = 0;
		n = (uint32_t)q;
	}
	*queued = n;
	return same == 5;
}

#endif
