#!/bin/bash
# mounterr: a mount that cannot work fails with a non-zero status, mounts
# nothing, and says what to fix in one kernel log line (or in mount(8)'s
# own message, where util-linux passes the kernel's on: 2.39 and later).
# mount -i: these are the kernel's checks (mount.pohmel has its own tests).
#   nothing listening on the port -> "connection refused ... (port=)"
#   a key against a server without authentication -> a line about the key
#   an unknown option, an out-of-range port -> the option named
# Usage: mounterr.sh SCRATCH [--local]
set -u
scratch=$1 local_mode=${2:-}
. "$(dirname "$0")/lib.sh"
if [ -n "$local_mode" ]; then
	skip "mounterr: failing mounts" "needs the kernel client (--local mode)"
	tap_finish
	exit 0
fi
mnt=$scratch/mnt
mkdir -p "$mnt"
out=$scratch/mount.out

# try_mount OPTIONS: a mount that must fail; its messages (stderr and the
# kernel log lines it caused) in $out
try_mount() {
	local before
	before=$(dmesg | wc -l)
	# -i: the kernel's own checks, not mount.pohmel's (tested on the host)
	if timeout -k 5 60 mount -i -t pohmel 127.0.0.1:/ "$mnt" -o "$1" >"$out" 2>&1; then
		umount "$mnt"
		echo "mount -o $1 succeeded" >>"$out"
		return 1
	fi
	dmesg | tail -n +$((before + 1)) >>"$out"
	! mountpoint -q "$mnt"
}
# expect NAME OPTIONS ERE: the mount fails and its messages match ERE
expect() {
	if try_mount "$2" && grep -qiE "$3" "$out"; then
		pass "mounterr: $1"
	else
		fail "mounterr: $1"
		sed 's/^/#   /' "$out" | tail -8
	fi
}
expect "nothing listening on the port: fails, the log says connection refused and port=" \
	"port=1" "connection refused.*port="
expect "a key against a server without one: fails, the log says why (key)" \
	"key=00112233445566778899aabbccddeeff" "key"
expect "an unknown option: fails and names it" \
	"bogusopt=1" "bogusopt"
expect "port=70000: fails and says it is not a TCP port" \
	"port=70000" "not a TCP port"
expect "an odd-length key: fails and says what key= wants" \
	"key=abc" "key= wants"
tap_finish
