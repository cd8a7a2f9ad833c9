// SPDX-License-Identifier: MIT
/*
 * dispatch.c - from a validated message to its handler and back.
 *
 * Order for every request: connection state (only HELLO/AUTH before
 * authentication), validation result, read-only export, recall of
 * conflicting grants (grants.c; a request that has to wait for acks is
 * re-run on a worker thread, DISPATCH_DEFER), reply cache for
 * non-idempotent requests with a sequence number, then the handler with
 * the caller's squashed credentials, then the reply header.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>
#include "pohmeld.h"

#define F_MOD	0x1	/* changes the export: EROFS on a read-only one */
#define F_SEQ	0x2	/* non-idempotent: executed once per seq */
#define F_REDO	0x4	/* a re-run can tell it was done (op_redo_done) */

struct op_desc {
	int (*fn)(struct req *r);
	unsigned int flags;
};

static int op_ping(struct req *r)
{
	(void)r;
	return 0;
}

static int op_bye(struct req *r)
{
	if (r->s)
		session_end(r->s);
	r->close_after = true;
	return 0;
}

static const struct op_desc ops[POHMEL_OP_MAX] = {
	[POHMEL_OP_PING]	= { op_ping, 0 },
	[POHMEL_OP_LOOKUP]	= { op_lookup, 0 },
	[POHMEL_OP_GETATTR]	= { op_getattr, 0 },
	[POHMEL_OP_SETATTR]	= { op_setattr, F_MOD | F_SEQ },
	[POHMEL_OP_READDIR]	= { op_readdir, 0 },
	[POHMEL_OP_CREATE]	= { op_create, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_MKDIR]	= { op_create, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_MKNOD]	= { op_create, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_SYMLINK]	= { op_create, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_READLINK]	= { op_readlink, 0 },
	[POHMEL_OP_LINK]	= { op_link, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_UNLINK]	= { op_remove, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_RMDIR]	= { op_remove, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_RENAME]	= { op_rename, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_OPEN]	= { op_open, 0 },
	[POHMEL_OP_CLOSE]	= { op_close, 0 },
	[POHMEL_OP_READ]	= { op_read, 0 },
	[POHMEL_OP_WRITE]	= { op_write, F_MOD | F_SEQ },
	[POHMEL_OP_FSYNC]	= { op_fsync, 0 },
	[POHMEL_OP_STATFS]	= { op_statfs, 0 },
	[POHMEL_OP_GETXATTR]	= { op_xattr, 0 },
	[POHMEL_OP_SETXATTR]	= { op_xattr, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_LISTXATTR]	= { op_xattr, 0 },
	[POHMEL_OP_REMOVEXATTR]	= { op_xattr, F_MOD | F_SEQ | F_REDO },
	[POHMEL_OP_LOCK]	= { op_lock, F_SEQ },
	[POHMEL_OP_BYE]		= { op_bye, 0 },
	[POHMEL_OP_STATS]	= { op_stats, 0 },
	[POHMEL_OP_RECALL_ACK]	= { op_recall_ack, 0 },
	[POHMEL_OP_RELEASE]	= { op_release, 0 },
	[POHMEL_OP_IDRANGE]	= { op_idrange, F_SEQ },
	[POHMEL_OP_GRANT]	= { op_grant, 0 },
};

/* Write the reply header in front of r's payload. */
void reply_finish(struct req *r, uint32_t status, uint8_t *hdrp)
{
	struct whdr h = {
		.len = status ? 0 : r->len + (r->rf && r->rf->fd >= 0 ?
					      r->rf->len : 0),
		.op = r->m->hdr.op,
		.flags = POHMEL_HF_REPLY,
		.tag = r->m->hdr.tag,
		.status = status,
		.seq = r->m->hdr.seq,
	};

	whdr_put(hdrp, &h);
	if (status) {
		r->len = 0;
		/* hdr.op is the client's: unknown ops count as op 0. */
		stats.errors[r->m->hdr.op < POHMEL_OP_MAX ?
			     r->m->hdr.op : 0]++;
	}
}

