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

# check NAME CMD...: ok if CMD exits 0; else not ok with the end of its
# output. A check that took 10 s or more says so (where a group's time goes).
check() {
	local name=$1 rc t0=$SECONDS
	shift
	"$@" >"$T_LOG" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		pass "$name"
		[ $((SECONDS - t0)) -lt 10 ] || diag "took $((SECONDS - t0)) s"
	else
		fail "$name"
		diag "exit status $rc: $*"
		tail -n 15 "$T_LOG" | diag "$(cat)"
	fi
	return "$rc"
}

# relay_tap PREFIX FILE [STATUS [STRIP]]: another helper's TAP (a tap.c
# helper or a lib.sh script, its output in FILE), counted in this group:
# renumbered, names after PREFIX (a leading STRIP taken off them), its
# plan and summary dropped, comments passed on. With STATUS (the helper's
# exit status) the helper itself is checked too: a "Bail out!" line, no
# plan "1..N" matching its results (it stopped early), or a non-zero
# status without a failure reported is a failure of its own. Returns 1
# if the helper failed in any way.
relay_tap() {
	local pfx=$1 file=$2 status=${3:-} strip=${4:-} line name n=0 bad=0 plan='' bail='' what
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*)
			n=$((n + 1))
			name=${line#ok * - }
			name=${name%% # SKIP*}
			skip "$pfx${name#"$strip"}" "${line##*# SKIP }" ;;
		"ok "*)
			n=$((n + 1))
			name=${line#ok * - }
			pass "$pfx${name#"$strip"}" ;;
		"not ok "*)
			n=$((n + 1)) bad=1
			name=${line#not ok * - }
			fail "$pfx${name#"$strip"}" ;;
		"Bail out!"*)
			bail=${line#Bail out!}
			[ -n "$status" ] || echo "$line" ;;
		"1.."*) plan=${line#1..} ;;
		"# "[0-9]*" passed"*) ;;
		*) echo "$line" ;;
		esac
	done <"$file"
	[ -n "$status" ] || return "$bad"
	what=${pfx:-"$(basename "$file"): "}
	if [ -n "$bail" ]; then
		fail "${what}bailed out:${bail} (status $status)"
		return 1
	fi
	if [ "$plan" != "$n" ]; then
		fail "${what}ended early: $n results, ${plan:+plan 1..$plan}${plan:-no plan} (status $status)"
		return 1
	fi
	if [ "$status" != 0 ] && [ "$bad" = 0 ]; then
		fail "${what}exited with status $status without reporting a failure"
		return 1
	fi
	[ "$status" = 0 ] && [ "$bad" = 0 ]
}

# run_tap PREFIX [--strip S] CMD...: run a helper that prints TAP and
# relay it (relay_tap, checked: status, Bail out!, plan)
run_tap() {
	local pfx=$1 strip='' out rc
	shift
	if [ "${1:-}" = --strip ]; then
		strip=$2
		shift 2
	fi
	out=$(mktemp "${TMPDIR:-/tmp}/suite-tap.XXXXXX") || { fail "${pfx}mktemp"; return 1; }
	"$@" >"$out" 2>&1
	rc=$?
	relay_tap "$pfx" "$out" "$rc" "$strip"
	rc=$?
	rm -f "$out"
	return "$rc"
}

# in_part K/N I: item I (from 1) of a group's list is in part K of N
# (every Nth from the Kth; empty: 1/1, everything). make check splits
# some groups' items over the two middle kernels this way, so that
# together they run each once (the oldest and newest run all).
in_part() {
	local p=${1:-1/1} k n
	k=${p%/*} n=${p#*/}
	case $k/$n in
	*[!0-9/]* | 0/* | */0) echo "in_part: bad part '$p' (K/N)" >&2; return 2 ;;
	esac
	[ $((($2 - k) % n)) = 0 ]
}
# part_runs K/N I WHAT: in_part, saying so when WHAT runs in another
# part; a part that is not K/N fails and runs everything
part_runs() {
	in_part "$1" "$2" 2>/dev/null
	case $? in
	0) return 0 ;;
	1) diag "$3 runs in the other part ($1)"; return 1 ;;
	*) fail "$3: part '$1' is not K/N"; return 0 ;;
	esac
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

# tap_plan: the plan of what this (sub)shell printed, for a relay that
# checks it (hostile.sh's workers)
tap_plan() { echo "1..$T_N"; }

tap_finish() {
	rm -f "$T_LOG"
	tap_plan
	echo "# $T_PASS passed, $T_FAIL failed, $T_SKIP skipped"
	[ "$T_FAIL" = 0 ]
}

is_root() { [ "$(id -u)" = 0 ]; }

drop_caches() { sync && echo 3 >/proc/sys/vm/drop_caches; }

# mstats MNT: the block of /proc/self/mountstats of the mount on MNT
mstats() { awk -v m="$1" '$1 == "device" { on = ($5 == m) } on' /proc/self/mountstats; }
# mstat MNT KEY: one number of MNT's block, -1 if it has none (never a
# number that was not read). KEY is a counter line ("reconnects"), or
# "op:NAME" (requests of type NAME sent, its ops: line), or "ops" (every
# request sent but statfs: free space is no part of what grants cover),
# or "proto:NAME" (a field of its proto: line; "proto:grants" is 1 when
# grants were negotiated).
mstat() {
	mstats "$1" | awk -v k="$2" '
	function found(v) { print v; f = 1; exit }
	k == "ops" && $1 == "ops:" {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "statfs") s += kv[2] }
		found(sprintf("%.0f", s))
	}
	k ~ /^op:/ && $1 == "ops:" {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == substr(k, 4)) found(kv[2]) }
	}
	k ~ /^proto:/ && $1 == "proto:" {
		for (i = 2; i < NF; i++) if ($i == substr(k, 7) ":") found($(i + 1))
	}
	k !~ /^(ops|op:.*|proto:.*)$/ && $1 == k ":" { found($2) }
	END { if (!f) print -1 }'
}

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
