#!/usr/bin/env bash
# qemu-patches/build.sh - build Debian's QEMU with the patch series in
# qemu-patches/ (the vgpu-pci device) and print the binary's path.
#
# What it promises:
#   - the LAST line of stdout is the absolute path of the built
#     qemu-system-x86_64, and nothing else goes to stdout, so that
#     QEMU=$(qemu-patches/build.sh | tail -1) works; progress goes to stderr;
#   - the result is cached outside the clone, keyed by the Debian source
#     version, the series, every patch and the configure options: an
#     unchanged key prints the cached path without building anything;
#   - a changed patch rebuilds incrementally: one persistent source tree and
#     build directory per Debian source version, updated from a freshly
#     patched copy file by file where the bytes differ, so ninja recompiles
#     only what the patches touch;
#   - a patch that does not apply fails the run, naming the patch;
#   - concurrent runs are serialized (flock); a failed build prints the end
#     of its log and the log's path.
# Runs as root on a fresh Debian 12 (installs what it needs with apt-get;
# the Debian source comes through a private apt configuration in the cache,
# /etc/apt is never changed). README.md beside this file has the details.
set -euo pipefail
umask 022

QP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$QP_DIR")
export VM_PROG=qemu-build
# shellcheck source=../tests/vm/lib/common.sh disable=SC1091
source "$ROOT/tests/vm/lib/common.sh"

# Bump when the way a result is made changes without the configure options
# or the patches changing (every cached result is then rebuilt once).
RECIPE=1

QCACHE="$VGPU_CACHE/qemu"
APT_DIR="$QCACHE/apt"
KEEP=${VGPU_QEMU_KEEP:-3}

# Firmware directories of Debian's own qemu build (debian/rules FIRMWAREPATH):
# the "dfsg" source carries no firmware, the packages below install it.
FIRMWARE_PATH=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu
# Where --install puts the binary (the configured prefix).
PREFIX=/opt/vgpu-qemu

# What the build needs, and what the built binary needs when it runs.
BUILD_PKGS=(dpkg-dev debian-archive-keyring git rsync gcc libc6-dev make pkg-config python3
	meson ninja-build flex bison libglib2.0-dev libpixman-1-dev libfdt-dev)
RUNTIME_PKGS=(qemu-system-data seabios ipxe-qemu)
# Files a -kernel/-initrd boot of the pc and q35 machines reads, and their
# package: the BIOS, the option ROMs for -kernel (linuxboot_dma.bin) and the
# TCG/KVM APIC accelerator (kvmvapic.bin).
RUNTIME_FILES=(bios-256k.bin:seabios linuxboot_dma.bin:qemu-system-data
	kvmvapic.bin:qemu-system-data)

usage() {
	cat <<EOF
Usage: qemu-patches/build.sh [--check] [--offline] [--update] [--jobs N]
                             [--patches DIR] [--install]

Builds qemu-system-x86_64 from Debian's QEMU source with the patches listed
in qemu-patches/series applied, into \$VGPU_CACHE/qemu (default
/var/cache/vgpu-dev/qemu), and prints the binary's absolute path as the last
line of stdout: QEMU=\$(qemu-patches/build.sh | tail -1).

  --check     only check that the series applies to the Debian source
              (downloaded and unpacked first if needed); builds nothing
  --offline   never ask apt: use the source already in the cache, or exit 77
              (meaning "cannot run here") when there is none
  --update    refresh the private package lists and move to the newest
              qemu source version apt offers (default: the version recorded
              by the first run, so that results stay reproducible)
  --jobs N    parallel compile jobs (default: the number of CPUs)
  --patches DIR
              the directory holding the series file and its patches
              (default: qemu-patches/, where this script is)
  --install   also copy the binary to $PREFIX/bin/qemu-system-x86_64
              (a stable path for libvirt's <emulator>; what went into it in
              $PREFIX/key) and print that path instead
  -h, --help  this text

Environment:
  VGPU_CACHE                 cache root (default /var/cache/vgpu-dev)
  VGPU_QEMU_SOURCE_VERSION   build this Debian source version of qemu
  VGPU_QEMU_KEEP             how many built results to keep (default 3)

The result for a key is \$VGPU_CACHE/qemu/out/<key>/bin/qemu-system-x86_64,
with <key>/key listing what went into it and <key>/build.log its build log.
Needs root on the first run (apt-get) and whenever something must be built.
EOF
}

