#!/bin/busybox sh
# shellcheck shell=dash
# tests/vm/l2/mtty-check.sh - /l2-job for tests/vm/mdev-sample.sh (runs in L2).
#
# Finds the mtty mediated device (PCI 4348:3253, a 16550-like UART) that L1
# passed in with -device vfio-pci,sysfsdev=..., and checks that data written
# to its port comes back (mtty loops TX to RX):
#   1. through the 8250 driver and /dev/ttySN: config space, I/O BAR and
#      INTx interrupts (eventfd -> KVM irqfd) - VGPU-L2-MTTY-TTY-LOOPBACK-OK
#   2. at register level through /dev/port with the driver unbound: the BAR
#      access path alone - VGPU-L2-MTTY-LOOPBACK-OK (exit 4 if it fails)
dev=
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat "$d/vendor")" = 0x4348 ] && [ "$(cat "$d/device")" = 0x3253 ]; then
		dev=$d
	fi
done
if [ -z "$dev" ]; then
	echo "VGPU-L2-MTTY-MISSING"
	for d in /sys/bus/pci/devices/*; do
		echo "  $(basename "$d") $(cat "$d/vendor"):$(cat "$d/device") class $(cat "$d/class")"
	done
	exit 1
fi
echo "VGPU-L2-MTTY-FOUND $(basename "$dev") class=$(cat "$dev/class")"
# 1. Through the 8250 driver (informational): the driver probed it as a
#    16550A, which already took register reads and writes through the BAR;
#    also count its interrupts while a reader has the port open.
tty=$(ls "$dev/tty" 2>/dev/null | head -n 1)
if [ -n "$tty" ]; then
	port=${tty#ttyS}
	stty -F "/dev/$tty" raw -echo 9600
	cat "/dev/$tty" >/tmp/rx &
	reader=$!
	sleep 1
	# At most 16 bytes: mtty loops TX into its 16-byte RX FIFO and signals
	# THRE only once that is empty, so a longer write stalls.
	echo "vgpu-tty-ok" >"/dev/$tty"
	sleep 2
	echo "VGPU-L2-MTTY-TTY /dev/$tty $(grep "^$port:" /proc/tty/driver/serial | cut -d' ' -f2-)"
	echo "VGPU-L2-MTTY-IRQ $(grep "$tty" /proc/interrupts | tr -s ' ')"
	kill "$reader" 2>/dev/null
	wait "$reader" 2>/dev/null
	if grep -q "vgpu-tty-ok" /tmp/rx; then
		echo "VGPU-L2-MTTY-TTY-LOOPBACK-OK"
	else
		echo "VGPU-L2-MTTY-TTY-LOOPBACK-NONE (read $(wc -c </tmp/rx) bytes)"
	fi
	echo "$(basename "$dev")" >"$dev/driver/unbind"
fi

# 2. Register level, no driver and no interrupts: write THR of port 0 through
#    /dev/port, expect LSR.DR, read the byte back from RBR (mtty loops back).
base=$(($(head -n 1 "$dev/resource" | cut -d' ' -f1)))
inb() { dd if=/dev/port bs=1 skip="$1" count=1 2>/dev/null | od -An -tu1 | tr -d ' '; }
outb() { printf "\\$(printf %03o "$2")" | dd of=/dev/port bs=1 seek="$1" count=1 conv=notrunc 2>/dev/null; }
outb $((base + 3)) 3  # LCR: 8N1, DLAB off
outb $((base + 2)) 7  # FCR: enable + clear FIFOs
ok=1
for byte in 86 71 80 85; do # "VGPU"
	outb "$base" "$byte"
	lsr=$(inb $((base + 5)))
	rbr=$(inb "$base")
	echo "  THR<-$byte LSR=$lsr RBR->$rbr"
	[ $((lsr & 1)) = 1 ] && [ "$rbr" = "$byte" ] || ok=0
done
if [ "$ok" = 1 ]; then
	echo "VGPU-L2-MTTY-LOOPBACK-OK (BAR0 at $(printf 0x%x "$base"))"
else
	echo "VGPU-L2-MTTY-LOOPBACK-FAILED"
	exit 4
fi
