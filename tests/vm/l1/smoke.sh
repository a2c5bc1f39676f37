#!/bin/bash
# tests/vm/l1/smoke.sh - the L1 half of tests/vm/smoke.sh (runs INSIDE L1).
#
# Usage (via boot-l1.sh): l1/smoke.sh MODULE.ko L2_INITRD
#
# Checks, in order, each announced by a VGPU-SMOKE line on the console:
#   1. the CPU offers SVM (TCG's -cpu max is AMD-flavoured),
#   2. vfio, vfio_iommu_type1 and mdev load and /dev/vfio/vfio, /sys/bus/mdev
#      appear (informational: vfio_mdev and noiommu mode do not exist in 6.1),
#   3. kvm_amd loads with nested=1 and /dev/kvm appears,
#   4. MODULE.ko (built on the host against the fetched headers) loads and
#      unloads, with its printk in dmesg,
#   5. an L2 guest boots under 'qemu-system-x86_64 -accel kvm -cpu host'
#      (same kernel, L2_INITRD) and prints VGPU-L2-HELLO.
# Prints VGPU-SMOKE-L2-SECONDS=<s> and finally VGPU-SMOKE-L1-DONE.
set -euo pipefail

ko=${1:?usage: smoke.sh MODULE.ko L2_INITRD}
l2_initrd=${2:?usage: smoke.sh MODULE.ko L2_INITRD}
: "${VMLINUZ:?not run by boot-l1.sh}"

say() { echo "VGPU-SMOKE: $*"; }
die() {
	echo "VGPU-SMOKE-FAILED: $*"
	exit 1
}

say "L1 kernel $(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo)"

# 1. SVM
vendor=$(sed -n 's/^vendor_id[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
grep -qw svm /proc/cpuinfo || die "no svm flag in /proc/cpuinfo (vendor $vendor)"
say "cpu $vendor with svm"

# 2. VFIO + mdev
modprobe vfio || die "modprobe vfio"
modprobe vfio_iommu_type1 || die "modprobe vfio_iommu_type1"
modprobe mdev || die "modprobe mdev"
for m in vfio vfio_iommu_type1 mdev; do
	[[ -d /sys/module/$m ]] || die "module $m not loaded"
done
[[ -c /dev/vfio/vfio ]] || die "/dev/vfio/vfio missing"
[[ -d /sys/bus/mdev ]] || die "/sys/bus/mdev missing"
say "vfio, vfio_iommu_type1, mdev loaded; /dev/vfio/vfio and /sys/bus/mdev present"
if modprobe -n -q vfio_mdev 2>/dev/null; then
	say "note: a vfio_mdev module exists"
else
	say "note: no vfio_mdev module (folded into mdev/vfio since 5.16)"
fi
if [[ -e /sys/module/vfio/parameters/enable_unsafe_noiommu_mode ]]; then
	say "note: vfio noiommu mode available"
else
	say "note: vfio has no enable_unsafe_noiommu_mode (CONFIG_VFIO_NOIOMMU off); mdev does not need it"
fi

# 3. KVM with nested SVM
modprobe kvm_amd nested=1 || die "modprobe kvm_amd"
[[ -c /dev/kvm ]] || die "/dev/kvm missing after loading kvm_amd"
nested=$(cat /sys/module/kvm_amd/parameters/nested)
[[ $nested == 1 || $nested == Y ]] || die "kvm_amd nested=$nested"
say "kvm_amd loaded, nested=$nested, /dev/kvm present"

# 4. the out-of-tree module
dmesg -C
insmod "$ko" || die "insmod $ko"
name=$(basename "$ko" .ko)
grep -q "^$name " /proc/modules || die "$name not in /proc/modules"
rmmod "$name" || die "rmmod $name"
dmesg | grep -q "$name: loaded" || die "no '$name: loaded' in dmesg"
dmesg | grep -q "$name: unloaded" || die "no '$name: unloaded' in dmesg"
say "out-of-tree module $name: $(modinfo -F vermagic "$ko" | xargs) loaded and unloaded"
echo "VGPU-SMOKE-MODULE-OK"

# 5. L2 guest under KVM
say "booting L2 with -accel kvm -cpu host"
t0=$(date +%s.%N)
set +e
timeout -k 5 300 qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot \
	-accel kvm -cpu host -machine pc -m 256M -smp 1 \
	-kernel "$VMLINUZ" -initrd "$l2_initrd" \
	-append "console=ttyS0 panic=-1 quiet" \
	-serial stdio </dev/null 2>&1 | tee l2.log
rc=${PIPESTATUS[0]}
set -e
l2_s=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "VGPU-SMOKE-L2-SECONDS=$l2_s"
grep -q '^VGPU-L2-HELLO' l2.log || die "L2 printed no VGPU-L2-HELLO (qemu rc $rc)"
grep -q '^VGPU-L2-STATUS=0' l2.log || die "L2 did not finish cleanly (qemu rc $rc)"
((rc == 0)) || die "L2 qemu exited with $rc"
echo "VGPU-SMOKE-L1-DONE"
