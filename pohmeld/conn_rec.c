// SPDX-License-Identifier: MIT
/*
 * conn_rec.c - a connection's receiving side of the record layer (1.3):
 * started after the HELLO reply, then every message read is a record,
 * checked (proto_record, proto_inner: the one place lengths are checked)
 * and opened in place. A refused record is logged with the client's
 * address and why, counted, and the connection closed. The sending side
 * is the outbox's (outbox.c), so that counters follow the wire's order.
 */
#include <stdlib.h>
#include "pohmeld.h"

/* A record refused: the connection is closed (the caller returns). */
static void seal_failed(struct conn *c, const char *why)
{
	/* Not rate-limited: only an authenticated client (or someone
	 * tampering with its stream) causes it, once per connection. */
	stats.seal_failures++;
	log_warn("%s: record refused (key '%s'): %s: connection closed",
		 c->peer, c->keyname[0] ? c->keyname : "-", why);
}

/* The HELLO reply is out: from now on both ways are records. */
int conn_seal_start(struct conn *c)
{
	uint64_t alg = c->features & POHMEL_FEAT_AEAD, start = 0;
	const char *t = getenv("POHMELD_TEST_SEAL_CTR");
	int err;

	/* Tests: both counters start there, to reach the end of their
	 * range (each connection has its own keys: nonces stay unique). */
	if (t)
		start = strtoull(t, NULL, 0);
	c->seal_next = false;
	c->rx_ctr = start;
	err = aead_init(&c->rx, alg, c->k_c2s, false) ||
	      outbox_seal(c, alg, c->features & POHMEL_FEAT_SIGN, c->k_s2c,
			  start);
	memset(c->k_c2s, 0, sizeof(c->k_c2s));
	memset(c->k_s2c, 0, sizeof(c->k_s2c));
	if (err) {
		log_err("%s: cannot set up the record layer (libcrypto)",
			c->peer);
		return -1;
	}
	c->sealed = true;
	return 0;
}

/*
 * One message into rx: *msg and *len say where it is. With the record
 * layer on, the record is read, checked (proto_record, proto_inner) and
 * opened in place. 1, or 0/READ_TIMEOUT: close (logged where needed).
 * A first record that does not open is the AUTH of a client with
 * another key (or none the server knows): answered as a failed AUTH.
 */
int conn_read_msg(struct conn *c, uint8_t *rx, uint8_t *tx,
		    const uint8_t **msg, uint32_t *len, struct whdr *h)
{
	const char *why;
	uint32_t n, outlen;
	int ret;

	ret = conn_read(c, rx, POHMEL_HDR_SIZE);
	if (ret != 1)
		return ret;
	if (!c->sealed) {
		if (proto_hdr(rx, h, c->max_msg)) {
			log_info("%s: bad framing (len %u, tag %u), dropping",
				 c->peer, h->len, h->tag);
			stats.proto_errors++;
			return 0;
		}
		*msg = rx;
		*len = POHMEL_HDR_SIZE + h->len;
		return conn_read(c, rx + POHMEL_HDR_SIZE, h->len);
	}
	why = proto_record(rx, c->max_msg, &n);
	if (why) {
		seal_failed(c, why);
		return 0;
	}
	ret = conn_read(c, rx + POHMEL_HDR_SIZE, n + POHMEL_TAG_LEN);
	if (ret != 1)
		return ret;
	if (c->rx_ctr >= POHMEL_SEAL_MSGS_MAX) {
		seal_failed(c, "the receive counter is used up");
		return 0;
	}
	if (rec_open(&c->rx, c->rx_ctr, c->features & POHMEL_FEAT_SIGN, rx,
		     n)) {
		if (c->state == CONN_HELLO) {
			auth_refused(c, c->key ? "AUTH record does not open (wrong key)" :
					 "unknown key name", tx, &outlen);
			outbox_reply(c, tx, outlen);
		} else {
			seal_failed(c, "tag does not verify (changed, replayed, reordered or injected)");
		}
		return 0;
	}
	c->rx_ctr++;
	*msg = rx + POHMEL_HDR_SIZE;
	*len = n;
	why = proto_inner(*msg, n, h, c->max_msg);
	if (why) {
		seal_failed(c, why);
		return 0;
	}
	return 1;
}

