// SPDX-License-Identifier: GPL-2.0
/*
 * seal.c - the record layer of protocol 1.3: after HELLO every message
 * travels as an outer header, the inner message (encrypted, or in clear
 * when only signed) and an AEAD tag, with a per-direction counter as the
 * nonce (pohmel_proto.h, "Authentication and protection"). The counter
 * is never on the wire: a dropped, repeated, reordered or changed record
 * fails its tag and the connection is dropped and re-established.
 *
 * One struct pohmel_seal lives and dies with one socket. Its tx half is
 * used under the connection's send_mutex only, its rx half by the
 * receive thread only (or the handshake, before either exists), so
 * neither needs a lock of its own.
 */
#include <crypto/aead.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/net.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "conn.h"
#include "seal.h"

#define SEAL_IV_LEN	12

/*
 * Records per direction before the connection is dropped for new keys:
 * the protocol's limit; lower only to test that rekeying (a reconnect)
 * loses nothing.
 */
static unsigned long long seal_msgs_max = POHMEL_SEAL_MSGS_MAX;
module_param(seal_msgs_max, ullong, 0644);
MODULE_PARM_DESC(seal_msgs_max, "records per direction and connection before new keys (testing)");

struct seal_dir {
	struct crypto_aead *tfm;
	struct aead_request *req;
	u64 ctr;			/* records so far in this direction */
	u8 *buf;			/* outer hdr + inner + tag, max size */
	struct scatterlist *sg;		/* covers all of buf */
};

struct pohmel_seal {
	bool sign;			/* FEAT_SIGN: inner in clear */
	u32 cap;			/* bytes of each buf */
	struct seal_dir tx, rx;
};

static const char *aead_alg(u64 features)
{
	if (features & POHMEL_FEAT_SEAL_AES)
		return "gcm(aes)";
	if (features & POHMEL_FEAT_SEAL_CHACHA)
		return "rfc7539(chacha20,poly1305)";
	return NULL;
}

/* Loads the implementation's module if need be, as allocating would. */
static bool has_aead(u64 feature)
{
	return crypto_has_alg(aead_alg(feature), CRYPTO_ALG_TYPE_AEAD,
			      CRYPTO_ALG_TYPE_MASK);
}

/*
 * The AEADs this kernel has, among @ciphers (cipher=; POHMEL_CIPHER_ANY:
 * all), as feature bits to offer at HELLO.
 */
u64 pohmel_seal_offer(enum pohmel_sec sec, u64 ciphers)
{
	u64 f = 0;

	if (sec == POHMEL_SEC_NONE)
		return 0;
	if (ciphers == POHMEL_CIPHER_ANY)
		ciphers = POHMEL_FEAT_AEAD;
	if ((ciphers & POHMEL_FEAT_SEAL_AES) && has_aead(POHMEL_FEAT_SEAL_AES))
		f |= POHMEL_FEAT_SEAL_AES;
	if ((ciphers & POHMEL_FEAT_SEAL_CHACHA) &&
	    has_aead(POHMEL_FEAT_SEAL_CHACHA))
		f |= POHMEL_FEAT_SEAL_CHACHA;
	if (f && sec == POHMEL_SEC_AUTH)
		f |= POHMEL_FEAT_SIGN;
	return f;
}

/* For mountstats: what protects the connection with @features. */
const char *pohmel_seal_name(u64 features)
{
	bool sign = features & POHMEL_FEAT_SIGN;

	if (features & POHMEL_FEAT_SEAL_AES)
		return sign ? "auth aes-256-gcm" : "seal aes-256-gcm";
	if (features & POHMEL_FEAT_SEAL_CHACHA)
		return sign ? "auth chacha20-poly1305" :
			      "seal chacha20-poly1305";
	if (features & POHMEL_FEAT_AUTH)
		return "none (key checked at connect)";
	return "none (no key)";
}

/* A scatterlist over @buf, which may be vmalloc()ed, @n entries. */
static struct scatterlist *buf_sg(void *buf, size_t len)
{
	unsigned int n, i;
	struct scatterlist *sg;
	size_t off = offset_in_page(buf);

