#!/bin/bash
# Guest side of `make bench` (run by tests/qemu/run as its --script, in the
# bench root built by tests/bench/mkroot-bench). Arguments: KEY=VALUE
# settings from tests/bench/run (BENCH_*). Runs the same workloads over every
# filesystem in this one guest and prints one line per measurement:
#   BENCH-INFO {json}      guest facts
#   BENCH {json}           one timed run: fs, delay, workload, rep, secs, ok,
#                          msgs (network messages: pohmel round trips, NFS
#                          RPCs, SMB requests), srv_cpu (s), srv_rss_kb
#   BENCH-SKIP {json}      a filesystem that could not be set up, and why
#   BENCH-PROT {json}      after each remount of a pohmel-SEC variant, per
#                          mount: fs, delay, rep, mnt, sec (asked for) and
#                          protection (its line in /proc/self/mountstats)
#   BENCH-POHMELD {json}   pohmeld's peak and current resident memory, at the end
#   BENCH-MANY {json}      after each many run: fs, delay, rep, clients, the
#                          smallest, median and largest of the clients' median
#                          latencies (us)
# Other lines are progress. No timing is ever a pass/fail condition; the exit
# status is 0 unless the script itself is broken.
set -u
for kv in "$@"; do
	case $kv in
	BENCH_[A-Z0-9_]*=*) export "${kv?}" ;;
	*) echo "guest.sh: ignoring argument '$kv'" ;;
	esac
done
# Defaults: tests/bench/run sets every one of these (see there).
SMALL=${BENCH_SMALL:-100}		# small files created/stat'ed/unlinked
SEQ_MB=${BENCH_SEQ_MB:-16}
RAND_OPS=${BENCH_RAND_OPS:-200}
PAR=${BENCH_PAR:-4}			# parallel processes (alternating mounts)
PAR_FILES=${BENCH_PAR_FILES:-20}
MANY=${BENCH_MANY:-64}			# clients, each from a network namespace
MANY_ROUNDS=${BENCH_MANY_ROUNDS:-10}
REPS=${BENCH_REPS:-3}
DELAYS=${BENCH_DELAYS:-0.2 0}		# added round-trip times on lo, ms
FSLIST=${BENCH_FS:-ext4 tmpfs pohmel-none pohmel-auth pohmel-seal nfs4 nfs3 smb3 9p}
# pohmelfs is measured per protection: pohmel-none, pohmel-auth, pohmel-seal
# (and pohmel-chacha: sec=seal with cipher=chacha20-poly1305; pohmel-wb:
# sec=none with writeback=on)
# remount the harness's two mounts with -o sec=none|auth|seal (through
# mount.pohmel and the harness's key, tests/qemu/run --key). "pohmel" (the
# harness's default mounts: sealed, as a key makes them) is an alias of
# pohmel-seal, so that one column is measured once and its protection checked.
fsl=
for f in $FSLIST; do
	[ "$f" = pohmel ] && f=pohmel-seal
	case " $fsl " in *" $f "*) ;; *) fsl="$fsl $f" ;; esac
done
FSLIST=${fsl# }
WL_TIMEOUT=${BENCH_WL_TIMEOUT:-600}
POHMEL_FAIL=${BENCH_POHMEL_FAIL:-}
TREE=/opt/bench/tree.tar
PL=/opt/bench/bench.pl
SRV=/srv/bench
OUT=/var/tmp/bench.out EW=/var/tmp/bench.ew EP=/var/tmp/bench.ep
HZ=$(getconf CLK_TCK)
export GIT_CONFIG_GLOBAL=/var/tmp/bench.gitconfig
git config --global --add safe.directory '*'
git config --global core.untrackedCache false

T0=$(date +%s)
log() { echo "# [$(($(date +%s) - T0))s] $*"; }
jstr() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n\t' '  '; }

# --- guest facts -----------------------------------------------------------------
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo none; }
printf 'BENCH-INFO {"kernel":"%s","vcpus":%s,"mem_mb":%s,"cpu":"%s","files":%s,"tree_bytes":%s,"small":%s,"seq_mb":%s,"rand_ops":%s,"par":%s,"par_files":%s,"many":%s,"reps":%s,"delays":"%s","fs":"%s","versions":{"nfs-kernel-server":"%s","samba":"%s","diod":"%s","cifs-utils":"%s"}}\n' \
	"$(uname -r)" "$(nproc)" "$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024))" \
	"$(jstr "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)")" \
	"$(tar -tf "$TREE" | grep -vc '/$')" "$(stat -c %s "$TREE")" "$SMALL" "$SEQ_MB" \
	"$RAND_OPS" "$PAR" "$PAR_FILES" "$MANY" "$REPS" "$DELAYS" "$FSLIST" \
	"$(ver nfs-kernel-server)" "$(ver samba)" "$(ver diod)" "$(ver cifs-utils)"

