/* hostile_seal.c: the hostile proxy as a key holder (protocol 1.3,
 * src/pohmel_proto.h "Authentication and protection").
 *
 * Once connections are sealed a proxy that only relays can neither read
 * nor change anything, and a change it makes would only show as a failed
 * tag. The threat left is a server that knows the key, so with a key
 * file the proxy is one: it ends the protocol on both legs, each with its
 * own transcript hash, MACs, session keys and counters, and seals what
 * the scenarios make of each message for the other leg. The client then
 * sees exactly the hostile content it saw before keys existed.
 *
 * The arithmetic is OpenSSL's libcrypto (1.1.1 and 3.x): SHA256(),
 * HMAC(), and EVP for AES-256-GCM and ChaCha20-Poly1305. seal_selftest()
 * checks it against the protocol's test vectors, which the kernel and
 * pohmeld check theirs against too.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "hostile.h"

typedef uint8_t u8;
/*
 * The protocol's vectors: src/pohmel_vectors.h in the tree (the Makefile's
 * -I), or the copy tests/qemu/run puts next to this file in a guest,
 * where the suite is built apart from src/.
 */
#include "pohmel_vectors.h"

#define KEY_MIN 16
#define KEY_MAX 64
#define KEYS_MAX 16

static struct {
	char name[KEYNAME_MAX + 1];
	u8 k[KEY_MAX];
	size_t len;
} keys[KEYS_MAX];
static int nkeys;

/* ---- the arithmetic -------------------------------------------------------- */

/* TH = SHA-256(whole HELLO request || whole HELLO reply, its mac zeroed) */
static void transcript(const u8 *req, size_t reqlen, const u8 *rep, u8 th[32])
{
	u8 buf[2 * HDR + 2 * HELLO_SIZE + KEYNAME_MAX];

	memcpy(buf, req, reqlen);
	memcpy(buf + reqlen, rep, HDR + HELLO_SIZE);
	memset(buf + reqlen + HDR + HE_MAC, 0, 32);
	SHA256(buf, reqlen + HDR + HELLO_SIZE, th);
}

/* HMAC-SHA256(@key, @a || @b) */
static void hmac2(const u8 *key, size_t keylen, const void *a, size_t alen,
		  const void *b, size_t blen, u8 out[32])
{
	u8 msg[KEY_MAX + 32];

	memcpy(msg, a, alen);
	if (blen)
		memcpy(msg + alen, b, blen);
	HMAC(EVP_sha256(), key, (int)keylen, msg, alen + blen, out, NULL);
}

/* mac = HMAC-SHA256(K, label || TH), label "pohmel-s" or "pohmel-c" */
static void hs_mac(const u8 *key, size_t keylen, const char *label, const u8 th[32],
		   u8 mac[32])
{
	hmac2(key, keylen, label, strlen(label), th, 32, mac);
}

/* HKDF-SHA256 (RFC 5869), TH the salt, K the secret, one block each way */
static void hs_keys(const u8 *key, size_t keylen, const u8 th[32], u8 c2s[32], u8 s2c[32])
{
	static const u8 one = 1;
	u8 prk[32];

	hmac2(th, 32, key, keylen, NULL, 0, prk);
	hmac2(prk, 32, "pohmel c2s", 10, &one, 1, c2s);
	hmac2(prk, 32, "pohmel s2c", 10, &one, 1, s2c);
	OPENSSL_cleanse(prk, sizeof(prk));
}

/*
 * The AEAD over a record in place: the outer header and @n inner bytes,
 * then the tag (written when sealing, checked when opening). Nonce: 4
 * zero bytes and the counter; with FEAT_SIGN the inner message is
 * associated data and nothing is encrypted. 0, or -1 for a bad tag.
 */
