// SPDX-License-Identifier: MIT
/*
 * handshake.c - libpohmel's HELLO and AUTH (pohmel_proto.h,
 * "Authentication and protection"): the 1.3 handshake over a transcript
 * hash with named keys and, when an AEAD is negotiated, the record
 * layer from then on; the 1.2 handshake for tests (test_v12).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include "libpohmel.h"

/* The record layer, both ways, from the keys of the last handshake. */
static int seal_start(struct pc *c)
{
	uint64_t alg = c->features & POHMEL_FEAT_AEAD;

	aead_fini(&c->tx);
	aead_fini(&c->rx);
	if (aead_init(&c->tx, alg, c->k_c2s, true) ||
	    aead_init(&c->rx, alg, c->k_s2c, false)) {
		snprintf(c->err, sizeof(c->err), "libcrypto: AEAD setup failed");
		return -EIO;
	}
	c->sign = c->features & POHMEL_FEAT_SIGN;
	c->tx_ctr = c->rx_ctr = c->test_ctr_start;
	c->sealed = true;
	return 0;
}

/* What to offer: the caller's features, and with a key AUTH and the
 * AEADs (and SIGN) that c->sec asks for. */
static uint64_t offer(const struct pc *c)
{
	uint64_t want = c->want_features;

	if (!want)
		want = POHMEL_FEAT_BATCH;
	if (!c->keylen)
		return want;
	want |= POHMEL_FEAT_AUTH;
	if (c->test_v12 || c->sec == PC_SEC_NONE)
		return want;
	want |= c->aeads ? c->aeads : POHMEL_FEAT_AEAD;
	if (c->sec == PC_SEC_AUTH)
		want |= POHMEL_FEAT_SIGN;
	return want;
}

/* HELLO out, its reply in; both kept as sent and received for TH. */
static int hello(struct pc *c, const uint8_t *nonce_c, uint8_t *r)
{
	uint8_t *b = c->sbuf + 1024;
	uint32_t blen, tag;
	struct whdr h;
	int err;

	blen = pc_enc_hello13(b, offer(c), c->max_msg, c->uuid, c->boot_gen,
			      nonce_c, c->keylen && !c->test_v12 ?
			      c->keyname : NULL);
	if (c->test_v12)
		put16(b + 6, 2);
	if (++c->tag == 0)
		c->tag = 1;
	tag = c->tag;
	/* pc_send's framing, kept: TH is over the bytes as sent */
	{
		uint32_t g = c->ngroups ? pohmel_groups_size(c->ngroups) : 0, i;
		struct whdr q = {
			.len = g + blen, .op = POHMEL_OP_HELLO, .tag = tag,
			.uid = c->uid, .gid = c->gid,
			.flags = c->ngroups ? POHMEL_HF_GROUPS : 0,
		};
		uint8_t *p = c->hello_req;

		whdr_put(p, &q);
		memset(p + POHMEL_HDR_SIZE, 0, g);
		if (g) {
			put32(p + POHMEL_HDR_SIZE, c->ngroups);
			for (i = 0; i < c->ngroups; i++)
				put32(p + POHMEL_HDR_SIZE + 4 + 4 * i,
				      c->groups[i]);
		}
		memcpy(p + POHMEL_HDR_SIZE + g, b, blen);
		c->hello_req_len = POHMEL_HDR_SIZE + g + blen;
	}
	memcpy(c->sbuf, c->hello_req, c->hello_req_len);
	if (c->test_hello_hook)
		c->test_hello_hook(c->sbuf, c->hello_req_len);
	err = pc_send_wire(c, c->sbuf, c->hello_req_len);
	if (err)
		return err;
	do {
		err = pc_recv(c, &h, r, POHMEL_HELLO_SIZE);
		if (err)
			return err;
	} while (h.tag != tag || h.flags & POHMEL_HF_SERVER);
	if (!(h.flags & POHMEL_HF_REPLY) || h.op != POHMEL_OP_HELLO) {
		snprintf(c->err, sizeof(c->err), "reply does not match");
		return -EPROTO;
	}
	if (h.status) {
		snprintf(c->err, sizeof(c->err), "HELLO: %s",
			 strerror((int)h.status));
		return h.len ? -EPROTO : (int)h.status;
	}
	if (h.len != POHMEL_HELLO_SIZE || get32(r) != POHMEL_MAGIC) {
		snprintf(c->err, sizeof(c->err), "bad HELLO reply");
		return -EPROTO;
	}
	whdr_put(c->hello_rep, &h);
	memcpy(c->hello_rep + POHMEL_HDR_SIZE, r, POHMEL_HELLO_SIZE);
	return 0;
}