# --- counters ------------------------------------------------------------------------
# msgs FS: network messages so far on this filesystem's client mounts.
msgs() {
	case $1 in
	pohmel-*) awk '/^device / { on = / with fstype pohmel/ } on && $1 == "round_trips:" { n += $2 }
		     END { print n + 0 }' /proc/self/mountstats ;;
	nfs3|nfs4) awk -v t="$([ "$1" = nfs3 ] && echo nfs || echo nfs4)" '
		     /^device / { on = ($0 ~ (" with fstype " t "( |$)")); ops = 0; next }
		     on && /per-op statistics/ { ops = 1; next }
		     on && ops && $1 ~ /^[A-Z_0-9]+:$/ { n += $2 }
		     END { print n + 0 }' /proc/self/mountstats ;;
	smb3) awk '$1 == "SMBs:" { n += $2 } END { print n + 0 }' /proc/fs/cifs/Stats 2>/dev/null || echo 0 ;;
	*) echo null ;;
	esac
}
# srv_pids FS: the processes (or kernel threads) serving FS.
srv_pids() {
	case $1 in
	pohmel*) systemctl show -p MainPID --value pohmel-testd.service 2>/dev/null | grep -v '^0$' ;;
	nfs3|nfs4) ps -e -o pid=,comm= | awk '$2 == "nfsd" { print $1 }' ;;
	smb3) pidof smbd | tr ' ' '\n' ;;
	9p) pidof diod ;;
	esac
}
# The server's processes are looked up once per filesystem and repetition
# (SRV_PIDS, by run_workloads) and read with shell builtins only: under TCG
# every process started around a measurement costs tens of ms of wall time.
SRV_PIDS=
srv_ticks() {	# TICKS = utime+stime of $SRV_PIDS, clock ticks (-1: none)
	local p t=0 any=0 st f
	for p in $SRV_PIDS; do
		read -r st 2>/dev/null <"/proc/$p/stat" || continue
		read -ra f <<<"${st##*) }"	# f[0] = state (field 3)
		any=1 t=$((t + f[11] + f[12]))	# utime, stime (fields 14, 15)
	done
	[ "$any" = 1 ] && TICKS=$t || TICKS=-1
}
srv_rss() {	# RSS = resident kB of $SRV_PIDS (null: none, or kernel threads)
	local p r=0 any=0 k v
	for p in $SRV_PIDS; do
		while read -r k v _; do
			[ "$k" = VmRSS: ] && { any=1 r=$((r + v)); break; }
		done 2>/dev/null <"/proc/$p/status"
	done
	[ "$any" = 1 ] && RSS=$r || RSS=null
}

