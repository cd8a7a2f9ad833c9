// SPDX-License-Identifier: MIT
/*
 * auth.c - the HELLO/AUTH challenge-response MACs and the key file. Both
 * pohmeld and libpohmel link this file, so the two sides cannot disagree
 * on the MAC input layout.
 */
#include <ctype.h>
#include <errno.h>
#include "pohmeld.h"

/* MAC = HMAC-SHA256(K, label(8) || n1 || n2 || uuid), see pohmel_proto.h. */
void auth_mac(const uint8_t *key, size_t klen, const char label[8],
	      const uint8_t *n1, const uint8_t *n2, const uint8_t uuid[16],
	      uint8_t out[POHMEL_MAC_LEN])
{
	uint8_t msg[8 + 2 * POHMEL_NONCE_LEN + 16];

	memcpy(msg, label, 8);
	memcpy(msg + 8, n1, POHMEL_NONCE_LEN);
	memcpy(msg + 8 + POHMEL_NONCE_LEN, n2, POHMEL_NONCE_LEN);
	memcpy(msg + 8 + 2 * POHMEL_NONCE_LEN, uuid, 16);
	hmac_sha256(key, klen, msg, sizeof(msg), out);
}

/* Constant time: a timing difference must not reveal a prefix match. */
bool auth_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint8_t d = 0;
	size_t i;

	for (i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Key file: 32..128 hex characters (16..64 bytes) on the first line, as
 * doc/CONTRACTS.md says; anything else on that line is an error.
 */
int key_file_load(const char *path, uint8_t *key, size_t *klen,
		  char *err, size_t errlen)
{
	char line[512];
	size_t n, i;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		snprintf(err, errlen, "%s: empty key file", path);
		return -1;
	}
	fclose(f);
	n = strcspn(line, "\r\n");
	line[n] = 0;
	if (n < 2 * POHMEL_KEY_MIN || n > 2 * POHMEL_KEY_MAX || n % 2) {
		snprintf(err, errlen,
			 "%s: key must be 32..128 hex digits (even count), got %zu characters",
			 path, n);
		return -1;
	}
	for (i = 0; i < n; i += 2) {
		int hi = hexval((unsigned char)line[i]);
		int lo = hexval((unsigned char)line[i + 1]);

		if (hi < 0 || lo < 0) {
			snprintf(err, errlen, "%s: not a hex digit at column %zu",
				 path, i + 1 + (hi >= 0));
			return -1;
		}
		key[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*klen = n / 2;
	memset(line, 0, sizeof(line));
	return 0;
}
