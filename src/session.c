// SPDX-License-Identifier: GPL-2.0
/*
 * session.c - who we are to the server (uuid + boot generation, fixed for
 * the life of the mount, so the server recognises a reconnect as the same
 * session and keeps its reply cache) and the HELLO/AUTH exchange that
 * opens every connection. The server keeps the session across its own
 * restarts too (reply cache and open handles on its disk), so a new
 * server boot_gen changes nothing here: the queue is replayed as after
 * any reconnect, handles included, and the caches revalidate.
 */
#include <crypto/algapi.h>
#include <linux/net.h>
#include <linux/random.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uuid.h>

#include "conn.h"
#include "seal.h"

void pohmel_session_init(struct pohmel_session *s)
{
	generate_random_uuid(s->uuid);
	s->boot_gen = ktime_get_real_ns();
	atomic64_set(&s->next_seq, 0);
}

/*
 * The highest sequence number below which every request has been
 * answered: the server may forget replies up to it.
 */
u64 pohmel_session_acked_seq(struct pohmel_conn *c)
{
	u64 low = atomic64_read(&c->sess.next_seq);
	struct pohmel_req *req;

	spin_lock(&c->lock);
	list_for_each_entry(req, &c->queue, list)
		if (req->seq && req->seq <= low)
			low = req->seq - 1;
	spin_unlock(&c->lock);
	return low;
}

/*
 * A new verifier means the server machine may have lost unstable WRITEs:
 * bump verf_gen so that no FSYNC from now on commits them (they are sent
 * again). Without FEAT_STABLE a new server boot_gen is all we can see.
 */
static void update_verifier(struct pohmel_conn *c,
			    const struct pohmel_hello *reply, u64 feat)
{
	struct pohmel_session *s = &c->sess;
	bool first = !s->server_boot_gen;
	bool changed;

	if (feat & POHMEL_FEAT_STABLE) {
		changed = memcmp(s->verf, reply->uuid, sizeof(s->verf));
		memcpy(s->verf, reply->uuid, sizeof(s->verf));
	} else {
		changed = s->server_boot_gen != be64_to_cpu(reply->boot_gen);
		memset(s->verf, 0, sizeof(s->verf));
	}
	if (changed && !first) {
		atomic_inc(&s->verf_gen);
		pr_notice("%s (%pISpc): server's write verifier changed: writes not yet made stable are sent again\n",
			  c->name, &c->addr);
	}
}

/* Say why the handshake failed (c->why, for the mount's error message). */
static int why(struct pohmel_conn *c, int err, const char *reason)
{
	c->why = reason;
	return err;
}

/* Receive the plain HELLO reply: the whole message, for the transcript. */
static int recv_hello(struct socket *sock, u8 *msg, u32 want_len)
{
	struct pohmel_hdr *h = (struct pohmel_hdr *)msg;
	u32 status;
	int err;

	err = pohmel_conn_recv_all(sock, h, sizeof(*h));
	if (err)
		return err == -EAGAIN ? -ETIMEDOUT : err;
	if (pohmel_check_hdr(h, POHMEL_MAX_MSG) ||
	    be16_to_cpu(h->flags) != POHMEL_HF_REPLY ||
	    be16_to_cpu(h->op) != POHMEL_OP_HELLO || be32_to_cpu(h->tag) != 1)
		return -EPROTO;
	status = be32_to_cpu(h->status);
	if (status)
		return pohmel_status_to_errno(status);
	if (be32_to_cpu(h->len) != want_len)
		return -EPROTO;
	err = pohmel_conn_recv_all(sock, msg + POHMEL_HDR_SIZE, want_len);
	return err == -EAGAIN ? -ETIMEDOUT : err;
}

/* The AUTH reply, through @seal: status, and the root's attributes. */
static int recv_auth(struct pohmel_conn *c, struct socket *sock,
		     struct pohmel_seal *seal)
{
	struct pohmel_hdr h;
	u8 *body;
	int err;

	err = pohmel_seal_recv(seal, sock, &h, &body, POHMEL_MAX_MSG, false);
	if (err == -EAGAIN)
		return -ETIMEDOUT;
	if (err == -EBADMSG) {
		return why(c, -EACCES,
			   "the server's answer to AUTH failed its integrity check: a different key, or tampering on the way");
	}
	if (err)
		return err;
	err = -EPROTO;
	if (be16_to_cpu(h.flags) != POHMEL_HF_REPLY ||
	    be16_to_cpu(h.op) != POHMEL_OP_AUTH || be32_to_cpu(h.tag) != 2)
		goto out;
	if (h.status) {
		err = pohmel_status_to_errno(be32_to_cpu(h.status));
		goto out;
	}
	if (be32_to_cpu(h.len) != POHMEL_ATTR_SIZE ||
	    pohmel_check_attr((const void *)body))
		goto out;
	memcpy(c->sess.root_attr, body, POHMEL_ATTR_SIZE);
	err = 0;
out:
	kvfree(body);
	return err;
}

