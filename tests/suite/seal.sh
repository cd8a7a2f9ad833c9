#!/bin/bash
# seal group (guest only): protocol 1.3's protection (issue 16). The group
# runs its own pohmeld A (port 7451, keys a and b, export minimum sec=none)
# and B (7453, export sec=seal keys=a root_squash), and seal_relay (seal_relay.c) on
# 7452 in front of A:
#   faults   one sec=seal mount through the relay; for each fault of
#            POHMEL_SEAL_FAULTS the relay spoils one message while
#            seal_work runs (flip a bit of the outer header, body or tag,
#            truncate, drop, reorder, replay, inject): the workload
#            succeeds, every file and the append log are exact through
#            the mount and in A's export (nothing lost, nothing applied
#            twice), the relay saw the client reconnect, a bad record
#            from the server is counted (mountstats seal_failures), and
#            the kernel log has no Oops/BUG/WARNING; then the mount must
#            still create a file, or the faults left are not run. "pass"
#            first is the control: no reconnect and no bad record counted
#            without a fault. Then two flips on a sec=auth mount, whose
#            records are in clear but tagged.
#   hello    the client's HELLO features or boot_gen changed on the way:
#            the mount fails at once (the client refuses the server's
#            MAC), A logs the handshake given up after its HELLO reply
#   wire     a marker (content and file name) written and read back
#            through a sec=seal mount is not in the relay's capture;
#            through sec=none and sec=auth it is (so the check can fail)
#   keys     b removed from A's key file + SIGHUP: mount a keeps its
#            connection and works, mount b's calls fail within 20 s and
#            it counts the refused reconnect (mountstats auth_failures);
#            c added: b's mount point mounted with c works; a wrong key
#            fails with EACCES and A counts it (STATS auth_failures, read
#            with the pohmel tool and a key named default); mount.pohmel
#            reads keyfile= (NAME HEX lines) with keyname=; B refuses
#            (EACCES) a key that its keys= does not list, and a sec=none
#            mount, while it takes key a sealed
#   squash   B squashes root: what root creates through it is 65534's,
#            a root-owned 0644 file and 0755 directory refuse it (EACCES)
#   options  /proc/mounts says sec=seal (the default with a key) and
#            mountstats' protection line names the cipher
# Knobs: POHMEL_SEAL_FAULTS (faults, ';' between, see seal_relay.c),
# POHMEL_SEAL_PART (K/N: the control and every Nth fault from the Kth,
# and every Nth of the sections after them: hello, cipher, hello-slow,
# rekey, wire, keys), POHMEL_SEAL_SECTIONS_PART (K/N for the sections
# alone: make check gives the oldest and newest kernel every fault and
# half the sections each),
# POHMEL_SEAL_FILES (3), POHMEL_SEAL_LINES (4), POHMEL_POHMELD (the
# server binary, default /usr/local/sbin/pohmeld).
# Usage: seal.sh BIN SCRATCH [local]
bin=$1 GS=$2 local=${3:-}
. "$(dirname "$0")/lib.sh"
if [ -n "$local" ] || [ -z "${POHMEL_SERVER:-}" ] || ! is_root; then
	skip "seal: sealed connections" "guest only (needs the module, root and \$POHMEL_SERVER)"
	tap_finish
	exit
fi

PA=7451 RP=7452 PB=7453
files=${POHMEL_SEAL_FILES:-3} lines=${POHMEL_SEAL_LINES:-4}
faults=${POHMEL_SEAL_FAULTS:-"pass; flip c2s 4 hdr; flip s2c 4 hdr; flip c2s 5 body; flip s2c 6 last;
truncate c2s 5; truncate s2c 5; drop c2s 5; drop s2c 5; reorder c2s 5; reorder s2c 5;
replay c2s 5; replay s2c 5; inject c2s 5; inject s2c 5"}
auth_faults="flip c2s 5 body; flip s2c 5 body"
pohmeld=${POHMEL_POHMELD:-/usr/local/sbin/pohmeld}
[ -x "$pohmeld" ] || pohmeld=$(command -v pohmeld)
BAD_KLOG='BUG:|WARNING:|Oops|general protection|soft lockup|hung task|blocked for more than|refcount_t:|list_add corruption|list_del corruption|KASAN|UBSAN|Kernel panic|kernel BUG'

mkdir -p "$GS"
EA=$GS/export-a EB=$GS/export-b
mkdir -p "$EA" "$EB" "$GS/state-a" "$GS/state-b"
klog0=$(dmesg | wc -l)
hexkey() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }
KA=$(hexkey) KB=$(hexkey) KC=$(hexkey) KX=$(hexkey) KD=$(hexkey)
# key files are root's, mode 0600 (pohmeld refuses anything else)
put_keys() {	# FILE LINES...
	local f=$1
	shift
	(umask 077 && printf '%s\n' "$@" >"$f.new") && mv "$f.new" "$f"
}
# "default" is for the pohmel tool (STATS): a bare key in its file is
# the key named default, whichever handshake (1.2 or 1.3) the tool speaks
put_keys "$GS/keys-a" "a $KA" "b $KB" "default $KD"
put_keys "$GS/keys-b" "a $KA" "b $KB"
put_keys "$GS/keys-tool" "$KD"
cat >"$GS/a.conf" <<EOF
port $PA
key-file $GS/keys-a
state-dir $GS/state-a
handshake-timeout 30
export / $EA rw no_root_squash sec=none
EOF
cat >"$GS/b.conf" <<EOF
port $PB
key-file $GS/keys-b
state-dir $GS/state-b
export / $EB rw root_squash sec=seal keys=a
EOF
# B squashes root (the one root_squash export of the guest suite): its
# export root is writable by anyone, a root-owned file and directory
# in it are not. Not sticky: 5.10 and 6.1 apply protected_regular to an
# O_CREAT open of the file they just created, which root_squash makes
# 65534's, neither the caller's nor the directory owner's: EACCES (as
# over NFS with root_squash; 6.12 and 7.x let it through)
chmod 0777 "$EB"
mkdir -p "$EB/rootdir" && chmod 755 "$EB/rootdir"
echo root >"$EB/rootfile" && chmod 644 "$EB/rootfile"

