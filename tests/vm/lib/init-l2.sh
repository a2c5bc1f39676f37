#!/bin/busybox sh
# shellcheck shell=dash
# tests/vm/lib/init-l2.sh - /init of the minimal L2 guest initramfs.
#
# Prints VGPU-L2-HELLO (with kernel release and CPU vendor, so the log shows
# what the nested guest saw), runs /l2-job if the initramfs has one, prints
# VGPU-L2-STATUS=<rc> and powers off.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
vendor=$(sed -n 's/^vendor_id[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
hv=$(dmesg | sed -n 's/.*Hypervisor detected: //p' | head -n 1)
echo "VGPU-L2-HELLO kernel=$(uname -r) cpu=$vendor hypervisor=${hv:-none} uptime=$(cut -d' ' -f1 /proc/uptime)"
rc=0
if [ -x /l2-job ]; then
	/l2-job
	rc=$?
fi
echo "VGPU-L2-STATUS=$rc"
poweroff -f
