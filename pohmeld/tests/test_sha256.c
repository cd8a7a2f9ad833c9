// SPDX-License-Identifier: MIT
/* SHA-256 (FIPS 180-4 examples) and HMAC-SHA256 (RFC 4231 cases 1-7). */
#include "../pohmeld.h"
#include "tap.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
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

int main(void)
{
	uint8_t k[131], d[50], *big;
	struct sha256_ctx c;
	uint8_t out[32];
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
	/* The same, fed in odd-sized pieces. */
	sha256_init(&c);
	for (i = 0; i < 1000000; i += 997)
		sha256_update(&c, big + i, i + 997 > 1000000 ? 1000000 - i : 997);
	sha256_final(&c, out);
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
	return tap_done();
}
