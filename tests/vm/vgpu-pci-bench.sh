#!/bin/bash
# tests/vm/vgpu-pci-bench.sh - issue 14's benchmark: guest submission
# throughput through QEMU's vgpu-pci against the mdev path, and what one
# window swap costs a vgpu-pci guest. Run as root.
set -euo pipefail

VM_PROG=vgpu-pci-bench
# All of it in one block: an edit to this file while it runs changes nothing.
{
# shellcheck source=lib/common.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/common.sh"
ROOT=$(cd "$VM_DIR/../.." && pwd)

usage() {
	cat <<EOF
Usage: $0 [--quick] [--json FILE] [--rounds N] [--segments N] [--segment-ms MS]
          [--work nop|stream] [--swap-cycles N] [--mdev-qemu stock|patched]
          [--timeout SEC] [--head] [-v]

Benchmark of QEMU's vgpu-pci device (qemu-patches/, issue 14), figures, not
pass/fail. Both device paths need KVM guests and the mdev path a kernel with
VFIO, which the host lacks, so it runs nested (tests/vm/README.md), both
paths in one L1:
  host: fetch the kernel (cached), build vgpu_mdev.ko and vgpu.ko against it,
        vgpud, vgpuctl, vgpu-tenant and vgpu-submit-rate with meson, an L2
        initramfs (l2/submit-rate-guest.sh); the patched QEMU is \$VGPU_QEMU,
        else the last line of qemu-patches/build.sh
  L1:   (l1/vgpu-pci-bench.sh) one vgpud (simgpu, 256 MiB VRAM, 4 MiB chunks)
        with its mdev transport and its local socket; two L2 guests with
        -accel kvm running vgpu-submit-rate: one through an mdev (stock
        qemu-system-x86_64, -device vfio-pci,sysfsdev=), one through
        -device vgpu-pci (the patched QEMU, reached over L1's 9p root)
  1. submission rate: rounds of segments A B B A ... (A alternating between
     the paths from round to round), one guest submitting at a time, started
     and read by L1 over each guest's second serial port; per round
     ratio = vgpu-pci rate / mdev rate, each rate the median of that
     path's segment rates in the round; the median ratio with min..max
     (goal >= 0.99: neither path traps on a submission)
  2. window swaps: the vgpu-pci guest allocates 192 MiB and submits while
     vgpu-tenant (on vgpud's local socket) allocates 128 MiB again and
     again: vgpud evicts the guest's memory and brings it back, each time
     swapping its channel window to shadow pages and back; the device's
     x-window-* properties (QMP qom-get) give how long windows stayed
     blocked and how long guest accesses waited (goal: a guest waits no
     longer than the swap itself); the guest's held memory is checked
The checks are only that the benchmark measured what it says (guests up,
segments answered, swaps happened, the guest's data intact); the goals are
reported as met or MISSED, not judged.
Prints the figures (and one line per round), writes them as one JSON object
to --json (default build/bench/vgpu-pci-bench.json, which './vgpu-dev bench
--vm' merges into build/bench/bench.json) and the vgpu-pci guest's QEMU trace
of the swaps (vgpu_pci_window_*) beside it (.trace), and ends with
'vgpu-pci-bench: N passed, N failed'. Exit status 0 when every check passed
(the figures are not judged), 1 otherwise, 2 for bad usage, 77 when it
cannot run here (not root, no patched QEMU).

All L1 and L2 work runs under TCG at L1 (one L1 vCPU): the absolute rates
are those of an emulated machine; the ratio is what the benchmark is for.

Options:
  --quick          a short run: 5 rounds of 2+2 segments of 200 ms, 2 tenant
                   cycles (default: 21 rounds of 4+4 segments of 250 ms, 4
                   cycles); either way one warm-up round first, not counted
  --json FILE      where the figures go (default build/bench/vgpu-pci-bench.json
                   in the clone)
  --rounds N       rounds (default 21, --quick 5)
  --segments N     segments per path and round, even (default 4, --quick 2)
  --segment-ms MS  one segment's submitting time (default 250, --quick 200)
  --work W         nop (empty submissions, default) or stream (64 KiB STREAM)
  --swap-cycles N  vgpu-tenant runs while the vgpu-pci guest submits
                   (default 4, --quick 2)
  --mdev-qemu Q    the QEMU of the mdev guest: stock (Debian's
                   qemu-system-x86_64, default) or patched (the same binary
                   as the vgpu-pci guest's, so that only the device path
                   differs)
  --timeout SEC    hard limit for the L1 VM (default 900)
  --head           build the last commit (git archive HEAD) instead of the
                   working tree
  -v, --verbose    stream L1's serial console to stderr
  -h, --help       this text

Environment: VGPU_QEMU (the patched qemu-system-x86_64), VGPU_CACHE (default
/var/cache/vgpu-dev), VGPU_KERNEL_ENV.
EOF
}

quick=0 json='' rounds='' segments='' seg_ms='' work=nop cycles='' timeout=900 head=0 verbose=() mdev_qemu=stock
while (($#)); do
	case $1 in
	--quick) quick=1; shift ;;
	--json) json=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--segments) segments=${2:?}; shift 2 ;;
	--segment-ms) seg_ms=${2:?}; shift 2 ;;
	--work) work=${2:?}; shift 2 ;;
	--swap-cycles) cycles=${2:?}; shift 2 ;;
	--mdev-qemu) mdev_qemu=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--head) head=1; shift ;;
	-v | --verbose) verbose=(-v); shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
