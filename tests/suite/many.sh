#!/bin/bash
# many group: many clients at once (issue 17 item 6). POHMEL_MANY_CLIENTS
# (64) network namespaces, each joined to a bridge in the guest by a veth
# pair and mounting the server from its own address, run the parallel
# workload at once (many.c: per client, ROUNDS rounds of create, write
# 8 KiB, fsync, stat, read back, rename, unlink; all started together):
#   - every client's every operation succeeds with the right data, and
#     each client's last file is in the export with its bytes;
#   - pohmeld served them as that many connections from that many
#     addresses (STATS clients), with bounded memory (VmHWM at most
#     64 MiB + 2 MiB per client) and threads (at most 5 per client +
#     32: a connection's thread and its worker pool);
#   - after the unmounts its connections are gone again, and its resident
#     memory is back within 16 MiB of what it was before the mounts.
# Each client's median latency and their spread are printed (diag); the
# 3x fairness bound is for make bench, never asserted here.
# Knobs: POHMEL_MANY_CLIENTS (64), POHMEL_MANY_ROUNDS (10).
# Usage: many.sh BIN SCRATCH [local]
bin=$1 scratch=$2 local=${3:-}
. "$(dirname "$0")/lib.sh"

if [ -n "$local" ] || [ -z "${POHMEL_EXPORT:-}" ]; then
	skip "many: clients from network namespaces" "needs the guest's server"
	tap_finish
	exit
fi
n=${POHMEL_MANY_CLIENTS:-64} rounds=${POHMEL_MANY_ROUNDS:-10}
port=${POHMEL_PORT:-7349}
br=pohbr$$ srv=10.214.0.1 top=/mnt/pohmel-many
mkdir -p "$scratch" $top
unit=pohmel-testd.service
pid=$(systemctl show -p MainPID --value $unit)
srvstat() { pohmel 127.0.0.1 stats | awk -v k="$1" '$1 == k { print $2 }'; }
status_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
cleanup() {
	local i
	for i in $(seq "$n"); do
		mountpoint -q $top/$i && umount $top/$i
		ip netns del pohm$$-$i 2>/dev/null
	done
	ip link del $br 2>/dev/null
}
trap cleanup EXIT

# --- the namespaces: one veth pair each, their guest ends on one bridge ---
setup() {
	local i
	ip link add $br type bridge && ip addr add $srv/16 dev $br &&
		ip link set $br up || return 1
	for i in $(seq "$n"); do
		ip netns add pohm$$-$i &&
			ip link add pmv$$-$i type veth peer name eth0 netns pohm$$-$i &&
			ip link set pmv$$-$i master $br up &&
			ip -n pohm$$-$i addr add 10.214.$((i / 200 + 1)).$((i % 200 + 1))/16 dev eth0 &&
			ip -n pohm$$-$i link set eth0 up || return 1
	done
}
if ! check "many: $n network namespaces on a bridge" setup; then
	tap_finish
	exit 1
fi
c0=$(srvstat clients) rss0=$(status_kb VmRSS)
# mounts in batches of 8 (each waits for its handshake)
mount_all() {
	local i rc=0
	for i in $(seq "$n"); do
		mkdir -p $top/$i
		nsenter --net=/run/netns/pohm$$-$i timeout 120 \
			mount -t pohmel $srv:/ $top/$i &
		[ $((i % 8)) = 0 ] && { wait || rc=1; }
	done
	wait || rc=1
	for i in $(seq "$n"); do
		mountpoint -q $top/$i || { echo "$top/$i: not mounted"; rc=1; }
	done
	return $rc
}
if ! check "many: $n mounts, each from its own namespace" mount_all; then
	tap_finish
	exit 1
fi
c1=$(srvstat clients)
# the server's side: peers from the namespaces' addresses (v4-mapped
# too), not counting its own
addrs=$(ss -tnH state established "( sport = :$port )" |
	grep -oE '10\.214\.[0-9]+\.[0-9]+' | grep -vx "$srv" | sort -u | wc -l)
check "many: pohmeld serves them as $n more connections from $n addresses ($c0 -> $c1 clients, $addrs addresses)" \
	test "$((c1 - c0))" = "$n" -a "$addrs" = "$n"

# every mount is of the export's root: one directory each, under one
dirs=()
for i in $(seq "$n"); do
	mkdir -p $top/$i/many.$$/c$i && dirs+=("$top/$i/many.$$/c$i")
done
hwm0=$(status_kb VmHWM) th0=$(status_kb Threads)
"$bin/many" "$rounds" "${dirs[@]}" >"$scratch/many.out" 2>&1 &
wpid=$!
thmax=$th0
while kill -0 $wpid 2>/dev/null; do
	t=$(status_kb Threads)
	[ "${t:-0}" -gt "$thmax" ] && thmax=$t
	sleep 0.2
done
wait $wpid
rc=$?
hwm=$(status_kb VmHWM)
tail -n 1 "$scratch/many.out" | diag "$(cat)"
diag "medians (us) by client: $(sed -n 's/^client \([0-9]*\):.*median \([0-9]*\) us.*/\2/p' "$scratch/many.out" | tr '\n' ' ')"
if [ $rc = 0 ]; then
	pass "many: $n clients x $rounds rounds of create, write, fsync, stat, read back, rename, unlink: all right"
else
	fail "many: $n clients x $rounds rounds of create, write, fsync, stat, read back, rename, unlink: all right"
	grep -v ' 0 errors' "$scratch/many.out" | head -n 10 | diag "$(cat)"
fi
# each client's last file in the export, with its own bytes (many.c fill)
export_ok() {
	local i bad=0
	for i in $(seq "$n"); do
		"$bin/many" --check "$i" "$((rounds - 1))" \
			"$POHMEL_EXPORT/many.$$/c$i/keep-$((rounds - 1))" || bad=1
	done
	return $bad
}
check "many: each client's last file is in the export with its bytes" export_ok
check "many: pohmeld's peak memory $((hwm / 1024)) MiB (was $((hwm0 / 1024)) MiB) <= 64 MiB + 2 MiB per client" \
	[ "$hwm" -le $(( (64 + 2 * n) * 1024 )) ]
check "many: pohmeld's threads at most $thmax (was $th0) <= 5 per client + 32" \
	[ "$thmax" -le $((5 * n + 32)) ]
umount_all() {
	local i rc=0
	rm -rf "$top/1/many.$$"
	for i in $(seq "$n"); do
		umount $top/$i || rc=1
	done
	return $rc
}
check "many: the $n mounts unmount" umount_all
gone() {
	local i c
	for i in $(seq 50); do
		c=$(srvstat clients)
		[ "$c" = "$c0" ] && return 0
		sleep 0.2
	done
	echo "clients: $c (was $c0 before the mounts)"
	return 1
}
check "many: afterwards pohmeld serves as many connections as before ($c0)" gone
# what the clients' connections and workers took goes back (it stayed:
# 91 MiB after 64 clients where 6 MiB were before, until pohmeld mapped
# its large buffers on their own and left huge pages off)
given_back() {
	local i r
	for i in $(seq 25); do
		r=$(status_kb VmRSS)
		[ "$r" -le $((rss0 + 16384)) ] && return 0
		sleep 0.2
	done
	echo "VmRSS $r kB, $rss0 kB before the mounts"
	return 1
}
check "many: pohmeld's resident memory is back within 16 MiB of before the mounts ($((rss0 / 1024)) MiB)" given_back
tap_finish
