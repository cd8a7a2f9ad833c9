/* hostile: a misbehaving POHMELFS server for the hostile group (hostile.sh).
 *
 *   hostile -p PORT -u UPSTREAM_PORT -s SCENARIO [-a] [-l LOG] [-k KEYFILE]
 *
 * Listens on 127.0.0.1:PORT and proxies every connection to the real pohmeld
 * on 127.0.0.1:UPSTREAM_PORT, message by message, so that a mount works
 * normally. Once armed (SIGUSR1, or -a: from the start) it misbehaves as
 * SCENARIO says on the next reply(s) from the server (see the table below),
 * then goes back to proxying faithfully on later connections, so that the
 * client can show it recovered. Every time the scenario fires it writes a
 * line "fired SCENARIO ..." to the log (stderr or -l LOG), so the test can
 * tell a scenario that never triggered from one the client survived.
 * One client connection at a time (a kernel mount has one).
 * With -k (the key file the mounts use) the proxy holds the key, as a
 * compromised server would: it ends protocol 1.3 on both legs and seals
 * what the scenarios send (hostile_seal.c); without it, it relays bytes.
 *
 *   hostile --selftest
 *
 * Checks the handshake and record arithmetic against the protocol's test
 * vectors: exit 0 when it agrees.
 *
 *   hostile round DIR N SRC SRC2 NAME [big] [parallel] [short] [seqwin] [batch]
 *
 * The operations the test runs on the hostile mount (hostile_round.c), in
 * one process (an exec costs a lot under TCG): stat, list, read (O_DIRECT
 * when N > 1), write, create, unlink, small reads, each reported as "op 0"
 * or "op ERRNO". Each operation gets SIGALRM after 20 s: a hang ends the
 * round early.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hostile.h"

/* ---- scenarios ----------------------------------------------------------- */
enum when { W_ANY, W_ATTR, W_DIRENT, W_READ, W_SEQ, W_BATCH, W_HELLO, W_AUTH, W_CONN, W_ENTRY };
struct scenario {
	const char *name;
	enum when when;		/* which reply it applies to */
	int times;		/* how often it fires once armed (0: for ever) */
	const char *what;
};
static const struct scenario scenarios[] = {
	{ "garbage", W_ANY, 1, "the reply replaced by 64 random bytes" },
	{ "len-huge", W_ANY, 1, "header length 1 GiB (above max_msg)" },
	{ "len-maxmsg", W_ANY, 1, "header length max_msg + 1" },
	{ "body-long", W_ANY, 1, "16 bytes more body than the opcode has" },
	{ "body-short", W_ATTR, 1, "body cut to 8 bytes (shorter than the fixed part)" },
	{ "err-body", W_ANY, 1, "an error status with a body" },
	{ "bad-status", W_ANY, 1, "status 0x7fffffff (not an errno)" },
	{ "status-internal", W_READ, 1, "READ status 529, the kernel's internal EIOCBQUEUED" },
	{ "bad-flags", W_ANY, 1, "unknown header flag bits" },
	{ "bad-op", W_ANY, 1, "reply with another opcode than the request" },
	{ "no-reply-flag", W_ANY, 1, "reply without HF_REPLY" },
	{ "attr-mode", W_ATTR, 1, "attr with an invalid file type" },
	{ "attr-nsec", W_ATTR, 1, "attr with nsec >= 1e9" },
	{ "attr-id0", W_ATTR, 1, "attr with object id 0" },
	{ "attr-type", W_ATTR, 1, "attr of a known object (id and gen seen before) with another (valid) type" },
	{ "attr-nlink0", W_ATTR, 0, "every attr says nlink 0" },
	{ "entry-alias", W_ENTRY, 1, "CREATE reply naming a directory the client has (its id and gen, type kept)" },
	{ "entry-alias-dir", W_ENTRY, 1, "MKDIR reply naming a directory the client has under another name" },
	{ "dirent-namelen", W_DIRENT, 1, "readdir entry name length past the end" },
	{ "dirent-count", W_DIRENT, 1, "readdir count larger than the entries" },
	{ "dirent-name", W_DIRENT, 1, "readdir entry name with a '/'" },
	{ "dirent-loop", W_DIRENT, 2, "two READDIRs answered with the first listing, no EOF" },
	{ "read-count", W_READ, 1, "READ reply count larger than its data" },
	{ "unknown-tag", W_ANY, 1, "a reply to a tag never sent, then the real one" },
	{ "dup-tag", W_ANY, 1, "the reply sent twice" },
	{ "reorder", W_ANY, 0, "replies held back and sent in reverse order" },
	{ "recall-garbage", W_ANY, 1, "a RECALL with object id 0 and target 9" },
	{ "recall-len", W_ANY, 1, "a RECALL with an 8-byte body" },
	{ "server-op", W_ANY, 1, "a server message with opcode READ" },
	{ "flood", W_ANY, 1, "20000 unsolicited RECALLs before the reply" },
	{ "hdr-close", W_ANY, 1, "10 bytes of the header, then close" },
	{ "body-close", W_ANY, 1, "header and half the body, then close" },
	{ "drop-close", W_ANY, 1, "no reply, close" },
	{ "stall-hdr", W_ANY, 1, "10 bytes of the header, then silence" },
	{ "stall-body", W_ANY, 1, "header and half the body, then silence" },
	{ "stall-noread", W_ANY, 1, "no reply and stop reading the client" },
	{ "stall-hard", W_ANY, 1, "as stall-hdr (the test mounts hard)" },
	{ "hello-magic", W_HELLO, 2, "HELLO reply with a wrong magic" },
	{ "hello-version", W_HELLO, 2, "HELLO reply with major version 99" },
	{ "hello-maxmsg", W_HELLO, 2, "HELLO reply with max_msg 16" },
	{ "hello-features", W_HELLO, 2, "HELLO reply with unknown feature bits" },
	{ "hello-garbage", W_HELLO, 2, "HELLO reply replaced by garbage" },
	{ "hello-stall", W_HELLO, 1, "no HELLO reply, silence" },
	{ "hello-close", W_HELLO, 2, "close instead of the HELLO reply" },
	{ "auth-attr", W_AUTH, 2, "AUTH reply with a malformed root attr" },
	{ "auth-close", W_AUTH, 2, "close instead of the AUTH reply" },
	{ "reconnect-close", W_CONN, 3, "close the connection at once" },
	/* hostile_batch.c: a BATCH reply (the write-back log's creates) */
	{ "batch-missing", W_BATCH, 1, "BATCH reply cut after its first inner reply" },
	{ "batch-extra", W_BATCH, 1, "BATCH reply with one inner reply more than requests" },
	{ "batch-tag", W_BATCH, 1, "BATCH reply whose last inner reply has another tag" },
	{ "batch-op", W_BATCH, 1, "BATCH reply whose last inner reply has another op (CREATE/MKDIR)" },
	{ "batch-seq", W_BATCH, 1, "BATCH reply whose last inner reply has the seq of the one before" },
	{ "batch-err-body", W_BATCH, 1, "BATCH reply whose last inner reply has an error status and a body" },
	{ "batch-body-short", W_BATCH, 1, "BATCH reply whose last inner reply has one attr of two" },
	{ "batch-enosys", W_BATCH, 0, "every BATCH refused whole (ENOSYS, no body), not passed on" },
	{ "seq-window", W_SEQ, 1, "the reply to one sequenced request held back for up to "
	  "8 s; logs the highest seq the client sent meanwhile" },
};
/* seq-window: the client may not send seq S + SEQ_WINDOW while S is unanswered */
#define SEQ_WINDOW 1024
#define SEQ_HOLD_MS 8000
static const struct scenario *sc;

