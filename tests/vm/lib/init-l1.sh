#!/bin/busybox sh
# shellcheck shell=dash
# tests/vm/lib/init-l1.sh - /init of the L1 initramfs (runs under busybox sh).
#
# Stage 1 of the L1 boot. It only loads the virtio/9p modules packed into the
# initramfs, mounts the HOST root read-only over 9p (tag "hostroot") as the
# new root, gives it fresh /dev, /proc, /sys and tmpfs on /tmp, /run and
# /var/tmp, mounts the run's writable 9p share (tag "vgpuout") at the same
# path as on the host, and switch_roots into stage 2, a bash script of the
# host tree (tests/vm/lib/l1-stage2.sh), so every host binary (qemu, bash,
# kmod, the project's daemon) runs in L1 at its usual path.
#
# Kernel command line: vgpu.out=<host path of the rw share>
#                      vgpu.stage2=<host path of the stage-2 script>
#                      vgpu.rootopts=<extra 9p mount options for hostroot>

/bin/busybox --install -s /bin
export PATH=/bin:/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1

fail() {
	echo "VGPU-L1-INIT-FAILED: $*"
	echo "VGPU-L1-STATUS=125"
	sleep 1
	poweroff -f
}

echo "VGPU-L1: initramfs init on $(uname -r)"

while read -r m; do
	[ -n "$m" ] || continue
	insmod "/lib/modules/$(uname -r)/$m" || fail "insmod $m"
done </etc/initramfs-modules

out='' stage2='' rootopts=cache=loose
for arg in $(cat /proc/cmdline); do
	case $arg in
	vgpu.out=*) out=${arg#vgpu.out=} ;;
	vgpu.stage2=*) stage2=${arg#vgpu.stage2=} ;;
	vgpu.rootopts=*) rootopts=${arg#vgpu.rootopts=} ;;
	esac
done
[ -n "$out" ] && [ -n "$stage2" ] || fail "vgpu.out= or vgpu.stage2= missing"

p9=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /newroot
mount -t 9p -o "$p9,ro,$rootopts" hostroot /newroot || fail "mount hostroot"
for d in tmp run var/tmp; do
	mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d" || fail "tmpfs on /$d"
done
mount -t devtmpfs devtmpfs /newroot/dev || fail "devtmpfs"
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t proc proc /newroot/proc || fail "proc"
mount -t sysfs sysfs /newroot/sys || fail "sysfs"
# The share's directory exists on the host (hence in the 9p view) unless it
# lives under one of the fresh tmpfs mounts: create it there.
mkdir -p "/newroot$out" 2>/dev/null
mount -t 9p -o "$p9,rw" vgpuout "/newroot$out" || fail "mount vgpuout on $out"
[ -r "/newroot$stage2" ] || fail "no stage 2 script $stage2 in the host root"

umount /proc /sys
exec switch_root /newroot /bin/bash "$stage2"
