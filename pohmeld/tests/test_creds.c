// SPDX-License-Identifier: MIT
/*
 * test_creds - creds_enter() leaves no effective capability to a caller
 * that is not an unsquashed root, and creds_leave() gives them back.
 * Run as root (the host tier is): otherwise there is nothing to drop.
 */
#include <linux/capability.h>
#include <pthread.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../pohmeld.h"
#include "tap.h"

struct server srv;	/* log.c's users reference it elsewhere */

/* The thread's effective and permitted sets, low 64 bits. */
static void caps(uint64_t *eff, uint64_t *perm)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	syscall(SYS_capget, &h, d);
	*eff = d[0].effective | (uint64_t)d[1].effective << 32;
	*perm = d[0].permitted | (uint64_t)d[1].permitted << 32;
}

#define BIT(c)	((uint64_t)1 << (c))

static void one(const char *what, const char *opts, uint32_t uid,
		bool keeps)
{
	struct export_cfg ex = { .root_squash = true, .anon_uid = 65534,
				 .anon_gid = 65534 };
	struct creds cr = { .uid = uid, .gid = uid };
	uint64_t eff0, perm0, eff, perm;
	char buf[128], err[128];

	snprintf(buf, sizeof(buf), "/ /x %s", opts);
	if (config_export_line(&ex, buf, err, sizeof(err))) {
		CHECK(0, "%s: export line '%s': %s", what, buf, err);
		return;
	}
	caps(&eff0, &perm0);
	creds_squash(&ex, &cr);
	CHECK(creds_enter(&cr) == 0, "%s: creds_enter", what);
	caps(&eff, &perm);
	if (keeps)
		CHECK(eff == eff0 && (eff & BIT(CAP_SYS_ADMIN)),
		      "%s: keeps its capabilities (%#llx)", what,
		      (unsigned long long)eff);
	else
		CHECK(eff == 0, "%s: no effective capability (%#llx)", what,
		      (unsigned long long)eff);
	CHECK(perm == perm0, "%s: permitted set untouched", what);
	CHECK((uint32_t)setfsuid((uid_t)-1) == cr.uid, "%s: fsuid %u", what,
	      cr.uid);
	creds_leave();
	caps(&eff, &perm);
	CHECK(eff == eff0 && setfsuid((uid_t)-1) == 0,
	      "%s: creds_leave restores capabilities and fsuid 0", what);
}

static pthread_barrier_t bar;

/* Started before the main thread enters; looks while it is entered. */
static void *other_thread(void *arg)
{
	uint64_t eff, perm;

	(void)arg;
	pthread_barrier_wait(&bar);
	caps(&eff, &perm);
	pthread_barrier_wait(&bar);
	return (void *)(uintptr_t)(eff != 0);
}

int main(void)
{
	struct creds cr = { .uid = 1000, .gid = 1000 };
	struct export_cfg ex = { .root_squash = true };
	uint64_t eff, perm;
	pthread_t th;
	void *ret;

	caps(&eff, &perm);
	if (!(eff & BIT(CAP_SYS_ADMIN))) {
		CHECK(0, "test_creds runs as root with CAP_SYS_ADMIN");
		return tap_done();
	}
	one("uid 1000", "no_root_squash", 1000, false);
	one("root, no_root_squash", "no_root_squash", 0, true);
	one("root, root_squash", "root_squash", 0, false);
	one("root squashed to anonuid=0", "root_squash anonuid=0 anongid=0",
	    0, false);
	one("root, all_squash anonuid=0", "no_root_squash all_squash anonuid=0",
	    0, false);

	/* Per thread: another thread keeps its powers meanwhile. */
	pthread_barrier_init(&bar, NULL, 2);
	if (pthread_create(&th, NULL, other_thread, NULL)) {
		CHECK(0, "pthread_create");
		return tap_done();
	}
	creds_squash(&ex, &cr);
	CHECK(creds_enter(&cr) == 0, "enter as 1000 on this thread");
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	creds_leave();
	CHECK(pthread_join(th, &ret) == 0 && ret,
	      "another thread keeps its capabilities meanwhile");
	return tap_done();
}
