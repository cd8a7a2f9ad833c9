# Shell TAP helpers for the functional suite's shell groups (sourced).
T_N=${T_N:-0} T_PASS=0 T_FAIL=0 T_SKIP=0
T_LOG=${TMPDIR:-/tmp}/suite-check.$$.log

tap_line() {	# STATUS NAME [SUFFIX]
	T_N=$((T_N + 1))
	printf '%s %d - %s%s\n' "$1" "$T_N" "$2" "${3:-}"
}
pass() { tap_line ok "$1"; T_PASS=$((T_PASS + 1)); }
fail() { tap_line "not ok" "$1"; T_FAIL=$((T_FAIL + 1)); }
skip() { tap_line ok "$1" " # SKIP $2"; T_SKIP=$((T_SKIP + 1)); }
diag() { printf '%s\n' "$@" | sed 's/^/#   /'; }

# check NAME CMD...: ok if CMD exits 0; else not ok with the end of its output
check() {
	local name=$1 rc
	shift
	"$@" >"$T_LOG" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		pass "$name"
	else
		fail "$name"
		diag "exit status $rc: $*"
		tail -n 15 "$T_LOG" | diag "$(cat)"
	fi
	return "$rc"
}

# relay_tap PREFIX FILE: another helper's TAP, counted in this group
# (renumbered; its plan and summary dropped, comments passed on)
relay_tap() {
	local line
	while IFS= read -r line; do
		case $line in
		"ok "*) pass "$1${line#ok * - }" ;;
		"not ok "*) fail "$1${line#not ok * - }" ;;
		"1.."* | "# "[0-9]*" passed"*) ;;
		*) echo "$line" ;;
		esac
	done <"$2"
}

# within SECS CMD...: run CMD every 0.1 s until it succeeds (0) or about
# SECS have passed (1)
within() {
	local n=$(($1 * 10))
	shift
	until "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.1
	done
}

tap_finish() {
	rm -f "$T_LOG"
	echo "1..$T_N"
	echo "# $T_PASS passed, $T_FAIL failed, $T_SKIP skipped"
	[ "$T_FAIL" = 0 ]
}

is_root() { [ "$(id -u)" = 0 ]; }

drop_caches() { sync && echo 3 >/proc/sys/vm/drop_caches; }

# remount_mnt1: unmount and mount POHMEL_MNT1 again (a cold client cache).
# $POHMEL_REMOUNT1, if set, is a command that does it; otherwise type, source
# and superblock options come from /proc/self/mountinfo, found by the device
# number (not by path); mount.pohmel supplies the key.
remount_mnt1() {
	if [ -n "${POHMEL_REMOUNT1:-}" ]; then
		eval "$POHMEL_REMOUNT1"
		return
	fi
	local dev fstype src opts
	dev=$(mountpoint -d "$POHMEL_MNT1") || return 1
	read -r fstype src opts < <(awk -v d="$dev" '$3 == d { sub(/.* - /, ""); print; exit }' /proc/self/mountinfo)
	[ -n "$src" ] || { echo "no mount with device $dev in /proc/self/mountinfo" >&2; return 1; }
	echo "remount: umount $POHMEL_MNT1; mount -t $fstype -o $opts $src $POHMEL_MNT1"
	umount "$POHMEL_MNT1" || return 1
	mount -t "$fstype" -o "$opts" "$src" "$POHMEL_MNT1"
}
