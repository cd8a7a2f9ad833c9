/* hostile_batch.c: the batch-* scenarios of the hostile proxy (hostile.c).
 *
 * The client sends its write-back log (creates made locally) in BATCH
 * messages: complete inner requests, each with its tag (1..n) and seq;
 * the reply holds the inner replies in the same order (pohmel_proto.h).
 * These scenarios spoil the first BATCH reply that has two or more inner
 * replies, after pohmeld applied the whole batch: the client must refuse
 * the reply whole. The last inner reply is the one spoiled (but for
 * batch-missing), so everything before it is well formed: a client that
 * applied inner replies as it read them would show it. batch-enosys
 * instead answers every BATCH request itself, status ENOSYS and no body,
 * without passing it on (as pohmeld does for a connection without
 * POHMEL_FEAT_BATCH: nothing in it applied).
 * Once a scenario fired, batch_watch() logs what the client sends:
 * "batch replayed ..." when a BATCH comes again with the spoiled one's
 * seqs (answered from pohmeld's reply cache), "batch sent ..." for other
 * BATCHes and "single ..." for lone CREATEs and MKDIRs.
 */
#include <string.h>

#include "hostile.h"

#define ENOSYS_STATUS 38
/* the inner messages a BATCH can hold (the client sends up to 64) */
#define INNER_MAX 256

/* the seqs of the spoiled (or refused) BATCH: its first inner one, how many */
static uint64_t spoiled_seq;
static uint32_t spoiled_n;

/* Offsets (from the payload) of the inner messages of a BATCH payload @p
 * of @len bytes; their number, or -1 when they do not fill it exactly. */
static int inner(const uint8_t *p, uint32_t len, uint32_t *offs)
{
	uint32_t off = 0;
	int n = 0;

	while (off < len) {
		if (len - off < HDR || get32(p + off + H_LEN) > len - off - HDR || n == INNER_MAX)
			return -1;
		offs[n++] = off;
		off += HDR + get32(p + off + H_LEN);
	}
	return n;
}

int batch_spoilable(const uint8_t *m, uint32_t len)
{
	uint32_t offs[INNER_MAX];
	const uint8_t *last;
	int n;

	if (get16(m + H_OP) != OP_BATCH || !(get16(m + H_FLAGS) & HF_REPLY) ||
	    get32(m + H_STATUS))
		return 0;
	n = inner(m + HDR, len, offs);
	if (n < 2)
		return 0;
	last = m + HDR + offs[n - 1];
	return !get32(last + H_STATUS) && get32(last + H_LEN) == 2 * ATTR &&
	       (get16(last + H_OP) == OP_CREATE || get16(last + H_OP) == OP_MKDIR);
}

size_t batch_spoil(const char *name, const uint8_t *m, uint32_t len, uint8_t *out)
{
	uint32_t offs[INNER_MAX], olen = len, ilen;
	uint8_t *p = out + HDR, *last;
	int n = inner(m + HDR, len, offs);

	memcpy(out, m, HDR + len);
	last = p + offs[n - 1];
	ilen = get32(last + H_LEN);
	spoiled_seq = get64(p + H_SEQ);
	spoiled_n = (uint32_t)n;
	if (!strcmp(name, "batch-missing")) {
		/* only the first inner reply */
		olen = offs[1];
	} else if (!strcmp(name, "batch-extra")) {
		/* one more, as if to a request after the last */
		memcpy(p + len, last, HDR + ilen);
		put32(p + len + H_TAG, get32(last + H_TAG) + 1);
		put64(p + len + H_SEQ, get64(last + H_SEQ) + 1);
		olen = len + HDR + ilen;
	} else if (!strcmp(name, "batch-tag")) {
		put32(last + H_TAG, get32(last + H_TAG) + 1);
	} else if (!strcmp(name, "batch-op")) {
		/* MKDIR's reply has CREATE's shape: only the op tells */
		put16(last + H_OP, get16(last + H_OP) == OP_CREATE ? OP_MKDIR : OP_CREATE);
	} else if (!strcmp(name, "batch-seq")) {
		/* the seq of the reply before it */
		put64(last + H_SEQ, get64(p + offs[n - 2] + H_SEQ));
	} else if (!strcmp(name, "batch-err-body")) {
		put32(last + H_STATUS, 17);	/* EEXIST, and the body kept */
	} else if (!strcmp(name, "batch-body-short")) {
		/* one attr of the two an entry reply has */
		put32(last + H_LEN, ATTR);
		olen = len - ilen + ATTR;
	}
	put32(out + H_LEN, olen);
	say("fired %s: BATCH reply of %d inner replies (seqs %llu..%llu), sent with %u bytes of "
	    "payload for %u", name, n, (unsigned long long)spoiled_seq,
	    (unsigned long long)(spoiled_seq + (uint64_t)n - 1), olen, len);
	return HDR + olen;
}

void batch_refuse(const uint8_t *m, uint8_t *out)
{
	uint32_t offs[INNER_MAX];
	int n = inner(m + HDR, get32(m + H_LEN), offs);

	memset(out, 0, HDR);
	put16(out + H_OP, OP_BATCH);
	put16(out + H_FLAGS, HF_REPLY);
	memcpy(out + H_TAG, m + H_TAG, 4);
	put32(out + H_STATUS, ENOSYS_STATUS);
	memcpy(out + H_SEQ, m + H_SEQ, 8);
	spoiled_seq = n > 0 ? get64(m + HDR + H_SEQ) : 0;
	spoiled_n = n > 0 ? (uint32_t)n : 0;
	say("fired batch-enosys: BATCH of %d requests (first seq %llu) refused whole, not "
	    "passed on", n, (unsigned long long)spoiled_seq);
}

void batch_watch(const uint8_t *m, uint32_t len)
{
	uint16_t op = get16(m + H_OP);
	uint32_t offs[INNER_MAX];
	uint64_t seq;
	int n;

	if (get16(m + H_FLAGS) & (HF_REPLY | HF_SERVER))
		return;
	if (op == OP_CREATE || op == OP_MKDIR) {
		say("single %s seq %llu", op == OP_CREATE ? "CREATE" : "MKDIR",
		    (unsigned long long)get64(m + H_SEQ));
		return;
	}
	if (op != OP_BATCH)
		return;
	n = inner(m + HDR, len, offs);
	seq = n > 0 ? get64(m + HDR + H_SEQ) : 0;
	say("batch %s: %d requests, first seq %llu",
	    n > 0 && seq == spoiled_seq && (uint32_t)n == spoiled_n ? "replayed" : "sent", n,
	    (unsigned long long)seq);
}
