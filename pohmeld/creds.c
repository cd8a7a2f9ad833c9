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
 */
#include <errno.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "pohmeld.h"

void creds_squash(const struct export_cfg *ex, struct creds *cr)
{
	uint32_t i;

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
	return 0;

err_gid:
	setfsgid(0);
err_groups:
	syscall(SYS_setgroups, (size_t)0, NULL);
	return EPERM;
}

void creds_leave(void)
{
	setfsuid(0);
	setfsgid(0);
	syscall(SYS_setgroups, (size_t)0, NULL);
}
