#!/bin/bash
# kbuild-check.sh - build guest-driver/common as part of a kernel module
# against Debian's 6.1 headers (the kernel vgpu.ko targets), with W=1 and
# -Werror. Exits 77 (skipped) when no kernel headers are available.
#
# Headers: $KDIR if set, else the newest tree fetched by
# tests/vm/lib/fetch-kernel.sh under $VGPU_CACHE (default /var/cache/vgpu-dev),
# else /lib/modules/$(uname -r)/build.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

kdir=${KDIR:-}
if [[ -z $kdir ]]; then
	cache=${VGPU_CACHE:-/var/cache/vgpu-dev}
	env=$(ls -d "$cache"/kernel/*/kernel.env 2>/dev/null | sort -V | tail -n 1 || true)
	if [[ -n $env ]]; then
		kdir=$(. "$env" && echo "$KDIR")
	elif [[ -d /lib/modules/$(uname -r)/build ]]; then
		kdir=/lib/modules/$(uname -r)/build
	fi
fi
if [[ -z $kdir || ! -f $kdir/Makefile ]]; then
	echo "kbuild-check: skipped: no kernel headers (set KDIR, or run tests/vm/lib/fetch-kernel.sh)"
	exit 77
fi
if ! command -v make >/dev/null; then
	echo "kbuild-check: skipped: make is not installed"
	exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here"/kbuild/Kbuild "$here"/kbuild/*.c "$work"/
mkdir -p "$work/common" "$work/include/vgpu/abi"
cp "$root"/guest-driver/common/*.[ch] "$root"/guest-driver/common/Kbuild.include "$work/common/"
cp "$root"/vgpu-backend/include/vgpu/abi/device_abi.h "$work/include/vgpu/abi/"

echo "kbuild-check: building guest-driver/common against $kdir"
if ! make -s -C "$kdir" M="$work" W=1 modules > "$work/build.log" 2>&1; then
	cat "$work/build.log"
	echo "kbuild-check: FAILED"
	exit 1
fi
if grep -E "warning:" "$work/build.log"; then
	echo "kbuild-check: FAILED (warnings)"
	exit 1
fi
ls -l "$work"/vgpu_proto_check.ko
echo "kbuild-check: ok"