	if (!is_vmalloc_addr(buf)) {
		sg = kmalloc(sizeof(*sg), GFP_KERNEL);
		if (sg)
			sg_init_one(sg, buf, len);
		return sg;
	}
	n = DIV_ROUND_UP(off + len, PAGE_SIZE);
	sg = kmalloc_array(n, sizeof(*sg), GFP_KERNEL);
	if (!sg)
		return NULL;
	sg_init_table(sg, n);
	for (i = 0; i < n; i++) {
		size_t chunk = min_t(size_t, len, PAGE_SIZE - off);

		sg_set_page(&sg[i], vmalloc_to_page(buf), chunk, off);
		buf += chunk;
		len -= chunk;
		off = 0;
	}
	return sg;
}

static void dir_free(struct seal_dir *d)
{
	aead_request_free(d->req);	/* NULL-safe: kfree_sensitive */
	if (!IS_ERR_OR_NULL(d->tfm))
		crypto_free_aead(d->tfm);
	kfree(d->sg);
	kvfree(d->buf);
}

static int dir_init(struct seal_dir *d, const char *alg, const u8 *key,
		    u32 cap)
{
	int err;

	d->tfm = crypto_alloc_aead(alg, 0, 0);
	if (IS_ERR(d->tfm)) {
		err = PTR_ERR(d->tfm);
		d->tfm = NULL;
		return err;
	}
	err = crypto_aead_setkey(d->tfm, key, 32) ?:
	      crypto_aead_setauthsize(d->tfm, POHMEL_TAG_LEN);
	if (err)
		return err;
	if (crypto_aead_ivsize(d->tfm) != SEAL_IV_LEN)
		return -EINVAL;
	d->req = aead_request_alloc(d->tfm, GFP_KERNEL);
	d->buf = pohmel_msg_alloc(cap, 0);
	if (!d->req || !d->buf)
		return -ENOMEM;
	d->sg = buf_sg(d->buf, cap);
	return d->sg ? 0 : -ENOMEM;
}

/*
 * The protection negotiated in @features for one connection, @k_tx for
 * what we send, @k_rx for what we receive. NULL (no AEAD bit) means
 * plain messages; an ERR_PTR is a failure.
 */
struct pohmel_seal *pohmel_seal_new(u64 features, const u8 k_tx[32],
				    const u8 k_rx[32], u32 max_msg)
{
	const char *alg = aead_alg(features);
	struct pohmel_seal *s;
	int err;

	if (!alg)
		return NULL;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return ERR_PTR(-ENOMEM);
	s->sign = features & POHMEL_FEAT_SIGN;
	s->cap = 2 * POHMEL_HDR_SIZE + max_msg + POHMEL_TAG_LEN;
	err = dir_init(&s->tx, alg, k_tx, s->cap) ?:
	      dir_init(&s->rx, alg, k_rx, s->cap);
	if (err) {
		pohmel_seal_free(s);
		return ERR_PTR(err);
	}
	return s;
}

void pohmel_seal_free(struct pohmel_seal *s)
{
	if (IS_ERR_OR_NULL(s))
		return;
	dir_free(&s->tx);
	dir_free(&s->rx);
	kfree_sensitive(s);
}

/*
 * Run the AEAD of @d over its buffer: an outer header and @n inner bytes
 * (followed by the tag on decryption). Waits for an asynchronous
 * implementation; -EBADMSG when a tag does not verify.
 */
static int dir_crypt(struct seal_dir *d, bool sign, u32 n, bool enc)
{
	__be64 ctr = cpu_to_be64(d->ctr);
	u8 iv[SEAL_IV_LEN] = { 0 };
	DECLARE_CRYPTO_WAIT(wait);
	u64 limit = min_t(u64, READ_ONCE(seal_msgs_max), POHMEL_SEAL_MSGS_MAX);
	u32 ad = POHMEL_HDR_SIZE + (sign ? n : 0);
	u32 text = (sign ? 0 : n) + (enc ? 0 : POHMEL_TAG_LEN);
	int err;

	if (d->ctr >= limit)
		return -EKEYEXPIRED;	/* a new connection has new keys */
	memcpy(iv + 4, &ctr, sizeof(ctr));
	aead_request_set_callback(d->req, CRYPTO_TFM_REQ_MAY_BACKLOG,
				  crypto_req_done, &wait);
	aead_request_set_ad(d->req, ad);
	aead_request_set_crypt(d->req, d->sg, d->sg, text, iv);
	err = crypto_wait_req(enc ? crypto_aead_encrypt(d->req) :
				    crypto_aead_decrypt(d->req), &wait);
	if (!err)
		d->ctr++;
	return err;
}

