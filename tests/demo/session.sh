#!/bin/bash
# The demo session `make demo` runs in the guest: a short, real tour of a
# pohmel mount, with two independent clients of one pohmeld.
set -euo pipefail
a=$POHMEL_MNT1 b=$POHMEL_MNT2
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "$*"; eval "$@"; }

echo "POHMELFS demo on Debian $POHMEL_SUITE, kernel $POHMEL_KVER"
echo "pohmeld exports $POHMEL_EXPORT; client A at $a, client B at $b"
run "grep ' pohmel ' /proc/mounts"
run "echo 'hello from client A' > $a/hello.txt"
run "cat $b/hello.txt"
run "mkdir -p $a/project/src && cp /etc/os-release $a/project/src/"
run "ls -l $b/project/src"
run "ln -s src/os-release $a/project/link && readlink $b/project/link"
run "mv $b/hello.txt $b/greeting.txt && ls $a"
run "chmod 600 $a/greeting.txt && stat -c '%A %s %n' $b/greeting.txt"
run "tar -C /usr/share -cf - perl5 2>/dev/null | tar -C $a/project -xf - && du -s --apparent-size $b/project/perl5 | cut -f1"
run "diff -r /usr/share/perl5 $b/project/perl5 && echo identical"
run "ls -la $POHMEL_EXPORT"
run "df -h $a"
run "rm -r $a/project $a/greeting.txt && ls -A $b | wc -l"
echo
echo "Demo done. For a shell in such a guest: make shell (or tests/qemu/shell --suite $POHMEL_SUITE)"