/*
 * r modified object id (one of its write targets): move its change
 * attribute, once per request. Called after the syscall and before the
 * object's attrs go into the reply (attr_put_known), and by run_one for
 * targets whose attrs the reply does not carry. False if not a target
 * or already done.
 */
bool req_bump(struct req *r, uint64_t id)
{
	uint64_t tag, prev;
	bool found = false;
	int i;

	/* GRANT EXCL recalls as a write does, but changes nothing */
	if (r->m->hdr.op == POHMEL_OP_GRANT)
		return false;
	for (i = 0; i < r->ngm; i++)
		if (r->gm[i].write && r->gm[i].id == id && !r->gm[i].bumped)
			found = true;
	if (!found)
		return false;
	tag = change_bump(id, &prev);
	for (i = 0; i < r->ngm; i++) {
		if (!r->gm[i].write || r->gm[i].id != id)
			continue;
		r->gm[i].bumped = true;
		/* Another request's bump since r began: r's own does not
		 * vouch for the object's state (grant_fill). */
		r->gm[i].tag = prev >= r->since ? 0 : tag;
	}
	return true;
}

/* One request (alone or inside a BATCH); reply at out, *outlen bytes. */
static int run_one(struct conn *c, struct session *s, const struct msg *m,
		   int perr, uint8_t *out, uint32_t cap, uint32_t *outlen,
		   bool in_batch, bool may_wait, struct reply_file *rf)
{
	const struct op_desc *d = m->hdr.op < POHMEL_OP_MAX ?
				  &ops[m->hdr.op] : NULL;
	struct req r = {
		.c = c, .s = s, .m = m, .cr = m->cr,
		.out = out + POHMEL_HDR_SIZE, .cap = cap - POHMEL_HDR_SIZE,
		.in_batch = in_batch,
		/* a reply the reply cache keeps must be whole in out */
		.rf = d && !(d->flags & F_SEQ) ? rf : NULL,
	};
	bool cached = false, redo = false;
	uint32_t status;
	int i;

	stats.ops[m->hdr.op < POHMEL_OP_MAX ? m->hdr.op : 0]++;
	if (perr) {
		status = (uint32_t)perr;
		goto out;
	}
	if (!d || !d->fn) {
		status = ENOSYS;
		goto out;
	}
	if (d->flags & F_MOD && c->pol->ex.ro) {
		status = EROFS;
		goto out;
	}
	/* Recall conflicting grants; waiting is for worker threads. */
	if (grants_begin(&r, may_wait || in_batch) == GRANTS_DEFER) {
		req_drop_pre(&r);	/* re-run anew on a worker */
		return DISPATCH_DEFER;
	}
	if (d->flags & F_SEQ && m->hdr.seq && r.s) {
		switch (session_seq_begin(r.s, m->hdr.seq, d->flags & F_REDO,
					  &status, r.out, &r.len, r.cap)) {
		case SEQ_CACHED:
			stats.replays++;
			cached = true;
			goto out;
		case SEQ_OLD:
			status = POHMEL_ERR_SEQ_OLD;
			goto out;
		case SEQ_INDOUBT:
			redo = true;
			r.redo = true;
			break;
		case SEQ_NEW:
			break;
		}
	}
	creds_squash(&c->pol->ex, &r.cr);
	status = (uint32_t)d->fn(&r);
	if (r.as_caller)
		creds_leave();
	r.as_caller = false;
	if (redo && status) {
		/* pohmeld died running it: did that run take effect? */
		status = (uint32_t)op_redo_done(&r, (int)status);
		if (r.as_caller)
			creds_leave();
		r.as_caller = false;
		log_info("%s: seq %llu (op %u), in doubt after a restart, re-run: %s",
			 c->peer, (unsigned long long)m->hdr.seq, m->hdr.op,
			 status ? strerror((int)status) : "done");
	}
	/* Even a failed request may have changed something (short write). */
	for (i = 0; i < r.ngm; i++)
		if (r.gm[i].write)
			req_bump(&r, r.gm[i].id);
	if (status)
		r.len = 0;
	if (status && r.rf && r.rf->fd >= 0) {
		close(r.rf->fd);
		r.rf->fd = -1;
	}
	if (d->flags & F_SEQ && m->hdr.seq && r.s && !r.deferred)
		session_seq_end(r.s, m->hdr.seq, status, r.out, r.len);
	else if (d->flags & F_SEQ && m->hdr.seq && r.s)
		/*
		 * A parked LOCK WAIT (lock.c) gives its reply-cache slot
		 * back at once instead of keeping it busy until granted:
		 * a busy slot makes the request 1024 seqs later, which
		 * maps to it, wait in session_seq_begin, and with it the
		 * connection's thread, which then never reads the UNLOCK
		 * that would grant the wait (issue 14 item 6). Nothing
		 * is lost: the waiter still replies with its seq; its
		 * session_seq_end/abort then find the slot not theirs
		 * and do nothing. A replay of the wait (after a
		 * reconnect) runs again: it parks, or is granted at once
		 * if the first wait already was (one owner's locks never
		 * conflict, a re-lock merges), so no lock is doubled;
		 * the old connection's wait goes with that connection.
		 * If the grant raced this and already cached its reply,
		 * the slot is no longer busy and the abort is a no-op.
		 */
		session_seq_abort(r.s, m->hdr.seq);
out:
	req_drop_pre(&r);
	grants_end(&r);
	if (r.deferred) {
		*outlen = 0;
		return DISPATCH_OK;
	}
	if (cached && status)
		r.len = 0;
	reply_finish(&r, status, out);
	*outlen = POHMEL_HDR_SIZE + r.len;
	if (s)
		session_account(s, m->blen, r.len + (r.rf && r.rf->fd >= 0 ?
						     r.rf->len : 0));
	return r.close_after ? DISPATCH_CLOSE : DISPATCH_OK;
}

