// SPDX-License-Identifier: GPL-2.0
/*
 * seal_test.c - at module load, the kernel's crypto is checked against
 * vectors that pohmeld's own code generated (pohmel_vectors.h, made by
 * pohmeld/tests/gen_vectors and checked against it in `make check`): the
 * transcript hash, both MACs, the HKDF session keys and one record of each
 * protection. A kernel whose crypto disagrees with the server's would
 * only show it as refused connections; this says so at once, by name.
 */
#include <crypto/algapi.h>
#include <linux/err.h>
#include <linux/string.h>

#include "conn.h"
#include "seal.h"
#include "pohmel_vectors.h"

static int check(const char *what, const u8 *got, const u8 *want, size_t n)
{
	if (!crypto_memneq(got, want, n))
		return 0;
	pr_err("self-test: %s differs from pohmeld's\n", what);
	return -EINVAL;
}

static int check_handshake(void)
{
	u8 th[POHMEL_HASH_LEN], mac[POHMEL_MAC_LEN], k1[32], k2[32];
	int err;

	err = pohmel_sha256_2(pohmel_vec_hello_req,
			      sizeof(pohmel_vec_hello_req),
			      pohmel_vec_hello_rep,
			      sizeof(pohmel_vec_hello_rep), th) ?:
	      check("transcript hash", th, pohmel_vec_th, sizeof(th)) ?:
	      pohmel_hs_mac(pohmel_vec_key, sizeof(pohmel_vec_key), "pohmel-s",
			    th, mac) ?:
	      check("mac_s", mac, pohmel_vec_mac_s, sizeof(mac)) ?:
	      pohmel_hs_mac(pohmel_vec_key, sizeof(pohmel_vec_key), "pohmel-c",
			    th, mac) ?:
	      check("mac_c", mac, pohmel_vec_mac_c, sizeof(mac)) ?:
	      pohmel_hs_keys(pohmel_vec_key, sizeof(pohmel_vec_key), th, k1,
			     k2) ?:
	      check("k_c2s", k1, pohmel_vec_k_c2s, sizeof(k1)) ?:
	      check("k_s2c", k2, pohmel_vec_k_s2c, sizeof(k2));
	memzero_explicit(k1, sizeof(k1));
	memzero_explicit(k2, sizeof(k2));
	return err;
}

/*
 * Seal the vector's inner message under @features, compare with the
 * record pohmeld made, open it again, and make sure a flipped bit fails.
 * -ENOENT when this kernel lacks the cipher (said at mount instead).
 */
static int check_record(const char *name, u64 features, const u8 *rec,
			u32 reclen)
{
	u32 n = sizeof(pohmel_vec_inner);
	struct pohmel_seal *s;
	const u8 *out, *inner;
	u8 *bad;
	int err;

	if (reclen != 2 * POHMEL_HDR_SIZE + POHMEL_TAG_LEN + n -
		      POHMEL_HDR_SIZE)
		return -EINVAL;
	s = pohmel_seal_new(features, pohmel_vec_k_c2s, pohmel_vec_k_c2s,
			    65536);
	if (IS_ERR(s))
		return PTR_ERR(s) == -ENOENT ? -ENOENT : PTR_ERR(s);
	err = -EINVAL;
	out = pohmel_seal_test_encode(s, POHMEL_VEC_COUNTER,
				      pohmel_vec_inner, n);
	if (!out || check(name, out, rec, reclen))
		goto out_seal;
	err = pohmel_seal_test_decode(s, POHMEL_VEC_COUNTER, rec, reclen,
				      &inner);
	if (err || check(name, inner, pohmel_vec_inner, n)) {
		pr_err("self-test: %s: pohmeld's record does not open (%d)\n",
		       name, err);
		err = -EINVAL;
		goto out_seal;
	}
	bad = kmemdup(rec, reclen, GFP_KERNEL);
	err = -ENOMEM;
	if (!bad)
		goto out_seal;
	bad[reclen - 1] ^= 1;
	err = pohmel_seal_test_decode(s, POHMEL_VEC_COUNTER, bad, reclen,
				      &inner);
	if (err != -EBADMSG) {
		pr_err("self-test: %s: a changed record was accepted (%d)\n",
		       name, err);
		err = -EINVAL;
	} else {
		err = 0;
	}
	kfree(bad);
out_seal:
	pohmel_seal_free(s);
	return err;
}

int pohmel_seal_selftest(void)
{
	static const struct {
		const char *name;
		u64 features;
		const u8 *rec;
		u32 len;
	} recs[] = {
		{ "aes-256-gcm record", POHMEL_FEAT_SEAL_AES,
		  pohmel_vec_rec_aes, sizeof(pohmel_vec_rec_aes) },
		{ "chacha20-poly1305 record", POHMEL_FEAT_SEAL_CHACHA,
		  pohmel_vec_rec_chacha, sizeof(pohmel_vec_rec_chacha) },
		{ "signed record", POHMEL_FEAT_SEAL_AES | POHMEL_FEAT_SIGN,
		  pohmel_vec_rec_sign, sizeof(pohmel_vec_rec_sign) },
	};
	unsigned int i, ok = 0;
	int err;

	err = check_handshake();
	if (err)
		return err;
	for (i = 0; i < ARRAY_SIZE(recs); i++) {
		err = check_record(recs[i].name, recs[i].features, recs[i].rec,
				   recs[i].len);
		if (err == -ENOENT) {
			pr_info("self-test: %s: cipher not in this kernel\n",
				recs[i].name);
			continue;
		}
		if (err)
			return err;
		ok++;
	}
	pr_info("self-test: handshake and %u of %zu record kinds agree with pohmeld\n",
		ok, ARRAY_SIZE(recs));
	return 0;
}