static volatile sig_atomic_t armed;
static int fired;
static FILE *logf;
static int keyed;		/* -k: we hold the keys */

/*
 * attr-type: the objects the client was told of (by the first attr of a
 * reply: the one it makes an inode of or refreshes). Another type under
 * a known (id, gen) is what the client can refuse; the same lie about an
 * object it never saw is indistinguishable from the truth, and it keeps
 * it for as long as the server's grants say nothing changed.
 */
#define SEEN_MAX 4096
static struct { uint64_t id, gen; } seen[SEEN_MAX];
static size_t nseen;
/* entry-alias*: the directory the client was last told of */
static uint64_t dir_id, dir_gen;

static void on_usr1(int sig)
{
	(void)sig;
	armed = 1;
}

void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(logf, fmt, ap);
	va_end(ap);
	fputc('\n', logf);
	fflush(logf);
}

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245 + 12345;
	return rnd_state >> 8;
}

/* ---- buffers --------------------------------------------------------------- */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

/* Room for @n more bytes at the end of @b (not counted in b->len). */
static uint8_t *buf_room(struct buf *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;

		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p) {
			say("out of memory");
			exit(1);
		}
		b->cap = cap;
	}
	return b->p + b->len;
}

static void buf_add(struct buf *b, const void *d, size_t n)
{
	memcpy(buf_room(b, n), d, n);
	b->len += n;
}

