/* seal_fault.c: the one fault the relay applies (seal_relay.c runs it).
 *
 * A fault is armed at start or by SIGUSR1; it counts the messages of its
 * direction after the HELLO exchange, over every connection, and changes
 * the Nth once. Once is the point: the client's reconnect must then go
 * through untouched so the workload can finish and show that nothing was
 * lost or applied twice. The HELLO faults instead change every
 * connection's HELLO request: the mount must fail, retries included.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "seal_relay.h"

static const char *const mode_names[] = {
	[M_PASS] = "pass", [M_FLIP] = "flip", [M_TRUNCATE] = "truncate",
	[M_DROP] = "drop", [M_REORDER] = "reorder", [M_REPLAY] = "replay",
	[M_INJECT] = "inject", [M_HELLO_FEATURES] = "hello-features",
	[M_HELLO_BOOTGEN] = "hello-bootgen", [M_HELLO_SLOW] = "hello-slow",
};

static struct fault cur;
static bool armed, fired;
static unsigned long count[2];

/* the faults that change the client's HELLO (and nothing after it) */
static bool tampers_hello(enum mode m)
{
	return m == M_HELLO_FEATURES || m == M_HELLO_BOOTGEN;
}

/* the faults that act on the HELLO exchange only */
static bool is_hello_mode(enum mode m)
{
	return tampers_hello(m) || m == M_HELLO_SLOW;
}

/* "MODE [c2s|s2c] [N] [hdr|hdr:K|body|last]", blanks or commas between */
int fault_parse(const char *spec, struct fault *ft, char *err, size_t errlen)
{
	char buf[256], *tok, *save = NULL;
	bool have_mode = false;
	unsigned int i;

	memset(ft, 0, sizeof(*ft));
	ft->dir = C2S;
	ft->n = 1;
	ft->where = W_BODY;
	ft->hdr_off = 8;	/* the outer tag field: must be 0 */
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, " \t\n,", &save); tok;
	     tok = strtok_r(NULL, " \t\n,", &save)) {
		char *end;

		if (!have_mode) {
			for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
				if (!strcmp(tok, mode_names[i]))
					break;
			if (i == sizeof(mode_names) / sizeof(mode_names[0])) {
				snprintf(err, errlen, "unknown fault '%s'", tok);
				return -1;
			}
			ft->mode = (enum mode)i;
			have_mode = true;
		} else if (!strcmp(tok, "c2s")) {
			ft->dir = C2S;
		} else if (!strcmp(tok, "s2c")) {
			ft->dir = S2C;
		} else if (!strcmp(tok, "body")) {
			ft->where = W_BODY;
		} else if (!strcmp(tok, "last")) {
			ft->where = W_LAST;
		} else if (!strcmp(tok, "hdr")) {
			ft->where = W_HDR;
		} else if (!strncmp(tok, "hdr:", 4)) {
			unsigned long k = strtoul(tok + 4, &end, 10);

			if (end == tok + 4 || *end || k >= HDR_SIZE) {
				snprintf(err, errlen, "'%s': hdr:K wants K in 0..31", tok);
				return -1;
			}
			ft->where = W_HDR;
			ft->hdr_off = (unsigned int)k;
		} else if (tok[0] >= '1' && tok[0] <= '9') {
			ft->n = strtoul(tok, &end, 10);
			if (*end || ft->n > 1000000) {
				snprintf(err, errlen, "'%s': N wants 1..1000000", tok);
				return -1;
			}
		} else {
			snprintf(err, errlen, "unknown word '%s' in the fault", tok);
			return -1;
		}
	}
	if (!have_mode) {
		snprintf(err, errlen, "empty fault");
		return -1;
	}
	return 0;
}

void fault_describe(const struct fault *ft, char *buf, size_t len)
{
	static const char *const wn[] = { "hdr", "body", "last" };

	if (ft->mode == M_HELLO_SLOW)
		snprintf(buf, len, "%s %lu", mode_names[ft->mode], ft->n);
	else if (ft->mode == M_PASS || is_hello_mode(ft->mode))
		snprintf(buf, len, "%s", mode_names[ft->mode]);
	else if (ft->mode == M_FLIP && ft->where == W_HDR)
		snprintf(buf, len, "flip %s %lu hdr:%u", dir_name(ft->dir),
			 ft->n, ft->hdr_off);
	else if (ft->mode == M_FLIP)
		snprintf(buf, len, "flip %s %lu %s", dir_name(ft->dir), ft->n,
			 wn[ft->where]);
	else
		snprintf(buf, len, "%s %s %lu", mode_names[ft->mode],
			 dir_name(ft->dir), ft->n);
}

void fault_arm(const struct fault *ft)
{
	cur = *ft;
	count[C2S] = count[S2C] = 0;
	fired = false;
	armed = true;
}

bool fault_fired(void)
{
	return fired;
}

/* xorshift64*, seeded once: inject's tag only has to differ */
static uint64_t rnd(void)
{
	static uint64_t s;

	if (!s) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		s = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
		    ((uint64_t)getpid() << 40) ^ 0x9e3779b97f4a7c15ULL;
	}
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return s * 0x2545f4914f6cdd1dULL;
}

