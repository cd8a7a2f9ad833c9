// SPDX-License-Identifier: MIT
/* Config parser: good files, every error names file:line and problem. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>
#include "../pohmeld.h"
#include "tap.h"

struct server srv;	/* config.c's users reference it elsewhere */

static int load(const char *text, struct config *cf, char *err, size_t n)
{
	char path[] = "/tmp/pohmeld-conf-XXXXXX";
	int fd = mkstemp(path), ret;

	if (write(fd, text, strlen(text)) < 0)
		return -2;
	close(fd);
	config_defaults(cf);
	ret = config_load(cf, path, err, n);
	unlink(path);
	/* Keep only "LINE: message" so expectations need no temp name. */
	if (ret) {
		char *colon = strchr(err, ':');

		if (colon)
			memmove(err, colon + 1, strlen(colon));
	}
	return ret;
}

static void bad(const char *text, const char *want)
{
	struct config cf;
	char err[512] = "";

	CHECK(load(text, &cf, err, sizeof(err)) == -1 && !strcmp(err, want),
	      "rejects: %s (got '%s')", want, err);
}

int main(void)
{
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct config cf;
	struct cidr c;
	char err[512];

	CHECK(load("# comment\n\nport 7350\nkey-file /k\nstate-dir /s\n"
		   "export / /srv/x ro all_squash anonuid=7 anongid=8 "
		   "allow=10.0.0.0/8,::1 # trailing\nmax-connections 5\n",
		   &cf, err, sizeof(err)) == 0, "good config parses");
	CHECK(cf.port == 7350 && !strcmp(cf.key_file, "/k") &&
	      cf.key_file_set && !strcmp(cf.state_dir, "/s") &&
	      cf.max_conns == 5, "scalar options");
	CHECK(cf.have_export && !strcmp(cf.ex.path, "/srv/x") && cf.ex.ro &&
	      cf.ex.all_squash && cf.ex.anon_uid == 7 &&
	      cf.ex.anon_gid == 8 && cf.ex.nallow == 2, "export options");
	CHECK(load("export / /a\n", &cf, err, sizeof(err)) == 0 &&
	      cf.ex.root_squash && !cf.ex.ro, "defaults: rw, root_squash");
	CHECK(load("export / /a no_root_squash\n", &cf, err,
		   sizeof(err)) == 0 && !cf.ex.root_squash, "no_root_squash");

	bad("port 1\n\nexprot / /a\n", "3: unknown option 'exprot'");
	bad("port 70000\n", "1: bad port '70000'");
	bad("port\n", "1: 'port' needs a value");
	bad("port 1 2\n", "1: unexpected '2' after 'port 1'");
	bad("export / /a rw bogus\n", "1: unknown export option 'bogus'");
	bad("export /x /a\n",
	    "1: export name '/x': only '/' is supported (the protocol has one export)");
	bad("export / rel\n", "1: export directory 'rel' must be an absolute path");
	bad("export / /a allow=300.1.1.1\n",
	    "1: bad address/prefix '300.1.1.1' in allow=");
	bad("export / /a allow=10.0.0.0/33\n",
	    "1: bad address/prefix '10.0.0.0/33' in allow=");
	bad("export / /a\nexport / /b\n", "2: only one export is supported");
	bad("state-dir relative\n", "1: 'state-dir' needs an absolute path");
	bad("export / /a anonuid=x\n", "1: bad number in 'anonuid=x'");
	bad("grant-lease 0\n", "1: bad grant-lease '0'");
	bad("export / /a rw ro\n",
	    "1: export options 'rw' and 'ro' contradict each other");
	bad("export / /a ro root_squash rw\n",
	    "1: export options 'ro' and 'rw' contradict each other");
	bad("export / /a all_squash no_all_squash\n",
	    "1: export options 'all_squash' and 'no_all_squash' contradict each other");
	bad("export / /a no_trusted_xattrs trusted_xattrs\n",
	    "1: export options 'no_trusted_xattrs' and 'trusted_xattrs' contradict each other");
	bad("export / /a anonuid=1 anonuid=2\n", "1: 'anonuid=' given twice");
	CHECK(load("export / /a ro ro root_squash root_squash\n", &cf, err,
		   sizeof(err)) == 0 && cf.ex.ro,
	      "an option repeated is no contradiction");
	CHECK(load("export / /a\n", &cf, err, sizeof(err)) == 0 &&
	      cf.grant_lease == 10 &&
	      load("grant-lease 3\n", &cf, err, sizeof(err)) == 0 &&
	      cf.grant_lease == 3, "grant-lease: default 10, set 3");
	CHECK(load("export / /a\n", &cf, err, sizeof(err)) == 0 &&
	      cf.handshake_timeout == 10 && cf.max_conns_per_addr == 128 &&
	      load("handshake-timeout 0\nmax-connections-per-address 3\n",
		   &cf, err, sizeof(err)) == 0 &&
	      cf.handshake_timeout == 0 && cf.max_conns_per_addr == 3,
	      "handshake-timeout, max-connections-per-address: defaults "
	      "10, 128; set 0, 3");
	bad("handshake-timeout 3601\n", "1: bad handshake-timeout '3601'");
	bad("handshake-timeout -1\n", "1: bad handshake-timeout '-1'");
	bad("max-connections-per-address x\n",
	    "1: bad max-connections-per-address 'x'");
	bad("handshake-timeout\n", "1: 'handshake-timeout' needs a value");

	CHECK(cidr_parse("192.168.1.0/24", &c) == 0, "cidr v4 parses");
	inet_pton(AF_INET, "192.168.1.77", &s4.sin_addr);
	CHECK(cidr_match(&c, (void *)&s4), "v4 in /24 matches");
	inet_pton(AF_INET, "192.168.2.1", &s4.sin_addr);
	CHECK(!cidr_match(&c, (void *)&s4), "v4 outside /24 does not");
	inet_pton(AF_INET6, "::ffff:192.168.1.9", &s6.sin6_addr);
	CHECK(cidr_match(&c, (void *)&s6), "v4-mapped v6 matches v4 cidr");
	CHECK(cidr_parse("fe80::/10", &c) == 0, "cidr v6 parses");
	inet_pton(AF_INET6, "fe80::1", &s6.sin6_addr);
	CHECK(cidr_match(&c, (void *)&s6), "v6 in /10 matches");
	inet_pton(AF_INET6, "2001::1", &s6.sin6_addr);
	CHECK(!cidr_match(&c, (void *)&s6), "v6 outside does not");
	CHECK(cidr_parse("0.0.0.0/0", &c) == 0 &&
	      cidr_match(&c, (void *)&s4), "/0 matches all v4");
	CHECK(cidr_parse("nonsense", &c) == -1, "garbage cidr rejected");
	return tap_done();
}
