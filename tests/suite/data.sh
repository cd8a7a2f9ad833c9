#!/bin/bash
# data group: the data path keeps several requests in flight and copies
# once, by mount 1's counters (/proc/self/mountstats) on a fresh mount.
#   writeback: a file written and fsync'd goes out in WRITEs of up to
#     wsize, at least 2 of them in flight at once (in_flight_max), and is
#     whole in the export; on an unsealed mount the WRITEs' data goes from
#     the page cache by reference (bytes_sent_pages: all of it), on a
#     sealed or signed one none does (the record holds a copy);
#   readahead: a cold sequential read of it sends READs that nobody waits
#     for: at least 2 in flight at once, their data received straight
#     into the page cache (bytes_recv_direct: at least half the file), the
#     bytes those that were written; the same through mmap; pohmeld sends
#     the data of an unsealed mount's READs by sendfile (its stats'
#     bytes_sendfile: at least half the file), of a sealed one's not;
#   the same file read while mount 2 rewrites part of it: the reader sees
#     mount 2's bytes once its write returned (readahead racing a recall);
#   O_DIRECT: a write and a read of 8 MiB in one call each keep 2 or more
#     requests in flight and move the right bytes; reads at and across
#     the end of file return 0 and what is left;
#   many readers: 4 readers of 4 files at once read what was written.
# Knob: POHMEL_DATA_MB (size of the file, 16).
# Usage: data.sh BIN W1 W2 SCRATCH [local]
bin=$1 w1=$2 w2=$3 scratch=$4 local=${5:-}
. "$(dirname "$0")/lib.sh"

if [ -n "$local" ] || [ -z "${POHMEL_EXPORT:-}" ]; then
	skip "data: pipelined reads and writes" "needs the guest's mounts and server"
	tap_finish
	exit
