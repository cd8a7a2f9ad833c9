#!/bin/bash
# restart group (guest only): writers on both mounts keep creating files
# (half fsync'd) while the server is SIGKILLed and started again; afterwards
# every fsync'd file must be intact through both mounts, the writers must
# have carried on without errors, a file held open across the restart must
# keep working, and new operations must work. Then the same once more with
# a clean stop/start. Then fsync and eviction with the server down or
# stopped (restart_durable.c).
# Usage: restart.sh BIN W1 W2 SCRATCH [local]
bin=$1 w1=$2 w2=$3 scratch=$4 local=${5:-}
. "$(dirname "$0")/lib.sh"
if [ -n "$local" ] || [ -z "${POHMEL_SERVER:-}" ]; then
	skip "restart: server kill/restart" "guest only (needs \$POHMEL_SERVER)"
	tap_finish
	exit
fi
server() { $POHMEL_SERVER "$@"; }
replays_all=0

# cycle NAME HOW: HOW is "kill" (SIGKILL) or "stop" (SIGTERM)
cycle() {
	local name=$1 how=$2 p1 p2 p3 rc1 rc2 rc3 i
	mkdir -p "$w1/$name.a" "$w1/$name.b"
	rm -f "$scratch/$name.flag"
	# a file mount 1 holds a grant on (the control: stats send nothing)
	local g0 g1 g2 g3 sz
	echo granted >"$w1/$name.g" && stat "$w1/$name.g" >/dev/null && stat "$w1/$name.g" >/dev/null
	g0=$(mstat "$POHMEL_MNT1" ops)
	stat "$w1/$name.g" >/dev/null
	g1=$(mstat "$POHMEL_MNT1" ops)
	"$bin/restart" hold "$w1/$name.held" "$scratch/$name.flag" >"$scratch/$name.h.out" 2>&1 &
	p3=$!
	"$bin/restart" write "$w1/$name.a" "$scratch/$name.a.log" >"$scratch/$name.a.out" 2>&1 &
	p1=$!
	"$bin/restart" write "$w2/$name.b" "$scratch/$name.b.log" >"$scratch/$name.b.out" 2>&1 &
	p2=$!
	sleep 3
	local rc1_0 rc2_0 rp1_0 rp2_0
	rc1_0=$(mstat "$POHMEL_MNT1" reconnects) rc2_0=$(mstat "$POHMEL_MNT2" reconnects)
	rp1_0=$(mstat "$POHMEL_MNT1" replays) rp2_0=$(mstat "$POHMEL_MNT2" replays)
	check "restart/$name: server $how while writers run" server "$how"
	sleep 2
	check "restart/$name: server start" server start
	sleep 4
	kill -TERM "$p1" "$p2" 2>/dev/null
	touch "$scratch/$name.flag"
	# a writer stuck in the kernel cannot be reaped: give up after 90 s
	for ((i = 0; i < 450; i++)); do
		kill -0 "$p1" 2>/dev/null || kill -0 "$p2" 2>/dev/null ||
			kill -0 "$p3" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$p1" 2>/dev/null || kill -0 "$p2" 2>/dev/null ||
		kill -0 "$p3" 2>/dev/null; then
		fail "restart/$name: writers finish within 90 s of SIGTERM after the restart"
		cat /proc/"$p1"/stack /proc/"$p2"/stack /proc/"$p3"/stack 2>/dev/null | diag "$(cat)"
		kill -KILL "$p1" "$p2" "$p3" 2>/dev/null
		return
	fi
	wait "$p3"
	rc3=$?
	[ "$rc3" = 0 ] && pass "restart/$name: a file open across the restart writes, fsyncs and reads" ||
		fail "restart/$name: a file open across the restart writes, fsyncs and reads (status $rc3: $(cat "$scratch/$name.h.out"))"
	[ "$(cat "$w2/$name.held" 2>&1)" = "before+after" ] &&
		pass "restart/$name: mount 2 reads what went through the held file" ||
		fail "restart/$name: mount 2 reads what went through the held file (got '$(cat "$w2/$name.held" 2>&1)')"
	wait "$p1"
	rc1=$?
	wait "$p2"
	rc2=$?
	# grants end with their connection: the new server knows of no grant
	# (it would recall none), so a change made beside it in the export
	# must be seen by mount 1's next stat, which must ask (mount 1 is
	# quiet now)
	printf 'more\n' >>"$POHMEL_EXPORT${w1#"$POHMEL_MNT1"}/$name.g"
	g2=$(mstat "$POHMEL_MNT1" ops)
	sz=$(stat -c %s "$w1/$name.g")
	g3=$(mstat "$POHMEL_MNT1" ops)
	[ "$g0" -ge 0 ] && [ "$g1" = "$g0" ] && [ "$sz" = 13 ] && [ "$g3" -gt "$g2" ] &&
		pass "restart/$name: no grant outlives the connection: a granted file's stat sent nothing before; after the reconnect it asks and sees a change made in the export" ||
		fail "restart/$name: no grant outlives the connection (requests for one stat before: $((g1 - g0)); after the reconnect: $((g3 - g2)), size $sz, want 13 after an append in the export)"
	# the counters that say what happened: each mount reconnected
	local rc1_1 rc2_1 rp
	rc1_1=$(mstat "$POHMEL_MNT1" reconnects) rc2_1=$(mstat "$POHMEL_MNT2" reconnects)
	rp=$(($(mstat "$POHMEL_MNT1" replays) - rp1_0 + $(mstat "$POHMEL_MNT2" replays) - rp2_0))
	replays_all=$((replays_all + rp))
	[ "$rc1_0" -ge 0 ] && [ "$rc1_1" -gt "$rc1_0" ] && [ "$rc2_0" -ge 0 ] && [ "$rc2_1" -gt "$rc2_0" ] &&
		pass "restart/$name: both mounts count a reconnect (mountstats: $rc1_0 -> $rc1_1, $rc2_0 -> $rc2_1; replays +$rp)" ||
		fail "restart/$name: both mounts count a reconnect (mountstats: $rc1_0 -> $rc1_1, $rc2_0 -> $rc2_1; replays +$rp)"
	diag "writer on mount 1: $(cat "$scratch/$name.a.out")" "writer on mount 2: $(cat "$scratch/$name.b.out")"
	[ "$rc1" = 0 ] && pass "restart/$name: writer on mount 1 carried on without errors" ||
		fail "restart/$name: writer on mount 1 carried on without errors (status $rc1)"
	[ "$rc2" = 0 ] && pass "restart/$name: writer on mount 2 carried on without errors" ||
		fail "restart/$name: writer on mount 2 carried on without errors (status $rc2)"
	sync
	run_c "restart/$name: files of writer 1:" "$bin/restart" check "$w1/$name.a" "$w2/$name.a" "$scratch/$name.a.log"
	run_c "restart/$name: files of writer 2:" "$bin/restart" check "$w1/$name.b" "$w2/$name.b" "$scratch/$name.b.log"
	run_c "restart/$name:" "$bin/restart" probe "$w1" "$w2"
}

