#!/bin/bash
# hostile group (guest only): a third mount of the export goes through
# `hostile` (hostile.c), a proxy in front of the harness's pohmeld that,
# once armed, answers with malformed, truncated, oversized, unsolicited or
# reordered messages, stalls, or closes the connection. For each scenario:
#   - the scenario fired (its log says so: a scenario that never triggered
#     proves nothing);
#   - every operation returns (success or a clean error; `timeout` catches
#     a hang), and where the scenario is recoverable it succeeds with the
#     right data;
#   - a malformed message is counted as a protocol error (mountstats), i.e.
#     the client dropped the connection rather than trusting it;
#   - afterwards the mount works again through a fresh connection and the
#     data is right (checked through the harness's independent mount 2);
#   - the mount unmounts.
# At the end: no mount of the group left, the module's reference count
# back where it was, no "Busy inodes" in the kernel log.
# With a key in use (protocol 1.3: mount 1 names one and /etc/pohmelfs/key
# exists) a relay could neither see nor change anything, so the proxy
# holds the key, as a compromised server would (hostile -k, hostile_seal.c):
# it ends the handshake on both legs and seals what the scenarios send, so
# the client gets the same lies as valid records; the hostile mounts take
# mount 1's keyname= and sec=. `hostile --selftest` first checks its crypto
# against the protocol's test vectors.
# (The harness fails the run on any BUG/WARNING/Oops/hung task.)
# Scenarios run in POHMEL_HOSTILE_JOBS workers at once (default 2), each
# with its own proxy port and mount point; a worker's TAP is relayed when
# it ends. POHMEL_HOSTILE_PART=K/N runs every Nth scenario of the list from
# the Kth (make check gives the two middle kernels one half each).
# Usage: hostile.sh BIN W1 W2 SCRATCH [local]   (env POHMEL_HOSTILE: scenarios to run)
bin=$1 w1=$2 w2=$3 scratch=$4 local=${5:-}
. "$(dirname "$0")/lib.sh"
if [ -n "$local" ] || [ -z "${POHMEL_SERVER:-}" ] || ! is_root; then
	skip "hostile: misbehaving server" "guest only (needs the module, root and \$POHMEL_SERVER)"
	tap_finish
	exit
fi

# the harness's pohmeld port, from mount 1's options
uport=$(awk -v m="$POHMEL_MNT1" '$2 == m && $3 == "pohmel" { if (match($4, /port=[0-9]+/)) print substr($4, RSTART + 5, RLENGTH - 5); exit }' /proc/mounts)
uport=${uport:-7349}
rel=${w1#"$POHMEL_MNT1"/}	# the work dir relative to the export root

# a key in use: mount 1's options name it (keyname=, sec=)
keyfile=/etc/pohmelfs/key
mopts1=$(awk -v m="$POHMEL_MNT1" '$2 == m && $3 == "pohmel" { print $4; exit }' /proc/mounts)
hkey=() hmopts=
case ,$mopts1, in
*,keyname=*)
	if [ -r "$keyfile" ]; then
		hkey=(-k "$keyfile")
		hmopts=$(tr , '\n' <<<"$mopts1" | grep -E '^(keyname|sec)=' | sed 's/^/,/' | tr -d '\n')
	fi ;;
esac
# its crypto first: a proxy that cannot seal would fail every scenario,
# each for a reason hard to see
if st=$("$bin/hostile" --selftest 2>&1); then
	pass "hostile: the proxy's handshake and records reproduce the protocol 1.3 test vectors"
