#!/bin/bash
# options group: the mount options README documents, each mounted next to
# mount 1 and put through a short functional run, and umount while the
# server is down.
#   grants=off, cache=none, cache=strict, rsize=4096,wsize=8192 and a
#   mount over IPv6 ([::1]): /proc/mounts shows the option; fsx (its own
#   model check) on the mount; a file written through it is the same on
#   mount 1 and one written on mount 1 is the same through it; a rename
#   and an unlink are seen both ways; each option's own effect, from
#   mountstats: grants=off negotiates no grant, cache=none reads from the
#   server every time, rsize/wsize split a 64 KiB transfer into requests
#   of at most that size;
#   fstab by name: a host name stays the source in /proc/mounts (addr=
#   the address): mount -a twice mounts once, umount NAME:/ finds it;
#   after a server restart its reconnect line in the kernel log names
#   that source;
#   down: syncfs sends an FSYNC after a change and none when nothing
#   changed; with the server stopped and staying stopped, sync -f of the
#   unchanged mount returns, and a clean mount (nothing dirty) unmounts
#   within 30 s, with umount and with umount -f.
# Mounts go through mount.pohmel, which takes the harness's key if it has
# one. Knob: POHMEL_OPTIONS_FSX_OPS (2000 per mount).
# Usage: options.sh BIN G1 SCRATCH [local]
bin=$1 g1=$2 scratch=$3 local=${4:-}
. "$(dirname "$0")/lib.sh"
if [ -n "$local" ] || [ -z "${POHMEL_SERVER:-}" ] || [ -z "${POHMEL_MNT1:-}" ]; then
	skip "options: mount options" "guest only (needs the module, \$POHMEL_SERVER and the harness's mounts)"
	tap_finish
	exit
