#!/bin/bash
# fsx group: the random exerciser on mount 1 (cross-reads via mount 2), OPS
# operations in all, split over STREAMS concurrent runs on their own files
# (own seeds, each printed for a replay); then every file's final content
# re-checked after drop_caches and (guest) after a remount of mount 1.
# Usage: fsx.sh BIN W1 W2 SCRATCH OPS [STREAMS] [local]
bin=$1 w1=$2 w2=$3 scratch=$4 ops=$5 streams=${6:-1} local=${7:-}
. "$(dirname "$0")/lib.sh"
per=$(((ops + streams - 1) / streams))
declare -a pids
for k in $(seq 1 "$streams"); do
	seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
	"$bin/fsx" --ops "$per" --seed "$seed" --other "$w2/fsx.$k" --save "$scratch/fsx.model.$k" "$w1/fsx.$k" \
		>"$scratch/fsx.out.$k" 2>&1 &
	pids[k]=$!
done
ok=1
for k in $(seq 1 "$streams"); do
	wait "${pids[k]}"
	rc=$?
	out=$scratch/fsx.out.$k
	[ "$streams" = 1 ] || echo "# stream $k of $streams:"
	if ! relay_tap "" "$out" "$rc"; then
		ok=0
	elif [ ! -f "$scratch/fsx.model.$k" ]; then
		ok=0
		fail "fsx: stream $k left no model file to re-check against"
	fi
done
if [ "$ok" = 0 ]; then
	diag "fsx failed: no re-checks after drop_caches/remount"
	tap_finish
	exit
fi
# cmp_all MNTDIR: every stream's file on that mount against its model
cmp_all() {
	local k
	for k in $(seq 1 "$streams"); do
		cmp "$scratch/fsx.model.$k" "$1/fsx.$k" || return 1
	done
}
if is_root; then
	check "fsx: drop_caches" drop_caches
	check "fsx: content after drop_caches (mount 1)" cmp_all "$w1"
	check "fsx: content after drop_caches (mount 2)" cmp_all "$w2"
else
	skip "fsx: content after drop_caches" "not root"
fi
if [ -n "$local" ]; then
	skip "fsx: content after remounting mount 1" "guest only"
else
	check "fsx: umount and mount mount 1 again" remount_mnt1
	check "fsx: content after the remount (mount 1)" cmp_all "$w1"
	check "fsx: content after the remount (mount 2)" cmp_all "$w2"
fi
tap_finish
