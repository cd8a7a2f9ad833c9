#!/bin/bash
# netns: a third client mounted from another network namespace. A veth pair
# joins a fresh namespace to the guest's; the mount is made there (only the
# network namespace changes: the mount is visible everywhere), so its
# connection must come from the namespace's address, and the coherence
# trials then run between mount 1 (loopback) and this client.
# Usage: netns.sh BIN G1 TRIALS [--local]
set -u
bin=$1 g1=$2 trials=$3 local_mode=${4:-}
n=0
tap_ok() { n=$((n + 1)); echo "ok $n - $*"; }
tap_no() { n=$((n + 1)); echo "not ok $n - $*"; }
t() {	# description, command...: ok if the command succeeds
	local d=$1; shift
	if "$@" >/tmp/netns.out 2>&1; then tap_ok "$d"; else
		tap_no "$d"; sed 's/^/#   /' /tmp/netns.out | tail -15; fi
}
if [ -n "$local_mode" ]; then
	echo "1..0 # SKIP needs the kernel client (--local mode)"
	exit 0
fi
: "${POHMEL_MNT1:?}"
port=7349
ns=pohmelns$$ mnt=/mnt/pohmel-netns
srv=10.213.0.1 cli=10.213.0.2
in_ns() { nsenter --net=/run/netns/$ns "$@"; }
cleanup() {
	mountpoint -q $mnt && umount $mnt
	ip netns del $ns 2>/dev/null
	ip link del pohv0 2>/dev/null
	rm -f /tmp/netns.out
}
trap cleanup EXIT

t "a namespace joined to the guest by a veth pair" sh -c "
	ip netns add $ns &&
	ip link add pohv0 type veth peer name pohv1 &&
	ip link set pohv1 netns $ns &&
	ip addr add $srv/30 dev pohv0 && ip link set pohv0 up &&
	nsenter --net=/run/netns/$ns sh -c 'ip link set lo up &&
		ip addr add $cli/30 dev pohv1 && ip link set pohv1 up'"
t "127.0.0.1:$port is not the server inside the namespace" \
	sh -c "! nsenter --net=/run/netns/$ns timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$port'"
t "the server answers at $srv:$port from the namespace" \
	in_ns timeout 10 bash -c "until exec 3<>/dev/tcp/$srv/$port; do sleep 0.5; done"
mkdir -p $mnt
if ! in_ns timeout 60 mount -t pohmel $srv:/ $mnt >/tmp/netns.out 2>&1; then
	tap_no "mount -t pohmel $srv:/ from the namespace"
	sed 's/^/#   /' /tmp/netns.out
	echo "1..$n"
	exit 1
fi
tap_ok "mount -t pohmel $srv:/ from the namespace"
t "the mount is visible outside the namespace, as its own client" sh -c \
	"mountpoint -q $mnt && [ \$(stat -c %d $mnt) != \$(stat -c %d $POHMEL_MNT1) ]"
# The server's side of the connection, seen in the guest's namespace:
# its peer is the namespace's address, not loopback.
t "its connection comes from $cli (the namespace), not loopback" sh -c \
	"o=\$(ss -tnH state established '( sport = :$port )'); echo \"\$o\"; echo \"\$o\" | grep -Eq '(^|[^0-9.])$cli(]?):'"
t "the client socket lives in the namespace" sh -c \
	"nsenter --net=/run/netns/$ns ss -tnH state established '( dport = :$port )' | grep -q '$srv:$port'"
rel=${g1#"$POHMEL_MNT1"/}
g3=$mnt/$rel
t "a file written on mount 1 reads back on the namespace's mount" sh -c \
	"echo netns-\$\$ > $g1/hello && [ \"\$(cat $g3/hello)\" = netns-\$\$ ] && rm $g3/hello && [ ! -e $g1/hello ]"
# Coherence between the loopback client and the namespace client: TAP of
# its own, renumbered into this group's.
rc=
while IFS= read -r line; do
	case $line in
	"ok "*) tap_ok "coherence (mount 1 / netns): ${line#ok * - }" ;;
	"not ok "*) tap_no "coherence (mount 1 / netns): ${line#not ok * - }" ;;
	"1.."*) ;;
	"exit-status "*) rc=${line#exit-status } ;;
	*) echo "$line" ;;
	esac
done < <("$bin/coherence" --trials "$trials" "$g1" "$g3" 2>&1; echo "exit-status $?")
[ "$rc" = 0 ] || tap_no "coherence exited with status $rc"
t "umount of the namespace's mount" umount $mnt
echo "1..$n"
