// SPDX-License-Identifier: MIT
/*
 * auth.c - the handshake's MACs and session keys, and the key file.
 * Both pohmeld and libpohmel link this file, so the two sides cannot
 * disagree on what goes into a MAC (pohmel_proto.h, "Authentication and
 * protection").
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pohmeld.h"

/* 1.2: MAC = HMAC-SHA256(K, label(8) || n1 || n2 || uuid). */
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

/*
 * TH = SHA-256(request as sent || reply with its mac zeroed). rep is a
 * whole reply (header and struct pohmel_hello); it is not changed.
 */
int auth_th(const uint8_t *req, size_t reqlen, const uint8_t *rep,
	    uint8_t th[32])
{
	uint8_t r[AUTH_HELLO_REP];
	struct sha256_ctx h;

	memcpy(r, rep, sizeof(r));
	memset(r + POHMEL_HDR_SIZE + HELLO_MAC_OFF, 0, POHMEL_MAC_LEN);
	sha256_init(&h);
	sha256_update(&h, req, reqlen);
	sha256_update(&h, r, sizeof(r));
	return sha256_final(&h, th);
}

/* 1.3: HMAC-SHA256(K, label(8) || TH). */
int auth_mac13(const uint8_t *key, size_t klen, const char label[8],
	       const uint8_t th[32], uint8_t out[POHMEL_MAC_LEN])
{
	uint8_t msg[8 + 32];

	memcpy(msg, label, 8);
	memcpy(msg + 8, th, 32);
	return hmac_sha256(key, klen, msg, sizeof(msg), out);
}

/* HKDF-SHA256(salt TH, key K): one 32-byte key per direction. */
int auth_session_keys(const uint8_t *key, size_t klen, const uint8_t th[32],
		      uint8_t k_c2s[32], uint8_t k_s2c[32])
{
	if (hkdf_sha256(th, 32, key, klen, "pohmel c2s", 10, k_c2s, 32) ||
	    hkdf_sha256(th, 32, key, klen, "pohmel s2c", 10, k_s2c, 32))
		return -1;
	return 0;
}

