// SPDX-License-Identifier: MIT
/*
 * libpohmel.c - userspace POHMELFS client library; what the pohmel tool
 * and the host tests use to talk to pohmeld.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include "libpohmel.h"
#include "../pohmeld.h"

int pc_init(struct pc *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->max_msg = POHMEL_MAX_MSG;
	/* bodies are built at sbuf + 1024 (see BODY()) */
	c->sbuf = malloc(1024 + POHMEL_HDR_SIZE + POHMEL_MAX_MSG);
	c->rbuf = malloc(POHMEL_MAX_MSG);
	c->wbuf = malloc(POHMEL_HDR_SIZE + POHMEL_MAX_MSG + REC_OVERHEAD);
	c->ibuf = malloc(POHMEL_HDR_SIZE + POHMEL_MAX_MSG + REC_OVERHEAD);
	if (!c->sbuf || !c->rbuf || !c->wbuf || !c->ibuf) {
		pc_disconnect(c);
		return -ENOMEM;
	}
	return 0;
}

int pc_sec_parse(const char *s)
{
	if (!strcmp(s, "none"))
		return PC_SEC_NONE;
	if (!strcmp(s, "auth"))
		return PC_SEC_AUTH;
	if (!strcmp(s, "seal"))
		return PC_SEC_SEAL;
	return -1;
}

void pc_disconnect(struct pc *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->sbuf);
	free(c->rbuf);
	free(c->wbuf);
	free(c->ibuf);
	c->sbuf = c->rbuf = c->wbuf = c->ibuf = NULL;
	aead_fini(&c->tx);
	aead_fini(&c->rx);
	c->sealed = false;
	memset(c->k_c2s, 0, sizeof(c->k_c2s));
	memset(c->k_s2c, 0, sizeof(c->k_s2c));
}

/*
 * The key named c->keyname if set; else the file's only key, or the
 * one named "default". Sets key, keylen and keyname.
 */
int pc_load_key(struct pc *c, const char *path)
{
	const struct keyent *k = NULL;
	struct keyring kr;

	if (keys_load(path, &kr, c->err, sizeof(c->err)))
		return -EINVAL;
	if (c->keyname[0])
		k = keys_find(&kr, c->keyname, strlen(c->keyname));
	else if (kr.n == 1)
		k = &kr.k[0];
	else
		k = keys_find(&kr, "default", 7);
	if (!k) {
		snprintf(c->err, sizeof(c->err), "%s: no key named '%s'",
			 path, c->keyname[0] ? c->keyname : "default");
		keys_free(&kr);
		return -ENOENT;
	}
	memcpy(c->key, k->key, k->len);
	c->keylen = k->len;
	snprintf(c->keyname, sizeof(c->keyname), "%s", k->name);
	keys_free(&kr);
	return 0;
}

/* Bound every send and receive on the connection (0: no bound). */
int pc_set_timeout(struct pc *c, unsigned int timeout_ms)
{
	struct timeval tv = {
		.tv_sec = timeout_ms / 1000,
		.tv_usec = (timeout_ms % 1000) * 1000,
	};

	c->timeout_ms = timeout_ms;
	if (c->fd < 0)
		return 0;
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv))) {
		int err = errno;

		snprintf(c->err, sizeof(c->err), "setting a timeout: %s",
			 strerror(err));
		return -err;
	}
	return 0;
}

int pc_connect_fd(struct pc *c, int fd)
{
	int one = 1;

	c->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* tests hand in socketpairs and leave timeout_ms 0: nothing to set */
	return c->timeout_ms ? pc_set_timeout(c, c->timeout_ms) : 0;
}

/* "10 s" or "0.250 s" */
static const char *secs(const struct pc *c, char *buf, size_t len)
{
	if (c->timeout_ms % 1000)
		snprintf(buf, len, "%u.%03u s", c->timeout_ms / 1000,
			 c->timeout_ms % 1000);
	else
		snprintf(buf, len, "%u s", c->timeout_ms / 1000);
	return buf;
}

