#!/usr/bin/env bash
# gpu-session.sh - the GPU checks of cudagpu, in one go, on a machine with an
# NVIDIA GPU that has none of the build dependencies (programs packed by
# gpu-bundle.sh). Each step is time-limited and logged to OUT/STEP.log; a
# summary line per step goes to OUT/summary.txt.
#
# Usage: tests/cudagpu/gpu-session.sh BUNDLE OUT [STEP...]
#   steps: probe conformance property demo hostile bench bench-um, and
#   under cudagpu's process isolation (a vgpu-gpu-worker per address space:
#   bundle it too) conformance-process (the HAL suite with its hal-isolation
#   group: a VM's worker killed or hung, the other VM intact) property-process
#   bench-process, modules-process (a VM's own PTX, tests/ptx/modules.ptx,
#   through the HAL in its worker: the hal-modules group) (default: all but
#   bench-um). VGPU_PROPERTY_OPS (default
#   100000) sizes the property test.
set -uo pipefail
bundle=$(cd "$1" && pwd)
out=$2
shift 2
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(probe conformance property demo hostile bench
	conformance-process property-process bench-process modules-process)
mkdir -p "$out"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$bundle/bin:$PATH"
bin=$bundle/bin
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The demo scripts look for the programs under a build directory.
build=$(mktemp -d)
mkdir -p "$build/vgpu-backend/daemon" "$build/vgpu-backend/ctl" "$build/guest-driver/tools"
ln -s "$bin/vgpud" "$build/vgpu-backend/daemon/vgpud"
ln -s "$bin/vgpuctl" "$build/vgpu-backend/ctl/vgpuctl"
ln -s "$bin/vgpu-tenant" "$build/guest-driver/tools/vgpu-tenant"

run_step() { # name limit command...
	local name=$1 limit=$2 start rc
	shift 2
	start=$(date +%s)
	timeout -k 10 "$limit" "$@" >"$out/$name.log" 2>&1
	rc=$?
	printf '%-12s rc=%-3s %4ss  %s\n' "$name" "$rc" "$(($(date +%s) - start))" "$*" |
		tee -a "$out/summary.txt"
	tail -n 4 "$out/$name.log" | sed 's/^/    /'
}

for step in "${steps[@]}"; do
	case "$step" in
	probe) run_step probe 60 "$bin/cudagpu-probe" ;;
	conformance) run_step conformance 300 env VGPU_HAL=cuda "$bin/test-hal-conformance" ;;
	property)
		run_step property "${VGPU_PROPERTY_LIMIT:-420}" env VGPU_PROPERTY_OPS="${VGPU_PROPERTY_OPS:-100000}" \
			"$bin/test_core_property" --gpu cuda ;;
	demo) run_step demo 300 "$root/vgpu-backend/demo/vgpu-demo.sh" --gpu cuda --build-dir "$build" ;;
	hostile) run_step hostile 180 env VGPU_GPU=cuda "$root/tests/demo/hostile-tenant.sh" --build-dir "$build" ;;
	bench)
		run_step bench 420 "$bin/cuda-bench" --json "$out/bench-cuda.json" \
			--markdown "$out/RESULTS.md" ;;
	bench-um)
		run_step bench-um 420 "$bin/cuda-bench" --um --json "$out/bench-cuda.json" \
			--markdown "$out/RESULTS.md" ;;
	conformance-process)
		run_step conformance-process 300 env VGPU_HAL=cuda VGPU_CUDA_ISOLATION=process \
			VGPU_CUDA_WORKER_TIMEOUT_MS=2000 VGPU_GPU_WORKER="$bin/vgpu-gpu-worker" \
			"$bin/test-hal-conformance" ;;
	property-process)
		run_step property-process "${VGPU_PROPERTY_LIMIT:-420}" env VGPU_CUDA_ISOLATION=process \
			VGPU_GPU_WORKER="$bin/vgpu-gpu-worker" \
			VGPU_PROPERTY_OPS="${VGPU_PROPERTY_OPS:-100000}" "$bin/test_core_property" --gpu cuda ;;
	bench-process)
		run_step bench-process 420 env VGPU_CUDA_ISOLATION=process \
			VGPU_GPU_WORKER="$bin/vgpu-gpu-worker" "$bin/cuda-bench" \
			--json "$out/bench-cuda-process.json" --markdown "$out/RESULTS-process.md" ;;
	modules-process)
		run_step modules-process 180 env VGPU_HAL=cuda VGPU_CUDA_ISOLATION=process \
			VGPU_CUDA_WORKER_TIMEOUT_MS=5000 VGPU_GPU_WORKER="$bin/vgpu-gpu-worker" \
			VGPU_TEST_PTX_DIR="$root/tests/ptx" "$bin/test-hal-conformance" hal-modules
		grep -E 'runs no user programs|identity range' "$out/modules-process.log" &&
			echo "    (modules refused: see above)" ;;
	*) echo "unknown step $step" | tee -a "$out/summary.txt" ;;
	esac
done
rm -rf "$build"