# --- one measurement -------------------------------------------------------------------
DELAY=0 FS= BROKEN=
# measure WORKLOAD REP CMD...: time CMD (with the per-workload time limit),
# print its BENCH line. A workload that times out marks FS broken (the rest
# of FS's workloads are reported as not run). Around the timed command only
# shell builtins where possible: under TCG each process started costs
# ~0.1-0.3 s of wall time (not measured, but it adds up over a run).
measure() {
	local wl=$1 rep=$2 m0=null m1 c0 c1 rc err msg=null cpu=null secs v f s e us pid wd fin
	shift 2
	if [ -n "$BROKEN" ]; then
		printf 'BENCH {"fs":"%s","delay":"%s","wl":"%s","rep":%s,"ok":false,"error":"%s"}\n' \
			"$FS" "$DELAY" "$wl" "$rep" "$(jstr "not run: $BROKEN")"
		return 1
	fi
	case $FS in pohmel-*|nfs3|nfs4|smb3) m0=$(msgs "$FS") ;; esac
	srv_ticks
	c0=$TICKS
	rm -f "$EW" "$EP"
	# bash -c: the workloads are (exported) shell functions. The time is
	# taken inside (no process start in it), or by bench.pl itself.
	# timeout(1) waits for its child even after SIGKILL, so a task stuck in
	# the kernel (D state) would hold it for ever: a watchdog ends the wait
	# 60 s after the limit and the workload counts as timed out.
	BENCH_EP=$EP timeout -k 10 "$WL_TIMEOUT" bash -c \
		's=$EPOCHREALTIME; "$@"; rc=$?; echo "$s $EPOCHREALTIME" >"$0"; exit $rc' \
		"$EW" "$@" >"$OUT" 2>&1 &
	pid=$!
	sleep $((WL_TIMEOUT + 60)) &
	wd=$!
	wait -n -p fin "$pid" "$wd"
	rc=$?
	if [ "$fin" = "$wd" ]; then
		rc=124
		log "$FS $wl rep $rep: still running $((WL_TIMEOUT + 60))s after it started (stuck in the kernel?); left behind"
		ps -eo pid,stat,wchan:32,args | awk '$2 ~ /D/' | head -n 20
	else
		kill "$wd" 2>/dev/null
		wait "$wd" 2>/dev/null
	fi
	[ "$m0" = null ] || { m1=$(msgs "$FS"); msg=$((m1 - m0)); }
	srv_ticks
	c1=$TICKS
	if [ "$c0" != -1 ] && [ "$c1" != -1 ]; then
		printf -v cpu '%d.%02d' $(((c1 - c0) / HZ)) $(((c1 - c0) * 100 / HZ % 100))
	fi
	if [ "$rc" = 0 ]; then
		if [ -s "$EP" ]; then	# seconds, "%.6f"
			read -r v <"$EP"
			f=${v#*.}
			secs=${v%.*}.${f:0:3}
		else			# two $EPOCHREALTIMEs
			read -r s e <"$EW"
			us=$((10#${e//[.,]/} - 10#${s//[.,]/}))
			printf -v secs '%d.%03d' $((us / 1000000)) $((us / 1000 % 1000))
		fi
		srv_rss
		printf 'BENCH {"fs":"%s","delay":"%s","wl":"%s","rep":%s,"ok":true,"secs":%s,"msgs":%s,"srv_cpu":%s,"srv_rss_kb":%s,"at":%s}\n' \
			"$FS" "$DELAY" "$wl" "$rep" "$secs" "$msg" "$cpu" "$RSS" $((EPOCHSECONDS - T0))
		return 0
	fi
	err="exit $rc: $(tail -n 3 "$OUT")"
	[ "$rc" = 124 ] || [ "$rc" = 137 ] && { err="timed out after ${WL_TIMEOUT}s"; BROKEN="$wl timed out"; }
	printf 'BENCH {"fs":"%s","delay":"%s","wl":"%s","rep":%s,"ok":false,"error":"%s"}\n' \
		"$FS" "$DELAY" "$wl" "$rep" "$(jstr "$err")"
	log "$FS $wl rep $rep FAILED: $err"
	return 1
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
untar_sync() { tar -xf "$TREE" -C "$1" && sync; }
rm_sync() { rm -rf "$1" && sync; }
find_ls() { find "$1" -ls >/dev/null; }
git_status() { git -C "$1" status --porcelain >/dev/null; }
seq_write() { dd if=/dev/zero of="$1" bs=1M count="$SEQ_MB" conv=fsync status=none; }
seq_read() { dd if="$1" of=/dev/null bs=1M status=none; }
rand_read() { perl "$PL" rand "$1" "$RAND_OPS"; }
par_run() {	# half the workers on each mount, released together
	local i d pids=() rc=0 sd=/var/tmp/bench-par
	rm -rf "$sd"
	mkdir -p "$sd"
	for ((i = 0; i < PAR; i++)); do
		if ((i % 2)); then d=$D2; else d=$D1; fi
		BENCH_EP= perl "$PL" par "$d/par$i" "$PAR_FILES" "$sd/w$i" &
		pids+=($!)
	done
	for ((i = 0; i < 6000; i++)); do
		[ "$(ls "$sd" | grep -c '\.ready$')" -ge "$PAR" ] && break
		jobs -r | grep -q . || break
		sleep 0.05
	done
	for ((i = 0; i < PAR; i++)); do : >"$sd/w$i.go"; done
	for i in "${pids[@]}"; do wait "$i" || rc=1; done
	# Wall time from the release to the last worker's end.
	[ "$rc" = 0 ] && cat "$sd"/w[0-9]* |
		awk 'NR == 1 || $1 < s { s = $1 } $2 > e { e = $2 } END { printf "%.6f\n", e - s }' >"$BENCH_EP"
	return $rc
}
# many: MANY clients, each a mount from its own network namespace joined
# to the guest by a veth pair on one bridge (MBR, the servers reachable at
# MSRV), all released together (many.c); the time is the slowest
# client's, and BENCH-MANY gives the spread of their median latencies.
MANYBIN=/opt/bench/many MBR=pohbb MSRV=10.215.0.1 MTOP=/mnt/bench-many
MLIST=/var/tmp/bench-many.list MOUT=/var/tmp/bench-many.out
many_exec() { local -a dl; mapfile -t dl <"$MLIST"; "$MANYBIN" "$MANY_ROUNDS" "${dl[@]}" >"$MOUT" 2>&1; }
export -f untar_sync rm_sync find_ls git_status seq_write seq_read rand_read par_run many_exec
export TREE PL SEQ_MB RAND_OPS PAR PAR_FILES MANYBIN MANY_ROUNDS MLIST MOUT

many_setup() {	# once: MANY namespaces on the bridge; MANY=0 if that fails
	local i
	[ "$MANY" -gt 0 ] || return 0
	[ -x "$MANYBIN" ] || { log "many: no $MANYBIN: not run"; MANY=0; return 0; }
	ip link add $MBR type bridge && ip addr add $MSRV/16 dev $MBR &&
		ip link set $MBR up || { log "many: no bridge: not run"; MANY=0; return 0; }
	for ((i = 1; i <= MANY; i++)); do
		ip netns add pohbb$i &&
			ip link add pbv$i type veth peer name eth0 netns pohbb$i &&
			ip link set pbv$i master $MBR up &&
			ip -n pohbb$i addr add 10.215.$((i / 200 + 1)).$((i % 200 + 1))/16 dev eth0 &&
			ip -n pohbb$i link set eth0 up ||
			{ log "many: namespace $i not set up: not run"; MANY=0; return 0; }
	done
	log "many: $MANY network namespaces on $MBR"
}
# many_mount FS: every namespace mounts FS at MTOP/i; MLIST gets one
# directory per client. Returns 1 with $WHY.
many_mount() {
	local i src o d rc=0
	case $1 in
	pohmel-*) src=$MSRV:/ o=sec=$POHMEL_SEC
		[ "$1" = pohmel-chacha ] && o=$o,cipher=chacha20-poly1305
		[ "$1" = pohmel-wb ] && o=$o,writeback=on
		o="-t pohmel -o $o" ;;
	# no lock daemon in the namespaces (the workload takes no locks)
	nfs3) src=$MSRV:$SRV/nfs3 o="-t nfs -o vers=3,nolock,$NFSOPTS" ;;
	nfs4) src=$MSRV:$SRV/nfs4 o="-t nfs -o vers=4.2,$NFSOPTS" ;;
	*) WHY="not for $1"; return 1 ;;
	esac
	: >"$MLIST"
	for ((i = 1; i <= MANY; i++)); do
		mkdir -p $MTOP/$i
		# shellcheck disable=SC2086
		# a host name of its own (UTS namespace): an NFSv4 client is
		# known to the server by it
		nsenter --net=/run/netns/pohbb$i unshare --uts sh -c \
			"hostname bench-many-$i && exec timeout 120 mount $o $src $MTOP/$i" >>"$OUT" 2>&1 &
		((i % 8)) || wait
	done
	wait
	for ((i = 1; i <= MANY; i++)); do
		mountpoint -q $MTOP/$i || { WHY="mount $o $src in namespace $i: $(tail -n 2 "$OUT")"; rc=1; break; }
		d=$MTOP/$i/many/c$i
		case $1 in pohmel-*) d=$MTOP/$i/bench/many/c$i ;; esac
		mkdir -p "$d" && echo "$d" >>"$MLIST" || { WHY="mkdir $d"; rc=1; break; }
	done
	return $rc
}
many_umount() {
	local i
	local -a dl
	mapfile -t dl <"$MLIST"
	[ ${#dl[@]} -gt 0 ] && rm -rf "$(dirname "${dl[0]}")"
	for ((i = 1; i <= MANY; i++)); do
		mountpoint -q $MTOP/$i && umount $MTOP/$i
	done 2>/dev/null
	return 0
}
many_run() {	# REP: mount, measure, report the spread, unmount
	local r=$1 lo mid hi
	case $FS in pohmel-*|nfs3|nfs4) ;; *) return 0 ;; esac
	[ "$MANY" -gt 0 ] || return 0
	if ! many_mount "$FS"; then
		printf 'BENCH {"fs":"%s","delay":"%s","wl":"many","rep":%s,"ok":false,"error":"%s"}\n' \
			"$FS" "$DELAY" "$r" "$(jstr "$WHY")"
		many_umount
		return 1
	fi
	if measure many "$r" many_exec; then
		read -r lo mid hi < <(sed -n 's/^client [0-9]*:.* median \([0-9]*\) us.*/\1/p' "$MOUT" |
			sort -n | awk '{ v[NR] = $1 } END { print v[1], v[int((NR + 1) / 2)], v[NR] }')
		printf 'BENCH-MANY {"fs":"%s","delay":"%s","rep":%s,"clients":%s,"median_min_us":%s,"median_mid_us":%s,"median_max_us":%s}\n' \
			"$FS" "$DELAY" "$r" "$MANY" "${lo:-null}" "${mid:-null}" "${hi:-null}"
	fi
	many_umount
}

