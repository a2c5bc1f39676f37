#!/bin/bash
# tests/vm/smoke.sh - end-to-end check of the nested VM chain (host -> L1 -> L2).
set -euo pipefail

VM_PROG=smoke
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
	cat <<EOF
Usage: $0 [--timeout SEC] [-v]

Proves the chain the real mdev test needs, on a fresh Debian 12 machine:
  host: install packages, fetch + unpack Debian's generic kernel (cached),
        build tests/vm/smoke-module against its headers, build the L1 and
        L2 initramfs images (cached)
  L1 (TCG, -cpu max, 4G, 2 vCPUs, host root over 9p): load vfio,
        vfio_iommu_type1, mdev, kvm_amd nested=1; load/unload the module;
        boot L2 with 'qemu-system-x86_64 -accel kvm -cpu host'
  L2: print VGPU-L2-HELLO and power off
Prints timings and a final PASS/FAIL line; exits 0 only on PASS.

Options:
  --timeout SEC  hard limit for the L1 VM (default 900)
  -v, --verbose  stream the L1 serial console to stderr
  -h, --help     this text

Environment: VGPU_CACHE (default /var/cache/vgpu-dev).
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
	echo "FAIL: vm smoke: $*"
	echo "smoke: 0 passed, 1 failed"
	exit 1
}

vm_ensure_host_pkgs
vm_kernel_env
run=$(vm_new_run_dir smoke)
vm_log "kernel $KVER ($KPKGVER), run dir $run"

mod=$run/smoke-module
cp -r "$VM_DIR/smoke-module" "$mod"
make -C "$KDIR" M="$mod" modules >"$run/module-build.log" 2>&1 ||
	{ cat "$run/module-build.log"; fail "module build against $KDIR (log $run/module-build.log)"; }
l1_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l1) || fail "L1 initramfs"
l2_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2) || fail "L2 initramfs"
prep=$(vm_elapsed "$t0")
vm_log "host preparation took ${prep}s"

set +e
"$VM_LIB_DIR/boot-l1.sh" "${verbose[@]}" --out "$run" --timeout "$timeout" --initrd "$l1_initrd" \
	"$VM_DIR/l1/smoke.sh" "$mod/vgpu_smoke.ko" "$l2_initrd"
rc=$?
set -e
total=$(vm_elapsed "$t0")

l1_boot=$(sed -n 's/^l1_boot=//p' "$run/timings" 2>/dev/null || true)
l1_job=$(sed -n 's/^job=//p' "$run/timings" 2>/dev/null || true)
l2=$(sed -n 's/^VGPU-SMOKE-L2-SECONDS=//p' "$run/job.log" 2>/dev/null | tail -n 1 || true)
echo "--- vm smoke ($KVER $KPKGVER), run dir $run"
grep -a '^VGPU-SMOKE\|^VGPU-L2-HELLO' "$run/job.log" 2>/dev/null | sed 's/^/    /' || true
printf 'timings: prep %ss, L1 boot %ss, L1 job %ss (L2 boot-to-poweroff %ss), total %ss\n' \
	"$prep" "${l1_boot:-NA}" "${l1_job:-NA}" "${l2:-NA}" "$total"

problems=()
((rc == 0)) || problems+=("L1 job exit status $rc")
grep -qa '^VGPU-L1-READY' "$run/serial.log" 2>/dev/null || problems+=("L1 never reached stage 2")
grep -qa '^VGPU-SMOKE-MODULE-OK' "$run/job.log" 2>/dev/null || problems+=("module check")
grep -qa '^VGPU-L2-HELLO' "$run/job.log" 2>/dev/null || problems+=("no L2 marker")
grep -qa '^VGPU-SMOKE-L1-DONE' "$run/job.log" 2>/dev/null || problems+=("L1 job incomplete")
if ((${#problems[@]})); then
	grep -a 'VGPU-SMOKE-FAILED\|VGPU-L1-INIT-FAILED' "$run/serial.log" 2>/dev/null || true
	fail "$(IFS=,; echo "${problems[*]}") (logs: $run/serial.log, $run/job.log)"
fi
echo "PASS: vm smoke: L1 (TCG) booted, vfio/mdev/kvm_amd nested loaded, module built+loaded, L2 (KVM) booted in ${total}s"
echo "smoke: 1 passed, 0 failed"
