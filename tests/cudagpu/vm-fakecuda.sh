#!/usr/bin/env bash
# vm-fakecuda.sh - the GPU session's vm step (tests/cudagpu/vm.sh) rehearsed
# on a machine without a GPU: the same bundle layout (gpu-bundle.sh with
# vgpud, vgpu-gpu-worker, vgpuctl and jq from the plain build; vm-bundle.sh
# for the VM), and the CPU stand-in of libcuda (fake_libcuda.c, through
# VGPU_CUDA_LIBRARY) for vgpud's worker and for the native run. Its figures
# mean nothing; its checks (the guest's program exact, the guest's memory
# evicted, every workload verified, vm.json written) are those of the GPU
# machine. About 30 s once the VM tests' builds are cached. Root.
#
# Usage: tests/cudagpu/vm-fakecuda.sh [BUILD_DIR]   (default build/plain)
# Prints vm.sh's lines, then 'vm-fakecuda: N passed, N failed'; exit 0
# passed, 1 failed, 77 cannot run here (not root, nothing built).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build/plain}" 2>/dev/null && pwd) ||
	{ echo "SKIP: no build directory ${1:-$root/build/plain} (./vgpu-dev build)"; exit 77; }
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: tests/cudagpu/vm-fakecuda.sh needs root (the guest's initramfs)"
	exit 77
fi
programs=(vgpu-backend/daemon/vgpud vgpu-backend/cudagpu/worker/vgpu-gpu-worker
	vgpu-backend/ctl/vgpuctl tests/cudagpu/libcuda.so.1)
for p in "${programs[@]}"; do
	[[ -e $build/$p ]] || { echo "SKIP: no $build/$p (./vgpu-dev build)"; exit 77; }
done
command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }
# shellcheck source=../lib/checks.sh
source "$root/tests/lib/checks.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/tests/cudagpu/gpu-bundle.sh" "$tmp/bundle" "$build/${programs[0]}" "$build/${programs[1]}" \
	"$build/${programs[2]}" "$(command -v jq)" >/dev/null
if ! "$root/tests/cudagpu/vm-bundle.sh" "$tmp/bundle/vm" 2>"$tmp/vm-bundle.log"; then
	tail -n 20 "$tmp/vm-bundle.log"
	bad "tests/cudagpu/vm-bundle.sh (the VM's bundle)"
	echo "vm-fakecuda: $passed passed, $failed failed"
	exit 1
fi
ok "the VM's bundle: $(du -sh "$tmp/bundle/vm" | cut -f1) ($(grep '^qemu:' "$tmp/bundle/vm/MANIFEST" | cut -d'(' -f1))"
VGPU_CUDA_LIBRARY=$build/tests/cudagpu/libcuda.so.1 LD_LIBRARY_PATH=$tmp/bundle/lib \
	"$root/tests/cudagpu/vm.sh" "$tmp/bundle" "$tmp/out" | tee "$tmp/vm.out"
vm_passed=$(sed -n 's/^vm: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$tmp/vm.out")
vm_failed=$(sed -n 's/^vm: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$tmp/vm.out")
passed=$((passed + ${vm_passed:-0}))
failed=$((failed + ${vm_failed:-1}))
check "vm.json: the guest's and the native kernel time, and evicted bytes, recorded" \
	jq -e '.program.guest_kernel_ms_mean > 0 and .program.native_kernel_ms_mean > 0 and
		.oversubscription.vm_evicted_bytes_total > 0 and .checks_failed == 0' "$tmp/out/vm.json" >/dev/null
echo "vm-fakecuda: $passed passed, $failed failed"
((failed == 0))
