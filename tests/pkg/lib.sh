# Shared helpers of tests/pkg/*: private copies of the cached Debian roots
# and commands run inside them. Source it; needs root.
# shellcheck shell=bash

POHMEL_CACHE=${POHMEL_CACHE:-/var/tmp/pohmelfs-cache}
pkg_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

pkg_die() { echo "${0##*/}: $*" >&2; exit 1; }

# pkg_copy_tree SRC DEST: the source tree SRC into DEST: in a git checkout
# the tracked files and the untracked ones git does not ignore, as they
# are in the working tree; elsewhere every file (build products of a
# checkout stay out).
pkg_copy_tree() {
	(
		cd "$1" || exit 1
		if git rev-parse --git-dir >/dev/null 2>&1; then
			git ls-files -z --cached --others --exclude-standard
		else
			find . -path ./.git -prune -o \( -type f -o -type l \) -printf '%P\0'
		fi
	) | rsync -a --from0 --files-from=- "$1/" "$2/"
}
pkg_log() { echo "${0##*/}: $*" >&2; }

# pkg_ensure_root SUITE: the cached root, built by tests/qemu/mkroot if
# missing (mkroot is a no-op when the root is current).
pkg_ensure_root() {
	local root=$POHMEL_CACHE/roots/$1
	if [ ! -f "$root/.pohmel-stamp" ]; then
		[ -x "$pkg_top/tests/qemu/mkroot" ] || pkg_die "no root $root and no tests/qemu/mkroot"
		"$pkg_top/tests/qemu/mkroot" "$1" || pkg_die "mkroot $1 failed"
	fi
	[ -f "$root/.pohmel-stamp" ] || pkg_die "root $root is not ready"
}

# pkg_no_mounts DIR: refuse to go on when something is mounted below DIR
# (never rm -rf a tree with /proc or /dev mounted in it).
pkg_no_mounts() {
	local d
	# nothing can be mounted below a path that does not exist (and
	# readlink -f prints nothing when its parent is missing too)
	[ -e "$1" ] || return 0
	d=$(readlink -f "$1")
	[ -n "$d" ] || pkg_die "cannot resolve $1"
	if awk -v d="$d" '$5 == d || index($5, d "/") == 1 { found = 1 } END { exit !found }' \
		/proc/self/mountinfo; then
		pkg_die "something is mounted below $d; unmount it first"
	fi
}

# pkg_copy_root SUITE DEST: DEST becomes a fresh private copy of the root
# (the cached roots are shared with the QEMU harness and never modified).
pkg_copy_root() {
	local root=$POHMEL_CACHE/roots/$1 dest=$2
	pkg_ensure_root "$1"
	if [ -e "$dest" ]; then
		pkg_no_mounts "$dest"
		rm -rf --one-file-system "$dest"
	fi
	mkdir -p "$(dirname "$dest")"
	rm -rf --one-file-system "$dest.tmp"
	# -x: others may chroot into the shared root with /proc (or more)
	# mounted; copy the mount points, never what is mounted on them.
	cp -a -x --reflink=auto "$root" "$dest.tmp" || pkg_die "copying $root failed"
	mv "$dest.tmp" "$dest"
}

# pkg_private_ns "$0" "$@": run the calling script again in a private mount
# namespace (once), so that the overlay mounts of pkg_overlay_root can never
# outlive it, whatever happens. Call it first thing.
pkg_private_ns() {
	if [ "${POHMEL_PKG_NS:-}" != "$$" ]; then
		exec unshare --mount --propagation private -- /bin/sh -c \
			'POHMEL_PKG_NS=$$ exec "$@"' pkg_private_ns "$@"
	fi
}

# pkg_overlay_root SUITE DEST: DEST becomes a fresh private view of the
# cached root, writable, through overlayfs (lower: the cached root, never
# modified; upper: DEST.upper): nothing to copy, nothing big to delete.
# Needs pkg_private_ns. pkg_drop_root DEST unmounts and removes it.
pkg_overlay_root() {
	local root dest=$2
	[ "${POHMEL_PKG_NS:-}" = "$$" ] || pkg_die "pkg_overlay_root: call pkg_private_ns first"
	pkg_ensure_root "$1"
	root=$(readlink -f "$POHMEL_CACHE/roots/$1")
	pkg_drop_root "$dest"
	mkdir -p "$dest" "$dest.upper" "$dest.ovlwork"
	mount -t overlay overlay \
		-o "lowerdir=$root,upperdir=$dest.upper,workdir=$dest.ovlwork" "$dest" ||
		pkg_die "overlay mount of $root on $dest failed"
}
pkg_drop_root() {
	if mountpoint -q "$1"; then
		umount "$1" || pkg_die "cannot unmount $1"
	fi
	pkg_no_mounts "$1"
	rm -rf --one-file-system "$1" "$1".upper "$1".ovlwork
}

# pkg_chroot DIR CMD...: run CMD in DIR with /proc mounted (and /sys with
# the cgroup tree when POHMEL_CHROOT_SYS=1, for systemd-analyze), inside a
# private mount namespace so that nothing stays mounted whatever happens.
pkg_chroot() {
	local dir=$1; shift
	unshare --mount --propagation private -- /bin/sh -c '
		dir=$1; shift
		mount -t proc proc "$dir/proc" || exit 1
		if [ "${POHMEL_CHROOT_SYS:-0}" = 1 ]; then
			mount -t sysfs -o ro sysfs "$dir/sys" &&
			mount --rbind /sys/fs/cgroup "$dir/sys/fs/cgroup" || exit 1
		fi
		exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
			DEBIAN_FRONTEND=noninteractive TERM=dumb chroot "$dir" "$@"
	' pkg_chroot "$dir" "$@"
}

# pkg_guest_run SUITE ROOT FORMAT [ARG...]: boot ROOT (a private copy of SUITE's root
# with the packages installed) under QEMU with tests/qemu/run --root, which
# adds only its guest runner, and run tests/pkg/guest-pkg-test FORMAT there.
# The guest's TAP lines go through the caller's ok/not_ok ("guest: ...");
# the harness's verdict (script status, guest kernel log) is one more line.
pkg_guest_run() {
	local suite=$1 root=$2 format=$3 t0=$SECONDS rc=0 line
	shift 3	# the rest: more arguments of guest-pkg-test
	"$pkg_top/tests/qemu/run" --suite "$suite" --root "$root" --timeout 300 \
		--script "$pkg_top/tests/pkg/guest-pkg-test" -- "$format" "$@" \
		>"$root.guest" 2>"$root.guest-run" || rc=$?
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "guest: ${line#ok - }" ;;
		"not ok - "*) not_ok "guest: ${line#not ok - }" ;;
		"guest-pkg-test: "*) ;;
		*) printf '#   guest: %s\n' "$line" ;;
		esac
	done <"$root.guest"
	if [ "$rc" = 0 ]; then
		ok "guest boot of this root: script and kernel log clean ($((SECONDS - t0)) s;$(
			sed -n 's/^[a-z]*: host stages: .*image \([0-9.]*s\), boot \([0-9.]*s\).*/ image \1, boot+test \2/p' \
			"$root.guest-run"))"
	else
		not_ok "guest boot of this root (tests/qemu/run exit $rc; logs: $POHMEL_CACHE/runs/$suite/last)"
		grep -v "^\\(run \\)\\{0,1\\}$suite: \\[" "$root.guest-run" | tail -n 30 | sed 's/^/#   /'
	fi
}
