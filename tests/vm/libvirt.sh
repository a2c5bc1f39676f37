#!/bin/bash
# tests/vm/libvirt.sh - the end-to-end test through libvirt (issue 6): vGPUs
# assigned with libvirt XML, mdevs created by libvirt through mdevctl, VMs
# named by their libvirt domain in vgpud's reports. Run as root; entry point
# `tests/vm/run --libvirt`.
set -euo pipefail

VM_PROG=vm-libvirt
# All of it in one block: bash parses the block before it runs any of it, so
# an edit to this file while a test runs does not change the running test.
{
# shellcheck source=lib/common.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/common.sh"
ROOT=$(cd "$VM_DIR/../.." && pwd)

usage() {
	cat <<EOF
Usage: $0 [--head] [--size SIZE] [--timeout SEC] [-v]

End-to-end test of vGPUs managed with libvirt, in the nested L1 test host
(tests/vm/README.md):
  host: install libvirt's Debian packages (libvirt-daemon, -driver-qemu,
        libvirt-clients, mdevctl; no service is started on the host) and
        create the empty mount points /var/{lib,log,cache}/libvirt that L1
        mounts tmpfs on; build vgpu_mdev.ko, vgpu.ko, vgpud, vgpuctl and
        vgpu-run from the working tree (or the last commit: --head) under
        \$VGPU_CACHE/build/libvirt-<clone>; pack the L2 initramfs of
        tests/vm/run (vgpu.ko, vgpu-run, l2/e2e-guest.sh)
  L1:   (l1/libvirt.sh; a pci-testdev stands for the GPU) vgpu_mdev.ko with
        the GPU bound to it, vgpud, udevd and libvirtd; profiles through
        virsh/mdevctl; mdevs from 'vgpuctl xml' through virsh nodedev-define/
        -start/-autostart and nodedev-create, a third refused by the mdevctl
        call-out; two domains from libvirt-xml/vgpu-domain.xml oversubscribe
        the GPU (SIZE each); vgpuctl names them by domain with their shares;
        virsh destroy one: its memory returns to the other, which verifies
        its data; a third domain reuses the mdev while the README's
        "Assigning a vGPU with libvirt" commands run as written for a fourth;
        teardown through libvirt; mdev autostart when vgpud comes back
Prints one line per check, timings, 'vm libvirt: N passed, N failed' and
PASS or FAIL; exits 0 only when every check passed, 1 otherwise, 2 for bad
usage, 77 when it cannot run here (not root).

Options:
  --head         build the last commit (git archive HEAD) instead of the
                 working tree (tracked and untracked files), e.g. in a tree
                 others are editing
  --size SIZE    GPU memory per guest (default 200M of a 256M simgpu)
  --timeout SEC  hard limit for the L1 VM (default 900)
  -v, --verbose  stream L1's serial console to stderr
  -h, --help     this text

Environment: VGPU_CACHE (default /var/cache/vgpu-dev), VGPU_KERNEL_ENV.
EOF
}

head=0 size=200M timeout=900 verbose=()
while (($#)); do
	case $1 in
	--head) head=1; shift ;;
	--size) size=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	-v | --verbose) verbose=(-v); shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[[ $timeout =~ ^[0-9]+$ ]] || { echo "$0: --timeout wants seconds, not '$timeout'" >&2; exit 2; }
[[ $size =~ ^[0-9]+M$ ]] || { echo "$0: --size wants MiB like 200M, not '$size'" >&2; exit 2; }
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: tests/vm/libvirt.sh needs root (apt-get, a nested VM chain); run it as root"
	exit 77