# ---- processes and mounts of the group, undone at exit -------------------
pid_a= pid_b= rpid= mounts=()
listening() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }
start_server() {	# NAME CONF PORT: sets pid_NAME
	"$pohmeld" -c "$2" >>"$GS/pohmeld-$1.log" 2>&1 &
	eval "pid_$1=$!"
	within 30 listening "$3"
}
stop_pid() {	# PID: SIGTERM, then SIGKILL after 10 s
	local i
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
# relay_start LOG ARGS...: seal_relay on $RP in front of A
relay_start() {
	local log=$1
	shift
	: >"$log"
	"$bin/seal_relay" -l "$RP" -s "$PA" "$@" 2>>"$log" &
	rpid=$!
	within 10 grep -q '^relay: listening' "$log"
}
relay_stop() { stop_pid "$rpid"; rpid=; }
cleanup() {
	local m
	for m in "${mounts[@]}"; do
		mountpoint -q "$m" || continue
		timeout -k 5 30 umount "$m" 2>/dev/null || umount -l "$m"
	done
	relay_stop
	stop_pid "$pid_a"
	stop_pid "$pid_b"
	[ -z "${ip0:-}" ] || echo "$ip0" >"$ip"
}
trap cleanup EXIT

# mnt MNT PORT OPTS: the kernel's mount (-i: not mount.pohmel) of export /
mnt() {
	mkdir -p "$1"
	mounts+=("$1")
	# -w: mount(8) takes EACCES (a refused key) for a write-protected
	# device and retries read-only, hiding the error (mount.pohmel too)
	timeout -k 5 60 mount -i -w -t pohmel -o "port=$2,$3" 127.0.0.1:/ "$1"
}
# umnt MNT: unmount, with -f and then -l if it hangs; 1 if it needed -l
umnt() {
	mountpoint -q "$1" || return 0
	timeout -k 5 30 umount "$1" && return 0
	timeout -k 5 30 umount -f "$1" && return 0
	umount -l "$1"
	return 1
}
# the mount's line in /proc/mounts (mstats, mstat: lib.sh)
mount_line() { awk -v m="$1" '$2 == m && $3 == "pohmel"' /proc/mounts; }
# every sec= the mount's options show, comma-separated: one, never two
# (a keyed mount once showed "sec=seal,...,sec=none")
secs_of() { mount_line "$1" | awk '{ print $4 }' | tr , '\n' | sed -n 's/^sec=//p' | paste -sd, -; }
# A's counter from STATS (pohmel tool, key default)
server_stat() {
	pohmel -p "$PA" -k "$GS/keys-tool" 127.0.0.1 stats 2>"$GS/stats.err" |
		awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print -1 }'
}
# written back and dropped: reads go to the server. Not sync(1): a mount
# that a failed check left hanging must not stop the group.
drop() {
	timeout -k 5 60 sync -f "$1"
	echo 3 >/proc/sys/vm/drop_caches
}
klog_bad() { dmesg | tail -n +$((klog0 + 1)) | grep -E "$BAD_KLOG"; }
log_mark() { wc -l <"$1"; }
log_since() { tail -n +$(($2 + 1)) "$1"; }
# a write and a read back through a mount, with a timeout (a hard mount
# that cannot reach its server would wait for ever)
rw_ok() {	# DIR NAME
	local v="$2 $$ $RANDOM"
	echo "$v" | timeout -k 5 30 dd of="$1/$2" conv=fsync status=none &&
		[ "$(timeout -k 5 30 cat "$1/$2")" = "$v" ]
}

