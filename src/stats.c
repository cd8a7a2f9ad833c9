// SPDX-License-Identifier: GPL-2.0
/*
 * stats.c - per-mount counters, in /proc/self/mountstats:
 *   device 127.0.0.1:/ mounted on /mnt with fstype pohmel <counters>
 */
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/seq_file.h>
#include <linux/timekeeping.h>

#include "pohmel.h"

static const char * const op_names[POHMEL_OP_MAX] = {
	[POHMEL_OP_HELLO] = "hello",	[POHMEL_OP_AUTH] = "auth",
	[POHMEL_OP_PING] = "ping",	[POHMEL_OP_LOOKUP] = "lookup",
	[POHMEL_OP_GETATTR] = "getattr", [POHMEL_OP_SETATTR] = "setattr",
	[POHMEL_OP_READDIR] = "readdir", [POHMEL_OP_CREATE] = "create",
	[POHMEL_OP_MKDIR] = "mkdir",	[POHMEL_OP_MKNOD] = "mknod",
	[POHMEL_OP_SYMLINK] = "symlink", [POHMEL_OP_READLINK] = "readlink",
	[POHMEL_OP_LINK] = "link",	[POHMEL_OP_UNLINK] = "unlink",
	[POHMEL_OP_RMDIR] = "rmdir",	[POHMEL_OP_RENAME] = "rename",
	[POHMEL_OP_OPEN] = "open",	[POHMEL_OP_CLOSE] = "close",
	[POHMEL_OP_READ] = "read",	[POHMEL_OP_WRITE] = "write",
	[POHMEL_OP_FSYNC] = "fsync",	[POHMEL_OP_STATFS] = "statfs",
	[POHMEL_OP_GETXATTR] = "getxattr", [POHMEL_OP_SETXATTR] = "setxattr",
	[POHMEL_OP_LISTXATTR] = "listxattr",
	[POHMEL_OP_REMOVEXATTR] = "removexattr",
	[POHMEL_OP_LOCK] = "lock",	[POHMEL_OP_BATCH] = "batch",
	[POHMEL_OP_RECALL] = "recall",	[POHMEL_OP_RECALL_ACK] = "recall_ack",
	[POHMEL_OP_BYE] = "bye",	[POHMEL_OP_STATS] = "stats",
	[POHMEL_OP_RELEASE] = "release", [POHMEL_OP_IDRANGE] = "idrange",
	[POHMEL_OP_GRANT] = "grant",
};

/* *max = max(*max, v), lock-free */
void pohmel_update_max(atomic64_t *max, s64 v)
{
	s64 old = atomic64_read(max);

	while (v > old) {
		s64 seen = atomic64_cmpxchg(max, old, v);

		if (seen == old)
			break;
		old = seen;
	}
}

void pohmel_stats_req_end(struct pohmel_conn_stats *cs,
			  const struct pohmel_req *req, int err)
{
	struct pohmel_op_stats *o;
	s64 ns;

	if (!req->t_queued || req->op >= POHMEL_OP_MAX)
		return;
	atomic_dec(&cs->in_flight);
	o = &cs->op[req->op];
	ns = ktime_get_ns() - req->t_queued;
	atomic64_inc(&o->done);
	if (err)
		atomic64_inc(&o->errors);
	atomic64_add(req->slen + req->data.len, &o->bytes_sent);
	if (!err)
		atomic64_add(req->rlen + req->direct, &o->bytes_recv);
	atomic64_add(ns, &o->exec_ns);
	pohmel_update_max(&o->exec_max_ns, ns);
}

#define S(name, v) seq_printf(m, "\t" name ": %lld\n", (long long)atomic64_read(v))

