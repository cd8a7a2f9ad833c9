// SPDX-License-Identifier: MIT
/*
 * verifier.c - the write verifier (POHMEL_FEAT_STABLE): 16 bytes in the
 * HELLO reply that change whenever this machine may have lost writes
 * that were only in its page cache, so that a client knows to send its
 * unstable WRITEs again (as NFS's write verifier).
 *
 * A restart of pohmeld loses nothing the kernel holds (the page cache,
 * the appended state files); a reboot of the machine does. So the
 * verifier is derived from the kernel's boot_id, a random UUID drawn at
 * every boot: SHA-256 of a label and its 16 bytes, cut to 16 (the reply
 * does not hand out the machine's boot_id itself). Without a boot_id (no
 * /proc, a damaged value) it is random for each start of pohmeld: then a
 * restart makes clients resend what they did not FSYNC, which costs
 * time, never data.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "pohmeld.h"

#define BOOT_ID_PATH	"/proc/sys/kernel/random/boot_id"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The UUID text in s (32 hex digits, dashes anywhere, one trailing
 * newline at most) into 16 bytes; -1 if it is anything else. */
static int parse_uuid(const char *s, size_t n, uint8_t out[16])
{
	size_t i, digits = 0;
	int v;

	if (n && s[n - 1] == '\n')
		n--;
	for (i = 0; i < n; i++) {
		if (s[i] == '-')
			continue;
		v = hexval(s[i]);
		if (v < 0 || digits == 32)
			return -1;
		if (digits % 2 == 0)
			out[digits / 2] = (uint8_t)(v << 4);
		else
			out[digits / 2] |= (uint8_t)v;
		digits++;
	}
	return digits == 32 ? 0 : -1;
}

/* 0, or why the boot_id could not be had (errno, or EINVAL). */
static int read_boot_id(const char *path, uint8_t id[16])
{
	char buf[64];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno;
	do {
		n = read(fd, buf, sizeof(buf));
	} while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return errno;
	return parse_uuid(buf, (size_t)n, id) ? EINVAL : 0;
}

/*
 * Sets srv.verifier, once at start. POHMELD_TEST_BOOT_ID names another
 * file to read the boot_id from (tests: an unreadable one shows the
 * fallback).
 */
void verifier_init(void)
{
	static const char label[] = "pohmeld write verifier v1";
	const char *path = getenv("POHMELD_TEST_BOOT_ID");
	struct sha256_ctx h;
	uint8_t id[16], d[32];
	int err, i;
	bool zero = true;

	if (!path)
		path = BOOT_ID_PATH;
	err = read_boot_id(path, id);
	if (!err) {
		sha256_init(&h);
		sha256_update(&h, label, sizeof(label) - 1);
		sha256_update(&h, id, sizeof(id));
		sha256_final(&h, d);
		memcpy(srv.verifier, d, sizeof(srv.verifier));
	} else {
		log_warn("%s: %s: the write verifier is random for this run: clients resend unstable writes after every restart of pohmeld",
			 path, err == EINVAL ? "not a UUID" : strerror(err));
		if (getrandom(srv.verifier, sizeof(srv.verifier), 0) !=
		    (ssize_t)sizeof(srv.verifier)) {
			/* no entropy yet: the clock is unique enough */
			struct timespec t;

			clock_gettime(CLOCK_REALTIME, &t);
			memcpy(srv.verifier, &t, MIN(sizeof(t),
						     sizeof(srv.verifier)));
		}
	}
	/* Zero means "no verifier" in a 1.0 reply: never send it. */
	for (i = 0; i < 16; i++)
		zero &= !srv.verifier[i];
	if (zero)
		srv.verifier[0] = 1;
}