# refused NAME MNT PORT OPTS ERE: a mount that must fail at once, its
# messages (mount's and the kernel log's) matching ERE
refused() {
	local before rc
	before=$(dmesg | wc -l)
	mnt "$2" "$3" "$4" >"$GS/mount.err" 2>&1
	rc=$?
	dmesg | tail -n +$((before + 1)) >>"$GS/mount.err"
	if [ "$rc" = 0 ]; then
		fail "$1"
		diag "it mounted"
		umnt "$2"
	elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		fail "$1"
		diag "it hung (status $rc)"
	elif grep -qiE "$5" "$GS/mount.err"; then
		pass "$1"
		head -n 3 "$GS/mount.err" | diag "$(cat)"
	else
		fail "$1"
		diag "status $rc, no message matching '$5':"
		head -n 5 "$GS/mount.err" | diag "$(cat)"
	fi
	if mountpoint -q "$2"; then
		fail "$1: nothing left mounted"
		umount -l "$2"
	fi
}
# a refused key fails mount(2) with EKEYREJECTED (EACCES would be taken by
# mount(8) for a write-protected device)
EACCES='key was rejected|EKEYREJECTED|permission denied|EACCES'

if ! start_server a "$GS/a.conf" "$PA"; then
	fail "seal: start pohmeld A ($pohmeld -c a.conf, port $PA)"
	tail -n 20 "$GS/pohmeld-a.log" | diag "$(cat)"
	tap_finish
	exit
fi
start_server b "$GS/b.conf" "$PB" || {
	fail "seal: start pohmeld B (port $PB, export sec=seal keys=a)"
	tail -n 20 "$GS/pohmeld-b.log" | diag "$(cat)"
}

# ---- options and faults: one sealed mount through the relay ---------------
rlog=$GS/relay.log ctl=$GS/relay.ctl
conns() { grep -c '^relay: connection [0-9]* from' "$rlog"; }
nlines() { grep -c "^$1" "$rlog"; }
run=0
# fault_run MNT SEC SPEC: the workload while the relay spoils one message
fault_run() {
	local m=$1 sec=$2 spec=$3 name c0 c1 a0 f0 r0 sf0 sf1 pe0 pe1 sl0 rc
	run=$((run + 1))
	name="seal sec=$sec $spec"
	local w=$m/run$run e=$EA/run$run man=$GS/run$run.man
	c0=$(conns) f0=$(nlines 'relay: fault:') a0=$(nlines 'relay: armed')
	r0=$(mstat "$m" reconnects) sf0=$(mstat "$m" seal_failures) pe0=$(mstat "$m" proto_errors)
	sl0=$(log_mark "$GS/pohmeld-a.log")
	echo "$spec" >"$ctl"
	kill -USR1 "$rpid"
	if ! within 10 eval '[ "$(nlines "relay: armed")" -gt "$a0" ]'; then
		fail "$name: the relay is armed"
		tail -n 3 "$rlog" | diag "$(cat)"
		return
	fi
	run_tap "$name: " timeout -k 10 90 "$bin/seal_work" write "$w" "$man" -k "$files" -l "$lines"
	rc=$?
	if [ "$spec" = pass ]; then
		c1=$(conns)
		[ "$c1" = "$c0" ] && pass "$name: no reconnect without a fault (control: the relay saw no new connection)" ||
			{ fail "$name: no reconnect without a fault (control: the relay saw no new connection)"; diag "connections $c0 -> $c1"; }
	else
		if [ "$(nlines 'relay: fault:')" -gt "$f0" ]; then
			pass "$name: the relay applied the fault"
		else
			fail "$name: the relay applied the fault (the workload sent fewer messages?)"
		fi
		log_since "$rlog" "$(grep -n "^relay: armed" "$rlog" | tail -n 1 | cut -d: -f1)" |
			grep -E '^relay: (fault|connection)' | head -n 6 | diag "$(cat)"
		# a hard mount only notices a dropped reply when the next record
		# comes: give the reconnect a moment after the workload
		if within 15 eval '[ "$(conns)" -gt "$c0" ]'; then
			pass "$name: the client reconnected (the relay saw a new connection)"
		else
			fail "$name: the client reconnected (the relay saw a new connection)"
		fi
	fi
	sf1=$(mstat "$m" seal_failures) pe1=$(mstat "$m" proto_errors)
	diag "mountstats reconnects $r0 -> $(mstat "$m" reconnects), seal_failures $sf0 -> $sf1, proto_errors $pe0 -> $pe1, auth_failures $(mstat "$m" auth_failures)"
	# the client opens the server's records: one whose tag fails is
	# counted (seal_failures); an outer header with a field changed is
	# refused before the tag, as malformed (proto_errors)
	case $spec in
	pass)
		[ "$sf0" -ge 0 ] && [ "$sf1" = "$sf0" ] &&
			pass "$name: no bad record counted without a fault (control: mountstats seal_failures unchanged)" ||
			fail "$name: no bad record counted without a fault (control: mountstats seal_failures unchanged)" ;;
	*s2c*hdr*)
		[ "$sf1" -gt "$sf0" ] || [ "$pe1" -gt "$pe0" ] &&
			pass "$name: the client counted the bad record (mountstats proto_errors or seal_failures)" ||
			fail "$name: the client counted the bad record (mountstats proto_errors or seal_failures)" ;;
	*truncate*) ;;
	*s2c*)
		[ "$sf0" -ge 0 ] && [ "$sf1" -gt "$sf0" ] &&
			pass "$name: the client counted the bad record (mountstats seal_failures)" ||
			fail "$name: the client counted the bad record (mountstats seal_failures)" ;;
	esac
	[ "$rc" = 0 ] || log_since "$GS/pohmeld-a.log" "$sl0" | tail -n 5 | diag "$(cat)"
	drop "$m"
	run_tap "$name: " "$bin/seal_work" check "$w" "$man" "through the mount"
	run_tap "$name: " "$bin/seal_work" check "$e" "$man" "in the export directory"
	if klog_bad >"$GS/klog.bad"; then
		fail "$name: no Oops, BUG or WARNING in the kernel log since the group started"
		head -n 5 "$GS/klog.bad" | diag "$(cat)"
	else
		pass "$name: no Oops, BUG or WARNING in the kernel log since the group started"
	fi
	# a mount that no longer answers would make every later fault time out
	if ! timeout -k 5 30 touch "$m/alive.$run"; then
		fail "$name: afterwards the mount still creates a file within 30 s (the faults left are not run)"
		return 1
	fi
}