/* What the reply's features must be, given what we asked for. */
static int check_protection(struct pohmel_conn *c, u64 want, u64 feat)
{
	u64 aead = feat & POHMEL_FEAT_AEAD;

	if (c->sess.keylen && !(feat & POHMEL_FEAT_AUTH))
		return why(c, -EACCES,
			   "the server has no key and cannot prove itself: configure the same key on the server, or mount without key=");
	if (!(want & POHMEL_FEAT_AEAD))
		return 0;
	if (!aead)
		return why(c, -EACCES,
			   "the server does not offer sealed connections (sec=seal or sec=auth): upgrade pohmeld, or mount with sec=none");
	if (aead & (aead - 1))
		return why(c, -EPROTO, "the server chose two ciphers at once");
	if ((want & POHMEL_FEAT_SIGN) != (feat & POHMEL_FEAT_SIGN))
		return why(c, -EACCES,
			   "the server answered sec=auth with another protection");
	return 0;
}

/*
 * HELLO and AUTH on a new socket (pohmel_proto.h, "Authentication and
 * protection"). On success *@sealp is what protects the connection from
 * now on (NULL: nothing), to be installed with @sock.
 */
int pohmel_session_handshake(struct pohmel_conn *c, struct socket *sock,
			     struct pohmel_seal **sealp)
{
	u8 req[POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE + POHMEL_KEYNAME_MAX];
	u8 rep[POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE];
	struct pohmel_session *s = &c->sess;
	struct pohmel_hello *hello = (void *)(req + POHMEL_HDR_SIZE);
	struct pohmel_hello *reply = (void *)(rep + POHMEL_HDR_SIZE);
	struct pohmel_hdr *h = (struct pohmel_hdr *)req;
	u8 auth[POHMEL_HDR_SIZE + POHMEL_AUTH_SIZE];
	u8 mac[POHMEL_MAC_LEN], th[POHMEL_HASH_LEN];
	u8 k_c2s[32], k_s2c[32];
	struct pohmel_seal *seal = NULL;
	u32 reqlen, namelen = s->keylen ? s->keyname_len : 0;
	u64 want = 0, feat;
	int err;

	*sealp = NULL;
	if (s->keylen) {
		want |= POHMEL_FEAT_AUTH | pohmel_seal_offer(s->sec, s->ciphers);
		if (s->sec != POHMEL_SEC_NONE && !(want & POHMEL_FEAT_AEAD) &&
		    s->ciphers != POHMEL_CIPHER_ANY)
			return why(c, -ENOPKG,
				   "this kernel lacks the AEAD cipher= asks for (gcm(aes): CONFIG_CRYPTO_GCM; rfc7539(chacha20,poly1305): CONFIG_CRYPTO_CHACHA20POLY1305)");
		if (s->sec != POHMEL_SEC_NONE && !(want & POHMEL_FEAT_AEAD))
			return why(c, -ENOPKG,
				   "this kernel has neither gcm(aes) nor rfc7539(chacha20,poly1305): enable CONFIG_CRYPTO_GCM or CONFIG_CRYPTO_CHACHA20POLY1305, or mount with sec=none");
	}
	if (c->grants)
		want |= POHMEL_FEAT_GRANTS | POHMEL_FEAT_RELEASE;
	if (!s->proto10)
		want |= POHMEL_FEAT_STABLE | POHMEL_FEAT_FD_ACCESS |
			POHMEL_FEAT_FORGET;
	if (!s->proto10 && c->writeback)
		want |= POHMEL_FEAT_IDRANGE | POHMEL_FEAT_ASK_GRANT |
			POHMEL_FEAT_BATCH | POHMEL_FEAT_WB_DATA;

	reqlen = POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE + namelen;
	memset(req, 0, sizeof(req));
	h->len = cpu_to_be32(POHMEL_HELLO_SIZE + namelen);
	h->op = cpu_to_be16(POHMEL_OP_HELLO);
	h->tag = cpu_to_be32(1);
	hello->magic = cpu_to_be32(POHMEL_MAGIC);
	hello->major = cpu_to_be16(POHMEL_PROTO_MAJOR);
	hello->minor = cpu_to_be16(POHMEL_PROTO_MINOR);
	hello->features = cpu_to_be64(want);
	hello->max_msg = cpu_to_be32(POHMEL_MAX_MSG);
	hello->key_len = cpu_to_be16(namelen);
	memcpy(hello->uuid, s->uuid, sizeof(hello->uuid));
	hello->boot_gen = cpu_to_be64(s->boot_gen);
	get_random_bytes(hello->nonce, sizeof(hello->nonce));
	memcpy(req + POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE, s->keyname, namelen);

