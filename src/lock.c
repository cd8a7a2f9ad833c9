// SPDX-License-Identifier: GPL-2.0
/*
 * lock.c - flock and POSIX byte-range locks, decided by the server (so
 * they hold between clients) and recorded locally afterwards (so close
 * and exit release them through the usual VFS paths).
 */
#include <linux/cache.h>
#include <linux/fs.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/siphash.h>

#include "pohmel.h"

/*
 * An owner goes on the wire as an opaque id, never as the kernel address
 * that identifies it here: a keyed hash of the address, under a key drawn
 * when the module loads. Stable for as long as the owner lives, distinct
 * for distinct owners but by a 2^-64 chance, and no use for finding the
 * address without the key. flock owners (open files) and POSIX owners
 * (files_struct, or the file of an OFD lock) hash in separate domains.
 */
static siphash_key_t owner_key __ro_after_init;

enum { OWNER_POSIX = 1, OWNER_FLOCK = 2 };

void __init pohmel_lock_init(void)
{
	get_random_bytes(&owner_key, sizeof(owner_key));
}

static u64 wire_owner(const void *owner, u64 domain)
{
	return siphash_2u64((u64)(uintptr_t)owner, domain, &owner_key);
}

static u32 wire_type(int type)
{
	switch (type) {
	case F_RDLCK:
		return POHMEL_LOCK_RD;
	case F_WRLCK:
		return POHMEL_LOCK_WR;
	default:
		return POHMEL_LOCK_UN;
	}
}

static u64 wire_len(const struct file_lock *fl)
{
	if (fl->fl_end == OFFSET_MAX)
		return 0;
	return fl->fl_end - fl->fl_start + 1;
}

static int server_lock(struct file *file, struct file_lock *fl, u64 owner,
		       u32 flags)
{
	struct inode *inode = file_inode(file);
	struct pohmel_flock wl = {
		.owner = owner,
		.type = wire_type(pohmel_fl_type(fl)),
		.flags = flags,
		.pid = pohmel_fl_pid(fl),
	};
	int err;

	if (!(flags & POHMEL_LOCK_FLOCK)) {
		wl.start = fl->fl_start;
		wl.len = wire_len(fl);
	}
	err = pohmel_rpc_lock(pohmel_conn(inode), &POHMEL_I(inode)->oid, &wl);
	if (err == -EINTR || err == -ERESTARTSYS) {
		/* we gave up while waiting: make sure it is not granted later */
		wl.type = POHMEL_LOCK_UN;
		wl.flags &= ~POHMEL_LOCK_WAIT;
		pohmel_rpc_lock(pohmel_conn(inode), &POHMEL_I(inode)->oid, &wl);
	}
	if (err)
		return err;
	if (flags & POHMEL_LOCK_TEST) {
		if (wl.type == POHMEL_LOCK_UN) {
			pohmel_fl_type(fl) = F_UNLCK;
		} else {
			pohmel_fl_type(fl) = wl.type == POHMEL_LOCK_RD ?
					     F_RDLCK : F_WRLCK;
			fl->fl_start = wl.start;
			fl->fl_end = wl.len ? wl.start + wl.len - 1 :
					      OFFSET_MAX;
			pohmel_fl_pid(fl) = wl.pid;
		}
	}
	return 0;
}

int pohmel_lock(struct file *file, int cmd, struct file_lock *fl)
{
	u64 owner = wire_owner(pohmel_fl_owner(fl), OWNER_POSIX);
	u32 flags = 0;
	int err;

	if (IS_GETLK(cmd))
		return server_lock(file, fl, owner, POHMEL_LOCK_TEST);
	if (IS_SETLKW(cmd))
		flags |= POHMEL_LOCK_WAIT;
	err = server_lock(file, fl, owner, flags);
	if (err && pohmel_fl_type(fl) != F_UNLCK)
		return err;
	/* record it locally; an unlock is always recorded */
	return locks_lock_file_wait(file, fl);
}

int pohmel_flock(struct file *file, int cmd, struct file_lock *fl)
{
	u64 owner = wire_owner(file, OWNER_FLOCK);
	u32 flags = POHMEL_LOCK_FLOCK;
	int err;

	if (pohmel_fl_flags(fl) & FL_SLEEP)
		flags |= POHMEL_LOCK_WAIT;
	err = server_lock(file, fl, owner, flags);
	if (err && pohmel_fl_type(fl) != F_UNLCK)
		return err;
	return locks_lock_file_wait(file, fl);
}
