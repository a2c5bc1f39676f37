#!/bin/busybox sh
# shellcheck shell=dash
# tests/vm/l2/e2e-guest.sh - /l2-job of tests/vm/run (runs INSIDE each L2
# guest, busybox only).
#
# The guest's share of the end-to-end test: load drm.ko and vgpu.ko (the vGPU
# is an mdev of vgpu_mdev.ko in L1, served by the real vgpud), then run
# vgpu-run with a verified workload that allocates e2e.size bytes of GPU
# memory and iterates over it for e2e.duration, and --hold it before the
# verification: the HOLD line (bytes held, the VM's statistics) goes to the
# console as "VGPU-E2E-HOLD vm=N ...", then the guest waits for L1 to write a
# line to its second serial port (ttyS1) -- L1 reads vgpuctl meanwhile -- and
# releases vgpu-run, which verifies every buffer by checksum and frees;
# before that, with its memory still held, a guest without e2e.lost=1 runs
# GPU programs of its own (l2/guest-lib.sh's vgpu_guest_own_programs):
# vgpu-ptx-run (a PTX module through vgpu.ko's MODULE_LOAD, e2e.own of
# data) and the CUDA driver-API program cuda-saxpy with libcuda.so.1
# (e2e.cuda bytes), each checked against the CPU.
# With e2e.lost=1 it then runs vgpu-run --workload stall (a fence that never
# passes) with its stderr on the console, so L1 sees the "vgpu-run: STALL"
# line when the wait begins, kills vgpud, and sees how the wait ended
# ("vgpu-run: stall: device lost after ..."); the guest checks that it ended
# with device lost and that vgpu.ko logged it.
#
# Parameters from the kernel command line (set by tests/vm/l1/e2e.sh):
#   e2e.vm=N e2e.workload=stream e2e.size=168M e2e.buffer=24M
#   e2e.duration=4s e2e.seed=N e2e.hold=300 e2e.lost=0|1
#   e2e.irq=auto|msix|msi|intx|poll (vgpu.ko's irq_mode; default auto)
#   e2e.own=6M e2e.cuda=2M
# Output lines: "VGPU-E2E-L2 ok|FAIL vm=N: what", "VGPU-E2E-HOLD vm=N ...",
# "VGPU-E2E-RESULT vm=N {json}" (vgpu-run --json, one line);
# exit status = failures.
vm=0 workload=stream size=168M buffer=24M duration=4s seed=1 hold=300 lost=0 irq=auto
# The guest's own PTX runs on simgpu inside L1, which TCG emulates: its
# launches over buffers of 2M (what tests/vgpu-pci uses) outlast the core's
# 10 s drain when another VM's allocation relocates this one's chunks, and
# the channel is killed as a channel that does not drain would be. 256K
# buffers keep each launch well inside it.
own_size=1M own_buffer=256K cuda_bytes=2M
# shellcheck disable=SC2013 # words, not lines
for arg in $(cat /proc/cmdline); do
	case $arg in
	e2e.vm=*) vm=${arg#e2e.vm=} ;;
	e2e.workload=*) workload=${arg#e2e.workload=} ;;
	e2e.size=*) size=${arg#e2e.size=} ;;
	e2e.buffer=*) buffer=${arg#e2e.buffer=} ;;
	e2e.duration=*) duration=${arg#e2e.duration=} ;;
	e2e.seed=*) seed=${arg#e2e.seed=} ;;
	e2e.hold=*) hold=${arg#e2e.hold=} ;;
	e2e.lost=*) lost=${arg#e2e.lost=} ;;
	e2e.irq=*) irq=${arg#e2e.irq=} ;;
	e2e.own=*) own_size=${arg#e2e.own=} ;;
	e2e.cuda=*) cuda_bytes=${arg#e2e.cuda=} ;;
	esac
done
failures=0
# shellcheck source=tests/vm/l2/guest-lib.sh
. /lib/vgpu-guest.sh
ok() { echo "VGPU-E2E-L2 ok vm=$vm: $*"; }
bad() {
	echo "VGPU-E2E-L2 FAIL vm=$vm: $*"
	failures=$((failures + 1))
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }
finish() {
	echo "VGPU-E2E-L2-DONE vm=$vm failures=$failures uptime=$(uptime_s)"
	exit "$failures"
}

# Kernel warnings and errors from here on reach the console (the boot is
# quiet; info messages would interleave with the test's lines).
echo 5 >/proc/sys/kernel/printk
# The kernel log is checked from here on: the boot itself may warn (6.1's
# xstate init WARNs once on the nested CPU model), before any code of ours.
echo "VGPU-E2E-MARK" >/dev/kmsg
boot_warn=$(dmesg | sed -n '1,/VGPU-E2E-MARK$/p' | grep -m1 'WARNING:' | sed 's/^\[[^]]*\] //')
[ -n "$boot_warn" ] && echo "VGPU-E2E-NOTE vm=$vm: a warning during the L2 boot, before the test: $boot_warn"
vgpu_guest_load irq_mode="$irq" || finish
vgpu_guest_bound 100 || finish

# L1 writes a line to ttyS1 when vgpuctl has been read.
stty -F /dev/ttyS1 raw -echo 2>/dev/null
echo "VGPU-E2E-RUN vm=$vm: vgpu-run --workload $workload --size $size --buffer-size $buffer" \
	"--duration $duration --seed $seed --hold ${hold}s (uptime $(uptime_s))"
/bin/vgpu-run -D "$node" --workload "$workload" --size "$size" --buffer-size "$buffer" \
	--duration "$duration" --seed "$seed" --hold "${hold}s" --json >/tmp/run.json 2>/tmp/run.err &
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
	echo "VGPU-E2E-HOLD vm=$vm $(grep -m1 'vgpu-run: HOLD bytes=' /tmp/run.err | sed 's/^vgpu-run: HOLD //') uptime=$(uptime_s)"
	# shellcheck disable=SC3045 # busybox ash has read -t
	if read -r -t "$hold" go </dev/ttyS1; then
		echo "VGPU-E2E-RELEASED vm=$vm by L1 ('$go', uptime $(uptime_s))"
		# its memory still held, the other guests' too (the VRAM
		# oversubscribed); the guest waiting for vgpud's death does not
		if [ "$lost" != 1 ]; then
			vgpu_guest_own_programs "$own_size" "$cuda_bytes" "$own_buffer"
		fi
	else
		bad "no release line from L1 on ttyS1 within ${hold}s"
	fi
	kill -USR1 "$pid" 2>/dev/null
fi
wait "$pid"
rc=$?
sed 's/^/VGPU-E2E-STDERR /' /tmp/run.err
echo "VGPU-E2E-RESULT vm=$vm $(tr -d '\n' </tmp/run.json | tr -s ' ')"
[ "$held" = 1 ] || bad "vgpu-run ended (status $rc) before holding its memory"
if [ "$rc" = 0 ] && grep -q '"verified":true' /tmp/run.json && grep -q '"mismatches":0' /tmp/run.json; then
	ok "vgpu-run verified every buffer byte for byte ($(grep -o '"checksums":[0-9]*' /tmp/run.json))"
else
	bad "vgpu-run exit status $rc: $(grep -o '"message":"[^"]*"' /tmp/run.json)"
fi
if [ "$lost" = 1 ]; then
	# L1 kills vgpud once the STALL line is out; stderr goes straight to
	# the console so no polling here adds to what L1 measures.
	echo "VGPU-E2E-STALL vm=$vm: vgpu-run --workload stall --duration 120s (uptime $(uptime_s))"
	/bin/vgpu-run -D "$node" --workload stall --duration 120s --json >/tmp/stall.json
	rc=$?
	echo "VGPU-E2E-STALL-RESULT vm=$vm $(tr -d '\n' </tmp/stall.json | tr -s ' ')"
	if [ "$rc" = 1 ] && grep -q '"message":"device lost after' /tmp/stall.json; then
		ok "the stalled fence wait ended with device lost once vgpud was killed: $(grep -o '"message":"[^"]*"' /tmp/stall.json)"
	else
		bad "the stalled fence wait did not end with device lost (exit status $rc): $(grep -o '"message":"[^"]*"' /tmp/stall.json)"
	fi
	why=$(dmesg | grep -m1 'device lost: the host backend' | sed 's/^\[[^]]*\] //')
	if [ -n "$why" ]; then
		ok "vgpu.ko reported it: $why"
	else
		bad "vgpu.ko did not log the lost device"
	fi
fi
vgpu_guest_unload
vgpu_guest_log_clean VGPU-E2E-MARK "the test began"
finish
