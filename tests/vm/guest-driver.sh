#!/bin/bash
# tests/vm/guest-driver.sh - build and check the guest DRM driver vgpu.ko
# (guest-driver/kernel) against Debian's kernel, and run it in an L2 guest.
set -euo pipefail

VM_PROG=guest-driver
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
ROOT=$(cd "$VM_DIR/../.." && pwd)

usage() {
	cat <<EOF
Usage: $0 [--timeout SEC] [--no-vm] [-v]

Checks vgpu.ko, the guest DRM render-node driver:
  host: build it against the fetched Debian headers with W=1 (no warning
        allowed) and sparse (C=1, when installed), check its modinfo
        (vermagic, PCI alias, license, depends on drm)
  L1 (TCG): boot an L2 guest (KVM) with the module and drm.ko in its
        initramfs, plus an ivshmem-plain PCI device (1af4:1110) to force
        onto the driver as a foreign device
  L2: tests/vm/l2/guest-driver-check.sh: load, no-device behaviour,
        refusal of the foreign device, unload, load/unload cycles in every
        interrupt mode, clean kernel log (and, once a vGPU can be passed in,
        probe/HELLO/render node/unbind)
Prints one line per check, timings, and 'guest-driver: N passed, N failed';
exits 0 only when every check passed.

Options:
  --timeout SEC  hard limit for the L1 VM (default 900)
  --no-vm        host checks only (build, warnings, sparse, modinfo)
  -v, --verbose  stream the L1 serial console to stderr
  -h, --help     this text

Environment: VGPU_CACHE (default /var/cache/vgpu-dev), VGPU_KERNEL_ENV.
EOF
}

# ---------------------------------------------------------------------------
# L1 half: run by boot-l1.sh inside L1 as
#   guest-driver.sh --l1-half L2_INITRD
if [[ ${1:-} == --l1-half ]]; then
	l2_initrd=${2:?}
	: "${VMLINUZ:?not run by boot-l1.sh}"
	say() { echo "VGPU-GD-L1: $*"; }
	modprobe kvm_amd nested=1 || { echo "VGPU-GD-L1-FAILED: modprobe kvm_amd"; exit 1; }
	say "booting L2 (-accel kvm) with vgpu.ko, drm.ko and an ivshmem-plain device"
	t0=$(date +%s.%N)
	set +e
	timeout -k 5 300 qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot \
		-accel kvm -cpu host -machine pc -m 256M -smp 1 \
		-kernel "$VMLINUZ" -initrd "$l2_initrd" \
		-append "console=ttyS0 panic=-1 quiet" \
		-object memory-backend-ram,id=shm,size=4M,share=on \
		-device ivshmem-plain,memdev=shm \
		-serial stdio </dev/null 2>&1 | tee l2.log
	rc=${PIPESTATUS[0]}
	set -e
	echo "VGPU-GD-L2-SECONDS=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"
	grep -q '^VGPU-L2-HELLO' l2.log || { echo "VGPU-GD-L1-FAILED: L2 did not boot (qemu rc $rc)"; exit 1; }
	echo "VGPU-GD-L1-DONE qemu_rc=$rc"
	exit 0
fi

# ---------------------------------------------------------------------------
# Host half
timeout=900 verbose=() vm=1
while (($#)); do
	case $1 in
	--timeout) timeout=${2:?}; shift 2 ;;
	--no-vm) vm=0; shift ;;
	-v | --verbose) verbose=(-v); shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

passed=0 failed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
finish() {
	echo "guest-driver: $passed passed, $failed failed"
	((failed == 0))
	exit
}

t0=$(vm_now)
vm_ensure_host_pkgs
vm_kernel_env
run=$(vm_new_run_dir guest-driver)
vm_log "kernel $KVER ($KPKGVER), run dir $run"

# 1. Build from a copy of the sources (same relative layout), so that the
#    build sees exactly the committed tree shape and every file is compiled.
src=$run/src
mkdir -p "$src/guest-driver" "$src/vgpu-backend/include/vgpu"
cp -r "$ROOT/guest-driver/kernel" "$ROOT/guest-driver/common" "$ROOT/guest-driver/include" \
	"$src/guest-driver/"
cp "$ROOT/vgpu-backend/include/vgpu/device_abi.h" "$src/vgpu-backend/include/vgpu/"
find "$src" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' -o -name '.*.cmd' -o -name '*.d' \
	-o -name Module.symvers -o -name modules.order \) -delete
kmod_dir=$src/guest-driver/kernel
ko=$kmod_dir/vgpu.ko
sparse_flag=()
command -v sparse >/dev/null && sparse_flag=(C=1)
tb=$(vm_now)
if nice make -C "$KDIR" M="$kmod_dir" W=1 "${sparse_flag[@]}" modules >"$run/build.log" 2>&1; then
	build_s=$(vm_elapsed "$tb")
	pass "vgpu.ko builds against $KVER headers with W=1${sparse_flag:+ and sparse} (${build_s}s)"
