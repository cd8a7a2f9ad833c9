# Shared helpers of the QEMU harness (sourced, not run).
# Layout under $POHMEL_CACHE (default /var/tmp/pohmelfs-cache):
#   roots/SUITE        pristine root from mkroot (never modified here)
#   work/SUITE         working copy: base root + our builds and guest runner
#   work/SUITE.lock    held while a working copy is changed or imaged
#   runs/SUITE/ID      one run: console.log output.log status.log build.log
#   runs/SUITE/last    symlink to the newest run
# shellcheck shell=bash

QEMU_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$QEMU_DIR/../.." && pwd)
POHMEL_CACHE=${POHMEL_CACHE:-/var/tmp/pohmelfs-cache}
export POHMEL_CACHE
SUITES_ALL="bullseye bookworm trixie sid"
# Inside the guest/chroot everything of ours lives under /opt/pohmel:
#   build/src build/pohmeld  copies of the repo's sources (incremental builds)
#   build-w1/src             the same for `compile` (W=1 flags)
#   suite                    copy of tests/suite (built in place)
#   guest                    runner, units, pohmel-server
#   run                      per-run config and the script
G=/opt/pohmel

PROG=${PROG:-$(basename "$0")}
T_START=$(date +%s.%N)

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit "${DIE_RC:-125}"; }

# Elapsed seconds since $1 (a `date +%s.%N` value), one decimal.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# stage NAME: announce a stage; stage_end: report how long the last one took.
STAGE= STAGE_T0=
declare -A STAGE_TIMES=()
stage() {
	stage_end
	STAGE=$1 STAGE_T0=$(date +%s.%N)
	say "[$STAGE] ${2:-}"
}
stage_end() {
	[ -n "$STAGE" ] || return 0
	local t
	t=$(since "$STAGE_T0")
	STAGE_TIMES[$STAGE]=$t
	say "[$STAGE] done in ${t}s"
	STAGE=
}

check_suite() {
	case " $SUITES_ALL " in
	*" $1 "*) ;;
	*) die "unknown suite '$1' (one of: $SUITES_ALL)" ;;
	esac
}

need_root() {
	[ "$(id -u)" = 0 ] || die "must run as root (chroot, mke2fs of a root tree)"
}

# with_lock FILE CMD...: run CMD holding an exclusive lock on FILE.
with_lock() {
	local f=$1
	shift
	mkdir -p "$(dirname "$f")"
	(
		flock -w 3600 9 || die "timed out waiting for lock $f"
		"$@"
	) 9>"$f"
}

ensure_root() {	# SUITE
	local s=$1
	with_lock "$POHMEL_CACHE/roots/.$s.lock" "$QEMU_DIR/mkroot" "$s" ||
		die "mkroot $s failed"
}

kver_of() {	# ROOTDIR -> the one kernel release installed there
	local k
	k=$(ls "$1/lib/modules")
	[ "$(printf '%s\n' "$k" | wc -l)" = 1 ] || die "expected one kernel in $1/lib/modules, got: $k"
	printf '%s\n' "$k"
}

# in_chroot ROOT CMD...: run CMD in ROOT with /proc mounted, in a private
# mount namespace, so the /proc mount vanishes with the process whatever
# happens (objtool of 7.x kernels needs /proc).
in_chroot() {
	local root=$1
	shift
	unshare --mount --propagation private -- /bin/sh -c '
		r=$1; shift
		mount -t proc proc "$r/proc" || exit 1
		exec chroot "$r" /usr/bin/env -i \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LC_ALL=C TERM=dumb "$@"
	' in_chroot "$root" "$@"
}

# sync_work SUITE [DIR]: (re)create the working copy from the pristine root
# (or from DIR, a root of SUITE prepared elsewhere: run --root).
# Our build trees under /opt/pohmel survive (excluded), everything else is
# reset, so the copy is the base root plus exactly what we install next.
# (After a DIR run the next plain run resets the copy to the base root.)
sync_work() {
	local s=$1 base=${2:-$POHMEL_CACHE/roots/$1} w=$POHMEL_CACHE/work/$1
	if mountpoint -q "$w/proc" 2>/dev/null; then
		die "$w/proc is mounted (a stale chroot?); umount it first"
	fi
	if [ -d "$w" ] && [ "$(cat "$w/.pohmel-base" 2>/dev/null)" != "$(cat "$base/.pohmel-stamp")" ]; then
		say "base root of $s changed: recreating its working copy"
		rm -rf "$w"
	fi
	mkdir -p "$w"
	# Others may chroot into the base with /proc mounted or build in /build
	# there: copy neither (nor anything mounted below it).
	rsync -aHAX -x --delete --exclude=/opt/pohmel --exclude=/.pohmel-base \
		--exclude='/proc/*' --exclude='/sys/*' --exclude='/dev/pts/*' \
		--exclude=/build --exclude='/tmp/*' "$base/" "$w/"
	cp "$base/.pohmel-stamp" "$w/.pohmel-base"
}

