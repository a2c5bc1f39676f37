#!/bin/busybox sh
# shellcheck shell=dash
# tests/vgpu-pci/guest-job.sh - /l2-job of tests/vgpu-pci/run: runs INSIDE
# each guest (busybox only), whose vGPU is QEMU's vgpu-pci device served by
# vgpud on the host.
#
# The host steps the guests through the phases with lines on their second
# serial port (ttyS1, kept open from the start so that no line is lost);
# everything the host reads is on the console (ttyS0):
#
#   load drm.ko + vgpu.ko; "VGPU-PCI-L2 ok|FAIL vm=N: vGPU bound ..."
#     (pci.device=0, a QEMU without vgpu-pci: vgpu.ko must bind to nothing)
#   VGPU-PCI-READY                              host: "go"
#   VGPU-PCI-START, then vgpu-run stream with --hold: "VGPU-PCI-HOLD vm=N
#     bytes=..." while it holds its memory      host: "release" (it has read
#     vgpuctl); with the memory still held (every guest's: the VRAM
#     oversubscribed), its own GPU programs: vgpu-ptx-run (a PTX module
#     through MODULE_LOAD, pci.own=SIZE of data) and the CUDA driver-API
#     program cuda-saxpy with libcuda.so.1 (pci.cuda=BYTES), each checked
#     against the CPU (guest-lib.sh); then vgpu-run verifies every buffer by
#     checksum and frees
#   vgpu-run stencil, then gups (pci.iterations each: the CPU reference
#     replays every iteration, and a TCG guest's CPU is slow), verified by
#     checksum
#   VGPU-PCI-WORKLOADS-DONE                     host: "lost"
#   VGPU-PCI-LOST-RUN, then vgpu-run with stderr on the console: the stall
#     workload (pci.lost=stall: a fence wait that only device lost ends,
#     "vgpu-run: STALL" when it begins) or stream for minutes (pci.lost=stream:
#     the guest keeps submitting)           host: kills vgpud with SIGKILL
#   the workload must end (not hang) with an error, vgpu.ko must log the
#     lost device, vgpu.ko must unload; "VGPU-PCI-LOST-RESULT vm=N rc=R {json}"
#   VGPU-PCI-GUEST-DONE vm=N failures=F; then it answers every "ping" line
#     with "VGPU-PCI-PONG vm=N" (the VM still works after losing its vGPU)
#     until the host quits QEMU through QMP
#
# Kernel command line (tests/vgpu-pci/run): pci.vm=N pci.device=0|1
# pci.size=48M pci.buffer=8M pci.small=16M pci.duration=2s pci.iterations=10
# pci.seed=N pci.wait=300 pci.lost=stall|stream pci.own=6M pci.cuda=2M
vm=0 device=1 size=48M buffer=8M small=16M duration=2s iterations=10 seed=1 wait=300 lost=stream
own_size=6M cuda_bytes=2M
# shellcheck disable=SC2013 # words, not lines
for arg in $(cat /proc/cmdline); do
	case $arg in
	pci.vm=*) vm=${arg#pci.vm=} ;;
	pci.device=*) device=${arg#pci.device=} ;;
	pci.size=*) size=${arg#pci.size=} ;;
	pci.buffer=*) buffer=${arg#pci.buffer=} ;;
	pci.small=*) small=${arg#pci.small=} ;;
	pci.duration=*) duration=${arg#pci.duration=} ;;
	pci.iterations=*) iterations=${arg#pci.iterations=} ;;
	pci.seed=*) seed=${arg#pci.seed=} ;;
	pci.wait=*) wait=${arg#pci.wait=} ;;
	pci.lost=*) lost=${arg#pci.lost=} ;;
	pci.own=*) own_size=${arg#pci.own=} ;;
	pci.cuda=*) cuda_bytes=${arg#pci.cuda=} ;;
	esac
done
failures=0
# shellcheck source=tests/vm/l2/guest-lib.sh
. /lib/vgpu-guest.sh
ok() { echo "VGPU-PCI-L2 ok vm=$vm: $*"; }
bad() {
	echo "VGPU-PCI-L2 FAIL vm=$vm: $*"
	failures=$((failures + 1))
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }
kernel_log() { dmesg | sed 's/^\[[^]]*\] //'; }

# The host's lines: ttyS1 open for the whole job, raw, no echo.
exec 3</dev/ttyS1
stty -F /dev/ttyS1 raw -echo 2>/dev/null
await() { # WORD: wait for the host's line WORD (at most pci.wait seconds)
	local line
	# shellcheck disable=SC3045 # busybox ash has read -t
	while read -r -t "$wait" line <&3; do
		[ "$line" = "$1" ] && return 0
	done
	bad "no '$1' line from the host within ${wait}s"
	return 1
}
# After the test: answer the host's pings until QEMU is quit (never returns).
serve() {
	echo "VGPU-PCI-GUEST-DONE vm=$vm failures=$failures uptime=$(uptime_s)"
	local line
	while :; do
		# shellcheck disable=SC3045
		read -r -t 3600 line <&3 || continue
		[ "$line" = ping ] && echo "VGPU-PCI-PONG vm=$vm uptime=$(uptime_s)"
	done
}

# vgpu-run WORKLOAD ARGS...: one verified workload, its JSON result on the
# console; a check on its exit status and checksums.
verified_run() {
	local workload=$1 rc
	shift
	/bin/vgpu-run -D "$node" --workload "$workload" --seed "$seed" --json "$@" \
		>/tmp/run.json 2>/tmp/run.err
	rc=$?
	sed "s/^/VGPU-PCI-STDERR vm=$vm: /" /tmp/run.err
	echo "VGPU-PCI-RESULT vm=$vm $workload $(tr -d '\n' </tmp/run.json | tr -s ' ')"
	vgpu_guest_judge_run "$workload" "$rc" /tmp/run.json
}

echo 5 >/proc/sys/kernel/printk
echo "VGPU-PCI-MARK" >/dev/kmsg
vgpu_guest_load || serve
vgpu_guest_find_node 50
# the PCI functions with the vGPU's IDs (1af4:10f0)
functions=$(for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x1af4:0x10f0 ] && basename "$d"
done)
if [ "$device" = 0 ]; then
	# a QEMU without vgpu-pci: nothing to bind to
	if [ -z "$node" ] && [ -z "$functions" ]; then
		ok "no vGPU PCI function (1af4:10f0) and vgpu.ko bound nothing (a QEMU without vgpu-pci)"
	else
		bad "a QEMU without vgpu-pci, yet: functions '$functions', render node '$node'"
	fi
	echo "VGPU-PCI-READY vm=$vm uptime=$(uptime_s)"
	serve
