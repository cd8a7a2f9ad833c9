#!/bin/bash
# writeback group: the suite's own workloads again, on two more mounts of
# the export with writeback=on (src/wb.c: creates, unlinks, attributes
# and data kept locally under directory grants and sent later; each
# mount's cache stays coherent with the other's through recalls):
#   posix   the POSIX checks (posix.c) across the two mounts;
#   fsx     the random exerciser with cross-reads (fsx.sh);
#   stress  workers on both mounts, own and shared files (stress.c);
#   tar     a tree extracted twice on one mount, one copy removed there
#           at once (local unlinks, cancelled creates), the other compared
#           and removed through the other mount;
#   restart a file written on mount 1 and kept in its page cache under
#           the grant, then pohmeld killed and started: the grants end with
#           the connection, so the data goes at the reconnect (within 3 s,
#           not after the flusher's 30) and a change made then in the
#           export is seen on mount 1 next to it.
# POHMEL_WRITEBACK_PART=K/N runs every Nth of them from the Kth (make
# check gives each to an old and a new kernel; check-full runs all).
# Usage: writeback.sh BIN W1 SCRATCH READDIR_N FSX_OPS STRESS_S
bin=$1 w1=$2 scratch=$3 readdir_n=$4 fsx_ops=$5 stress_s=$6
. "$(dirname "$0")/lib.sh"
part=${POHMEL_WRITEBACK_PART:-1/1}
runs() { part_runs "$part" "$1" "writeback: $2"; }
tree=${POHMEL_TOOLS_TREE:-/usr/include}
rel=${w1#"$POHMEL_MNT1"}

m1=$scratch/wb1.mnt m2=$scratch/wb2.mnt
mkdir -p "$m1" "$m2"
mounted=0
if timeout -k 5 60 mount -t pohmel -o writeback=on 127.0.0.1:/ "$m1" &&
	timeout -k 5 60 mount -t pohmel -o writeback=on 127.0.0.1:/ "$m2"; then
	pass "writeback: two more mounts with writeback=on"
	mounted=1
else
	fail "writeback: two more mounts with writeback=on"
fi
d1=$m1$rel d2=$m2$rel

if [ $mounted = 0 ]; then :
elif runs 1 posix; then
	mkdir -p "$d1/posix"
	run_tap "writeback: " timeout -k 10 600 "$bin/posix" --readdir "$readdir_n" "$d1/posix" "$d2/posix"
fi

if [ $mounted = 0 ]; then :
elif runs 2 stress; then
	mkdir -p "$d1/stress"
	run_tap "writeback: " timeout -k 10 $((stress_s + 180)) "$bin/stress" --procs 4 --seconds "$stress_s" \
		--race 0 "$d1/stress" "$d2/stress"
fi

if [ $mounted = 0 ]; then :
elif runs 3 fsx; then
	mkdir -p "$d1/fsx" "$scratch/fsx"
	run_tap "writeback: " timeout -k 10 $((300 + fsx_ops / 50)) "$(dirname "$0")/fsx.sh" "$bin" "$d1/fsx" \
		"$d2/fsx" "$scratch/fsx" "$fsx_ops" 2
fi

tar_both() {
	tar -C "$d1/tar" -xf "$scratch/tree.tar" && mkdir "$d1/tar/b" &&
		tar -C "$d1/tar/b" -xf "$scratch/tree.tar"
}
if [ $mounted = 0 ]; then :
elif ! runs 4 tar; then :
elif [ -d "$tree" ]; then
	base=$(basename "$tree")
	mkdir -p "$d1/tar"
	tar -C "$(dirname "$tree")" -cf "$scratch/tree.tar" "$base" 2>/dev/null
	n=$(tar -tf "$scratch/tree.tar" | wc -l)
	r0=$(mstat "$m1" wb_removed) x0=$(mstat "$m1" wb_cancelled)
	check "writeback: tar: extract $tree ($n entries) twice on mount 1" tar_both
	check "writeback: tar: rm -r of the second copy on mount 1" rm -r "$d1/tar/b"
	r1=$(mstat "$m1" wb_removed) x1=$(mstat "$m1" wb_cancelled)
	diag "unlinked locally: $((r1 - r0)), of which never sent: $((x1 - x0))"
	check "writeback: tar: diff -r source vs mount 2" diff -r --no-dereference "$tree" "$d2/tar/$base"
	check "writeback: tar: --compare (content, mode, mtime) against mount 2" tar -C "$d2/tar" -df "$scratch/tree.tar"
	check "writeback: tar: the removed copy is gone on mount 2 and in the export" \
		eval 'test ! -e "$d2/tar/b" && test ! -e "$POHMEL_EXPORT$rel/tar/b"'
	check "writeback: tar: rm -r through mount 2" rm -r "$d2/tar/$base"
	check "writeback: tar: tree gone on mount 1" test ! -e "$d1/tar/$base"
else
	fail "writeback: tar: no $tree to extract"
fi

# restart: see the top
kept_data() {
	local f=$d1/restart/kept e=$POHMEL_EXPORT$rel/restart/kept rc0 i
	mkdir -p "$d1/restart" && : >"$f" && stat "$f" >/dev/null || return 1
	# mount 2's listing recalls the directory's grant: mount 1 sends its
	# creates (the file is on the server, empty). The data written then
	# is kept under the file's own grant. (Written before, it would have
	# gone in the create's BATCH; a create still on the log at the kill
	# would go at the reconnect and bring a new grant, under which
	# keeping the data is right.)
	ls -f "$d2/restart" >/dev/null && echo granted >"$f" || return 1
	sleep 1
	[ "$(stat -c %s "$e" 2>/dev/null)" != 8 ] ||
		{ echo "the data was in the export before the restart: nothing to test"; return 1; }
	rc0=$(mstat "$m1" reconnects)
	$POHMEL_SERVER kill && $POHMEL_SERVER start || { echo "server kill/start failed"; return 1; }
	for ((i = 0; i < 300; i++)); do
		[ "$(mstat "$m1" reconnects)" -gt "$rc0" ] && break
		sleep 0.1
	done
	[ "$(mstat "$m1" reconnects)" -gt "$rc0" ] || { echo "mount 1 did not reconnect in 30 s"; return 1; }
	for ((i = 0; i < 30; i++)); do
		[ "$(stat -c %s "$e" 2>/dev/null)" = 8 ] && break
		sleep 0.1
	done
	[ "$(stat -c %s "$e" 2>/dev/null)" = 8 ] ||
		{ echo "3 s after the reconnect the export has $(stat -c %s "$e" 2>&1) bytes, not 8"; return 1; }
	echo "the data reached the export $i tenths of a second after the reconnect was counted" >"$scratch/kept.took"
	printf 'more\n' >>"$e"
	# a grant taken since is recalled by the export's change (within 1 s)
	within 3 eval '[ "$(cat "$f")" = "$(printf "granted\nmore")" ]' ||
		{ echo "mount 1 reads '$(cat "$f")' (size $(stat -c %s "$f"))"; return 1; }
}
if [ $mounted = 0 ]; then :
elif runs 5 restart; then
	check "writeback: restart: data kept under a grant is written at the reconnect after a pohmeld kill, and an append in the export is then seen" kept_data
	[ ! -f "$scratch/kept.took" ] || diag "$(cat "$scratch/kept.took")"
fi

if [ $mounted = 1 ]; then
	rm -rf "${d1:?}/posix" "$d1/stress" "$d1/fsx" "$d1/tar" "$d1/restart"
	timeout -k 5 60 umount "$m1" && timeout -k 5 60 umount "$m2" ||
		fail "writeback: the writeback mounts unmount"
fi
tap_finish
