#!/bin/bash
# Quick end-to-end smoke test (TAP) through both mounts of the guest; the
# matrix's fallback when tests/suite/guest-entry does not exist.
#   tests/qemu/run --suite bookworm --script tests/qemu/smoke.sh
set -u
A=${POHMEL_MNT1:?run me through tests/qemu/run} B=${POHMEL_MNT2:?} E=${POHMEL_EXPORT:?}
n=0 failed=0
out=/var/tmp/smoke.out
t() {	# DESCRIPTION CMD...: one TAP test
	local d=$1
	shift
	n=$((n + 1))
	if "$@" >"$out" 2>&1; then
		echo "ok $n - $d"
	else
		echo "not ok $n - $d"
		sed 's/^/# /' "$out" | head -n 20
		failed=$((failed + 1))
	fi
}
sh_c() { /bin/sh -c "$1"; }

d=smoke.$$
t "mkdir through A" mkdir "$A/$d"
t "B sees the directory" test -d "$B/$d"
t "the export has it" test -d "$E/$d"
t "create and write through A" sh_c "echo hello >'$A/$d/f'"
t "read through B" grep -qx hello "$B/$d/f"
t "size through B" test "$(stat -c %s "$B/$d/f" 2>&1)" = 6
t "export has the data" grep -qx hello "$E/$d/f"
t "append through B" sh_c "echo world >>'$B/$d/f'"
t "A reads both lines" sh_c "test \"\$(cat '$A/$d/f')\" = \"\$(printf 'hello\\nworld')\""
t "ls through A" sh_c "ls -la '$A/$d' | grep -q ' f\$'"
t "stat mode/owner through A" sh_c "test \"\$(stat -c '%F %u %g' '$A/$d/f')\" = 'regular file 0 0'"
t "chmod through A seen by B" sh_c "chmod 600 '$A/$d/f' && test \"\$(stat -c %a '$B/$d/f')\" = 600"
t "4 MiB file written through A" sh_c "head -c 4194304 /dev/urandom >/var/tmp/smoke.big && cp /var/tmp/smoke.big '$A/$d/big'"
t "4 MiB file identical through B" cmp /var/tmp/smoke.big "$B/$d/big"
t "4 MiB file identical in the export" cmp /var/tmp/smoke.big "$E/$d/big"
t "truncate through B seen by A" sh_c "truncate -s 1000 '$B/$d/big' && test \"\$(stat -c %s '$A/$d/big')\" = 1000"
t "mkdir -p nested through B" mkdir -p "$B/$d/x/y/z"
t "A sees nested dirs" test -d "$A/$d/x/y/z"
t "rename through B" mv "$B/$d/f" "$B/$d/x/g"
t "A sees the rename" sh_c "test ! -e '$A/$d/f' && grep -qx world '$A/$d/x/g'"
t "symlink through A, readlink through B" sh_c "ln -s x/g '$A/$d/l' && test \"\$(readlink '$B/$d/l')\" = x/g"
t "hard link through A" sh_c "ln '$A/$d/x/g' '$A/$d/h' && test \"\$(stat -c %h '$B/$d/h')\" = 2"
t "rm through B" rm "$B/$d/h" "$B/$d/l"
t "A no longer sees them" sh_c "test ! -e '$A/$d/h' && test ! -L '$A/$d/l'"
t "server restart keeps data" sh_c "\$POHMEL_SERVER restart && grep -qx world '$A/$d/x/g'"
t "rm -r through A" rm -r "$A/$d"
t "B sees it gone" test ! -e "$B/$d"
t "export has it gone" test ! -e "$E/$d"
echo "1..$n"
echo "$((n - failed)) passed, $failed failed, 0 skipped"
[ "$failed" = 0 ]
