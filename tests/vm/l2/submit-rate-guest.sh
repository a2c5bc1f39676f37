#!/bin/busybox sh
# shellcheck shell=dash
# tests/vm/l2/submit-rate-guest.sh - /l2-job of tests/vm/vgpu-pci-bench.sh
# (runs INSIDE each L2 guest, busybox only).
#
# Loads drm.ko and vgpu.ko (the vGPU is an mdev of vgpu_mdev.ko or QEMU's
# vgpu-pci, both served by one vgpud in L1), then runs vgpu-submit-rate with
# its commands coming from the second serial port (ttyS1), where L1 writes
# "run ID MS" for each segment, "hold SIZE" and "quit"; its VGPU-SUBMIT-*
# lines go back over ttyS1, where L1 reads them (its errors to the console).
#
# Parameters from the kernel command line (set by tests/vm/l1/vgpu-pci-bench.sh):
#   rate.vm=NAME rate.work=nop|stream
# Output lines: "VGPU-RATE-L2 ok|FAIL vm=NAME: what", vgpu-submit-rate's;
# exit status = failures.
vm=unknown work=nop
# shellcheck disable=SC2013 # words, not lines
for arg in $(cat /proc/cmdline); do
	case $arg in
	rate.vm=*) vm=${arg#rate.vm=} ;;
	rate.work=*) work=${arg#rate.work=} ;;
	esac
done
failures=0
# shellcheck source=tests/vm/l2/guest-lib.sh
. /lib/vgpu-guest.sh
ok() { echo "VGPU-RATE-L2 ok vm=$vm: $*"; }
bad() {
	echo "VGPU-RATE-L2 FAIL vm=$vm: $*"
	failures=$((failures + 1))
}
finish() {
	echo "VGPU-RATE-L2-DONE vm=$vm failures=$failures"
	exit "$failures"
}

echo 5 >/proc/sys/kernel/printk
# The kernel log is checked from here on: the boot itself may warn (6.1's
# xstate init WARNs once on the nested CPU model), before any code of ours.
echo "VGPU-RATE-MARK" >/dev/kmsg
boot_warn=$(dmesg | sed -n '1,/VGPU-RATE-MARK$/p' | grep -m1 'WARNING:' | sed 's/^\[[^]]*\] //')
[ -n "$boot_warn" ] && echo "VGPU-RATE-NOTE vm=$vm: a warning during the L2 boot, before the benchmark: $boot_warn"
vgpu_guest_load || finish
vgpu_guest_bound 100 || finish
stty -F /dev/ttyS1 raw -echo 2>/dev/null
if /bin/vgpu-submit-rate -D "$node" --work "$work" --control /dev/ttyS1 >/dev/ttyS1; then
	ok "vgpu-submit-rate finished"
else
	bad "vgpu-submit-rate exit status $?"
fi
vgpu_guest_unload
vgpu_guest_log_clean VGPU-RATE-MARK "the benchmark began"
finish
