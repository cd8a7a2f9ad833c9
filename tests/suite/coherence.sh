#!/bin/bash
# coherence group: the guarantee of README "Coherence", randomized.
#   clients: trials among mount 1, mount 2 and a third client mounted from
#     a fresh network namespace joined by a veth pair (its connection comes
#     from the namespace's address); each trial changes an object through
#     one client and checks the others at once;
#   export: trials whose changes are made directly in the server's export
#     directory (not through pohmeld); every client must see each within
#     the documented bound for local changes (1 s).
# TRIALS of each kind, split over JOBS concurrent runs (own directories,
# own seeds) so that the recalls of one overlap the others' work.
# Usage: coherence.sh BIN G1 G2 SCRATCH TRIALS JOBS [local]
bin=$1 g1=$2 g2=$3 scratch=$4 trials=$5 jobs=$6 local=${7:-}
. "$(dirname "$0")/lib.sh"

if [ -n "$local" ]; then
	# plain directories: the model checks only
	"$bin/coherence" --trials "$trials" "$g1" "$g2"
	exit
fi
: "${POHMEL_MNT1:?}" "${POHMEL_EXPORT:?}"
port=${POHMEL_PORT:-7349}
ns=pohmelns$$ mnt3=/mnt/pohmel-netns
srv=10.213.0.1 cli=10.213.0.2
in_ns() { nsenter --net=/run/netns/$ns "$@"; }
cleanup() {
	mountpoint -q $mnt3 && umount $mnt3
	ip netns del $ns 2>/dev/null
	ip link del pohv0 2>/dev/null
}
trap cleanup EXIT

check "netns: a namespace joined to the guest by a veth pair" sh -c "
	ip netns add $ns &&
	ip link add pohv0 type veth peer name pohv1 &&
	ip link set pohv1 netns $ns &&
	ip addr add $srv/30 dev pohv0 && ip link set pohv0 up &&
	nsenter --net=/run/netns/$ns sh -c 'ip link set lo up &&
		ip addr add $cli/30 dev pohv1 && ip link set pohv1 up'"
check "netns: 127.0.0.1:$port is not the server inside the namespace" \
	sh -c "! nsenter --net=/run/netns/$ns timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$port'"
check "netns: the server answers at $srv:$port from the namespace" \
	in_ns timeout 10 bash -c "until exec 3<>/dev/tcp/$srv/$port; do sleep 0.5; done"
mkdir -p $mnt3
if ! check "netns: mount -t pohmel $srv:/ from the namespace" \
	in_ns timeout 60 mount -t pohmel $srv:/ $mnt3; then
	tap_finish
	exit 1
fi
check "netns: the mount is visible outside the namespace, as its own client" sh -c \
	"mountpoint -q $mnt3 && [ \$(stat -c %d $mnt3) != \$(stat -c %d $POHMEL_MNT1) ]"
# The server's side of the connection, seen in the guest's namespace: its
# peer is the namespace's address, not loopback.
check "netns: its connection comes from $cli (the namespace), not loopback" sh -c \
	"o=\$(ss -tnH state established '( sport = :$port )'); echo \"\$o\"; echo \"\$o\" | grep -Eq '(^|[^0-9.])$cli(]?):'"
check "netns: the client socket lives in the namespace" sh -c \
	"nsenter --net=/run/netns/$ns ss -tnH state established '( dport = :$port )' | grep -q '$srv:$port'"
rel=${g1#"$POHMEL_MNT1"}
g3=$mnt3$rel ex=$POHMEL_EXPORT$rel
check "netns: a file written on mount 1 reads back on the namespace's mount" sh -c \
	"echo netns-\$\$ > $g1/hello && [ \"\$(cat $g3/hello)\" = netns-\$\$ ] && rm $g3/hello && [ ! -e $g1/hello ]"

# --- the trials: JOBS runs of each kind at once ---
per=$(((trials + jobs - 1) / jobs))
xargs=${POHMEL_COHERENCE_ARGS:-}	# e.g. "--observers all"
declare -A pid desc
for k in $(seq 1 "$jobs"); do
	mkdir "$g1/c$k" "$g1/e$k" || fail "mkdir $g1/c$k $g1/e$k"
	"$bin/coherence" --trials "$per" $xargs "$g1/c$k" "$g2/c$k" "$g3/c$k" >"$scratch/c$k.tap" 2>&1 &
	pid[c$k]=$! desc[c$k]="clients (mount 1, mount 2, netns) run $k"
	"$bin/coherence" --trials "$per" $xargs --export "$ex/e$k" "$g1/e$k" "$g2/e$k" "$g3/e$k" \
		>"$scratch/e$k.tap" 2>&1 &
	pid[e$k]=$! desc[e$k]="export to clients run $k"
done
for j in $(printf '%s\n' "${!pid[@]}" | sort); do
	wait "${pid[$j]}"
	rc=$?
	relay_tap "coherence ${desc[$j]}: " "$scratch/$j.tap" "$rc"
done
check "netns: umount of the namespace's mount" umount $mnt3
tap_finish
