// SPDX-License-Identifier: GPL-2.0
/*
 * auth.c - HMAC-SHA256 for the HELLO/AUTH challenge-response:
 *   mac = HMAC-SHA256(K, label || nonce_a || nonce_b || uuid)
 * label is "pohmel-s" (server proves itself) or "pohmel-c" (client).
 */
#include <crypto/hash.h>
#include <linux/err.h>
#include <linux/string.h>

#include "conn.h"

int pohmel_auth_mac(const u8 *key, unsigned int keylen, const char *label,
		    const u8 *nonce_a, const u8 *nonce_b, const u8 *uuid,
		    u8 *mac)
{
	struct crypto_shash *tfm;
	int err;

	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm)) {
		pr_err("hmac(sha256) unavailable (%ld): enable CONFIG_CRYPTO_HMAC and CONFIG_CRYPTO_SHA256\n",
		       PTR_ERR(tfm));
		return PTR_ERR(tfm);
	}
	err = crypto_shash_setkey(tfm, key, keylen);
	if (err)
		goto out_tfm;
	{
		SHASH_DESC_ON_STACK(desc, tfm);

		desc->tfm = tfm;
		err = crypto_shash_init(desc) ?:
		      crypto_shash_update(desc, label, strlen(label)) ?:
		      crypto_shash_update(desc, nonce_a, POHMEL_NONCE_LEN) ?:
		      crypto_shash_update(desc, nonce_b, POHMEL_NONCE_LEN) ?:
		      crypto_shash_update(desc, uuid, 16) ?:
		      crypto_shash_final(desc, mac);
		shash_desc_zero(desc);
	}
out_tfm:
	crypto_free_shash(tfm);
	return err;
}