static void buf_drop(struct buf *b, size_t n)
{
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

/* ---- one client connection --------------------------------------------------- */
struct conn {
	int cfd, ufd;
	struct buf in_c, in_u;		/* read, not yet parsed */
	struct buf out_c, out_u;	/* to write */
	int stalled;			/* no more to the client */
	int noread;			/* stopped reading the client */
	int close_after;		/* close once out_c is written */
	int armed_at_start;		/* armed before this connection began */
	uint32_t last_tag;
	struct buf held;		/* reorder: replies held back */
	struct buf listing;		/* dirent-loop: the first listing */
	int nheld;
	unsigned long long held_since;
	/* seq-window: the request whose reply is held, its seq, the highest
	 * seq sent since, and the reply once it came */
	uint32_t win_tag;
	uint64_t win_seq, win_max;
	unsigned long long win_since;
	struct buf win_reply;
	int win_held;
	/* -k: the handshake and keys of both legs; what goes to the client,
	 * not yet cut into messages (a scenario may write one in pieces) */
	struct seal_conn sl;
	struct buf pend_c;
};

/* seq-window: give the held reply back (it may not have come yet) */
static void win_release(struct conn *c, const char *why);

static int attr_op(uint16_t op)
{
	switch (op) {
	case OP_LOOKUP: case OP_GETATTR: case OP_SETATTR: case OP_READDIR:
	case OP_CREATE: case OP_MKDIR: case OP_UNLINK: case OP_RMDIR:
	case OP_OPEN: case OP_READ: case OP_WRITE: case OP_FSYNC:
		return 1;
	}
	return 0;
}

static int seen_attr(const uint8_t *a)
{
	uint64_t id = get64(a + A_ID), gen = get64(a + A_GEN);
	size_t i;

	for (i = 0; i < nseen; i++)
		if (seen[i].id == id && seen[i].gen == gen)
			return 1;
	return 0;
}

/* Remember the object a successful reply (or AUTH's root) told of. */
static void see_attr(const uint8_t *m, uint16_t op, uint32_t len)
{
	const uint8_t *a = m + HDR;

	if (len < ATTR || get32(m + H_STATUS) || (get16(m + H_FLAGS) & HF_SERVER) ||
	    (!attr_op(op) && op != OP_AUTH))
		return;
	/* (a MKDIR's is the new directory: entry-alias-dir's own reply) */
	if ((get32(a + A_MODE) & 0170000) == 0040000 && op != OP_MKDIR) {
		dir_id = get64(a + A_ID);
		dir_gen = get64(a + A_GEN);
	}
	if (seen_attr(a) || nseen == SEEN_MAX)
		return;
	seen[nseen].id = get64(a + A_ID);
	seen[nseen].gen = get64(a + A_GEN);
	nseen++;
}

/*
 * One message (or what a scenario has instead: garbage, a length that
 * lies) to the client: a record once leg a is sealed; @cut: only that
 * much of it (hdr-close, stall-*), of a record the same part of the
 * message behind its outer header, 0: all.
 */
static void emit_client(struct conn *c, uint8_t *m, size_t n, size_t cut)
{
	size_t rl;

	if (!c->sl.a.on) {
		seal_reply_out(&c->sl, m, n);	/* the HELLO reply: our mac_s */
		buf_add(&c->out_c, m, cut ? cut : n);
		return;
	}
	rl = seal_record(&c->sl.a, m, n, buf_room(&c->out_c, HDR + n + TAG_LEN));
	c->out_c.len += !cut ? rl : cut < HDR ? cut : HDR + cut;
}

/*
 * Cut what the scenarios sent the client into messages by their headers'
 * lengths; @flush: what is left (garbage, a length that lies) is one
 * message as it is. Called after each message handled, so that what one
 * scenario writes in pieces (body-long, len-maxmsg) is one record.
 */
static void client_frame(struct conn *c, int flush)
{
	struct buf *p = &c->pend_c;
	size_t off = 0, n;

	while (p->len - off >= HDR && p->len - off - HDR >= get32(p->p + off + H_LEN)) {
		n = HDR + get32(p->p + off + H_LEN);
		emit_client(c, p->p + off, n, 0);
		off += n;
	}
	if (flush && p->len > off) {
		emit_client(c, p->p + off, p->len - off, 0);
		off = p->len;
	}
	if (off)
		buf_drop(p, off);
}

static void to_client(struct conn *c, const uint8_t *m, size_t n)
{
	if (c->stalled)
		return;
	if (!c->sl.key) {
		buf_add(&c->out_c, m, n);
		return;
	}
	buf_add(&c->pend_c, m, n);
	client_frame(c, 0);
}

/* Only the first @cut bytes of the message @m of @full bytes. */
static void to_client_cut(struct conn *c, uint8_t *m, size_t full, size_t cut)
{
	if (c->stalled)
		return;
	if (!c->sl.a.on) {
		to_client(c, m, cut);
		return;
	}
	client_frame(c, 1);
	emit_client(c, m, full, cut);
}

/* One whole message to pohmeld: a record once leg b is sealed. */
static void to_server(struct conn *c, const uint8_t *m, size_t n)
{
	seal_hello_out(&c->sl, m, n);	/* leg b's transcript */
	if (!c->sl.b.on) {
		buf_add(&c->out_u, m, n);
		return;
	}
	c->out_u.len += seal_record(&c->sl.b, m, n, buf_room(&c->out_u, HDR + n + TAG_LEN));
}

static void fake_recall(struct conn *c, uint64_t id, uint32_t to, uint32_t len, uint16_t op)
{
	uint8_t m[HDR + 32] = {0};

	put32(m + H_LEN, len);
	put16(m + H_OP, op);
	put16(m + H_FLAGS, HF_SERVER);
	put64(m + HDR, id);
	put64(m + HDR + 8, 1);
	put32(m + HDR + 16, to);
	put64(m + HDR + 24, FAKE_RECALL_ID | rnd());
	to_client(c, m, HDR + len);
}

static void flush_held(struct conn *c)
{
	/* reverse order: walk the held messages back to front */
	size_t offs[256];
	int n = 0, i;
	size_t off = 0;

	while (off < c->held.len && n < 256) {
		offs[n++] = off;
		off += HDR + get32(c->held.p + off);
	}
	for (i = n - 1; i >= 0; i--)
		to_client(c, c->held.p + offs[i], HDR + get32(c->held.p + offs[i]));
	if (n > 1)
		say("fired reorder: %d replies sent in reverse order", n);
	c->held.len = 0;
	c->nheld = 0;
}

/* Does the scenario apply to this reply? */
static int applies(const struct conn *c, const uint8_t *m, uint16_t op, uint32_t len)
{
	uint16_t rop = op;

	(void)c;
	if (!armed || (sc->times && fired >= sc->times))
		return 0;
	switch (sc->when) {
	case W_HELLO:
		return rop == OP_HELLO;
	case W_AUTH:
		return rop == OP_AUTH && len == ATTR;
	case W_CONN:
		return 0;
	default:
		break;
	}
	if (rop == OP_HELLO || rop == OP_AUTH || (get16(m + H_FLAGS) & HF_SERVER))
		return 0;
	switch (sc->when) {
	case W_ATTR:
		return attr_op(rop) && len >= ATTR && !get32(m + H_STATUS) &&
		       (strcmp(sc->name, "attr-type") || seen_attr(m + HDR));
	case W_DIRENT:
		return rop == OP_READDIR && len > 128 + 136 && get32(m + HDR + 120) > 0;
	case W_READ:
		return rop == OP_READ && len >= 128 && !get32(m + H_STATUS);
	case W_SEQ:
		return 0;	/* from_client() and from_server() do it */
	case W_BATCH:	/* (batch-enosys: from_client() does it) */
		return strcmp(sc->name, "batch-enosys") && batch_spoilable(m, len);
	case W_ENTRY:
		return rop == (strcmp(sc->name, "entry-alias") ? OP_MKDIR : OP_CREATE) &&
		       len >= 2 * ATTR && !get32(m + H_STATUS) && dir_id;
	default:
		return 1;
	}
}

static void hostile_reply(struct conn *c, uint8_t *m, uint32_t len, uint16_t op)
{
	const char *n = sc->name;
	uint8_t *b = m + HDR;
	size_t i;

	fired++;
	if (sc->when == W_BATCH) {
		uint8_t *s = malloc(2 * (HDR + (size_t)len));

		if (!s) {
			say("out of memory");
			exit(1);
		}
		to_client(c, s, batch_spoil(n, m, len, s));
		free(s);
		return;
	}
	say("fired %s on op %u tag %u len %u", n, op, get32(m + H_TAG), len);
	if (!strcmp(n, "garbage") || !strcmp(n, "hello-garbage")) {
		uint8_t g[64];

		for (i = 0; i < sizeof(g); i++)
			g[i] = (uint8_t)rnd();
		to_client(c, g, sizeof(g));
	} else if (!strcmp(n, "len-huge")) {
		put32(m + H_LEN, 1u << 30);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "len-maxmsg")) {
		put32(m + H_LEN, MAX_MSG + 1);
		to_client(c, m, HDR + len);
		for (i = len; i < MAX_MSG + 1; i += 4096) {
			static const uint8_t z[4096];
			size_t k = MAX_MSG + 1 - i < 4096 ? MAX_MSG + 1 - i : 4096;

			to_client(c, z, k);
		}
	} else if (!strcmp(n, "body-long")) {
		uint8_t z[16] = {0};

		put32(m + H_LEN, len + 16);
		to_client(c, m, HDR + len);
		to_client(c, z, 16);
	} else if (!strcmp(n, "body-short")) {
		put32(m + H_LEN, 8);
		to_client(c, m, HDR + 8);
	} else if (!strcmp(n, "err-body")) {
		put32(m + H_STATUS, 5);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "bad-status")) {
		put32(m + H_STATUS, 0x7fffffff);
		put32(m + H_LEN, 0);
		to_client(c, m, HDR);
	} else if (!strcmp(n, "status-internal")) {
		put32(m + H_STATUS, 529);
		put32(m + H_LEN, 0);
		to_client(c, m, HDR);
	} else if (!strcmp(n, "bad-flags")) {
		put16(m + H_FLAGS, get16(m + H_FLAGS) | 0x0100);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "bad-op")) {
		put16(m + H_OP, op == OP_PING ? OP_GETATTR : OP_PING);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "no-reply-flag")) {
		put16(m + H_FLAGS, 0);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "attr-mode")) {
		put32(b + A_MODE, 0170644);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "attr-nsec")) {
		put32(b + A_ATIME_NSEC, 2000000000u);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "attr-id0")) {
		put64(b + A_ID, 0);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "attr-type")) {
		uint32_t mode = get32(b + A_MODE);

		put32(b + A_MODE, (mode & 0170000) == 0040000 ? 0100644 : 0040755);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "entry-alias") || !strcmp(n, "entry-alias-dir")) {
		say("fired %s: object %llu/%llu named as directory %llu/%llu", n,
		    (unsigned long long)get64(b + A_ID), (unsigned long long)get64(b + A_GEN),
		    (unsigned long long)dir_id, (unsigned long long)dir_gen);
		put64(b + A_ID, dir_id);
		put64(b + A_GEN, dir_gen);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "attr-nlink0")) {
		put32(b + A_NLINK, 0);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "dirent-namelen")) {
		put16(b + 128 + 128, 0xffff);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "dirent-count")) {
		put32(b + 120, get32(b + 120) + 3);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "dirent-name")) {
		b[128 + 136] = '/';
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "read-count")) {
		put32(b + 120, get32(b + 120) + 100);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "unknown-tag")) {
		uint8_t f[HDR + 256];
		uint32_t fl = len < 256 ? len : 0;

		memcpy(f, m, HDR + fl);
		put32(f + H_LEN, fl);
		put32(f + H_TAG, c->last_tag + 1000);
		to_client(c, f, HDR + fl);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "dup-tag")) {
		to_client(c, m, HDR + len);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "recall-garbage")) {
		fake_recall(c, 0, 9, 32, OP_RECALL);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "recall-len")) {
		fake_recall(c, 1, 0, 8, OP_RECALL);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "server-op")) {
		fake_recall(c, 1, 0, 32, OP_READ);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "flood")) {
		for (i = 0; i < 20000; i++)
			fake_recall(c, 1000000 + rnd(), 0, 32, OP_RECALL);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "hdr-close") || !strcmp(n, "stall-hdr") ||
		   !strcmp(n, "stall-hard")) {
		to_client_cut(c, m, HDR + len, 10);
		if (n[0] == 'h')
			c->close_after = 1;
		else
			c->stalled = 1;
	} else if (!strcmp(n, "body-close") || !strcmp(n, "stall-body")) {
		to_client_cut(c, m, HDR + len, HDR + len / 2);
		if (n[0] == 'b')
			c->close_after = 1;
		else
			c->stalled = 1;
	} else if (!strcmp(n, "drop-close") || !strcmp(n, "hello-close") ||
		   !strcmp(n, "auth-close")) {
		c->close_after = 1;
	} else if (!strcmp(n, "stall-noread") || !strcmp(n, "hello-stall")) {
		c->stalled = 1;
		c->noread = 1;
	} else if (!strcmp(n, "hello-magic")) {
		put32(b, 0x12345678);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "hello-version")) {
		put16(b + 4, 99);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "hello-maxmsg")) {
		put32(b + 16, 16);
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "hello-features")) {
		put64(b + 8, get64(b + 8) | (1ull << 40));
		to_client(c, m, HDR + len);
	} else if (!strcmp(n, "auth-attr")) {
		put32(b + A_MODE, 0170000);
		to_client(c, m, HDR + len);
	} else {
		to_client(c, m, HDR + len);
	}
}