static int aead(int chacha, int sign, const u8 key[32], uint64_t ctr, int enc, u8 *rec,
		size_t n)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	size_t ad = HDR + (sign ? n : 0);
	u8 iv[12] = {0}, *text = rec + ad, *tag = rec + HDR + n;
	int len, ok;

	if (!x) {
		say("out of memory");
		exit(1);
	}
	put64(iv + 4, ctr);
	/* both take a 12-byte nonce by default; say so anyway */
	ok = EVP_CipherInit_ex(x, chacha ? EVP_chacha20_poly1305() : EVP_aes_256_gcm(), NULL,
			       NULL, NULL, enc) &&
	     EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_IVLEN, sizeof(iv), NULL) &&
	     EVP_CipherInit_ex(x, NULL, NULL, key, iv, enc) &&
	     (enc || EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, TAG_LEN, tag)) &&
	     EVP_CipherUpdate(x, NULL, &len, rec, (int)ad) &&
	     (sign || EVP_CipherUpdate(x, text, &len, text, (int)n)) &&
	     EVP_CipherFinal_ex(x, text, &len) &&
	     (!enc || EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, tag));
	EVP_CIPHER_CTX_free(x);
	return ok ? 0 : -1;
}

static void outer(u8 *out, size_t n)
{
	memset(out, 0, HDR);
	put32(out + H_LEN, (uint32_t)(n + TAG_LEN));
	put16(out + H_FLAGS, HF_SEALED);
}

size_t seal_record(struct seal_leg *l, const uint8_t *m, size_t n, uint8_t *out)
{
	outer(out, n);
	memmove(out + HDR, m, n);
	if (aead(l->chacha, l->sign, l->tx.key, l->tx.ctr++, 1, out, n)) {
		say("cannot seal a record: libcrypto failed");
		exit(1);
	}
	return HDR + n + TAG_LEN;
}

int seal_open(struct seal_leg *l, uint8_t *rec, size_t n)
{
	return aead(l->chacha, l->sign, l->rx.key, l->rx.ctr++, 0, rec, n - HDR - TAG_LEN);
}

/* ---- the key file ------------------------------------------------------------ */

static int unhex(int ch)
{
	return isdigit(ch) ? ch - '0' : isxdigit(ch) ? (tolower(ch) - 'a' + 10) : -1;
}

int seal_load_keys(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512], name[512], hex[512];
	int lineno = 0;

	if (!f) {
		say("key file %s: cannot open it", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t i, n;
		int k;

		lineno++;
		k = sscanf(line, "%511s %511s", name, hex);
		if (k <= 0 || name[0] == '#')
			continue;
		if (k == 1) {	/* a bare key is the one named "default" */
			strcpy(hex, name);
			strcpy(name, "default");
		}
		n = strlen(hex);
		if (nkeys == KEYS_MAX || strlen(name) > KEYNAME_MAX || n % 2 ||
		    n < 2 * KEY_MIN || n > 2 * KEY_MAX)
			goto bad;
		for (i = 0; i < n / 2; i++) {
			int hi = unhex(hex[2 * i]), lo = unhex(hex[2 * i + 1]);

			if (hi < 0 || lo < 0)
				goto bad;
			keys[nkeys].k[i] = (u8)(hi << 4 | lo);
		}
		strcpy(keys[nkeys].name, name);
		keys[nkeys++].len = n / 2;
	}
	fclose(f);
	if (!nkeys)
		say("key file %s: no key in it", path);
	return nkeys ? nkeys : -1;
bad:
	say("key file %s: line %d is not 'NAME HEX' (16..64 bytes of key)", path, lineno);
	fclose(f);
	return -1;
}

/* ---- the handshake, leg by leg ------------------------------------------------ */

void seal_start(struct seal_conn *s, int keyed)
{
	OPENSSL_cleanse(s, sizeof(*s));
	s->state = keyed ? SL_HELLO : SL_OFF;
}

static const char *prot_name(const struct seal_leg *l)
{
	if (!l->keyed)
		return "no key";
	if (!l->on)
		return "sec=none (key checked at connect only)";
	return l->chacha ? (l->sign ? "sec=auth chacha20-poly1305" : "sec=seal chacha20-poly1305") :
			   (l->sign ? "sec=auth aes-256-gcm" : "sec=seal aes-256-gcm");
}

/* What the reply @m's features give leg @l, whose TH is set; @server: we
 * are that leg's server (we send s2c). */
