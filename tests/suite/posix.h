/* Shared state of the posix checker (posix.c, posix_perm.c, posix_misc.c). */
#ifndef SUITE_POSIX_H
#define SUITE_POSIX_H

#include "tap.h"
#include <sys/stat.h>

extern const char *D1, *D2;	/* the same work directory via mount 1 and 2 */
extern int opt_local;		/* --local: plain local directories */
extern int is_root;
extern int fs_tmpfs;		/* D1 lives on tmpfs */
extern int readdir_n;		/* entries for the big readdir test */

/* path of name relative to the work dir on mount 1 / mount 2 */
char *p1(const char *name);
char *p2(const char *name);
/* stat on mount 2 succeeds and matches st1 in ino/mode/nlink/size/uid/gid */
int same_on_m2(const char *name, const struct stat *st1);
/* a feature the local fs lacks: skip when --local, fail otherwise */
void unsupported(int err, const char *what);

void test_perm(void);
void test_xattr_acl(void);
void test_locks(void);
void test_readdir(void);
void test_io(void);		/* O_DIRECT, fsync, mmap, statfs */
void test_bigmsg(void);		/* 1 MiB messages under fragmentation (guest) */
void test_dcache_cap(void);	/* the bound on a kept listing (guest) */

#define UID_A 1000
#define GID_A 1000
#define UID_B 65534
#define GID_B 65534

#endif