# run_workloads: every workload REPS times on $D1 (and $D2) of $FS.
run_workloads() {	# FIRST LAST: repetitions FIRST..LAST
	local r s
	SRV_PIDS=$(srv_pids "$FS" | tr '\n' ' ')
	for ((r = $1; r <= $2; r++)); do
		s=$(date +%s)
		rm -rf "$D1/t" "$D1/seq" "$D1/small" "$D1"/par* 2>/dev/null
		mkdir -p "$D1/t"
		measure untar "$r" untar_sync "$D1/t" &&
			{ find_ls "$D1/t"; measure find "$r" find_ls "$D1/t"; } &&
			{ git_status "$D1/t" >/dev/null 2>&1; measure git_status "$r" git_status "$D1/t"; }
		measure rm "$r" rm_sync "$D1/t"
		measure create "$r" perl "$PL" create "$D1/small" "$SMALL" &&
			measure stat "$r" perl "$PL" stat "$D1/small" "$SMALL" &&
			measure unlink "$r" perl "$PL" unlink "$D1/small" "$SMALL"
		drop_caches
		if measure seq_write "$r" seq_write "$D1/seq"; then
			drop_caches
			measure seq_read_cold "$r" seq_read "$D1/seq" &&
				measure seq_read_warm "$r" seq_read "$D1/seq"
			drop_caches
			measure rand_read "$r" rand_read "$D1/seq"
		fi
		rm -f "$D1/seq"
		measure parallel "$r" par_run
		many_run "$r"
		log "$FS delay $DELAY: rep $r/$REPS done in $(($(date +%s) - s))s"
		[ -z "$BROKEN" ] || break
	done
}