MS=$GS/m-seal
# A dropped or held message shows when the client's idle PING (after
# idle_ping_s without a reply, default 15) meets the counter gap: 3 s
# here, so that each such fault costs a few seconds, not 15.
ip=/sys/module/pohmelfs/parameters/idle_ping_s ip0=
if [ -w "$ip" ]; then
	ip0=$(cat "$ip")
	echo 3 >"$ip"
else
	fail "seal: $ip is writable"
fi
if ! relay_start "$rlog" -C "$ctl"; then
	fail "seal: start seal_relay on port $RP"
	diag "$(cat "$rlog")"
elif ! mnt "$MS" "$RP" "key=$KA,keyname=a,sec=seal" 2>"$GS/mount.err"; then
	fail "seal: a sec=seal mount with key a through the relay"
	diag "$(cat "$GS/mount.err")" "$(dmesg | tail -n 5)"
else
	pass "seal: a sec=seal mount with key a through the relay"
	ml=$(mount_line "$MS")
	[ "$(secs_of "$MS")" = seal ] &&
		pass "seal options: /proc/mounts shows sec=seal (and no other sec=) for the sealed mount" ||
		{ fail "seal options: /proc/mounts shows sec=seal (and no other sec=) for the sealed mount"; diag "$ml"; }
	prot=$(mstats "$MS" | grep -m 1 'protection:' | sed 's/^[[:space:]]*//')
	grep -qiE 'protection:.*(aes|chacha)' <<<"$prot" &&
		pass "seal options: mountstats' protection line names the cipher" ||
		fail "seal options: mountstats' protection line names the cipher"
	diag "$prot"
	IFS=';' read -ra fl <<<"$(tr '\n' ' ' <<<"$faults")"
	# POHMEL_SEAL_PART=K/N: after the control ("pass"), every Nth fault
	# from the Kth, so that N kernels together run each once
	part=${POHMEL_SEAL_PART:-1/1} i=0
	for f in "${fl[@]}"; do
		read -r f <<<"$f"	# trimmed
		[ -n "$f" ] || continue
		if [ "$f" != pass ]; then
			i=$((i + 1))
			part_runs "$part" "$i" "seal: fault $f" || continue
		fi
		fault_run "$MS" seal "$f" || break
	done
	umnt "$MS" && pass "seal: the sealed mount unmounts" || fail "seal: the sealed mount unmounts (needed umount -l)"
	# sec=auth: the inner messages go in clear, the tag still covers them
	if ! mnt "$MS" "$RP" "key=$KA,keyname=a,sec=auth" 2>"$GS/mount.err"; then
		fail "seal: a sec=auth mount with key a through the relay"
		diag "$(cat "$GS/mount.err")"
	else
		[ "$(secs_of "$MS")" = auth ] &&
			pass "seal options: /proc/mounts shows sec=auth (and no other sec=) for the signed mount" ||
			{ fail "seal options: /proc/mounts shows sec=auth (and no other sec=) for the signed mount"; diag "$(mount_line "$MS")"; }
		IFS=';' read -ra fl <<<"$auth_faults"
		for f in "${fl[@]}"; do
			read -r f <<<"$f"
			fault_run "$MS" auth "$f" || break
		done
		umnt "$MS" || fail "seal: the signed mount unmounts (needed umount -l)"
	fi
fi
relay_stop
[ -z "$ip0" ] || echo "$ip0" >"$ip"
diag "relay: $(grep -c '^relay: connection [0-9]* from' "$rlog") connections; faults: $(grep -c '^relay: fault:' "$rlog") log lines"

