#!/bin/bash
# tests/vm/l1/mdev-sample.sh - the L1 half of tests/vm/mdev-sample.sh (runs INSIDE L1).
#
# Usage (via boot-l1.sh): l1/mdev-sample.sh MTTY.ko L2_INITRD
#
# The mediated-device path the real vgpu_mdev test will take, with the
# kernel's mtty sample as the parent driver: load vfio + mdev + kvm_amd,
# insmod mtty.ko, create an mdev through sysfs, boot L2 under KVM with
# -device vfio-pci,sysfsdev=/sys/bus/mdev/devices/UUID (no vIOMMU, no
# noiommu mode), let L2 check the device, then remove the mdev and unload.
set -euo pipefail

ko=${1:?usage: mdev-sample.sh MTTY.ko L2_INITRD}
l2_initrd=${2:?usage: mdev-sample.sh MTTY.ko L2_INITRD}
: "${VMLINUZ:?not run by boot-l1.sh}"

say() { echo "VGPU-MDEV: $*"; }
die() {
	echo "VGPU-MDEV-FAILED: $*"
	dmesg | tail -n 20
	exit 1
}

modprobe vfio || die "modprobe vfio"
modprobe vfio_iommu_type1 || die "modprobe vfio_iommu_type1"
modprobe mdev || die "modprobe mdev"
modprobe kvm_amd nested=1 || die "modprobe kvm_amd"
insmod "$ko" || die "insmod $ko"
parent=/sys/class/mdev_bus/mtty
[[ -d $parent/mdev_supported_types ]] || die "no $parent/mdev_supported_types"
say "parent mtty registered; types: $(cd "$parent/mdev_supported_types" && echo *)"
type=$parent/mdev_supported_types/mtty-2
say "type mtty-2: name '$(cat "$type/name")', device_api $(cat "$type/device_api"), available $(cat "$type/available_instances")"

uuid=$(cat /proc/sys/kernel/random/uuid)
echo "$uuid" >"$type/create" || die "create mdev $uuid"
dev=/sys/bus/mdev/devices/$uuid
[[ -e $dev ]] || die "$dev missing after create"
group=$(basename "$(readlink "$dev/iommu_group")")
say "created mdev $uuid, driver $(basename "$(readlink "$dev/driver")"), iommu group $group"
[[ -c /dev/vfio/$group ]] || die "/dev/vfio/$group missing"
echo "VGPU-MDEV-CREATED"

say "booting L2 with -accel kvm -device vfio-pci,sysfsdev=$dev"
t0=$(date +%s.%N)
set +e
timeout -k 5 300 qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot \
	-accel kvm -cpu host -machine pc -m 256M -smp 1 \
	-kernel "$VMLINUZ" -initrd "$l2_initrd" \
	-append "console=ttyS0 panic=-1 quiet" \
	-device "vfio-pci,sysfsdev=$dev" \
	-serial stdio </dev/null 2>&1 | tee l2.log
rc=${PIPESTATUS[0]}
set -e
echo "VGPU-MDEV-L2-SECONDS=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"

echo 1 >"$dev/remove" || die "remove mdev"
rmmod mtty || die "rmmod mtty"
say "mdev removed, mtty unloaded"

grep -q '^VGPU-L2-MTTY-FOUND' l2.log || die "L2 did not see the mtty PCI device (qemu rc $rc)"
grep -q '^VGPU-L2-STATUS=0' l2.log || die "L2 check failed (qemu rc $rc)"
((rc == 0)) || die "L2 qemu exited with $rc"
echo "VGPU-MDEV-L1-DONE"
