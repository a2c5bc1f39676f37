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
        (vermagic, PCI alias, license, depends on drm); build vgpu_mdev.ko
        (host-kmod), fake-vgpud (tests/vm/mdev) and vgpu-drm-check
        (tests/vm/guest-driver), vgpu-info and vgpu-run (meson);
        other people's code from the last commit, the driver's from the
        working tree
  L1 (TCG): load vfio + mdev + vgpu_mdev.ko, start fake-vgpud --mode
        mailbox (a stand-in for vgpud that answers the real mailbox protocol
        and plays a toy GPU), create an mdev, boot an L2 guest (KVM) with it
        (vfio-pci,sysfsdev=...), an ivshmem-plain device (1af4:1110) to
        force onto the driver as a foreign device, vgpu.ko and drm.ko
  L2: tests/vm/l2/guest-driver-check.sh: load; refusal of the foreign
        device; probe, HELLO, render node, vgpu-info; every ioctl with
        vgpu-drm-check; unbind while a process holds objects and a mapped
        window; rmmod refused while in use; rebind; load/unload cycles in
        every interrupt mode; clean kernel log
Without host-kmod the vGPU checks are skipped (SKIP lines).
Prints one line per check, timings, and 'guest-driver: N passed, N failed';
exits 0 only when every check passed.

Options:
  --timeout SEC  hard limit for the L1 VM (default 900)
  --no-vm        host checks only (builds, warnings, sparse, modinfo)
  -v, --verbose  stream the L1 serial console to stderr
  -h, --help     this text

Environment: VGPU_CACHE (default /var/cache/vgpu-dev), VGPU_KERNEL_ENV.
EOF
}

# ---------------------------------------------------------------------------
# L1 half: run by boot-l1.sh inside L1 as
#   guest-driver.sh --l1-half L2_INITRD
if [[ ${1:-} == --l1-half ]]; then
	l2_initrd=${2:?} mdev_ko=${3:--} backend=${4:--}
	: "${VMLINUZ:?not run by boot-l1.sh}"
	say() { echo "VGPU-GD-L1: $*"; }
	die() {
		echo "VGPU-GD-L1-FAILED: $*"
		dmesg | tail -n 20
		[[ -n ${backend_pid:-} ]] && kill "$backend_pid" 2>/dev/null
		exit 1
	}
	modprobe kvm_amd nested=1 || die "modprobe kvm_amd"
	vgpu_args=() mdev_dev='' backend_pid=''
	if [[ $mdev_ko != - && $backend != - ]]; then
		for m in vfio vfio_iommu_type1 vfio_virqfd mdev; do
			modprobe "$m" || die "modprobe $m"
		done
		insmod "$mdev_ko" || die "insmod $mdev_ko"
		rm -f fake-vgpud.ready
		"$backend" --mode mailbox --ready-file fake-vgpud.ready >fake-vgpud.log 2>&1 &
		backend_pid=$!
		for _ in $(seq 100); do
			[[ -e fake-vgpud.ready ]] && break
			sleep 0.1
		done
		[[ -e fake-vgpud.ready ]] || die "fake-vgpud did not start: $(cat fake-vgpud.log)"
		type=/sys/class/mdev_bus/vgpu/mdev_supported_types/vgpu-gdtest
		[[ -d $type ]] || die "no mdev type $type ($(ls /sys/class/mdev_bus/vgpu/mdev_supported_types 2>&1))"
		uuid=$(cat /proc/sys/kernel/random/uuid)
		echo "$uuid" >"$type/create" || die "create mdev"
		mdev_dev=/sys/bus/mdev/devices/$uuid
		vgpu_args=(-device "vfio-pci,sysfsdev=$mdev_dev")
		say "vgpu_mdev.ko loaded, fake-vgpud serving, mdev $uuid created"
	else
		say "no vgpu_mdev.ko/fake-vgpud: L2 gets no vGPU"
	fi
	say "booting L2 (-accel kvm) with vgpu.ko, drm.ko, an ivshmem-plain device${mdev_dev:+ and the vGPU}"
	t0=$(date +%s.%N)
	set +e
	timeout -k 5 300 qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot \
		-accel kvm -cpu host -machine pc -m 256M -smp 1 \
		-kernel "$VMLINUZ" -initrd "$l2_initrd" \
		-append "console=ttyS0 panic=-1 loglevel=4" \
		-object memory-backend-ram,id=shm,size=4M,share=on \
		-device ivshmem-plain,memdev=shm "${vgpu_args[@]}" \
		-serial stdio </dev/null 2>&1 | tee l2.log
	rc=${PIPESTATUS[0]}
	set -e
	echo "VGPU-GD-L2-SECONDS=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"
	if [[ -n $mdev_dev ]]; then
		echo 1 >"$mdev_dev/remove" || say "removing the mdev failed"
		kill "$backend_pid" 2>/dev/null || true # gone already after the death check
		wait "$backend_pid" 2>/dev/null || true
		rmmod vgpu_mdev || say "rmmod vgpu_mdev failed"
		grep -E 'requests answered|toy GPU kills|LIMIT|NO_MEMORY|exiting' fake-vgpud.log | head -n 20 |
			sed 's/^/VGPU-GD-L1: /'
	fi
	grep -q '^VGPU-L2-HELLO' l2.log || die "L2 did not boot (qemu rc $rc)"
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

