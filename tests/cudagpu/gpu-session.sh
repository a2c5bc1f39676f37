#!/usr/bin/env bash
# gpu-session.sh - the GPU checks of cudagpu, in one go, on a machine with an
# NVIDIA GPU that has none of the build dependencies (programs packed by
# gpu-bundle.sh). Each step is time-limited and logged to OUT/STEP.log; a
# summary line per step goes to OUT/summary.txt as soon as the step ends (the
# session may be killed at any time: what is written stays).
#
# Usage: tests/cudagpu/gpu-session.sh BUNDLE OUT [--budget SECONDS] [STEP[:LIMIT]...|PRESET]
#   steps: probe conformance property demo hostile bench bench-um, and
#   under cudagpu's process isolation (a vgpu-gpu-worker per address space:
#   bundle it too) conformance-process (the HAL suite with its hal-isolation
#   group: a VM's worker killed or hung, the other VM intact) property-process
#   bench-process, modules-process (a VM's own PTX, tests/ptx/modules.ptx,
#   through the HAL in its worker: the hal-modules group), cuda-python
#   (tests/cuda-python/run.sh: NVIDIA's Python bindings through the guest
#   libcuda.so.1, bundled as BUNDLE/guest-cuda/libcuda.so.1, and against
#   NVIDIA's own; its results in OUT/cuda-python.jsonl), and vm (a vgpu-pci
#   guest under the bundled QEMU with TCG against vgpud --gpu cuda: its own
#   CUDA program timed against the same program run natively, and built-in
#   workloads with its memory oversubscribed; tests/cudagpu/vm.sh, BUNDLE/vm
#   from make-bundle.sh --vm; OUT/vm.json) (default: all but bench-um and
#   vm). VGPU_PROPERTY_OPS (default 100000) sizes the property test.
#   PRESET: 'first' (the first session on a GPU machine, most valuable
#   first, for about 9 minutes: README.md).
#   --budget SECONDS (default 540): the whole session's time. Each step's
#   limit (its own, or :LIMIT) is cut to what is left; a step whose minimum
#   does not fit any more is not started: 'skipped (budget)' in summary.txt.
#   VGPU_CUDA_LIBRARY: a libcuda.so.1 instead of the system's (the CPU
#   stand-in build/plain/tests/cudagpu/libcuda.so.1, to rehearse a session).
set -uo pipefail
bundle=$(cd "$1" && pwd)
out=$2
shift 2
budget=540
if [ "${1:-}" = --budget ]; then
	budget=${2:?--budget wants seconds}
	shift 2
fi
[[ $budget =~ ^[0-9]+$ ]] || { echo "gpu-session.sh: --budget wants seconds, not '$budget'" >&2; exit 2; }
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(probe conformance property demo hostile bench
	conformance-process property-process bench-process modules-process cuda-python)
# The first session on a GPU machine, about 9 minutes, the most valuable
# first (README.md: why this order and these limits).
if [ "${steps[*]}" = first ]; then
	steps=(probe:30 modules-process:120 conformance-process:150 cuda-python:90 vm:120
		bench-um:240 property:180 demo:90 hostile:90)
fi
# Each step's limit and the least time worth starting it with (seconds).
declare -A limit_of=([probe]=60 [conformance]=300 [property]="${VGPU_PROPERTY_LIMIT:-420}"
	[demo]=300 [hostile]=180 [bench]=420 [bench-um]=420 [conformance-process]=300
	[property-process]="${VGPU_PROPERTY_LIMIT:-420}" [bench-process]=420
	[modules-process]=180 [cuda-python]=300 [vm]=300)
declare -A min_of=([probe]=10 [conformance]=90 [property]=60 [demo]=45 [hostile]=45
	[bench]=90 [bench-um]=120 [conformance-process]=90 [property-process]=60
	[bench-process]=90 [modules-process]=60 [cuda-python]=45 [vm]=60)
mkdir -p "$out"
session_start=$(date +%s)
printf 'session %s: budget %ss, steps %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$budget" \
	"${steps[*]}" >>"$out/summary.txt"
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

# The kill's grace (timeout -k) and the summary's last lines: kept out of
# every step's time so that the session ends within its budget.
reserve=15
run_step() { # name limit command...
	local name=$1 limit=$2 start rc
	shift 2
	start=$(date +%s)
	timeout -k 10 "$limit" "$@" >"$out/$name.log" 2>&1
	rc=$?
	printf '%-19s rc=%-3s %4ss (limit %ss)  %s\n' "$name" "$rc" "$(($(date +%s) - start))" \
		"$limit" "$*" | tee -a "$out/summary.txt"
	tail -n 4 "$out/$name.log" | sed 's/^/    /'
}