fi
if [ -n "$node" ] && [ -c "$node" ]; then
	ok "vgpu.ko bound the vgpu-pci function $functions: render node $node ($(kernel_log | grep -m1 'vGPU ABI'))"
else
	bad "vgpu.ko bound no vGPU (PCI functions 1af4:10f0: '${functions:-none}'): $(dmesg | grep -i vgpu | tail -n 5 | tr '\n' '|')"
	serve
fi

echo "VGPU-PCI-READY vm=$vm uptime=$(uptime_s)"
await go || serve
echo "VGPU-PCI-START vm=$vm uptime=$(uptime_s)"
# stream, holding its memory until the host has read vgpuctl
/bin/vgpu-run -D "$node" --workload stream --size "$size" --buffer-size "$buffer" \
	--duration "$duration" --seed "$seed" --hold "${wait}s" --json >/tmp/run.json 2>/tmp/run.err &
pid=$!
held=0
while kill -0 "$pid" 2>/dev/null; do
	if grep -q 'vgpu-run: HOLD bytes=.*verify and free)$' /tmp/run.err; then
		held=1
		break
	fi
	sleep 0.2
done
if [ "$held" = 1 ]; then
	echo "VGPU-PCI-HOLD vm=$vm $(grep -m1 'vgpu-run: HOLD bytes=' /tmp/run.err | sed 's/^vgpu-run: HOLD //; s/ (SIGUSR1.*//') uptime=$(uptime_s)"
	await release
	# the VRAM still oversubscribed by every guest's stream memory
	vgpu_guest_own_programs "$own_size" "$cuda_bytes"
	kill -USR1 "$pid" 2>/dev/null
fi
wait "$pid"
rc=$?
sed "s/^/VGPU-PCI-STDERR vm=$vm: /" /tmp/run.err
echo "VGPU-PCI-RESULT vm=$vm stream $(tr -d '\n' </tmp/run.json | tr -s ' ')"
[ "$held" = 1 ] || bad "stream ended (exit status $rc) before holding its memory"
vgpu_guest_judge_run stream "$rc" /tmp/run.json
verified_run stencil --size "$small" --buffer-size "$small" --iterations "$iterations"
verified_run gups --size "$small" --buffer-size "$buffer" --iterations "$iterations"
echo "VGPU-PCI-WORKLOADS-DONE vm=$vm failures=$failures uptime=$(uptime_s)"

# --- vgpud killed under a running workload ---------------------------------------
await lost || serve
echo "VGPU-PCI-LOST-RUN vm=$vm workload=$lost uptime=$(uptime_s)"
if [ "$lost" = stall ]; then
	# its "vgpu-run: STALL" line straight to the console: the host kills
	# vgpud once it sees it
	/bin/vgpu-run -D "$node" --workload stall --duration 600s --json >/tmp/lost.json
	rc=$?
else
	/bin/vgpu-run -D "$node" --workload stream --size "$buffer" --buffer-size "$buffer" \
		--duration 600s --seed "$seed" --json >/tmp/lost.json
	rc=$?
fi
echo "VGPU-PCI-LOST-RESULT vm=$vm rc=$rc uptime=$(uptime_s) $(tr -d '\n' </tmp/lost.json | tr -s ' ')"
message=$(grep -o '"message":"[^"]*"' /tmp/lost.json)
if [ "$lost" = stall ]; then
	if [ "$rc" = 1 ] && echo "$message" | grep -q '"message":"device lost after'; then
		ok "the fence wait ended with device lost: $message"
	else
		bad "the fence wait did not end with device lost (exit status $rc): $message"
	fi
elif [ "$rc" = 1 ] && [ -n "$message" ]; then
	ok "the running stream workload failed with an error: $message"
else
	bad "the running stream workload did not fail with an error (exit status $rc): $message"
fi
why=$(kernel_log | grep -m1 'device lost: the host backend')
if [ -n "$why" ]; then
	ok "vgpu.ko reported it: $why"
else
	bad "vgpu.ko did not log the lost device"
fi
vgpu_guest_unload "after the device was lost"
vgpu_guest_log_clean VGPU-PCI-MARK "the test began" "soft lockup|hung task"
serve
