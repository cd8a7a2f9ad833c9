// SPDX-License-Identifier: MIT
/*
 * config.c - the line-based configuration file (see pohmeld.conf(5)):
 *
 *   # comment
 *   port 7349
 *   key-file /etc/pohmelfs/key
 *   state-dir /var/lib/pohmeld
 *   max-connections 1024
 *   max-connections-per-address 128
 *   handshake-timeout 10
 *   session-timeout 600
 *   max-sessions 1024
 *   max-sessions-per-key 0
 *   grant-lease 10
 *   fd-reserve 64
 *   max-handles-per-session 0
 *   max-locks-per-session 10000
 *   max-grants-per-connection 0
 *   export / /srv/pohmel rw root_squash allow=127.0.0.0/8,::1/128
 *
 * Every error names the file, the line and the problem.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include "pohmeld.h"

void config_defaults(struct config *cf)
{
	memset(cf, 0, sizeof(*cf));
	cf->port = POHMEL_DEFAULT_PORT;
	snprintf(cf->key_file, sizeof(cf->key_file), "/etc/pohmelfs/key");
	snprintf(cf->state_dir, sizeof(cf->state_dir), "/var/lib/pohmeld");
	cf->max_conns = 1024;
	cf->max_conns_per_addr = 128;
	cf->handshake_timeout = 10;
	cf->session_timeout = 600;
	cf->max_sessions = 1024;
	cf->grant_lease = 10;
	cf->fd_reserve = 64;
	cf->max_handles_per_session = 0;	/* min(4096, budget / 8) */
	cf->max_locks_per_session = 10000;	/* a tenth of lock.c's */
	cf->max_grants_per_conn = 0;	/* derived: grants_init() */
	cf->ex.root_squash = true;
	cf->ex.anon_uid = 65534;
	cf->ex.anon_gid = 65534;
}

int cidr_parse(const char *s, struct cidr *c)
{
	char buf[128], *slash, *end;
	long pfx;
	int max;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	memset(c, 0, sizeof(*c));
	if (inet_pton(AF_INET, buf, c->addr) == 1) {
		c->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, c->addr) == 1) {
		c->family = AF_INET6;
		max = 128;
	} else {
		return -1;
	}
	c->prefix = max;
	if (slash) {
		errno = 0;
		pfx = strtol(slash + 1, &end, 10);
		if (errno || *end || end == slash + 1 || pfx < 0 || pfx > max)
			return -1;
		c->prefix = (int)pfx;
	}
	return 0;
}

static bool prefix_eq(const uint8_t *a, const uint8_t *b, int bits)
{
	int full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full))
		return false;
	if (rest) {
		uint8_t m = (uint8_t)(0xff << (8 - rest));

		return (a[full] & m) == (b[full] & m);
	}
	return true;
}

bool cidr_match(const struct cidr *c, const struct sockaddr *sa)
{
	static const uint8_t v4mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const struct sockaddr_in6 *s6 = (const void *)sa;
	const struct sockaddr_in *s4 = (const void *)sa;

	if (sa->sa_family == AF_INET && c->family == AF_INET)
		return prefix_eq(c->addr, (const uint8_t *)&s4->sin_addr,
				 c->prefix);
	if (sa->sa_family != AF_INET6)
		return false;
	if (c->family == AF_INET6)
		return prefix_eq(c->addr, s6->sin6_addr.s6_addr, c->prefix);
	/* An IPv4 client on a dual-stack socket arrives v4-mapped. */
	if (!memcmp(s6->sin6_addr.s6_addr, v4mapped, 12))
		return prefix_eq(c->addr, s6->sin6_addr.s6_addr + 12,
				 c->prefix);
	return false;
}

bool export_allows(const struct export_cfg *ex, const struct sockaddr *sa)
{
	int i;

	if (!ex->nallow)
		return true;
	if (sa->sa_family == AF_UNIX)
		return true;
	for (i = 0; i < ex->nallow; i++)
		if (cidr_match(&ex->allow[i], sa))
			return true;
	return false;
}