else
	build_s=$(vm_elapsed "$tb")
	tail -n 30 "$run/build.log"
	fail "vgpu.ko build (log $run/build.log)"
	finish
fi
# Warnings from gcc (W=1) and sparse; the BTF note is not one.
warnings=$(grep -E 'warning:|error:|: sparse: ' "$run/build.log" | grep -vc 'Skipping BTF' || true)
if ((warnings == 0)); then
	pass "no compiler or sparse warnings"
else
	grep -E 'warning:|error:|: sparse: ' "$run/build.log" | head -n 20
	fail "$warnings warnings (log $run/build.log)"
fi
if ((${#sparse_flag[@]} == 0)); then
	echo "note: sparse not installed, skipped (apt-get install sparse)"
fi

# 2. modinfo
modinfo_f() { /sbin/modinfo -F "$1" "$ko" | tr '\n' ' ' | sed 's/ $//'; }
verdict() { # WHAT CONDITION...: PASS when the [[ ]] test CONDITION holds
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
vermagic=$(modinfo_f vermagic)
verdict "vermagic '$vermagic' (want $KVER)" test "${vermagic%% *}" = "$KVER"
alias=$(modinfo_f alias)
verdict "PCI alias '$alias'" test "${alias#pci:v00001AF4d000010F0}" != "$alias"
license=$(modinfo_f license)
verdict "license '$license'" test "$license" = "Dual MIT/GPL"
depends=$(modinfo_f depends)
verdict "depends on '$depends' (want drm only)" test "$depends" = drm
parms=$(/sbin/modinfo -F parm "$ko" | cut -d: -f1 | sort | tr '\n' ' ')
verdict "module parameters: $parms" test "$parms" = "attach_timeout_ms irq_mode mailbox_timeout_ms "
cp "$ko" "$run/vgpu.ko"

if ((!vm)); then
	echo "timings: build ${build_s}s, total $(vm_elapsed "$t0")s"
	finish
fi

# 3. L2 initramfs and the VM chain
tp=$(vm_now)
l1_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l1) || { fail "L1 initramfs"; finish; }
l2_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name guest-driver --modules drm \
	--file "$ko:/vgpu.ko" --file "$VM_DIR/l2/guest-driver-check.sh:/l2-job") ||
	{ fail "L2 initramfs"; finish; }
prep=$(vm_elapsed "$tp")

set +e
"$VM_LIB_DIR/boot-l1.sh" "${verbose[@]}" --out "$run" --timeout "$timeout" --initrd "$l1_initrd" \
	"$VM_DIR/guest-driver.sh" --l1-half "$l2_initrd"
rc=$?
set -e

log=$run/job.log
if ((rc != 0)) || ! grep -qa '^VGPU-GD-L1-DONE' "$log" 2>/dev/null; then
	grep -a 'VGPU-GD-L1-FAILED\|VGPU-L1-INIT-FAILED' "$run/serial.log" "$log" 2>/dev/null || true
	fail "VM chain (boot-l1 exit $rc; logs $run/serial.log, $log)"
fi
while read -r _ verdict what; do
	case $verdict in
	PASS) pass "L2: $what" ;;
	FAIL) fail "L2: $what" ;;
	SKIP) echo "SKIP: L2: $what" ;;
	esac
done < <(grep -a '^VGPU-GD-CHECK ' "$log" 2>/dev/null | tr -d '\r')
grep -a '^VGPU-GD: note' "$log" 2>/dev/null | tr -d '\r' | sed 's/^VGPU-GD: /L2 /' || true
summary=$(grep -a '^VGPU-GD-SUMMARY ' "$log" 2>/dev/null | tr -d '\r' | tail -n 1)
[[ -n $summary ]] || fail "L2 check did not finish (no VGPU-GD-SUMMARY; log $log)"
grep -qa '^VGPU-L2-STATUS=0' "$log" 2>/dev/null || fail "L2 job exit status: $(grep -a '^VGPU-L2-STATUS=' "$log" | tr -d '\r')"

l1_boot=$(sed -n 's/^l1_boot=//p' "$run/timings" 2>/dev/null || true)
l1_job=$(sed -n 's/^job=//p' "$run/timings" 2>/dev/null || true)
l2_s=$(sed -n 's/^VGPU-GD-L2-SECONDS=//p' "$log" 2>/dev/null | tr -d '\r' | tail -n 1)
checks_s=$(sed -n 's/^VGPU-GD-SECONDS=//p' "$log" 2>/dev/null | tr -d '\r' | tail -n 1)
echo "--- guest-driver ($KVER $KPKGVER), run dir $run"
printf 'timings: build %ss, initramfs %ss, L1 boot %ss, L1 job %ss (L2 boot-to-poweroff %ss, checks in L2 %ss), total %ss\n' \
	"$build_s" "$prep" "${l1_boot:-NA}" "${l1_job:-NA}" "${l2_s:-NA}" "${checks_s:-NA}" "$(vm_elapsed "$t0")"
finish
