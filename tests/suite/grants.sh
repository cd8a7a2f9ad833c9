#!/bin/bash
# grants group: what server grants buy and what they must not break.
#   zero traffic: after a warm-up walk (find -ls, read every file) on mount 1,
#     a second walk and re-read send no request at all, by the client's
#     counters (/proc/self/mountstats) and by the server's (pohmel stats);
#   local changes: changes made directly in the server's export reach a
#     warm mount 1 within the documented bound (1 s);
#   cross-mount: a change through mount 2 is seen at once by a warm mount 1,
#     through a recall that mount 1 acknowledged;
#   relisting: after another client's change in a small directory mount 1
#     listed, a stat of every name in it costs one READDIR, not a LOOKUP
#     per name;
#   removal: rm of files mount 1 wrote is one request each, with no
#     CLOSE, RELEASE or RECALL after it (protocol 1.4);
#   idle handles: opening and closing more files than the server allows
#     open per session leaves room for new files;
#   no watch, no grant: a file pohmeld cannot watch (inotify's limit
#     reached) is revalidated at every stat and never served stale;
#   write-back: creates under a directory write grant (writeback.c).
# Prints recall latencies as TAP comments (not asserted).
# Usage: grants.sh W1 W2 SCRATCH [local]
w1=$1 w2=$2 scratch=$3 local=${4:-}
. "$(dirname "$0")/lib.sh"

if [ -n "$local" ] || [ -z "${POHMEL_EXPORT:-}" ]; then
	skip "grants: zero traffic, recalls" "needs the guest's mounts and server"
	tap_finish
	exit
fi
rel=${w1#"$POHMEL_MNT1"}
ex=$POHMEL_EXPORT$rel

# ops_of MNT: "name=count ..." of the requests MNT sent
ops_of() {
	awk -v mnt="$1" '$1 == "device" { on = ($5 == mnt); next } on && $1 == "ops:" { $1 = ""; print }' /proc/self/mountstats
}
# srv_ops: requests the server executed, but the stats tool's own (and
# statfs, as above); "stats-failed" if `pohmel stats` fails, "missing" if
# it shows no op_ counter: never a number that was not read
srv_ops() {
	local st
	st=$(pohmel 127.0.0.1 stats) || { echo stats-failed; return 1; }
	awk '/^op_/ { n++ } /^op_/ && $1 !~ /^op_(hello|auth|stats|bye|statfs)$/ { s += $2 }
	END { if (n) print s + 0; else print "missing" }' <<<"$st"
}
srv_detail() { pohmel 127.0.0.1 stats | grep '^op_' | tr '\n' ' '; }
# srv_stat KEY: one counter of the server's (grants, watches, ...)
srv_stat() {
	local st
	st=$(pohmel 127.0.0.1 stats) || { echo stats-failed; return 1; }
	awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print "missing" }' <<<"$st"
}
# counts NAME...: each variable holds a counter's value (digits), not
# "missing" or "stats-failed": a check that compares counters must not
# pass on two unreadable ones. Names the bad ones.
counts() {
	local v bad=
	for v in "$@"; do
		[[ ${!v} =~ ^[0-9]+$ ]] || bad+=" $v=${!v:-empty}"
	done
	[ -z "$bad" ] || { echo "unreadable counters:$bad"; return 1; }
}
now_ms() { date +%s%3N; }

walk() {	# a full metadata walk and a full read of the tree on mount 1
	find "$w1/tree" -ls >/dev/null &&
		find "$w1/tree" -exec stat {} + >/dev/null &&
		find "$w1/tree" -type f -exec cat {} + >/dev/null
}

# --- a tree made through mount 2, so mount 1 starts cold ---
mk_tree() {	# tests/suite/mktree.c: one process, not a head(1) per file
	"$POHMEL_TESTBIN/mktree" "$w2/tree" 12 15 3000000 && sync
}
check "grants: build a tree (12 dirs x 15 files, 3 MB file) through mount 2" mk_tree