static int parse_u32(const char *s, uint32_t *v)
{
	unsigned long x;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	x = strtoul(s, &end, 10);
	if (errno || *end || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static const char *const sec_names[] = { "none", "auth", "seal" };

const char *sec_name(int sec)
{
	return sec >= 0 && sec < (int)ARRAY_SIZE(sec_names) ? sec_names[sec] :
	       "?";
}

/* SEC_NONE, SEC_AUTH, SEC_SEAL; -1 for anything else. */
int sec_parse(const char *s)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sec_names); i++)
		if (!strcmp(s, sec_names[i]))
			return (int)i;
	return -1;
}

/* Whether name is one of names[0..n) (keys=, admin=). */
static bool name_listed(const char names[][POHMEL_KEYNAME_MAX + 1], int n,
			const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/*
 * keys=NAME[,NAME...] (the key names that may use this export) and
 * admin=NAME[,NAME...] (those that may list every session): opt is the
 * option's name, names[*n] the list it fills.
 */
static int key_list(const char *opt, char names[][POHMEL_KEYNAME_MAX + 1],
		    int *n, char *list, char *err, size_t errlen)
{
	char *save = NULL, *k;

	if (*n) {
		snprintf(err, errlen, "'%s=' given twice", opt);
		return -1;
	}
	if (!*list) {
		snprintf(err, errlen, "%s= needs at least one key name", opt);
		return -1;
	}
	for (k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		if (!keyname_valid(k, strlen(k))) {
			snprintf(err, errlen,
				 "%s=: bad key name '%.80s' (1..%d of A-Z a-z 0-9 . _ -)",
				 opt, k, POHMEL_KEYNAME_MAX);
			return -1;
		}
		if (name_listed((const char (*)[POHMEL_KEYNAME_MAX + 1])names,
				*n, k)) {
			snprintf(err, errlen, "%s=: '%s' given twice", opt, k);
			return -1;
		}
		if (*n == MAX_EXPORT_KEYS) {
			snprintf(err, errlen, "more than %d names in %s=",
				 MAX_EXPORT_KEYS, opt);
			return -1;
		}
		strcpy(names[(*n)++], k);
	}
	return 0;
}

/* Is key name one admin= names (none without admin=)? */
bool export_key_admin(const struct export_cfg *ex, const char *name)
{
	return name_listed(ex->admin, ex->nadmin, name);
}

/* Is key name (1..64 bytes) one keys= lets in (all without keys=)? */
bool export_key_allowed(const struct export_cfg *ex, const char *name)
{
	return !ex->nkeys || name_listed(ex->keys, ex->nkeys, name);
}

/* "/ PATH opt opt..." : everything after the keyword "export". */
int config_export_line(struct export_cfg *ex, char *args, char *err,
		       size_t errlen)
{
	/* Each pair of opposites: the one given first on the line, so a
	 * line saying both ("rw ro") is refused instead of the last one
	 * silently winning. */
	static const char *const pairs[][2] = {
		{ "rw", "ro" }, { "root_squash", "no_root_squash" },
		{ "all_squash", "no_all_squash" },
		{ "trusted_xattrs", "no_trusted_xattrs" },
	};
	const char *given[ARRAY_SIZE(pairs)] = { NULL };
	bool anonuid = false, anongid = false, sec_given = false;
	char *save = NULL, *name, *path, *opt;
	size_t i;

	name = strtok_r(args, " \t", &save);
	path = strtok_r(NULL, " \t", &save);
	if (!name || !path) {
		snprintf(err, errlen, "export needs a name and a directory");
		return -1;
	}
	if (strcmp(name, "/")) {
		snprintf(err, errlen,
			 "export name '%s': only '/' is supported (the protocol has one export)",
			 name);
		return -1;
	}
	if (path[0] != '/' || strlen(path) >= sizeof(ex->path)) {
		snprintf(err, errlen, "export directory '%s' must be an absolute path",
			 path);
		return -1;
	}
	strcpy(ex->path, path);
	while ((opt = strtok_r(NULL, " \t", &save))) {
		for (i = 0; i < ARRAY_SIZE(pairs); i++) {
			if (strcmp(opt, pairs[i][0]) &&
			    strcmp(opt, pairs[i][1]))
				continue;
			if (given[i] && strcmp(given[i], opt)) {
				snprintf(err, errlen,
					 "export options '%s' and '%s' contradict each other",
					 given[i], opt);
				return -1;
			}
			given[i] = strcmp(opt, pairs[i][0]) ? pairs[i][1] :
				   pairs[i][0];
		}
		if ((!strncmp(opt, "anonuid=", 8) && anonuid) ||
		    (!strncmp(opt, "anongid=", 8) && anongid)) {
			snprintf(err, errlen, "'%.8s' given twice", opt);
			return -1;
		}
		if (!strcmp(opt, "rw")) {
			ex->ro = false;
		} else if (!strcmp(opt, "ro")) {
			ex->ro = true;
		} else if (!strcmp(opt, "root_squash")) {
			ex->root_squash = true;
		} else if (!strcmp(opt, "no_root_squash")) {
			ex->root_squash = false;
		} else if (!strcmp(opt, "all_squash")) {
			ex->all_squash = true;
		} else if (!strcmp(opt, "no_all_squash")) {
			ex->all_squash = false;
		} else if (!strcmp(opt, "trusted_xattrs")) {
			ex->trusted_xattrs = true;
		} else if (!strcmp(opt, "no_trusted_xattrs")) {
			ex->trusted_xattrs = false;
		} else if (!strncmp(opt, "anonuid=", 8)) {
			if (parse_u32(opt + 8, &ex->anon_uid))
				goto bad_value;
			anonuid = true;
		} else if (!strncmp(opt, "anongid=", 8)) {
			if (parse_u32(opt + 8, &ex->anon_gid))
				goto bad_value;
			anongid = true;
		} else if (!strncmp(opt, "allow=", 6)) {
			char *s2 = NULL, *c;

			for (c = strtok_r(opt + 6, ",", &s2); c;
			     c = strtok_r(NULL, ",", &s2)) {
				if (ex->nallow == MAX_ALLOW) {
					snprintf(err, errlen,
						 "more than %d allow= networks",
						 MAX_ALLOW);
					return -1;
				}
				if (cidr_parse(c, &ex->allow[ex->nallow])) {
					snprintf(err, errlen,
						 "bad address/prefix '%s' in allow=",
						 c);
					return -1;
				}
				ex->nallow++;
			}
		} else if (!strncmp(opt, "sec=", 4)) {
			if (sec_given) {
				snprintf(err, errlen, "'sec=' given twice");
				return -1;
			}
			sec_given = true;
			ex->sec = sec_parse(opt + 4);
			if (ex->sec < 0) {
				snprintf(err, errlen,
					 "sec=%s: expected none, auth or seal",
					 opt + 4);
				return -1;
			}
		} else if (!strncmp(opt, "keys=", 5)) {
			if (key_list("keys", ex->keys, &ex->nkeys, opt + 5,
				     err, errlen))
				return -1;
		} else if (!strncmp(opt, "admin=", 6)) {
			if (key_list("admin", ex->admin, &ex->nadmin, opt + 6,
				     err, errlen))
				return -1;
		} else {
			snprintf(err, errlen, "unknown export option '%s'", opt);
			return -1;
		}
	}
	return 0;

bad_value:
	snprintf(err, errlen, "bad number in '%s'", opt);
	return -1;
}

/* The keys that take a number: where it goes and the range allowed. */
static const struct int_key {
	const char *name;
	size_t off;
	uint32_t min, max;
} int_keys[] = {
	{ "port", offsetof(struct config, port), 1, 65535 },
	{ "max-connections", offsetof(struct config, max_conns), 1, 65536 },
	{ "max-connections-per-address",
	  offsetof(struct config, max_conns_per_addr), 0, 65536 },
	{ "handshake-timeout", offsetof(struct config, handshake_timeout),
	  0, 3600 },
	{ "max-sessions", offsetof(struct config, max_sessions), 1, 65536 },
	{ "max-sessions-per-key",
	  offsetof(struct config, max_sessions_per_key), 0, 65536 },
	{ "session-timeout", offsetof(struct config, session_timeout),
	  0, 86400 * 7 },
	{ "fd-reserve", offsetof(struct config, fd_reserve), 0, 1000000 },
	{ "max-handles-per-session",
	  offsetof(struct config, max_handles_per_session), 0, 4096 },
	{ "max-locks-per-session",
	  offsetof(struct config, max_locks_per_session), 1, 100000 },
	{ "max-grants-per-connection",
	  offsetof(struct config, max_grants_per_conn), 0, 1000000 },
	{ "grant-lease", offsetof(struct config, grant_lease), 1, 3600 },
};

static const struct int_key *int_key(const char *kw)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(int_keys); i++)
		if (!strcmp(kw, int_keys[i].name))
			return &int_keys[i];
	return NULL;
}

