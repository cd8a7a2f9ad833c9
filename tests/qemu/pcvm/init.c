/*
 * PID 1 of the power-cut server VM (tests/qemu/powercut): no shell, no
 * systemd, so that a reset is back to serving in a few seconds under TCG.
 *
 *   1. mounts proc, sysfs, devtmpfs; loads the modules listed in
 *      /modules.list (paths in the initramfs, dependency order, already
 *      decompressed on the host);
 *   2. mounts /dev/vda (the export disk, ext4) on /data: ext4 replays its
 *      journal here, which is the "recovery" of a power cut;
 *   3. configures eth0 as 10.77.0.1/24 and lo;
 *   4. starts pohmeld (/pohmeld -c /pohmeld.conf -s /data/state), its log
 *      on the console, and restarts nothing: if it dies the console says so;
 *   5. once pohmeld accepts connections on 127.0.0.1:7349, serves the
 *      control port 7351: every connection gets one line
 *      "pcvm BOOT_ID/N\n" (N counts pohmeld restarts of this boot), then
 *      each byte read is a command:
 *        'b'  echo b > /proc/sysrq-trigger: immediate reset, no sync, no
 *             unmount (what a power cut leaves on the disk);
 *        'k'  SIGKILL pohmeld and start it again (a daemon crash: the
 *             machine's page cache survives; the checker's control run);
 *        'p'  reply "pong\n" (liveness).
 *      The client side tells a crash happened by a new BOOT_ID/N.
 * Everything goes to the console (ttyS0), prefixed "pcvm:".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CTL_PORT 7351
#define POHMELD_PORT 7349

static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "pcvm: ");
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	strncat(buf, "\n", sizeof(buf) - strlen(buf) - 1);
	if (write(2, buf, strlen(buf)) < 0)
		return;
}

static void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, s, strlen(s)) < 0)
		say("write %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* Halt here: PID 1 must not exit (that panics; panic=-1 would reboot). */
static void stuck(const char *why)
{
	say("FATAL: %s", why);
	for (;;)
		pause();
}

static void load_modules(void)
{
	char line[512];
	FILE *f = fopen("/modules.list", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		int fd;

		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		fd = open(line, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			say("module %s: %s", line, strerror(errno));
			continue;
		}
		if (syscall(SYS_finit_module, fd, "", 0) && errno != EEXIST)
			say("module %s: %s", line, strerror(errno));
		close(fd);
	}
	fclose(f);
}

static void if_up(const char *name, const char *addr, const char *mask)
{
	struct ifreq ifr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	if (ioctl(s, SIOCSIFADDR, &ifr))
		say("%s: SIOCSIFADDR: %s", name, strerror(errno));
	inet_pton(AF_INET, mask, &sin->sin_addr);
	if (ioctl(s, SIOCSIFNETMASK, &ifr))
		say("%s: SIOCSIFNETMASK: %s", name, strerror(errno));
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(s, SIOCSIFFLAGS, &ifr))
			say("%s: SIOCSIFFLAGS: %s", name, strerror(errno));
	} else {
		say("%s: SIOCGIFFLAGS: %s", name, strerror(errno));
	}
	close(s);
}

static int port_open(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0);
	int ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;

	close(s);
	return ok;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static double uptime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile pid_t pohmeld_pid;
static int restarts;

static void reap(int sig)
{
	int st;
	pid_t p;

	(void)sig;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == pohmeld_pid)
			say("pohmeld exited (status 0x%x)", st);
	}
}

static void start_pohmeld(void)
{
	pid_t pid = fork();
	int i;

	if (pid == 0) {
		char *argv[] = { "/pohmeld", "-c", "/pohmeld.conf", "-s",
				 "/data/state", NULL };
		char *envp[] = { "PATH=/", NULL };

		signal(SIGCHLD, SIG_DFL);
		execve("/pohmeld", argv, envp);
		say("exec /pohmeld: %s", strerror(errno));
		_exit(127);
	}
	pohmeld_pid = pid;
	for (i = 0; i < 600 && !port_open(POHMELD_PORT); i++)
		sleep_ms(50);
	if (i == 600)
		say("pohmeld is not listening after 30 s");
}

/* 'k': a crash of the daemon only (reaped quietly: pohmeld_pid is 0). */
static void kill_pohmeld(void)
{
	pid_t pid = pohmeld_pid;
	int i;

	pohmeld_pid = 0;
	kill(pid, SIGKILL);
	for (i = 0; i < 600 && kill(pid, 0) == 0; i++)
		sleep_ms(20);
	restarts++;
	start_pohmeld();
	say("pohmeld killed and restarted (%d)", restarts);
}

static void serve_control(const char *boot_id)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(CTL_PORT) };
	int one = 1;
	int ls = socket(AF_INET, SOCK_STREAM, 0);

	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 4))
		stuck("control port: bind/listen failed");
	say("serving at %.2fs (boot %s)", uptime(), boot_id);
	for (;;) {
		char hello[96], c;
		int cs = accept(ls, NULL, NULL);

		if (cs < 0)
			continue;
		setsockopt(cs, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one,
			   sizeof(one));
		snprintf(hello, sizeof(hello), "pcvm %s/%d\n", boot_id,
			 restarts);
		if (write(cs, hello, strlen(hello)) < 0) {
			close(cs);
			continue;
		}
		/* One client at a time: the test has one control connection. */
		while (read(cs, &c, 1) == 1) {
			if (c == 'b') {
				/* No say(): not even a console write first. */
				write_file("/proc/sysrq-trigger", "b");
			} else if (c == 'k') {
				kill_pohmeld();
			} else if (c == 'p') {
				if (write(cs, "pong\n", 5) < 0)
					break;
			}
		}
		close(cs);
	}
}

int main(void)
{
	char boot_id[64] = "unknown";
	int fd, i;

	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	fd = open("/dev/console", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	say("init at %.2fs", uptime());
	write_file("/proc/sys/kernel/sysrq", "1");
	signal(SIGCHLD, reap);
	load_modules();

	/* The disk appears asynchronously after virtio_blk's probe. */
	for (i = 0; i < 100; i++) {
		if (mount("/dev/vda", "/data", "ext4", 0, NULL) == 0)
			break;
		sleep_ms(100);
	}
	if (i == 100)
		stuck("cannot mount /dev/vda on /data");
	say("export disk mounted at %.2fs", uptime());

	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, boot_id, sizeof(boot_id) - 1);

		boot_id[n > 0 ? n : 0] = 0;
		boot_id[strcspn(boot_id, "\n")] = 0;
		close(fd);
	}
	if_up("lo", "127.0.0.1", "255.0.0.0");
	if_up("eth0", "10.77.0.1", "255.255.255.0");

	start_pohmeld();
	serve_control(boot_id);
	return 0;
}
