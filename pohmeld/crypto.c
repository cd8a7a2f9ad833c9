// SPDX-License-Identifier: MIT
/*
 * crypto.c - SHA-256, HMAC-SHA256, HKDF-SHA256 and the two AEADs of the
 * record layer, all from OpenSSL's libcrypto. Only APIs present in both
 * OpenSSL 1.1.1 and 3.x are used. Both pohmeld and libpohmel link this
 * file, so the two sides cannot compute anything differently.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include "pohmeld.h"

void sha256_init(struct sha256_ctx *c)
{
	c->md = EVP_MD_CTX_new();
	c->bad = !c->md || !EVP_DigestInit_ex(c->md, EVP_sha256(), NULL);
}

void sha256_update(struct sha256_ctx *c, const void *data, size_t n)
{
	if (!c->bad && !EVP_DigestUpdate(c->md, data, n))
		c->bad = true;
}

/* -1 (out zeroed) if libcrypto failed anywhere on the way. */
int sha256_final(struct sha256_ctx *c, uint8_t out[32])
{
	unsigned int len = 0;
	int ret = 0;

	if (c->bad || !EVP_DigestFinal_ex(c->md, out, &len) || len != 32) {
		memset(out, 0, 32);
		ret = -1;
	}
	EVP_MD_CTX_free(c->md);
	c->md = NULL;
	return ret;
}

int sha256(const void *data, size_t n, uint8_t out[32])
{
	unsigned int len = 0;

	if (!EVP_Digest(data, n, out, &len, EVP_sha256(), NULL) || len != 32) {
		memset(out, 0, 32);
		return -1;
	}
	return 0;
}

int hmac_sha256(const uint8_t *key, size_t klen, const void *msg,
		size_t mlen, uint8_t out[32])
{
	static const uint8_t none;
	unsigned int len = 0;

	/* HMAC() takes NULL as "no key" on some versions: give it a byte */
	if (klen > INT32_MAX ||
	    !HMAC(EVP_sha256(), klen ? key : &none, (int)klen,
		  mlen ? msg : &none, mlen, out, &len) || len != 32) {
		memset(out, 0, 32);
		return -1;
	}
	return 0;
}

/* RFC 5869 extract-and-expand; 0 or -1. */
int hkdf_sha256(const uint8_t *salt, size_t slen, const uint8_t *ikm,
		size_t ilen, const void *info, size_t nlen, uint8_t *out,
		size_t olen)
{
	EVP_PKEY_CTX *pc;
	size_t got = olen;
	int ok;

	if (slen > INT32_MAX || ilen > INT32_MAX || nlen > INT32_MAX)
		return -1;
	pc = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	if (!pc)
		return -1;
	ok = EVP_PKEY_derive_init(pc) > 0 &&
	     EVP_PKEY_CTX_set_hkdf_md(pc, EVP_sha256()) > 0 &&
	     EVP_PKEY_CTX_set1_hkdf_salt(pc, salt, (int)slen) > 0 &&
	     EVP_PKEY_CTX_set1_hkdf_key(pc, ikm, (int)ilen) > 0 &&
	     EVP_PKEY_CTX_add1_hkdf_info(pc, info, (int)nlen) > 0 &&
	     EVP_PKEY_derive(pc, out, &got) > 0 && got == olen;
	EVP_PKEY_CTX_free(pc);
	if (!ok)
		memset(out, 0, olen);
	return ok ? 0 : -1;
}

/* Constant time: a timing difference must not reveal a prefix match. */
bool auth_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

int aead_init(struct aead *a, uint64_t alg, const uint8_t key[32], bool enc)
{
	const EVP_CIPHER *ci;

	memset(a, 0, sizeof(*a));
	if (alg == POHMEL_FEAT_SEAL_AES)
		ci = EVP_aes_256_gcm();
	else if (alg == POHMEL_FEAT_SEAL_CHACHA)
		ci = EVP_chacha20_poly1305();
	else
		return -1;
	a->ctx = EVP_CIPHER_CTX_new();
	if (!a->ctx)
		return -1;
	/* Key schedule once; each record then sets only its nonce. */
	if (!EVP_CipherInit_ex(a->ctx, ci, NULL, NULL, NULL, enc) ||
	    !EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_SET_IVLEN,
				 AEAD_NONCE_LEN, NULL) ||
	    !EVP_CipherInit_ex(a->ctx, NULL, NULL, key, NULL, enc)) {
		EVP_CIPHER_CTX_free(a->ctx);
		a->ctx = NULL;
		return -1;
	}
	a->enc = enc;
	return 0;
}

void aead_fini(struct aead *a)
{
	EVP_CIPHER_CTX_free(a->ctx);
	a->ctx = NULL;
}

/*
 * One AEAD operation, either way, with a whole 12-byte nonce. in/out:
 * n bytes (may be the same buffer, never overlapping otherwise); tag:
 * POHMEL_TAG_LEN bytes, written when sealing, checked when opening. 0,
 * or -1 (a tag that does not verify, or libcrypto failed).
 */
int aead_crypt(struct aead *a, const uint8_t nonce[AEAD_NONCE_LEN],
	       const uint8_t *aad1, size_t l1, const uint8_t *aad2, size_t l2,
	       const uint8_t *in, uint8_t *out, size_t n, uint8_t *tag)
{
	uint8_t fin[16];
	int len;

	if (!a->ctx || l1 > INT32_MAX || l2 > INT32_MAX || n > INT32_MAX)
		return -1;
	if (!EVP_CipherInit_ex(a->ctx, NULL, NULL, NULL, nonce, a->enc))
		return -1;
	if (l1 && !EVP_CipherUpdate(a->ctx, NULL, &len, aad1, (int)l1))
		return -1;
	if (l2 && !EVP_CipherUpdate(a->ctx, NULL, &len, aad2, (int)l2))
		return -1;
	if (n && !EVP_CipherUpdate(a->ctx, out, &len, in, (int)n))
		return -1;
	if (!a->enc && !EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_SET_TAG,
					    POHMEL_TAG_LEN, tag))
		return -1;
	if (EVP_CipherFinal_ex(a->ctx, fin, &len) <= 0)	/* AEAD: 0 bytes */
		return -1;
	if (a->enc && !EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_GET_TAG,
					   POHMEL_TAG_LEN, tag))
		return -1;
	return 0;
}

/* A record's: nonce = 4 zero bytes || be64 counter (pohmel_proto.h). */
int aead_run(struct aead *a, uint64_t ctr, const uint8_t *aad1, size_t l1,
	     const uint8_t *aad2, size_t l2, const uint8_t *in, uint8_t *out,
	     size_t n, uint8_t *tag)
{
	uint8_t nonce[AEAD_NONCE_LEN];

	memset(nonce, 0, 4);
	put64(nonce + 4, ctr);
	return aead_crypt(a, nonce, aad1, l1, aad2, l2, in, out, n, tag);
}
