// SPDX-License-Identifier: MIT
/*
 * stats.c - run-time counters, answered to STATS as "name value" lines.
 */
#include "pohmeld.h"

struct stats stats;

static const char *const names[POHMEL_OP_MAX] = {
	[0] = "invalid",
	[POHMEL_OP_HELLO] = "hello", [POHMEL_OP_AUTH] = "auth",
	[POHMEL_OP_PING] = "ping", [POHMEL_OP_LOOKUP] = "lookup",
	[POHMEL_OP_GETATTR] = "getattr", [POHMEL_OP_SETATTR] = "setattr",
	[POHMEL_OP_READDIR] = "readdir", [POHMEL_OP_CREATE] = "create",
	[POHMEL_OP_MKDIR] = "mkdir", [POHMEL_OP_MKNOD] = "mknod",
	[POHMEL_OP_SYMLINK] = "symlink", [POHMEL_OP_READLINK] = "readlink",
	[POHMEL_OP_LINK] = "link", [POHMEL_OP_UNLINK] = "unlink",
	[POHMEL_OP_RMDIR] = "rmdir", [POHMEL_OP_RENAME] = "rename",
	[POHMEL_OP_OPEN] = "open", [POHMEL_OP_CLOSE] = "close",
	[POHMEL_OP_READ] = "read", [POHMEL_OP_WRITE] = "write",
	[POHMEL_OP_FSYNC] = "fsync", [POHMEL_OP_STATFS] = "statfs",
	[POHMEL_OP_GETXATTR] = "getxattr", [POHMEL_OP_SETXATTR] = "setxattr",
	[POHMEL_OP_LISTXATTR] = "listxattr",
	[POHMEL_OP_REMOVEXATTR] = "removexattr", [POHMEL_OP_LOCK] = "lock",
	[POHMEL_OP_BATCH] = "batch", [POHMEL_OP_RECALL] = "recall",
	[POHMEL_OP_RECALL_ACK] = "recall_ack", [POHMEL_OP_BYE] = "bye",
	[POHMEL_OP_STATS] = "stats", [POHMEL_OP_RELEASE] = "release",
	[POHMEL_OP_IDRANGE] = "idrange", [POHMEL_OP_GRANT] = "grant",
};

const char *op_name(unsigned int op)
{
	return op < POHMEL_OP_MAX && names[op] ? names[op] : "unknown";
}

size_t stats_format(char *buf, size_t cap)
{
	size_t n = 0, holders, watched;
	unsigned int i;

#define EMIT(...) do { \
	int k_ = snprintf(buf + n, cap - n, __VA_ARGS__); \
	if (k_ < 0 || (size_t)k_ >= cap - n) \
		return n; \
	n += (size_t)k_; \
} while (0)

	EMIT("clients %d\n", atomic_load(&stats.conns_now));
	EMIT("clients_total %llu\n", (unsigned long long)stats.conns_total);
	EMIT("sessions %d\n", sessions_count());
	EMIT("objects %zu\n", oid_count());
	grants_counts(&holders, &watched);
	EMIT("grants %zu\n", holders);
	EMIT("watches %zu\n", watched);
	EMIT("bytes_read %llu\n", (unsigned long long)stats.bytes_read);
	EMIT("bytes_sendfile %llu\n",
	     (unsigned long long)stats.bytes_sendfile);
	EMIT("bytes_written %llu\n",
	     (unsigned long long)stats.bytes_written);
	EMIT("protocol_errors %llu\n",
	     (unsigned long long)stats.proto_errors);
	EMIT("auth_failures %llu\n", (unsigned long long)stats.auth_failures);
	EMIT("seal_failures %llu\n", (unsigned long long)stats.seal_failures);
	EMIT("keys_revoked %llu\n", (unsigned long long)stats.keys_revoked);
	EMIT("replays %llu\n", (unsigned long long)stats.replays);
	EMIT("sessions_refused %llu\n",
	     (unsigned long long)stats.sessions_refused);
	EMIT("sessions_refused_key %llu\n",
	     (unsigned long long)stats.sessions_refused_key);
	EMIT("sessions_expired %llu\n",
	     (unsigned long long)stats.sessions_expired);
	EMIT("refused %llu\n", (unsigned long long)stats.refused);
	EMIT("refused_max_connections %llu\n",
	     (unsigned long long)stats.refused_max_conns);
	EMIT("refused_per_address %llu\n",
	     (unsigned long long)stats.refused_per_addr);
	EMIT("handshake_timeouts %llu\n",
	     (unsigned long long)stats.handshake_timeouts);
	EMIT("handle_fds %d\n", session_handle_fds());
	EMIT("fd_budget %d\n", srv.fd_budget);
	EMIT("handles_refused_session %llu\n",
	     (unsigned long long)stats.handles_refused_session);
	EMIT("handles_refused_budget %llu\n",
	     (unsigned long long)stats.handles_refused_budget);
	EMIT("locks %ld\n", lock_count());
	EMIT("locks_refused_session %llu\n",
	     (unsigned long long)stats.locks_refused_session);
	EMIT("locks_refused_total %llu\n",
	     (unsigned long long)stats.locks_refused_total);
	EMIT("grants_refused_quota %llu\n",
	     (unsigned long long)stats.grants_refused_quota);
	EMIT("outbox_cut_stalled %llu\n",
	     (unsigned long long)stats.outbox_cut_stalled);
	EMIT("outbox_cut_full %llu\n",
	     (unsigned long long)stats.outbox_cut_full);
	EMIT("grants_lease_expired %llu\n",
	     (unsigned long long)stats.grants_lease_expired);
	for (i = 1; i < POHMEL_OP_MAX; i++) {
		unsigned long long ops = stats.ops[i], errs = stats.errors[i];

		if (ops)
			EMIT("op_%s %llu\n", op_name(i), ops);
		if (errs)
			EMIT("err_%s %llu\n", op_name(i), errs);
	}
	return n;
#undef EMIT
}