/* 1..POHMEL_KEYNAME_MAX of [A-Za-z0-9._-] */
bool keyname_valid(const char *s, size_t n)
{
	size_t i;

	if (n < 1 || n > POHMEL_KEYNAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			return false;
	return true;
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

/* 32..128 hex digits, even count; NULL or what is wrong. */
static const char *hex_key(const char *s, size_t n, uint8_t *key,
			   size_t *klen)
{
	size_t i;

	if (n < 2 * POHMEL_KEY_MIN || n > 2 * POHMEL_KEY_MAX || n % 2)
		return "a key must be 32..128 hex digits (an even count)";
	for (i = 0; i < n; i += 2) {
		int hi = hexval((unsigned char)s[i]);
		int lo = hexval((unsigned char)s[i + 1]);

		if (hi < 0 || lo < 0)
			return "not a hex digit in the key";
		key[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*klen = n / 2;
	return NULL;
}

const struct keyent *keys_find(const struct keyring *kr, const char *name,
			       size_t n)
{
	int i;

	for (i = 0; i < kr->n; i++)
		if (strlen(kr->k[i].name) == n && !memcmp(kr->k[i].name, name, n))
			return &kr->k[i];
	return NULL;
}

void keys_free(struct keyring *kr)
{
	if (kr->k)
		memset(kr->k, 0, sizeof(*kr->k) * (size_t)kr->cap);
	free(kr->k);
	memset(kr, 0, sizeof(*kr));
}

#define KEYS_MAX	4096

/* Append (name, key); -1 with err set. */
static int keys_add(struct keyring *kr, const char *name, size_t nl,
		    const uint8_t *key, size_t klen, const char *path,
		    int lineno, char *err, size_t errlen)
{
	struct keyent *k;

	if (keys_find(kr, name, nl)) {
		snprintf(err, errlen, "%s:%d: key name '%.*s' given twice",
			 path, lineno, (int)nl, name);
		return -1;
	}
	if (kr->n == kr->cap) {
		int cap = kr->cap ? 2 * kr->cap : 8;

		if (kr->n >= KEYS_MAX) {
			snprintf(err, errlen, "%s:%d: more than %d keys",
				 path, lineno, KEYS_MAX);
			return -1;
		}
		k = calloc((size_t)cap, sizeof(*k));
		if (!k) {
			snprintf(err, errlen, "%s: out of memory", path);
			return -1;
		}
		if (kr->n)
			memcpy(k, kr->k, sizeof(*k) * (size_t)kr->n);
		if (kr->k)
			memset(kr->k, 0, sizeof(*k) * (size_t)kr->cap);
		free(kr->k);
		kr->k = k;
		kr->cap = cap;
	}
	k = &kr->k[kr->n++];
	memcpy(k->name, name, nl);
	k->name[nl] = 0;
	memcpy(k->key, key, klen);
	k->len = klen;
	return 0;
}

/*
 * The key file: lines "NAME HEX", '#' comments and blank lines; or, as
 * before 1.3, a file whose only content is one bare HEX line: the key
 * named "default". Every problem names the file and line. 0 (kr filled,
 * at least one key) or -1 with err set.
 */
int keys_load(const char *path, struct keyring *kr, char *err, size_t errlen)
{
	char line[512], *p, *name, *hex;
	size_t nl, hl, klen;
	int lineno = 0, bare = 0, named = 0;
	uint8_t key[POHMEL_KEY_MAX];
	const char *why;
	FILE *f;

	memset(kr, 0, sizeof(*kr));
	f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path,
				 lineno);
			goto err_keys;
		}
		line[strcspn(line, "\r\n")] = 0;
		p = line + strspn(line, " \t");
		if (!*p || *p == '#')
			continue;
		name = p;
		nl = strcspn(p, " \t");
		p += nl;
		p += strspn(p, " \t");
		hex = p;
		hl = strcspn(p, " \t");
		if (hex[hl + strspn(hex + hl, " \t")]) {
			snprintf(err, errlen, "%s:%d: expected NAME HEX, found more",
				 path, lineno);
			goto err_keys;
		}
		if (!hl) {
			/* a bare key: only as the file's one line */
			hex = name;
			hl = nl;
			name = "default";
			nl = 7;
			bare++;
		} else {
			named++;
			if (!keyname_valid(name, nl)) {
				snprintf(err, errlen,
					 "%s:%d: bad key name '%.*s' (1..%d of A-Z a-z 0-9 . _ -)",
					 path, lineno, (int)MIN(nl, 80), name,
					 POHMEL_KEYNAME_MAX);
				goto err_keys;
			}
		}
		if (bare && (bare + named) > 1) {
			snprintf(err, errlen,
				 "%s:%d: a key without a name is only allowed as the file's one key",
				 path, lineno);
			goto err_keys;
		}
		why = hex_key(hex, hl, key, &klen);
		if (why) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			goto err_keys;
		}
		if (keys_add(kr, name, nl, key, klen, path, lineno, err,
			     errlen))
			goto err_keys;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto err_keys;
	}
	if (!kr->n) {
		snprintf(err, errlen, "%s: no key in the file", path);
		goto err_keys;
	}
	fclose(f);
	memset(line, 0, sizeof(line));
	memset(key, 0, sizeof(key));
	return 0;

err_keys:
	keys_free(kr);
	fclose(f);
	memset(line, 0, sizeof(line));
	memset(key, 0, sizeof(key));
	return -1;
}

/*
 * A new key file at path holding one random 32-byte key named name, mode
 * 0600 whatever the umask; never over an existing file (EEXIST). Written
 * to a temporary file first and linked into place, so a crash leaves
 * either no key file or a whole one. 0 or an errno.
 */
int keys_create(const char *path, const char *name)
{
	char line[POHMEL_KEYNAME_MAX + 2 + 64 + 2], tmp[4200];
	uint8_t key[32];
	size_t n, i;
	int fd, err;

	if (!keyname_valid(name, strlen(name)))
		return EINVAL;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >=
	    sizeof(tmp))
		return ENAMETOOLONG;
	if (getrandom(key, sizeof(key), 0) != sizeof(key))
		return errno ? errno : EIO;
	n = (size_t)snprintf(line, sizeof(line), "%s ", name);
	for (i = 0; i < sizeof(key); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%02x",
				      key[i]);
	n += (size_t)snprintf(line + n, sizeof(line) - n, "\n");
	memset(key, 0, sizeof(key));
	fd = mkostemp(tmp, O_CLOEXEC);	/* mode 0600 */
	if (fd < 0) {
		err = errno;
		goto out_wipe;
	}
	errno = 0;
	if (fchmod(fd, 0600) || write(fd, line, n) != (ssize_t)n ||
	    fsync(fd)) {
		err = errno ? errno : EIO;
		close(fd);
		goto out_unlink;
	}
	if (close(fd) || link(tmp, path)) {
		err = errno;
		goto out_unlink;
	}
	err = 0;
out_unlink:
	unlink(tmp);
out_wipe:
	memset(line, 0, sizeof(line));
	return err;
}
