#!/bin/busybox sh
# shellcheck shell=dash
# tests/vgpu-pci/migrate-job.sh - /l2-job of tests/vgpu-pci/migrate.sh:
# runs INSIDE the guest (busybox only) while the host migrates it between
# two vgpuds. Everything goes to the console (ttyS0), whose file changes
# with every QEMU the guest lands in:
#
#   load drm.ko + vgpu.ko; "VGPU-MIG-L2 ok|FAIL: vGPU bound ..."
#   VGPU-MIG-RUNNING once stream (pci.size, 2x the host's VRAM), stencil
#     and the user program started; stream runs for pci.duration, stencil
#     beside it; each is verified by checksum: "VGPU-MIG-L2 ok|FAIL: stream
#     ..." etc. The user program is the CUDA driver-API program cuda-saxpy
#     (tests/cuda, with libcuda.so.1; its module loaded once per run, its
#     kernel launched pci.cuda_repeat times, every result checked against
#     the CPU), run again and again until stream ends, so that its loaded
#     module and function handles cross the migrations:
#     "VGPU-MIG-L2 ok|FAIL: saxpy ..." with the number of runs.
#   VGPU-MIG-DONE failures=F
# Kernel command line: pci.size= pci.buffer= pci.small= pci.duration=
# pci.iterations= pci.seed= pci.cuda= pci.cuda_repeat=
size=64M buffer=8M small=8M duration=60s iterations=20 seed=1 cuda=1M cuda_repeat=20
# shellcheck disable=SC2013 # words, not lines
for arg in $(cat /proc/cmdline); do
	case $arg in
	pci.size=*) size=${arg#pci.size=} ;;
	pci.buffer=*) buffer=${arg#pci.buffer=} ;;
	pci.small=*) small=${arg#pci.small=} ;;
	pci.duration=*) duration=${arg#pci.duration=} ;;
	pci.iterations=*) iterations=${arg#pci.iterations=} ;;
	pci.seed=*) seed=${arg#pci.seed=} ;;
	pci.cuda=*) cuda=${arg#pci.cuda=} ;;
	pci.cuda_repeat=*) cuda_repeat=${arg#pci.cuda_repeat=} ;;
	esac
done
failures=0
# shellcheck source=tests/vm/l2/guest-lib.sh
. /lib/vgpu-guest.sh
ok() { echo "VGPU-MIG-L2 ok: $*"; }
bad() {
	echo "VGPU-MIG-L2 FAIL: $*"
	failures=$((failures + 1))
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }
verdict() { # WORKLOAD RC JSON-FILE
	echo "VGPU-MIG-RESULT $1 rc=$2 $(tr -d '\n' <"$3" | tr -s ' ')"
	vgpu_guest_judge_run "$@"
}
done_() {
	echo "VGPU-MIG-DONE failures=$failures uptime=$(uptime_s)"
	while :; do sleep 3600; done
}

vgpu_guest_load || done_
vgpu_guest_find_node 50
if [ -n "$node" ] && [ -c "$node" ]; then
	ok "vgpu.ko bound the vgpu-pci function: render node $node"
else
	bad "vgpu.ko bound no vGPU: $(dmesg | grep -i vgpu | tail -n 5 | tr '\n' '|')"
	done_
fi
/bin/vgpu-run -D "$node" --workload stream --size "$size" --buffer-size "$buffer" \
	--duration "$duration" --seed "$seed" --json >/tmp/stream.json 2>/tmp/stream.err &
stream=$!
sleep 1
/bin/vgpu-run -D "$node" --workload stencil --size "$small" --buffer-size "$small" \
	--iterations "$iterations" --seed "$seed" --json >/tmp/stencil.json 2>/tmp/stencil.err &
stencil=$!
# the user program, run after run until stream ends (/tmp/stream.done)
user_program() {
	runs=0
	while [ ! -e /tmp/stream.done ]; do
		if ! VGPU_DRM_DEVICE="$node" LD_LIBRARY_PATH=/opt/vgpu-cuda \
			CUDA_PROG_KERNELS=/cuda/kernels CUDA_PROG_REPEAT="$cuda_repeat" \
			CUDA_PROG_SEED="$((seed + runs))" /bin/cuda-saxpy "$cuda" >/tmp/saxpy.out 2>&1 ||
			! grep -q '^saxpy: ok' /tmp/saxpy.out; then
			echo "run $((runs + 1)): $(tail -n 2 /tmp/saxpy.out | tr '\n' '|')" >/tmp/saxpy.fail
			break
		fi
		runs=$((runs + 1))
		echo "$runs $(uptime_s)" >/tmp/saxpy.runs
	done
}
if [ -x /bin/cuda-saxpy ]; then
	user_program &
	program=$!
else
	program=''
	bad "saxpy: this guest image carries no user program (/bin/cuda-saxpy)"
fi
echo "VGPU-MIG-RUNNING uptime=$(uptime_s)"
wait "$stencil"
rc=$?
sed 's/^/VGPU-MIG-STDERR stencil: /' /tmp/stencil.err
verdict stencil "$rc" /tmp/stencil.json
wait "$stream"
rc=$?
: >/tmp/stream.done
sed 's/^/VGPU-MIG-STDERR stream: /' /tmp/stream.err
verdict stream "$rc" /tmp/stream.json
if [ -n "$program" ]; then
	wait "$program"
	runs=$(cut -d' ' -f1 /tmp/saxpy.runs 2>/dev/null || echo 0)
	if [ -e /tmp/saxpy.fail ]; then
		bad "saxpy: after $runs good runs: $(cat /tmp/saxpy.fail)"
	elif [ "$runs" -ge 2 ]; then
		ok "saxpy verified: $runs runs of the CUDA driver-API program (libcuda.so.1, $cuda_repeat launches each over $cuda), every result exact ($(grep -m1 '^saxpy: ok' /tmp/saxpy.out))"
	else
		bad "saxpy: only $runs runs while stream ran (too short to cross a migration)"
	fi
fi
done_