# --- unstable data of a file removed by another client is given up ---
# Closed files' WRITEs stay pinned until a commit; once mount 2 removed
# the files, each file's FSYNC gets ESTALE (sync's one FSYNC_FS, which
# now commits them all, succeeds). Before the fix the pages went back
# and the flusher sent the FSYNCs again every 30 s for ever (stop 31's CI:
# 116 of them landed in the zero-traffic walk below).
gone() {
	local i u0 u1 u2 x0 x1 f0 f1
	mkdir "$w1/gone" && sync || return 1
	u0=$(mstat "$POHMEL_MNT1" unstable_pages) x0=$(mstat "$POHMEL_MNT1" commit_dropped)
	for i in 1 2 3 4 5; do
		head -c 10000 /dev/urandom >"$w1/gone/f$i" || return 1
	done
	u1=$(mstat "$POHMEL_MNT1" unstable_pages)
	[ $((u1 - u0)) -ge 15 ] || { echo "unstable pages $u0 -> $u1 after 5 x 10000 bytes: no commit to test"; return 1; }
	rm "$w2"/gone/f* || return 1
	# syncfs (sync -f) of mount 1 gives them up, and does not fail: the
	# files are gone, nothing was lost that still exists
	sync -f "$w1" || { echo "syncfs of mount 1 failed"; return 1; }
	u2=$(mstat "$POHMEL_MNT1" unstable_pages) x1=$(mstat "$POHMEL_MNT1" commit_dropped)
	[ "$u2" = "$u0" ] || { echo "unstable pages $u0 -> $u1 -> $u2 after sync: still pinned"; return 1; }
	# given up by a file's own FSYNC (ESTALE: commit_dropped), or, since
	# sync commits the whole mount with its one FSYNC_FS, released by it
	[ $((x1 - x0)) -eq $((u1 - u0)) ] || [ "$x1" = "$x0" ] ||
		{ echo "commit_dropped $x0 -> $x1, want +$((u1 - u0)) or +0"; return 1; }
	f0=$(mstat "$POHMEL_MNT1" op:fsync)
	sync
	f1=$(mstat "$POHMEL_MNT1" op:fsync)
	[ "$f1" = "$f0" ] || { echo "a second sync sent $((f1 - f0)) FSYNCs"; return 1; }
	rmdir "$w1/gone"
}
check "grants: data written on mount 1, the files removed through mount 2: syncfs gives the pages up and succeeds, a second sync sends no FSYNC" gone

feat=$(awk -v mnt="$POHMEL_MNT1" '$1 == "device" { on = ($5 == mnt); next } on && $1 == "proto:" { print $NF }' /proc/self/mountstats)
diag "mount 1: grants negotiated: ${feat:-unknown}"

# --- zero traffic ---
c0=$(mstat "$POHMEL_MNT1" ops) s0=$(srv_ops)
check "grants: warm-up walk on mount 1 (find -ls, stat, read all)" walk
c1=$(mstat "$POHMEL_MNT1" ops) s1=$(srv_ops)
# the positive control: the same counters do move when requests go out
# (a cold walk of 218 objects), so "no change" below means no request
if cmsg=$(counts c0 c1 s0 s1) && [ $((c1 - c0)) -gt 0 ] && [ $((s1 - s0)) -gt 0 ]; then
	pass "grants: the cold warm-up walk sent requests: mount 1 $((c1 - c0)), the server executed $((s1 - s0))"
else
	fail "grants: the cold warm-up walk sent requests, by mount 1's and the server's counters (${cmsg:-mount 1 $c0 -> $c1, server $s0 -> $s1})"
fi
# a second warm-up: replies of the first may have come while mount 2 still
# held the files it wrote (its grants were recalled meanwhile)
walk
# the details first: a request between them and the counters shows in
# the details printed on a failure
nobj=$(find "$w1/tree" | wc -l)
ops_before=$(ops_of "$POHMEL_MNT1") srv_before=$(srv_detail)
c1=$(mstat "$POHMEL_MNT1" ops) s1=$(srv_ops)
h0=$(mstat "$POHMEL_MNT1" attr_cache_hits) d0=$(mstat "$POHMEL_MNT1" dentry_cache_hits)
r0=$(mstat "$POHMEL_MNT1" dentry_cache_rcu_hits)
check "grants: second walk on mount 1" walk
for f in "$w1"/tree/d*/nosuchname "$w1"/tree/d3/empty/nosuch; do
	[ -e "$f" ] && { echo "$f exists" >&2; break; }