static int config_line(struct config *cf, char *line, int lineno,
		       char *err, size_t errlen)
{
	char *save = NULL, *kw, *arg, *extra, *dst;
	const struct int_key *ik;
	uint32_t v;

	kw = strtok_r(line, " \t", &save);
	if (!kw)
		return 0;
	if (!strcmp(kw, "export")) {
		if (cf->have_export) {
			snprintf(err, errlen, "only one export is supported");
			return -1;
		}
		cf->have_export = true;
		cf->line_export = lineno;
		return config_export_line(&cf->ex, save ? save : (char *)"",
					  err, errlen);
	}
	arg = strtok_r(NULL, " \t", &save);
	extra = strtok_r(NULL, " \t", &save);
	ik = int_key(kw);
	if (!ik && strcmp(kw, "key-file") && strcmp(kw, "state-dir")) {
		snprintf(err, errlen, "unknown option '%s'", kw);
		return -1;
	}
	if (!arg) {
		snprintf(err, errlen, "'%s' needs a value", kw);
		return -1;
	}
	if (extra) {
		snprintf(err, errlen, "unexpected '%s' after '%s %s'",
			 extra, kw, arg);
		return -1;
	}
	if (ik) {
		if (parse_u32(arg, &v) || v < ik->min || v > ik->max) {
			snprintf(err, errlen, "bad %s '%s'", kw, arg);
			return -1;
		}
		*(int *)((char *)cf + ik->off) = (int)v;
		if (ik->off == offsetof(struct config, port))
			cf->line_port = lineno;
		return 0;
	}
	dst = !strcmp(kw, "key-file") ? cf->key_file : cf->state_dir;
	if ((arg[0] != '/' && (dst != cf->key_file || strcmp(arg, "none"))) ||
	    strlen(arg) >= sizeof(cf->key_file)) {
		snprintf(err, errlen, "'%s' needs an absolute path", kw);
		return -1;
	}
	strcpy(dst, arg);
	if (dst == cf->key_file) {
		cf->key_file_set = true;
		cf->line_key = lineno;
	} else {
		cf->line_state = lineno;
	}
	return 0;
}