# The sections after the faults, each with its index for POHMEL_SEAL_PART
# K/N (every Nth from the Kth: part 1 of 2 runs hello, hello-slow and
# wire, part 2 cipher, rekey and keys; the default 1/1 runs all).
# POHMEL_SEAL_SECTIONS_PART, when set, splits them apart from the faults.
seal_runs() {	# INDEX NAME
	part_runs "${POHMEL_SEAL_SECTIONS_PART:-${POHMEL_SEAL_PART:-1/1}}" "$1" "seal: $2"
}

if seal_runs 1 hello; then
# ---- hello: a changed HELLO request fails the handshake ------------------
MH=$GS/m-hello
for what in features bootgen; do
	name="seal hello-$what"
	hl=$GS/relay-hello-$what.log
	if ! relay_start "$hl" -f "hello-$what"; then
		fail "$name: start seal_relay"
		continue
	fi
	sl0=$(log_mark "$GS/pohmeld-a.log")
	# EACCES or another error: the client refuses the server's MAC
	refused "$name: the mount fails at once (the same mount without the change works: above)" \
		"$MH" "$RP" "key=$KA,keyname=a,sec=seal" .
	grep -q "^relay: fault: hello-$what" "$hl" &&
		pass "$name: the relay changed the HELLO request" ||
		fail "$name: the relay changed the HELLO request"
	grep '^relay: fault' "$hl" | head -n 2 | diag "$(cat)"
	# the server sees the client give up after its HELLO reply
	if within 10 eval 'log_since "$GS/pohmeld-a.log" "$sl0" | grep -qiE "handshake|hello|auth|mac|refus"'; then
		pass "$name: pohmeld logs the failed handshake"
		log_since "$GS/pohmeld-a.log" "$sl0" | grep -iE "handshake|hello|auth|mac|refus" | head -n 2 | diag "$(cat)"
	else
		fail "$name: pohmeld logs the failed handshake"
		log_since "$GS/pohmeld-a.log" "$sl0" | tail -n 5 | diag "$(cat)"
	fi
	relay_stop
done
fi

if seal_runs 3 hello-slow; then
# ---- a slow server: the handshake waits timeo (at least 10 s) -----------
# The HELLO reply held 12 s (A's handshake-timeout is 30 s): a mount with
# the default timeo (60) waits for it; one with soft,timeo=11 gives up.
name="seal hello-slow"
MH=$GS/m-hello
hl=$GS/relay-hello-slow.log
if ! relay_start "$hl" -f "hello-slow 12"; then
	fail "$name: start seal_relay"
else
	t0=$(date +%s)
	if mnt "$MH" "$RP" "key=$KA,keyname=a,sec=seal" >"$GS/mount.err" 2>&1; then
		pass "$name: a mount whose HELLO reply comes after 12 s succeeds (timeo 60, $(($(date +%s) - t0)) s)"
		rw_ok "$MH" slow-hello && pass "$name: ... and works" ||
			fail "$name: ... and works"
		umnt "$MH"
	else
		fail "$name: a mount whose HELLO reply comes after 12 s succeeds (timeo 60, $(($(date +%s) - t0)) s)"
		{ cat "$GS/mount.err"; dmesg | tail -n 3; } | diag "$(cat)"
	fi
	grep -q '^relay: fault: hello-slow' "$hl" &&
		pass "$name: the relay held the reply" ||
		fail "$name: the relay held the reply"
	refused "$name: with soft,timeo=11 the mount gives up" \
		"$MH" "$RP" "key=$KA,keyname=a,sec=seal,soft,timeo=11" \
		'timed out|no answer in time|ETIMEDOUT'
	relay_stop
fi
fi

if seal_runs 2 cipher; then
# ---- cipher=: each AEAD through a mount of A ----------------------------
MX=$GS/m-cipher
for sc in "seal chacha20-poly1305" "auth chacha20-poly1305" "seal aes-256-gcm"; do
	read -r sec ci <<<"$sc"
	name="seal cipher=$ci sec=$sec"
	if ! mnt "$MX" "$PA" "key=$KA,keyname=a,sec=$sec,cipher=$ci" >"$GS/mount.err" 2>&1; then
		fail "$name: mounts"
		{ cat "$GS/mount.err"; dmesg | tail -n 3; } | diag "$(cat)"
		continue
	fi
	prot=$(mstats "$MX" | grep -m 1 'protection:' | sed 's/^[[:space:]]*//')
	[[ $prot == *"$sec $ci"* ]] &&
		pass "$name: in force (mountstats: $prot)" ||
		fail "$name: in force (mountstats: $prot)"
	[[ ",$(mount_line "$MX" | awk '{ print $4 }')," == *,cipher=$ci,* ]] &&
		pass "$name: /proc/mounts shows cipher=$ci" ||
		{ fail "$name: /proc/mounts shows cipher=$ci"; diag "$(mount_line "$MX")"; }
	f=cipher-$ci-$sec
	head -c 1048576 /dev/urandom >"$GS/$f.src"
	if timeout -k 5 60 cp "$GS/$f.src" "$MX/$f" && timeout -k 5 60 sync -f "$MX" &&
		cmp -s "$GS/$f.src" "$EA/$f" && drop "$MX" &&
		timeout -k 5 60 cmp -s "$GS/$f.src" "$MX/$f"; then
		pass "$name: 1 MiB written, the same bytes in the export and read back"
	else
		fail "$name: 1 MiB written, the same bytes in the export and read back"
	fi
	rm -f "$GS/$f.src" "$EA/$f"
	umnt "$MX" || fail "$name: unmounts (needed umount -l)"