fi
mb=${POHMEL_DATA_MB:-16}
rel=${w1#"$POHMEL_MNT1"}
ex=$POHMEL_EXPORT$rel
m1=$POHMEL_MNT1
mkdir -p "$scratch"
src=$scratch/src
head -c $((mb << 20)) /dev/urandom >"$src" || { fail "data: make a $mb MiB source file"; tap_finish; exit; }

# fresh: mount 1 again, so that its counters and page cache start empty
fresh() {
	sync -f "$m1"
	remount_mnt1 >"$scratch/remount.log" 2>&1 || { cat "$scratch/remount.log"; return 1; }
}
st() { mstat "$m1" "$1"; }
srv() { pohmel 127.0.0.1 stats | awk -v k="$1" '$1 == k { print $2 }'; }
# mount 1's sec= (/proc/mounts): none moves data by reference both ways
sec=$(awk -v m="$m1" '$2 == m { n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] ~ /^sec=/) print substr(o[i], 5) }' /proc/mounts)
diag "mount 1: sec=${sec:-?}"

# --- writeback -----------------------------------------------------------
if ! fresh; then
	fail "data: mount 1 again for fresh counters"
	diag "$(cat "$scratch/remount.log")"
	tap_finish
	exit
fi
w0=$(st op:write) p0=$(st bytes_sent_pages)
dd if="$src" of="$w1/seq" bs=1M conv=fsync status=none 2>"$scratch/dd.err"
rc=$?
w=$(( $(st op:write) - w0 )) inflight=$(st in_flight_max)
pages=$(( $(st bytes_sent_pages) - p0 ))
diag "$mb MiB written and fsync'd: $w WRITEs, in_flight_max $inflight, $pages bytes sent from pages"
if [ $rc = 0 ] && cmp -s "$src" "$ex/seq"; then
	pass "data: $mb MiB written through mount 1 and fsync'd are the same bytes in the export"
else
	fail "data: $mb MiB written through mount 1 and fsync'd are the same bytes in the export"
	diag "dd exit $rc: $(cat "$scratch/dd.err")" "$(cmp "$src" "$ex/seq" 2>&1)"
fi
if [ "$w" -ge "$mb" ] && [ "$inflight" -ge 2 ]; then
	pass "data: writeback sent $w WRITEs (at most 1 MiB each), $inflight requests in flight at once"
else
	fail "data: writeback sent $w WRITEs (at most 1 MiB each), $inflight requests in flight at once (2 or more expected)"
fi
if [ "$sec" = none ]; then
	check "data: sec=none: the WRITEs' data went from the page cache by reference ($pages bytes)" \
		[ "$pages" -ge $((mb << 20)) ]
else
	check "data: sec=$sec: no WRITE data sent by reference, the records hold it ($pages bytes)" \
		[ "$pages" -eq 0 ]
fi

# --- readahead -----------------------------------------------------------
if ! fresh; then
	fail "data: mount 1 again for a cold read"
	tap_finish
	exit
fi
r0=$(st op:read) d0=$(st bytes_recv_direct) sf0=$(srv bytes_sendfile)
if cmp -s "$src" "$w1/seq"; then
	pass "data: a cold sequential read of $mb MiB through mount 1 reads what was written"
else
	fail "data: a cold sequential read of $mb MiB through mount 1 reads what was written"
	diag "$(cmp "$src" "$w1/seq" 2>&1)"
fi
r=$(( $(st op:read) - r0 )) direct=$(( $(st bytes_recv_direct) - d0 )) inflight=$(st in_flight_max)
diag "cold read: $r READs, in_flight_max $inflight, $direct bytes received straight into pages"
if [ "$r" -ge "$mb" ] && [ "$inflight" -ge 2 ]; then
	pass "data: readahead sent $r READs, $inflight in flight at once"
else
	fail "data: readahead sent $r READs, $inflight in flight at once (2 or more expected)"
fi
if [ "$direct" -ge $((mb << 19)) ]; then
	pass "data: $direct of $((mb << 20)) bytes went from the socket straight into the page cache"
else
	fail "data: $direct of $((mb << 20)) bytes went from the socket straight into the page cache (half or more expected)"
fi
sf=$(( $(srv bytes_sendfile) - ${sf0:-0} ))
if [ "$sec" = none ]; then
	check "data: sec=none: pohmeld sent $sf bytes of the READs by sendfile (half the file or more)" \
		[ "$sf" -ge $((mb << 19)) ]
else
	check "data: sec=$sec: pohmeld sent no READ data by sendfile, the records hold it ($sf bytes)" \
		[ "$sf" -eq 0 ]
fi

# mmap: page faults read ahead the same way
fresh || fail "data: mount 1 again for mmap"
if "$bin/mmapcmp" "$w1/seq" "$src" 2>"$scratch/mmap.err"; then
	pass "data: a cold mmap of the file reads what was written"
else
	fail "data: a cold mmap of the file reads what was written"
	diag "$(cat "$scratch/mmap.err")"
fi

# --- a change on mount 2 while mount 1 reads ahead ------------------------
# Mount 1 reads the file sequentially (readahead in flight) while mount 2
# rewrites its last MiB and says when its write returned; a read of that
# MiB through mount 1 that starts after then sees mount 2's bytes.
fresh || fail "data: mount 1 again for the race"
head -c $((1 << 20)) /dev/urandom >"$scratch/tail"
ok=1
for round in 1 2 3; do
	cat "$w1/seq" >/dev/null &
	rpid=$!
	dd if="$scratch/tail" of="$w2/seq" bs=1M seek=$((mb - 1)) conv=notrunc,fsync status=none || ok=0
	wait "$rpid"
	if ! cmp -s <(tail -c $((1 << 20)) "$w1/seq") "$scratch/tail"; then
		ok=0
		diag "round $round: mount 1 read other bytes than mount 2 wrote in the last MiB"
	fi
	head -c $((1 << 20)) /dev/urandom >"$scratch/tail"
done
if [ $ok = 1 ]; then
	pass "data: mount 1 reading ahead while mount 2 rewrites the end: mount 2's bytes are read after its write (3 rounds)"
else
	fail "data: mount 1 reading ahead while mount 2 rewrites the end: mount 2's bytes are read after its write (3 rounds)"
fi

# --- O_DIRECT: one call of 8 MiB is 8 requests, several in flight --------
fresh || fail "data: mount 1 again for O_DIRECT"
dd if="$src" of="$w1/direct" bs=8M count=1 oflag=direct status=none 2>"$scratch/dd.err"
rc=$? inflight=$(st in_flight_max)
if [ $rc = 0 ] && cmp -s <(head -c $((8 << 20)) "$src") "$ex/direct" && [ "$inflight" -ge 2 ]; then
	pass "data: an O_DIRECT write of 8 MiB in one call: the bytes in the export, $inflight requests in flight at once"
else
	fail "data: an O_DIRECT write of 8 MiB in one call: the bytes in the export, $inflight requests in flight at once (2 or more expected)"
	diag "dd exit $rc: $(cat "$scratch/dd.err")" "$(cmp <(head -c $((8 << 20)) "$src") "$ex/direct" 2>&1)"
fi
fresh || fail "data: mount 1 again for O_DIRECT"
dd if="$w1/direct" of="$scratch/direct" bs=8M count=1 iflag=direct status=none 2>"$scratch/dd.err"
rc=$? inflight=$(st in_flight_max)
if [ $rc = 0 ] && cmp -s <(head -c $((8 << 20)) "$src") "$scratch/direct" && [ "$inflight" -ge 2 ]; then
	pass "data: an O_DIRECT read of 8 MiB in one call: the bytes written, $inflight requests in flight at once"
else
	fail "data: an O_DIRECT read of 8 MiB in one call: the bytes written, $inflight requests in flight at once (2 or more expected)"
	diag "dd exit $rc: $(cat "$scratch/dd.err")"
fi
# short: an O_DIRECT read past the end returns what there is
n=$(dd if="$w1/direct" bs=8M skip=$((8 << 20)) count=1 iflag=direct,skip_bytes status=none 2>/dev/null | wc -c)
n2=$(dd if="$w1/direct" bs=3M skip=$((7 << 20)) count=1 iflag=direct,skip_bytes status=none 2>/dev/null | wc -c)
if [ "$n" = 0 ] && [ "$n2" = $((1 << 20)) ]; then
	pass "data: O_DIRECT reads at and across the end of file return 0 and the 1 MiB left"
else
	fail "data: O_DIRECT reads at and across the end of file return 0 and the 1 MiB left (got $n and $n2)"
fi

# --- several readers at once ----------------------------------------------
fresh || fail "data: mount 1 again for several readers"
for i in 1 2 3 4; do
	head -c $((1 << 22)) /dev/urandom >"$scratch/p$i"
	cp "$scratch/p$i" "$w2/p$i"
done
sync -f "$w2"
fresh || fail "data: mount 1 again for several readers"
pids=
for i in 1 2 3 4; do
	cmp -s "$scratch/p$i" "$w1/p$i" &
	pids+=" $!"
done
ok=1
for p in $pids; do wait "$p" || ok=0; done
if [ $ok = 1 ]; then
	pass "data: 4 readers of 4 files at once on a cold mount 1 each read what mount 2 wrote"
else
	fail "data: 4 readers of 4 files at once on a cold mount 1 each read what mount 2 wrote"
fi
rm -f "$w1/seq" "$w1/direct" "$w1"/p[1-4]
tap_finish
