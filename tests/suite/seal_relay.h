/* seal_relay.h: the relay of the seal group (seal_relay.c: connections and
 * queues; seal_fault.c: what a fault does to a message).
 */
#ifndef SEAL_RELAY_H
#define SEAL_RELAY_H

#include <stdbool.h>
#include <stddef.h>

/* The framing of pohmel_proto.h, restated: the suite is copied into the
 * guest without src/. Every message is a 32-byte header whose first be32
 * is the payload length; a 1.3 record ends in a 16-byte tag. */
#define HDR_SIZE	32
#define TAG_LEN		16
/* struct pohmel_hello: be64 features at body offset 8, be64 boot_gen at 40 */
#define HELLO_FEATURES	8
#define HELLO_BOOTGEN	40
#define HELLO_SIZE	112
/* A record is at most 2 headers + max_msg (1 MiB + 4 KiB) + tag: a length
 * far above that is not POHMELFS, and the relay closes the connection
 * rather than buffer it. */
#define MSG_MAX		(4U << 20)

enum { C2S, S2C };

enum mode {
	M_PASS, M_FLIP, M_TRUNCATE, M_DROP, M_REORDER, M_REPLAY, M_INJECT,
	M_HELLO_FEATURES, M_HELLO_BOOTGEN, M_HELLO_SLOW,
};

enum where { W_HDR, W_BODY, W_LAST };

struct fault {
	enum mode mode;
	int dir;		/* C2S or S2C */
	unsigned long n;	/* the Nth message after the HELLOs (from 1) */
	enum where where;	/* flip: which byte */
	unsigned int hdr_off;	/* flip at W_HDR: byte of the outer header */
};

/* bytes waiting to be written to one socket */
struct queue {
	unsigned char *p;
	size_t off, len, cap;
};

/* one direction of one relayed connection */
struct flow {
	int dir;
	int conn;		/* connection number, for the log */
	unsigned char *msg;	/* the message being read */
	size_t got, cap;
	unsigned long idx;	/* complete messages so far; the HELLO is 0 */
	unsigned char *held;	/* reorder: a message sent after the next */
	size_t held_len;
	struct queue q;
};

/* seal_relay.c */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void emit(struct flow *f, const unsigned char *p, size_t len);
const char *dir_name(int dir);

/* seal_fault.c */
int fault_parse(const char *spec, struct fault *ft, char *err, size_t errlen);
void fault_describe(const struct fault *ft, char *buf, size_t len);
void fault_arm(const struct fault *ft);
bool fault_fired(void);
/* Pass one complete message on (emit), changed as the armed fault says.
 * Returns true if the connection must be closed once the queues are out. */
bool fault_message(struct flow *f, unsigned char *msg, size_t len);
/* the connection closes: a held message is lost */
void fault_flow_closed(struct flow *f);

#endif
