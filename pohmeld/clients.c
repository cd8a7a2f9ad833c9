// SPDX-License-Identifier: MIT
/*
 * clients.c - the session listing of STATS (pohmel clients): who is
 * connected, from where, with which key, and what each session holds.
 *
 * It names other clients' addresses and keys, so it is answered only to
 * an administrator: a connection authenticated with a key that admin=
 * names (pohmeld.conf(5)); without a key file there is no authentication
 * at all, and then a client on a loopback address (someone on this host,
 * who could list the connections with ss(8) anyway). Everyone else gets
 * EACCES, logged with the address and key.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pohmeld.h"

/* The most sessions listed: max-sessions is at most 65536, a reply
 * holds what fits (a last "truncated" line says so). */
#define LIST_MAX	65536

static bool loopback(const struct conn *c)
{
	static const uint8_t v6[16] = { [15] = 1 };
	static const uint8_t v4m[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(c->addr, v6, 16))
		return true;
	return !memcmp(c->addr, v4m, 12) && c->addr[12] == 127;
}

bool clients_may_list(const struct conn *c)
{
	static struct ratelimit rl = RATELIMIT_INIT;
	bool keyed = c->pol->keys.n > 0;
	bool ok;

	if (keyed)
		ok = c->key && export_key_admin(&c->pol->ex, c->key->name);
	else
		ok = loopback(c);
	if (!ok)
		log_limited(&rl, LOG_WARNING,
			    "%s: session listing refused (key '%s'): %s", c->peer,
			    c->keyname[0] ? c->keyname : "-",
			    keyed ? "its key is not named by admin=" :
				    "without a key file only loopback clients may list");
	return ok;
}

static int by_sess(const void *a, const void *b)
{
	const struct conn_info *x = a, *y = b;

	return x->sess_id < y->sess_id ? -1 : x->sess_id > y->sess_id;
}

/* The connections of session id (ci sorted by session), as one line's
 * peer=, sec= and grants= (summed). */
static void fmt_peers(char *out, size_t cap, const struct conn_info *ci,
		      int nc, uint64_t id, int *sec, int *grants)
{
	int lo = 0, hi = nc, i;
	size_t n = 0;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (ci[mid].sess_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	out[0] = 0;
	*sec = -1;
	*grants = 0;
	for (i = lo; i < nc && ci[i].sess_id == id; i++) {
		int k = snprintf(out + n, cap - n, "%s%s", n ? "," : "",
				 ci[i].peer);

		if (k > 0 && (size_t)k < cap - n)
			n += (size_t)k;
		*sec = ci[i].sec;
		*grants += ci[i].grants;
	}
	if (!n)
		snprintf(out, cap, "-");
}

/*
 * Appends the listing at buf + n (cap in all); returns the new length,
 * or -ENOMEM. A last "truncated N" line says how many did not fit.
 */
long clients_format(char *buf, size_t n, size_t cap)
{
	struct sess_info *si = NULL;
	struct conn_info *ci = NULL;
	int ns, nc, i, max = srv.cfg.max_sessions;
	size_t lim = cap > 32 ? cap - 32 : 0;	/* room for "truncated" */
	long ret = -ENOMEM;

	if (max > LIST_MAX)
		max = LIST_MAX;
	si = calloc((size_t)max, sizeof(*si));
	/* a session may have several connections for a moment */
	ci = calloc((size_t)max * 2, sizeof(*ci));
	if (!si || !ci)
		goto out_free;
	ns = sessions_info(si, max);
	nc = conns_info(ci, max * 2);
	if (ns < 0 || nc < 0)
		goto out_free;
	qsort(ci, (size_t)nc, sizeof(*ci), by_sess);
	for (i = 0; i < ns; i++) {
		char peers[256];
		int sec, grants, k;

		fmt_peers(peers, sizeof(peers), ci, nc, si[i].id, &sec,
			  &grants);
		k = n < lim ? snprintf(buf + n, lim - n,
			     "session %llu key=%s peer=%s sec=%s conns=%d age=%lld idle=%lld handles=%d locks=%ld grants=%d requests=%llu bytes_in=%llu bytes_out=%llu\n",
			     (unsigned long long)si[i].id, si[i].keyname, peers,
			     sec >= 0 ? sec_name(sec) : "-", si[i].nconns,
			     si[i].age, si[i].idle, si[i].handles,
			     lock_count_session(si[i].id), grants,
			     si[i].requests, si[i].bytes_in, si[i].bytes_out) : -1;
		if (k < 0 || (size_t)k >= lim - n) {
			k = snprintf(buf + n, cap - n, "truncated %d\n",
				     ns - i);
			if (k > 0 && (size_t)k < cap - n)
				n += (size_t)k;
			break;
		}
		n += (size_t)k;
	}
	ret = (long)n;
out_free:
	free(ci);
	free(si);
	return ret;
}