/* SO_RCVTIMEO/SO_SNDTIMEO ran out: say so in the caller's words. */
static int timed_out(struct pc *c, const char *what)
{
	char b[32];

	snprintf(c->err, sizeof(c->err), "no %s within %s (timeout)", what,
		 secs(c, b, sizeof(b)));
	return -ETIMEDOUT;
}

/* connect(2), bounded by c->timeout_ms if set; 0 or an errno. */
static int connect_bounded(struct pc *c, int fd, const struct addrinfo *ai)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int fl, n, err = 0;

	if (!c->timeout_ms)
		return connect(fd, ai->ai_addr, ai->ai_addrlen) ? errno : 0;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		return errno;
	do
		n = poll(&p, 1, (int)MIN(c->timeout_ms, (unsigned int)INT_MAX));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno;
	if (n == 0)
		return ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return errno;
	if (err)
		return err;
	return fcntl(fd, F_SETFL, fl) ? errno : 0;
}

int pc_connect(struct pc *c, const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	char ps[16];
	int fd = -1, err;

	snprintf(ps, sizeof(ps), "%d", port);
	err = getaddrinfo(host, ps, &hints, &res);
	if (err) {
		snprintf(c->err, sizeof(c->err), "%s: %s", host,
			 gai_strerror(err));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		err = connect_bounded(c, fd, ai);
		if (!err)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0 && err == ETIMEDOUT && c->timeout_ms) {
		char b[32];

		snprintf(c->err, sizeof(c->err),
			 "%s:%d: no connection within %s (timeout)", host,
			 port, secs(c, b, sizeof(b)));
		return -ETIMEDOUT;
	}
	if (fd < 0) {
		snprintf(c->err, sizeof(c->err), "%s:%d: %s", host, port,
			 strerror(err ? err : ECONNREFUSED));
		return -(err ? err : ECONNREFUSED);
	}
	return pc_connect_fd(c, fd);
}

bool pc_op_has_seq(uint16_t op)
{
	switch (op) {
	case POHMEL_OP_CREATE: case POHMEL_OP_MKDIR: case POHMEL_OP_MKNOD:
	case POHMEL_OP_SYMLINK: case POHMEL_OP_LINK: case POHMEL_OP_UNLINK:
	case POHMEL_OP_RMDIR: case POHMEL_OP_RENAME: case POHMEL_OP_SETATTR:
	case POHMEL_OP_WRITE: case POHMEL_OP_SETXATTR:
	case POHMEL_OP_REMOVEXATTR: case POHMEL_OP_LOCK:
	case POHMEL_OP_IDRANGE:
		return true;
	}
	return false;
}

int pc_seal(struct pc *c, const void *msg, size_t len, uint8_t *out)
{
	if (!c->sealed || len > POHMEL_HDR_SIZE + (size_t)POHMEL_MAX_MSG)
		return -EINVAL;
	if (c->tx_ctr >= POHMEL_SEAL_MSGS_MAX) {
		snprintf(c->err, sizeof(c->err), "send counter used up");
		return -EPIPE;
	}
	if (rec_seal(&c->tx, c->tx_ctr, c->sign, msg, (uint32_t)len, out)) {
		snprintf(c->err, sizeof(c->err), "sealing failed");
		return -EIO;
	}
	c->tx_ctr++;
	return 0;
}

int pc_send_raw(struct pc *c, const void *buf, size_t len)
{
	int err;

	if (!c->sealed)
		return pc_send_wire(c, buf, len);
	err = pc_seal(c, buf, len, c->wbuf);
	if (err)
		return err;
	return pc_send_wire(c, c->wbuf, len + REC_OVERHEAD);
}