/*
 * Every refused or failed handshake: logged with the client's address,
 * the key name and why, counted, answered EACCES (sealed, if the record
 * layer has started: a client that cannot open it reports EACCES), and
 * the connection closed.
 */
int auth_refused(struct conn *c, const char *why, uint8_t *out,
		 uint32_t *outlen)
{
	struct whdr h = {
		.op = POHMEL_OP_AUTH, .flags = POHMEL_HF_REPLY,
		.tag = c->auth_tag, .status = EACCES,
	};

	stats.auth_failures++;
	c->hs_refused = true;
	/* Not rate-limited: each costs its sender a handshake (and the
	 * connection limits bound how many run at once). */
	log_warn("%s: authentication refused (key '%s'): %s", c->peer,
		 c->keyname[0] ? c->keyname : "-", why);
	whdr_put(out, &h);
	*outlen = POHMEL_HDR_SIZE;
	return DISPATCH_CLOSE;
}

/* The reply's features: ours AND the client's, at most one AEAD bit
 * (AES-256-GCM preferred), FEAT_SIGN only with one. */
static uint64_t negotiate(uint64_t theirs, uint64_t ours)
{
	uint64_t f = theirs & ours;

	if (f & POHMEL_FEAT_SEAL_AES)
		f &= ~POHMEL_FEAT_SEAL_CHACHA;
	if (!(f & POHMEL_FEAT_AEAD))
		f &= ~POHMEL_FEAT_SIGN;
	return f;
}

/* The key the client named: c->key, or NULL and a random key to make
 * MACs from, so the reply does not tell which names exist. */
static int hello_key(struct conn *c, const char *name, size_t n)
{
	memcpy(c->keyname, name, n);
	c->keyname[n] = 0;
	c->key = n ? keys_find(&c->pol->keys, name, n) : NULL;
	if (c->key)
		return 0;
	return getrandom(c->fake_key, sizeof(c->fake_key), 0) ==
	       sizeof(c->fake_key) ? 0 : -1;
}