int pohmel_show_stats(struct seq_file *m, struct dentry *root)
{
	struct pohmel_sb_info *sbi = POHMEL_SB(root->d_sb);
	struct pohmel_conn_stats *cs = &sbi->conn.stats;
	struct pohmel_vfs_stats *vs = &sbi->stats;
	int i;

	seq_printf(m, "\n\tproto: %u.%u features: %#llx max_msg: %u connected: %d grants: %d\n",
		   POHMEL_PROTO_MAJOR, POHMEL_PROTO_MINOR,
		   sbi->conn.sess.features, sbi->conn.sess.max_msg,
		   READ_ONCE(sbi->conn.up), pohmel_conn_grants(&sbi->conn));
	seq_printf(m, "\tprotection: %s key: %s\n",
		   pohmel_seal_name(READ_ONCE(sbi->conn.sess.features)),
		   sbi->conn.sess.keylen ? sbi->conn.sess.keyname : "-");
	S("round_trips", &cs->round_trips);
	S("bytes_sent", &cs->bytes_sent);
	S("bytes_recv", &cs->bytes_recv);
	S("bytes_recv_direct", &cs->bytes_recv_direct);
	S("bytes_sent_pages", &cs->bytes_sent_pages);
	S("in_flight_max", &cs->in_flight_max);
	S("reconnects", &cs->reconnects);
	S("replays", &cs->replays);
	S("timeouts", &cs->timeouts);
	S("proto_errors", &cs->proto_errors);
	S("auth_failures", &cs->auth_failures);
	S("seal_failures", &cs->seal_failures);
	S("idle_pings", &cs->idle_pings);
	S("seq_waits", &cs->seq_waits);
	S("recalls", &cs->recalls);
	S("recall_acks", &cs->recall_acks);
	S("grant_releases", &cs->releases);
	S("recall_ack_ns_total", &cs->recall_ns);
	S("recall_ack_ns_max", &cs->recall_max_ns);
	S("recall_drops", &vs->recall_drops);
	S("attr_cache_hits", &vs->attr_hits);
	S("attr_cache_misses", &vs->attr_misses);
	S("dentry_cache_hits", &vs->dentry_hits);
	S("dentry_cache_rcu_hits", &vs->dentry_rcu_hits);
	S("dentry_cache_misses", &vs->dentry_misses);
	S("page_cache_invalidations", &vs->page_invalidations);
	S("bytes_read_cached", &vs->bytes_read);
	S("bytes_written_cached", &vs->bytes_written);
	S("bytes_read_direct", &vs->direct_read);
	S("bytes_written_direct", &vs->direct_written);
	S("open_cache_hits", &vs->open_hits);
	S("open_cache_misses", &vs->open_misses);
	S("readdir_cache_hits", &vs->readdir_hits);
	S("readdir_cache_misses", &vs->readdir_misses);
	S("negative_lookup_hits", &vs->neg_lookup_hits);
	S("dir_relists", &vs->dir_relists);
	S("unstable_pages", &vs->unstable_pages);
	S("commits", &vs->commits);
	S("commit_resends", &vs->commit_resends);
	S("commit_dropped", &vs->commit_dropped);
	S("wb_local", &vs->wb_local);
	S("open_deferred", &vs->open_deferred);
	S("wb_attr_local", &vs->wb_attr_local);
	S("wb_batches", &vs->wb_batches);
	S("wb_settled", &vs->wb_settled);
	S("wb_flushed", &vs->wb_flushed);
	S("wb_errors", &vs->wb_errors);
	S("wb_removed", &vs->wb_removed);
	S("wb_cancelled", &vs->wb_cancelled);
	S("wb_data", &vs->wb_data);
	seq_printf(m, "\tage: %lld\n\tin_flight: %d\n",
		   (long long)(ktime_get_boottime_seconds() - sbi->mounted_at),
		   atomic_read(&cs->in_flight));
	seq_puts(m, "\tops:");
	for (i = 1; i < POHMEL_OP_MAX; i++)
		if (op_names[i])
			seq_printf(m, " %s=%lld", op_names[i],
				   (long long)atomic64_read(&cs->ops[i]));
	seq_putc(m, '\n');
	/*
	 * Per type, as each ended: done errors bytes_sent bytes_recv
	 * exec_us_total exec_us_max (read by pohmelstat(1)).
	 */
	for (i = 1; i < POHMEL_OP_MAX; i++) {
		struct pohmel_op_stats *o = &cs->op[i];
		s64 n = atomic64_read(&o->done);

		if (!op_names[i] || !n)
			continue;
		seq_printf(m, "\top %s: %lld %lld %lld %lld %lld %lld\n",
			   op_names[i], (long long)n,
			   (long long)atomic64_read(&o->errors),
			   (long long)atomic64_read(&o->bytes_sent),
			   (long long)atomic64_read(&o->bytes_recv),
			   (long long)div_s64(atomic64_read(&o->exec_ns), 1000),
			   (long long)div_s64(atomic64_read(&o->exec_max_ns),
					      1000));
	}
	return 0;
}
