/* SPDX-License-Identifier: GPL-2.0 */
/*
 * seal.h - protocol 1.3's protection of one connection: the handshake's
 * transcript hash, MACs and HKDF session keys (auth.c), and the record
 * layer that seals or signs every message after HELLO (seal.c).
 */
#ifndef POHMEL_SEAL_H
#define POHMEL_SEAL_H

#include <linux/types.h>

#include "pohmel_proto.h"

struct socket;
struct pohmel_hdr;

#define POHMEL_HASH_LEN		32

/* What a mount asks for (sec=). */
enum pohmel_sec {
	POHMEL_SEC_NONE,	/* key checked once, nothing after protected */
	POHMEL_SEC_AUTH,	/* every message signed, not encrypted */
	POHMEL_SEC_SEAL,	/* every message encrypted and signed */
};

/* auth.c */
int pohmel_sha256_2(const void *a, size_t alen, const void *b, size_t blen,
		    u8 out[POHMEL_HASH_LEN]);
int pohmel_hs_mac(const u8 *key, unsigned int keylen, const char *label,
		  const u8 th[POHMEL_HASH_LEN], u8 mac[POHMEL_MAC_LEN]);
int pohmel_hs_keys(const u8 *key, unsigned int keylen,
		   const u8 th[POHMEL_HASH_LEN], u8 k_c2s[32], u8 k_s2c[32]);

/* seal.c */
struct pohmel_seal;

/* cipher=: which AEADs a mount may offer (feature bits; 0: any) */
#define POHMEL_CIPHER_ANY	0

u64 pohmel_seal_offer(enum pohmel_sec sec, u64 ciphers);
const char *pohmel_seal_name(u64 features);
struct pohmel_seal *pohmel_seal_new(u64 features, const u8 k_tx[32],
				    const u8 k_rx[32], u32 max_msg);
void pohmel_seal_free(struct pohmel_seal *s);
struct pohmel_pages;
int pohmel_seal_send(struct pohmel_seal *s, struct socket *sock,
		     const void *msg, u32 len, const struct pohmel_pages *pg);
int pohmel_seal_recv(struct pohmel_seal *s, struct socket *sock,
		     struct pohmel_hdr *h, u8 **payload, u32 max_msg,
		     bool patient);
int pohmel_seal_recv_hdr(struct pohmel_seal *s, struct socket *sock,
			 struct pohmel_hdr *h, const u8 **src, u32 max_msg,
			 bool patient);
int pohmel_seal_recv_payload(struct socket *sock, const struct pohmel_hdr *h,
			     const u8 *src, u8 **payload, bool patient);
const u8 *pohmel_seal_test_encode(struct pohmel_seal *s, u64 ctr,
				  const void *msg, u32 len);
int pohmel_seal_test_decode(struct pohmel_seal *s, u64 ctr, const u8 *rec,
			    u32 reclen, const u8 **inner);

/* seal_test.c */
int pohmel_seal_selftest(void);

#endif /* POHMEL_SEAL_H */