else
	fail "hostile: the proxy's handshake and records reproduce the protocol 1.3 test vectors"
	diag "$st"
	if [ ${#hkey[@]} -gt 0 ]; then
		diag "a key is in use: no scenario can run through this proxy"
		tap_finish
		exit
	fi
fi
if [ ${#hkey[@]} -gt 0 ]; then
	diag "the proxy holds the keys of $keyfile; hostile mounts with ${hmopts#,}"
elif [ -e "$keyfile" ]; then
	diag "$keyfile exists but mount 1 uses no key ($mopts1): the proxy relays bytes"
fi

# class: recover = operations succeed during the attack too
#        detect  = a protocol error: the affected calls may fail (cleanly),
#                  the connection is re-established
#        errno   = a well-framed reply the client must refuse or survive
#        stall   = the server goes silent: soft calls time out
#        mount   = the attack is on the handshake of mount(2): it fails
#        rehello = the attack is on the handshake of a reconnect
#        window  = a reply held back while more sequenced calls go out:
#                  they must stay within the server's reply-cache window
# batch-*: the hostile mount is a writeback one; round 1 makes 21 names
# locally and fsyncs their directory, which sends them in a BATCH, whose
# reply the proxy spoils (detect: the client must refuse it whole, and,
# not knowing what the server applied, look each entry up before sending
# it again: pohmeld refuses a delegated id used twice) or refuses whole
# with ENOSYS (errno: the client sends the entries one at a time). Then
# each name is on the server once, as made, and no create counts as
# failed.
scenarios="
garbage detect
len-huge detect
len-maxmsg detect
body-long detect
body-short detect
err-body detect
bad-flags detect
bad-op detect
no-reply-flag detect
attr-mode detect
attr-nsec detect
attr-id0 detect
dirent-namelen detect
dirent-count detect
dirent-name detect
dirent-loop errno
read-count detect
unknown-tag detect
dup-tag detect
recall-garbage detect
recall-len detect
server-op detect
bad-status errno
status-internal errno
attr-type errno
attr-nlink0 errno
entry-alias detect
entry-alias-dir detect
reorder recover
flood recover
hdr-close recover
body-close recover
drop-close recover
stall-hdr stall
stall-body stall
stall-noread stall
stall-hard stall
hello-magic mount
hello-version mount
hello-maxmsg mount
hello-features mount
hello-garbage mount
auth-attr mount
hello-stall mount
hello-magic rehello
hello-garbage rehello
auth-attr rehello
hello-close rehello
auth-close rehello
reconnect-close rehello
seq-window window
batch-missing detect
batch-extra detect
batch-tag detect
batch-op detect
batch-seq detect
batch-err-body detect
batch-body-short detect
batch-enosys errno
"
only=${POHMEL_HOSTILE:-}
jobs=${POHMEL_HOSTILE_JOBS:-2}
part=${POHMEL_HOSTILE_PART:-1/1}
pk=${part%/*} pn=${part#*/}
case "$pk/$pn/$jobs" in
*[!0-9/]* | 0/* | */0/* | */0) echo "hostile.sh: bad POHMEL_HOSTILE_PART=$part or POHMEL_HOSTILE_JOBS=$jobs" >&2; exit 2 ;;
esac

modref() { cat /sys/module/pohmelfs/refcnt 2>/dev/null || echo '?'; }
inodes() { awk '$1 == "pohmel_inode_cache" { print $2; f = 1 } END { if (!f) print "?" }' /proc/slabinfo 2>/dev/null; }
proto_errors() { mstat "$mnt" proto_errors; }	# of the mount on $mnt
# records that failed their tag: a proxy holding the key makes none, so
# any means its sealing is wrong (not the client)
seal_failures() { mstat "$mnt" seal_failures; }

hpid=
hstart() {	# SCENARIO PORT [-a]: start the proxy, wait until it listens
	: >"$hlog"
	"$bin/hostile" -p "$2" -u "$uport" -s "$1" -l "$hlog" ${hkey[@]+"${hkey[@]}"} ${3:-} &
	hpid=$!
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q '^listening' "$hlog" && return 0
		kill -0 "$hpid" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
hstop() {
	[ -n "$hpid" ] || return 0
	kill -KILL "$hpid" 2>/dev/null
	wait "$hpid" 2>/dev/null
	hpid=
}

# one round of operations on the hostile mount (`hostile round`, one
# process: stat, list, read and compare, write, create, unlink, small
# reads; after the attack reads use O_DIRECT, so the data comes from the
# server). Prints "op 0" or "op ERRNO" lines, and "round-exit N" when it
# did not finish (142: an operation hung past its 20 s alarm).
round() {	# N
	local n=$1 extra=() rc
	[ "$n" = 1 ] && [ "$sc" = stall-noread ] && extra+=(big)
	[ "$sc" = reorder ] && extra+=(parallel)
	# a silent server: every call costs timeo; the first ones show it
	[ "$n" = 1 ] && [ "$class" = stall ] && extra+=(short)
	[ "$n" = 1 ] && [ "$class" = window ] && extra+=(seqwin)
	case $n/$sc in 1/batch-*) extra+=(batch) ;; esac
	timeout -k 5 200 "$bin/hostile" round "$mnt/$rel" "$n" "$GS/src" "$GS/src2" "$sc" "${extra[@]}"
	rc=$?
	[ "$rc" = 0 ] || echo "round-exit $rc"
}

# all ops of a round output ($1) returned 0 and the write landed
round_ok() {	# OUT N
	! grep -qv ' 0$' <<<"$1" && cmp -s "$GS/src2" "$w2/new.$sc.$2"
}
# the round ran to its end (no operation hung) and every call had an
# outcome the README documents for a misbehaving server: success with the
# right data, EIO (a malformed reply: the connection is dropped) or
# ETIMEDOUT (a silent server, soft mount); an unlink may find nothing
# after its create failed. -1 (read-parallel: 2) is a call that returned
# success with wrong data. Prints what is not allowed.
round_clean() {
	grep '^round-exit' <<<"$1"
	awk '/^#/ || NF != 2 { next }
		{ op = $1; v = $2 }
		op == "create" { created = v }
		v == 0 || v == 5 || v == 110 { next }
		op ~ /^read-parallel-/ && v == 1 { next }
		op == "unlink" && v == 2 && created != 0 { next }
		{ print op, v, (v == -1 || (op ~ /^read-parallel-/ && v == 2)) ? "(wrong data returned as success)" : "(an errno not documented here)" }' <<<"$1"
}

# the mount's write-back counters (mountstats), for the log
wb_stats() {
	mstats "$mnt" | awk '$1 ~ /^wb_(local|batches|flushed|errors|settled):$/ { printf "%s%s ", $1, $2 }'
}

# batch-*: after round 1 ($r1), what the log's BATCH did
batch_checks() {
	local want got
	if grep -qx 'batch-mkdir 0' <<<"$r1" && grep -qx 'batch-create 0' <<<"$r1" &&
		grep -qx 'batch-fsync 0' <<<"$r1"; then
		pass "$name: the creates and the directory's fsync succeed"
	else
		fail "$name: the creates and the directory's fsync succeed"
		diag "$(grep '^batch-' <<<"$r1")"
	fi
	# "PATH TYPE INO" as the hostile mount saw them, and on the server
	want=$(sed -n 's/^# made //p' <<<"$r1" | sort)
	got=$(cd "$w2" && timeout -k 5 60 find "b.$sc" -printf '%p %y %i\n' | sort)
	if [ "$(grep -c . <<<"$want")" = 21 ] && [ "$want" = "$got" ]; then
		pass "$name: each of the 21 names made is on the server once, with its type and inode number"
	else
		fail "$name: each of the 21 names made is on the server once, with its type and inode number"
		diag "made on the hostile mount, not so on the server (mount 2): $(comm -23 <(echo "$want") <(echo "$got") | tr '\n' ',')" \
			"on the server, not so on the hostile mount: $(comm -13 <(echo "$want") <(echo "$got") | tr '\n' ',')"
	fi
	# a create the server did apply, reported failed, is a false error
	local wberr
	wberr=$(wb_stats | sed -n 's/.*wb_errors:\([0-9]*\).*/\1/p')
	if [ "$wberr" = 0 ]; then
		pass "$name: no create counted as refused by the server (mountstats wb_errors 0)"
	else
		fail "$name: no create counted as refused by the server (mountstats wb_errors ${wberr:-missing})"
		diag "$(dmesg | grep -F 'failed on the server' | tail -n 2)"
	fi
	if [ "$class" = detect ]; then
		local settled
		settled=$(wb_stats | sed -n 's/.*wb_settled:\([0-9]*\).*/\1/p')
		if [ "${settled:-0}" -gt 0 ]; then
			pass "$name: the creates applied before the reply was lost are found by lookup (mountstats wb_settled $settled)"
		else
			fail "$name: the creates applied before the reply was lost are found by lookup (mountstats wb_settled ${settled:-missing})"
		fi
	elif grep -q '^single' "$hlog"; then
		pass "$name: the refused entries go one at a time"
	else
		fail "$name: the refused entries go one at a time"
	fi
	diag "proxy: $(grep -E '^(batch|single)' "$hlog" | head -n 4 | tr '\n' ';') ($(grep -c '^single' "$hlog") lone CREATE/MKDIR)" \
		"mountstats: $(wb_stats)"
}

mount_h() {	# PORT OPTS
	timeout -k 5 60 mount -t pohmel 127.0.0.1:/ "$mnt" -o "port=$1,$2$hmopts"
}
umount_h() {
	local name=$1
	if timeout -k 5 60 umount "$mnt" 2>"$mnt.umount.err"; then
		pass "$name: unmounts"
	else
		# a plain umount must work: -f and -l only clean up after it
		fail "$name: unmounts"
		diag "$(cat "$mnt.umount.err")"
		timeout -k 5 60 umount -f "$mnt" 2>/dev/null || timeout -k 5 60 umount -l "$mnt"
	fi
}

GS=$scratch/hostile
mkdir -p "$GS"
head -c 300000 /dev/urandom >"$GS/src"
head -c 70000 /dev/urandom >"$GS/src2"
# the files every scenario works on, made through mount 1 (the real server)
mkdir -p "$w1/d" && cp "$GS/src" "$w1/data" &&
	for i in 1 2 3 4 5; do echo "small $i" >"$w1/d/f$i"; done ||
	fail "hostile: prepare files through mount 1"
drop_caches
ref0=$(modref) ino0=$(inodes)
# scenario SC CLASS PORT: one scenario on its own proxy and mount ($mnt)
scenario() {
	local sc=$1 class=$2 port=$3 name t_sc arm opts pe0 pe1 r1 r2 cpid i rc bad
	name="hostile/$sc ($class)"
	t_sc=$(date +%s.%N)
	hlog=$GS/$sc.$class.log
	arm=
	[ "$class" = mount ] && arm=-a
	if ! hstart "$sc" "$port" $arm; then
		fail "$name: start the hostile server"
		diag "$(cat "$hlog")"
		hstop
		return
	fi
	opts=soft,timeo=2
	[ "$class" = rehello ] && opts=soft,timeo=20
	# the lie must reach its call: a loaded host must not time it out first
	# (flood: 20,000 RECALLs before the reply took over 2 s on trixie in
	# check-full while another guest ran)
	case $sc in entry-alias* | flood) opts=soft,timeo=20 ;; esac
	case $sc in batch-*) opts=soft,timeo=20,writeback=on,wb_delay=1 ;; esac
	# window: the held call must not time out (and so free the window)
	if [ "$sc" = stall-hard ] || [ "$class" = window ]; then opts=hard; fi

	if [ "$class" = mount ]; then
		if mount_h "$port" "$opts" 2>"$mnt.mount.err"; then
			fail "$name: mount fails"
			umount_h "$name"
		else
			rc=$?
			if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
				fail "$name: mount fails (it hung: status $rc)"
			else
				pass "$name: mount fails cleanly ($(tr '\n' ' ' <"$mnt.mount.err"))"
			fi
		fi
		grep -q '^fired' "$hlog" && pass "$name: the scenario fired" || fail "$name: the scenario fired"
		mountpoint -q "$mnt" && { fail "$name: nothing left mounted"; umount -l "$mnt"; }
		hstop
		return
	fi

	if ! mount_h "$port" "$opts" 2>"$mnt.mount.err"; then
		fail "$name: mount through the proxy"
		diag "$(cat "$mnt.mount.err")" "$(cat "$hlog")"
		hstop
		return
	fi
	pe0=$(proto_errors)
	kill -USR1 "$hpid"

	if [ "$sc" = stall-hard ]; then
		# hard mount: a call waits for ever, but SIGKILL ends it
		cat "$mnt/$rel/data" >/dev/null 2>&1 &
		cpid=$!
		for ((i = 0; i < 100; i++)); do grep -q '^fired' "$hlog" && break; sleep 0.1; done
		sleep 1
		kill -KILL "$cpid" 2>/dev/null
		for ((i = 0; i < 100; i++)); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$cpid" 2>/dev/null; then
			fail "$name: a call blocked on a silent server dies of SIGKILL within 10 s"
			diag "$(cat /proc/"$cpid"/stack 2>/dev/null)"
		else
			pass "$name: a call blocked on a silent server dies of SIGKILL within 10 s"
		fi
		wait "$cpid" 2>/dev/null
		r1=
	else
		r1=$(round 1)
	fi
	if grep -q '^fired' "$hlog"; then
		pass "$name: the scenario fired"
		diag "$(grep -m 1 '^fired' "$hlog")"	# which reply it hit
	else
		fail "$name: the scenario fired"
	fi
	case $class in
	recover|rehello|window)
		if round_ok "$r1" 1; then
			pass "$name: operations succeed during the attack, data right"
		else
			fail "$name: operations succeed during the attack, data right"
			diag "$r1"
		fi ;;
	*)
		bad=$([ -z "$r1" ] || round_clean "$r1")
		if [ -z "$bad" ]; then
			pass "$name: every operation returns the right data, EIO or ETIMEDOUT"
		else
			fail "$name: every operation returns the right data, EIO or ETIMEDOUT"
			diag "$bad"
		fi ;;
	esac
	# (batch-*: what it made is listed when it is not on the server)
	[ -z "$r1" ] || diag "during the attack: $(grep -v '^# made b\.' <<<"$r1" | tr '\n' ' ')"
	case $sc in entry-alias*)
		diag "$(grep 'named as directory' "$hlog")" "$(grep '^# made' <<<"$r1")"
		# the object made under the lie is not a directory we had
		if grep -q '^alias 0$' <<<"$r1" && grep -q '^relist 0$' <<<"$r1"; then
			pass "$name: the new name is not a second name of an existing directory, which still lists its entries"
		else
			fail "$name: the new name is not a second name of an existing directory, which still lists its entries"
			diag "$(grep -E '^(alias|relist)' <<<"$r1")"
		fi ;;
	esac
	case $sc in batch-*) batch_checks ;; esac
	if [ "$class" = window ]; then
		# "(D past it, window 1024)": how far past the held seq it went
		local past
		past=$(sed -n 's/.*(\([0-9]*\) past it, window.*/\1/p' "$hlog" | head -n 1)
		if [ -n "$past" ] && [ "$past" -lt 1024 ]; then
			pass "$name: no seq 1024 or more past an unanswered one ($past past it)"
		else
			fail "$name: no seq 1024 or more past an unanswered one (${past:-no report} past it)"
			diag "$(grep 'seq-window' "$hlog")"
		fi
	fi
	if [ "$class" = detect ]; then
		pe1=$(proto_errors)
		if [ "${pe1:-0}" -gt "${pe0:-0}" ] 2>/dev/null; then
			pass "$name: counted as a protocol error (connection dropped)"
		else
			fail "$name: counted as a protocol error (connection dropped)"
			diag "proto_errors before $pe0 after $pe1, seal_failures $(seal_failures)" "round: $(echo $r1)"
		fi
	fi
	if [ "$class" = stall ]; then
		# the silent server goes away; a faithful proxy takes its port
		hstop
		hstart reorder "$port" >/dev/null 2>&1 || fail "$name: restart the proxy"
	fi
	r2=$(round 2)
	if round_ok "$r2" 2; then
		pass "$name: afterwards operations succeed, data right"
	else
		fail "$name: afterwards operations succeed, data right"
		diag "$r2" "seal_failures $(seal_failures)"
		tail -n 5 "$hlog" | diag "$(cat)"
	fi
	umount_h "$name"
	hstop
	diag "$sc took $(awk -v a="$t_sc" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
}

