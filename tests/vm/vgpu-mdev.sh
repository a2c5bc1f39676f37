#!/bin/bash
# tests/vm/vgpu-mdev.sh - vgpu_mdev.ko in a real (nested) host: VFIO client and an L2 guest.
set -euo pipefail

VM_PROG=vgpu-mdev
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
	cat <<EOF
Usage: $0 [--no-l2] [--timeout SEC] [-v]

Kernel-side test of host-kmod/vgpu_mdev.ko, with tests/vm/mdev/fake-vgpud
standing in for vgpud on /dev/vgpu_mdev.
  host: fetch kernel (cached), build vgpu_mdev.ko, the test programs and the
        L2 interrupt test driver against it (in \$VGPU_CACHE/build/vgpu-mdev),
        an L2 initramfs whose /l2-job is l2/vgpu-mdev-check.sh
  L1:   l1/vgpu-mdev.sh: load vfio, vfio_iommu_type1, mdev, vgpu_mdev; start
        fake-vgpud; mdev types and refusal; tests/vm/mdev/mdev-client on an
        mdev (config space, BARs, mmap, MSI-X/MSI/INTx, DMA and pins, shadow
        swap under concurrent writes, reset, bad inputs); then an L2 guest
        with -accel kvm -device vfio-pci,sysfsdev=/sys/bus/mdev/devices/UUID
  L2:   mdev-client --guest: IDs, registers, BAR2 pattern through resource2, doorbell round trip,
        interrupts in all three modes, DMA into guest memory, the swap under
        guest writes, fake-vgpud dying with a window blocked; then L1 removes
        the mdev while L2 runs (hot-unplug); then the real vgpud (simgpu,
        built from the last commit with meson into \$VGPU_CACHE/build) serves
        an mdev through its mdev transport and mdev-client --vgpud speaks the
        real mailbox protocol; finally lifetime checks, unload, dmesg grep
Prints one line per check, timings, "vgpu-mdev: N passed, N failed" and a
PASS/FAIL line; exits 0 only on PASS.

Options:
  --no-l2        skip the L2 guest (module + VFIO client only, ~1 min less)
  --timeout SEC  hard limit for the L1 VM (default 900)
  -v, --verbose  stream the L1 serial console to stderr
  -h, --help     this text
EOF
}

timeout=900 verbose=() l2=1
while (($#)); do
	case $1 in
	--no-l2) l2=0; shift ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	-v | --verbose) verbose=(-v); shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

root=$(cd "$VM_DIR/../.." && pwd)
t0=$(vm_now)
fail() {
	echo "FAIL: vm vgpu-mdev: $*"
	echo "vgpu-mdev: 0 passed, 1 failed"
	exit 1
}

vm_ensure_host_pkgs
vm_kernel_env
run=$(vm_new_run_dir vgpu-mdev)
vm_log "kernel $KVER ($KPKGVER), run dir $run"

# Builds live in a fixed place per clone so that unchanged sources give
# byte-identical files and the L2 initramfs comes from the cache (one place
# for every clone would let make keep another clone's newer objects).
build=$VGPU_CACHE/build/vgpu-mdev-$KVER-$(printf '%s' "$root" | sha256sum | cut -c1-8)
mkdir -p "$build"
vm_lock "$VGPU_CACHE/build/vgpu-mdev.lock" 9
vm_sync_tree "$root/host-kmod" "$build/host-kmod" . -maxdepth 1 -type f \( -name '*.[ch]' -o -name Kbuild \)
nice make -C "$KDIR" M="$build/host-kmod" VGPU_INCLUDE="$root/vgpu-backend/include" modules \
	>"$run/module-build.log" 2>&1 || { cat "$run/module-build.log"; fail "vgpu_mdev.ko build against $KDIR"; }