	err = pohmel_conn_send_all(sock, req, reqlen);
	if (err)
		return err;
	err = recv_hello(sock, rep, POHMEL_HELLO_SIZE);
	if (err == -EPROTO)
		return why(c, err,
			   "the answer to HELLO is not pohmeld's (wrong port?)");
	if (err == -ECONNRESET || err == -EPIPE)
		return why(c, err,
			   "the server closed the connection at HELLO: pohmeld before 1.3 (upgrade the server first), or it refused us (see its log)");
	if (err == -EOPNOTSUPP && (want & POHMEL_FEAT_STABLE)) {
		/* a 1.0 server refuses bits it does not know: ask again */
		s->proto10 = true;
		return why(c, -EAGAIN,
			   "pohmeld 1.0: without FEAT_STABLE, fsync may not survive a server crash");
	}
	if (err)
		return err;
	feat = be64_to_cpu(reply->features);
	if (be32_to_cpu(reply->magic) != POHMEL_MAGIC ||
	    be16_to_cpu(reply->major) != POHMEL_PROTO_MAJOR ||
	    (feat & ~want))
		return why(c, -EPROTONOSUPPORT,
			   "the server speaks an incompatible protocol version or feature set");
	err = check_protection(c, want, feat);
	if (err)
		return err;
	s->max_msg = min_t(u32, be32_to_cpu(reply->max_msg), POHMEL_MAX_MSG);
	if (s->max_msg < 65536)
		return why(c, -EPROTO,
			   "the server's maximum message size is below 64 KiB");

	memset(auth, 0, sizeof(auth));
	h = (struct pohmel_hdr *)auth;
	h->len = cpu_to_be32(POHMEL_AUTH_SIZE);
	h->op = cpu_to_be16(POHMEL_OP_AUTH);
	h->tag = cpu_to_be32(2);
	h->seq = cpu_to_be64(pohmel_session_acked_seq(c));
	if (feat & POHMEL_FEAT_AUTH) {
		memcpy(mac, reply->mac, sizeof(mac));
		memset(reply->mac, 0, sizeof(reply->mac));
		err = pohmel_sha256_2(req, reqlen, rep, sizeof(rep), th) ?:
		      pohmel_hs_mac(s->key, s->keylen, "pohmel-s", th,
				    reply->mac);
		if (err)
			goto out_keys;
		if (crypto_memneq(mac, reply->mac, POHMEL_MAC_LEN)) {
			atomic64_inc(&c->stats.auth_failures);
			err = why(c, -EACCES,
				  "the server failed to prove it knows our key: the key named by keyname= (or \"default\") differs on the server, or it has no key of that name");
			goto out_keys;
		}
		err = pohmel_hs_mac(s->key, s->keylen, "pohmel-c", th,
				    auth + POHMEL_HDR_SIZE) ?:
		      pohmel_hs_keys(s->key, s->keylen, th, k_c2s, k_s2c);
		if (err)
			goto out_keys;
		seal = pohmel_seal_new(feat, k_c2s, k_s2c, s->max_msg);
		if (IS_ERR(seal)) {
			err = why(c, PTR_ERR(seal),
				  "cannot set up the negotiated cipher");
			goto out_keys;
		}
	}
	err = pohmel_seal_send(seal, sock, auth, sizeof(auth), NULL);
	if (err)
		goto out_seal;
	err = recv_auth(c, sock, seal);
	if (err == -EACCES && !c->why && s->keylen)
		why(c, err,
		    "the server refused our key for this export (keys=, sec= or a session bound to another key: see the server's log)");
	if (err == -EACCES && !c->why)
		why(c, err,
		    "the server requires a key: mount with key= (or keyfile= through mount.pohmel)");
	if (err == -EACCES)
		atomic64_inc(&c->stats.auth_failures);
	if (err)
		goto out_seal;

	if (s->server_boot_gen &&
	    s->server_boot_gen != be64_to_cpu(reply->boot_gen))
		pr_notice("%s (%pISpc): server restarted: replaying what it did not answer\n",
			  c->name, &c->addr);
	update_verifier(c, reply, feat);
	s->server_boot_gen = be64_to_cpu(reply->boot_gen);
	WRITE_ONCE(s->features, feat);
	*sealp = seal;
	seal = NULL;
out_seal:
	pohmel_seal_free(seal);
out_keys:
	memzero_explicit(k_c2s, sizeof(k_c2s));
	memzero_explicit(k_s2c, sizeof(k_s2c));
	return err;
}