done
refused "seal cipher=: an unknown cipher is refused" "$MX" "$PA" \
	"key=$KA,keyname=a,cipher=rot13" 'invalid|EINVAL|bad value|cipher'
refused "seal cipher=: refused without a key (sec=none)" "$MX" "$PA" \
	"cipher=aes-256-gcm" 'invalid|EINVAL|cipher= needs'
fi

if seal_runs 4 rekey; then
# ---- keys used up: a connection's records are bounded (seal_msgs_max) ---
# The module's limit (2^32 records per direction) lowered to 16: the
# client reconnects for new keys again and again, and nothing is lost.
MX=$GS/m-rekey
pm=/sys/module/pohmelfs/parameters/seal_msgs_max
name="seal rekey"
if [ ! -w "$pm" ]; then
	fail "$name: $pm is writable"
elif ! mnt "$MX" "$PA" "key=$KA,keyname=a,sec=seal" >"$GS/mount.err" 2>&1; then
	fail "$name: mounts"
	diag "$(cat "$GS/mount.err")"
else
	pm0=$(cat "$pm") r0=$(mstat "$MX" reconnects) sf0=$(mstat "$MX" seal_failures)
	echo 16 >"$pm"
	ok=1
	for i in 1 2 3 4 5 6 7 8 9 10; do
		head -c 65536 /dev/urandom >"$GS/rk.src"
		timeout -k 5 60 cp "$GS/rk.src" "$MX/rk$i" &&
			timeout -k 5 60 sync -f "$MX" && cmp -s "$GS/rk.src" "$EA/rk$i" &&
			timeout -k 5 60 mv "$MX/rk$i" "$MX/rk$i.done" &&
			timeout -k 5 60 cat "$MX/rk$i.done" | cmp -s "$GS/rk.src" - || ok=0
	done
	echo "$pm0" >"$pm"
	r1=$(mstat "$MX" reconnects) sf1=$(mstat "$MX" seal_failures)
	[ "$ok" = 1 ] && [ "$(ls "$EA" | grep -c '^rk[0-9]*\.done$')" = 10 ] &&
		pass "$name: 10 files written, renamed and read back across new keys: the same bytes in the export" ||
		fail "$name: 10 files written, renamed and read back across new keys: the same bytes in the export"
	[ "$r1" -ge $((r0 + 2)) ] && [ "$sf1" = "$sf0" ] &&
		pass "$name: the client reconnected for new keys ($r0 -> $r1 reconnects), no record failed ($sf0 -> $sf1)" ||
		fail "$name: the client reconnected for new keys ($r0 -> $r1 reconnects), no record failed ($sf0 -> $sf1)"
	dmesg | grep -m 1 'keys used up' | diag "$(cat)"
	rm -f "$GS/rk.src" "$EA"/rk*
	umnt "$MX" || fail "$name: unmounts (needed umount -l)"
fi
fi

if seal_runs 5 wire; then
# ---- wire: what a capture of each protection level shows ------------------
MC=$GS/m-cap
wire() {	# SEC
	local sec=$1 cap=$GS/capture.$1 marker name
	name="seal wire sec=$sec"
	marker="SEALMARK-$sec-$RANDOM$RANDOM"
	local fname="sealname-$sec-$RANDOM"
	rm -f "$cap"
	if ! relay_start "$GS/relay-wire-$sec.log" -c "$cap"; then
		fail "$name: start seal_relay with a capture"
		return 1
	fi
	if ! mnt "$MC" "$RP" "key=$KA,keyname=a,sec=$sec" 2>"$GS/mount.err"; then
		fail "$name: mount through the capturing relay"
		diag "$(cat "$GS/mount.err")"
		relay_stop
		return 1
	fi
	for ((i = 0; i < 64; i++)); do echo "$marker $i"; done >"$GS/marker.src"
	timeout -k 5 60 dd if="$GS/marker.src" of="$MC/$fname" conv=fsync status=none
	drop "$MC"
	if timeout -k 5 60 cmp -s "$GS/marker.src" "$MC/$fname"; then
		pass "$name: the marked file is written and read back through the mount"
	else
		fail "$name: the marked file is written and read back through the mount"
	fi
	umnt "$MC"
	relay_stop
	if [ "$(stat -c %s "$cap" 2>/dev/null || echo 0)" -lt 4096 ]; then
		fail "$name: the capture holds the traffic (4 KiB or more)"
		diag "$(stat -c %s "$cap" 2>/dev/null || echo no) bytes"
		return 1
	fi
	marker_n=$(grep -caF "$marker" "$cap")
	fname_n=$(grep -caF "$fname" "$cap")
}
if wire seal; then
	[ "$marker_n" = 0 ] && [ "$fname_n" = 0 ] &&
		pass "seal wire sec=seal: neither the file's content nor its name is on the wire in clear" ||
		{ fail "seal wire sec=seal: neither the file's content nor its name is on the wire in clear"; diag "content in $marker_n lines of the capture, name in $fname_n"; }
