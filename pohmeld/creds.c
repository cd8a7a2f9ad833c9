// SPDX-License-Identifier: MIT
/*
 * creds.c - run a request with the caller's credentials.
 *
 * Linux keeps fsuid, fsgid and the supplementary groups per thread at the
 * syscall level; glibc's setgroups() broadcasts to every thread (POSIX
 * says credentials are per process), so the raw syscall is used. Dropping
 * fsuid from 0 also clears the filesystem capabilities (DAC override,
 * fowner, ...) from the thread's effective set; going back to 0 restores
 * them, which is why objects are resolved (open_by_handle_at needs
 * CAP_DAC_READ_SEARCH) before creds_enter() and never after.
 *
 * That automatic clearing covers only the filesystem capabilities: a
 * thread serving uid 1000 would still hold CAP_SYS_ADMIN, CAP_SETFCAP,
 * CAP_SYS_RESOURCE and the rest, enough to write trusted.* or
 * security.capability xattrs on any file. So, as knfsd does for a
 * non-root fsuid, creds_enter() empties the thread's effective set for
 * every caller except an unsquashed root (creds.priv), and creds_leave()
 * puts it back from the permitted set, which is never touched. capset(2)
 * on the calling thread is per thread, like the fs ids.
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "pohmeld.h"

void creds_squash(const struct export_cfg *ex, struct creds *cr)
{
	uint32_t i;

	/* Decided before mapping: anonuid=0 must not make a squashed root
	 * privileged. */
	cr->priv = cr->uid == 0 && !ex->all_squash && !ex->root_squash;
	if (ex->all_squash) {
		cr->uid = ex->anon_uid;
		cr->gid = ex->anon_gid;
		cr->ngroups = 0;
		return;
	}
	if (!ex->root_squash)
		return;
	if (cr->uid == 0)
		cr->uid = ex->anon_uid;
	if (cr->gid == 0)
		cr->gid = ex->anon_gid;
	for (i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == 0)
			cr->groups[i] = ex->anon_gid;
}

/* The thread's effective set: emptied, or refilled from permitted. */
static int caps_effective(bool full)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	int i;

	if (syscall(SYS_capget, &h, d))
		return errno;
	for (i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		d[i].effective = full ? d[i].permitted : 0;
	if (syscall(SYS_capset, &h, d))
		return errno;
	return 0;
}

/*
 * The id switches need CAP_SETUID/CAP_SETGID, so the effective set is
 * emptied last, and refilled first on the way back.
 */
/* This thread emptied its effective set in creds_enter(). */
static __thread bool caps_dropped;
/* This thread's ids are the caller's, not the base (creds_enter). */
static __thread bool switched;
/* pohmeld runs as root with no supplementary groups (creds_init). */
static bool base_root;

/*
 * Before any thread: as root, drop the supplementary groups pohmeld was
 * started with, so that every thread's base is fsuid 0, fsgid 0 and no
 * groups, which is what creds_leave() goes back to.
 */
int creds_init(void)
{
	if (geteuid() != 0 || getegid() != 0)
		return 0;
	if (setgroups(0, NULL))
		return errno;
	base_root = true;
	return 0;
}

/*
 * An unsquashed root caller whose groups add nothing to gid 0 runs as
 * the base already: no syscall to switch (8 a request otherwise).
 */
static bool is_base(const struct creds *cr)
{
	uint32_t i;

	if (!base_root || !cr->priv || cr->uid || cr->gid)
		return false;
	for (i = 0; i < cr->ngroups; i++)
		if (cr->groups[i])
			return false;
	return true;
}

int creds_enter(const struct creds *cr)
{
	gid_t g[POHMEL_MAX_GROUPS];
	uint32_t i;

	if (is_base(cr))
		return 0;
	for (i = 0; i < cr->ngroups; i++)
		g[i] = cr->groups[i];
	if (syscall(SYS_setgroups, (size_t)cr->ngroups, g))
		return errno;
	/* setfs*id() cannot report failure; read back to check. */
	setfsgid(cr->gid);
	if ((uint32_t)setfsgid((gid_t)-1) != cr->gid)
		goto err_groups;
	setfsuid(cr->uid);
	if ((uint32_t)setfsuid((uid_t)-1) != cr->uid)
		goto err_gid;
	/* Never run as the caller with powers it must not have. */
	if (!cr->priv) {
		if (caps_effective(false))
			goto err_uid;
		caps_dropped = true;
	}
	switched = true;
	return 0;

err_uid:
	setfsuid(0);
err_gid:
	setfsgid(0);
err_groups:
	syscall(SYS_setgroups, (size_t)0, NULL);
	return EPERM;
}

void creds_leave(void)
{
	int err;

	/* A base request switched nothing: no syscalls. */
	if (!switched)
		return;
	switched = false;
	/* An unsquashed root's request dropped no capabilities. */
	err = caps_dropped ? caps_effective(true) : 0;
	if (err)
		log_err("cannot restore the thread's capabilities: %s",
			strerror(err));
	else
		caps_dropped = false;
	setfsuid(0);
	setfsgid(0);
	syscall(SYS_setgroups, (size_t)0, NULL);
}