done
c2=$(mstat "$POHMEL_MNT1" ops) s2=$(srv_ops)
h1=$(mstat "$POHMEL_MNT1" attr_cache_hits) d1=$(mstat "$POHMEL_MNT1" dentry_cache_hits)
r1=$(mstat "$POHMEL_MNT1" dentry_cache_rcu_hits)
if ! cmsg=$(counts c1 c2); then
	fail "grants: second walk + re-read + negative lookups: mount 1 sent no request ($cmsg)"
elif [ "$c2" = "$c1" ]; then
	pass "grants: second walk + re-read + negative lookups: mount 1 sent no request (counters: $((h1 - h0)) attr hits, $((d1 - d0)) dentry hits)"
else
	fail "grants: second walk + re-read + negative lookups: mount 1 sent no request (sent $((c2 - c1)))"
	diag "before: $ops_before" "after:  $(ops_of "$POHMEL_MNT1")"
fi
# RCU path walk: a dentry under a grant is answered without leaving it
# (each stat's path crosses several of ours: at least one per object)
if ! cmsg=$(counts r0 r1); then
	fail "grants: the second walk's path lookups stayed in RCU walk ($cmsg)"
elif [ $((r1 - r0)) -ge "$nobj" ]; then
	pass "grants: the second walk's path lookups stayed in RCU walk ($((r1 - r0)) dentries answered there, $nobj objects; ref-walk answers $((d1 - d0 - (r1 - r0))))"
else
	fail "grants: the second walk's path lookups stayed in RCU walk: $((r1 - r0)) dentries answered there, fewer than its $nobj objects (ref-walk answers $((d1 - d0 - (r1 - r0))))"
fi
if ! cmsg=$(counts s1 s2); then
	fail "grants: ... and the server executed none ($cmsg)"
elif [ "$s2" = "$s1" ]; then
	pass "grants: ... and the server executed none"
else
	fail "grants: ... and the server executed none (it executed $((s2 - s1)))"
	diag "before: $srv_before" "after:  $(srv_detail)"
fi

# --- changes made directly in the export, seen within the bound (1 s) ---
walk
printf 'appended locally\n' >>"$ex/tree/d1/f1"
chmod 600 "$ex/tree/d2/f2"
printf 'new locally\n' >"$ex/tree/d3/new"
rm "$ex/tree/d4/f4"
mv "$ex/tree/d5/f5" "$ex/tree/d5/f5.moved"
sleep 1
local_ok() {
	local want
	want=$(stat -c %s "$ex/tree/d1/f1")
	[ "$(stat -c %s "$w1/tree/d1/f1")" = "$want" ] || { echo "d1/f1: size $(stat -c %s "$w1/tree/d1/f1"), server $want"; return 1; }
	cmp "$ex/tree/d1/f1" "$w1/tree/d1/f1" || return 1
	[ "$(stat -c %a "$w1/tree/d2/f2")" = 600 ] || { echo "d2/f2: mode $(stat -c %a "$w1/tree/d2/f2")"; return 1; }
	cmp "$ex/tree/d3/new" "$w1/tree/d3/new" || return 1
	ls "$w1/tree/d3" | grep -qx new || { echo "d3: new not listed"; return 1; }
	[ ! -e "$w1/tree/d4/f4" ] || { echo "d4/f4 still there"; return 1; }
	ls "$w1/tree/d4" | grep -qx f4 && { echo "d4: f4 still listed"; return 1; }
	[ ! -e "$w1/tree/d5/f5" ] && [ -f "$w1/tree/d5/f5.moved" ] || { echo "d5: rename not seen"; return 1; }
	return 0
}
check "grants: append, chmod, create, unlink, rename made in the export seen by mount 1 after 1 s" local_ok

# end-to-end latency of one local change: warm, change, poll mount 1
lat=()
for i in 1 2 3 4 5; do
	stat "$w1/tree/d6/f6" >/dev/null
	cat "$w1/tree/d6/f6" >/dev/null
	want=$(( $(stat -c %s "$w1/tree/d6/f6") + 1 ))
	t0=$(now_ms)
	printf 'x' >>"$ex/tree/d6/f6"
	while [ "$(stat -c %s "$w1/tree/d6/f6")" != "$want" ]; do
		[ $(( $(now_ms) - t0 )) -gt 5000 ] && break
	done
	lat+=($(( $(now_ms) - t0 )))