static int do_hello(struct conn *c, const struct msg *m, const uint8_t *raw,
		    uint32_t rawlen, uint8_t *out, uint32_t *outlen)
{
	const uint8_t *b = m->body;
	uint64_t feats, ours = POHMEL_FEAT_BATCH | POHMEL_FEAT_GRANTS |
			 POHMEL_FEAT_RELEASE | POHMEL_FEAT_STABLE |
			 POHMEL_FEAT_FD_ACCESS | POHMEL_FEAT_IDRANGE |
			 POHMEL_FEAT_ASK_GRANT | POHMEL_FEAT_FORGET |
			 POHMEL_FEAT_WB_DATA;
	uint8_t *p = out + POHMEL_HDR_SIZE;
	struct req r = { .m = m, .len = POHMEL_HELLO_SIZE };
	uint32_t status = 0, max;
	const uint8_t *key;
	size_t klen;
	uint8_t th[32];

	if (c->state != CONN_NEW || get32(b) != POHMEL_MAGIC)
		return DISPATCH_DROP;
	feats = get64(b + 8);
	max = get32(b + 16);
	memcpy(c->uuid, b + 24, 16);
	c->boot_gen = get64(b + 40);
	memcpy(c->nonce_c, b + 48, POHMEL_NONCE_LEN);
	/* A 1.2 client has no key name (that field was padding). */
	c->v12 = get16(b + 6) < 3;
	if (c->v12 && m->namelen)
		return DISPATCH_DROP;
	if (c->pol->keys.n) {
		ours |= POHMEL_FEAT_AUTH;
		if (!c->v12)
			ours |= POHMEL_FEAT_AEAD | POHMEL_FEAT_SIGN;
	}

	/* Feature bits we do not know are ANDed away, not refused: the
	 * way a newer client meets an older server (pohmel_proto.h). */
	if (get16(b + 4) != POHMEL_PROTO_MAJOR)
		status = EPROTONOSUPPORT;
	else if (max < 4096)
		status = EINVAL;
	else if (c->pol->keys.n && !(feats & POHMEL_FEAT_AUTH))
		status = EACCES;
	if (status) {
		if (status == EACCES) {
			stats.auth_failures++;
			log_warn("%s: authentication refused (key '-'): client has no key",
				 c->peer);
		}
		reply_finish(&r, status, out);
		*outlen = POHMEL_HDR_SIZE;
		return DISPATCH_CLOSE;
	}
	c->features = negotiate(feats, ours);
	if (c->features & POHMEL_FEAT_AUTH &&
	    (c->v12 ? hello_key(c, "default", 7) :
		      hello_key(c, m->name, m->namelen)))
		return DISPATCH_DROP;
	if (c->features & POHMEL_FEAT_GRANTS)
		atomic_fetch_add(&grant_conns, 1);
	c->max_nego = MIN(max, POHMEL_MAX_MSG);
	if (getrandom(c->nonce_s, POHMEL_NONCE_LEN, 0) != POHMEL_NONCE_LEN)
		return DISPATCH_DROP;

	memset(p, 0, POHMEL_HELLO_SIZE);
	put32(p, POHMEL_MAGIC);
	put16(p + 4, POHMEL_PROTO_MAJOR);
	put16(p + 6, POHMEL_PROTO_MINOR);
	put64(p + 8, c->features);
	put32(p + 16, c->max_nego);
	if (c->features & POHMEL_FEAT_STABLE)
		memcpy(p + 24, srv.verifier, sizeof(srv.verifier));
	put64(p + 40, srv.boot_gen);
	memcpy(p + 48, c->nonce_s, POHMEL_NONCE_LEN);
	c->state = CONN_HELLO;
	reply_finish(&r, 0, out);
	*outlen = POHMEL_HDR_SIZE + POHMEL_HELLO_SIZE;
	if (!(c->features & POHMEL_FEAT_AUTH))
		return DISPATCH_OK;

	key = c->key ? c->key->key : c->fake_key;
	klen = c->key ? c->key->len : sizeof(c->fake_key);
	if (c->v12) {
		auth_mac(key, klen, "pohmel-s", c->nonce_c, c->nonce_s,
			 c->uuid, p + HELLO_MAC_OFF);
		auth_mac(key, klen, "pohmel-c", c->nonce_s, c->nonce_c,
			 c->uuid, c->mac_c);
		return DISPATCH_OK;
	}
	/* TH covers the request as sent and this reply, mac still zero. */
	if (auth_th(raw, rawlen, out, th) ||
	    auth_mac13(key, klen, "pohmel-c", th, c->mac_c) ||
	    auth_mac13(key, klen, "pohmel-s", th, p + HELLO_MAC_OFF))
		return DISPATCH_DROP;
	if (c->features & POHMEL_FEAT_AEAD) {
		if (auth_session_keys(key, klen, th, c->k_c2s, c->k_s2c))
			return DISPATCH_DROP;
		c->seal_next = true;	/* after this reply: conn.c */
	}
	memset(th, 0, sizeof(th));
	/* Until AUTH completes, the pre-HELLO message limit stays. */
	return DISPATCH_OK;
}

