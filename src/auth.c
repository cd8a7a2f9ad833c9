// SPDX-License-Identifier: GPL-2.0
/*
 * auth.c - the 1.3 handshake's arithmetic (pohmel_proto.h, "Authentication
 * and protection"): the transcript hash TH over both HELLO messages, the
 * MACs that prove the key to each side, and HKDF-SHA256 session keys.
 */
#include <crypto/hash.h>
#include <linux/err.h>
#include <linux/string.h>

#include "seal.h"

static struct crypto_shash *alloc_shash(const char *name)
{
	struct crypto_shash *tfm = crypto_alloc_shash(name, 0, 0);

	if (IS_ERR(tfm))
		pr_err("%s unavailable (%ld): enable CONFIG_CRYPTO_HMAC and CONFIG_CRYPTO_SHA256\n",
		       name, PTR_ERR(tfm));
	return tfm;
}

/* out = the digest of @tfm (keyed already, if it takes a key) over a || b */
static int digest2(struct crypto_shash *tfm, const void *a, size_t alen,
		   const void *b, size_t blen, u8 *out)
{
	SHASH_DESC_ON_STACK(desc, tfm);
	int err;

	desc->tfm = tfm;
	err = crypto_shash_init(desc) ?:
	      crypto_shash_update(desc, a, alen) ?:
	      crypto_shash_update(desc, b, blen) ?:
	      crypto_shash_final(desc, out);
	shash_desc_zero(desc);
	return err;
}

/* out = SHA-256(a || b) */
int pohmel_sha256_2(const void *a, size_t alen, const void *b, size_t blen,
		    u8 out[POHMEL_HASH_LEN])
{
	struct crypto_shash *tfm = alloc_shash("sha256");
	int err;

	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	err = digest2(tfm, a, alen, b, blen, out);
	crypto_free_shash(tfm);
	return err;
}

/* out = HMAC-SHA256(key, a || b) */
static int hmac2(struct crypto_shash *tfm, const u8 *key, unsigned int keylen,
		 const void *a, size_t alen, const void *b, size_t blen,
		 u8 *out)
{
	return crypto_shash_setkey(tfm, key, keylen) ?:
	       digest2(tfm, a, alen, b, blen, out);
}

/* mac = HMAC-SHA256(K, label || TH); label is "pohmel-s" or "pohmel-c" */
int pohmel_hs_mac(const u8 *key, unsigned int keylen, const char *label,
		  const u8 th[POHMEL_HASH_LEN], u8 mac[POHMEL_MAC_LEN])
{
	struct crypto_shash *tfm = alloc_shash("hmac(sha256)");
	int err;

	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	err = hmac2(tfm, key, keylen, label, strlen(label), th,
		    POHMEL_HASH_LEN, mac);
	crypto_free_shash(tfm);
	return err;
}

/*
 * HKDF-SHA256 with TH as salt and K as input keying material, one block
 * of output per direction: PRK = HMAC(TH, K), k = HMAC(PRK, info || 1).
 */
int pohmel_hs_keys(const u8 *key, unsigned int keylen,
		   const u8 th[POHMEL_HASH_LEN], u8 k_c2s[32], u8 k_s2c[32])
{
	static const u8 one = 1;
	struct crypto_shash *tfm = alloc_shash("hmac(sha256)");
	u8 prk[POHMEL_HASH_LEN];
	int err;

	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	err = hmac2(tfm, th, POHMEL_HASH_LEN, key, keylen, NULL, 0, prk) ?:
	      hmac2(tfm, prk, sizeof(prk), "pohmel c2s", 10, &one, 1, k_c2s) ?:
	      hmac2(tfm, prk, sizeof(prk), "pohmel s2c", 10, &one, 1, k_s2c);
	memzero_explicit(prk, sizeof(prk));
	crypto_free_shash(tfm);
	return err;
}
