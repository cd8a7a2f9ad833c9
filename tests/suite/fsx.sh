#!/bin/bash
# fsx group: the random exerciser on mount 1 (cross-reads via mount 2), then
# the final content re-checked after drop_caches and (guest) after a remount
# of mount 1. Usage: fsx.sh BIN W1 W2 SCRATCH OPS [local]
bin=$1 w1=$2 w2=$3 scratch=$4 ops=$5 local=${6:-}
. "$(dirname "$0")/lib.sh"
model=$scratch/fsx.model
out=$scratch/fsx.out
"$bin/fsx" --ops "$ops" --other "$w2/fsx.file" --save "$model" "$w1/fsx.file" >"$out" 2>&1
rc=$?
grep -vE '^(1\.\.|# [0-9]+ passed)' "$out"
T_N=$(grep -cE '^(not )?ok ' "$out")
T_PASS=$(grep -cE '^ok ' "$out")
T_FAIL=$(grep -cE '^not ok ' "$out")
if [ "$rc" != 0 ] && [ "$T_FAIL" = 0 ]; then
	fail "fsx: exited with status $rc"
fi
if [ "$rc" != 0 ]; then
	diag "fsx failed: no re-checks after drop_caches/remount"
elif [ -f "$model" ]; then
	if is_root; then
		check "fsx: drop_caches" drop_caches
		check "fsx: content after drop_caches (mount 1)" cmp "$model" "$w1/fsx.file"
		check "fsx: content after drop_caches (mount 2)" cmp "$model" "$w2/fsx.file"
	else
		skip "fsx: content after drop_caches" "not root"
	fi
	if [ -n "$local" ]; then
		skip "fsx: content after remounting mount 1" "guest only"
	else
		check "fsx: umount and mount mount 1 again" remount_mnt1
		check "fsx: content after the remount (mount 1)" cmp "$model" "$w1/fsx.file"
		check "fsx: content after the remount (mount 2)" cmp "$model" "$w2/fsx.file"
	fi
else
	fail "fsx: no model file to re-check against"
fi
tap_finish
