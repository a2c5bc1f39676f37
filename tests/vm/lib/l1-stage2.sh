#!/bin/bash
# tests/vm/lib/l1-stage2.sh - PID 1 of the L1 VM after switch_root.
#
# Runs from the host root (read-only 9p) under the L1 kernel. It sets up a
# small environment, runs the job that boot-l1.sh described in
# $OUT/job.env, records the exit status in $OUT/status and on the serial
# console (VGPU-L1-STATUS=<rc>), and powers the VM off. It never returns:
# if it did, the kernel would panic and QEMU (-no-reboot, panic=-1) would
# exit, which boot-l1.sh also reports as a failure.
set -u

export PATH=/run/vgpu/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp TERM=${TERM:-dumb} LANG=C.UTF-8

out=
for arg in $(</proc/cmdline); do
	case $arg in vgpu.out=*) out=${arg#vgpu.out=} ;; esac
done

finish() {
	local rc=$1
	[[ -n $out ]] && { echo "$rc" >"$out/status.tmp" && mv "$out/status.tmp" "$out/status"; } 2>/dev/null
	sync
	echo "VGPU-L1-STATUS=$rc"
	# Give the serial console a moment, then power off (ACPI).
	sleep 0.2
	/bin/busybox poweroff -f 2>/dev/null || echo o >/proc/sysrq-trigger
	sleep 10
	exit "$rc"
}

[[ -n $out && -r $out/job.env ]] || { echo "VGPU-L1: no job.env in '$out'"; finish 125; }
hostname vgpu-l1 2>/dev/null || true
ip link set lo up 2>/dev/null || true

# job.env (written by boot-l1.sh) exports the kernel env (KVER, KROOT, ...)
# and sets the VM_JOB array.
# shellcheck disable=SC1091
source "$out/job.env"

# The host has no /lib/modules and the 9p root is read-only: point modprobe
# (ours and the kernel's request_module helper) at the unpacked kernel.
mkdir -p /run/vgpu/bin
if [[ -n ${KROOT:-} ]]; then
	for t in modinfo depmod; do
		printf '#!/bin/sh\nexec /sbin/%s -b %s "$@"\n' "$t" "$KROOT" >"/run/vgpu/bin/$t"
	done
	printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' "$KROOT" >/run/vgpu/bin/modprobe
	chmod +x /run/vgpu/bin/*
	echo /run/vgpu/bin/modprobe >/proc/sys/kernel/modprobe
fi

echo "VGPU-L1-READY uptime=$(cut -d' ' -f1 /proc/uptime)"
cd "$out" || finish 125
if [[ ${VM_JOB[0]:-} == --shell ]]; then
	echo "VGPU-L1: interactive shell; 'exit N' ends the VM with status N"
	setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
	rc=$?
else
	"${VM_JOB[@]}" 2>&1 | tee "$out/job.log"
	rc=${PIPESTATUS[0]}
fi
finish "$rc"