# the scenarios to run: POHMEL_HOSTILE's, then this part of them
sel=() n=0
while read -r sc class; do
	[ -n "$sc" ] || continue
	case " ${only:-$sc} " in *" $sc "*) ;; *) continue ;; esac
	n=$((n + 1))
	[ $(((n - 1) % pn)) = $((pk - 1)) ] && sel+=("$sc $class $((7400 + n))")
done <<<"$scenarios"
# a name that is no scenario, or nothing to run, proves nothing
for sc in $only; do
	grep -q "^$sc " <<<"$scenarios" || fail "hostile: POHMEL_HOSTILE names no scenario '$sc'"
done
[ "${#sel[@]}" -gt 0 ] || fail "hostile: no scenario selected (POHMEL_HOSTILE '$only', part $part)"
diag "${#sel[@]} of $n scenarios (part $part), $jobs at a time"
t_start=$(date +%s)
for ((k = 0; k < jobs; k++)); do
	(
		# its own TAP, with a plan: a worker that dies early shows
		T_N=0 T_PASS=0 T_FAIL=0 T_SKIP=0
		mnt=$scratch/mnt.$k
		mkdir -p "$mnt"
		for ((j = k; j < ${#sel[@]}; j += jobs)); do
			# shellcheck disable=SC2086
			scenario ${sel[$j]}
		done
		tap_plan
		[ "$T_FAIL" = 0 ]
	) >"$GS/worker.$k.tap" 2>&1 &
	wpid[k]=$!
done
for ((k = 0; k < jobs; k++)); do
	wait "${wpid[$k]}"
	relay_tap "" "$GS/worker.$k.tap" $?
done
t_end=$(date +%s)
diag "scenarios took $((t_end - t_start)) s"

left=$(for ((k = 0; k < jobs; k++)); do mountpoint -q "$scratch/mnt.$k" && echo "$scratch/mnt.$k"; done)
[ -z "$left" ] && pass "hostile: nothing left mounted" || fail "hostile: nothing left mounted ($left)"
drop_caches
sleep 1
ref1=$(modref) ino1=$(inodes)
[ "$ref1" = "$ref0" ] && pass "hostile: module reference count back to $ref0" ||
	fail "hostile: module reference count back to $ref0 (now $ref1)"
# SLUB's active object count moves by whole slabs: a number to read, not
# to test. A leaked inode shows as "Busy inodes" at umount, and as
# "Objects remaining" when the harness unloads the module at the end.
diag "pohmel_inode_cache active objects: $ino0 before, $ino1 after"
if dmesg | grep -q 'Busy inodes after unmount'; then
	fail "hostile: no busy inodes after unmount"
else
	pass "hostile: no busy inodes after unmount"
fi
tap_finish
