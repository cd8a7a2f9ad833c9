/* Minimal TAP output shared by the functional-suite helpers.
 *
 * Counters live in a MAP_SHARED page so forked children (permission tests,
 * lock peers, stress workers) can report checks with one numbering.
 * Every check prints "ok N - name" or "not ok N - name" (+ "# ..." diagnostics);
 * a skip prints "ok N - name # SKIP reason" and is counted separately.
 */
#ifndef SUITE_TAP_H
#define SUITE_TAP_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

void tap_init(void);
/* returns cond (so callers can bail out of dependent checks) */
int tap_check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_skip(const char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* prints the plan "1..N" and returns the exit status (1 on any failure) */
int tap_done(void);
int tap_failed(void);

/* expr must return >= 0 */
#define CHECK_OK(expr, ...) \
	tap_check_ok((long)(expr), #expr, __VA_ARGS__)
/* expr must fail (return -1) with errno == err */
#define CHECK_ERR(expr, err, ...) \
	tap_check_err((long)(expr), (err), 0, #expr, __VA_ARGS__)
/* expr must fail with errno == err or err2 */
#define CHECK_ERR2(expr, err, err2, ...) \
	tap_check_err((long)(expr), (err), (err2), #expr, __VA_ARGS__)

int tap_check_ok(long rc, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int tap_check_err(long rc, int err, int err2, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* helpers */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
char *pjoin(const char *dir, const char *name);	/* static ring of buffers */
int write_file(const char *path, const void *buf, size_t len, int flags, mode_t mode);
/* reads up to cap bytes; returns length or -1 */
ssize_t read_file(const char *path, void *buf, size_t cap);
int file_equals(const char *path, const void *buf, size_t len);
void fill_pattern(unsigned char *buf, size_t len, unsigned long seed, unsigned long off);
int rm_rf(const char *path);
/* run fn(arg) in a child with the given credentials; returns child's
 * exit status (0 = fn returned 0) */
int as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg);
int wait_child(pid_t pid);
unsigned long long now_ns(void);
long long mountstat(const char *mnt, const char *key);
/* xorshift PRNG */
unsigned long long rnd_next(unsigned long long *s);
unsigned long rnd_below(unsigned long long *s, unsigned long n);

#endif
