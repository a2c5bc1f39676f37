#!/bin/busybox sh
# shellcheck shell=dash
# tests/cudagpu/vm-job.sh - /l2-job of the GPU session's vm step
# (tests/cudagpu/vm.sh): runs INSIDE the guest (busybox only), whose vGPU is
# QEMU's vgpu-pci device served by 'vgpud --gpu cuda --isolation process'.
# No host input: the guest runs everything once, reports on its console
# (ttyS0) and powers off (init-l2.sh).
#
#   load drm.ko + vgpu.ko; "VGPU-GPUVM ok|FAIL: vGPU bound ..."
#   (a) the CUDA driver-API program cuda-saxpy (its own PTX, libcuda.so.1
#       from /opt/vgpu-cuda) alone on the vGPU, gpuvm.cuda bytes,
#       gpuvm.repeat launches, every result exact; its kernel time from
#       events: "VGPU-GPUVM-SAXPY saxpy: ok (... kernel mean X ms fastest
#       Y ms)"
#   (b) vgpu-run stream over gpuvm.size (more than vgpud's VRAM: GPUswap
#       must evict the VM's own chunks), held once filled and iterated:
#       "VGPU-GPUVM-HOLD bytes=... vm_evicted=..." (the driver's counters:
#       evicted bytes must be > 0); with that memory still held, its own
#       programs (guest-lib.sh: vgpu-ptx-run with tests/ptx/modules.ptx,
#       cuda-saxpy); then stream verifies every buffer by checksum, and
#       stencil and gups (gpuvm.small, gpuvm.iterations) by theirs
#   VGPU-GPUVM-DONE failures=F
# Kernel command line: gpuvm.size= gpuvm.buffer= gpuvm.small=
# gpuvm.iterations= gpuvm.cuda= gpuvm.repeat= gpuvm.own= gpuvm.seed=
size=96M buffer=8M small=8M iterations=4 cuda=16M repeat=5 own=4M seed=27
# shellcheck disable=SC2013 # words, not lines
for arg in $(cat /proc/cmdline); do
	case $arg in
	gpuvm.size=*) size=${arg#gpuvm.size=} ;;
	gpuvm.buffer=*) buffer=${arg#gpuvm.buffer=} ;;
	gpuvm.small=*) small=${arg#gpuvm.small=} ;;
	gpuvm.iterations=*) iterations=${arg#gpuvm.iterations=} ;;
	gpuvm.cuda=*) cuda=${arg#gpuvm.cuda=} ;;
	gpuvm.repeat=*) repeat=${arg#gpuvm.repeat=} ;;
	gpuvm.own=*) own=${arg#gpuvm.own=} ;;
	gpuvm.seed=*) seed=${arg#gpuvm.seed=} ;;
	esac
done
failures=0
# shellcheck source=tests/vm/l2/guest-lib.sh
. /lib/vgpu-guest.sh
ok() { echo "VGPU-GPUVM ok: $*"; }
bad() {
	echo "VGPU-GPUVM FAIL: $*"
	failures=$((failures + 1))
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }
done_() {
	echo "VGPU-GPUVM-DONE failures=$failures uptime=$(uptime_s)"
	exit "$((failures > 0))"
}
# vgpu-run WORKLOAD ARGS...: one workload, verified by checksum
verified_run() {
	local workload=$1 rc
	shift
	/bin/vgpu-run -D "$node" --workload "$workload" --seed "$seed" --json "$@" \
		>/tmp/run.json 2>/tmp/run.err
	rc=$?
	sed 's/^/VGPU-GPUVM-STDERR: /' /tmp/run.err
	echo "VGPU-GPUVM-RESULT $workload $(tr -d '\n' </tmp/run.json | tr -s ' ')"
	vgpu_guest_judge_run "$workload" "$rc" /tmp/run.json
}

echo "VGPU-GPUVM-START uptime=$(uptime_s)"
vgpu_guest_load || done_
vgpu_guest_bound 100 || done_

# (a) the user program, timed, alone on the vGPU
out=$(VGPU_DRM_DEVICE="$node" LD_LIBRARY_PATH=/opt/vgpu-cuda CUDA_PROG_KERNELS=/cuda/kernels \
	CUDA_PROG_REPEAT="$repeat" CUDA_PROG_SEED="$seed" /bin/cuda-saxpy "$cuda" 2>&1)
rc=$?
echo "$out" | sed 's/^/VGPU-GPUVM-PROGRAM /'
line=$(echo "$out" | grep -m1 '^saxpy: ok')
if [ "$rc" = 0 ] && [ -n "$line" ]; then
	echo "VGPU-GPUVM-SAXPY $line"
	ok "cuda-saxpy (its own PTX, libcuda.so.1) over $cuda, $repeat launches, every result exact"
else
	bad "cuda-saxpy (exit status $rc): $(echo "$out" | tail -n 2 | tr '\n' '|')"
fi

# (b) the vGPU's memory oversubscribed: stream over more than the VRAM
/bin/vgpu-run -D "$node" --workload stream --size "$size" --buffer-size "$buffer" \
	--iterations "$iterations" --seed "$seed" --hold 300s --json >/tmp/stream.json 2>/tmp/stream.err &
pid=$!
held=0
while kill -0 "$pid" 2>/dev/null; do
	if grep -q 'vgpu-run: HOLD bytes=.*verify and free)$' /tmp/stream.err; then
		held=1
		break
	fi
	sleep 0.2
done
if [ "$held" = 1 ]; then
	hold=$(grep -m1 'vgpu-run: HOLD bytes=' /tmp/stream.err | sed 's/^vgpu-run: HOLD //; s/ (SIGUSR1.*//')
	echo "VGPU-GPUVM-HOLD $hold uptime=$(uptime_s)"
	evicted=$(echo "$hold" | sed -n 's/.* vm_evicted=\([0-9]*\).*/\1/p')
	if [ "${evicted:-0}" -gt 0 ]; then
		ok "stream holds $size with $evicted bytes of it evicted (the driver's counters)"
	else
		bad "stream holds $size but nothing was evicted: $hold"
	fi
	# its own programs with the VRAM oversubscribed
	vgpu_guest_own_programs "$own" "$cuda"
	kill -USR1 "$pid" 2>/dev/null
fi
wait "$pid"
rc=$?
sed 's/^/VGPU-GPUVM-STDERR: /' /tmp/stream.err
echo "VGPU-GPUVM-RESULT stream $(tr -d '\n' </tmp/stream.json | tr -s ' ')"
[ "$held" = 1 ] || bad "stream ended (exit status $rc) before holding its memory"
vgpu_guest_judge_run "stream over $size" "$rc" /tmp/stream.json
verified_run stencil --size "$small" --buffer-size "$small" --iterations "$iterations"
verified_run gups --size "$small" --buffer-size "$buffer" --iterations "$iterations"
done_