fi
if wire none; then
	[ "$marker_n" -gt 0 ] && [ "$fname_n" -gt 0 ] &&
		pass "seal wire sec=none: content and name are on the wire in clear (the check above can fail)" ||
		{ fail "seal wire sec=none: content and name are on the wire in clear (the check above can fail)"; diag "content in $marker_n lines of the capture, name in $fname_n"; }
fi
if wire auth; then
	[ "$marker_n" -gt 0 ] &&
		pass "seal wire sec=auth: the content is on the wire in clear (integrity only)" ||
		fail "seal wire sec=auth: the content is on the wire in clear (integrity only)"
fi
fi

if seal_runs 6 keys; then
# ---- keys: rotation and revocation on A, keys= and sec= on B -------------
MA=$GS/m-a MB=$GS/m-b MX=$GS/m-x
if ! mnt "$MA" "$PA" "key=$KA,keyname=a" 2>"$GS/mount.err"; then
	fail "seal keys: mount with key a, no sec= (the default with a key)"
	diag "$(cat "$GS/mount.err")"
elif ! mnt "$MB" "$PA" "key=$KB,keyname=b,sec=seal" 2>"$GS/mount.err"; then
	fail "seal keys: mount with key b"
	diag "$(cat "$GS/mount.err")"
else
	[ "$(secs_of "$MA")" = seal ] &&
		pass "seal options: a mount with a key and no sec= is sec=seal (only) in /proc/mounts" ||
		{ fail "seal options: a mount with a key and no sec= is sec=seal (only) in /proc/mounts"; diag "$(mount_line "$MA")"; }
	rw_ok "$MA" ka.1 && rw_ok "$MB" kb.1 &&
		pass "seal keys: mounts with keys a and b both write and read" ||
		fail "seal keys: mounts with keys a and b both write and read"
	ra0=$(mstat "$MA" reconnects) ab0=$(mstat "$MB" auth_failures)
	sl0=$(log_mark "$GS/pohmeld-a.log")
	put_keys "$GS/keys-a" "a $KA" "default $KD"
	kill -HUP "$pid_a"
	sleep 1
	rw_ok "$MA" ka.2 && pass "seal keys: after b is removed and SIGHUP, mount a still writes and reads" ||
		fail "seal keys: after b is removed and SIGHUP, mount a still writes and reads"
	ra1=$(mstat "$MA" reconnects)
	[ "$ra0" -ge 0 ] && [ "$ra1" = "$ra0" ] &&
		pass "seal keys: mount a kept its connection across the reload (mountstats reconnects unchanged)" ||
		{ fail "seal keys: mount a kept its connection across the reload (mountstats reconnects unchanged)"; diag "reconnects $ra0 -> $ra1"; }
	# b's calls must fail, not hang: a call that times out does not count
	t0=$SECONDS berr= hung=0
	while [ $((SECONDS - t0)) -lt 20 ]; do
		out=$(timeout -k 5 10 touch "$MB/kb.$SECONDS" 2>&1)
		rc=$?
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			hung=$((hung + 1))
		elif [ "$rc" != 0 ]; then
			berr=$out
			break
		fi
		sleep 1
	done
	if [ -n "$berr" ] && grep -qiE 'input/output|permission|not permitted|access' <<<"$berr"; then
		pass "seal keys: mount b's calls fail (EIO/EACCES) within 20 s of its key's removal"
		diag "$berr"
	else
		fail "seal keys: mount b's calls fail (EIO/EACCES) within 20 s of its key's removal"
		diag "${berr:-no call failed}; $hung calls hung (10 s each)"
	fi
	ab1=$(mstat "$MB" auth_failures)
	if [ "$ab0" -ge 0 ] && [ "$ab1" -gt "$ab0" ]; then
		pass "seal keys: mount b counts its refused reconnect (mountstats auth_failures)"
	else
		fail "seal keys: mount b counts its refused reconnect (mountstats auth_failures)"
		diag "auth_failures $ab0 -> $ab1"
	fi
	log_since "$GS/pohmeld-a.log" "$sl0" | tail -n 4 | diag "$(cat)"
	umnt "$MB" && pass "seal keys: mount b unmounts after its key's removal" ||
		fail "seal keys: mount b unmounts after its key's removal (needed umount -l)"
	put_keys "$GS/keys-a" "a $KA" "c $KC" "default $KD"
	kill -HUP "$pid_a"
	sleep 1
	if mnt "$MB" "$PA" "key=$KC,keyname=c,sec=seal" 2>"$GS/mount.err" && rw_ok "$MB" kc.1 &&
		[ "$(cat "$EA/kc.1" 2>/dev/null)" = "$(cat "$MB/kc.1")" ]; then
		pass "seal keys: key c added and SIGHUP: b's mount point mounted with c writes and reads"
	else
		fail "seal keys: key c added and SIGHUP: b's mount point mounted with c writes and reads"
		diag "$(cat "$GS/mount.err")"
	fi
	umnt "$MB"
