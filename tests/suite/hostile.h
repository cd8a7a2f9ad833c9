/* hostile.h: what the hostile proxy's files share (hostile.c,
 * hostile_batch.c, hostile_seal.c): the wire format and the log. */
#ifndef HOSTILE_H
#define HOSTILE_H
#include <stddef.h>
#include <stdint.h>

/* ---- the wire format, as in src/pohmel_proto.h (big-endian) ---------- */
#define HDR 32
#define MAX_MSG ((1u << 20) + 4096)
#define ATTR 120
#define OP_HELLO 1
#define OP_AUTH 2
#define OP_PING 3
#define OP_LOOKUP 4
#define OP_GETATTR 5
#define OP_SETATTR 6
#define OP_READDIR 7
#define OP_CREATE 8
#define OP_MKDIR 9
#define OP_UNLINK 14
#define OP_RMDIR 15
#define OP_OPEN 17
#define OP_READ 19
#define OP_WRITE 20
#define OP_FSYNC 21
#define OP_BATCH 28
#define OP_RECALL 29
#define OP_RECALL_ACK 30
#define HF_REPLY 1
#define HF_SERVER 2
#define HF_SEALED 8
/* offsets in a header */
#define H_LEN 0
#define H_OP 4
#define H_FLAGS 6
#define H_TAG 8
#define H_STATUS 12
#define H_SEQ 16
/* offsets in an attr */
#define A_ID 0
#define A_GEN 8
#define A_ATIME_NSEC 48
#define A_MODE 88
#define A_NLINK 92
/* the recall ids this tool makes up: the client's acks to them stay here */
#define FAKE_RECALL_ID 0x8000000000000000ull

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }
static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}
static inline void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }
static inline void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32); put32(p + 4, (uint32_t)v); }

/* HELLO (1.3): the body, where its fields are, the features it names */
#define HELLO_SIZE 112
#define HE_MINOR 6
#define HE_FEATURES 8
#define HE_KEY_LEN 20
#define HE_MAC 80
#define KEYNAME_MAX 64
#define FEAT_AUTH (1ull << 0)
#define FEAT_SEAL_AES (1ull << 8)
#define FEAT_SEAL_CHACHA (1ull << 9)
#define FEAT_SIGN (1ull << 10)
#define TAG_LEN 16

/* a line in the proxy's log (hostile.c) */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- BATCH scenarios (hostile_batch.c) ------------------------------------ */
/* Is @m (a reply from the server, @len bytes of body) a BATCH reply the
 * batch-* scenarios can spoil: at least two inner replies, well framed,
 * the last one a success with an entry reply's body? */
int batch_spoilable(const uint8_t *m, uint32_t len);
/* The spoiled reply for scenario @name into @out (room for 2 * (HDR +
 * len)); its length. */
size_t batch_spoil(const char *name, const uint8_t *m, uint32_t len, uint8_t *out);
/* batch-enosys: the reply refusing the BATCH request @m whole (a header,
 * ENOSYS, no body) into @out (HDR bytes). */
void batch_refuse(const uint8_t *m, uint8_t *out);
/* A request from the client once a batch-* scenario fired: log the BATCHes
 * (and whether one is the spoiled one again, same seqs) and the lone
 * CREATEs and MKDIRs. */
void batch_watch(const uint8_t *m, uint32_t len);

/* ---- the proxy as a key holder (hostile_seal.c) ----------------------------
 * With a key file (-k) the proxy ends protocol 1.3 on both legs: leg a is
 * the client's connection (the proxy is its server), leg b pohmeld's (the
 * proxy is its client). Each leg has its own transcript hash, keys and
 * counters, so what the scenarios do in between arrives as valid records.
 */
struct seal_dir {
	uint8_t key[32];
	uint64_t ctr;			/* records so far */
};
struct seal_leg {
	int keyed;			/* FEAT_AUTH: the HELLO MACs */
	int on;				/* an AEAD: every message is a record */
	int chacha, sign;
	uint8_t th[32];
	struct seal_dir tx, rx;
};
enum seal_state {
	SL_OFF,		/* no key file, or a connection without a key: as is */
	SL_HELLO,	/* waiting for the client's HELLO */
	SL_REPLY,	/* it named a key we have: waiting for pohmeld's reply */
	SL_OUT,		/* pohmeld's reply in, the client's not yet out */
	SL_AUTH,	/* the client's next message is its AUTH */
	SL_UP,
};
struct seal_conn {
	enum seal_state state;
	const uint8_t *key;
	size_t keylen;
	uint8_t req_a[HDR + HELLO_SIZE + KEYNAME_MAX];	/* as received */
	uint8_t req_b[HDR + HELLO_SIZE + KEYNAME_MAX];	/* as sent */
	size_t req_a_len, req_b_len;
	struct seal_leg a, b;
};
/* The keys of @path ("NAME HEX" lines, or one bare HEX: "default");
 * their number, -1 (and a log line) when the file is unusable. */
int seal_load_keys(const char *path);
/* The arithmetic against the protocol's test vectors; 0 when it agrees. */
int seal_selftest(void);
/* A connection starts (@keyed: a key file was given). */
void seal_start(struct seal_conn *s, int keyed);
/* The handshake, step by step: the client's HELLO as received and as
 * sent on; pohmeld's reply as received (its mac_s checked, leg b's keys)
 * and, maybe changed by a scenario, as sent to the client (@m rewritten:
 * mac_s over leg a's transcript; leg a's keys); the client's AUTH (its
 * mac_c checked, @m rewritten with leg b's). */
void seal_hello_in(struct seal_conn *s, const uint8_t *m, size_t n);
void seal_hello_out(struct seal_conn *s, const uint8_t *m, size_t n);
void seal_reply_in(struct seal_conn *s, const uint8_t *m, size_t n);
void seal_reply_out(struct seal_conn *s, uint8_t *m, size_t n);
void seal_auth(struct seal_conn *s, uint8_t *m, size_t n);
/* Seal @n bytes of message @m as @l's next record into @out (room for
 * HDR + n + TAG_LEN); its length. */
size_t seal_record(struct seal_leg *l, const uint8_t *m, size_t n, uint8_t *out);
/* Open the record @rec (@n bytes, outer header included) in place as @l's
 * next one: 0, or -1 when its tag does not verify. */
int seal_open(struct seal_leg *l, uint8_t *rec, size_t n);
#endif
