// SPDX-License-Identifier: MIT
/*
 * policy.c - the part of the configuration that SIGHUP replaces while
 * clients stay connected: the export's options and allow list, and the
 * key. Each connection takes a reference when it is accepted and keeps
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

struct policy *policy_new(const struct export_cfg *ex, const uint8_t *key,
			  size_t keylen)
{
	static const char label[] = "pohmeld session owner v1";
	struct policy *p = calloc(1, sizeof(*p));

	if (!p || keylen > sizeof(p->key)) {
		free(p);
		return NULL;
	}
	atomic_init(&p->refs, 1);
	p->ex = *ex;
	memcpy(p->key, key, keylen);
	p->keylen = keylen;
	/* Sessions record who made them (session.c); zeros: no key. */
	if (keylen)
		hmac_sha256(key, keylen, label, sizeof(label) - 1, p->owner);
	return p;
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
	memset(p->key, 0, sizeof(p->key));
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
