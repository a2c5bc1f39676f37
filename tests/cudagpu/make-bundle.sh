#!/usr/bin/env bash
# make-bundle.sh - build what tests/cudagpu/gpu-session.sh runs and pack it
# for a GPU machine that has none of the build dependencies: the test
# programs from the plain build, the benchmark, the daemon and its per-VM
# GPU worker from the release build (-O3, as './vgpu-dev bench' runs them),
# and jq (the hostile
# tenant test reads vgpuctl's JSON with it). With --vm (as root), also
# DIR/vm: the patched QEMU, its libraries and firmware, the guest kernel and
# initramfs of the session's vm step (tests/cudagpu/vm-bundle.sh).
#
# Usage: tests/cudagpu/make-bundle.sh [--vm] [DIR]   (default .gpu/bundle)
# Then, on the GPU machine, from the repository root:
#   tests/cudagpu/gpu-session.sh DIR OUT [STEP...]
# Prints the bundle's size last; it travels as a carried path (64 MiB at
# most, everything together).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
vm=0
if [ "${1:-}" = --vm ]; then
	vm=1
	shift
fi
dir=${1:-$root/.gpu/bundle}
cd "$root"
./vgpu-dev build >/dev/null
if [ ! -d build/release ]; then
	meson setup build/release -Dwerror=true -Dtests=false --buildtype=release >/dev/null
fi
ninja -C build/release >/dev/null
command -v jq >/dev/null || { echo "make-bundle.sh: jq is not installed" >&2; exit 1; }
tests/cudagpu/gpu-bundle.sh "$dir" \
	build/plain/vgpu-backend/tools/cudagpu-probe \
	build/plain/tests/hal/test-hal-conformance \
	build/plain/tests/core/test_core_property \
	build/release/vgpu-backend/bench/cuda-bench \
	build/release/vgpu-backend/daemon/vgpud \
	build/release/vgpu-backend/cudagpu/worker/vgpu-gpu-worker \
	build/release/vgpu-backend/ctl/vgpuctl \
	build/release/guest-driver/tools/vgpu-tenant \
	build/plain/guest-driver/cuda/libcuda.so.1 \
	"$(command -v jq)"
# The guest libcuda.so.1 (the cuda-python step) apart from bin/ and lib/,
# where it would shadow NVIDIA's driver library for vgpud.
mkdir -p "$dir/guest-cuda"
mv "$dir/bin/libcuda.so.1" "$dir/guest-cuda/"
if [ "$vm" = 1 ]; then
	tests/cudagpu/vm-bundle.sh "$dir/vm"
fi
echo "bundle $dir: $(du -sh "$dir" | cut -f1) ($(du -sb "$dir" | cut -f1) bytes)"
