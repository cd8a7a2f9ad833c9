/* SPDX-License-Identifier: MIT */
/*
 * crypto.h - what pohmeld and libpohmel share of the handshake and the
 * record layer: crypto.c (libcrypto's primitives), auth.c (MACs, keys,
 * the key file) and record.c (records).
 */
#ifndef POHMEL_CRYPTO_H
#define POHMEL_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wire.h"

/* ---- crypto.c: libcrypto's primitives (shared with libpohmel) ---- */
struct sha256_ctx {
	struct evp_md_ctx_st *md;
	bool bad;
};
void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t n);
int sha256_final(struct sha256_ctx *c, uint8_t out[32]);
int sha256(const void *data, size_t n, uint8_t out[32]);
int hmac_sha256(const uint8_t *key, size_t klen, const void *msg,
		size_t mlen, uint8_t out[32]);
int hkdf_sha256(const uint8_t *salt, size_t slen, const uint8_t *ikm,
		size_t ilen, const void *info, size_t nlen, uint8_t *out,
		size_t olen);
bool auth_equal(const uint8_t *a, const uint8_t *b, size_t n);

#define AEAD_NONCE_LEN	12
/* One direction's AEAD with its key set (POHMEL_FEAT_SEAL_AES/_CHACHA). */
struct aead {
	struct evp_cipher_ctx_st *ctx;
	bool enc;
};
int aead_init(struct aead *a, uint64_t alg, const uint8_t key[32], bool enc);
void aead_fini(struct aead *a);
int aead_crypt(struct aead *a, const uint8_t nonce[AEAD_NONCE_LEN],
	       const uint8_t *aad1, size_t l1, const uint8_t *aad2, size_t l2,
	       const uint8_t *in, uint8_t *out, size_t n, uint8_t *tag);
int aead_run(struct aead *a, uint64_t ctr, const uint8_t *aad1, size_t l1,
	     const uint8_t *aad2, size_t l2, const uint8_t *in, uint8_t *out,
	     size_t n, uint8_t *tag);

/* ---- auth.c: the handshake's MACs and keys (shared with libpohmel) */
void auth_mac(const uint8_t *key, size_t klen, const char label[8],
	      const uint8_t *n1, const uint8_t *n2, const uint8_t uuid[16],
	      uint8_t out[POHMEL_MAC_LEN]);
#define HELLO_MAC_OFF	80	/* of struct pohmel_hello */
#define AUTH_HELLO_REP	(POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE)
int auth_th(const uint8_t *req, size_t reqlen, const uint8_t *rep,
	    uint8_t th[32]);
int auth_mac13(const uint8_t *key, size_t klen, const char label[8],
	       const uint8_t th[32], uint8_t out[POHMEL_MAC_LEN]);
int auth_session_keys(const uint8_t *key, size_t klen, const uint8_t th[32],
		      uint8_t k_c2s[32], uint8_t k_s2c[32]);
bool keyname_valid(const char *s, size_t n);

struct keyent {
	char name[POHMEL_KEYNAME_MAX + 1];
	uint8_t key[POHMEL_KEY_MAX];
	size_t len;
	uint8_t owner[32];	/* sessions' owner fingerprint (policy.c) */
};
struct keyring {
	struct keyent *k;
	int n, cap;
};
int keys_load(const char *path, struct keyring *kr, char *err,
	      size_t errlen);
const struct keyent *keys_find(const struct keyring *kr, const char *name,
			       size_t n);
void keys_free(struct keyring *kr);
int keys_create(const char *path, const char *name);

/* ---- record.c: sealed and signed records (shared with libpohmel) ---- */
/* a record's size beyond its inner message: outer header and tag */
#define REC_OVERHEAD	(POHMEL_HDR_SIZE + POHMEL_TAG_LEN)
int rec_seal(struct aead *a, uint64_t ctr, bool sign, const uint8_t *inner,
	     uint32_t n, uint8_t *out);
int rec_open(struct aead *a, uint64_t ctr, bool sign, uint8_t *rec,
	     uint32_t n);

#endif /* POHMEL_CRYPTO_H */
