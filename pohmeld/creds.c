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

int creds_enter(const struct creds *cr)
{
	gid_t g[POHMEL_MAX_GROUPS];
	uint32_t i;

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
	/* An unsquashed root's request dropped nothing: no syscalls. */
	int err = caps_dropped ? caps_effective(true) : 0;

	if (err)
		log_err("cannot restore the thread's capabilities: %s",
			strerror(err));
	else
		caps_dropped = false;
	setfsuid(0);
	setfsgid(0);
	syscall(SYS_setgroups, (size_t)0, NULL);
}