done
diag "local change -> seen on mount 1 (inotify, recall, drop), ms: ${lat[*]}"

# --- a change through mount 2 recalls mount 1 ---
r0=$(mstat "$POHMEL_MNT1" recalls) a0=$(mstat "$POHMEL_MNT1" recall_acks)
walk
printf 'through mount 2\n' >>"$w2/tree/d7/f7"
cross_ok() {
	cmp "$w2/tree/d7/f7" "$w1/tree/d7/f7" || return 1
	[ "$(stat -c %s:%Y "$w1/tree/d7/f7")" = "$(stat -c %s:%Y "$w2/tree/d7/f7")" ] || return 1
}
check "grants: an append through mount 2 is seen at once by warm mount 1" cross_ok
r1=$(mstat "$POHMEL_MNT1" recalls) a1=$(mstat "$POHMEL_MNT1" recall_acks)
if ! cmsg=$(counts r0 r1 a0 a1); then
	fail "grants: mount 1 received recalls and acknowledged each ($cmsg)"
elif [ $((r1 - r0)) -gt 0 ] && [ $((a1 - a0)) = $((r1 - r0)) ]; then
	pass "grants: mount 1 received $((r1 - r0)) recalls and acknowledged each"
else
	fail "grants: mount 1 received recalls and acknowledged each (received $((r1 - r0)), acked $((a1 - a0)))"
fi
for m in "$POHMEL_MNT1" "$POHMEL_MNT2"; do
	n=$(mstat "$m" recall_acks) tot=$(mstat "$m" recall_ack_ns_total) max=$(mstat "$m" recall_ack_ns_max)
	[ "$n" -gt 0 ] 2>/dev/null &&
		diag "$m: $n recalls acked, arrival to ack: mean $((tot / n / 1000)) us, max $((max / 1000)) us"
done

# --- a small listed directory changed by another client is read again
# whole (one READDIR), not looked up name by name ---
walk
touch "$w2/tree/d8/new8"
names="$(seq -f 'f%g' 1 15) link empty new8"
ops_before=$(ops_of "$POHMEL_MNT1")
c0=$(mstat "$POHMEL_MNT1" ops) rl0=$(mstat "$POHMEL_MNT1" dir_relists)
stat_d8() {	# by name, no glob: a listing would serve the names itself
	local f
	for f in $names; do
		stat "$w1/tree/d8/$f" >/dev/null || return 1
	done
}
check "grants: after a create through mount 2, mount 1 stats all 18 names in d8" stat_d8
c1=$(mstat "$POHMEL_MNT1" ops) rl1=$(mstat "$POHMEL_MNT1" dir_relists)
if ! cmsg=$(counts c0 c1 rl0 rl1); then
	fail "grants: ... with at most 3 requests, one directory relisted ($cmsg)"
elif [ $((rl1 - rl0)) = 1 ] && [ $((c1 - c0)) -le 3 ]; then
	pass "grants: ... with $((c1 - c0)) requests, one directory relisted"
else
	fail "grants: ... with at most 3 requests, one directory relisted (sent $((c1 - c0)), relisted $((rl1 - rl0)))"
	diag "before: $ops_before" "after:  $(ops_of "$POHMEL_MNT1")"
fi

# --- an evicted inode's grant goes back (RELEASE) ---
# 12 x 17 entries, 12 directories, tree and big: 218 objects mount 1 holds
walk
g0=$(srv_stat grants) w0=$(srv_stat watches) rel0=$(mstat "$POHMEL_MNT1" grant_releases)
drop_caches
# the release work runs after eviction: give it 10 s
released() { [ $(($(mstat "$POHMEL_MNT1" grant_releases) - rel0)) -ge 200 ]; }
check "grants: after drop_caches mount 1 gave back at least 200 grants" within 10 released
# mount 2, which made the tree, gives its grants back too
unwatched() { [ "$(srv_stat watches)" -le $((w0 - 150)) ] 2>/dev/null; }
within 10 unwatched
g1=$(srv_stat grants) w1n=$(srv_stat watches)
diag "mount 1 grant_releases $rel0 -> $(mstat "$POHMEL_MNT1" grant_releases); server grants $g0 -> $g1, watches $w0 -> $w1n"
if ! cmsg=$(counts g0 g1 w0 w1n rel0); then
	fail "grants: ... and the server holds and watches that many fewer ($cmsg)"
