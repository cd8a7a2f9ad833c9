// SPDX-License-Identifier: MIT
/*
 * fuzz_msg - libFuzzer target for everything a client's bytes reach:
 * framing (proto_hdr), validation (proto_parse) and dispatch into the
 * handlers, against a throw-away export. The input is a stream of
 * messages on one connection; the first byte chooses whether the
 * connection starts unauthenticated (HELLO/AUTH paths) or authenticated.
 *
 * An oid whose gen is 0 in the first 32 body bytes is given the live gen
 * of its id, so that mutations reach the handlers instead of ESTALE.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include "../pohmeld.h"

struct server srv;
static struct conn *c;
static struct session *sess;
static uint8_t *out;
static char dir[64];

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t uuid[16] = { 1, 2, 3 };
	static struct keyent k = { .name = "default", .len = 32 };
	struct keyring kr = { .n = 1, .cap = 1 };
	struct policy *pol;
	char p[128];
	int sv[2], fd, err;

	(void)argc;
	(void)argv;
	log_level = LOG_ERR;
	snprintf(dir, sizeof(dir), "/var/tmp/pohmel-fuzz-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	snprintf(p, sizeof(p), "%s/export", dir);
	mkdir(p, 0755);
	config_defaults(&srv.cfg);
	srv.cfg.have_export = true;
	srv.cfg.ex.root_squash = false;
	snprintf(srv.cfg.ex.path, sizeof(srv.cfg.ex.path), "%s", p);
	snprintf(srv.cfg.state_dir, sizeof(srv.cfg.state_dir), "%s/state",
		 dir);
	srv.rootfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/export/file", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "data", 4) != 4)
		abort();
	close(fd);
	snprintf(p, sizeof(p), "%s/export/sub", dir);
	mkdir(p, 0755);
	umask(0);
	verifier_init();
	if (srv.rootfd < 0 || oid_init(srv.rootfd, srv.cfg.state_dir))
		abort();
	memset(k.key, 0x42, 32);
	kr.k = malloc(sizeof(k));
	if (!kr.k)
		abort();
	*kr.k = k;
	pol = policy_new(&srv.cfg.ex, &kr);
	if (!pol)
		abort();
	policy_install(pol);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	close(sv[1]);		/* sends fail quietly (EPIPE) */
	c = malloc(sizeof(*c));
	conn_init_struct(c, sv[0], pol);
	snprintf(c->peer, sizeof(c->peer), "fuzz");
	sess = session_attach(uuid, 1, c->peer, c->pol->keys.k[0].owner,
			     "fuzz", &err);
	out = malloc(POHMEL_HDR_SIZE + POHMEL_MAX_MSG);
	return 0;
}

static void fix_gen(uint8_t *raw, uint32_t len)
{
	uint32_t off = POHMEL_HDR_SIZE, at;

	if (get16(raw + 6) & POHMEL_HF_GROUPS) {
		if (len < 8)
			return;
		off += pohmel_groups_size(MIN(get32(raw + off),
					      POHMEL_MAX_GROUPS));
	}
	for (at = off; at + 16 <= POHMEL_HDR_SIZE + len && at < off + 32;
	     at += 16)
		if (get64(raw + at + 8) == 0)
			put64(raw + at + 8, oid_gen_of(get64(raw + at)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[POHMEL_HDR_SIZE + POHMEL_MAX_MSG];
	size_t off = 1;

	if (size < 1)
		return 0;
	c->state = data[0] & 1 ? CONN_AUTHED : CONN_NEW;
	c->max_msg = data[0] & 1 ? POHMEL_MAX_MSG : 4096;
	c->features = POHMEL_FEAT_BATCH | POHMEL_FEAT_AUTH;
	c->sess = sess;
	while (size - off >= POHMEL_HDR_SIZE) {
		uint32_t outlen;
		struct whdr h;
		int ret;

		if (proto_hdr(data + off, &h, c->max_msg) ||
		    h.len > size - off - POHMEL_HDR_SIZE)
			break;
		memcpy(buf, data + off, POHMEL_HDR_SIZE + h.len);
		fix_gen(buf, h.len);
		ret = dispatch(c, buf, POHMEL_HDR_SIZE + h.len, out,
			       POHMEL_HDR_SIZE + c->max_msg, &outlen);
		if (ret != DISPATCH_OK)
			break;
		off += POHMEL_HDR_SIZE + h.len;
	}
	lock_conn_gone(c);	/* waiters hold references to c */
	if (c->sess != sess) {
		if (c->sess)
			session_detach(c->sess);
		c->sess = sess;
	}
	return 0;
}