# 1. Build from a copy of the sources. Other people's code (host-kmod,
#    guest-driver/common, the ABI headers, the runtime) comes from the last
#    commit when this is a git checkout, so that their uncommitted work in a
#    shared tree does not leak into this test; the driver, its uAPI, its
#    tests and the libdrm backend/tools come from the working tree.
src=$run/src
mkdir -p "$src"
if git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
	git -C "$ROOT" archive HEAD | tar -x -C "$src"
	src_from="commit $(git -C "$ROOT" rev-parse --short HEAD) + working tree of the driver"
else
	cp -a "$ROOT/." "$src/"
	src_from="working tree"
fi
for f in guest-driver/kernel tests/vm/guest-driver guest-driver/include guest-driver/runtime/backend_drm.c \
	guest-driver/runtime/vgpu_guest_drm.h guest-driver/tools/vgpu-info.c guest-driver/tools/vgpu-run.c; do
	[[ -e $ROOT/$f ]] || continue
	rm -rf "${src:?}/$f"
	mkdir -p "$(dirname "$src/$f")"
	cp -a "$ROOT/$f" "$src/$f"
done
find "$src/guest-driver" "$src/host-kmod" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' \
	-o -name '.*.cmd' -o -name '*.d' -o -name Module.symvers -o -name modules.order \) -delete \
	2>/dev/null || true
vm_log "sources: $src_from"
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

# 3. The device side for L2: vgpu_mdev.ko (host-kmod) and fake-vgpud, a
#    stand-in for vgpud that answers the mailbox (tests/vm/mdev, built by
#    its Makefile), plus the uAPI check program (tests/vm/guest-driver)
#    and vgpu-info for the guest.
vm_ensure_pkgs libdrm-dev libc6-dev meson ninja-build pkg-config libjson-c-dev
tests_dir=$src/tests/vm/guest-driver
mdev_ko=- backend=- extra_files=()
if [[ -f $src/host-kmod/Kbuild ]]; then
	if nice make -C "$KDIR" M="$src/host-kmod" modules >"$run/host-kmod-build.log" 2>&1; then
		mdev_ko=$src/host-kmod/vgpu_mdev.ko
		pass "host-kmod: vgpu_mdev.ko builds (the vGPU for L2)"
	else
		fail "host-kmod build (log $run/host-kmod-build.log)"
	fi
else
	echo "SKIP: no host-kmod/Kbuild: L2 gets no vGPU"
fi
cflags=(-std=gnu11 -O2 -Wall -Wextra -Werror -static -I"$src/vgpu-backend/include"
	-I"$src/guest-driver/include/uapi" -I"$src/tests/vm/mdev" -I/usr/include/libdrm)
if [[ $mdev_ko != - ]]; then
	if nice make -C "$src/tests/vm/mdev" OUT="$run" "$run/fake-vgpud" >"$run/tests-build.log" 2>&1; then
		backend=$run/fake-vgpud
	else
		cat "$run/tests-build.log"
		fail "fake-vgpud build"
	fi
fi
if gcc "${cflags[@]}" -o "$run/vgpu-drm-check" "$tests_dir/vgpu-drm-check.c" 2>>"$run/tests-build.log"; then
	extra_files+=(--file "$run/vgpu-drm-check:/vgpu-drm-check")
else
	cat "$run/tests-build.log"
	fail "vgpu-drm-check build"
fi
# vgpu-info and vgpu-run through the project's meson build of that tree.
mbuild=$run/meson
if meson setup "$mbuild" "$src" -Dtests=false >"$run/meson.log" 2>&1 &&
	nice ninja -C "$mbuild" guest-driver/tools/vgpu-info guest-driver/tools/vgpu-run >>"$run/meson.log" 2>&1; then
	extra_files+=(--file "$mbuild/guest-driver/tools/vgpu-info:/vgpu-info"
		--bin "$mbuild/guest-driver/tools/vgpu-info")
	pass "vgpu-info and vgpu-run build (libdrm backend)"
else
	tail -n 20 "$run/meson.log"
	fail "vgpu-info/vgpu-run build (log $run/meson.log)"
fi

if ((!vm)); then
	echo "timings: build ${build_s}s, total $(vm_elapsed "$t0")s"
	finish
fi

# 4. L2 initramfs and the VM chain
tp=$(vm_now)
l1_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l1) || { fail "L1 initramfs"; finish; }
l2_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name guest-driver --modules drm \
	--file "$ko:/vgpu.ko" --file "$VM_DIR/l2/guest-driver-check.sh:/l2-job" "${extra_files[@]}") ||
	{ fail "L2 initramfs"; finish; }
prep=$(vm_elapsed "$tp")

set +e
"$VM_LIB_DIR/boot-l1.sh" "${verbose[@]}" --out "$run" --timeout "$timeout" --initrd "$l1_initrd" \
	"$VM_DIR/guest-driver.sh" --l1-half "$l2_initrd" "$mdev_ko" "$backend"
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
grep -a '^VGPU-GD-L1: ' "$log" 2>/dev/null | tr -d '\r' | sed 's/^VGPU-GD-L1: /L1 /' || true
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
