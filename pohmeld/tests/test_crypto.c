// SPDX-License-Identifier: MIT
/*
 * crypto.c, auth.c and record.c on their own: known answers from the
 * standards (FIPS 180-4 SHA-256, RFC 4231 HMAC-SHA256, RFC 5869 HKDF,
 * RFC 8439 2.8.2 ChaCha20-Poly1305, GCM spec test case 16 AES-256-GCM),
 * the record layer's seal/open, and the key file parser.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../pohmeld.h"
#include "tap.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	unsigned int v;

	while (s[0] && s[1] && sscanf(s, "%2x", &v) == 1) {
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static void sha_case(const char *name, const void *d, size_t n,
		     const char *want)
{
	uint8_t out[32];
	char h[65];

	sha256(d, n, out);
	hex(out, 32, h);
	CHECK(!strcmp(h, want), "sha256 %s", name);
}

static void hmac_case(int no, const uint8_t *k, size_t kl, const void *d,
		      size_t dl, const char *want)
{
	uint8_t out[32];
	char h[65];

	hmac_sha256(k, kl, d, dl, out);
	hex(out, 32, h);
	CHECK(!strncmp(h, want, strlen(want)), "RFC 4231 case %d", no);
}

static void t_sha_hmac(void)
{
	uint8_t k[131], d[50], *big, out[32];
	struct sha256_ctx c;
	char h[65];
	int i;

	sha_case("empty", "", 0,
		 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha_case("abc", "abc", 3,
		 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha_case("448 bits",
		 "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	big = malloc(1000000);
	memset(big, 'a', 1000000);
	sha_case("million a", big, 1000000,
		 "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	sha256_init(&c);
	for (i = 0; i < 1000000; i += 997)
		sha256_update(&c, big + i, i + 997 > 1000000 ? 1000000 - i : 997);
	CHECK(sha256_final(&c, out) == 0, "sha256 incremental: no error");
	hex(out, 32, h);
	CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
	      "sha256 incremental");
	free(big);

	memset(k, 0x0b, 20);
	hmac_case(1, k, 20, "Hi There", 8,
		  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	hmac_case(2, (const uint8_t *)"Jefe", 4,
		  "what do ya want for nothing?", 28,
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(k, 0xaa, 20);
	memset(d, 0xdd, 50);
	hmac_case(3, k, 20, d, 50,
		  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	for (i = 0; i < 25; i++)
		k[i] = (uint8_t)(i + 1);
	memset(d, 0xcd, 50);
	hmac_case(4, k, 25, d, 50,
		  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	memset(k, 0x0c, 20);
	hmac_case(5, k, 20, "Test With Truncation", 20,
		  "a3b6167473100ee06e0c796c2955552b");
	memset(k, 0xaa, 131);
	hmac_case(6, k, 131,
		  "Test Using Larger Than Block-Size Key - Hash Key First", 54,
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	{
		const char *m = "This is a test using a larger than block-size key "
				"and a larger than block-size data. The key needs "
				"to be hashed before being used by the HMAC "
				"algorithm.";

		hmac_case(7, k, 131, m, strlen(m),
			  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
	}
	CHECK(auth_equal((const uint8_t *)"abcd", (const uint8_t *)"abcd", 4) &&
	      !auth_equal((const uint8_t *)"abcd", (const uint8_t *)"abce", 4),
	      "auth_equal compares");
}

static void t_hkdf(void)
{
	uint8_t ikm[22], salt[13], info[10], okm[42], prk[32];
	char h[85];
	int i;

	memset(ikm, 0x0b, sizeof(ikm));
	for (i = 0; i < 13; i++)
		salt[i] = (uint8_t)i;
	for (i = 0; i < 10; i++)
		info[i] = (uint8_t)(0xf0 + i);
	CHECK(hkdf_sha256(salt, 13, ikm, 22, info, 10, okm, 42) == 0,
	      "RFC 5869 case 1: derives");
	hex(okm, 42, h);
	CHECK(!strcmp(h, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
	      "RFC 5869 case 1: OKM");
	/* The spec's spelling of the same (PRK = HMAC(salt, IKM)). */
	hmac_sha256(salt, 13, ikm, 22, prk);
	hex(prk, 32, h);
	CHECK(!strcmp(h, "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"),
	      "RFC 5869 case 1: PRK as HMAC(salt, IKM)");
}

