/* seal_relay: a TCP relay in front of pohmeld for the seal group (seal.sh)
 * that spoils one message of a sealed connection.
 *
 *   seal_relay -l LPORT -s SPORT [-f FAULT] [-A] [-C CTLFILE] [-c CAPTURE]
 *
 * Listens on 127.0.0.1:LPORT and relays each connection to
 * 127.0.0.1:SPORT message by message (a 32-byte header whose first be32
 * is the payload length, then the payload: the HELLOs and the 1.3 records
 * frame alike), so it can change whole messages. FAULT (seal_fault.c):
 *   MODE [c2s|s2c] [N] [hdr|hdr:K|body|last]   (default c2s 1 body)
 *   pass            change nothing
 *   flip            flip one bit of the Nth message after the HELLOs in
 *                   that direction: in the outer header (byte K, default
 *                   8: the tag field, which must be 0), the middle of the
 *                   body, or the last byte (the record's tag)
 *   truncate        send the first half of the Nth, then close both sides
 *   drop            swallow the Nth
 *   reorder         hold the Nth, send the next, then the Nth
 *   replay          send the Nth twice
 *   inject          after the Nth, a copy of it with its last 16 bytes random
 *   hello-features  every connection: flip bit 8 (the AES-GCM offer) of
 *                   features in the client's HELLO request
 *   hello-bootgen   every connection: flip bit 0 of its boot_gen
 *   hello-slow N    every connection: hold the server's HELLO reply N
 *                   seconds (the whole relay waits meanwhile)
 * A fault counts messages over all connections from when it is armed and
 * fires once, so the client's reconnect goes through; the HELLO faults
 * apply to every connection. Armed at start, or with -A at each SIGUSR1
 * (counting again from 0); with -C the fault is read from CTLFILE at each
 * SIGUSR1, so one relay (and one mount) serves several faults in turn.
 * -c CAPTURE: every byte sent either way, appended to CAPTURE as sent.
 * Log on stderr, one line each, all starting "relay: ": "listening ...",
 * "connection K from ...", "armed: FAULT", "fault: ..." (what it did),
 * "connection K closed ...", "exit: K connections, fault fired|not fired".
 * SIGTERM or SIGINT: exit 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "seal_relay.h"

/* a direction whose queue holds this much is not read until it drains
 * (the receiver's TCP window decides, as without the relay) */
#define QUEUE_MAX	(8U << 20)
#define CLOSE_GRACE_MS	2000

struct conn {
	int id;
	int fd[2];		/* [C2S] the client's socket, [S2C] the server's */
	struct flow f[2];	/* flow d reads fd[d] and writes fd[!d] */
	/* Closing: nothing more is relayed; what is queued goes out, then a
	 * FIN each way; what arrives is read and discarded until each peer
	 * closes (or CLOSE_GRACE_MS), so that neither gets an RST that could
	 * discard data it has not read yet. */
	bool closing;
	bool shut[2];		/* FIN sent on fd[d] */
	bool eof[2];		/* fd[d] closed by its peer (or failed) */
	unsigned long long close_by;
	int pidx;		/* its first pollfd this round, -1: none */
	struct conn *next;
};

static struct conn *conns;
static int nconns;
static FILE *capture;
static int sport;

void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "relay: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* one write a line: the test reads the log while it grows */
	if (write(2, buf, (size_t)n) < 0)
		return;
}

const char *dir_name(int dir)
{
	return dir == C2S ? "c2s" : "s2c";
}

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

static size_t qlen(const struct queue *q)
{
	return q->len - q->off;
}

static void *grow(unsigned char **p, size_t *cap, size_t need)
{
	size_t n = *cap ? *cap : 65536;
	unsigned char *np;

	if (need <= *cap)
		return *p;
	while (n < need)
		n *= 2;
	np = realloc(*p, n);
	if (!np)
		return NULL;
	*p = np;
	*cap = n;
	return np;
}