elif [ "$g1" -le $((g0 - 200)) ] && [ "$w1n" -le $((w0 - 150)) ]; then
	pass "grants: ... and the server holds and watches that many fewer"
else
	fail "grants: ... and the server holds and watches that many fewer (grants $g0 -> $g1, watches $w0 -> $w1n)"
fi
r0=$(mstat "$POHMEL_MNT1" recalls)
printf 'after the release\n' >>"$w2/tree/d7/f7"
r1=$(mstat "$POHMEL_MNT1" recalls)
check "grants: an append through mount 2 to a released file recalls nothing from mount 1 ($r0 -> $r1 recalls)" \
	sh -c 'echo "$1"; [ -z "$1" ] && [ "$2" = "$3" ]' - "$(counts r0 r1)" "$r0" "$r1"
check "grants: ... and mount 1 reads the new content" cross_ok
rm -rf "$w1/tree"

# --- a removal is one request (protocol 1.4, FEAT_FORGET) ---
# 40 files written and closed on mount 1 (an idle handle and a grant
# each), then removed with rm, and their directory with rmdir: 41
# requests, the UNLINKs and the RMDIR, and nothing after them: no CLOSE
# of the idle handles, no RELEASE at the inodes' eviction, no RECALL
# drawn by pohmeld's own inotify events; and the server holds none of
# their fds or grants any more. (Before 1.4 each file cost an UNLINK, a
# CLOSE and a RELEASE, and often a RECALL.)
nrm=40
forget_one() {
	local i o0 o1 c0 c1 rl0 rl1 r0 r1 h0 h1 g0 g1 rc=0
	mkdir "$w1/rmt" || return 1
	for i in $(seq 1 $nrm); do
		printf 'x%s\n' "$i" >"$w1/rmt/f$i" || return 1
	done
	cat "$w1"/rmt/f* >/dev/null || return 1
	h0=$(srv_stat handle_fds) g0=$(srv_stat grants)
	o0=$(mstat "$POHMEL_MNT1" ops) c0=$(mstat "$POHMEL_MNT1" op:close)
	rl0=$(mstat "$POHMEL_MNT1" grant_releases)
	r0=$(mstat "$POHMEL_MNT1" recalls)
	rm "$w1"/rmt/f* && rmdir "$w1/rmt" || return 1
	sleep 1		# what eviction queues (CLOSE, RELEASE) goes out in a work item
	o1=$(mstat "$POHMEL_MNT1" ops) c1=$(mstat "$POHMEL_MNT1" op:close)
	rl1=$(mstat "$POHMEL_MNT1" grant_releases)
	r1=$(mstat "$POHMEL_MNT1" recalls)
	h1=$(srv_stat handle_fds) g1=$(srv_stat grants)
	counts o0 o1 c0 c1 rl0 rl1 r0 r1 h0 h1 g0 g1 || return 1
	echo "rm of $nrm files and rmdir: $((o1 - o0)) requests ($((c1 - c0)) CLOSE), $((rl1 - rl0)) grants released, $((r1 - r0)) recalls; server handle fds $h0 -> $h1, grants $g0 -> $g1"
	[ $((o1 - o0)) = $((nrm + 1)) ] || rc=1
	[ "$c1" = "$c0" ] && [ "$rl1" = "$rl0" ] && [ "$r1" = "$r0" ] || rc=1
	[ "$h1" -le $((h0 - nrm)) ] && [ "$g1" -le $((g0 - nrm - 1)) ] || rc=1
	[ $rc = 0 ] || diag "ops: $(ops_of "$POHMEL_MNT1")"
	return $rc
}
feats=$(mstat "$POHMEL_MNT1" proto:features)
if [[ $feats =~ ^0x[0-9a-f]+$ ]] && (( feats & 0x800 )); then
	check "grants: rm of $nrm files written on mount 1 and rmdir of their directory send $((nrm + 1)) requests and nothing after them; the server drops their handles and grants" forget_one