if ((quick)); then
	: "${rounds:=5}" "${segments:=2}" "${seg_ms:=200}" "${cycles:=2}"
else
	: "${rounds:=21}" "${segments:=4}" "${seg_ms:=250}" "${cycles:=4}"
fi
bad_usage() { echo "$0: $*" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || bad_usage "--rounds wants a positive number, not '$rounds'"
if ! [[ $segments =~ ^[1-9][0-9]*$ ]] || ((segments % 2)); then
	bad_usage "--segments wants an even number, not '$segments'"
fi
[[ $seg_ms =~ ^[1-9][0-9]*$ ]] || bad_usage "--segment-ms wants milliseconds, not '$seg_ms'"
[[ $cycles =~ ^[1-9][0-9]*$ ]] || bad_usage "--swap-cycles wants a positive number, not '$cycles'"
[[ $work == nop || $work == stream ]] || bad_usage "--work wants nop or stream, not '$work'"
[[ $mdev_qemu == stock || $mdev_qemu == patched ]] || bad_usage "--mdev-qemu wants stock or patched, not '$mdev_qemu'"
[[ $timeout =~ ^[0-9]+$ ]] || bad_usage "--timeout wants seconds, not '$timeout'"
[[ -n $json ]] || json=$ROOT/build/bench/vgpu-pci-bench.json
json=$(realpath -m "$json")

if [[ $(id -u) != 0 ]]; then
	echo "SKIP: $0 needs root (apt-get, dpkg -x into $VGPU_CACHE, a nested VM chain)"
	exit 77
fi
case $(realpath -m "$VGPU_CACHE")/ in
/tmp/* | /run/* | /var/tmp/*)
	bad_usage "VGPU_CACHE=$VGPU_CACHE is under /tmp, /run or /var/tmp, which L1 does not share with the host"
	;;
esac

passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
t0=$(vm_now)
run=''
finish() {
	echo "vgpu-pci-bench: $passed passed, $failed failed"
	if ((failed == 0 && passed > 0)); then
		echo "PASS: vgpu-pci-bench: figures in $json; $(vm_elapsed "$t0")s"
		exit 0
	fi
	echo "FAIL: vgpu-pci-bench: $*${run:+ (run dir $run)}; $(vm_elapsed "$t0")s"
	exit 1
}

# --- host: the patched QEMU, packages, kernel, builds --------------------------------
qemu=${VGPU_QEMU:-}
if [[ -z $qemu && -x $ROOT/qemu-patches/build.sh ]]; then
	qemu=$("$ROOT/qemu-patches/build.sh" | tail -n 1) || qemu=''
fi
if [[ -z $qemu || ! -x $qemu ]]; then
	echo "SKIP: no patched QEMU (set VGPU_QEMU to a qemu-system-x86_64 built from qemu-patches/, or provide qemu-patches/build.sh)"
	exit 77
fi
case $(realpath -m "$qemu")/ in
/tmp/* | /run/* | /var/tmp/*) bad_usage "VGPU_QEMU=$qemu is under /tmp, /run or /var/tmp, which L1 does not see" ;;
esac
"$qemu" -L /usr/share/qemu -L /usr/share/seabios -device vgpu-pci,help >/dev/null 2>&1 ||
	bad_usage "$qemu has no vgpu-pci device"
vm_ensure_host_pkgs
vm_ensure_pkgs meson ninja-build pkg-config libjson-c-dev libdrm-dev jq binutils coreutils python3
vm_kernel_env
run=$(vm_new_run_dir vgpu-pci-bench)
vm_log "kernel $KVER ($KPKGVER), patched QEMU $qemu, run dir $run"
build=$VGPU_CACHE/build/bench-$(printf '%s' "$ROOT" | sha256sum | cut -c1-8)
mkdir -p "$build"
vm_lock "$build.lock" 8

tb=$(vm_now)
src=$ROOT mbuild=$build/meson
if ((head)); then
	stage=$(mktemp -d)
	git -C "$ROOT" archive HEAD | tar -x -C "$stage"
	src=$build/head-src mbuild=$build/meson-head
	vm_sync_tree "$stage" "$src" . -type f
	rm -rf "$stage"
	vm_log "sources: commit $(git -C "$ROOT" rev-parse --short HEAD) (--head)"
fi
# Kbuild builds in the source directory: the module sources are mirrored.
ksrc=$build/kmod-$KVER
((head)) && ksrc+=-head
vm_sync_tree "$src" "$ksrc" host-kmod guest-driver/kernel guest-driver/common guest-driver/include vgpu-backend/include \
	-type f \( -name '*.[ch]' -o -name Kbuild -o -name '*.include' \)
for m in host-kmod guest-driver/kernel; do
	if nice make -C "$KDIR" M="$ksrc/$m" modules >"$run/kmod-build-${m//\//-}.log" 2>&1; then
		ok "$m builds against $KVER"
	else
		tail -n 20 "$run/kmod-build-${m//\//-}.log"
		bad "$m build (log $run/kmod-build-${m//\//-}.log)"
	fi
done
targets=(vgpu-backend/daemon/vgpud vgpu-backend/ctl/vgpuctl guest-driver/tools/vgpu-tenant guest-driver/tools/vgpu-submit-rate)
if {
	if [[ ! -f $mbuild/build.ninja ]]; then
		rm -rf "$mbuild"
		nice meson setup "$mbuild" "$src" -Dtests=false -Dbuildtype=release
	fi
	nice ninja -C "$mbuild" "${targets[@]}" || {
		rm -rf "$mbuild"
		nice meson setup "$mbuild" "$src" -Dtests=false -Dbuildtype=release &&
			nice ninja -C "$mbuild" "${targets[@]}"
	}
} >"$run/meson-build.log" 2>&1; then
	ok "vgpud, vgpuctl, vgpu-tenant and vgpu-submit-rate build (meson, release, $mbuild)"
else
	tail -n 20 "$run/meson-build.log"
	bad "meson build (log $run/meson-build.log)"
fi
build_s=$(vm_elapsed "$tb")
((failed == 0)) || finish "build failed"
mkdir -p "$build/l2"
strip --strip-debug -o "$build/l2/vgpu.ko" "$ksrc/guest-driver/kernel/vgpu.ko"
strip -o "$build/l2/vgpu-submit-rate" "$mbuild/guest-driver/tools/vgpu-submit-rate"
l1_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l1) || { bad "L1 initramfs"; finish "initramfs"; }
l2_initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name l2-submit-rate --modules drm \
	--file "$build/l2/vgpu.ko:/vgpu.ko" --file "$VM_DIR/l2/submit-rate-guest.sh:/l2-job" \
	--file "$build/l2/vgpu-submit-rate:/bin/vgpu-submit-rate" --bin "$build/l2/vgpu-submit-rate") ||
	{ bad "L2 initramfs"; finish "initramfs"; }
flock -u 8
prep=$(vm_elapsed "$t0")
vm_log "prepared in ${prep}s (builds ${build_s}s); booting L1"

# --- the VM chain ---------------------------------------------------------------------
out_json=$run/vgpu-pci-bench.json
envs=(--env "B_VGPUD=$mbuild/vgpu-backend/daemon/vgpud" --env "B_VGPUCTL=$mbuild/vgpu-backend/ctl/vgpuctl"
	--env "B_TENANT=$mbuild/guest-driver/tools/vgpu-tenant" --env "B_MDEV_KO=$ksrc/host-kmod/vgpu_mdev.ko"
	--env "B_L2_INITRD=$l2_initrd" --env "B_QEMU=$qemu" --env "B_OUT_JSON=$out_json"
	--env "B_ROUNDS=$rounds" --env "B_SEGMENTS=$segments" --env "B_SEGMENT_MS=$seg_ms"
	--env "B_WORK=$work" --env "B_SWAP_CYCLES=$cycles")
[[ $mdev_qemu == patched ]] && envs+=(--env "B_MDEV_QEMU=$qemu")
set +e
"$VM_LIB_DIR/boot-l1.sh" "${verbose[@]}" --out "$run" --timeout "$timeout" --ready-timeout 120 \
	--initrd "$l1_initrd" "${envs[@]}" "$VM_DIR/l1/vgpu-pci-bench.sh"
rc=$?
set -e

log=$run/job.log
while IFS= read -r line; do
	case $line in
	'VGPU-BENCH-CHECK ok: '*) ok "${line#VGPU-BENCH-CHECK ok: }" ;;
	'VGPU-BENCH-CHECK FAIL: '*) bad "${line#VGPU-BENCH-CHECK FAIL: }" ;;
	'VGPU-BENCH-ROUND '*) echo "  round ${line#VGPU-BENCH-ROUND }" ;;
	'VGPU-BENCH: '*) echo "  L1: ${line#VGPU-BENCH: }" ;;
	esac
done < <(grep -a '^VGPU-BENCH' "$log" 2>/dev/null | tr -d '\r')
if ((rc != 0)) || ! grep -qa '^VGPU-BENCH-L1-DONE' "$log" 2>/dev/null; then
	case $rc in
	124) why="L1 hit the ${timeout}s hard timeout" ;;
	125) why="L1 died without an exit status" ;;
	126) why="L1 never reached its stage 2" ;;
	*) why="L1 job exit status $rc" ;;
	esac
	bad "$why (serial $run/serial.log, job $log, vgpud $run/vgpud.log, guests $run/l2-*.log)"
	grep -a -A20 '^--- vgpud log' "$log" 2>/dev/null | head -n 40 || true
fi
if [[ -s $out_json ]]; then
	mkdir -p "$(dirname "$json")"
	cp "$out_json" "$json"
	# the device's trace of the swaps (run dirs are pruned: the 10 newest stay)
	cp "$run/l2-pci.trace" "${json%.json}.trace" 2>/dev/null || true
	echo "--- figures ($KVER, nested; $(jq -r '"\(.vgpu_pci_submit_rounds) rounds of \(.vgpu_pci_submit_segments_per_round) x \(.vgpu_pci_submit_segment_ms) ms, \(.vgpu_pci_submit_work)"' "$json")):"
	jq -r '"  vgpu_pci_submit_ratio          \(.vgpu_pci_submit_ratio) (\(.vgpu_pci_submit_ratio_min)..\(.vgpu_pci_submit_ratio_max))  goal >= 0.99 \(if .vgpu_pci_submit_ratio >= 0.99 then "met" else "MISSED" end)",
		"  submissions/s (medians)        vgpu-pci \(.vgpu_pci_submit_rate), mdev \(.vgpu_pci_mdev_submit_rate)",
		"  window swaps                   \(.vgpu_pci_window_swaps), blocked max \(.vgpu_pci_window_blocked_ns_max) ns, mean \(.vgpu_pci_window_blocked_ns_mean) ns",
		"  of which vCPUs quiescent after max \(.vgpu_pci_window_quiescent_ns_max) ns, mean \(.vgpu_pci_window_quiescent_ns_mean) ns (WINDOW_BLOCK acknowledged)",
		"  guest accesses that waited     \(.vgpu_pci_window_waits), wait max \(.vgpu_pci_window_wait_ns_max) ns, mean \(.vgpu_pci_window_wait_ns_mean) ns",
		"  waits longer than their swap   \(.vgpu_pci_window_waits_longer_than_swap)  goal: 0 (and wait max <= blocked max) \(if .vgpu_pci_window_wait_ns_max <= .vgpu_pci_window_blocked_ns_max and .vgpu_pci_window_waits_longer_than_swap == 0 then "met" else "MISSED" end)"' "$json"
	vm_log "wrote $json"
else
	bad "no figures (L1 wrote no $out_json)"
fi
l1_boot=$(sed -n 's/^l1_boot=//p' "$run/timings" 2>/dev/null || true)
l1_job=$(sed -n 's/^job=//p' "$run/timings" 2>/dev/null || true)
printf 'timings: prep %ss (builds %ss), L1 boot %ss, L1 job %ss, total %ss; run dir %s\n' \
	"$prep" "$build_s" "${l1_boot:-NA}" "${l1_job:-NA}" "$(vm_elapsed "$t0")" "$run"
finish "$failed check(s) failed"
exit
}