fi
fsx_ops=${POHMEL_OPTIONS_FSX_OPS:-2000}
port=${POHMEL_PORT:-7349}
rel=${g1#"$POHMEL_MNT1"}
mkdir -p "$scratch"
m=$scratch/mnt
mkdir -p "$m"
server() { $POHMEL_SERVER "$@"; }
cleanup() {
	mountpoint -q "$m" && { timeout -k 5 30 umount "$m" || umount -l "$m"; }
	server status >/dev/null 2>&1 || server start >/dev/null 2>&1
}
trap cleanup EXIT
# The restart group ends with a server whose write verifier changed, so
# mount 1's first syncfs after it reports EIO for the names it had not
# made stable (README "Durability"): that report is not this group's.
sync -f "$g1" 2>/dev/null

# the mount's options in /proc/mounts
opts_of() { awk -v m="$1" '$2 == m && $3 == "pohmel" { print $4 }' /proc/mounts; }
mnt() {	# SOURCE OPTS
	timeout -k 5 60 mount -t pohmel ${2:+-o "$2"} "$1" "$m" >"$scratch/mount.err" 2>&1
}
umnt() { timeout -k 5 30 umount "$m" || { umount -l "$m"; return 1; }; }

# both ways: a file written through one is read back through the other
# (after dropping the caches), a rename and an unlink are seen
crossed() {	# NAME DIR_ON_M DIR_ON_MOUNT1
	local name=$1 a=$2 b=$3 v
	v="$name $$ $RANDOM"
	check "$name: a file written on it reads back on mount 1" sh -c \
		"echo '$v' >'$a/x' && sync -f '$a' && echo 3 >/proc/sys/vm/drop_caches && [ \"\$(cat '$b/x')\" = '$v' ]"
	check "$name: a file written on mount 1 reads back on it" sh -c \
		"echo '$v b' >'$b/y' && sync -f '$b' && [ \"\$(cat '$a/y')\" = '$v b' ]"
	check "$name: a rename on it is seen on mount 1, an unlink on mount 1 on it" sh -c \
		"mv '$a/x' '$a/x2' && [ -e '$b/x2' ] && [ ! -e '$b/x' ] && rm '$b/y' && [ ! -e '$a/y' ]"
	check "$name: listing on it" sh -c "[ \"\$(ls '$a')\" = x2 ]"
}

# variant NAME SOURCE OPTS WANT_IN_PROC_MOUNTS: mount, show, fsx, cross
variant() {
	local name=$1 src=$2 o=$3 want=$4 d
	if ! mnt "$src" "$o"; then
		fail "$name: mount -t pohmel ${o:+-o $o }$src"
		diag "$(cat "$scratch/mount.err")" "$(dmesg | tail -n 3)"
		return 1
	fi
	pass "$name: mount -t pohmel ${o:+-o $o }$src"
	[[ ",$(opts_of "$m")," == *",$want,"* ]] &&
		pass "$name: /proc/mounts shows $want" ||
		{ fail "$name: /proc/mounts shows $want"; diag "$(opts_of "$m")"; }
	d=$name
	d=${d//[^A-Za-z0-9]/_}
	mkdir -p "$m$rel/$d" || { fail "$name: mkdir"; umnt; return 1; }
	mkdir -p "$g1/$d"
	# fsx reads through mount 1 what it wrote without fsync: that needs
	# grants on the writer (grants=off is close-to-open, as with NFS)
	run_tap "$name: " "$bin/fsx" --ops "$fsx_ops" --seed "$RANDOM$RANDOM" \
		${other:+--other "$g1/$d/fsx"} "$m$rel/$d/fsx"
	rm -f "$m$rel/$d/fsx"* 2>/dev/null
	crossed "$name" "$m$rel/$d" "$g1/$d"
}

# POHMEL_OPTIONS_PART=K/N: every Nth of the seven parts below from the
# Kth (1 grants=off, 2 cache=none, 3 cache=strict, 4 rsize/wsize, 5 IPv6,
# 6 fstab by name, 7 server down); default 1/1, all
runs() { part_runs "${POHMEL_OPTIONS_PART:-1/1}" "$1" "options: $2"; }

# grants=off: no grant is negotiated or given
other=
if runs 1 grants=off && variant "grants=off" 127.0.0.1:/ grants=off grants=off; then
	g=$(mstat "$m" proto:grants) g1m=$(mstat "$POHMEL_MNT1" proto:grants)
	# mount 1's "1" shows the server grants at all (the control)
	[ "$g" = 0 ] && [ "$g1m" = 1 ] &&
		pass "grants=off: no grant negotiated (mountstats grants: $g; mount 1: $g1m)" ||
		fail "grants=off: no grant negotiated (mountstats grants: $g; mount 1: $g1m)"
	# close-to-open: written on it without fsync, seen on mount 1 after close
	check "grants=off: a write is seen on mount 1 after close (close-to-open)" sh -c \
		"head -c 8192 /dev/urandom >'$scratch/cto' && cp '$scratch/cto' '$m$rel/grants_off/cto' && cmp -s '$scratch/cto' '$g1/grants_off/cto'"
	umnt || fail "grants=off: unmounts (needed umount -l)"
fi
other=1

# cache=none: every read goes to the server
if runs 2 cache=none && variant "cache=none" 127.0.0.1:/ cache=none cache=none; then
	f=$m$rel/cache_none/r
	head -c 65536 /dev/urandom >"$f" && sync -f "$m"
	r0=$(mstat "$m" op:read)
	cat "$f" >/dev/null && cat "$f" >/dev/null
	r1=$(mstat "$m" op:read)
	[ "$r0" -ge 0 ] && [ "$r1" -ge $((r0 + 2)) ] &&
		pass "cache=none: two reads of a file both went to the server (READ $r0 -> $r1)" ||
		fail "cache=none: two reads of a file both went to the server (READ $r0 -> $r1)"
	umnt || fail "cache=none: unmounts (needed umount -l)"
fi

# cache=strict (the default, named): a second read is served from the cache
if runs 3 cache=strict && variant "cache=strict" 127.0.0.1:/ cache=strict cache=strict; then
	f=$m$rel/cache_strict/r
	head -c 65536 /dev/urandom >"$f" && sync -f "$m"
	cat "$f" >/dev/null
	r0=$(mstat "$m" op:read)
	cat "$f" >/dev/null
	r1=$(mstat "$m" op:read)
	[ "$r0" -ge 0 ] && [ "$r1" = "$r0" ] &&
		pass "cache=strict: a second read is served from the cache (READ $r0 -> $r1)" ||
		fail "cache=strict: a second read is served from the cache (READ $r0 -> $r1)"
	umnt || fail "cache=strict: unmounts (needed umount -l)"
fi

# rsize/wsize: 64 KiB in requests of at most 4 KiB read and 8 KiB written
if runs 4 rsize/wsize && variant "rsize=4096,wsize=8192" 127.0.0.1:/ rsize=4096,wsize=8192 rsize=4096,wsize=8192; then
	f=$m$rel/rsize_4096_wsize_8192/r
	w0=$(mstat "$m" op:write)
	head -c 65536 /dev/urandom >"$f" && sync -f "$m"
	w1=$(mstat "$m" op:write)
	echo 3 >/proc/sys/vm/drop_caches
	r0=$(mstat "$m" op:read)
	cmp -s "$f" "$POHMEL_EXPORT$rel/rsize_4096_wsize_8192/r" &&
		pass "rsize=4096,wsize=8192: 64 KiB written: the same bytes in the export" ||
		fail "rsize=4096,wsize=8192: 64 KiB written: the same bytes in the export"
	r1=$(mstat "$m" op:read)
	[ "$w0" -ge 0 ] && [ $((w1 - w0)) -ge 8 ] &&
		pass "wsize=8192: 64 KiB took at least 8 WRITEs ($((w1 - w0)))" ||
		fail "wsize=8192: 64 KiB took at least 8 WRITEs ($w0 -> $w1)"
	[ "$r0" -ge 0 ] && [ $((r1 - r0)) -ge 16 ] &&
		pass "rsize=4096: 64 KiB took at least 16 READs ($((r1 - r0)))" ||
		fail "rsize=4096: 64 KiB took at least 16 READs ($r0 -> $r1)"
	umnt || fail "rsize=4096,wsize=8192: unmounts (needed umount -l)"
fi

# IPv6: the server's dual-stack socket, through [::1]
if runs 5 IPv6 && variant "IPv6 [::1]" "[::1]:/" "" "port=$port"; then
	ss -tnH state established "( dport = :$port )" | grep -q '\[::1\]' &&
		pass "IPv6 [::1]: the connection is over IPv6" ||
		{ fail "IPv6 [::1]: the connection is over IPv6"; ss -tnH "( dport = :$port )" | diag "$(cat)"; }
	umnt || fail "IPv6 [::1]: unmounts (needed umount -l)"
fi

# fstab with a host name: /proc/mounts shows the source as written and the
# address as addr=, so mount -a twice mounts once and umount NAME:/ finds it
grep -qw pohmelsrv /etc/hosts || echo "127.0.0.1 pohmelsrv" >>/etc/hosts
printf 'pohmelsrv:/ %s pohmel _netdev,port=%s 0 0\n' "$m" "$port" >"$scratch/fstab"
fstab_mount() { timeout -k 5 60 mount -a -T "$scratch/fstab" -t pohmel; }
n_at() { awk -v m="$m" '$2 == m { n++ } END { print n + 0 }' /proc/mounts; }
if ! runs 6 "fstab by name"; then :
elif fstab_mount; then
	src=$(awk -v m="$m" '$2 == m { print $1; exit }' /proc/mounts)
	[ "$src" = pohmelsrv:/ ] && [[ ",$(opts_of "$m")," == *,addr=127.0.0.1,* ]] &&
		pass "fstab by name: /proc/mounts shows pohmelsrv:/ and addr=127.0.0.1" ||
		fail "fstab by name: /proc/mounts shows pohmelsrv:/ and addr=127.0.0.1 (source '$src', options $(opts_of "$m"))"
	fstab_mount
	rc=$?
	n=$(n_at)
	[ "$rc" = 0 ] && [ "$n" = 1 ] &&
		pass "fstab by name: a second mount -a leaves it mounted once" ||
		fail "fstab by name: a second mount -a leaves it mounted once (status $rc, $n mounts on $m)"
	# per-op statistics: mountstats "op NAME:" lines, read by pohmelstat
	opf() { mstats "$m" | awk -v o="$1:" -v f="$2" '$1 == "op" && $2 == o { print $(f + 2); x = 1 } END { if (!x) print 0 }'; }
	d0=$(opf lookup 1) e0=$(opf lookup 2)
	for i in 1 2 3; do stat "$m$rel/nosuch.$i.$$" >/dev/null 2>&1; done
	d1=$(opf lookup 1) e1=$(opf lookup 2)
	[ $((d1 - d0)) -ge 3 ] && [ $((e1 - e0)) -ge 3 ] && [ "$(mstat "$m" in_flight)" = 0 ] &&
		[ "$(mstat "$m" age)" -ge 0 ] &&
		pass "mountstats per op: 3 lookups of missing names end as 3 lookups with errors ($d0 -> $d1 done, $e0 -> $e1 errors), none in flight" ||
		fail "mountstats per op: 3 lookups of missing names end as 3 lookups with errors ($d0 -> $d1 done, $e0 -> $e1 errors, in_flight $(mstat "$m" in_flight), age $(mstat "$m" age))"
	if pohmelstat "$m" >"$scratch/pstat" 2>&1 &&
		grep -q "^pohmelsrv:/ on $m: age [0-9]*s, 0 in flight" "$scratch/pstat" &&
		awk -v e="$e1" '$1 == "lookup" && $2 + 0 >= 3 && $4 == e { f = 1 } END { exit !f }' "$scratch/pstat"; then
		pass "pohmelstat $m: the mount, and lookup with its count and $e1 errors"
	else
		fail "pohmelstat $m: the mount, and lookup with its count and $e1 errors"
		diag "$(cat "$scratch/pstat")"
	fi
	pohmelstat -i 1 2 "$m" >"$scratch/pstat2" 2>&1 && [ "$(grep -c "^pohmelsrv:/ on $m" "$scratch/pstat2")" = 2 ] &&
		pass "pohmelstat -i 1 2: two reports, then it exits" ||
		{ fail "pohmelstat -i 1 2: two reports, then it exits"; diag "$(cat "$scratch/pstat2")"; }
	# kernel log lines name the mount's source as written, then the
	# address: a server restart shows as this mount's reconnect
	k0=$(dmesg | wc -l)
	reconnect_named() { dmesg | tail -n +$((k0 + 1)) | grep -qF "pohmelsrv:/ (127.0.0.1:$port): reconnected"; }
	if server restart >/dev/null 2>&1 && within 30 reconnect_named; then
		pass "kernel log: the reconnect names the mount's source (pohmelsrv:/ (127.0.0.1:$port): reconnected)"
	else
		fail "kernel log: the reconnect names the mount's source (pohmelsrv:/ (127.0.0.1:$port): reconnected)"
		diag "$(dmesg | tail -n +$((k0 + 1)) | grep -i pohmel | tail -n 5)"
	fi
	timeout -k 5 30 umount pohmelsrv:/ && [ "$(n_at)" = 0 ] &&
		pass "fstab by name: umount pohmelsrv:/ unmounts it" ||
		fail "fstab by name: umount pohmelsrv:/ unmounts it ($(n_at) mounts left)"
	while [ "$(n_at)" != 0 ] && umnt; do :; done
else
	fail "fstab by name: mount -a of 'pohmelsrv:/ $m pohmel _netdev'"
fi

# down: umount and umount -f of a clean mount while the server is stopped
runs 7 "server down" && for how in umount "umount -f"; do
	name="server down: $how"
	if ! mnt 127.0.0.1:/ ""; then
		fail "$name: mount"
		continue
	fi
	echo down >"$m$rel/down.$$" && sync -f "$m" && rm -f "$m$rel/down.$$"
	if [ "$how" = umount ]; then
		# syncfs sends FSYNC_FS after a change, none when nothing changed
		f0=$(mstat "$m" op:fsync)
		sync -f "$m"
		f1=$(mstat "$m" op:fsync)
		sync -f "$m"
		f2=$(mstat "$m" op:fsync)
		[ "$f0" -ge 0 ] && [ "$f1" -gt "$f0" ] && [ "$f2" = "$f1" ] &&
			pass "sync -f: an FSYNC after a change ($f0 -> $f1), none with nothing changed ($f1 -> $f2)" ||
			fail "sync -f: an FSYNC after a change ($f0 -> $f1), none with nothing changed ($f1 -> $f2)"
	else
		sync -f "$m"
	fi
	if ! server stop; then
		fail "$name: server stop"
		umnt
		continue
	fi
	# so a sync of an unchanged hard mount does not wait for the server
	if [ "$how" = umount ]; then
		t0=$SECONDS
		timeout -k 5 20 sync -f "$m" &&
			pass "server down: sync -f of an unchanged mount returns ($((SECONDS - t0)) s)" ||
			fail "server down: sync -f of an unchanged mount returns (status $?, $((SECONDS - t0)) s)"
	fi
	t0=$SECONDS
	# shellcheck disable=SC2086
	if timeout -k 5 30 $how "$m"; then
		pass "$name of a clean mount returns while the server stays down ($((SECONDS - t0)) s)"
	else
		fail "$name of a clean mount returns while the server stays down (status $?, $((SECONDS - t0)) s)"
		umount -l "$m"
	fi
	mountpoint -q "$m" && { fail "$name: nothing left mounted"; umount -l "$m"; }
	server status >/dev/null 2>&1 && fail "$name: the server stayed down throughout"
	check "$name: server start" server start
done
# the harness's mounts carry on after the outages
check "options: mount 1 works again after the restarts" \
	timeout -k 5 60 sh -c "echo back >'$g1/back' && [ \"\$(cat '$g1/back')\" = back ] && rm '$g1/back'"
tap_finish