/* Check mac_s, make mac_c (and the session keys). 0 or EACCES. */
static int prove(struct pc *c, const uint8_t *nonce_c, const uint8_t *r,
		 uint8_t mac[POHMEL_MAC_LEN])
{
	uint8_t want[POHMEL_MAC_LEN];

	if (!(c->features & POHMEL_FEAT_AUTH)) {
		snprintf(c->err, sizeof(c->err),
			 "server does not authenticate");
		return EACCES;
	}
	if (c->test_v12) {
		auth_mac(c->key, c->keylen, "pohmel-s", nonce_c, r + 48,
			 c->uuid, want);
		auth_mac(c->key, c->keylen, "pohmel-c", r + 48, nonce_c,
			 c->uuid, mac);
	} else if (auth_th(c->hello_req, c->hello_req_len, c->hello_rep,
			   c->th) ||
		   auth_mac13(c->key, c->keylen, "pohmel-s", c->th, want) ||
		   auth_mac13(c->key, c->keylen, "pohmel-c", c->th, mac) ||
		   auth_session_keys(c->key, c->keylen, c->th, c->k_c2s,
				     c->k_s2c)) {
		snprintf(c->err, sizeof(c->err), "libcrypto failed");
		return EACCES;
	}
	if (!auth_equal(want, r + HELLO_MAC_OFF, POHMEL_MAC_LEN) &&
	    !c->test_skip_server_proof) {
		snprintf(c->err, sizeof(c->err),
			 "server failed to prove the key");
		return EACCES;
	}
	return 0;
}

int pc_handshake(struct pc *c)
{
	static const uint8_t zero16[16];
	uint8_t r[POHMEL_ATTR_SIZE + POHMEL_HELLO_SIZE];
	uint8_t nonce_c[POHMEL_NONCE_LEN], mac[POHMEL_MAC_LEN];
	uint32_t rl;
	int err;

	if (!memcmp(c->uuid, zero16, 16) &&
	    getrandom(c->uuid, 16, 0) != 16)
		return -EIO;
	if (!c->boot_gen)
		c->boot_gen = 1;
	if (getrandom(nonce_c, sizeof(nonce_c), 0) != sizeof(nonce_c))
		return -EIO;
	aead_fini(&c->tx);
	aead_fini(&c->rx);
	c->sealed = false;
	err = hello(c, nonce_c, r);
	if (err)
		return err;
	c->features = get64(r + 8);
	c->max_msg = get32(r + 16);
	c->server_boot = get64(r + 40);
	memcpy(c->verifier, r + 24, sizeof(c->verifier));
	memset(mac, 0, sizeof(mac));
	if (c->keylen) {
		err = prove(c, nonce_c, r, mac);
		if (err)
			return err;
	}
	if (c->features & POHMEL_FEAT_AEAD) {
		if (!c->keylen || c->test_v12) {
			snprintf(c->err, sizeof(c->err),
				 "server sealed a keyless or 1.2 handshake");
			return -EPROTO;
		}
		err = seal_start(c);
		if (err)
			return err;
	}
	err = pc_call_seq(c, POHMEL_OP_AUTH, c->seq, mac, sizeof(mac), r,
			  POHMEL_ATTR_SIZE, &rl);
	if (err == -EBADMSG) {
		/* a failed AUTH is sealed with keys we cannot have */
		snprintf(c->err, sizeof(c->err),
			 "AUTH: the reply does not open (the server does not have this key)");
		return EACCES;
	}
	if (err) {
		if (err > 0)
			snprintf(c->err, sizeof(c->err), "AUTH: %s",
				 strerror(err));
		return err;
	}
	if (rl != POHMEL_ATTR_SIZE) {
		snprintf(c->err, sizeof(c->err), "bad AUTH reply");
		return -EPROTO;
	}
	wattr_get(r, &c->root);
	return 0;
}

