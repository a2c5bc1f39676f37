#!/bin/bash
# tests/vm/lib/fetch-kernel.sh - fetch and unpack Debian's generic 6.1 kernel
# (image + modules + headers + kbuild) into the VM cache, reusing it if present.
set -euo pipefail

VM_PROG=fetch-kernel
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
	cat <<EOF
Usage: $0 [options]

Makes sure Debian's generic amd64 kernel (linux-image-6.1.0-NN-amd64, its
modules, linux-headers-6.1.0-NN-{amd64,common} and linux-kbuild-6.1) is
downloaded with 'apt-get download' and unpacked with 'dpkg -x' under

    \$VGPU_CACHE/kernel/<KVER>_<version>/        (VGPU_CACHE=$VGPU_CACHE)

and prints that directory on stdout (progress goes to stderr). The directory
holds kernel.env, a shell fragment defining KVER, KPKGVER, KROOT, VMLINUZ,
KDIR (headers tree for 'make -C \$KDIR M=...') and MODDIR. A complete
directory is reused as is; nothing is downloaded then. Missing host packages
(qemu-system-x86, busybox-static, cpio, kmod, gcc-12, make, libelf-dev, ...)
are installed with apt-get first.

Options:
  --abi 6.1.0-NN   use this ABI instead of the newest one apt-cache offers
  --offline        do not ask apt: use the newest complete cached kernel
  --no-install     do not apt-get install missing host packages
  --check-build    also build tests/vm/smoke-module against the headers
                   (in a temporary directory) to prove the toolchain matches
  -h, --help       this text

Environment: VGPU_CACHE (cache root, default /var/cache/vgpu-dev).
EOF
}

orig_args=("$@")
abi='' offline=0 install=1 check_build=0
while (($#)); do
	case $1 in
	--abi) abi=${2:?--abi needs a value}; shift 2 ;;
	--offline) offline=1; shift ;;
	--no-install) install=0; shift ;;
	--check-build) check_build=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

KCACHE=$VGPU_CACHE/kernel