static void aead_case(const char *name, uint64_t alg, const char *key,
		      const char *nonce, const char *aad, const uint8_t *pt,
		      size_t ptlen, const char *ct, const char *tag)
{
	uint8_t k[32], n[12], a[64], c[256], t[16], buf[256];
	size_t al = unhex(aad, a);
	struct aead e, d;
	char h[513];

	unhex(key, k);
	unhex(nonce, n);
	CHECK(aead_init(&e, alg, k, true) == 0 &&
	      aead_init(&d, alg, k, false) == 0, "%s: init", name);
	CHECK(aead_crypt(&e, n, a, al, NULL, 0, pt, c, ptlen, t) == 0,
	      "%s: seals", name);
	hex(c, ptlen, h);
	CHECK(!strcmp(h, ct), "%s: ciphertext", name);
	hex(t, 16, h);
	CHECK(!strcmp(h, tag), "%s: tag", name);
	CHECK(aead_crypt(&d, n, a, al, NULL, 0, c, buf, ptlen, t) == 0 &&
	      !memcmp(buf, pt, ptlen), "%s: opens to the plaintext", name);
	t[15] ^= 1;
	CHECK(aead_crypt(&d, n, a, al, NULL, 0, c, buf, ptlen, t) != 0,
	      "%s: a changed tag does not open", name);
	t[15] ^= 1;
	a[0] ^= 0x80;
	CHECK(aead_crypt(&d, n, a, al, NULL, 0, c, buf, ptlen, t) != 0,
	      "%s: changed associated data does not open", name);
	aead_fini(&e);
	aead_fini(&d);
}

static void t_aead(void)
{
	static const char sunscreen[] =
		"Ladies and Gentlemen of the class of '99: If I could offer "
		"you only one tip for the future, sunscreen would be it.";
	uint8_t p16[64];
	size_t n;

	aead_case("RFC 8439 2.8.2 ChaCha20-Poly1305", POHMEL_FEAT_SEAL_CHACHA,
		  "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
		  "070000004041424344454647", "50515253c0c1c2c3c4c5c6c7",
		  (const uint8_t *)sunscreen, sizeof(sunscreen) - 1,
		  "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
		  "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
		  "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
		  "3ff4def08e4b7a9de576d26586cec64b6116",
		  "1ae10b594f09e26a7e902ecbd0600691");
	n = unhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
		  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39", p16);
	aead_case("GCM test case 16 AES-256-GCM", POHMEL_FEAT_SEAL_AES,
		  "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
		  "cafebabefacedbaddecaf888",
		  "feedfacedeadbeeffeedfacedeadbeefabaddad2", p16, n,
		  "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
		  "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
		  "76fc6ece0f4e1768cddf8853bb2d551b");
}

/* rec_seal/rec_open: a round trip, and every change refused. */
static void t_records(uint64_t alg, bool sign, const char *name)
{
	uint8_t key[32], msg[80], rec[80 + REC_OVERHEAD], cp[sizeof(rec)];
	struct aead tx, rx;
	struct whdr h;
	uint32_t n = sizeof(msg), i;

	memset(key, 7, sizeof(key));
	for (i = 0; i < n; i++)
		msg[i] = (uint8_t)i;
	put32(msg, n - POHMEL_HDR_SIZE);
	aead_init(&tx, alg, key, true);
	aead_init(&rx, alg, key, false);
	CHECK(rec_seal(&tx, 9, sign, msg, n, rec) == 0, "%s: seals", name);
	whdr_get(rec, &h);
	CHECK(h.len == n + POHMEL_TAG_LEN && h.flags == POHMEL_HF_SEALED &&
	      !h.op && !h.tag && !h.seq, "%s: outer header", name);
	CHECK(!memcmp(rec + POHMEL_HDR_SIZE, msg, n) == sign,
	      "%s: inner message %s", name, sign ? "in clear" : "encrypted");
	memcpy(cp, rec, sizeof(rec));
	CHECK(rec_open(&rx, 9, sign, cp, n) == 0 &&
	      !memcmp(cp + POHMEL_HDR_SIZE, msg, n), "%s: opens", name);
	memcpy(cp, rec, sizeof(rec));
	CHECK(rec_open(&rx, 10, sign, cp, n) != 0,
	      "%s: another counter does not open", name);
	for (i = 0; i < sizeof(rec); i += 37) {
		memcpy(cp, rec, sizeof(rec));
		cp[i] ^= 0x10;
		if (rec_open(&rx, 9, sign, cp, n) == 0)
			break;
	}
	CHECK(i >= sizeof(rec), "%s: a flipped bit anywhere does not open",
	      name);
	aead_fini(&tx);
	aead_fini(&rx);
}