static uint64_t be64_at(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* Every connection: a bit of the client's HELLO that the transcript MAC
 * covers. features bit 8 is the AES-GCM offer (a downgrade attempt);
 * boot_gen bit 0 makes another session of the same client. */
static void tamper_hello(struct flow *f, unsigned char *msg, size_t len)
{
	size_t off = HDR_SIZE + (cur.mode == M_HELLO_FEATURES ? HELLO_FEATURES
							       : HELLO_BOOTGEN);
	const char *field = cur.mode == M_HELLO_FEATURES ? "features" : "boot_gen";
	unsigned char *p = msg + off;
	uint64_t was;

	if (len < HDR_SIZE + HELLO_SIZE) {
		say("%s: HELLO request of connection %d too short (len %zu), not changed",
		    mode_names[cur.mode], f->conn, len);
		return;
	}
	was = be64_at(p);
	if (cur.mode == M_HELLO_FEATURES)
		p[6] ^= 0x01;	/* bit 8 of the be64 */
	else
		p[7] ^= 0x01;	/* bit 0 */
	say("fault: %s: HELLO request of connection %d: %s %#llx -> %#llx",
	    mode_names[cur.mode], f->conn, field, (unsigned long long)was,
	    (unsigned long long)be64_at(p));
}

/* the byte a flip changes: the outer header, the middle of the body (the
 * inner message), or the last byte (the tag's) */
static size_t flip_pos(size_t len)
{
	switch (cur.where) {
	case W_HDR:
		return cur.hdr_off;
	case W_BODY:
		if (len > HDR_SIZE + TAG_LEN)
			return HDR_SIZE + (len - HDR_SIZE - TAG_LEN) / 2;
		return len / 2;
	case W_LAST:
	default:
		return len - 1;
	}
}

static bool apply(struct flow *f, unsigned char *msg, size_t len, unsigned long idx)
{
	const char *d = dir_name(f->dir);
	unsigned char *copy;
	size_t pos, i, n;

	switch (cur.mode) {
	case M_FLIP:
		pos = flip_pos(len);
		msg[pos] ^= 0x01;
		emit(f, msg, len);
		say("fault: flipped bit 0 of byte %zu (%s) of %s message %lu (connection %d message %lu, len %zu)",
		    pos, pos < HDR_SIZE ? "outer header" : pos >= len - TAG_LEN ? "tag" : "body",
		    d, cur.n, f->conn, idx, len);
		return false;
	case M_TRUNCATE:
		emit(f, msg, len / 2);
		say("fault: truncated %s message %lu (connection %d message %lu) to %zu of %zu bytes, closing both sides",
		    d, cur.n, f->conn, idx, len / 2, len);
		return true;
	case M_DROP:
		say("fault: dropped %s message %lu (connection %d message %lu, len %zu)",
		    d, cur.n, f->conn, idx, len);
		return false;
	case M_REORDER:
		f->held = malloc(len);
		if (!f->held) {
			say("fault: reorder: out of memory, message passed on");
			emit(f, msg, len);
			return false;
		}
		memcpy(f->held, msg, len);
		f->held_len = len;
		say("fault: holding %s message %lu (connection %d message %lu, len %zu) to send it after the next",
		    d, cur.n, f->conn, idx, len);
		return false;
	case M_REPLAY:
		emit(f, msg, len);
		emit(f, msg, len);
		say("fault: replayed %s message %lu (connection %d message %lu, len %zu): sent twice",
		    d, cur.n, f->conn, idx, len);
		return false;
	case M_INJECT:
		emit(f, msg, len);
		copy = malloc(len);
		if (!copy) {
			say("fault: inject: out of memory, nothing injected");
			return false;
		}
		memcpy(copy, msg, len);
		n = len < TAG_LEN ? len : TAG_LEN;
		for (i = len - n; i < len; i++)
			copy[i] = (unsigned char)rnd();
		emit(f, copy, len);
		free(copy);
		say("fault: injected a copy of %s message %lu (connection %d message %lu, len %zu) with its last %zu bytes random",
		    d, cur.n, f->conn, idx, len, n);
		return false;
	default:
		emit(f, msg, len);
		return false;
	}
}

bool fault_message(struct flow *f, unsigned char *msg, size_t len)
{
	unsigned long idx = f->idx++;

	if (idx == 0) {
		if (f->dir == S2C && armed && cur.mode == M_HELLO_SLOW) {
			/* the whole relay waits: one connection at a time */
			say("fault: hello-slow: the HELLO reply of connection %d held %lu s",
			    f->conn, cur.n);
			sleep((unsigned int)cur.n);
		} else if (f->dir == C2S && armed && tampers_hello(cur.mode)) {
			tamper_hello(f, msg, len);
		}
		emit(f, msg, len);
		return false;
	}
	if (f->held) {
		emit(f, msg, len);
		emit(f, f->held, f->held_len);
		say("fault: reordered: %s message %lu (connection %d, len %zu) sent before the held one (len %zu)",
		    dir_name(f->dir), idx, f->conn, len, f->held_len);
		free(f->held);
		f->held = NULL;
		return false;
	}
	if (!armed || fired || f->dir != cur.dir || cur.mode == M_PASS ||
	    is_hello_mode(cur.mode) || ++count[f->dir] != cur.n) {
		emit(f, msg, len);
		return false;
	}
	fired = true;
	return apply(f, msg, len, idx);
}

void fault_flow_closed(struct flow *f)
{
	if (!f->held)
		return;
	say("fault: the held %s message (len %zu) is lost: connection %d closed before the next",
	    dir_name(f->dir), f->held_len, f->conn);
	free(f->held);
	f->held = NULL;
}
