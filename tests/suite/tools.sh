#!/bin/bash
# tools group: real programs on the mounts.
#   tar extract of a real tree + diff -r / tar --compare through the other mount,
#   git init/add/commit/status/gc/fsck/clone, rsync -a round trip (and a no-op
#   second pass), fio with crc32c verification (buffered and O_DIRECT),
#   setfacl/getfacl round trip; lock owners reach the server as opaque ids
#   (pohmel locktest, guest only).
# Usage: tools.sh W1 W2 SCRATCH [local]  (env POHMEL_TOOLS_TREE: tree to copy, default /usr/include)
w1=$1 w2=$2 scratch=$3 local=${4:-}
. "$(dirname "$0")/lib.sh"
tree=${POHMEL_TOOLS_TREE:-/usr/include}
have() { command -v "$1" >/dev/null 2>&1; }
sec() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(sec)" 'BEGIN { printf "%.1f s", b - a }'; }
# listing with type, mode, size, symlink target: what a copy must preserve
meta() { (cd "$1" && find . \( -type d -printf '%y %m - %p\n' \) -o -printf '%y %m %s %l %p\n' | LC_ALL=C sort); }
# same plus exact mtime (both copies on the mounts must agree to the ns)
metat() { (cd "$1" && find . -type f -printf '%y %m %s %T@ %p\n' | LC_ALL=C sort); }

base=$(basename "$tree")
# POHMEL_TOOLS_PART=K/N: part 1 of 2 runs tar, fio, ACLs and locktest,
# part 2 git and rsync (which uses git's tree); 1/1 (default) all
# the sections and the part index each belongs to
p_tar=1 p_git=2 p_rsync=2 p_fio=1 p_acl=1 p_lock=1
runs() { part_runs "${POHMEL_TOOLS_PART:-1/1}" "$1" "tools: $2"; }
# --- tar ---
if ! runs $p_tar tar; then :
elif [ -d "$tree" ] && have tar; then
	own=()	# a non-root extract cannot keep the owners: archive as ourselves
	is_root || own=(--owner="$(id -u)" --group="$(id -g)" --numeric-owner)
	tar -C "$(dirname "$tree")" "${own[@]}" -cf "$scratch/tree.tar" "$base" 2>/dev/null
	n=$(tar -tf "$scratch/tree.tar" | wc -l)
	t=$(sec)
	check "tar: extract $tree ($n entries) on mount 1" tar -C "$w1" -xf "$scratch/tree.tar" &&
		diag "extract took $(took "$t")"
	t=$(sec)
	check "tar: diff -r source vs mount 2" diff -r --no-dereference "$tree" "$w2/$base"
	diag "diff took $(took "$t")"
	check "tar: modes, sizes, symlinks match (mount 2)" diff <(meta "$tree") <(meta "$w2/$base")
	check "tar: --compare (content, mode, mtime) against mount 2" tar -C "$w2" -df "$scratch/tree.tar"
	check "tar: mtimes identical on both mounts" diff <(metat "$w1/$base") <(metat "$w2/$base")
	t=$(sec)
	check "tar: rm -r through mount 2" rm -r "$w2/$base"
	diag "rm -r took $(took "$t")"
	check "tar: tree gone on mount 1" test ! -e "$w1/$base"
else
	skip "tar: extract and compare" "no $tree or no tar"
fi

