#!/bin/bash
# tests/vm/lib/fetch-mdev-samples.sh - the kernel's samples/vfio-mdev sources
# (mtty, mdpy, mbochs) for the fetched kernel, cached next to it.
set -euo pipefail

VM_PROG=fetch-mdev-samples
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
	cat <<EOF
Usage: $0

Debian builds no vfio-mdev sample modules (CONFIG_SAMPLES is off), but the
sources are in linux-source-6.1. This downloads linux-source-6.1 of the same
version as the fetched kernel (once), extracts only samples/vfio-mdev/ to

    <kernel dir>/samples/vfio-mdev/      (next to kernel.env)

deletes the 139 MB .deb again, and prints that directory. Build a sample with
  make -C \$KDIR M=<copy of the dir> CONFIG_SAMPLE_VFIO_MDEV_MTTY=m modules

Environment: VGPU_CACHE, VGPU_KERNEL_ENV (see fetch-kernel.sh).
EOF
}
case ${1:-} in -h | --help) usage; exit 0 ;; '') ;; *) usage >&2; exit 2 ;; esac

vm_kernel_env
kdir=$(dirname "$KROOT")
dest=$kdir/samples/vfio-mdev
if [[ ! -e $kdir/samples/.complete ]]; then
	vm_need_root
	vm_lock "$VGPU_CACHE/fetch-kernel.lock" 8
fi
if [[ ! -e $kdir/samples/.complete ]]; then
	t0=$(vm_now)
	vm_apt_update_once
	tmp=$(mktemp -d "$VGPU_CACHE/.src.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	vm_log "apt-get download linux-source-6.1=$KPKGVER"
	(cd "$tmp" && vm_apt_get -o APT::Sandbox::User=root download "linux-source-6.1=$KPKGVER" >&2) ||
		vm_die "apt-get download linux-source-6.1=$KPKGVER failed (version no longer in the archive?)"
	vm_log "extracting samples/vfio-mdev from the source tarball"
	mkdir -p "$tmp/x"
	dpkg-deb --fsys-tarfile "$tmp"/linux-source-6.1_*.deb |
		tar -xO --wildcards '*/linux-source-6.1.tar.xz' | xz -dc |
		tar -x -C "$tmp/x" --wildcards '*/samples/vfio-mdev/*'
	src=$(find "$tmp/x" -type d -path '*/samples/vfio-mdev' | head -n 1)
	[[ -n $src && -f $src/mtty.c ]] || vm_die "samples/vfio-mdev/mtty.c not in linux-source-6.1"
	rm -rf "$kdir/samples"
	mkdir -p "$kdir/samples"
	mv "$src" "$dest"
	touch "$kdir/samples/.complete"
	vm_log "samples ready in $dest after $(vm_elapsed "$t0") s"
fi
echo "$dest"