else
	fail "grants: mount 1 negotiated FEAT_FORGET (protocol 1.4; features $feats)"
fi

# --- closed files keep idle handles only up to a bound ---
# pohmeld caps a session at 4096 open handles; files opened and closed
# under grants must never use them up (made in the export: quick).
nh=4300
mkdir "$ex/many" && (cd "$ex/many" && seq 1 $nh | xargs touch) || fail "grants: $nh files made in the export"
open_all() {
	local i
	for i in $(seq 1 $nh); do
		: <"$w1/many/$i" || return 1
	done
}
check "grants: $nh files opened and closed one after another on mount 1" open_all
many_ok() {
	echo new >"$w1/many/new" && [ "$(cat "$w1/many/new")" = new ] && open_all
}
check "grants: afterwards a new file can be created and all opened again" many_ok
rm -rf "$ex/many"

# --- an object the server cannot watch gets no grant ---
# pohmeld runs as root in the guest: with inotify's per-user limit at 1,
# below what root holds, every new watch fails and the watches it has
# stay. A file first seen then must be asked about at every stat, and a
# change made in the export beside pohmeld is seen at once: a grant with
# no watch behind it would serve the old size until evicted.
mw=/proc/sys/fs/inotify/max_user_watches
nowatch() {
	local mw0 w0 c0 c1 wn sz rc=0
	mw0=$(cat $mw) || return 1
	mkdir "$ex/nowatch" && printf 'one\n' >"$ex/nowatch/f" || return 1
	w0=$(srv_stat watches)
	echo 1 >$mw || return 1
	stat "$w1/nowatch/f" >/dev/null
	c0=$(mstat "$POHMEL_MNT1" ops)
	stat "$w1/nowatch/f" >/dev/null && stat "$w1/nowatch/f" >/dev/null
	c1=$(mstat "$POHMEL_MNT1" ops)
	printf 'two\n' >>"$ex/nowatch/f"
	sz=$(stat -c %s "$w1/nowatch/f")
	wn=$(srv_stat watches)
	echo "$mw0" >$mw
	counts c0 c1 w0 wn || return 1
	echo "limit 1: two stats sent $((c1 - c0)) requests, size after the append $sz, server watches $w0 -> $wn"
	[ $((c1 - c0)) -ge 2 ] || rc=1
	[ "$sz" = 8 ] || rc=1
	[ "$wn" -le "$w0" ] || rc=1
	return $rc
}
check "grants: with no inotify watch to be had, a file gets no grant: each stat is sent, an append in the export is seen at once" nowatch
# the control: with the limit back the same file is granted (and watched)
# again: once the directory and the file were asked about (each refused
# grant is asked for anew by the next stat), the same stats send nothing
nowatch_back() {
	local c0 c1 i
	for i in 1 2 3 4 5; do
		stat "$w1/nowatch" "$w1/nowatch/f" >/dev/null || return 1
		c0=$(mstat "$POHMEL_MNT1" ops)
		stat "$w1/nowatch" "$w1/nowatch/f" >/dev/null
		c1=$(mstat "$POHMEL_MNT1" ops)
		counts c0 c1 || return 1
		echo "limit restored, round $i: stats of the directory and the file sent $((c1 - c0)) requests"
		[ "$c1" = "$c0" ] && return 0
	done
	return 1
}
check "grants: ... with the limit restored it is granted again: its stats send nothing" nowatch_back
rm -rf "$ex/nowatch"

# --- write-back: creates made locally under a directory write grant ---
# (src/wb.c; a third mount with writeback=on; tests/suite/writeback.c)
wbm=$scratch/wb.mnt
mkdir -p "$wbm"
if timeout -k 5 60 mount -t pohmel -o writeback=on,wb_delay=6 127.0.0.1:/ "$wbm"; then
	mkdir -p "$w1/wbt"
	run_tap "grants: " "$POHMEL_TESTBIN/writeback" "$wbm$rel/wbt" "$w2/wbt" "$wbm" "$ex/wbt"
	rm -rf "$w1/wbt"
	timeout -k 5 60 umount "$wbm" || fail "grants: the writeback mount unmounts"
else
	fail "grants: a mount with writeback=on"
fi
tap_finish