# --- git ---
if ! runs $p_git git; then :
elif have git; then
	g() { git -c user.name=suite -c user.email=suite@example.invalid -c init.defaultBranch=main \
		-c gc.auto=0 "$@"; }
	src=$scratch/gitsrc
	mkdir -p "$src"
	if [ -d "$tree" ]; then
		(cd "$tree" && find . -type f | LC_ALL=C sort | head -n 150 | cpio -pdm --quiet "$src" 2>/dev/null) ||
			(cd "$tree" && find . -type f | LC_ALL=C sort | head -n 150 | while read -r f; do
				mkdir -p "$src/$(dirname "$f")" && cp -p "$f" "$src/$f"; done)
	fi
	for i in $(seq 1 20); do echo "line $i" >"$src/file$i.txt"; done
	repo=$w1/repo
	mkdir -p "$repo"
	cp -a "$src/." "$repo/"
	check "git: init on mount 1" g -C "$repo" init -q
	check "git: add" g -C "$repo" add -A
	check "git: commit" g -C "$repo" commit -q -m first
	echo change >>"$repo/file1.txt"
	echo change >>"$repo/file2.txt"
	rm "$repo/file3.txt"
	check "git: status via mount 2 shows 2 modified, 1 deleted" \
		test "$(g -C "$w2/repo" status --porcelain | LC_ALL=C sort | tr '\n' ' ')" = " D file3.txt  M file1.txt  M file2.txt "
	check "git: commit -a via mount 2" g -C "$w2/repo" commit -q -a -m second
	check "git: status clean on mount 1" test -z "$(g -C "$repo" status --porcelain)"
	check "git: log has 2 commits" test "$(g -C "$repo" rev-list --count HEAD)" = 2
	check "git: gc (repack, prune: renames and unlinks)" g -C "$repo" gc -q --prune=now
	check "git: fsck --full via mount 2" g -C "$w2/repo" fsck --full --strict --no-progress
	check "git: clone from mount 2 to mount 1" g clone -q "$w2/repo" "$w1/clone"
	check "git: clone's tree equals the repo's" diff -r --exclude=.git "$w1/clone" "$w2/repo"
	check "git: status clean on the clone via mount 2" test -z "$(g -C "$w2/clone" status --porcelain)"
else
	skip "git: repository on the mount" "git not installed"
fi

# --- rsync ---
if ! runs $p_rsync rsync; then :
elif have rsync && [ -d "$tree" ]; then
	t=$(sec)
	check "rsync: -a $tree to mount 1" rsync -a "$tree/" "$w1/rs/"
	diag "rsync took $(took "$t")"
	check "rsync: second pass through mount 2 changes nothing (mtimes, sizes, modes kept)" \
		test -z "$(rsync -ai "$tree/" "$w2/rs/")"
	check "rsync: -a back from mount 2 to local disk" rsync -a "$w2/rs/" "$scratch/rsback/"
	check "rsync: round trip identical (diff -r)" diff -r --no-dereference "$tree" "$scratch/rsback"
	check "rsync: round trip metadata identical" diff <(meta "$tree") <(meta "$scratch/rsback")
	check "rsync: --delete of the copy via mount 2" rsync -a --delete "$scratch/gitsrc/" "$w2/rs/"
	check "rsync: mount 1 matches after --delete" diff -r "$scratch/gitsrc" "$w1/rs"
else
	skip "rsync: round trip" "rsync not installed"
fi

# --- fio ---
if ! runs $p_fio fio; then :
elif have fio; then
	fj() { fio --verify_state_save=0 --output-format=normal --minimal --ioengine=psync --verify=crc32c --verify_fatal=1 \
		--do_verify=1 --group_reporting "$@"; }
	check "fio: 4 MiB random 4k writes, crc32c verify (buffered)" \
		fj --name=buf --filename="$w1/fio.buf" --size=4m --bs=4k --rw=randwrite
	check "fio: the same file verified again through mount 2" \
		fj --name=buf --filename="$w2/fio.buf" --size=4m --bs=4k --rw=randwrite --verify_only
	if [ -n "$local" ] && [ "$(stat -f -c %T "$w1")" = tmpfs ] &&
		! dd if=/dev/zero of="$w1/odirect.probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
		skip "fio: sequential 64k writes with O_DIRECT, verify" "this tmpfs refuses O_DIRECT"
	else
		check "fio: 4 MiB sequential 64k writes with O_DIRECT, verify" \
			fj --name=dio --filename="$w1/fio.dio" --size=4m --bs=64k --rw=write --direct=1
	fi
	check "fio: 2 concurrent jobs x 2 MiB random writes via mount 2, md5 verify" \
		fio --minimal --ioengine=psync --name=mix --directory="$w2" --numjobs=2 --size=2m --bs=4k \
		--rw=randwrite --verify=md5 --verify_fatal=1 --do_verify=1