# run a C helper that prints TAP into this group (lib.sh run_tap: its
# non-zero exit, a "Bail out!" or a missing plan fails too)
run_c() {
	local pfx=$1
	shift
	run_tap "$pfx " --strip "restart: " "$@"
}

# fsync and eviction with the server down or stopped (restart_durable.c),
# partly through a soft mount of the same export
# and for evict a fresh hard one: only its own files cached
durable() {
	local soft=$scratch/soft.mnt emnt=$scratch/evict.mnt rel=${w1#"$POHMEL_MNT1"/}
	mkdir -p "$soft" "$emnt" "$w1/durable"
	if ! timeout -k 5 60 mount -t pohmel -o soft,timeo=3 127.0.0.1:/ "$soft"; then
		fail "restart/durable: a soft mount of the export"
		return
	fi
	if ! timeout -k 5 60 mount -t pohmel 127.0.0.1:/ "$emnt"; then
		fail "restart/durable: a third hard mount of the export"
		timeout -k 5 60 umount "$soft"
		return
	fi
	run_c "restart/durable:" "$bin/restart" durable "$w1/durable" "$w2/durable" \
		"$soft/$rel/durable" "$soft" "$emnt/$rel/durable" "$emnt"
	timeout -k 5 60 umount "$soft" || fail "restart/durable: the soft mount unmounts"
	timeout -k 5 60 umount "$emnt" || fail "restart/durable: the third hard mount unmounts"
}

cycle kill kill
cycle stop stop
# writers on both mounts had requests in flight at some point of the two
# outages: at least one was sent again on the new connection
[ "$replays_all" -gt 0 ] &&
	pass "restart: requests in flight were replayed after the restarts (mountstats replays +$replays_all)" ||
	fail "restart: requests in flight were replayed after the restarts (mountstats replays +$replays_all)"
durable
tap_finish