# copy_src SRC DST: copy a source tree, leaving out build products, so the
# chroot build of DST is incremental. Content-compared (-c) and without
# times: a changed file gets a new mtime and make rebuilds what depends on it.
copy_src() {
	local rel line ex=()
	# The repository's top-level .gitignore may name files below $1
	# ("src/compat/generated.h"): those are build products too.
	rel=$(realpath --relative-to="$REPO" "$1" 2>/dev/null || true)
	if [ -f "$REPO/.gitignore" ] && [ -n "$rel" ] && [ "${rel#..}" = "$rel" ]; then
		while IFS= read -r line; do
			line=${line#/}
			case $line in "$rel"/?*) ex+=(--exclude="/${line#"$rel"/}") ;; esac
		done <"$REPO/.gitignore"
	fi
	mkdir -p "$2"
	rsync -rlpc --delete --filter=':- .gitignore' "${ex[@]}" \
		--exclude='*.o' --exclude='*.ko' --exclude='*.a' --exclude='*.so' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude='.*.cmd' \
		--exclude='*.d' --exclude=Module.symvers --exclude=modules.order \
		--exclude='/pohmeld' --exclude='/pohmel' --exclude=.git \
		"$1/" "$2/"
	# src/Kbuild and pohmeld/Makefile read the version from ../VERSION:
	# the copied tree's own, else this repository's
	case ${1%/} in
	*/src | */pohmeld)
		if [ -f "${1%/}/../VERSION" ]; then
			install -m 0644 "${1%/}/../VERSION" "${2%/}/../VERSION"
		else
			install -m 0644 "$REPO/VERSION" "${2%/}/../VERSION"
		fi ;;
	esac
}

# --- building inside the working copy ------------------------------------------

# build_module W KVER GDIR [MAKEARGS...]: build the module whose sources are
# at GDIR inside W (a guest path) with the root's own kernel headers and gcc.
build_module() {
	local w=$1 kver=$2 gdir=$3
	shift 3
	in_chroot "$w" make -C "/lib/modules/$kver/build" M="$gdir" \
		-j"$(nproc)" "$@" modules
}

# build_warnings LOG: the compiler and modpost warnings in a build log.
build_warnings() { grep -E 'warning:|WARNING:' "$1" | grep -v '^make' || true; }

# build_pohmeld W GDIR: build the server and the pohmel tool in the chroot.
build_pohmeld() {
	in_chroot "$1" make -C "$2" -j"$(nproc)"
}

# guest_key W 0|1: with 1, the test pohmeld and every mount (through
# mount.pohmel's default key file) share a fixed key named "default";
# with 0, neither has one.
guest_key() {
	local w=$1
	rm -f "$w/etc/pohmelfs/key"
	sed -i '/^key-file /d' "$w/etc/pohmeld.conf"
	[ "$2" = 1 ] || return 0
	mkdir -p "$w/etc/pohmelfs"
	(umask 077 && printf 'default %s\n' \
		"$(printf 'pohmel-test-key' | sha256sum | cut -c1-64)" >"$w/etc/pohmelfs/key")
	printf 'key-file /etc/pohmelfs/key\n' >>"$w/etc/pohmeld.conf"
}