/* queue bytes for the flow's receiver; the capture sees them as sent */
void emit(struct flow *f, const unsigned char *p, size_t len)
{
	struct queue *q = &f->q;

	if (!len)
		return;
	if (q->off && q->off == q->len)
		q->off = q->len = 0;
	if (!grow(&q->p, &q->cap, q->len + len)) {
		say("connection %d: out of memory: %zu bytes %s lost", f->conn, len,
		    dir_name(f->dir));
		return;
	}
	memcpy(q->p + q->len, p, len);
	q->len += len;
	if (capture && (fwrite(p, 1, len, capture) != len || fflush(capture))) {
		say("capture: write failed, capture stopped");
		fclose(capture);
		capture = NULL;
	}
}

static uint32_t be32_at(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void start_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	c->close_by = now_ms() + CLOSE_GRACE_MS;
}

/* Read what the socket has; complete messages go through the fault.
 * Returns -1 when the connection is to close. */
static int pump_in(struct conn *c, int d)
{
	struct flow *f = &c->f[d];
	int rounds;

	for (rounds = 0; rounds < 64 && qlen(&f->q) < QUEUE_MAX; rounds++) {
		size_t want = f->got < HDR_SIZE ? HDR_SIZE : HDR_SIZE + be32_at(f->msg);
		ssize_t n = recv(c->fd[d], f->msg + f->got, want - f->got, 0);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			c->eof[d] = true;
			say("connection %d: %s %s after %lu messages%s", c->id,
			    d == C2S ? "client" : "server",
			    n == 0 ? "closed" : strerror(errno), f->idx,
			    f->got ? " and part of one" : "");
			emit(f, f->msg, f->got);	/* as it came */
			f->got = 0;
			return -1;
		}
		if (n < 0)
			return 0;
		f->got += (size_t)n;
		if (f->got == HDR_SIZE) {
			uint32_t len = be32_at(f->msg);

			if (len > MSG_MAX - HDR_SIZE ||
			    !grow(&f->msg, &f->cap, HDR_SIZE + (size_t)len)) {
				say("connection %d: %s message %lu says length %u: not relayed, closing",
				    c->id, dir_name(d), f->idx, len);
				emit(f, f->msg, f->got);
				f->got = 0;
				return -1;
			}
		}
		if (f->got >= HDR_SIZE && f->got == HDR_SIZE + be32_at(f->msg)) {
			size_t len = f->got;

			f->got = 0;
			if (fault_message(f, f->msg, len))
				return -1;
		}
	}
	return 0;
}