/* What the connection negotiated, as an export's sec= reads it. */
static int conn_sec(const struct conn *c)
{
	if (!(c->features & POHMEL_FEAT_AEAD))
		return SEC_NONE;
	return c->features & POHMEL_FEAT_SIGN ? SEC_AUTH : SEC_SEAL;
}

static int do_auth(struct conn *c, const struct msg *m, uint8_t *out,
		   uint32_t *outlen)
{
	static const uint8_t zero[32];
	struct req r = { .c = c, .m = m, .out = out + POHMEL_HDR_SIZE,
			 .cap = 4096 };
	const uint8_t *owner = zero;
	struct policy *now;
	char why[128];
	uint32_t status;
	int err = EAGAIN;
	bool gone;

	if (c->state != CONN_HELLO)
		return DISPATCH_DROP;
	c->auth_tag = m->hdr.tag;
	if (c->features & POHMEL_FEAT_AUTH) {
		if (!c->key)
			return auth_refused(c, c->keyname[0] ?
					    "unknown key name" : "no key name",
					    out, outlen);
		if (!auth_equal(c->mac_c, m->body, POHMEL_MAC_LEN))
			return auth_refused(c, "wrong MAC", out, outlen);
		if (!export_key_allowed(&c->pol->ex, c->key->name))
			return auth_refused(c, "key not allowed for the export (keys=)",
					    out, outlen);
		if (conn_sec(c) < c->pol->ex.sec) {
			snprintf(why, sizeof(why),
				 "below the export's minimum: sec=%s negotiated, sec=%s required%s",
				 sec_name(conn_sec(c)),
				 sec_name(c->pol->ex.sec),
				 c->v12 ? " (a 1.2 client)" : "");
			return auth_refused(c, why, out, outlen);
		}
		owner = c->key->owner;
		/* A reload since HELLO may have revoked the key. */
		now = policy_get();
		gone = now && !policy_has_owner(now, owner);
		policy_put(now);
		if (gone)
			return auth_refused(c, "key revoked", out, outlen);
		memcpy(c->owner, owner, sizeof(c->owner));
		atomic_store(&c->keyed, true);
	}
	c->max_msg = c->max_nego;
	c->sess = session_attach(c->uuid, c->boot_gen, c->peer, owner,
				 c->keyname[0] ? c->keyname : "-", &err);
	if (!c->sess && err == EACCES)
		return auth_refused(c, "session bound to another key",
				    out, outlen);
	if (!c->sess) {
		reply_finish(&r, (uint32_t)err, out);
		*outlen = POHMEL_HDR_SIZE;
		return DISPATCH_CLOSE;
	}
	r.s = c->sess;
	c->state = CONN_AUTHED;
	atomic_store(&c->shown_sec, conn_sec(c));
	atomic_store(&c->shown_sess, session_id(c->sess));

	status = (uint32_t)attr_put(&r, srv.rootfd);
	reply_finish(&r, status, out);
	*outlen = POHMEL_HDR_SIZE + r.len;
	log_debug("%s: authenticated (key '%s', sec=%s), session %llu",
		  c->peer, c->keyname[0] ? c->keyname : "-",
		  sec_name(conn_sec(c)),
		  (unsigned long long)session_id(c->sess));
	return DISPATCH_OK;
}

/*
 * BATCH: check the framing of every inner message first (a malformed one
 * makes the whole batch a protocol error), then run them in order. Each
 * inner reply gets what is left of the buffer minus a header's worth for
 * every message after it, so an error reply always fits.
 */