/* One complete message from the server. */
static void from_server(struct conn *c, uint8_t *m, uint32_t len)
{
	uint16_t op = get16(m + H_OP);
	int hit;

	if (!strcmp(sc->name, "reorder") && armed && op != OP_HELLO && op != OP_AUTH) {
		if (!c->nheld)
			c->held_since = now_ms();
		buf_add(&c->held, m, HDR + len);
		if (++c->nheld >= 3)
			flush_held(c);
		return;
	}
	if (!strcmp(sc->name, "dirent-loop") && op == OP_READDIR &&
	    (c->listing.len || applies(c, m, op, len)) && fired < sc->times &&
	    !get32(m + H_STATUS)) {
		/* the next READDIR gets the first listing again, no end */
		if (!c->listing.len) {
			put32(m + HDR + 124, 0);
			buf_add(&c->listing, m, HDR + len);
		}
		memcpy(c->listing.p + H_TAG, m + H_TAG, 4);
		fired++;
		say("fired dirent-loop on op %u len %u", op, len);
		to_client(c, c->listing.p, c->listing.len);
		return;
	}
	if (c->win_seq && !c->win_held && get32(m + H_TAG) == c->win_tag &&
	    (get16(m + H_FLAGS) & HF_REPLY)) {
		buf_add(&c->win_reply, m, HDR + len);
		c->win_held = 1;
		return;
	}
	hit = applies(c, m, op, len);
	see_attr(m, op, len);
	if (hit)
		hostile_reply(c, m, len, op);
	else
		to_client(c, m, HDR + len);
}