static void leg_setup(struct seal_conn *s, struct seal_leg *l, const u8 *m, int server)
{
	uint64_t f = get64(m + HDR + HE_FEATURES);
	u8 c2s[32], s2c[32];

	l->keyed = !!(f & FEAT_AUTH);
	l->on = l->keyed && (f & (FEAT_SEAL_AES | FEAT_SEAL_CHACHA));
	l->chacha = !(f & FEAT_SEAL_AES);	/* the server prefers AES */
	l->sign = !!(f & FEAT_SIGN);
	l->tx.ctr = l->rx.ctr = 0;
	if (!l->keyed)
		return;
	hs_keys(s->key, s->keylen, l->th, c2s, s2c);
	memcpy(l->tx.key, server ? s2c : c2s, 32);
	memcpy(l->rx.key, server ? c2s : s2c, 32);
	OPENSSL_cleanse(c2s, sizeof(c2s));
	OPENSSL_cleanse(s2c, sizeof(s2c));
}

static int is_hello(const u8 *m, size_t n, int reply)
{
	return n >= HDR + HELLO_SIZE && get16(m + H_OP) == OP_HELLO &&
	       !!(get16(m + H_FLAGS) & HF_REPLY) == reply;
}

void seal_hello_in(struct seal_conn *s, const uint8_t *m, size_t n)
{
	size_t kl;
	int i;

	if (s->state != SL_HELLO || !is_hello(m, n, 0))
		return;
	s->state = SL_OFF;	/* unless it names one of our keys */
	kl = get16(m + HDR + HE_KEY_LEN);
	if (get16(m + HDR + HE_MINOR) < 3 || !kl) {
		say("keys: a HELLO without a key name (1.2, or keyless): passed on as it is");
		return;
	}
	if (kl > KEYNAME_MAX || n != HDR + HELLO_SIZE + kl) {
		say("keys: a HELLO whose key name is malformed: passed on as it is");
		return;
	}
	for (i = 0; i < nkeys; i++)
		if (strlen(keys[i].name) == kl && !memcmp(keys[i].name, m + HDR + HELLO_SIZE, kl))
			break;
	if (i == nkeys) {
		say("keys: the client names key '%.*s', which the key file lacks: passed on as it is",
		    (int)kl, (const char *)m + HDR + HELLO_SIZE);
		return;
	}
	s->key = keys[i].k;
	s->keylen = keys[i].len;
	memcpy(s->req_a, m, n);
	s->req_a_len = n;
	s->state = SL_REPLY;
}

void seal_hello_out(struct seal_conn *s, const uint8_t *m, size_t n)
{
	if (s->state != SL_REPLY || !is_hello(m, n, 0) || n > sizeof(s->req_b))
		return;
	memcpy(s->req_b, m, n);
	s->req_b_len = n;
}

void seal_reply_in(struct seal_conn *s, const uint8_t *m, size_t n)
{
	struct seal_leg *b = &s->b;
	u8 mac[32];

	if (s->state != SL_REPLY || !is_hello(m, n, 1))
		return;
	s->state = SL_OUT;
	transcript(s->req_b, s->req_b_len, m, b->th);
	leg_setup(s, b, m, 0);
	if (!b->keyed) {
		say("keys: pohmeld's HELLO reply negotiates no key");
		return;
	}
	hs_mac(s->key, s->keylen, "pohmel-s", b->th, mac);
	if (CRYPTO_memcmp(mac, m + HDR + HE_MAC, 32))
		say("keys: pohmeld's mac_s does not verify (another key of that name?)");
	say("keys: to pohmeld %s", prot_name(b));
}

void seal_reply_out(struct seal_conn *s, uint8_t *m, size_t n)
{
	struct seal_leg *a = &s->a;

	if (s->state != SL_OUT)
		return;
	s->state = SL_AUTH;
	if (!is_hello(m, n, 1) || n != HDR + HELLO_SIZE) {
		/* (hello-garbage) no HELLO: no keys, the client gives up */
		say("keys: what replaces the HELLO reply goes to the client as it is");
		return;
	}
	transcript(s->req_a, s->req_a_len, m, a->th);
	leg_setup(s, a, m, 1);
	if (!a->keyed)
		return;
	hs_mac(s->key, s->keylen, "pohmel-s", a->th, m + HDR + HE_MAC);
	say("keys: to the client %s", prot_name(a));
}

