#!/bin/bash
# qemu-patches/update-headers.sh - regenerate the first patch of the series,
# which imports the project's device ABI and local protocol headers into
# QEMU's include/standard-headers/vgpu/ (the way QEMU's own
# scripts/update-linux-headers.sh imports Linux's), from
# vgpu-backend/include/vgpu/abi/. Run it after changing either header.
#
#   qemu-patches/update-headers.sh          rewrite the patch
#   qemu-patches/update-headers.sh --check  exit 1 (and say so) if the patch
#                                           is out of date; changes nothing
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
patch_name=0001-standard-headers-import-the-vGPU-device-ABI-and-vgpu.patch
headers=(device_abi.h local_protocol.h)

case ${1:-} in
-h | --help)
	sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
--check | '') ;;
*)
	echo "update-headers.sh: unknown argument '$1' (see --help)" >&2
	exit 2
	;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$work" init -q
mkdir -p "$work/include/standard-headers/vgpu"
for h in "${headers[@]}"; do
	cp "$root/vgpu-backend/include/vgpu/abi/$h" "$work/include/standard-headers/vgpu/$h"
done
git -C "$work" add include
# fixed identity and dates: the same headers always give the same patch
GIT_AUTHOR_NAME="vgpu project" GIT_AUTHOR_EMAIL=vgpu@localhost \
	GIT_COMMITTER_NAME="vgpu project" GIT_COMMITTER_EMAIL=vgpu@localhost \
	GIT_AUTHOR_DATE="2026-11-25T00:00:00Z" GIT_COMMITTER_DATE="2026-11-25T00:00:00Z" \
	git -C "$work" commit -q -F - <<'MSG'
standard-headers: import the vGPU device ABI and vgpud's local protocol

device_abi.h (the PCI device a vGPU presents: IDs, BARs, registers,
mailbox, channel windows, interrupts) and local_protocol.h (the socket
protocol between vgpud and a frontend that plays the device) are the
vgpu project's own headers, copied unchanged from its device ABI module,
vgpu-backend/include/vgpu/abi/, by the project's
qemu-patches/update-headers.sh, the way update-linux-headers.sh imports
Linux's.
MSG
git -C "$work" format-patch -q --zero-commit --no-signature --root -1 -o "$work/out" HEAD
generated=$work/out/$patch_name
[[ -f $generated ]] || {
	echo "update-headers.sh: git format-patch did not write $patch_name" >&2
	exit 1
}
if [[ ${1:-} == --check ]]; then
	if cmp -s "$generated" "$here/$patch_name"; then
		echo "qemu-patches/$patch_name matches vgpu-backend/include/vgpu/abi/"
		exit 0
	fi
	echo "qemu-patches/$patch_name is out of date with vgpu-backend/include/vgpu/abi/: run qemu-patches/update-headers.sh" >&2
	exit 1
fi
cp "$generated" "$here/$patch_name"
echo "wrote qemu-patches/$patch_name"