# --- pohmelfs with a given protection ----------------------------------------------------
# bounded SECS CMD...: CMD's exit status (124: killed at SECS); 254 when it is
# still running SECS + 15 s later (stuck in the kernel: left behind, as
# measure leaves a stuck workload).
bounded() {
	local s=$1 pid wd fin rc
	shift
	timeout -k 5 "$s" "$@" &
	pid=$!
	sleep $((s + 15)) &
	wd=$!
	wait -n -p fin "$pid" "$wd"
	rc=$?
	[ "$fin" != "$wd" ] || return 254
	kill "$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
	return "$rc"
}
# prot_of MNT: the "protection:" line (without the name) of the pohmel mount on MNT.
prot_of() {
	awk -v m="$1" '/^device / { on = ($5 == m && $7 == "fstype" && $8 == "pohmel"); next }
		on && $1 == "protection:" { sub(/^[ \t]*protection: */, ""); print; exit }' \
		/proc/self/mountstats
}
# pohmel_remount MNT [OPTS]: umount MNT (if mounted) and mount the export
# there again as the harness does (mount -t pohmel: mount.pohmel, its key),
# with -o OPTS if given. Returns 1 with $WHY.
pohmel_remount() {
	local mp=$1 o=${2:-} rc
	if mountpoint -q "$mp"; then
		bounded 60 umount "$mp" >"$OUT" 2>&1
		rc=$?
		[ "$rc" != 254 ] || POHMEL_FAIL="not run: umount $mp hung"
		[ "$rc" = 0 ] || { WHY="umount $mp: exit $rc: $(tail -n 3 "$OUT")"; return 1; }
	fi
	bounded 60 mount -t pohmel ${o:+-o "$o"} 127.0.0.1:/ "$mp" >"$OUT" 2>&1
	rc=$?
	[ "$rc" != 254 ] || POHMEL_FAIL="not run: mount on $mp hung"
	[ "$rc" = 0 ] || { WHY="mount -t pohmel ${o:+-o $o }127.0.0.1:/ $mp: exit $rc: $(tail -n 3 "$OUT")"; return 1; }
	mountpoint -q "$mp" || { WHY="mount -t pohmel ${o:+-o $o }127.0.0.1:/ $mp: exit 0 but not mounted"; return 1; }
}
# pohmel_mount SEC: both harness mount points remounted with -o sec=SEC; each
# mount's protection, as its mountstats shows it, printed (BENCH-PROT) and
# checked against SEC. Returns 1 with $WHY.
POHMEL_SEC=	# what the harness mount points have now ("" = the harness's own mounts)
# With CIPHER (pohmel-chacha): -o sec=SEC,cipher=CIPHER, and the protection
# line must name CIPHER.
pohmel_mount() {	# SEC [CIPHER] [NAME] [MORE-OPTIONS]
	local sec=$1 ci=${2:-} mp prot fs=pohmel-${3:-$1}
	local o="sec=$sec${ci:+,cipher=$ci}${4:+,$4}"
	log "pohmelfs: remounting $POHMEL_MNT1 and $POHMEL_MNT2 with -o $o"
	POHMEL_SEC=$sec
	for mp in "$POHMEL_MNT2" "$POHMEL_MNT1"; do
		pohmel_remount "$mp" "$o" || return 1
	done
	if [ "$(stat -c %d "$POHMEL_MNT1")" = "$(stat -c %d "$POHMEL_MNT2")" ]; then
		WHY="sec=$sec: $POHMEL_MNT1 and $POHMEL_MNT2 share a superblock (not two clients)"
		return 1
	fi
	for mp in "$POHMEL_MNT1" "$POHMEL_MNT2"; do
		prot=$(prot_of "$mp")
		printf 'BENCH-PROT {"fs":"%s","delay":"%s","rep":%s,"mnt":"%s","sec":"%s","protection":"%s"}\n' \
			"$fs" "$DELAY" "$rep" "$mp" "$sec" "$(jstr "$prot")"
		if [ -n "$ci" ] && [[ $prot != *" $ci"* ]]; then
			WHY="mounted with -o $o, but $mp's protection is '$prot'"
			return 1
		fi
		case $sec:$prot in
		"seal:seal "* | "auth:auth "* | "none:none (key checked at connect)"*) ;;
		*)	WHY="mounted with -o sec=$sec, but $mp's protection is '${prot:-(no protection line in /proc/self/mountstats)}' (no key? see /etc/pohmelfs/key, tests/qemu/run --key)"
			return 1 ;;
		esac
	done
}
# pohmel_restore: the harness's own mounts again (no options), once the
# pohmel-SEC runs are over and unless a hang left them unusable.
pohmel_restore() {
	local mp
	[ -n "$POHMEL_SEC" ] || return 0
	case $POHMEL_FAIL in
	"not run: "*) log "pohmelfs: harness mounts not restored ($POHMEL_FAIL)"; return 0 ;;
	esac
	for mp in "$POHMEL_MNT2" "$POHMEL_MNT1"; do
		pohmel_remount "$mp" || { log "pohmelfs: restoring the harness mount: $WHY"; return 0; }
	done
	POHMEL_SEC=
	log "pohmelfs: harness mounts restored: $(prot_of "$POHMEL_MNT1") / $(prot_of "$POHMEL_MNT2")"
}