# newest_cached: the newest complete kernel directory in the cache.
newest_cached() {
	local d
	for d in "$KCACHE"/*/.complete; do
		[[ -e $d ]] && dirname "$d"
	done | sort -V | tail -n 1
}

# candidates PKG...: "PKG VERSION" for each PKG apt could install (one
# apt-cache call: each costs ~0.4 s).
candidates() {
	apt-cache policy "$@" 2>/dev/null | awk '
		/^[^ ]/ { pkg = $1; sub(/:$/, "", pkg) }
		$1 == "Candidate:" && $2 != "(none)" { print pkg, $2 }'
}

build_check() {
	local kdir=$1 tmp
	tmp=$(mktemp -d)
	cp -r "$VM_DIR/smoke-module/." "$tmp/"
	vm_log "test build of smoke-module against $kdir"
	if ! make -C "$kdir" M="$tmp" modules >"$tmp/build.log" 2>&1; then
		cat "$tmp/build.log" >&2
		rm -rf "$tmp"
		vm_die "out-of-tree module build against $kdir failed"
	fi
	modinfo -F vermagic "$tmp"/*.ko >&2
	rm -rf "$tmp"
	vm_log "test build OK"
}

if ((install)); then
	vm_ensure_host_pkgs
fi

if ((offline)); then
	dir=$(newest_cached)
	[[ -n $dir ]] || vm_die "--offline: no complete kernel in $KCACHE"
	# shellcheck disable=SC1091
	((check_build)) && (source "$dir/kernel.env" && build_check "$KDIR")
	echo "$dir"
	exit 0
fi

vm_apt_update_once
if [[ -n $abi ]]; then
	abis=("$abi")
else
	# Newest linux-image-6.1.0-NN-amd64 whose packages apt can all install.
	mapfile -t abis < <(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' |
		awk '{ print $1 }' | sed -e 's/^linux-image-//' -e 's/-amd64$//' | sort -V -r | head -n 3)
	((${#abis[@]})) || vm_die "apt-cache offers no linux-image-6.1.0-NN-amd64 (apt-get update?)"
fi
declare -A ver
want=(linux-kbuild-6.1)
for a in "${abis[@]}"; do
	want+=("linux-image-$a-amd64" "linux-headers-$a-amd64" "linux-headers-$a-common")
done
while read -r p v; do ver[$p]=$v; done < <(candidates "${want[@]}")
abi=
for a in "${abis[@]}"; do
	if [[ -n ${ver[linux-image-$a-amd64]:-} && -n ${ver[linux-headers-$a-amd64]:-} &&
		-n ${ver[linux-headers-$a-common]:-} ]]; then
		abi=$a
		break
	fi
done
[[ -n $abi ]] || vm_die "no installable kernel among ${abis[*]} (missing image/headers candidates)"
[[ -n ${ver[linux-kbuild-6.1]:-} ]] || vm_die "apt-cache has no candidate for linux-kbuild-6.1"
KVER=$abi-amd64
pkgs=("linux-image-$KVER" "linux-headers-$KVER" "linux-headers-$abi-common" linux-kbuild-6.1)
KPKGVER=${ver[linux-image-$KVER]}
key=${KVER}_$KPKGVER
for p in "${pkgs[@]}"; do
	if [[ ${ver[$p]} != "$KPKGVER" ]]; then
		# Mixed versions (e.g. a newer linux-kbuild-6.1): key on all of them.
		key+=+$(for q in "${pkgs[@]}"; do echo "$q=${ver[$q]}"; done | sha256sum | cut -c1-8)
		vm_log "warning: package versions differ: $(for q in "${pkgs[@]}"; do printf '%s=%s ' "$q" "${ver[$q]}"; done)"
		break
	fi
done
dir=$KCACHE/$key

if [[ ! -e $dir/.complete ]]; then
	vm_need_root
	vm_lock "$VGPU_CACHE/fetch-kernel.lock" 8
fi
if [[ ! -e $dir/.complete ]]; then
	t0=$(vm_now)
	debs=$VGPU_CACHE/debs
	mkdir -p "$debs"
	want=()
	for p in "${pkgs[@]}"; do
		f=$(compgen -G "$debs/${p}_${ver[$p]//:/%3a}_*.deb" | head -n 1 || true)
		[[ -n $f ]] || want+=("$p=${ver[$p]}")
	done
	if ((${#want[@]})); then
		vm_log "apt-get download ${want[*]}"
		# _apt cannot write into a root-only cache: download as root, quietly.
		if ! (cd "$debs" && vm_apt_get -o APT::Sandbox::User=root download "${want[@]}" >&2); then
			# Stale package lists name versions the archive no longer has:
			# refresh them once and start over (the newest ABI may change).
			[[ ${VM_FETCH_RETRIED:-0} == 0 ]] || vm_die "apt-get download failed"
			vm_log "download failed; apt-get update and retry"
			vm_apt_get update >&2 || vm_die "apt-get update failed"
			exec 8>&-
			VM_FETCH_RETRIED=1 exec "$0" "${orig_args[@]}"
		fi
	fi
	tmp=$KCACHE/.tmp.$key.$$
	rm -rf "$tmp"
	mkdir -p "$tmp/root"
	trap 'rm -rf "$tmp"' EXIT
	for p in "${pkgs[@]}"; do
		f=$(compgen -G "$debs/${p}_${ver[$p]//:/%3a}_*.deb" | head -n 1 || true)
		[[ -n $f ]] || vm_die "downloaded .deb for $p not found in $debs"
		vm_log "dpkg -x $(basename "$f")"
		dpkg -x "$f" "$tmp/root"
	done
	root=$tmp/root
	# The headers tree links into the kbuild and -common packages. Make any
	# absolute link relative to the extracted root so the tree is relocatable.
	while IFS= read -r -d '' l; do
		t=$(readlink "$l")
		if [[ $t == /* ]]; then
			ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$root$t")" "$l"
		fi
	done < <(find "$root/usr/src" "$root/usr/lib/linux-kbuild-6.1" "$root/lib/modules" \
		-type l -print0)
	# Its Makefile is one line, 'include /usr/src/linux-headers-*-common/Makefile':
	# point it at the -common tree next to it instead.
	sed -i 's|^include /usr/src/|include $(realpath $(dir $(lastword $(MAKEFILE_LIST))))/../|' \
		"$root/usr/src/linux-headers-$KVER/Makefile"
	# The package's postinst runs depmod; dpkg -x does not.
	vm_log "depmod -b root $KVER"
	depmod -b "$root" "$KVER"
	[[ -f $root/boot/vmlinuz-$KVER ]] || vm_die "no boot/vmlinuz-$KVER in the image package"
	[[ -f $root/usr/src/linux-headers-$KVER/Module.symvers ]] || vm_die "headers tree incomplete"
	mkdir -p "$dir"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	trap - EXIT
	root=$dir/root
	cat >"$dir/kernel.env" <<EOF
# Written by tests/vm/lib/fetch-kernel.sh on $(date -u +%FT%TZ)
KVER=$KVER
KPKGVER=$KPKGVER
KROOT=$root
VMLINUZ=$root/boot/vmlinuz-$KVER
KDIR=$root/usr/src/linux-headers-$KVER
MODDIR=$root/lib/modules/$KVER
EOF
	for p in "${pkgs[@]}"; do echo "$p=${ver[$p]}"; done >"$dir/packages"
	if ((check_build)); then
		build_check "$root/usr/src/linux-headers-$KVER"
		check_build=0
	fi
	touch "$dir/.complete"
	vm_log "kernel $KVER ($KPKGVER) ready in $dir after $(vm_elapsed "$t0") s"
fi
((check_build)) && build_check "$dir/root/usr/src/linux-headers-$KVER"
echo "$dir"