static char dir[64];

static int keyfile(const char *text, struct keyring *kr, char *err,
		   size_t el)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/k", dir);
	f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	return keys_load(p, kr, err, el);
}

#define K32 "00112233445566778899aabbccddeeff"
#define K64 K32 K32

static void t_keyfile(void)
{
	struct keyring kr;
	char err[512];

	CHECK(keyfile(K64 "\n", &kr, err, sizeof(err)) == 0 && kr.n == 1 &&
	      !strcmp(kr.k[0].name, "default") && kr.k[0].len == 32 &&
	      kr.k[0].key[1] == 0x11, "a bare HEX line is the key 'default'");
	keys_free(&kr);
	CHECK(keyfile("# keys\n\nalpha " K32 "\n  beta.2_x-y\t" K64 K64 "\n",
		      &kr, err, sizeof(err)) == 0 && kr.n == 2 &&
	      keys_find(&kr, "alpha", 5) && keys_find(&kr, "alpha", 5)->len == 16 &&
	      keys_find(&kr, "beta.2_x-y", 10) &&
	      keys_find(&kr, "beta.2_x-y", 10)->len == 64 &&
	      !keys_find(&kr, "alph", 4), "NAME HEX lines, comments, blanks");
	keys_free(&kr);
	CHECK(keyfile("a " K32 "\nb " K32 "\na " K64 "\n", &kr, err,
		      sizeof(err)) && strstr(err, "/k:3: key name 'a' given twice"),
	      "duplicate name: file and line (%s)", err);
	CHECK(keyfile("a " K32 "\nb/c " K32 "\n", &kr, err, sizeof(err)) &&
	      strstr(err, "/k:2: bad key name"), "bad name: file and line");
	CHECK(keyfile("a 0011\n", &kr, err, sizeof(err)) &&
	      strstr(err, "/k:1: a key must be 32..128 hex digits"),
	      "short key: file and line");
	CHECK(keyfile("a " K32 "0\n", &kr, err, sizeof(err)) &&
	      strstr(err, ":1: a key must be"), "odd digit count refused");
	CHECK(keyfile("a " K64 K64 "00\n", &kr, err, sizeof(err)) &&
	      strstr(err, ":1: a key must be"), "130 digits refused");
	CHECK(keyfile("a 0011223344556677889xaabbccddeeff\n", &kr, err,
		      sizeof(err)) && strstr(err, ":1: not a hex digit"),
	      "not hex: file and line");
	CHECK(keyfile("a " K32 " extra\n", &kr, err, sizeof(err)) &&
	      strstr(err, ":1: expected NAME HEX"), "trailing words refused");
	CHECK(keyfile(K32 "\nb " K32 "\n", &kr, err, sizeof(err)) &&
	      strstr(err, ":2: a key without a name"),
	      "a bare key beside a named one refused");
	CHECK(keyfile("# nothing\n\n", &kr, err, sizeof(err)) &&
	      strstr(err, "no key in the file"), "no key: refused");
	CHECK(keys_load("/nonexistent/k", &kr, err, sizeof(err)) &&
	      strstr(err, "/nonexistent/k: No such file"), "missing file");
	CHECK(keyname_valid("a", 1) && !keyname_valid("", 0) &&
	      !keyname_valid("a b", 3) && keyname_valid(
	      "0123456789012345678901234567890123456789012345678901234567890123",
	      64) && !keyname_valid(
	      "01234567890123456789012345678901234567890123456789012345678901234",
	      65), "key names: 1..64 of [A-Za-z0-9._-]");
}

int main(void)
{
	char cmd[128];

	snprintf(dir, sizeof(dir), "/var/tmp/pohmel-crypto-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	t_sha_hmac();
	t_hkdf();
	t_aead();
	t_records(POHMEL_FEAT_SEAL_AES, false, "AES-256-GCM record");
	t_records(POHMEL_FEAT_SEAL_CHACHA, false, "ChaCha20-Poly1305 record");
	t_records(POHMEL_FEAT_SEAL_AES, true, "signed record");
	t_keyfile();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		printf("# could not remove %s\n", dir);
	return tap_done();
}
