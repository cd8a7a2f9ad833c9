// SPDX-License-Identifier: MIT
/*
 * policy.c - the part of the configuration that SIGHUP replaces while
 * clients stay connected: the export's options and allow list, and the
 * keys. Each connection takes a reference when it is accepted and keeps
 * that policy until it is freed, so a reload never changes the rules
 * under a request in progress and never frees what a thread still
 * reads; new connections get the new one. One mutex guards the pointer
 * swap and the reference taken with it (a reference is taken once per
 * connection, so there is nothing to gain from RCU here).
 */
#include <stdlib.h>
#include "pohmeld.h"

static pthread_mutex_t pol_mu = PTHREAD_MUTEX_INITIALIZER;
static struct policy *current;		/* under pol_mu */

/*
 * Sessions record who made them (session.c): a fingerprint of the key
 * that authenticated, bound to its name as well, so a session is only
 * resumed under the key name that created it. The key named "default"
 * keeps the fingerprint of the single key before 1.3, so that session
 * files written then still load.
 */
static void key_owner(struct keyent *k)
{
	static const char label[] = "pohmeld session owner v1";
	uint8_t msg[sizeof(label) + POHMEL_KEYNAME_MAX];
	size_t n = sizeof(label) - 1, nl = strlen(k->name);

	memcpy(msg, label, n);
	if (strcmp(k->name, "default")) {
		msg[n++] = '/';
		memcpy(msg + n, k->name, nl);
		n += nl;
	}
	hmac_sha256(k->key, k->len, msg, n, k->owner);
}

/* Takes over *keys (emptied, also on failure). */
struct policy *policy_new(const struct export_cfg *ex, struct keyring *keys)
{
	struct policy *p = calloc(1, sizeof(*p));
	int i;

	if (!p) {
		keys_free(keys);
		return NULL;
	}
	atomic_init(&p->refs, 1);
	p->ex = *ex;
	p->keys = *keys;
	memset(keys, 0, sizeof(*keys));
	for (i = 0; i < p->keys.n; i++)
		key_owner(&p->keys.k[i]);
	return p;
}

/* The key name's entry, if it is still in p and the same key. */
bool policy_has_owner(const struct policy *p, const uint8_t owner[32])
{
	int i;

	for (i = 0; i < p->keys.n; i++)
		if (auth_equal(p->keys.k[i].owner, owner, 32))
			return true;
	return false;
}

/* The policy in force, referenced; NULL before the first install. */
struct policy *policy_get(void)
{
	struct policy *p;

	pthread_mutex_lock(&pol_mu);
	p = current;
	if (p)
		atomic_fetch_add(&p->refs, 1);
	pthread_mutex_unlock(&pol_mu);
	return p;
}

void policy_put(struct policy *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	keys_free(&p->keys);
	free(p);
}

/* p (with its reference) is in force from now on; the old one goes when
 * its last connection does. */
void policy_install(struct policy *p)
{
	struct policy *old;

	pthread_mutex_lock(&pol_mu);
	old = current;
	current = p;
	pthread_mutex_unlock(&pol_mu);
	policy_put(old);
}
