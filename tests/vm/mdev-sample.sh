#!/bin/bash
# tests/vm/mdev-sample.sh - the full mediated-device path with the kernel's mtty sample.
set -euo pipefail

VM_PROG=mdev-sample
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
	cat <<EOF
Usage: $0 [--timeout SEC] [-v]

A dress rehearsal of the real vgpu_mdev test with a parent driver that
already exists: the kernel's samples/vfio-mdev/mtty.c (virtual 16550 UARTs).
  host: fetch kernel + samples (cached; lib/fetch-mdev-samples.sh), build
        mtty.ko against the fetched headers, an L2 initramfs whose /l2-job
        is l2/mtty-check.sh
  L1:   load vfio, vfio_iommu_type1, mdev, kvm_amd; insmod mtty.ko; create
        an mdev via sysfs; run L2 with -accel kvm and
        -device vfio-pci,sysfsdev=/sys/bus/mdev/devices/UUID; remove it
  L2:   find the PCI device; write to its UART and read the loopback, once
        through the 8250 driver (interrupts) and once through /dev/port
Prints timings and a PASS/FAIL line; exits 0 only on PASS.

Options:
  --timeout SEC  hard limit for the L1 VM (default 900)
  -v, --verbose  stream the L1 serial console to stderr
  -h, --help     this text
EOF
}

timeout=900 verbose=()
while (($#)); do
	case $1 in
	--timeout) timeout=${2:?}; shift 2 ;;
	-v | --verbose) verbose=(-v); shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

t0=$(vm_now)
fail() {
	echo "FAIL: vm mdev-sample: $*"
	echo "mdev-sample: 0 passed, 1 failed"
	exit 1
}

vm_ensure_host_pkgs
vm_kernel_env
samples=$("$VM_LIB_DIR/fetch-mdev-samples.sh") || fail "fetching the vfio-mdev samples"
run=$(vm_new_run_dir mdev-sample)
vm_log "kernel $KVER ($KPKGVER), run dir $run"

mod=$run/mtty
mkdir -p "$mod"
cp "$samples/mtty.c" "$mod/"
echo 'obj-m := mtty.o' >"$mod/Kbuild"
make -C "$KDIR" M="$mod" modules >"$run/module-build.log" 2>&1 ||
	{ cat "$run/module-build.log"; fail "mtty build against $KDIR"; }
l1_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l1) || fail "L1 initramfs"
l2_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name l2-mtty \
	--file "$VM_DIR/l2/mtty-check.sh:/l2-job") || fail "L2 initramfs"
prep=$(vm_elapsed "$t0")

set +e
"$VM_LIB_DIR/boot-l1.sh" "${verbose[@]}" --out "$run" --timeout "$timeout" --initrd "$l1_initrd" \
	"$VM_DIR/l1/mdev-sample.sh" "$mod/mtty.ko" "$l2_initrd"
rc=$?
set -e
total=$(vm_elapsed "$t0")

l1_boot=$(sed -n 's/^l1_boot=//p' "$run/timings" 2>/dev/null || true)
l1_job=$(sed -n 's/^job=//p' "$run/timings" 2>/dev/null || true)
l2=$(sed -n 's/^VGPU-MDEV-L2-SECONDS=//p' "$run/job.log" 2>/dev/null | tail -n 1 || true)
echo "--- vm mdev-sample ($KVER $KPKGVER), run dir $run"
grep -a '^VGPU-MDEV\|^VGPU-L2-' "$run/job.log" 2>/dev/null | sed 's/^/    /' || true
printf 'timings: prep %ss, L1 boot %ss, L1 job %ss (L2 with mdev %ss), total %ss\n' \
	"$prep" "${l1_boot:-NA}" "${l1_job:-NA}" "${l2:-NA}" "$total"

problems=()
((rc == 0)) || problems+=("L1 job exit status $rc")
grep -qa '^VGPU-MDEV-CREATED' "$run/job.log" 2>/dev/null || problems+=("mdev not created")
grep -qa '^VGPU-L2-MTTY-FOUND' "$run/job.log" 2>/dev/null || problems+=("L2 did not see the device")
grep -qa '^VGPU-L2-MTTY-LOOPBACK-OK' "$run/job.log" 2>/dev/null || problems+=("no register loopback")
grep -qa '^VGPU-L2-MTTY-TTY-LOOPBACK-OK' "$run/job.log" 2>/dev/null || problems+=("no tty (interrupt) loopback")
grep -qa '^VGPU-MDEV-L1-DONE' "$run/job.log" 2>/dev/null || problems+=("L1 job incomplete")
if ((${#problems[@]})); then
	fail "$(IFS=,; echo "${problems[*]}") (logs: $run/serial.log, $run/job.log)"
fi
echo "PASS: vm mdev-sample: mtty mdev created in L1, used by an L2 KVM guest through vfio-pci, removed; ${total}s"
echo "mdev-sample: 1 passed, 0 failed"
