/* hostile.h: what the hostile proxy's files share (hostile.c,
 * hostile_batch.c): the wire format and the log. */
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
#endif