# vgpud's libraries for vgpud-mdev, from the last commit (other people's
# uncommitted work in a shared tree stays out), synced file by file
# (vm_sync_tree) so that ninja rebuilds only what changed
vgpud_src=$VGPU_CACHE/build/vgpu-mdev-src vgpud_build=$VGPU_CACHE/build/vgpu-mdev-meson
vgpud_args=()
if command -v meson >/dev/null && command -v ninja >/dev/null && command -v jq >/dev/null &&
	git -C "$root" rev-parse --verify -q HEAD >/dev/null 2>&1; then
	stage=$(mktemp -d)
	git -C "$root" archive HEAD | tar -x -C "$stage"
	vm_sync_tree "$stage" "$vgpud_src" . -type f
	rm -rf "$stage"
	# every static library of the backend (what meson says it builds, so a
	# new library needs no edit here), linked as one group
	if { [[ -f $vgpud_build/build.ninja ]] ||
		nice meson setup "$vgpud_build" "$vgpud_src" -Dtests=false -Dbuildtype=debugoptimized; } &&
		nice ninja -C "$vgpud_build" build.ninja && # reconfigure first if meson files changed
		mapfile -t vgpud_libs < <(meson introspect "$vgpud_build" --targets |
			jq -r '.[] | select(.type == "static library") | .filename[]' |
			grep "^$vgpud_build/vgpu-backend/") && ((${#vgpud_libs[@]})) &&
		nice ninja -C "$vgpud_build" "${vgpud_libs[@]#"$vgpud_build"/}"; then
		vgpud_args=(VGPUD_BUILD="$vgpud_build" VGPUD_SRC="$vgpud_src" VGPUD_LIBS="${vgpud_libs[*]}")
	fi >"$run/vgpud-build.log" 2>&1
else
	echo "meson/ninja, jq or git missing: no vgpud-mdev" >"$run/vgpud-build.log"
fi
rm -f "$build/bin/vgpud-mdev"
nice make -C "$root/tests/vm/mdev" OUT="$build/bin" KDIR="$KDIR" "${vgpud_args[@]}" \
	>"$run/tests-build.log" 2>&1 || { cat "$run/tests-build.log"; fail "test programs build"; }
mkdir -p "$build/l2"
strip --strip-debug -o "$build/l2/vgpu_irqtest.ko" "$build/bin/vgpu_irqtest.ko"
strip -o "$build/l2/mdev-client" "$build/bin/mdev-client"
flock -u 9

l1_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l1) || fail "L1 initramfs"
l2_initrd=none
if ((l2)); then
	l2_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name l2-vgpu-mdev \
		--file "$VM_DIR/l2/vgpu-mdev-check.sh:/l2-job" \
		--file "$build/l2/mdev-client:/mdev-client" \
		--file "$build/l2/vgpu_irqtest.ko:/vgpu_irqtest.ko") || fail "L2 initramfs"
fi
prep=$(vm_elapsed "$t0")

set +e
"$VM_LIB_DIR/boot-l1.sh" "${verbose[@]}" --out "$run" --timeout "$timeout" --initrd "$l1_initrd" \
	"$VM_DIR/l1/vgpu-mdev.sh" "$build/host-kmod/vgpu_mdev.ko" "$build/bin" "$l2_initrd"
rc=$?
set -e
total=$(vm_elapsed "$t0")

log=$run/job.log
l1_boot=$(sed -n 's/^l1_boot=//p' "$run/timings" 2>/dev/null || true)
l1_job=$(sed -n 's/^job=//p' "$run/timings" 2>/dev/null || true)
vm_total=$(sed -n 's/^total=//p' "$run/timings" 2>/dev/null || true)
vfio=$(sed -n 's/^VGPU-MDEV-VFIO-SECONDS=//p' "$log" 2>/dev/null | tail -n 1 || true)
vgpuds=$(sed -n 's/^VGPU-MDEV-VGPUD-SECONDS=//p' "$log" 2>/dev/null | tail -n 1 || true)
l2s=$(sed -n 's/^VGPU-MDEV-L2-SECONDS=//p' "$log" 2>/dev/null | tail -n 1 || true)
echo "--- vm vgpu-mdev ($KVER $KPKGVER), run dir $run"
grep -a '^VGPU-MDEV-CHECK \|^VGPU-MDEV-VFIO \(ok\|FAIL\)\|^VGPU-L2-CHECK \|^VGPU-MDEV: ' "$log" 2>/dev/null |
	sed 's/^/    /' || true
grep -a -A12 '^--- fake-vgpud log\|^--- dmesg' "$log" 2>/dev/null | grep -a FAIL | head -n 5 || true
passed=$(grep -ac '^VGPU-MDEV-CHECK ok:\|^VGPU-MDEV-VFIO ok:\|^VGPU-L2-CHECK ok:' "$log" 2>/dev/null || true)
failed=$(grep -ac '^VGPU-MDEV-CHECK FAIL:\|^VGPU-MDEV-VFIO FAIL:\|^VGPU-L2-CHECK FAIL:' "$log" 2>/dev/null || true)
printf 'timings: prep %ss, L1 boot %ss, L1 job %ss (VFIO client %ss, L2 %ss, real vgpud %ss), VM %ss, total %ss (incl. waiting for vm.lock)\n' \
	"$prep" "${l1_boot:-NA}" "${l1_job:-NA}" "${vfio:-NA}" "${l2s:-NA}" "${vgpuds:-NA}" "${vm_total:-NA}" "$total"

problems=()
((rc == 0)) || problems+=("L1 job exit status $rc")
((${failed:-0} == 0)) || problems+=("$failed check(s) failed")
((${passed:-0} > 0)) || problems+=("no check ran")
grep -qa '^VGPU-MDEV-L1-DONE' "$log" 2>/dev/null || problems+=("L1 job incomplete")
if ((l2)); then
	grep -qa '^VGPU-L2-UNPLUGGED' "$log" 2>/dev/null || problems+=("L2 part incomplete")
fi
echo "vgpu-mdev: ${passed:-0} passed, $((${failed:-0} + (${#problems[@]} && !${failed:-0} ? 1 : 0))) failed"
if ((${#problems[@]})); then
	echo "FAIL: vm vgpu-mdev: $(IFS=,; echo "${problems[*]}") (logs: $run/job.log, $run/serial.log, $run/fake-vgpud.log, $run/l2.log); ${total}s"
	exit 1
fi
echo "PASS: vm vgpu-mdev: vgpu_mdev.ko driven by fake-vgpud, used through VFIO$( ((l2)) && echo ' and by an L2 KVM guest'), removed and unloaded cleanly; ${total}s"
