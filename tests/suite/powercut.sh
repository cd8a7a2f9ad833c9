#!/bin/bash
# Client side of tests/qemu/powercut (run by tests/qemu/run --no-server, so
# the module is loaded and nothing is mounted): brings up the second NIC
# to the server VM, mounts its pohmeld (hard mount) on /mnt/pc and runs
# $POHMEL_TESTBIN/powercut, which crashes the server VM CYCLES times and
# checks what survived.
#   powercut.sh CYCLES SEED KEEP_GOING CRASH
# CRASH: reset (the server machine, sysrq b) or kill (pohmeld only).
set -u
cycles=${1:-10} seed=${2:-1} keep_going=${3:-0} crash=${4:-reset}
SRV=10.77.0.1 MNT=/mnt/pc

modprobe virtio_net || { echo "powercut: modprobe virtio_net failed"; exit 125; }
for i in $(seq 50); do
	[ -d /sys/class/net/eth0 ] && break
	sleep 0.1
done
[ -d /sys/class/net/eth0 ] || { echo "powercut: no eth0"; ip link; exit 125; }
ip addr add 10.77.0.2/24 dev eth0 && ip link set eth0 up || exit 125

# The server VM boots in parallel with us; its control port answers once
# pohmeld is serving.
t0=$(date +%s)
until timeout 2 bash -c "exec 3<>/dev/tcp/$SRV/7351" 2>/dev/null; do
	if [ $(($(date +%s) - t0)) -gt 120 ]; then
		echo "powercut: the server VM's control port $SRV:7351 did not answer in 120 s"
		ip addr; exit 125
	fi
	sleep 0.5
done
echo "powercut: server VM up after $(($(date +%s) - t0)) s"

mkdir -p "$MNT"
mount -t pohmel -o hard "$SRV:/" "$MNT" || { echo "powercut: mount failed"; dmesg | tail; exit 125; }
"$POHMEL_TESTBIN/powercut" -m "$MNT" -s "$SRV" -n "$cycles" -S "$seed" \
	-c "$crash" $([ "$keep_going" = 1 ] && echo -k)
rc=$?
umount "$MNT" || { echo "powercut: final umount failed"; [ "$rc" != 0 ] || rc=1; }
exit "$rc"