for spec in "${steps[@]}"; do
	step=${spec%%:*}
	if [ -z "${limit_of[$step]:-}" ]; then
		echo "unknown step $step" | tee -a "$out/summary.txt"
		continue
	fi
	limit=${limit_of[$step]}
	[ "$spec" = "$step" ] || limit=${spec#*:}
	left=$((budget - ($(date +%s) - session_start) - reserve))
	if [ "$left" -lt "${min_of[$step]}" ] || [ "$left" -lt 1 ]; then
		printf '%-19s skipped (budget): %ss left, it needs %ss\n' "$step" "$((left > 0 ? left : 0))" \
			"${min_of[$step]}" | tee -a "$out/summary.txt"
		continue
	fi
	[ "$limit" -le "$left" ] || limit=$left
	case "$step" in
	probe) run_step probe "$limit" "$bin/cudagpu-probe" ;;
	conformance) run_step conformance "$limit" env VGPU_HAL=cuda "$bin/test-hal-conformance" ;;
	property)
		run_step property "$limit" env VGPU_PROPERTY_OPS="${VGPU_PROPERTY_OPS:-100000}" \
			"$bin/test_core_property" --gpu cuda ;;
	demo) run_step demo "$limit" "$root/vgpu-backend/demo/vgpu-demo.sh" --gpu cuda --build-dir "$build" ;;
	hostile) run_step hostile "$limit" env VGPU_GPU=cuda "$root/tests/demo/hostile-tenant.sh" --build-dir "$build" ;;
	bench)
		run_step bench "$limit" "$bin/cuda-bench" --json "$out/bench-cuda.json" \
			--markdown "$out/RESULTS.md" ;;
	bench-um)
		run_step bench-um "$limit" "$bin/cuda-bench" --um --json "$out/bench-cuda.json" \
			--markdown "$out/RESULTS.md" ;;
	conformance-process)
		run_step conformance-process "$limit" env VGPU_HAL=cuda VGPU_CUDA_ISOLATION=process \
			VGPU_CUDA_WORKER_TIMEOUT_MS=2000 VGPU_GPU_WORKER="$bin/vgpu-gpu-worker" \
			"$bin/test-hal-conformance" ;;
	property-process)
		run_step property-process "$limit" env VGPU_CUDA_ISOLATION=process \
			VGPU_GPU_WORKER="$bin/vgpu-gpu-worker" \
			VGPU_PROPERTY_OPS="${VGPU_PROPERTY_OPS:-100000}" "$bin/test_core_property" --gpu cuda ;;
	bench-process)
		run_step bench-process "$limit" env VGPU_CUDA_ISOLATION=process \
			VGPU_GPU_WORKER="$bin/vgpu-gpu-worker" "$bin/cuda-bench" \
			--json "$out/bench-cuda-process.json" --markdown "$out/RESULTS-process.md" ;;
	modules-process)
		run_step modules-process "$limit" env VGPU_HAL=cuda VGPU_CUDA_ISOLATION=process \
			VGPU_CUDA_WORKER_TIMEOUT_MS=5000 VGPU_GPU_WORKER="$bin/vgpu-gpu-worker" \
			VGPU_TEST_PTX_DIR="$root/tests/ptx" "$bin/test-hal-conformance" hal-modules
		grep -E 'runs no user programs|identity range' "$out/modules-process.log" &&
			echo "    (modules refused: see above)" ;;
	cuda-python)
		# The guest library must not shadow NVIDIA's for vgpud: its own
		# directory, given to the programs only.
		run_step cuda-python "$limit" "$root/tests/cuda-python/run.sh" --gpu cuda \
			--lib "$bundle/guest-cuda" --vgpud "$bin/vgpud" --out "$out/cuda-python.jsonl" ;;
	vm)
		# QEMU's own limit inside the step's, so that vm.sh still writes
		# vm.json when the guest overruns
		run_step vm "$limit" env VGPU_VM_LIMIT="$((limit > 60 ? limit - 30 : limit / 2))" \
			"$root/tests/cudagpu/vm.sh" "$bundle" "$out"
		grep '^vm: saxpy' "$out/vm.log" | sed 's/^/    /' >>"$out/summary.txt" ;;
	esac
done
printf 'session: %ss of the %ss budget\n' "$(($(date +%s) - session_start))" "$budget" |
	tee -a "$out/summary.txt"
rm -rf "$build"