/* closing: read and discard until the peer closes */
static void discard_in(struct conn *c, int d)
{
	unsigned char buf[65536];
	ssize_t n = -1;
	int rounds;

	/* bounded: a peer that keeps sending must not hold the loop */
	for (rounds = 0; rounds < 64; rounds++) {
		n = recv(c->fd[d], buf, sizeof(buf), 0);
		if (n <= 0)
			break;
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		c->eof[d] = true;
}

/* Write flow d's queue to its receiver. -1: the receiver is gone (the
 * queue is dropped). */
static int pump_out(struct conn *c, int d)
{
	struct queue *q = &c->f[d].q;

	while (qlen(q)) {
		ssize_t n = send(c->fd[!d], q->p + q->off, qlen(q), MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			if (!c->closing)
				say("connection %d: sending %s: %s", c->id, dir_name(d),
				    n < 0 ? strerror(errno) : "nothing sent");
			q->off = q->len = 0;
			c->eof[!d] = c->shut[!d] = true;
			return -1;
		}
		q->off += (size_t)n;
	}
	q->off = q->len = 0;
	return 0;
}

static void conn_free(struct conn *c)
{
	int d;

	say("connection %d closed (c2s %lu messages, s2c %lu)", c->id,
	    c->f[C2S].idx, c->f[S2C].idx);
	for (d = 0; d < 2; d++) {
		fault_flow_closed(&c->f[d]);
		if (c->fd[d] >= 0)
			close(c->fd[d]);
		free(c->f[d].msg);
		free(c->f[d].q.p);
	}
	free(c);
}

static void set_socket(int fd)
{
	int one = 1;

	/* no Nagle: a held-back reply would cost the client 40 ms a call */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void accept_one(int lfd)
{
	struct sockaddr_in peer = { 0 }, to = { .sin_family = AF_INET };
	socklen_t plen = sizeof(peer);
	struct conn *c, **tail;
	int cfd, sfd, d;

	cfd = accept(lfd, (struct sockaddr *)&peer, &plen);
	if (cfd < 0)
		return;
	nconns++;
	say("connection %d from %s:%d", nconns, inet_ntoa(peer.sin_addr),
	    ntohs(peer.sin_port));
	to.sin_port = htons((uint16_t)sport);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sfd < 0 || connect(sfd, (struct sockaddr *)&to, sizeof(to))) {
		say("connection %d: cannot reach 127.0.0.1:%d: %s", nconns, sport,
		    strerror(errno));
		if (sfd >= 0)
			close(sfd);
		close(cfd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(sfd);
		close(cfd);
		return;
	}
	c->id = nconns;
	c->fd[C2S] = cfd;
	c->fd[S2C] = sfd;
	c->pidx = -1;
	for (d = 0; d < 2; d++) {
		c->f[d].dir = d;
		c->f[d].conn = c->id;
		if (!grow(&c->f[d].msg, &c->f[d].cap, HDR_SIZE)) {
			c->fd[0] = c->fd[1] = -1;
			close(cfd);
			close(sfd);
			conn_free(c);
			return;
		}
		set_socket(c->fd[d]);
	}
	for (tail = &conns; *tail; tail = &(*tail)->next)
		;
	*tail = c;
}

static void arm(const char *ctl, const struct fault *given)
{
	struct fault ft = *given;
	char buf[256], err[200], desc[128];
	ssize_t n = 0;
	int fd;

	if (ctl) {
		fd = open(ctl, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
		}
		if (fd < 0 || n < 0) {
			say("cannot read %s: %s; not armed", ctl, strerror(errno));
			return;
		}
		buf[n] = 0;
		if (fault_parse(buf, &ft, err, sizeof(err))) {
			say("%s: %s; not armed", ctl, err);
			return;
		}
	}
	fault_arm(&ft);
	fault_describe(&ft, desc, sizeof(desc));
	say("armed: %s (after %d connections)", desc, nconns);
}

static int listen_on(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd, one = 1;

	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: seal_relay -l LPORT -s SPORT [-f FAULT] [-A] [-C CTLFILE] [-c CAPTURE]\n"
		"  FAULT: pass | flip | truncate | drop | reorder | replay | inject\n"
		"         [c2s|s2c] [N] [hdr|hdr:K|body|last]; or hello-features | hello-bootgen | hello-slow N\n"
		"  -A: armed by SIGUSR1 only; -C: the fault read from CTLFILE at each SIGUSR1\n");
	exit(2);
}

static int port_arg(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < 1 || v > 65535)
		usage();
	return (int)v;
}

/* The poll set: the listener, the signalfd, then both sockets of each
 * connection (c->pidx). NULL when out of memory. */
static struct pollfd *poll_set(struct pollfd *pfd, size_t *pcap, int lfd,
			       int sfd, size_t *np)
{
	size_t n = 2, need = 2;
	struct conn *c;
	int d;

	for (c = conns; c; c = c->next)
		need += 2;
	if (need > *pcap) {
		struct pollfd *p = realloc(pfd, need * sizeof(*pfd));

		if (!p) {
			free(pfd);
			return NULL;
		}
		pfd = p;
		*pcap = need;
	}
	pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	for (c = conns; c; c = c->next) {
		c->pidx = (int)n;
		for (d = 0; d < 2; d++) {
			short ev = 0;

			if (c->closing ? !c->eof[d] : qlen(&c->f[d].q) < QUEUE_MAX)
				ev |= POLLIN;
			if (qlen(&c->f[!d].q))
				ev |= POLLOUT;
			/* nothing wanted: not polled, or a hung-up peer's
			 * POLLHUP would wake the loop at once, for ever */
			pfd[n++] = (struct pollfd){ .fd = ev ? c->fd[d] : -1,
						    .events = ev };
		}
	}
	*np = n;
	return pfd;
}