fi
case $(realpath -m "$VGPU_CACHE")/ in
/tmp/* | /run/* | /var/tmp/*)
	echo "$0: VGPU_CACHE=$VGPU_CACHE is under /tmp, /run or /var/tmp, which L1 does not share with the host (fresh tmpfs there); put it elsewhere" >&2
	exit 2
	;;
esac

passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
t0=$(vm_now)
run=''
finish() { # VERDICT-TEXT
	echo "vm libvirt: $passed passed, $failed failed"
	if ((failed == 0 && passed > 0)); then
		echo "PASS: vm libvirt: vGPUs assigned through libvirt XML, mdevs through libvirt/mdevctl, VMs named by domain, memory returned after virsh destroy; $(vm_elapsed "$t0")s"
		exit 0
	fi
	echo "FAIL: vm libvirt: $*${run:+ (run dir $run)}; $(vm_elapsed "$t0")s"
	exit 1
}

# --- host: packages --------------------------------------------------------------------
vm_ensure_host_pkgs
vm_ensure_pkgs meson ninja-build pkg-config libjson-c-dev libdrm-dev jq binutils coreutils git
# libvirt for L1 (which runs the host's binaries over 9p); no service is
# started on this host.
lv_pkgs=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients mdevctl libxml2-utils)
vm_ensure_pkgs_no_services "${lv_pkgs[@]}" || { bad "Debian packages ${lv_pkgs[*]} could not be installed"; finish "packages"; }
# L1 mounts tmpfs on libvirt's state directories; the host root is read-only
# there, so the (empty) mount points must exist here. libvirt-daemon-system
# would create them; we do not install it (it wants to run services).
for d in /var/lib/libvirt /var/log/libvirt /var/cache/libvirt; do
	[[ -d $d ]] || { mkdir -p "$d" && vm_log "created the empty mount point $d for L1"; }
done

vm_kernel_env
run=$(vm_new_run_dir libvirt)
vm_log "kernel $KVER ($KPKGVER), run dir $run"
build=$VGPU_CACHE/build/libvirt-$(printf '%s' "$ROOT" | sha256sum | cut -c1-8)
mkdir -p "$build"
vm_lock "$build.lock" 8

# --- host: sources and builds ----------------------------------------------------------
# A snapshot of the last commit (or the working tree), synced file by file
# into $src (vm_sync_tree) so that only what changed rebuilds.
tb=$(vm_now)
src=$build/src
stage=$(mktemp -d)
if ((!head)); then
	(cd "$ROOT" && git ls-files -z -co --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -x -C "$stage"
	src_from="working tree of $ROOT"
else
	git -C "$ROOT" archive HEAD | tar -x -C "$stage"
	src_from="commit $(git -C "$ROOT" rev-parse --short HEAD)"
fi
vm_sync_tree "$stage" "$src" . -type f
rm -rf "$stage"
vm_log "sources: $src_from"
if nice make -C "$KDIR" M="$src/host-kmod" modules >"$run/host-kmod-build.log" 2>&1; then
	ok "vgpu_mdev.ko builds against $KVER"
else
	tail -n 20 "$run/host-kmod-build.log"
	bad "vgpu_mdev.ko build (log $run/host-kmod-build.log)"
fi
if nice make -C "$KDIR" M="$src/guest-driver/kernel" modules >"$run/guest-kmod-build.log" 2>&1; then
	ok "vgpu.ko builds against $KVER"
else
	tail -n 20 "$run/guest-kmod-build.log"
	bad "vgpu.ko build (log $run/guest-kmod-build.log)"
fi
mbuild=$build/meson
targets=(vgpu-backend/daemon/vgpud vgpu-backend/ctl/vgpuctl guest-driver/tools/vgpu-run)
if {
	{ [[ -f $mbuild/build.ninja ]] ||
		nice meson setup "$mbuild" "$src" -Dtests=false -Dbuildtype=debugoptimized; } &&
		nice ninja -C "$mbuild" "${targets[@]}"
} >"$run/meson-build.log" 2>&1; then
	ok "vgpud, vgpuctl and vgpu-run build (meson, $mbuild)"
else
	tail -n 20 "$run/meson-build.log"
	bad "meson build (log $run/meson-build.log)"
fi
if grep -q 'VGPUD_HAVE_LIBVIRT' "$mbuild/build.ninja" 2>/dev/null; then
	ok "vgpud is built with libvirt's headers (names VMs by libvirt domain)"
else
	bad "vgpud was built without libvirt's headers (install libvirt-dev, then rm -rf $mbuild)"
fi
build_s=$(vm_elapsed "$tb")
((failed == 0)) || finish "build failed"

mkdir -p "$build/l2"
strip --strip-debug -o "$build/l2/vgpu.ko" "$src/guest-driver/kernel/vgpu.ko"
strip -o "$build/l2/vgpu-run" "$mbuild/guest-driver/tools/vgpu-run"
l1_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l1) || { bad "L1 initramfs"; finish "initramfs"; }
l2_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name l2-libvirt --modules drm \
	--file "$build/l2/vgpu.ko:/vgpu.ko" --file "$src/tests/vm/l2/e2e-guest.sh:/l2-job" \
	--file "$build/l2/vgpu-run:/bin/vgpu-run" --bin "$build/l2/vgpu-run") ||
	{ bad "L2 initramfs"; finish "initramfs"; }
# The build lock stays held until the end: L1 runs these very files.
caps=$VGPU_CACHE/libvirt-qemu-caps
mkdir -p "$caps"
prep=$(vm_elapsed "$t0")
vm_log "prepared in ${prep}s (builds ${build_s}s); booting L1"

# --- the VM chain ------------------------------------------------------------------------
# 0000:00:10.0 in L1: a pci-testdev standing for the GPU (host-kmod/README.md)
envs=(--env "LV_VGPUD=$mbuild/vgpu-backend/daemon/vgpud" --env "LV_VGPUCTL=$mbuild/vgpu-backend/ctl/vgpuctl"
	--env "LV_MDEV_KO=$src/host-kmod/vgpu_mdev.ko" --env "LV_L2_INITRD=$l2_initrd"
	--env "LV_XML_DIR=$src/libvirt-xml" --env "LV_README=$src/README.md" --env "LV_GPU=0000:00:10.0" --env "LV_VRAM=256M"
	--env "LV_SIZE=$size" --env "LV_BUFFER=24M" --env "LV_DURATION=4s" --env "LV_PROFILE=vgpu-256M"
	--env "LV_L2_MEM=256M" --env "LV_L2_BOOT_TIMEOUT=150" --env "LV_HOLD_TIMEOUT=240"
	--env "LV_CAPS_CACHE=$caps")
l1_attempt=1
while :; do
	set +e
	"$VM_LIB_DIR/boot-l1.sh" "${verbose[@]}" --out "$run" --timeout "$timeout" --ready-timeout 120 \
		--initrd "$l1_initrd" --qemu-arg -device --qemu-arg pci-testdev,addr=0x10 "${envs[@]}" \
		"$src/tests/vm/l1/libvirt.sh"
	rc=$?
	set -e
	if ((rc == 126 && l1_attempt == 1)); then
		echo "RETRY: L1 did not reach its stage 2 within 120s (an infrastructure hang before any project code ran; serial log kept as $run/serial.attempt1.log); booting it once more"
		mv "$run/serial.log" "$run/serial.attempt1.log"
		l1_attempt=2
		continue
	fi
	break
done
# libvirt's QEMU capabilities, probed in L1: the next run skips the probe
cp "$run"/caps/*.xml "$caps/" 2>/dev/null || true

log=$run/job.log
while IFS= read -r line; do
	case $line in
	'VGPU-LV-CHECK ok: '*) ok "${line#VGPU-LV-CHECK ok: }" ;;
	'VGPU-LV-CHECK FAIL: '*) bad "${line#VGPU-LV-CHECK FAIL: }" ;;
	esac
done < <(grep -a '^VGPU-LV-CHECK ' "$log" 2>/dev/null | tr -d '\r')
grep -a '^VGPU-LV: ' "$log" 2>/dev/null | tr -d '\r' | sed 's/^VGPU-LV: /  L1: /' || true
if ((rc != 0)) || ! grep -qa '^VGPU-LV-L1-DONE' "$log" 2>/dev/null; then
	case $rc in
	124) why="L1 hit the ${timeout}s hard timeout" ;;
	125) why="L1 died without an exit status" ;;
	126) why="L1 never reached its stage 2 (twice)" ;;
	*) why="L1 job exit status $rc" ;;
	esac
	bad "$why (serial $run/serial.log, job $log, vgpud $run/vgpud.log, libvirtd $run/libvirtd.log, guests $run/l2-guest-*.log)"
	grep -a -A40 '^--- vgpud log' "$log" 2>/dev/null | head -n 60 || true
fi

l1_boot=$(sed -n 's/^l1_boot=//p' "$run/timings" 2>/dev/null || true)
l1_job=$(sed -n 's/^job=//p' "$run/timings" 2>/dev/null || true)
steps=$(grep -a '^VGPU-LV-STEP ' "$log" 2>/dev/null | tr -d '\r' | awk '{ printf "%s%s@%ss", sep, $2, $3; sep = " " }')
echo "--- vm libvirt ($KVER $KPKGVER, 2 guests x $size on 256M of VRAM), run dir $run"
printf 'timings: prep %ss (builds %ss), L1 boot %ss, L1 job %ss (steps: %s), total %ss%s\n' \
	"$prep" "$build_s" "${l1_boot:-NA}" "${l1_job:-NA}" "${steps:-NA}" "$(vm_elapsed "$t0")" \
	"$( ((l1_attempt > 1)) && echo ' (L1 booted twice)')"
finish "$failed check(s) failed"
exit
}