CHECK=0 OFFLINE=0 UPDATE=0 INSTALL=0 JOBS=$(nproc) PATCH_DIR=$QP_DIR
while (($#)); do
	case $1 in
	--check) CHECK=1 ;;
	--offline) OFFLINE=1 ;;
	--update) UPDATE=1 ;;
	--install) INSTALL=1 ;;
	--jobs)
		(($# >= 2)) || vm_die "--jobs needs a number"
		JOBS=$2
		shift
		;;
	--jobs=*) JOBS=${1#--jobs=} ;;
	--patches)
		(($# >= 2)) || vm_die "--patches needs a directory"
		PATCH_DIR=$2
		shift
		;;
	--patches=*) PATCH_DIR=${1#--patches=} ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		vm_die "unknown option '$1'"
		;;
	esac
	shift
done
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || vm_die "--jobs wants a positive number, not '$JOBS'"
((OFFLINE && UPDATE)) && vm_die "--offline and --update contradict each other"
[[ -d $PATCH_DIR ]] || vm_die "--patches $PATCH_DIR: no such directory"
PATCH_DIR=$(cd "$PATCH_DIR" && pwd)
SERIES=$PATCH_DIR/series

# stdout carries only the final path: everything else goes to stderr.
exec 3>&1 1>&2

# ------------------------------------------------------------------ series
# The patch files named by the series, in order: quilt's format (one file
# name per line, relative to the series' directory; blank lines and '#'
# comments are ignored). No series file means no patches: stock Debian QEMU.
PATCHES=()
read_series() {
	local line name rest
	[[ -f $SERIES ]] || {
		vm_log "no $SERIES: no patches (Debian's QEMU as it is)"
		return 0
	}
	while IFS= read -r line || [[ -n $line ]]; do
		line=${line%%#*}
		read -r name rest <<<"$line" || true
		[[ -z ${name:-} ]] && continue
		[[ -z ${rest:-} ]] || vm_die "series: '$line': only a file name per line (patches apply with -p1)"
		[[ -f $PATCH_DIR/$name ]] || vm_die "series names $name, which is not in $PATCH_DIR"
		PATCHES+=("$PATCH_DIR/$name")
	done <"$SERIES"
}

# One run at a time changes the cache (apt lists, source, work trees,
# results); a cache hit needs no lock.
LOCKED=0
take_lock() {
	((LOCKED)) && return 0
	mkdir -p "$QCACHE"
	vm_lock "$QCACHE/build.lock" 9
	LOCKED=1
}

# ------------------------------------------------------- Debian source
# apt-get/apt-cache with the private configuration: deb-src lines for
# bookworm, bookworm-updates and bookworm-security, lists and caches under
# $APT_DIR; the machine's own sources, lists and caches are left alone.
apt_private() { # apt-get|apt-cache, args...
	local tool=$1
	shift
	"$tool" -q -o Dir::Etc::SourceList=/dev/null \
		-o Dir::Etc::SourceParts="$APT_DIR/sources.list.d" \
		-o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" \
		-o APT::Sandbox::User=root -o Acquire::Retries=3 "$@"
}

apt_private_setup() {
	mkdir -p "$APT_DIR/sources.list.d" "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
	cat >"$APT_DIR/sources.list.d/debian-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
}

apt_private_update() {
	apt_private_setup
	vm_log "refreshing the private deb-src package lists ($APT_DIR)"
	apt_private apt-get update >&2 || vm_die "apt-get update (private deb-src lists) failed"
}

# The newest qemu source version in the private lists (refreshed first).
apt_newest_version() {
	local v newest=""
	apt_private_update
	while read -r v; do
		if [[ -z $newest ]] || dpkg --compare-versions "$v" gt "$newest"; then
			newest=$v
		fi
	done < <(apt_private apt-cache showsrc --only-source qemu | sed -n 's/^Version: //p')
	[[ -n $newest ]] || vm_die "apt offers no qemu source package"
	echo "$newest"
}

# SRC_VER: the Debian source version to build. The first run records the
# version apt offers in $QCACHE/source-version; later runs reuse it without
# asking apt (no network, reproducible) until --update.
resolve_version() {
	local rec=$QCACHE/source-version
	if [[ -n ${VGPU_QEMU_SOURCE_VERSION:-} ]]; then
		SRC_VER=$VGPU_QEMU_SOURCE_VERSION
	elif ((UPDATE == 0)) && [[ -s $rec ]]; then
		SRC_VER=$(<"$rec")
	elif ((OFFLINE)); then
		vm_log "no qemu source recorded in $QCACHE and --offline: nothing to check"
		exit 77
	else
		vm_need_root
		take_lock
		vm_ensure_pkgs "${BUILD_PKGS[@]}"
		SRC_VER=$(apt_newest_version)
		echo "$SRC_VER" >"$rec"
		vm_log "qemu source version: $SRC_VER (recorded in $rec)"
	fi
	# A directory name: the epoch's ':' becomes '_'.
	VER_DIR=${SRC_VER//:/_}
	PRISTINE=$QCACHE/src/$VER_DIR/tree
}

# Download the source package and unpack it with dpkg-source -x, which
# applies Debian's own patches: $PRISTINE, never modified afterwards.
fetch_source() {
	[[ -e $QCACHE/src/$VER_DIR/.complete ]] && return 0
	((OFFLINE)) && {
		vm_log "qemu $SRC_VER is not unpacked in $QCACHE/src and --offline: nothing to check"
		exit 77
	}
	vm_need_root
	take_lock
	# Another run may have unpacked it while we waited for the lock.
	[[ -e $QCACHE/src/$VER_DIR/.complete ]] && return 0
	vm_ensure_pkgs "${BUILD_PKGS[@]}"
	local dir=$QCACHE/src/$VER_DIR dsc
	mkdir -p "$dir/dl"
	if ! compgen -G "$dir/dl/qemu_*.dsc" >/dev/null; then
		compgen -G "$APT_DIR/lists/*Sources*" >/dev/null || apt_private_update
		vm_log "downloading the qemu $SRC_VER source package"
		(cd "$dir/dl" && apt_private apt-get source --download-only "qemu=$SRC_VER") >&2 ||
			vm_die "apt-get source qemu=$SRC_VER failed (is that version still offered? --update moves to the current one)"
	fi
	dsc=$(compgen -G "$dir/dl/qemu_*.dsc" | head -1)
	vm_log "unpacking $(basename "$dsc") (dpkg-source -x applies Debian's patches)"
	rm -rf "$dir/tree" "$dir/tree.tmp"
	# apt checked the files against the signed Release files already.
	dpkg-source --no-check -x "$dsc" "$dir/tree.tmp" >"$dir/dpkg-source.log" 2>&1 || {
		tail -20 "$dir/dpkg-source.log" >&2
		# A partial download must not stick: the next run fetches again.
		rm -rf "$dir/dl" "$dir/tree.tmp" "$dir"/qemu_*.orig.tar.*
		vm_die "dpkg-source -x $dsc failed (log: $dir/dpkg-source.log; the next run downloads the source again)"
	}
	# dpkg-source copies the upstream tarball beside the tree: dl/ has it.
	rm -f "$dir"/qemu_*.orig.tar.*
	mv "$dir/tree.tmp" "$dir/tree"
	touch "$dir/.complete"
}

# git apply in DIR, never in a repository around it (a cache inside a clone).
git_apply_in() { # dir, git-apply args...
	local dir=$1
	shift
	(cd "$dir" && GIT_CEILING_DIRECTORIES=$(dirname "$dir") git apply "$@")
}

# --check: each patch, with the ones before it, applies to the pristine tree
# (git apply --check reads the files, writes nothing).
check_series() {
	local i n=${#PATCHES[@]} out
	for ((i = 0; i < n; i++)); do
		if ! out=$(git_apply_in "$PRISTINE" --check "${PATCHES[@]:0:i+1}" 2>&1); then
			printf '%s\n' "$out" >&2
			vm_die "patch $(basename "${PATCHES[i]}") (number $((i + 1)) in the series) does not apply to Debian qemu $SRC_VER"
		fi
	done
	vm_log "the series ($n patch(es)) applies cleanly to Debian qemu $SRC_VER"
}

# ------------------------------------------------------------------- build
CONFIGURE_OPTS=()
set_configure_opts() {
	# A prefix that is not a prefix of the firmware directories, so QEMU uses
	# them as they are instead of relocating them next to the binary (which
	# runs from the cache, or from $PREFIX/bin after --install).
	CONFIGURE_OPTS=(
		--prefix="$PREFIX"
		--firmwarepath="$FIRMWARE_PATH"
		--with-pkgversion="Debian $SRC_VER, vgpu qemu-patches"
		--target-list=x86_64-softmmu
		--without-default-features
		--enable-tcg --enable-kvm --enable-fdt=system
		--disable-docs --disable-tools --disable-guest-agent
		--disable-werror --disable-debug-info
	)
}

# KEY: source version + hash of the recipe, the configure options, the
# series and each patch; KEY_TEXT: the same in words (the key file).
compute_key() {
	local p
	KEY_TEXT=$(
		echo "recipe $RECIPE"
		echo "debian-source qemu $SRC_VER"
		printf 'configure %s\n' "${CONFIGURE_OPTS[@]}"
		if [[ -f $SERIES ]]; then
			echo "series $(sha256sum <"$SERIES" | cut -d' ' -f1)"
		else
			echo "series none"
		fi
		for p in "${PATCHES[@]}"; do
			echo "patch $(basename "$p") $(sha256sum <"$p" | cut -d' ' -f1)"
		done
	)
	KEY=$VER_DIR-$(sha256sum <<<"$KEY_TEXT" | cut -c1-16)
	OUT=$QCACHE/out/$KEY
	BIN=$OUT/bin/qemu-system-x86_64
}

fail_with_log() { # log, message
	rm -rf "$WORK/staging"
	vm_log "last lines of $1:"
	tail -n 30 "$1" >&2
	vm_die "$2 (full log: $1)"
}

runtime_check() { # binary
	local bin=$1 spec file pkg dir found
	for spec in "${RUNTIME_FILES[@]}"; do
		file=${spec%%:*} pkg=${spec#*:} found=0
		for dir in ${FIRMWARE_PATH//:/ }; do
			[[ -e $dir/$file ]] && found=1
		done
		((found)) || vm_die "$file is in none of $FIRMWARE_PATH (package $pkg)"
	done
	# Both machines start, load their BIOS from the firmware path (no -L)
	# and quit.
	local m
	for m in q35 pc; do
		echo quit | timeout 60 "$bin" -machine "$m",accel=tcg -nodefaults -no-user-config \
			-display none -serial none -monitor stdio -S >/dev/null 2>"$WORK/smoke.err" ||
			{
				cat "$WORK/smoke.err" >&2
				vm_die "the built binary does not start a -machine $m VM"
			}
	done
}

# The staging tree starts as hard links to the pristine one: give every
# existing file PATCH changes an inode of its own, so that nothing can write
# through a link into the pristine tree, whatever the tool does.
unshare_patched_files() { # stage, patch
	local stage=$1 patch=$2 path
	while IFS=$'\t' read -r _ _ path; do
		[[ -f $stage/$path && $(stat -c %h "$stage/$path") -gt 1 ]] || continue
		cp -p "$stage/$path" "$stage/$path.unshare" &&
			mv -f "$stage/$path.unshare" "$stage/$path" || return 1
	done < <(git_apply_in "$stage" --numstat "$patch")
}

build() {
	local log src=$WORK/src bld=$WORK/build stage=$WORK/staging p t0
	log=$WORK/build.log
	t0=$(vm_now)
	: >"$log"
	vm_log "building $KEY (log: $log)"

	# A freshly patched copy of the pristine tree (hard links: a second, not
	# a minute on a busy disk; the files a patch changes get copies of their
	# own first)...
	rm -rf "$stage"
	cp -al "$PRISTINE" "$stage"
	for p in "${PATCHES[@]}"; do
		echo "== git apply $(basename "$p")" >>"$log"
		unshare_patched_files "$stage" "$p" >>"$log" 2>&1 ||
			fail_with_log "$log" "copying the files $(basename "$p") changes failed"
		git_apply_in "$stage" --whitespace=nowarn "$p" >>"$log" 2>&1 ||
			fail_with_log "$log" "patch $(basename "$p") does not apply to Debian qemu $SRC_VER"
	done
	# ...copied onto the persistent tree where the bytes differ: unchanged
	# files keep their times, so ninja rebuilds only what the patches touch
	# (a copied file gets the current time).
	mkdir -p "$src"
	echo "== rsync -rlpc --delete staging/ src/" >>"$log"
	nice rsync -rlpc --delete --itemize-changes "$stage/" "$src/" >>"$log" 2>&1 ||
		fail_with_log "$log" "updating $src from the patched tree failed"
	rm -rf "$stage"

	# Configure once per source version and configure options.
	local opts_file=$bld/.vgpu-configure
	if [[ ! -f $bld/build.ninja || ! -f $opts_file ]] ||
		[[ $(<"$opts_file") != "$(printf '%s\n' "${CONFIGURE_OPTS[@]}")" ]]; then
		rm -rf "$bld"
		mkdir -p "$bld"
		vm_log "configuring (x86_64-softmmu)"
		echo "== configure ${CONFIGURE_OPTS[*]}" >>"$log"
		(cd "$bld" && nice "$src/configure" "${CONFIGURE_OPTS[@]}") >>"$log" 2>&1 ||
			fail_with_log "$log" "configure failed"
		printf '%s\n' "${CONFIGURE_OPTS[@]}" >"$opts_file"
	fi

	vm_log "compiling qemu-system-x86_64 (ninja -j$JOBS, nice)"
	echo "== ninja -j$JOBS qemu-system-x86_64" >>"$log"
	nice -n 10 ninja -C "$bld" -j"$JOBS" qemu-system-x86_64 >>"$log" 2>&1 ||
		fail_with_log "$log" "the build failed"

	# The keyed result, made complete in a temporary directory and renamed.
	rm -rf "$OUT.tmp"
	mkdir -p "$OUT.tmp/bin"
	cp "$bld/qemu-system-x86_64" "$OUT.tmp/bin/"
	runtime_check "$OUT.tmp/bin/qemu-system-x86_64"
	printf '%s\n' "$KEY_TEXT" >"$OUT.tmp/key"
	cp "$log" "$OUT.tmp/build.log"
	rm -rf "$OUT"
	mv "$OUT.tmp" "$OUT"
	vm_log "built $KEY in $(vm_elapsed "$t0") s"
}

# Keep the $KEEP most recently used results; drop work trees and sources of
# versions no kept result and not the current one use.
prune() {
	local d v
	find "$QCACHE/out" -mindepth 1 -maxdepth 1 -type d -name '*.tmp' -exec rm -rf {} +
	find "$QCACHE/out" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' | sort -rn |
		tail -n +"$((KEEP + 1))" | cut -d' ' -f2- | while IFS= read -r d; do
		vm_log "removing the old result $(basename "$d")"
		rm -rf "$d"
	done
	for d in "$QCACHE"/work/* "$QCACHE"/src/*; do
		[[ -d $d ]] || continue
		v=$(basename "$d")
		[[ $v == "$VER_DIR" ]] && continue
		compgen -G "$QCACHE/out/$v-*" >/dev/null && continue
		vm_log "removing $d (qemu $v: no result kept uses it)"
		rm -rf "$d"
	done
}

# -------------------------------------------------------------------- main
read_series
resolve_version
set_configure_opts
compute_key

if ((CHECK)); then
	fetch_source
	check_series
	exit 0
fi

((INSTALL)) && [[ $(id -u) != 0 ]] && vm_die "--install writes $PREFIX/bin: run it as root"

if [[ -x $BIN && -f $OUT/key ]]; then
	# The fast path: an unchanged key needs nothing but its runtime packages.
	vm_ensure_pkgs "${RUNTIME_PKGS[@]}"
	# Most recently used (what prune keeps); not root: the cache is not ours.
	touch "$OUT" 2>/dev/null || true
	vm_log "cached: $KEY"
else
	[[ $(id -u) == 0 ]] || vm_die "qemu $KEY is not in $QCACHE/out; building it needs root (apt-get, the cache)"
	take_lock
	# Another run may have built it while we waited for the lock.
	if [[ ! -x $BIN || ! -f $OUT/key ]]; then
		vm_ensure_pkgs "${BUILD_PKGS[@]}" "${RUNTIME_PKGS[@]}"
		fetch_source
		WORK=$QCACHE/work/$VER_DIR
		mkdir -p "$WORK" "$QCACHE/out"
		build
	else
		vm_ensure_pkgs "${RUNTIME_PKGS[@]}"
	fi
	touch "$OUT"
	prune
fi

if ((INSTALL)); then
	# Renamed into place: a QEMU running the old binary keeps it.
	install -D -m 0755 "$BIN" "$PREFIX/bin/.qemu-system-x86_64.new"
	mv -f "$PREFIX/bin/.qemu-system-x86_64.new" "$PREFIX/bin/qemu-system-x86_64"
	install -m 0644 "$OUT/key" "$PREFIX/key"
	vm_log "installed $KEY as $PREFIX/bin/qemu-system-x86_64 (what went into it: $PREFIX/key)"
	BIN=$PREFIX/bin/qemu-system-x86_64
fi
echo "$BIN" >&3