/* One complete message from the client. */
static void from_client(struct conn *c, uint8_t *m, uint32_t len)
{
	uint16_t op = get16(m + H_OP);
	uint32_t tag = get32(m + H_TAG);

	if (tag != 0xffffffff && tag > c->last_tag)
		c->last_tag = tag;
	if (!strcmp(sc->name, "seq-window") && get64(m + H_SEQ) &&
	    !(get16(m + H_FLAGS) & HF_REPLY)) {
		uint64_t seq = get64(m + H_SEQ);

		if (c->win_seq && seq > c->win_max)
			c->win_max = seq;
		if (!c->win_seq && armed && fired < sc->times) {
			fired++;
			c->win_seq = c->win_max = seq;
			c->win_tag = tag;
			c->win_since = now_ms();
			say("fired seq-window on op %u seq %llu: its reply held", op,
			    (unsigned long long)seq);
		}
		if (c->win_seq && c->win_max >= c->win_seq + SEQ_WINDOW + 64)
			win_release(c, "the client went past the window");
	}
	if (sc->when == W_BATCH && fired)
		batch_watch(m, len);
	if (!strcmp(sc->name, "batch-enosys") && armed && op == OP_BATCH &&
	    !(get16(m + H_FLAGS) & HF_REPLY)) {
		uint8_t r[HDR];

		fired++;
		batch_refuse(m, r);
		to_client(c, r, HDR);
		return;
	}
	/* acks to the recalls we made up: pohmeld never sent those */
	if (op == OP_RECALL_ACK && len == 32 && (get64(m + HDR + 24) & FAKE_RECALL_ID))
		return;
	to_server(c, m, HDR + len);
}