static void outer_hdr(void *buf, u32 n)
{
	struct pohmel_hdr *o = buf;

	memset(o, 0, sizeof(*o));
	o->len = cpu_to_be32(n + POHMEL_TAG_LEN);
	o->flags = cpu_to_be16(POHMEL_HF_SEALED);
}

/* Make @msg (a whole message) the next record in the tx buffer. */
static int seal_encode(struct pohmel_seal *s, const void *msg, u32 len,
		       const struct pohmel_pages *pg)
{
	u32 plen = pg ? pg->len : 0, n = len + plen;
	struct seal_dir *d = &s->tx;
	struct iov_iter it;

	if (len < POHMEL_HDR_SIZE || n < len ||
	    n > s->cap - POHMEL_HDR_SIZE - POHMEL_TAG_LEN)
		return -EMSGSIZE;
	outer_hdr(d->buf, n);
	memcpy(d->buf + POHMEL_HDR_SIZE, msg, len);
	if (plen) {
		/* the record is sealed in place: the pages' bytes go in it */
		iov_iter_bvec(&it, ITER_SOURCE, pg->bv, pg->nr, plen);
		if (copy_from_iter(d->buf + POHMEL_HDR_SIZE + len, plen,
				   &it) != plen)
			return -EFAULT;
	}
	return dir_crypt(d, s->sign, n, true);
}

/*
 * The rx buffer holds an outer header and @len bytes after it: check the
 * header and open the record; the inner message is then at
 * buf + POHMEL_HDR_SIZE, its header checked for length only.
 */
static int seal_open(struct pohmel_seal *s)
{
	struct seal_dir *d = &s->rx;
	struct pohmel_hdr *o = (struct pohmel_hdr *)d->buf;
	struct pohmel_hdr *in = (struct pohmel_hdr *)(d->buf + POHMEL_HDR_SIZE);
	u32 len = be32_to_cpu(o->len), n;
	int err;

	n = len - POHMEL_TAG_LEN;
	err = dir_crypt(d, s->sign, n, false);
	if (err == -EBADMSG || err == -EKEYEXPIRED)
		return err;
	if (err)
		return -EPROTO;
	return be32_to_cpu(in->len) == n - POHMEL_HDR_SIZE ? 0 : -EPROTO;
}

/* Only len and flags may be set in an outer header; len within range. */
static int outer_ok(const struct pohmel_hdr *o, u32 max_msg)
{
	u32 len = be32_to_cpu(o->len);

	if (be16_to_cpu(o->flags) != POHMEL_HF_SEALED || o->op || o->tag ||
	    o->status || o->seq || o->uid || o->gid ||
	    len < POHMEL_HDR_SIZE + POHMEL_TAG_LEN ||
	    len > POHMEL_HDR_SIZE + max_msg + POHMEL_TAG_LEN)
		return -EPROTO;
	return 0;
}

/*
 * Send one whole message (header and payload, then @pg's bytes if any)
 * on @sock as a record; unsealed, the pages go by reference.
 */
int pohmel_seal_send(struct pohmel_seal *s, struct socket *sock,
		     const void *msg, u32 len, const struct pohmel_pages *pg)
{
	int err;

	if (!s && pg && pg->len) {
		err = pohmel_conn_send_more(sock, msg, len);
		return err ?: pohmel_conn_send_pages(sock, pg);
	}
	if (!s)
		return pohmel_conn_send_all(sock, msg, len);
	err = seal_encode(s, msg, len, pg);
	if (err)
		return err;
	return pohmel_conn_send_all(sock, s->tx.buf, POHMEL_HDR_SIZE + len +
				    (pg ? pg->len : 0) + POHMEL_TAG_LEN);
}

/*
 * The rest of a message whose start has come: a patient receiver (the
 * receive thread) waits for it whatever the idle timeout says.
 */
static int recv_rest(struct socket *sock, void *buf, u32 len, bool patient)
{
	int err;

	do {
		err = pohmel_conn_recv_msg(sock, buf, len, patient);
	} while (err == -EAGAIN && patient);
	return err;
}