int config_load(struct config *cf, const char *path, char *err,
		size_t errlen)
{
	char line[8192], msg[512];
	int lineno = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(cf->file, sizeof(cf->file), "%s", path);
	while (fgets(line, sizeof(line), f)) {
		char *hash;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path,
				 lineno);
			goto err_close;
		}
		line[strcspn(line, "\r\n")] = 0;
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		if (config_line(cf, line, lineno, msg, sizeof(msg))) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
			goto err_close;
		}
	}
	fclose(f);
	return 0;

err_close:
	fclose(f);
	return -1;
}

/*
 * Where a setting came from, as a message prefix: "FILE:LINE: " for a
 * config line, "-k: " for the command line (line -1 with opt), "" for a
 * default.
 */
const char *config_at(const struct config *cf, int line, const char *opt,
		      char *buf, size_t n)
{
	if (line > 0)
		snprintf(buf, n, "%s:%d: ", cf->file, line);
	else if (line < 0)
		snprintf(buf, n, "%s: ", opt);
	else
		buf[0] = 0;
	return buf;
}

/*
 * The numbers SIGHUP cannot change (sockets, tables and budgets sized at
 * start): the names of those that differ between a and b, as
 * " name name", into buf; 0 if none.
 */
int config_restart_only(const struct config *a, const struct config *b,
			char *buf, size_t n)
{
	size_t i, len = 0;
	int diff = 0;

	buf[0] = 0;
	for (i = 0; i < ARRAY_SIZE(int_keys); i++) {
		if (*(const int *)((const char *)a + int_keys[i].off) ==
		    *(const int *)((const char *)b + int_keys[i].off))
			continue;
		diff++;
		if (len < n)
			len += (size_t)snprintf(buf + len, n - len, " %s",
						int_keys[i].name);
	}
	return diff;
}