/*
 * The record at @m (outer header of @len bytes of payload, all there)
 * from @l's peer, opened in place: 0 and the inner message at m + HDR,
 * or -1 (logged) when the stream cannot be trusted.
 */
static int open_record(struct seal_leg *l, uint8_t *m, uint32_t len, int server)
{
	static const uint8_t zero[HDR];
	const char *who = server ? "pohmeld" : "the client";

	if (get16(m + H_FLAGS) != HF_SEALED || memcmp(m + H_OP, zero, 2) ||
	    memcmp(m + H_TAG, zero, HDR - H_TAG) || len < HDR + TAG_LEN) {
		say("%s sent a malformed record (or no record): closing", who);
		return -1;
	}
	if (seal_open(l, m, HDR + len)) {
		say("%s's record %llu fails its tag: closing", who,
		    (unsigned long long)l->rx.ctr - 1);
		return -1;
	}
	if (get32(m + HDR + H_LEN) != len - TAG_LEN - HDR) {
		say("%s sent a record whose message has another length: closing", who);
		return -1;
	}
	return 0;
}

/* Parse complete messages (or records: -k) out of @in. Returns -1 on a
 * framing error. */
static int parse(struct conn *c, struct buf *in, int server)
{
	struct seal_leg *l = server ? &c->sl.b : &c->sl.a;
	size_t off = 0;

	while (in->len - off >= HDR) {
		uint8_t *m = in->p + off;
		uint32_t len = get32(m + H_LEN), used = HDR + len;

		if (len > 2 * MAX_MSG) {
			say("%s sent a message of %u bytes: closing", server ? "server" : "client", len);
			return -1;
		}
		if (in->len - off < HDR + len)
			break;
		/* (a leg turns sealed after its HELLO: ask each time) */
		if (l->on) {
			if (open_record(l, m, len, server) < 0)
				return -1;
			m += HDR;
			len = get32(m + H_LEN);
		}
		if (server) {
			seal_reply_in(&c->sl, m, HDR + len);
			from_server(c, m, len);
		} else {
			seal_hello_in(&c->sl, m, HDR + len);
			seal_auth(&c->sl, m, HDR + len);
			from_client(c, m, len);
		}
		client_frame(c, 1);
		off += used;
	}
	buf_drop(in, off);
	return 0;
}

