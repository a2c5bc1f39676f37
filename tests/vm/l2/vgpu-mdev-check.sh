#!/bin/busybox sh
# shellcheck shell=dash
# tests/vm/l2/vgpu-mdev-check.sh - /l2-job for tests/vm/vgpu-mdev.sh (runs in L2).
#
# Finds the vGPU L1 passed in with -device vfio-pci,sysfsdev=..., runs
# /mdev-client --guest's checks (identity, registers, BAR2, doorbell, DMA,
# the shadow swap under guest writes), counts interrupts with /vgpu_irqtest.ko
# in MSI-X, MSI and INTx mode, lets fake-vgpud die with a window blocked,
# then waits for L1 to remove the mdev (QEMU hot-unplugs the device).
G() { /mdev-client --guest "$@"; }
ok() { echo "VGPU-L2-CHECK ok: $*"; }
bad() {
	echo "VGPU-L2-CHECK FAIL: $*"
	rc=1
}
rc=0

dev=$(G find)
if [ -z "$dev" ]; then
	bad "no 1af4:10f0 device"
	for d in /sys/bus/pci/devices/*; do
		echo "  $(basename "$d") $(cat "$d/vendor"):$(cat "$d/device") class $(cat "$d/class")"
	done
	exit 1
fi
echo "VGPU-L2-FOUND $dev"
for c in ids regs pattern ping; do
	G "$c" "$dev" || rc=1
done

# interrupts: raise:VECTORS:IRQ_STATUS_BITS asks fake-vgpud to raise them
irqtest() { # MODE MIN0 MIN1 MIN2
	if ! insmod /vgpu_irqtest.ko mode="$1"; then
		bad "insmod vgpu_irqtest mode=$1"
		return
	fi
	G raise:1:1 "$dev" || rc=1
	G raise:2:2 "$dev" || rc=1
	G raise:4:4 "$dev" || rc=1
	usleep 500000
	# shellcheck disable=SC2046 # split the counts into fields on purpose
	set -- "$@" $(cat "$dev/irqtest_counts")
	# $5 = mode $6 = vectors $7..$9 = counts $10 = status bits seen
	if [ "$7" -ge "$2" ] && [ "$8" -ge "$3" ] && [ "$9" -ge "$4" ]; then
		ok "$1: $6 vector(s), interrupts per vector $7 $8 $9, status bits seen ${10}"
	else
		bad "$1: $6 vector(s), interrupts per vector $7 $8 $9 (want >= $2 $3 $4)"
	fi
	rmmod vgpu_irqtest || bad "rmmod vgpu_irqtest"
}
irqtest msix 1 1 1
irqtest msi 3 0 0
irqtest intx 3 0 0
grep -i vgpu_irqtest /proc/interrupts

G dma "$dev" || rc=1
G swap "$dev" || rc=1

echo "VGPU-L2-DIE-START"
G die "$dev" || rc=1
echo "VGPU-L2-READY-FOR-REMOVE"
i=0
while [ -e "$dev" ] && [ $i -lt 120 ]; do
	sleep 1
	i=$((i + 1))
done
if [ -e "$dev" ]; then
	bad "the vGPU is still present 120 s after READY-FOR-REMOVE"
else
	echo "VGPU-L2-UNPLUGGED after ${i}s"
	ok "the vGPU was hot-unplugged when L1 removed the mdev"
fi
exit $rc