/*
 * Receive one message's header into @h, checked against @max_msg. On a
 * sealed connection the whole record is received and opened: *@src then
 * points at the payload, in the receive buffer until the next call; on a
 * plain one *@src is NULL and the payload is still on the socket.
 * -EPROTO for a malformed record or message, -EBADMSG for a record that
 * fails its tag; both mean the stream cannot be trusted any more.
 */
int pohmel_seal_recv_hdr(struct pohmel_seal *s, struct socket *sock,
			 struct pohmel_hdr *h, const u8 **src, u32 max_msg,
			 bool patient)
{
	struct seal_dir *d;
	u32 len;
	int err;

	*src = NULL;
	if (!s) {
		err = pohmel_conn_recv_msg(sock, h, sizeof(*h), patient);
		if (err)
			return err;
	} else {
		d = &s->rx;
		err = pohmel_conn_recv_msg(sock, d->buf, POHMEL_HDR_SIZE,
					   patient);
		if (err)
			return err;
		if (outer_ok((struct pohmel_hdr *)d->buf, max_msg))
			return -EPROTO;
		len = be32_to_cpu(((struct pohmel_hdr *)d->buf)->len);
		err = recv_rest(sock, d->buf + POHMEL_HDR_SIZE, len, patient);
		if (err)
			return err;
		err = seal_open(s);
		if (err)
			return err;
		memcpy(h, d->buf + POHMEL_HDR_SIZE, sizeof(*h));
		*src = d->buf + 2 * POHMEL_HDR_SIZE;
	}
	return pohmel_check_hdr(h, max_msg) ? -EPROTO : 0;
}

/*
 * The payload of the message pohmel_seal_recv_hdr received (@src as it
 * gave it) into *@payload (NULL when empty), kvfree() it.
 */
int pohmel_seal_recv_payload(struct socket *sock, const struct pohmel_hdr *h,
			     const u8 *src, u8 **payload, bool patient)
{
	u32 len = be32_to_cpu(h->len);
	int err = 0;
	u8 *buf;

	*payload = NULL;
	if (!len)
		return 0;
	buf = pohmel_msg_alloc(len, 0);
	if (!buf)
		return -ENOMEM;
	if (src)
		memcpy(buf, src, len);
	else
		err = recv_rest(sock, buf, len, patient);
	if (err) {
		kvfree(buf);
		return err;
	}
	*payload = buf;
	return 0;
}

/* Receive one message: pohmel_seal_recv_hdr, then its payload. */
int pohmel_seal_recv(struct pohmel_seal *s, struct socket *sock,
		     struct pohmel_hdr *h, u8 **payload, u32 max_msg,
		     bool patient)
{
	const u8 *src;
	int err;

	*payload = NULL;
	err = pohmel_seal_recv_hdr(s, sock, h, &src, max_msg, patient);
	if (err)
		return err;
	return pohmel_seal_recv_payload(sock, h, src, payload, patient);
}

/* ---- for the self-test (seal_test.c) -------------------------------- */

/* Seal @msg as record number @ctr; returns the record (tx buffer). */
const u8 *pohmel_seal_test_encode(struct pohmel_seal *s, u64 ctr,
				  const void *msg, u32 len)
{
	s->tx.ctr = ctr;
	return seal_encode(s, msg, len, NULL) ? NULL : s->tx.buf;
}

/* Open @rec as record number @ctr; the inner message into *@inner. */
int pohmel_seal_test_decode(struct pohmel_seal *s, u64 ctr, const u8 *rec,
			    u32 reclen, const u8 **inner)
{
	if (reclen < POHMEL_HDR_SIZE || reclen > s->cap)
		return -EMSGSIZE;
	memcpy(s->rx.buf, rec, reclen);
	if (outer_ok((struct pohmel_hdr *)s->rx.buf, s->cap) ||
	    be32_to_cpu(((struct pohmel_hdr *)rec)->len) !=
	    reclen - POHMEL_HDR_SIZE)
		return -EPROTO;
	s->rx.ctr = ctr;
	*inner = s->rx.buf + POHMEL_HDR_SIZE;
	return seal_open(s);
}