else
	skip "fio: verify" "fio not installed"
fi

# --- ACL tools ---
if ! runs $p_acl ACLs; then :
elif have setfacl && have getfacl; then
	touch "$w1/acl.file"
	check "setfacl: user:nobody:rw on mount 1" setfacl -m u:nobody:rw,g::r "$w1/acl.file"
	check "getfacl: entry visible on mount 2" sh -c "getfacl -cn '$w2/acl.file' | grep -qx 'user:65534:rw-'"
	check "setfacl: -b removes the ACL" setfacl -b "$w2/acl.file"
	check "getfacl: gone on mount 1" sh -c "! getfacl -cn '$w1/acl.file' | grep -q '^user:65534'"
else
	skip "setfacl/getfacl round trip" "acl tools not installed"
fi

# --- pohmel locktest: lock owners as the server got them ---
# An fcntl write lock and a flock held on mount 1; the server must know
# their owners by opaque ids, not by kernel addresses (x86-64: upper half).
if ! runs $p_lock locktest; then :
elif [ -n "$local" ] || [ -z "${POHMEL_EXPORT:-}" ] || ! have pohmel || ! have perl; then
	skip "pohmel locktest: lock owners on the wire" "needs the guest's mounts and server, pohmel, perl"
else
	rel=${w1#"$POHMEL_MNT1"}
	: >"$w1/lk.posix"
	: >"$w1/lk.flock"
	perl -MFcntl -e 'open(F, "+<", $ARGV[0]) or die "$!";
		my $fl = pack("s s x4 q q i x4", F_WRLCK, 0, 0, 0, 0);	# struct flock, x86-64
		fcntl(F, F_SETLK, $fl) or die "F_SETLK: $!"; sleep 60' "$w1/lk.posix" &
	posix_pid=$!
	perl -MFcntl=:flock -e 'open(F, "<", $ARGV[0]) or die "$!";
		flock(F, LOCK_EX | LOCK_NB) or die "flock: $!"; sleep 60' "$w1/lk.flock" &
	flock_pid=$!
	# held KIND FILE [-f]: locktest reports a KIND write lock on FILE (in $lt)
	held() {
		lt=$(pohmel 127.0.0.1 locktest ${3:+"$3"} "$rel/$2") &&
			[[ $lt =~ ^owner\ 0x[0-9a-f]{16}\ pid\ [0-9]+\ $1\ write ]]
	}
	# a kernel address: 8-byte aligned, in the upper half (0xff.. with
	# 5-level paging, la57 in cpuinfo; else 0xffff8..). An opaque id looks
	# like one by chance: 2^-11 with 5-level paging, 2^-20 without.
	khalf='ffff[89a-f]'
	grep -qw la57 /proc/cpuinfo && khalf=ff
	not_kernel() { echo "$lt"; [[ ! $lt =~ ^owner\ 0x${khalf}[0-9a-f]*[08]\  ]]; }
	for k in posix flock; do
		f=""
		[ $k = flock ] && f=-f
		if check "pohmel locktest: the server knows a $k lock's owner" within 10 held $k lk.$k $f; then
			check "pohmel locktest: the $k lock's owner is no kernel address" not_kernel &&
				diag "$lt"
		else
			diag "last locktest: $lt"
		fi
	done
	kill "$posix_pid" "$flock_pid" 2>/dev/null
	wait "$posix_pid" "$flock_pid" 2>/dev/null
fi
tap_finish