void seal_auth(struct seal_conn *s, uint8_t *m, size_t n)
{
	u8 mac[32];

	if (s->state != SL_AUTH)
		return;
	s->state = SL_UP;
	if (get16(m + H_OP) != OP_AUTH || n != HDR + 32) {
		say("keys: the client's first message after HELLO is no AUTH (op %u)",
		    get16(m + H_OP));
		return;
	}
	if (s->a.keyed) {
		hs_mac(s->key, s->keylen, "pohmel-c", s->a.th, mac);
		if (CRYPTO_memcmp(mac, m + HDR, 32))
			say("keys: the client's mac_c does not verify");
	}
	if (s->b.keyed)
		hs_mac(s->key, s->keylen, "pohmel-c", s->b.th, m + HDR);
}

/* ---- the self-test ------------------------------------------------------------- */

static int same(const char *what, const u8 *got, const u8 *want, size_t n)
{
	int ok = !memcmp(got, want, n);

	printf("%s %s\n", ok ? "agrees:" : "DIFFERS:", what);
	return ok ? 0 : 1;
}

/* Seal the vector's inner message as record number POHMEL_VEC_COUNTER of
 * c2s, compare, open it again, and check that a flipped bit fails. */
static int check_record(const char *what, int chacha, int sign, const u8 *want, size_t wlen)
{
	struct seal_leg l = { .chacha = chacha, .sign = sign };
	size_t n = sizeof(pohmel_vec_inner);
	u8 rec[HDR + sizeof(pohmel_vec_inner) + TAG_LEN];
	int bad;

	memcpy(l.tx.key, pohmel_vec_k_c2s, 32);
	memcpy(l.rx.key, pohmel_vec_k_c2s, 32);
	l.tx.ctr = l.rx.ctr = POHMEL_VEC_COUNTER;
	if (wlen != sizeof(rec)) {
		printf("DIFFERS: %s (%zu bytes, not %zu)\n", what, wlen, sizeof(rec));
		return 1;
	}
	seal_record(&l, pohmel_vec_inner, n, rec);
	bad = same(what, rec, want, sizeof(rec));
	if (seal_open(&l, rec, sizeof(rec)) || memcmp(rec + HDR, pohmel_vec_inner, n)) {
		printf("DIFFERS: %s does not open again\n", what);
		bad = 1;
	}
	memcpy(rec, want, sizeof(rec));
	rec[HDR + 3] ^= 1;
	l.rx.ctr = POHMEL_VEC_COUNTER;
	if (!seal_open(&l, rec, sizeof(rec))) {
		printf("DIFFERS: %s with a bit flipped opens\n", what);
		bad = 1;
	}
	return bad;
}

int seal_selftest(void)
{
	u8 th[32], mac[32], c2s[32], s2c[32];
	int bad = 0;

	printf("vectors: pohmel_vectors.h, counter %d\n", POHMEL_VEC_COUNTER);
	transcript(pohmel_vec_hello_req, sizeof(pohmel_vec_hello_req), pohmel_vec_hello_rep, th);
	bad += same("transcript hash", th, pohmel_vec_th, 32);
	hs_mac(pohmel_vec_key, sizeof(pohmel_vec_key), "pohmel-s", th, mac);
	bad += same("mac_s", mac, pohmel_vec_mac_s, 32);
	hs_mac(pohmel_vec_key, sizeof(pohmel_vec_key), "pohmel-c", th, mac);
	bad += same("mac_c", mac, pohmel_vec_mac_c, 32);
	hs_keys(pohmel_vec_key, sizeof(pohmel_vec_key), th, c2s, s2c);
	bad += same("k_c2s", c2s, pohmel_vec_k_c2s, 32);
	bad += same("k_s2c", s2c, pohmel_vec_k_s2c, 32);
	bad += check_record("record aes-256-gcm", 0, 0, pohmel_vec_rec_aes,
			    sizeof(pohmel_vec_rec_aes));
	bad += check_record("record chacha20-poly1305", 1, 0, pohmel_vec_rec_chacha,
			    sizeof(pohmel_vec_rec_chacha));
	bad += check_record("record signed (aes-256-gcm)", 0, 1, pohmel_vec_rec_sign,
			    sizeof(pohmel_vec_rec_sign));
	printf("%d of 8 differ\n", bad);
	return bad ? 1 : 0;
}