static int do_batch(struct conn *c, struct session *s, const struct msg *m,
		    uint8_t *out, uint32_t cap, uint32_t *outlen)
{
	uint32_t off, n = 0, i, used = POHMEL_HDR_SIZE;
	struct msg *im;
	struct req r = { .m = m };
	struct whdr h;

	for (off = 0; off < m->blen; off += POHMEL_HDR_SIZE + h.len) {
		if (m->blen - off < POHMEL_HDR_SIZE ||
		    proto_hdr(m->body + off, &h, c->max_msg) ||
		    h.len > m->blen - off - POHMEL_HDR_SIZE ||
		    h.op == POHMEL_OP_BATCH || h.op == POHMEL_OP_HELLO ||
		    h.op == POHMEL_OP_AUTH)
			return DISPATCH_DROP;
		n++;
	}
	if (!(c->features & POHMEL_FEAT_BATCH)) {
		reply_finish(&r, ENOSYS, out);
		*outlen = POHMEL_HDR_SIZE;
		return DISPATCH_OK;
	}
	im = malloc(sizeof(*im));
	if (!im)
		return DISPATCH_DROP;
	for (off = 0, i = 0; i < n; i++) {
		uint32_t ilen, reserve = (n - i - 1) * POHMEL_HDR_SIZE;
		int perr;

		whdr_get(m->body + off, &h);
		perr = proto_parse(im, m->body + off, POHMEL_HDR_SIZE + h.len);
		if (perr == PROTO_DROP) {
			free(im);
			return DISPATCH_DROP;
		}
		run_one(c, s, im, perr, out + used, cap - used - reserve,
			&ilen, true, true, NULL);
		used += ilen;
		off += POHMEL_HDR_SIZE + h.len;
	}
	free(im);
	r.len = used - POHMEL_HDR_SIZE;
	reply_finish(&r, 0, out);
	*outlen = used;
	return DISPATCH_OK;
}

static int dispatch_in(struct conn *c, struct session *s, bool may_wait,
		       const uint8_t *raw, uint32_t rawlen, uint8_t *out,
		       uint32_t cap, uint32_t *outlen, struct reply_file *rf)
{
	struct msg m;
	int perr;

	*outlen = 0;
	if (rf)
		rf->fd = -1;
	perr = proto_parse(&m, raw, rawlen);
	if (perr == PROTO_DROP)
		return DISPATCH_DROP;
	if (c->state != CONN_AUTHED && m.hdr.op != POHMEL_OP_HELLO &&
	    m.hdr.op != POHMEL_OP_AUTH)
		return DISPATCH_DROP;
	if (perr && (m.hdr.op == POHMEL_OP_HELLO ||
		     m.hdr.op == POHMEL_OP_AUTH))
		return DISPATCH_DROP;

	switch (m.hdr.op) {
	case POHMEL_OP_HELLO:
		return do_hello(c, &m, raw, rawlen, out, outlen);
	case POHMEL_OP_AUTH:
		return do_auth(c, &m, out, outlen);
	case POHMEL_OP_BATCH:
		if (!perr)
			return do_batch(c, s, &m, out, cap, outlen);
		break;
	}
	return run_one(c, s, &m, perr, out, cap, outlen, false, may_wait, rf);
}

int dispatch(struct conn *c, const uint8_t *raw, uint32_t rawlen,
	     uint8_t *out, uint32_t cap, uint32_t *outlen)
{
	return dispatch_in(c, c->sess, false, raw, rawlen, out, cap, outlen,
			   NULL);
}

/*
 * As dispatch; rf, if not NULL, may be set to bytes of a file that follow
 * the reply (sent by outbox_reply_rf, which closes rf->fd).
 */
int dispatch_rf(struct conn *c, const uint8_t *raw, uint32_t rawlen,
		uint8_t *out, uint32_t cap, uint32_t *outlen,
		struct reply_file *rf)
{
	return dispatch_in(c, c->sess, false, raw, rawlen, out, cap, outlen,
			   rf);
}

int dispatch_wait(struct conn *c, struct session *s, const uint8_t *raw,
		  uint32_t rawlen, uint8_t *out, uint32_t cap,
		  uint32_t *outlen, struct reply_file *rf)
{
	return dispatch_in(c, s, true, raw, rawlen, out, cap, outlen, rf);
}