/* Read what is there into @b; 0 on EOF or error. */
static int fill(int fd, struct buf *b)
{
	uint8_t tmp[65536];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 1;
	if (n <= 0)
		return 0;
	buf_add(b, tmp, (size_t)n);
	return 1;
}

/* Write what we can of @b; 0 on error. */
static int drain(int fd, struct buf *b)
{
	ssize_t n;

	if (!b->len)
		return 1;
	n = write(fd, b->p, b->len);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	buf_drop(b, (size_t)n);
	return 1;
}

static void win_release(struct conn *c, const char *why)
{
	say("seq-window: seq %llu released after %llu ms (%s); highest seq sent meanwhile %llu "
	    "(%llu past it, window %d)", (unsigned long long)c->win_seq,
	    now_ms() - c->win_since, why, (unsigned long long)c->win_max,
	    (unsigned long long)(c->win_max - c->win_seq), SEQ_WINDOW);
	if (c->win_held)
		to_client(c, c->win_reply.p, c->win_reply.len);
	c->win_seq = 0;
	c->win_held = 0;
	c->win_reply.len = 0;
}

static int connect_upstream(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void serve(int cfd, int uport)
{
	static struct conn c;
	int one = 1;

	free(c.in_c.p); free(c.in_u.p); free(c.out_c.p); free(c.out_u.p); free(c.held.p);
	free(c.listing.p); free(c.win_reply.p); free(c.pend_c.p);
	memset(&c, 0, sizeof(c));
	seal_start(&c.sl, keyed);
	c.cfd = cfd;
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (sc->when == W_CONN && armed && (!sc->times || fired < sc->times)) {
		fired++;
		say("fired %s: connection %d closed at once", sc->name, fired);
		close(cfd);
		return;
	}
	c.ufd = connect_upstream(uport);
	if (c.ufd < 0) {
		say("cannot reach pohmeld on port %d: %s", uport, strerror(errno));
		close(cfd);
		return;
	}
	fcntl(cfd, F_SETFL, O_NONBLOCK);
	fcntl(c.ufd, F_SETFL, O_NONBLOCK);
	c.armed_at_start = armed;
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = cfd, .events = c.noread ? POLLRDHUP : POLLIN },
			{ .fd = c.ufd, .events = POLLIN },
		};
		int tmo = c.nheld ? 20 : c.win_seq ? 100 : 1000, r;

		/* a scenario about connecting, armed now: make the client reconnect */
		if (armed && !c.armed_at_start && sc->when >= W_HELLO) {
			say("armed: closing the connection so that the client reconnects");
			break;
		}

		if (c.out_c.len)
			p[0].fd = cfd, p[0].events |= POLLOUT;
		if (c.out_u.len)
			p[1].events |= POLLOUT;
		r = poll(p, 2, tmo);
		if (r < 0 && errno != EINTR)
			break;
		if (c.nheld && now_ms() - c.held_since >= 20)
			flush_held(&c);
		if (c.win_seq && now_ms() - c.win_since >= SEQ_HOLD_MS)
			win_release(&c, "time");
		client_frame(&c, 1);
		if (r <= 0)
			continue;
		if (c.noread && (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			break;
		if (!c.noread && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			if (!fill(cfd, &c.in_c))
				break;
			if (c.stalled) {
				c.in_c.len = 0;		/* silence: swallow what comes */
			} else if (parse(&c, &c.in_c, 0) < 0) {
				break;
			}
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (!fill(c.ufd, &c.in_u)) {
				/* pohmeld closed (after BYE): deliver what it said */
				fcntl(cfd, F_SETFL, 0);
				while (c.out_c.len && drain(cfd, &c.out_c))
					;
				break;
			}
			if (c.stalled)
				c.in_u.len = 0;
			else if (parse(&c, &c.in_u, 1) < 0)
				break;
		}
		if ((p[0].revents & POLLOUT) && !drain(cfd, &c.out_c))
			break;
		if ((p[1].revents & POLLOUT) && !drain(c.ufd, &c.out_u))
			break;
		if (c.close_after && !c.out_c.len) {
			say("closing the connection");
			break;
		}
	}
	close(cfd);
	close(c.ufd);
}