fi
umnt "$MA"

# a wrong key: refused, counted and logged by A
af0=$(server_stat auth_failures)
sl0=$(log_mark "$GS/pohmeld-a.log")
refused "seal keys: a mount with a wrong key for name a fails with EKEYREJECTED" \
	"$MX" "$PA" "key=$KX,keyname=a,sec=seal" "$EACCES"
af1=$(server_stat auth_failures)
if [ "$af0" -ge 0 ] && [ "$af1" -gt "$af0" ]; then
	pass "seal keys: pohmeld counts the wrong key (STATS auth_failures goes up)"
else
	fail "seal keys: pohmeld counts the wrong key (STATS auth_failures goes up)"
	diag "auth_failures $af0 -> $af1 (-1: no answer)" "$(head -c 300 "$GS/stats.err")"
fi
log_since "$GS/pohmeld-a.log" "$sl0" | grep -qiE 'auth|key|refus|handshake' &&
	pass "seal keys: pohmeld logs the refused handshake" ||
	fail "seal keys: pohmeld logs the refused handshake"

# mount.pohmel: keyfile= with NAME HEX lines, keyname= picks the line
if timeout -k 5 60 mount -t pohmel -o "port=$PA,keyfile=$GS/keys-a,keyname=c" 127.0.0.1:/ "$MX" \
	2>"$GS/mount.err" && rw_ok "$MX" kf.1; then
	pass "seal keys: mount.pohmel keyfile= (NAME HEX lines) with keyname=c mounts and works"
else
	fail "seal keys: mount.pohmel keyfile= (NAME HEX lines) with keyname=c mounts and works"
	diag "$(cat "$GS/mount.err")"
fi
mounts+=("$MX")
umnt "$MX"

# B: export sec=seal keys=a root_squash
if mnt "$MX" "$PB" "key=$KA,keyname=a,sec=seal" 2>"$GS/mount.err" && rw_ok "$MX" b.1; then
	pass "seal keys: B (sec=seal keys=a) takes key a sealed (control)"
	# root on the client is the anonymous user on B (default 65534)
	own=$(stat -c %u:%g "$EB/b.1" 2>&1)
	[ "$own" = 65534:65534 ] &&
		pass "root_squash: a file root creates through B is 65534:65534 in the export" ||
		fail "root_squash: a file root creates through B is 65534:65534 in the export (got $own)"
	err=$( { echo x >>"$MX/rootfile"; } 2>&1)
	[ "$(cat "$EB/rootfile")" = root ] && [[ $err == *"Permission denied"* ]] &&
		pass "root_squash: root cannot append to a root-owned 0644 file through B (EACCES)" ||
		fail "root_squash: root cannot append to a root-owned 0644 file through B (EACCES; got '$err', file '$(cat "$EB/rootfile")')"
	err=$(touch "$MX/rootdir/x" 2>&1)
	[ ! -e "$EB/rootdir/x" ] && [[ $err == *"Permission denied"* ]] &&
		pass "root_squash: root cannot create in a root-owned 0755 directory through B (EACCES)" ||
		fail "root_squash: root cannot create in a root-owned 0755 directory through B (EACCES; got '$err')"
else
	fail "seal keys: B (sec=seal keys=a) takes key a sealed (control)"
	diag "$(cat "$GS/mount.err")"
fi
umnt "$MX"
refused "seal keys: B refuses key b, which its keys=a does not list (EKEYREJECTED)" \
	"$MX" "$PB" "key=$KB,keyname=b,sec=seal" "$EACCES"
refused "seal keys: B (sec=seal) refuses a sec=none mount with key a (EKEYREJECTED)" \
	"$MX" "$PB" "key=$KA,keyname=a,sec=none" "$EACCES"
fi

if klog_bad >"$GS/klog.bad"; then
	fail "seal: no Oops, BUG or WARNING in the kernel log during the group"
	head -n 5 "$GS/klog.bad" | diag "$(cat)"
else
	pass "seal: no Oops, BUG or WARNING in the kernel log during the group"
fi
cleanup
trap - EXIT
tap_finish