# install_guest W SUITE MODE [keep-config]: the guest-side runner, units and
# small system settings that make the boot quick and deterministic;
# keep-config leaves the root's own /etc/pohmeld.conf alone (run --root).
install_guest() {
	local w=$1 s=$2 mode=$3 keep=${4:-} u
	mkdir -p "$w$G/guest" "$w$G/run"
	rsync -rlpc --delete "$QEMU_DIR/guest/" "$w$G/guest/"
	install -m 0755 "$QEMU_DIR/guest/pohmel-server" "$w/usr/local/sbin/pohmel-server"
	install -m 0644 "$QEMU_DIR/guest/pohmel-test.service" \
		"$QEMU_DIR/guest/pohmel-testd.service" "$w/etc/systemd/system/"
	mkdir -p "$w/etc/systemd/system/multi-user.target.wants"
	ln -sfn ../pohmel-test.service "$w/etc/systemd/system/multi-user.target.wants/pohmel-test.service"
	# Units that only cost boot time (or prompt, on a first boot).
	for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer \
		e2scrub_all.timer e2scrub_reap.service fstrim.timer man-db.timer \
		systemd-firstboot.service getty@tty1.service systemd-pstore.service \
		systemd-timesyncd.service logrotate.timer systemd-binfmt.service \
		proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount; do
		ln -sfn /dev/null "$w/etc/systemd/system/$u"
	done
	# The test export: the suite runs as root and needs root unsquashed.
	# Tests may edit it and `$POHMEL_SERVER restart`.
	if [ "$keep" != keep-config ]; then
		printf '# tests/qemu: the test export\nexport / /srv/export rw no_root_squash\n' \
			>"$w/etc/pohmeld.conf"
	fi
	# A fixed machine-id: not a first boot, stable journal names.
	printf '%s\n' "$(printf 'pohmel-%s' "$s" | md5sum | cut -c1-32)" >"$w/etc/machine-id"
	echo "pohmel-$s" >"$w/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\tpohmel-%s\n::1\tlocalhost ip6-localhost\n' \
		"$s" >"$w/etc/hosts"
	if [ "$mode" = run ]; then
		# No coldplug: nothing in a run needs udev's device events, and
		# loading every driver for the emulated hardware costs seconds.
		ln -sfn /dev/null "$w/etc/systemd/system/systemd-udev-trigger.service"
		ln -sfn /dev/null "$w/etc/systemd/system/getty-static.service"
		# (its device unit would never appear without coldplug)
		ln -sfn /dev/null "$w/etc/systemd/system/serial-getty@ttyS0.service"
	fi
	if [ "$mode" = shell ]; then
		mkdir -p "$w/etc/systemd/system/serial-getty@ttyS0.service.d"
		install -m 0644 "$QEMU_DIR/guest/serial-autologin.conf" \
			"$w/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf"
		install -m 0644 "$QEMU_DIR/guest/profile-wait.sh" "$w/etc/profile.d/pohmel.sh"
	fi
}

# ensure_initrd W KVER: a small initrd made by the root's own mkinitramfs
# with just the modules to mount the root disk (virtio_pci, virtio_blk,
# ext4): a fifth of the distro's, and udev in it has little to load under
# TCG. Kept in the working copy until the base root changes.
ensure_initrd() {
	local w=$1 kver=$2 c=$1$G/initramfs
	[ -s "$w$G/initrd.img-$kver" ] && return 0
	rm -rf "$c"
	mkdir -p "$c/scripts" "$c/conf.d" "$c/hooks"
	printf 'MODULES=list\nBUSYBOX=auto\nCOMPRESS=gzip\nUMASK=0022\n' >"$c/initramfs.conf"
	printf 'virtio_pci\nvirtio_blk\next4\n' >"$c/modules"
	in_chroot "$w" mkinitramfs -d "$G/initramfs" -o "$G/initrd.img-$kver.tmp" "$kver" &&
		mv "$w$G/initrd.img-$kver.tmp" "$w$G/initrd.img-$kver"
}

# make_image W IMG: an ext4 image of the working copy (no loop mounts).
make_image() {
	local w=$1 img=$2
	if mountpoint -q "$w/proc"; then
		die "$w/proc is still mounted; refusing to image it"
	fi
	rm -f "$img"
	mke2fs -q -t ext4 -L pohmelroot -E lazy_itable_init=1,lazy_journal_init=1 \
		-d "$w" -F "$img" "${POHMEL_IMAGE_SIZE:-6G}" >/dev/null
}

# Kernel log lines that fail a run.
BAD_KLOG='BUG:|WARNING:|Oops|general protection|soft lockup|hung task|blocked for more than|refcount_t:|list_add corruption|list_del corruption|KASAN|UBSAN|Kernel panic|kernel BUG|detected stalls? on CPU|rcu_.*self-detected stall|Objects remaining|still has objects|unreferenced object'