/* hostile_round.c: the operations the test runs, in one process */
int do_round(int argc, char **argv);

int main(int argc, char **argv)
{
	int port = 0, uport = 7349, opt, lfd, one = 1;
	const char *name = NULL, *logp = NULL, *keyp = NULL;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sigaction sa = { .sa_handler = on_usr1 };
	size_t i;

	logf = stderr;
	if (argc > 1 && !strcmp(argv[1], "round"))
		return do_round(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "--selftest"))
		return seal_selftest();
	while ((opt = getopt(argc, argv, "p:u:s:al:k:")) != -1) {
		switch (opt) {
		case 'p': port = atoi(optarg); break;
		case 'u': uport = atoi(optarg); break;
		case 's': name = optarg; break;
		case 'a': armed = 1; break;
		case 'l': logp = optarg; break;
		case 'k': keyp = optarg; break;
		default: goto usage;
		}
	}
	for (i = 0; name && i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(scenarios[i].name, name))
			sc = &scenarios[i];
	if (!port || !sc)
		goto usage;
	if (logp && !(logf = fopen(logp, "a"))) {
		perror(logp);
		return 1;
	}
	if (keyp && (keyed = seal_load_keys(keyp)) < 0)
		return 1;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_port = htons((uint16_t)port);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 4) < 0) {
		say("listen on port %d: %s", port, strerror(errno));
		return 1;
	}
	say("listening on %d for %s (%s), upstream %d%s%s", port, sc->name, sc->what, uport,
	    keyp ? ", holding the keys of " : "", keyp ? keyp : "");
	for (;;) {
		int cfd = accept(lfd, NULL, NULL);

		if (cfd < 0) {
			if (errno == EINTR)
				continue;
			say("accept: %s", strerror(errno));
			return 1;
		}
		say("connection");
		serve(cfd, uport);
		say("connection ended");
	}
usage:
	fprintf(stderr, "usage: hostile -p PORT [-u UPSTREAM_PORT] -s SCENARIO [-a] [-l LOG] "
		"[-k KEYFILE]\n       hostile --selftest\nscenarios:\n");
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		fprintf(stderr, "  %-16s %s\n", scenarios[i].name, scenarios[i].what);
	return 2;
}
