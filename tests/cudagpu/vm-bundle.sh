#!/usr/bin/env bash
# vm-bundle.sh - pack what the GPU session's vm step (tests/cudagpu/vm.sh)
# needs on a GPU machine that has no QEMU, no Debian packages of ours and no
# network, into DIR (make-bundle.sh --vm puts it in BUNDLE/vm):
#
#   qemu-system-x86_64.gz
#                        the patched QEMU (qemu-patches/build.sh, or
#                        $VGPU_QEMU), stripped and gzip'ed (16 MiB -> 4 MiB:
#                        the bundle travels in 64 MiB; vm.sh unpacks it)
#   lib/                 the shared libraries it needs beyond glibc (ldd),
#                        for its LD_LIBRARY_PATH only: they must not shadow
#                        the machine's own for other programs
#   firmware/            what a -kernel boot of '-machine pc -nodefaults'
#                        reads (QEMU's -L): SeaBIOS bios-256k.bin and the
#                        option ROMs linuxboot_dma.bin and kvmvapic.bin
#   vmlinuz, initrd.cpio.gz
#                        the VM tests' guest kernel (tests/vm/lib/
#                        fetch-kernel.sh) and a busybox initramfs
#                        (mkinitramfs.sh --preset l2) with drm.ko, vgpu.ko,
#                        vgpu-run, vgpu-ptx-run, the guest libcuda.so.1,
#                        cuda-saxpy with saxpy.ptx, modules.ptx and
#                        tests/cudagpu/vm-job.sh as /l2-job
#   native/cuda-saxpy, native/kernels/saxpy.ptx
#                        the same cuda-saxpy binary, to run on the host
#                        against the machine's libcuda.so.1 (the reference)
#   MANIFEST             versions, and the newest glibc symbol each
#                        executable needs
#
# Built with the VM tests' cached builds (tests/vm/lib/build.sh). Run as
# root (the kernel's cache, the initramfs' device nodes).
#
# Usage: tests/cudagpu/vm-bundle.sh DIR
set -euo pipefail
export VM_PROG=vm-bundle
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:?usage: tests/cudagpu/vm-bundle.sh DIR}
# shellcheck source=../vm/lib/common.sh
source "$ROOT/tests/vm/lib/common.sh"
# shellcheck source=../vm/lib/build.sh
source "$VM_LIB_DIR/build.sh"
vm_need_root
vm_ensure_host_pkgs
vm_ensure_pkgs meson ninja-build pkg-config libjson-c-dev libdrm-dev binutils
vm_kernel_env
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

qemu=${VGPU_QEMU:-}
if [[ -z $qemu ]]; then
	qemu=$("$ROOT/qemu-patches/build.sh" 2>"$work/qemu-build.log" | tail -n 1) ||
		{ tail -n 20 "$work/qemu-build.log" >&2; vm_die "qemu-patches/build.sh failed"; }
fi
"$qemu" -nodefaults -machine none -device help 2>&1 | grep -q '"vgpu-pci"' ||
	vm_die "$qemu has no vgpu-pci device"

vm_build_sources "$ROOT" 0
vm_build_kmod guest-driver/kernel "$work/kmod.log" ||
	{ tail -n 20 "$work/kmod.log" >&2; vm_die "vgpu.ko does not build against $KVER"; }
vm_build_meson "$work/meson.log" guest-driver/tools/vgpu-run guest-driver/tools/vgpu-ptx-run \
	guest-driver/cuda/libcuda.so.1 ||
	{ tail -n 20 "$work/meson.log" >&2; vm_die "meson build of the guest programs"; }
vm_build_own_programs "$work/own" "$work/own.log" ||
	{ tail -n 20 "$work/own.log" >&2; vm_die "building cuda-saxpy"; }
strip --strip-debug -o "$work/vgpu.ko" "$VM_KSRC/guest-driver/kernel/vgpu.ko"
strip -o "$work/vgpu-run" "$VM_MBUILD/guest-driver/tools/vgpu-run"
flock -u 8
initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name gpuvm --modules drm \
	--file "$work/vgpu.ko:/vgpu.ko" --file "$ROOT/tests/cudagpu/vm-job.sh:/l2-job" \
	--file "$work/vgpu-run:/bin/vgpu-run" --bin "$work/vgpu-run" "${VM_OWN_PROGRAM_ARGS[@]}")

rm -rf "$dir"
mkdir -p "$dir/lib" "$dir/firmware" "$dir/native/kernels"
strip -o "$work/qemu-system-x86_64" "$qemu"
gzip -9 -n -c "$work/qemu-system-x86_64" >"$dir/qemu-system-x86_64.gz"
"$ROOT/tests/cudagpu/gpu-bundle.sh" --libs-only "$dir/lib" "$qemu"
# Where Debian's QEMU looks for its firmware (qemu-patches/build.sh's
# FIRMWARE_PATH).
for f in bios-256k.bin linuxboot_dma.bin kvmvapic.bin; do
	found=''
	for d in /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu; do
		[[ -e $d/$f ]] && { found=$d/$f; break; }
	done
	[[ -n $found ]] || vm_die "no $f (packages seabios, qemu-system-data)"
	cp -L "$found" "$dir/firmware/"
done
cp "$VMLINUZ" "$dir/vmlinuz"
cp "$initrd" "$dir/initrd.cpio.gz"
cp "$work/own/cuda-saxpy" "$dir/native/"
cp "$ROOT/tests/cuda/kernels/saxpy.ptx" "$dir/native/kernels/"

glibc_needed() { # FILE: the newest GLIBC_x.y symbol version it refers to
	objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1
}
{
	echo "qemu: $("$qemu" --version | sed -n 1p) ($qemu)"
	echo "guest kernel: $KVER ($KPKGVER)"
	echo "glibc needed: qemu $(glibc_needed "$work/qemu-system-x86_64"), cuda-saxpy $(glibc_needed "$dir/native/cuda-saxpy"); libraries: $(cd "$dir/lib" && echo *)"
	echo "firmware: $(cd "$dir/firmware" && echo *)"
	echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
} >"$dir/MANIFEST"
cat "$dir/MANIFEST" >&2
du -sh "$dir" >&2
