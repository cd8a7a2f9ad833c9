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

static int send_msg(struct socket *sock, u16 op, u32 tag, u64 seq,
		    const void *body, u32 len)
{
	u8 buf[POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE];
	struct pohmel_hdr *h = (struct pohmel_hdr *)buf;

	memset(h, 0, sizeof(*h));
	h->len = cpu_to_be32(len);
	h->op = cpu_to_be16(op);
	h->tag = cpu_to_be32(tag);
	h->seq = cpu_to_be64(seq);
	memcpy(buf + POHMEL_HDR_SIZE, body, len);
	return pohmel_conn_send_all(sock, buf, POHMEL_HDR_SIZE + len);
}

/* Receive the reply to (op, tag) of exactly @len bytes into @body. */
static int recv_reply(struct socket *sock, u16 op, u32 tag, void *body,
		      u32 len)
{
	struct pohmel_hdr h;
	u32 status;
	int err;

	err = pohmel_conn_recv_all(sock, &h, sizeof(h));
	if (err)
		return err == -EAGAIN ? -ETIMEDOUT : err;
	if (pohmel_check_hdr(&h, POHMEL_MAX_MSG) ||
	    be16_to_cpu(h.flags) != POHMEL_HF_REPLY ||
	    be16_to_cpu(h.op) != op || be32_to_cpu(h.tag) != tag)
		return -EPROTO;
	status = be32_to_cpu(h.status);
	if (status)
		return pohmel_status_to_errno(status);
	if (be32_to_cpu(h.len) != len)
		return -EPROTO;
	err = pohmel_conn_recv_all(sock, body, len);
	return err == -EAGAIN ? -ETIMEDOUT : err;
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
		pr_notice("%pISpc: server's write verifier changed: writes not yet made stable are sent again\n",
			  &c->addr);
	}
}

int pohmel_session_handshake(struct pohmel_conn *c, struct socket *sock)
{
	struct pohmel_session *s = &c->sess;
	struct pohmel_hello hello, reply;
	struct pohmel_auth auth;
	u8 nonce_c[POHMEL_NONCE_LEN], mac[POHMEL_MAC_LEN];
	u8 attr[POHMEL_ATTR_SIZE];
	u64 want = 0, feat;
	int err;

	if (s->keylen)
		want |= POHMEL_FEAT_AUTH;
	if (c->grants)
		want |= POHMEL_FEAT_GRANTS | POHMEL_FEAT_RELEASE;
	if (!s->proto10)
		want |= POHMEL_FEAT_STABLE | POHMEL_FEAT_FD_ACCESS;
	if (!s->proto10 && c->writeback)
		want |= POHMEL_FEAT_IDRANGE | POHMEL_FEAT_ASK_GRANT |
			POHMEL_FEAT_BATCH;
	get_random_bytes(nonce_c, sizeof(nonce_c));
	memset(&hello, 0, sizeof(hello));
	hello.magic = cpu_to_be32(POHMEL_MAGIC);
	hello.major = cpu_to_be16(POHMEL_PROTO_MAJOR);
	hello.minor = cpu_to_be16(POHMEL_PROTO_MINOR);
	hello.features = cpu_to_be64(want);
	hello.max_msg = cpu_to_be32(POHMEL_MAX_MSG);
	memcpy(hello.uuid, s->uuid, sizeof(hello.uuid));
	hello.boot_gen = cpu_to_be64(s->boot_gen);
	memcpy(hello.nonce, nonce_c, sizeof(nonce_c));

	err = send_msg(sock, POHMEL_OP_HELLO, 1, 0, &hello, sizeof(hello));
	if (err)
		return err;
	err = recv_reply(sock, POHMEL_OP_HELLO, 1, &reply, sizeof(reply));
	if (err == -EPROTO)
		c->why = "the answer to HELLO is not pohmeld's (wrong port?)";
	if (err == -EOPNOTSUPP && (want & POHMEL_FEAT_STABLE)) {
		/* a 1.0 server refuses bits it does not know: ask again */
		s->proto10 = true;
		c->why = "pohmeld 1.0: without FEAT_STABLE, fsync may not survive a server crash";
		return -EAGAIN;
	}
	if (err)
		return err;
	feat = be64_to_cpu(reply.features);
	if (be32_to_cpu(reply.magic) != POHMEL_MAGIC ||
	    be16_to_cpu(reply.major) != POHMEL_PROTO_MAJOR ||
	    (feat & ~want)) {
		c->why = "the server speaks an incompatible protocol version or feature set";
		return -EPROTONOSUPPORT;
	}
	if (s->keylen && !(feat & POHMEL_FEAT_AUTH)) {
		c->why = "the server has no key and cannot prove itself: configure the same key on the server, or mount without key=";
		return -EACCES;
	}
	s->max_msg = min_t(u32, be32_to_cpu(reply.max_msg), POHMEL_MAX_MSG);
	if (s->max_msg < 65536) {
		c->why = "the server's maximum message size is below 64 KiB";
		return -EPROTO;
	}
	if (s->server_boot_gen &&
	    s->server_boot_gen != be64_to_cpu(reply.boot_gen))
		pr_notice("%pISpc: server restarted: replaying what it did not answer\n",
			  &c->addr);
	update_verifier(c, &reply, feat);
	s->server_boot_gen = be64_to_cpu(reply.boot_gen);
	WRITE_ONCE(s->features, feat);

	memset(&auth, 0, sizeof(auth));
	if (feat & POHMEL_FEAT_AUTH) {
		err = pohmel_auth_mac(s->key, s->keylen, "pohmel-s", nonce_c,
				      reply.nonce, s->uuid, mac);
		if (err)
			return err;
		if (crypto_memneq(mac, reply.mac, POHMEL_MAC_LEN)) {
			c->why = "the server failed to prove it knows the key: client and server need the same key";
			return -EACCES;
		}
		err = pohmel_auth_mac(s->key, s->keylen, "pohmel-c",
				      reply.nonce, nonce_c, s->uuid, auth.mac);
		if (err)
			return err;
	}
	err = send_msg(sock, POHMEL_OP_AUTH, 2, pohmel_session_acked_seq(c),
		       &auth, sizeof(auth));
	if (err)
		return err;
	err = recv_reply(sock, POHMEL_OP_AUTH, 2, attr, sizeof(attr));
	if (err == -EACCES)
		c->why = s->keylen ? "the server refused our key: client and server need the same key" :
			 "the server requires a key: mount with key= (or keyfile= through mount.pohmel)";
	if (err)
		return err;
	if (pohmel_check_attr((const void *)attr))
		return -EPROTO;
	memcpy(s->root_attr, attr, sizeof(attr));
	return 0;
}