# --- filesystems: fs_up NAME sets D1 D2 (or returns 1 with $WHY) -----------------------
WHY=
NFSOPTS=${BENCH_NFS_OPTS:-proto=tcp,hard,sec=sys}
fs_up() {
	WHY=
	case $1 in
	ext4)	D1=/var/tmp/bench-ext4; D2=$D1; mkdir -p "$D1" ;;
	tmpfs)	mkdir -p /mnt/bench-tmpfs
		mount -t tmpfs -o size=$((SEQ_MB + 1024))m tmpfs /mnt/bench-tmpfs || { WHY="mount tmpfs"; return 1; }
		D1=/mnt/bench-tmpfs; D2=$D1 ;;
	nfs3|nfs4)
		mkdir -p "$SRV/nfs3" "$SRV/nfs4" /mnt/bench-a /mnt/bench-b
		cat >/etc/exports <<-EOT
		$SRV/nfs3 127.0.0.1(rw,async,no_subtree_check,no_root_squash,fsid=101) 10.215.0.0/16(rw,async,no_subtree_check,no_root_squash,fsid=101)
		$SRV/nfs4 127.0.0.1(rw,sync,no_subtree_check,no_root_squash,fsid=102) 10.215.0.0/16(rw,sync,no_subtree_check,no_root_squash,fsid=102)
		EOT
		nfs_start >"$OUT" 2>&1 || { WHY="NFS server did not start: $(tail -n 5 "$OUT")"; return 1; }
		nfs_grace
		local o
		if [ "$1" = nfs3 ]; then o="vers=3,$NFSOPTS"; else o="vers=4.2,$NFSOPTS"; fi
		mount -t nfs -o "$o" "127.0.0.1:$SRV/$1" /mnt/bench-a >"$OUT" 2>&1 &&
			mount -t nfs -o "$o,nosharecache" "127.0.0.1:$SRV/$1" /mnt/bench-b >>"$OUT" 2>&1 ||
			{ WHY="mount -t nfs -o $o: $(tail -n 3 "$OUT")"; return 1; }
		D1=/mnt/bench-a; D2=/mnt/bench-b ;;
	smb3)
		mkdir -p "$SRV/smb" /mnt/bench-a /mnt/bench-b
		cat >/etc/samba/smb.conf <<-EOT
		[global]
		  server role = standalone server
		  server min protocol = SMB3
		  disable netbios = yes
		  smb ports = 445
		  load printers = no
		  printcap name = /dev/null
		  disable spoolss = yes
		  log file = /var/log/samba/log.%m
		  log level = 0
		[bench]
		  path = $SRV/smb
		  read only = no
		  force user = root
		EOT
		printf 'bench\nbench\n' | smbpasswd -a -s root >"$OUT" 2>&1 ||
			{ WHY="smbpasswd: $(tail -n 3 "$OUT")"; return 1; }
		systemctl start smbd >"$OUT" 2>&1 || { WHY="smbd did not start: $(tail -n 3 "$OUT")"; return 1; }
		local o=vers=3.1.1,username=root,password=bench,cache=strict,${BENCH_SMB_OPTS:-}
		o=${o%,}
		mount -t cifs -o "$o" //127.0.0.1/bench /mnt/bench-a >"$OUT" 2>&1 &&
			mount -t cifs -o "$o,nosharesock" //127.0.0.1/bench /mnt/bench-b >>"$OUT" 2>&1 ||
			{ WHY="mount -t cifs -o $o: $(tail -n 3 "$OUT")"; return 1; }
		D1=/mnt/bench-a; D2=/mnt/bench-b ;;
	9p)
		command -v diod >/dev/null || { WHY="no 9p server (diod) in the guest"; return 1; }
		mkdir -p "$SRV/9p" /mnt/bench-a /mnt/bench-b
		diod -f -n -l 127.0.0.1:564 -e "$SRV/9p" -L stderr >/var/tmp/diod.log 2>&1 &
		DIOD=$!
		local i
		for ((i = 0; i < 100; i++)); do
			ss -Hltn 'sport = :564' | grep -q . && break
			sleep 0.1
		done
		local o=trans=tcp,port=564,version=9p2000.L,aname=$SRV/9p,uname=root,access=user,msize=262144,${BENCH_9P_OPTS:-cache=mmap}
		mount -t 9p -o "$o" 127.0.0.1 /mnt/bench-a >"$OUT" 2>&1 &&
			mount -t 9p -o "$o" 127.0.0.1 /mnt/bench-b >>"$OUT" 2>&1 ||
			{ WHY="mount -t 9p -o $o: $(tail -n 3 "$OUT") $(tail -n 3 /var/tmp/diod.log)"; return 1; }
		D1=/mnt/bench-a; D2=/mnt/bench-b ;;
	pohmel-none|pohmel-auth|pohmel-seal|pohmel-chacha|pohmel-wb)
		[ -z "$POHMEL_FAIL" ] || { WHY=$POHMEL_FAIL; return 1; }
		[ -n "${POHMEL_MNT1:-}" ] || { WHY="not mounted by the harness"; return 1; }
		if [ "$1" = pohmel-chacha ]; then
			pohmel_mount seal chacha20-poly1305 chacha || return 1
		elif [ "$1" = pohmel-wb ]; then
			pohmel_mount none "" wb writeback=on || return 1
		else
			pohmel_mount "${1#pohmel-}" || return 1
		fi
		D1=$POHMEL_MNT1/bench; D2=$POHMEL_MNT2/bench
		mkdir -p "$D1" >"$OUT" 2>&1 || { WHY="mkdir on the mount: $(tail -n 3 "$OUT")"; return 1; }
		;;
	*)	WHY="unknown filesystem"; return 1 ;;
	esac
	mkdir -p "$D1" "$D2"
}
NFS_UP=0 NFS_T0=0
nfs_start() {	# knfsd by hand, once: rpcbind, statd, mountd, 8 threads
	[ "$NFS_UP" = 1 ] && { exportfs -ra; return; }
	modprobe nfsd || return 1
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || return 1
	mkdir -p /run/rpcbind /var/lib/nfs
	pidof rpcbind >/dev/null || rpcbind -w || return 1
	pidof rpc.statd >/dev/null || rpc.statd || return 1
	exportfs -ra || return 1
	pidof rpc.mountd >/dev/null || rpc.mountd || return 1
	rpc.nfsd 8 || return 1
	NFS_UP=1
	NFS_T0=$(date +%s)
}
# The NFSv4 server refuses OPENs during its grace period (lease time, 90 s)
# after it starts: it is started early and this waits out what is left.
nfs_grace() {
	local left=$((NFS_T0 + 95 - $(date +%s)))
	[ "$left" -le 0 ] || { log "waiting ${left}s for the NFSv4 grace period"; sleep "$left"; }
}
nfs_stop() {
	[ "$NFS_UP" = 1 ] || return 0
	rpc.nfsd 0; exportfs -au; exportfs -f
	NFS_UP=0
}
fs_down() {
	case $1 in
	ext4)	rm -rf "$D1" ;;
	tmpfs)	umount /mnt/bench-tmpfs ;;
	nfs3|nfs4)
		rm -rf "${D1:?}"/* 2>/dev/null
		umount /mnt/bench-b; umount /mnt/bench-a ;;
	smb3)	rm -rf "${D1:?}"/* 2>/dev/null
		umount /mnt/bench-b; umount /mnt/bench-a
		systemctl stop smbd ;;
	9p)	rm -rf "${D1:?}"/* 2>/dev/null
		umount /mnt/bench-b; umount /mnt/bench-a
		kill "$DIOD" 2>/dev/null; wait "$DIOD" 2>/dev/null ;;
	pohmel-*)
		# (D1 is another filesystem's when the setup failed early)
		case $D1 in "${POHMEL_MNT1:-/nonexistent}"/*) [ -n "$BROKEN" ] || rm -rf "$D1" ;; esac ;;
	esac 2>/dev/null
	return 0
}

set_delay() {	# round-trip ms added on lo (netem on each direction: half)
	tc qdisc del dev lo root 2>/dev/null
	tc qdisc del dev $MBR root 2>/dev/null
	[ "$1" = 0 ] && return 0
	modprobe sch_netem 2>/dev/null
	tc qdisc add dev lo root netem delay "$(awk -v r="$1" 'BEGIN { printf "%dus", r * 500 }')" ||
		{ log "tc netem failed"; return 1; }
	# the many workload's bridge: the whole round trip on the way out to
	# the namespaces (their way back is not delayed)
	[ "$MANY" = 0 ] || tc qdisc add dev $MBR root netem delay "$(awk -v r="$1" 'BEGIN { printf "%dus", r * 1000 }')" ||
		{ log "tc netem on $MBR failed"; return 1; }
}

# --- main ---------------------------------------------------------------------------------
log "bench: fs [$FSLIST], delays [$DELAYS] ms, $REPS reps, tree $TREE, seq ${SEQ_MB} MiB"
case " $FSLIST " in
*" nfs3 "*|*" nfs4 "*)
	mkdir -p "$SRV/nfs3" "$SRV/nfs4"
	printf '%s 127.0.0.1(rw,async,no_subtree_check,no_root_squash,fsid=101) 10.215.0.0/16(rw,async,no_subtree_check,no_root_squash,fsid=101)\n%s 127.0.0.1(rw,sync,no_subtree_check,no_root_squash,fsid=102) 10.215.0.0/16(rw,sync,no_subtree_check,no_root_squash,fsid=102)\n' \
		"$SRV/nfs3" "$SRV/nfs4" >/etc/exports
	nfs_start >"$OUT" 2>&1 || log "NFS server did not start: $(tail -n 5 "$OUT")" ;;
esac
many_setup
# Repetitions outermost: a run cut short still has every filesystem.
declare -A BROKEN_FS=()
for ((rep = 1; rep <= REPS; rep++)); do
first=1
for DELAY in $DELAYS; do
	set_delay "$DELAY" || continue
	log "rep $rep/$REPS, delay ${DELAY} ms round trip on lo: $(tc qdisc show dev lo | head -n 1)"
	for FS in $FSLIST; do
		case $FS in
		# Local filesystems do not go through lo: measured once per rep.
		ext4|tmpfs) [ "$first" = 1 ] || continue; d=$DELAY; DELAY=local ;;
		*) d=$DELAY ;;
		esac
		BROKEN=${BROKEN_FS[$FS]:-}
		log "$FS (delay $DELAY, rep $rep): setting up"
		if fs_up "$FS"; then
			export D1 D2
			run_workloads "$rep" "$rep"
			fs_down "$FS"
			BROKEN_FS[$FS]=$BROKEN
			# A pohmel hang (unkillable in the kernel) is not retried,
			# with any protection (the remount needs the mounts idle).
			case $FS in pohmel-*)
				[ -z "$BROKEN" ] || POHMEL_FAIL="not run: $BROKEN ($FS) at delay $DELAY" ;;
			esac
		else
			# Once per repetition: the report counts every rep that
			# did not run as failed (or skipped, if not requested).
			log "$FS: NOT RUN: $WHY"
			printf 'BENCH-SKIP {"fs":"%s","delay":"%s","rep":%s,"why":"%s"}\n' \
				"$FS" "$DELAY" "$rep" "$(jstr "$WHY")"
			fs_down "$FS"
		fi
		DELAY=$d
	done
	first=0
done
done
tc qdisc del dev lo root 2>/dev/null
tc qdisc del dev $MBR root 2>/dev/null
nfs_stop >/dev/null 2>&1
pohmel_restore
if [ -n "$(srv_pids pohmel)" ]; then
	printf 'BENCH-POHMELD {"vmhwm_kb":%s,"vmrss_kb":%s}\n' \
		"$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$(srv_pids pohmel)/status")" \
		"$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$(srv_pids pohmel)/status")"
fi
log "bench: done"
exit 0