int pc_send_wire(struct pc *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return timed_out(c, "room to send to the server");
		if (n <= 0) {
			snprintf(c->err, sizeof(c->err), "send: %s",
				 strerror(errno));
			return -EPIPE;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pc_send(struct pc *c, uint16_t op, uint32_t tag, uint64_t seq,
	    const void *body, uint32_t blen)
{
	uint32_t g = c->ngroups ? pohmel_groups_size(c->ngroups) : 0, i;
	struct whdr h = {
		.len = g + blen, .op = op, .tag = tag, .seq = seq,
		.uid = c->uid, .gid = c->gid,
		.flags = c->ngroups ? POHMEL_HF_GROUPS : 0,
	};
	uint8_t *p = c->sbuf;

	if ((uint64_t)g + blen > MIN(c->max_msg, POHMEL_MAX_MSG))
		return -EMSGSIZE;
	whdr_put(p, &h);
	if (g) {
		memset(p + POHMEL_HDR_SIZE, 0, g);
		put32(p + POHMEL_HDR_SIZE, c->ngroups);
		for (i = 0; i < c->ngroups; i++)
			put32(p + POHMEL_HDR_SIZE + 4 + 4 * i, c->groups[i]);
	}
	if (blen && body != p + POHMEL_HDR_SIZE + g)
		memmove(p + POHMEL_HDR_SIZE + g, body, blen);
	return pc_send_raw(c, p, POHMEL_HDR_SIZE + g + blen);
}

static int read_full(struct pc *c, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = read(c->fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return timed_out(c, "reply from the server");
		if (r <= 0) {
			snprintf(c->err, sizeof(c->err), "%s",
				 r ? strerror(errno) : "connection closed");
			return -ECONNRESET;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int pc_recall_ack(struct pc *c, const struct pc_recall *r)
{
	uint8_t b[POHMEL_RECALL_SIZE];

	memset(b, 0, sizeof(b));
	woid_put(b, &r->oid);
	put32(b + 16, r->to);
	put64(b + 24, r->recall_id);
	if (++c->tag == 0)
		c->tag = 1;
	return pc_send(c, POHMEL_OP_RECALL_ACK, c->tag, 0, b, sizeof(b));
}

/*
 * The next whole message into c->ibuf: *h its header, its payload at
 * c->ibuf + POHMEL_HDR_SIZE. With the record layer on, a record is
 * read, checked and opened; one that does not open is -EBADMSG.
 */
static int read_msg(struct pc *c, struct whdr *h)
{
	uint8_t *b = c->ibuf;
	uint32_t n;
	int err;

	err = read_full(c, b, POHMEL_HDR_SIZE);
	if (err)
		return err;
	whdr_get(b, h);
	if (!c->sealed) {
		if (h->len > POHMEL_MAX_MSG) {
			snprintf(c->err, sizeof(c->err), "reply too long (%u)",
				 h->len);
			return -EPROTO;
		}
		return read_full(c, b + POHMEL_HDR_SIZE, h->len);
	}
	if (h->flags != POHMEL_HF_SEALED || h->op || h->tag || h->status ||
	    h->seq || h->uid || h->gid) {
		snprintf(c->err, sizeof(c->err), "not a record where one is due");
		return -EPROTO;
	}
	if (h->len < POHMEL_HDR_SIZE + POHMEL_TAG_LEN ||
	    h->len > POHMEL_HDR_SIZE + POHMEL_TAG_LEN + POHMEL_MAX_MSG) {
		snprintf(c->err, sizeof(c->err), "record length %u", h->len);
		return -EPROTO;
	}
	/* n bytes of inner message and a tag follow the outer header */
	n = h->len - POHMEL_TAG_LEN;
	err = read_full(c, b + POHMEL_HDR_SIZE, n + POHMEL_TAG_LEN);
	if (err)
		return err;
	if (rec_open(&c->rx, c->rx_ctr, c->sign, b, n)) {
		snprintf(c->err, sizeof(c->err), "a record does not open");
		return -EBADMSG;
	}
	c->rx_ctr++;
	whdr_get(b + POHMEL_HDR_SIZE, h);
	if (h->len != n - POHMEL_HDR_SIZE) {
		snprintf(c->err, sizeof(c->err), "bad length inside a record");
		return -EPROTO;
	}
	memmove(b, b + POHMEL_HDR_SIZE, n);
	return 0;
}

/* A RECALL (h and its body in ibuf): queue, callback, auto-ack. */
static int take_recall(struct pc *c, const struct whdr *h)
{
	const uint8_t *b = c->ibuf + POHMEL_HDR_SIZE;
	struct pc_recall r;

	if (h->len != POHMEL_RECALL_SIZE || h->tag != 0) {
		snprintf(c->err, sizeof(c->err), "bad RECALL");
		return -EPROTO;
	}
	woid_get(b, &r.oid);
	r.to = get32(b + 16);
	r.recall_id = get64(b + 24);
	if (c->qlen == PC_RECALLS) {
		c->qhead = (c->qhead + 1) % PC_RECALLS;
		c->qlen--;
	}
	c->queue[(c->qhead + c->qlen++) % PC_RECALLS] = r;
	c->recalls_seen++;
	if (c->on_recall)
		c->on_recall(c, &r, c->recall_arg);
	if (c->auto_ack)
		return pc_recall_ack(c, &r);
	return 0;
}

/* One message other than a RECALL (those are taken in on the way);
 * payload beyond cap is dropped. */
int pc_recv(struct pc *c, struct whdr *h, uint8_t *payload, uint32_t cap)
{
	int err;

	for (;;) {
		err = read_msg(c, h);
		if (err)
			return err;
		if (!(h->flags & POHMEL_HF_SERVER && h->op == POHMEL_OP_RECALL))
			break;
		err = take_recall(c, h);
		if (err)
			return err;
	}
	if (cap)
		memcpy(payload, c->ibuf + POHMEL_HDR_SIZE, MIN(cap, h->len));
	return 0;
}

int pc_next_recall(struct pc *c, int timeout_ms, struct pc_recall *r)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	struct whdr h;
	int err;

	while (!c->qlen) {
		int n = poll(&p, 1, timeout_ms);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -ETIMEDOUT;
		if (n < 0)
			return -errno;
		err = read_msg(c, &h);
		if (!err && h.flags & POHMEL_HF_SERVER &&
		    h.op == POHMEL_OP_RECALL)
			err = take_recall(c, &h);
		if (err)
			return err;
	}
	*r = c->queue[c->qhead];
	c->qhead = (c->qhead + 1) % PC_RECALLS;
	c->qlen--;
	return 0;
}

int pc_call_seq(struct pc *c, uint16_t op, uint64_t seq, const void *body,
		uint32_t blen, uint8_t *rep, uint32_t cap, uint32_t *rlen)
{
	uint32_t tag;
	struct whdr h;
	int err;

	if (++c->tag == 0)
		c->tag = 1;
	tag = c->tag;
	err = pc_send(c, op, tag, seq, body, blen);
	if (err)
		return err;
	do {
		err = pc_recv(c, &h, rep, cap);
		if (err)
			return err;
	} while (h.tag != tag || h.flags & POHMEL_HF_SERVER);
	if (!(h.flags & POHMEL_HF_REPLY) || h.op != op) {
		snprintf(c->err, sizeof(c->err), "reply does not match");
		return -EPROTO;
	}
	if (h.status) {
		if (h.len) {
			snprintf(c->err, sizeof(c->err),
				 "error reply with a body");
			return -EPROTO;
		}
		return (int)h.status;
	}
	if (h.len > cap) {
		snprintf(c->err, sizeof(c->err), "reply larger than expected");
		return -EPROTO;
	}
	if (rlen)
		*rlen = h.len;
	return 0;
}

int pc_call(struct pc *c, uint16_t op, const void *body, uint32_t blen,
	    uint8_t *rep, uint32_t cap, uint32_t *rlen)
{
	uint64_t seq = pc_op_has_seq(op) ? ++c->seq : 0;

	return pc_call_seq(c, op, seq, body, blen, rep, cap, rlen);
}

/* ---- typed calls ---- */

static int call_attr(struct pc *c, uint16_t op, uint32_t blen,
		     struct wattr *a)
{
	uint8_t r[POHMEL_ATTR_SIZE];
	uint32_t rl;
	int err = pc_call(c, op, c->sbuf + 1024, blen, r, sizeof(r), &rl);

	if (err)
		return err;
	if (rl != POHMEL_ATTR_SIZE)
		return -EPROTO;
	if (a)
		wattr_get(r, a);
	return 0;
}

/* Bodies are built at sbuf + 1024; pc_send moves them behind the header
 * (and a groups block, at most 136 bytes). */
#define BODY(c) ((c)->sbuf + 1024)

int pc_ping(struct pc *c)
{
	return pc_call(c, POHMEL_OP_PING, NULL, 0, NULL, 0, NULL);
}

int pc_stats_what(struct pc *c, uint32_t what, char *buf, size_t cap)
{
	uint8_t body[POHMEL_STATS_SIZE];
	uint32_t rl;
	int err;

	put32(body, what);
	err = pc_call(c, POHMEL_OP_STATS, what ? body : NULL,
		      what ? sizeof(body) : 0, (uint8_t *)buf,
		      (uint32_t)cap - 1, &rl);
	if (!err)
		buf[rl] = 0;
	return err;
}

int pc_stats(struct pc *c, char *buf, size_t cap)
{
	return pc_stats_what(c, 0, buf, cap);
}

int pc_bye(struct pc *c)
{
	return pc_call(c, POHMEL_OP_BYE, NULL, 0, NULL, 0, NULL);
}

int pc_lookup(struct pc *c, const struct woid *dir, const char *name,
	      struct wattr *a)
{
	return call_attr(c, POHMEL_OP_LOOKUP,
			 pc_enc_name_req(BODY(c), dir, name,
					 (uint32_t)strlen(name)), a);
}

int pc_getattr(struct pc *c, const struct woid *o, struct wattr *a)
{
	return call_attr(c, POHMEL_OP_GETATTR, pc_enc_oid(BODY(c), o), a);
}

int pc_setattr(struct pc *c, const struct woid *o, uint32_t valid,
	       uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size,
	       const struct wtime *at, const struct wtime *mt,
	       struct wattr *a)
{
	return call_attr(c, POHMEL_OP_SETATTR,
			 pc_enc_setattr(BODY(c), o, valid, mode, uid, gid,
					size, at, mt), a);
}

/* ftruncate: the size changed through open handle @handle (1.1) */
int pc_setattr_fh(struct pc *c, const struct woid *o, uint64_t size,
		  uint64_t handle, struct wattr *a)
{
	uint32_t n = pc_enc_setattr(BODY(c), o,
				    POHMEL_SET_SIZE | POHMEL_SET_HANDLE, 0, 0,
				    0, size, NULL, NULL);

	put64(BODY(c) + n, handle);
	return call_attr(c, POHMEL_OP_SETATTR, n + POHMEL_SETATTR_FH_SIZE, a);
}

int pc_readdir(struct pc *c, const struct woid *dir, uint64_t cookie,
	       uint32_t maxbytes, pc_dirent_fn fn, void *arg, bool *eof,
	       uint64_t *next)
{
	uint32_t rl, n, i, off;
	uint8_t *r = c->rbuf;
	int err;

	err = pc_call(c, POHMEL_OP_READDIR,
		      BODY(c), pc_enc_readdir(BODY(c), dir, cookie, maxbytes),
		      r, POHMEL_MAX_MSG, &rl);
	if (err)
		return err;
	if (rl < POHMEL_READDIR_REPLY_SIZE)
		return -EPROTO;
	n = get32(r + POHMEL_ATTR_SIZE);
	*eof = get32(r + POHMEL_ATTR_SIZE + 4) & POHMEL_READDIR_EOF;
	*next = cookie;
	for (i = 0, off = POHMEL_READDIR_REPLY_SIZE; i < n; i++) {
		char name[POHMEL_NAME_MAX + 1];
		struct wattr a;
		uint16_t nl;

		if (rl - off < POHMEL_DIRENT_SIZE)
			return -EPROTO;
		wattr_get(r + off, &a);
		*next = get64(r + off + POHMEL_ATTR_SIZE);
		nl = get16(r + off + POHMEL_ATTR_SIZE + 8);
		if (nl > POHMEL_NAME_MAX ||
		    rl - off - POHMEL_DIRENT_SIZE < pad8(nl))
			return -EPROTO;
		memcpy(name, r + off + POHMEL_DIRENT_SIZE, nl);
		name[nl] = 0;
		off += POHMEL_DIRENT_SIZE + pad8(nl);
		if (fn && fn(arg, name, &a, *next))
			return 0;
	}
	return off == rl ? 0 : -EPROTO;
}

int pc_readdir_all(struct pc *c, const struct woid *dir, pc_dirent_fn fn,
		   void *arg)
{
	uint64_t cookie = 0, next;
	bool eof = false;
	int err;

	while (!eof) {
		err = pc_readdir(c, dir, cookie, 65536, fn, arg, &eof, &next);
		if (err)
			return err;
		cookie = next;
	}
	return 0;
}

static int entry_call(struct pc *c, uint16_t op, uint32_t blen,
		      struct wattr *obj, struct wattr *dira)
{
	uint8_t r[POHMEL_ENTRY_REPLY_SIZE];
	uint32_t rl;
	int err = pc_call(c, op, BODY(c), blen, r, sizeof(r), &rl);

	if (err)
		return err;
	if (rl != POHMEL_ENTRY_REPLY_SIZE)
		return -EPROTO;
	if (obj)
		wattr_get(r, obj);
	if (dira)
		wattr_get(r + POHMEL_ATTR_SIZE, dira);
	return 0;
}

int pc_mkobj(struct pc *c, uint16_t op, const struct woid *dir,
	     const char *name, uint32_t mode, uint32_t rdev, uint32_t flags,
	     const char *target, struct wattr *obj, struct wattr *dira)
{
	return entry_call(c, op,
			  pc_enc_create(BODY(c), dir, mode, rdev, flags,
					c->uid, c->gid, name,
					(uint32_t)strlen(name), target,
					target ? (uint32_t)strlen(target) : 0),
			  obj, dira);
}

int pc_readlink(struct pc *c, const struct woid *o, char *buf, size_t cap)
{
	uint32_t rl;
	int err = pc_call(c, POHMEL_OP_READLINK, BODY(c),
			  pc_enc_oid(BODY(c), o), (uint8_t *)buf,
			  (uint32_t)cap - 1, &rl);

	if (!err)
		buf[rl] = 0;
	return err;
}

int pc_link(struct pc *c, const struct woid *obj, const struct woid *dir,
	    const char *name, struct wattr *a)
{
	return entry_call(c, POHMEL_OP_LINK,
			  pc_enc_link(BODY(c), obj, dir, name,
				      (uint32_t)strlen(name)), a, NULL);
}

int pc_remove(struct pc *c, uint16_t op, const struct woid *dir,
	      const char *name)
{
	return call_attr(c, op, pc_enc_name_req(BODY(c), dir, name,
						(uint32_t)strlen(name)), NULL);
}

int pc_rename(struct pc *c, const struct woid *od, const char *on,
	      const struct woid *nd, const char *nn, uint32_t flags,
	      struct wattr *obj)
{
	return entry_call(c, POHMEL_OP_RENAME,
			  pc_enc_rename(BODY(c), od, on, (uint32_t)strlen(on),
					nd, nn, (uint32_t)strlen(nn), flags),
			  obj, NULL);
}

int pc_open(struct pc *c, const struct woid *o, uint32_t flags,
	    uint64_t *handle, struct wattr *a)
{
	uint8_t r[POHMEL_OPEN_REPLY_SIZE];
	uint32_t rl;
	int err = pc_call(c, POHMEL_OP_OPEN, BODY(c),
			  pc_enc_open(BODY(c), o, flags), r, sizeof(r), &rl);

	if (err)
		return err;
	if (rl != POHMEL_OPEN_REPLY_SIZE)
		return -EPROTO;
	if (a)
		wattr_get(r, a);
	*handle = get64(r + POHMEL_ATTR_SIZE);
	return 0;
}

int pc_close(struct pc *c, const struct woid *o, uint64_t handle)
{
	return pc_call(c, POHMEL_OP_CLOSE, BODY(c),
		       pc_enc_handle(BODY(c), o, handle), NULL, 0, NULL);
}

int pc_read(struct pc *c, const struct woid *o, uint64_t handle,
	    uint64_t off, void *buf, uint32_t count, uint32_t *got)
{
	uint8_t *r = c->rbuf;
	uint32_t rl, n;
	int err;

	err = pc_call(c, POHMEL_OP_READ, BODY(c),
		      pc_enc_io(BODY(c), o, handle, off, count, 0, NULL),
		      r, POHMEL_MAX_MSG, &rl);
	if (err)
		return err;
	if (rl < POHMEL_IO_REPLY_SIZE)
		return -EPROTO;
	n = get32(r + POHMEL_ATTR_SIZE);
	if (n > count || rl != POHMEL_IO_REPLY_SIZE + n)
		return -EPROTO;
	memcpy(buf, r + POHMEL_IO_REPLY_SIZE, n);
	*got = n;
	return 0;
}

int pc_write(struct pc *c, const struct woid *o, uint64_t handle,
	     uint64_t off, const void *buf, uint32_t count, uint32_t flags,
	     uint32_t *done)
{
	uint8_t r[POHMEL_IO_REPLY_SIZE];
	uint32_t rl;
	int err;

	if (count > POHMEL_MAX_DATA)
		return -EMSGSIZE;
	err = pc_call(c, POHMEL_OP_WRITE, BODY(c),
		      pc_enc_io(BODY(c), o, handle, off, count, flags, buf),
		      r, sizeof(r), &rl);
	if (err)
		return err;
	if (rl != POHMEL_IO_REPLY_SIZE)
		return -EPROTO;
	if (done)
		*done = get32(r + POHMEL_ATTR_SIZE);
	return 0;
}

int pc_fsync(struct pc *c, const struct woid *o, uint64_t handle,
	     uint32_t flags)
{
	return call_attr(c, POHMEL_OP_FSYNC,
			 pc_enc_fsync(BODY(c), o, handle, flags), NULL);
}

int pc_statfs(struct pc *c, const struct woid *o, struct pc_statfs *s)
{
	uint8_t r[POHMEL_STATFS_SIZE];
	uint32_t rl;
	int err = pc_call(c, POHMEL_OP_STATFS, BODY(c), pc_enc_oid(BODY(c), o),
			  r, sizeof(r), &rl);

	if (err)
		return err;
	if (rl != POHMEL_STATFS_SIZE)
		return -EPROTO;
	s->blocks = get64(r);
	s->bfree = get64(r + 8);
	s->bavail = get64(r + 16);
	s->files = get64(r + 24);
	s->ffree = get64(r + 32);
	s->bsize = get32(r + 40);
	s->namelen = get32(r + 44);
	return 0;
}

static int xattr_read(struct pc *c, uint16_t op, const struct woid *o,
		      const char *name, void *buf, uint32_t cap,
		      uint32_t *len)
{
	uint8_t *r = c->rbuf;
	uint32_t rl, n;
	int err;

	err = pc_call(c, op, BODY(c),
		      pc_enc_xattr(BODY(c), o, 0, cap, name,
				   name ? (uint32_t)strlen(name) : 0, NULL, 0),
		      r, POHMEL_MAX_MSG, &rl);
	if (err)
		return err;
	if (rl < POHMEL_XATTR_REPLY_SIZE)
		return -EPROTO;
	n = get32(r);
	if (cap && (n > cap || rl != POHMEL_XATTR_REPLY_SIZE + n))
		return -EPROTO;
	if (cap)
		memcpy(buf, r + POHMEL_XATTR_REPLY_SIZE, n);
	*len = n;
	return 0;
}

int pc_getxattr(struct pc *c, const struct woid *o, const char *name,
		void *buf, uint32_t cap, uint32_t *len)
{
	return xattr_read(c, POHMEL_OP_GETXATTR, o, name, buf, cap, len);
}

int pc_listxattr(struct pc *c, const struct woid *o, void *buf,
		 uint32_t cap, uint32_t *len)
{
	return xattr_read(c, POHMEL_OP_LISTXATTR, o, NULL, buf, cap, len);
}

int pc_setxattr(struct pc *c, const struct woid *o, const char *name,
		const void *val, uint32_t len, uint32_t flags)
{
	return pc_call(c, POHMEL_OP_SETXATTR, BODY(c),
		       pc_enc_xattr(BODY(c), o, flags, len, name,
				    (uint32_t)strlen(name), val, len),
		       NULL, 0, NULL);
}

int pc_removexattr(struct pc *c, const struct woid *o, const char *name)
{
	return pc_call(c, POHMEL_OP_REMOVEXATTR, BODY(c),
		       pc_enc_xattr(BODY(c), o, 0, 0, name,
				    (uint32_t)strlen(name), NULL, 0),
		       NULL, 0, NULL);
}

int pc_lock(struct pc *c, const struct woid *o, uint64_t owner,
	    uint64_t start, uint64_t len, uint32_t type, uint32_t flags,
	    uint32_t pid, struct pc_lock *test)
{
	uint8_t r[POHMEL_LOCK_SIZE];
	uint32_t rl = 0;
	int err = pc_call(c, POHMEL_OP_LOCK, BODY(c),
			  pc_enc_lock(BODY(c), o, owner, start, len, type,
				      flags, pid), r, sizeof(r), &rl);

	if (err)
		return err;
	if (test) {
		if (rl != POHMEL_LOCK_SIZE)
			return -EPROTO;
		woid_get(r, &test->oid);
		test->owner = get64(r + 16);
		test->start = get64(r + 24);
		test->len = get64(r + 32);
		test->type = get32(r + 40);
		test->flags = get32(r + 44);
		test->pid = get32(r + 48);
	}
	return 0;
}

/* ---- paths ---- */

int pc_walk(struct pc *c, const char *path, struct wattr *a)
{
	char comp[POHMEL_NAME_MAX + 1];
	struct wattr cur = c->root;
	const char *p = path;
	int err;

	while (*p) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if (n > POHMEL_NAME_MAX)
			return ENAMETOOLONG;
		memcpy(comp, p, n);
		comp[n] = 0;
		p += n;
		if (!strcmp(comp, "."))
			continue;
		err = pc_lookup(c, &cur.oid, comp, &cur);
		if (err)
			return err;
	}
	*a = cur;
	return 0;
}

int pc_walk_parent(struct pc *c, const char *path, struct wattr *dir,
		   const char **last)
{
	char buf[4096];
	const char *slash;
	size_t n;

	n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n >= sizeof(buf))
		return ENAMETOOLONG;
	memcpy(buf, path, n);
	buf[n] = 0;
	slash = strrchr(buf, '/');
	*last = path + (slash ? slash - buf + 1 : 0);
	if (!**last || **last == '/')
		return EINVAL;
	if (slash)
		buf[slash - buf] = 0;
	else
		buf[0] = 0;
	return pc_walk(c, buf, dir);
}