/* One connection's turn after poll: read, relay, write, close. Returns
 * true when it is gone. */
static bool conn_turn(struct conn *c, const struct pollfd *pfd)
{
	int d;

	for (d = 0; d < 2 && c->pidx >= 0; d++) {
		if (!(pfd[c->pidx + d].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (c->closing)
			discard_in(c, d);
		else if (pump_in(c, d) < 0)
			start_close(c);
	}
	/* write what the reads queued without waiting for POLLOUT */
	for (d = 0; d < 2; d++)
		if (qlen(&c->f[d].q) && pump_out(c, d) < 0)
			start_close(c);
	if (!c->closing)
		return false;
	for (d = 0; d < 2; d++) {
		if (!qlen(&c->f[d].q) && !c->shut[!d]) {
			shutdown(c->fd[!d], SHUT_WR);
			c->shut[!d] = true;
		}
	}
	return (c->shut[0] && c->shut[1] && c->eof[0] && c->eof[1]) ||
	       now_ms() >= c->close_by;
}

/* SIGUSR1 arms; SIGTERM or SIGINT: false, the relay ends */
static bool signals(int sfd, const char *ctl, const struct fault *given)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo != SIGUSR1)
			return false;
		arm(ctl, given);
	}
	return true;
}

static int relay(int lfd, int sfd, const char *ctl, const struct fault *given)
{
	struct pollfd *pfd = NULL;
	size_t pcap = 0, n;
	struct conn *c, **pp;

	for (;;) {
		pfd = poll_set(pfd, &pcap, lfd, sfd, &n);
		if (!pfd) {
			say("out of memory");
			return 1;
		}
		if (poll(pfd, (nfds_t)n, 250) < 0 && errno != EINTR) {
			say("poll: %s", strerror(errno));
			free(pfd);
			return 1;
		}
		if (!signals(sfd, ctl, given))
			break;
		for (pp = &conns; (c = *pp);) {
			if (conn_turn(c, pfd)) {
				*pp = c->next;
				conn_free(c);
			} else {
				pp = &c->next;
			}
		}
		if (pfd[0].revents & POLLIN)
			accept_one(lfd);
	}
	say("exit: %d connections, fault %s", nconns,
	    fault_fired() ? "fired" : "not fired");
	while ((c = conns)) {
		conns = c->next;
		conn_free(c);
	}
	free(pfd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *ctl = NULL, *cap = NULL;
	struct fault given;
	char err[200];
	bool wait_arm = false;
	int lport = 0, lfd, sfd, opt, rc;
	sigset_t sigs;

	fault_parse("pass", &given, err, sizeof(err));
	while ((opt = getopt(argc, argv, "l:s:f:AC:c:h")) != -1) {
		switch (opt) {
		case 'l': lport = port_arg(optarg); break;
		case 's': sport = port_arg(optarg); break;
		case 'f':
			if (fault_parse(optarg, &given, err, sizeof(err))) {
				fprintf(stderr, "seal_relay: -f: %s\n", err);
				usage();
			}
			break;
		case 'A': wait_arm = true; break;
		case 'C': ctl = optarg; wait_arm = true; break;
		case 'c': cap = optarg; break;
		default: usage();
		}
	}
	if (!lport || !sport || optind != argc)
		usage();
	if (cap && !(capture = fopen(cap, "ae"))) {
		fprintf(stderr, "seal_relay: %s: %s\n", cap, strerror(errno));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	lfd = listen_on(lport);
	if (sfd < 0 || lfd < 0) {
		fprintf(stderr, "seal_relay: listen on 127.0.0.1:%d: %s\n", lport, strerror(errno));
		return 1;
	}
	say("listening on 127.0.0.1:%d, server 127.0.0.1:%d", lport, sport);
	if (!wait_arm)
		arm(NULL, &given);
	rc = relay(lfd, sfd, ctl, &given);
	if (capture)
		fclose(capture);
	return rc;
}
