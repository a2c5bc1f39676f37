#!/bin/bash
# tests/vgpu-pci/migrate.sh - live migration of a guest with a vgpu-pci vGPU
# between two vgpuds (issue 28): QEMU under TCG on the host, driven by QMP.
# Run as root.
set -euo pipefail

export VM_PROG=vgpu-pci-migrate
{
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../vm/lib/common.sh
source "$ROOT/tests/vm/lib/common.sh"
# shellcheck source=../vm/lib/build.sh
source "$VM_LIB_DIR/build.sh"

usage() {
	cat <<EOF2
Usage: $0 [--qemu PATH] [--head] [--switches N]

Live migration of a guest whose vGPU is QEMU's vgpu-pci device:
  vgpuds: A and B, simgpu with 32 MiB of VRAM each (two sockets, separate
        VRAM: two hosts on one machine), and C, which allows only the
        profile vgpu-2G (the guest has vgpu-1G)
  guest: 'qemu-system-x86_64 -accel tcg' on A; it runs stream over 64 MiB
        (2x the VRAM), stencil and a user program beside it: the CUDA
        driver-API program cuda-saxpy (tests/cuda, built against cuda.h
        with -lcuda, run with libcuda.so.1) run after run, its module
        loaded in the guest across the switches (migrate-job.sh)
  while they run, through QMP ('migrate' to a QEMU started with -incoming
  unix:...):
   1. a migration to B cancelled halfway (migrate_cancel, the bandwidth
      throttled): the guest runs on on A; vgpuctl: the VM on A, none on B
   2. a migration to C, whose vgpud refuses the profile: it fails, the
      guest runs on on A, C's QEMU says vgpud's reason; nothing on C
   3. N switches A -> B -> A ... (default 3): each completes, the guest
      runs on at the destination, the source QEMU quits; vgpuctl: the VM
      where it is, nothing where it left
  the guest's stream and stencil verify every buffer by checksum, the user
  program every result against the CPU.
Prints 'ok: ...' / 'FAIL: ...', the figures of each switch (QEMU's
downtime and total time, vgpud's bytes and downtime from the device's
x-migration-* properties), 'vgpu-pci migrate: N passed, N failed' and
PASS or FAIL. Exits 0, 1 (a check failed), 2 (usage), 77 (not root, or
no patched QEMU). Run dir \$VGPU_CACHE/runs/vgpu-pci-migrate-*.
EOF2
}
qemu='' head=0 switches=3
while (($#)); do
	case $1 in
	--qemu) qemu=${2:?}; shift 2 ;;
	--head) head=1; shift ;;
	--switches) switches=${2:?}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: tests/vgpu-pci/migrate.sh needs root"
	exit 77
fi
vram=32M chunk=4M size=64M buffer=8M small=8M duration=100s iterations=40
# shellcheck source=../lib/checks.sh
source "$ROOT/tests/lib/checks.sh"
t0=$(vm_now)
run=''
declare -A pid_of=()
cleanup() {
	local p
	for p in "${pid_of[@]}"; do
		# TERM: timeout(1) passes it on to its QEMU (KILL would leave QEMU)
		[[ -z $p ]] || { kill -TERM "$p" && wait "$p"; } 2>/dev/null || true
	done
	return 0
}
summary_done=0
on_exit() {
	local rc=$?
	cleanup
	((summary_done)) && return 0
	echo "FAIL: tests/vgpu-pci/migrate.sh stopped unexpectedly (exit status $rc)${run:+; run dir $run}"
	echo "vgpu-pci migrate: $passed passed, $((failed + 1)) failed"
}
trap on_exit EXIT
trap "exit 143" TERM INT
finish() {
	cleanup
	summary_done=1
	echo "vgpu-pci migrate: $passed passed, $failed failed"
	if ((failed == 0 && passed > 0)); then
		echo "PASS: vgpu-pci migrate: $*; run dir $run; $(vm_elapsed "$t0")s"
		exit 0
	fi
	echo "FAIL: vgpu-pci migrate: $* (logs in $run); $(vm_elapsed "$t0")s"
	exit 1
}

# --- host: QEMU, kernel, builds (as tests/vgpu-pci/run) ----------------------
vm_ensure_host_pkgs
vm_ensure_pkgs meson ninja-build pkg-config libjson-c-dev libdrm-dev jq binutils coreutils python3
vm_kernel_env
run=$(vm_new_run_dir vgpu-pci-migrate)
if [[ -z $qemu ]]; then
	if [[ -n ${VGPU_QEMU:-} ]]; then
		qemu=$VGPU_QEMU
	elif ! qemu=$("$ROOT/qemu-patches/build.sh" 2>>"$run/qemu-build.log" | tail -n 1); then
		bad "qemu-patches/build.sh failed (log $run/qemu-build.log)"
		finish "no patched QEMU"
	fi
fi
[[ -x $qemu ]] || { bad "QEMU '$qemu' is not an executable"; finish "no QEMU"; }
vm_build_sources "$ROOT" "$head"
vm_build_kmod guest-driver/kernel "$run/guest-kmod-build.log" ||
	{ bad "vgpu.ko build (log $run/guest-kmod-build.log)"; finish "build"; }
vm_build_meson "$run/meson-build.log" vgpu-backend/daemon/vgpud vgpu-backend/ctl/vgpuctl \
	guest-driver/tools/vgpu-run guest-driver/tools/vgpu-ptx-run guest-driver/cuda/libcuda.so.1 ||
	{ bad "meson build (log $run/meson-build.log)"; finish "build"; }
vm_build_own_programs "$run/own" "$run/own-build.log" ||
	{ bad "the guest's user program, cuda-saxpy (log $run/own-build.log)"; finish "build"; }
mkdir -p "$run/bin"
strip --strip-debug -o "$run/bin/vgpu.ko" "$VM_KSRC/guest-driver/kernel/vgpu.ko"
strip -o "$run/bin/vgpu-run" "$VM_MBUILD/guest-driver/tools/vgpu-run"
cp "$VM_MBUILD/vgpu-backend/daemon/vgpud" "$VM_MBUILD/vgpu-backend/ctl/vgpuctl" "$run/bin/"
initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name vgpu-pci-migrate --modules drm \
	--file "$run/bin/vgpu.ko:/vgpu.ko" --file "$HERE/migrate-job.sh:/l2-job" \
	--file "$run/bin/vgpu-run:/bin/vgpu-run" --bin "$run/bin/vgpu-run" "${VM_OWN_PROGRAM_ARGS[@]}") ||
	{ bad "guest initramfs"; finish "initramfs"; }
flock -u 8
ok "prepared: $("$qemu" --version | sed -n 1p), kernel $KVER, in $(vm_elapsed "$t0")s"

# --- vgpuds A, B, C -----------------------------------------------------------
start_vgpud() { # NAME [ALLOWED-PROFILES]
	local n=$1
	cat >"$run/vgpud-$n.conf" <<EOF2
[simgpu]
vram = $vram
[core]
chunk_size = $chunk
[daemon]
socket = $run/$n.sock
control_socket = $run/$n.ctl
mdev = off
libvirt_uri = none
EOF2
	"$run/bin/vgpud" --config "$run/vgpud-$n.conf" --allowed-profiles "${2:-*}" \
		2>"$run/vgpud-$n.log" &
	pid_of[vgpud-$n]=$!
	wait_for 30 grep -q 'ready:' "$run/vgpud-$n.log" ||
		{ bad "vgpud $n did not start: $(tail -n 3 "$run/vgpud-$n.log" | tr '\n' '|')"; finish "vgpud"; }
}
start_vgpud A
start_vgpud B
start_vgpud C vgpu-2G
ok "vgpuds A, B (any profile) and C (only vgpu-2G) started, $vram of VRAM each"
vgpuctl() { "$run/bin/vgpuctl" --socket "$run/$1.ctl" "${@:2}"; }
vms_on() { vgpuctl "$1" status --json 2>/dev/null | jq -r '[.vms[].name] | join(" ")'; }
allocated_on() { vgpuctl "$1" status --json 2>/dev/null | jq -r '.vms[] | select(.name == "mig") | .allocated'; }

# --- QEMU instances, QMP over unix sockets ------------------------------------
qmp() { # INSTANCE JSON: one command, its reply (events skipped)
	python3 "$HERE/qmp.py" "$run/q$1.qmp" "$2"
}
status_of() { qmp "$1" '{"execute":"query-status"}' | jq -r '.return.status // "?"'; }
mig_status() { qmp "$1" '{"execute":"query-migrate"}' | jq -r '.return.status // "none"'; }
con() { echo "$run/q$1.console.log"; }
has() { cat "$run"/q*.console.log 2>/dev/null | grep -qa "$1"; }
start_qemu() { # INSTANCE VGPUD [incoming]
	local i=$1 incoming=()
	[[ ${3:-} ]] && incoming=(-incoming "unix:$run/q$i.mig")
	timeout -k 5 900 "$qemu" -nodefaults -no-user-config -display none -no-reboot \
		-name mig -accel tcg -machine pc -cpu max -m 256M -smp 1 \
		-kernel "$VMLINUZ" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 loglevel=4 random.trust_cpu=on pci.size=$size pci.buffer=$buffer pci.small=$small pci.duration=$duration pci.iterations=$iterations pci.seed=28" \
		-device "vgpu-pci,id=gpu0,socket=$run/$2.sock,name=mig" \
		-serial "file:$(con "$i")" -qmp "unix:$run/q$i.qmp,server=on,wait=off" \
		"${incoming[@]}" </dev/null >"$run/q$i.qemu.log" 2>&1 &
	pid_of[q$i]=$!
	wait_for 20 test -S "$run/q$i.qmp" || { bad "QEMU q$i did not start: $(head -c 400 "$run/q$i.qemu.log")"; finish "QEMU"; }
}
gone() { ! kill -0 "${pid_of[q$1]}" 2>/dev/null; }
quit_qemu() { qmp "$1" '{"execute":"quit"}' >/dev/null 2>&1 || true; wait_for 20 gone "$1" || kill -TERM "${pid_of[q$1]}" 2>/dev/null || true; }
migrate() { # FROM TO: start a migration
	qmp "$1" "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"unix:$run/q$2.mig\"}}"
}
running_is() { [[ $(status_of "$1") == running ]]; }
placed() { [[ $(vms_on "$1") == mig && -z $(vms_on "$2") ]]; }
over() { local st; st=$(mig_status "$1"); [[ $st == completed || $st == failed || $st == cancelled ]]; }

start_qemu 0 A
check "the guest started its workloads on A (stream over $size, 2x the VRAM, and stencil)" wait_for 240 has '^VGPU-MIG-RUNNING'
check "vgpuctl A: VM mig allocated its $size and more" wait_for 120 bash -c "(( \$('$run/bin/vgpuctl' --socket '$run/A.ctl' status --json | jq '[.vms[].allocated] | add // 0') >= $(numfmt --from=iec "$size") ))"
qmp 0 '{"execute":"migrate-set-parameters","arguments":{"downtime-limit":2000}}' >/dev/null

# 1. cancelled halfway
start_qemu 1 B incoming
qmp 0 '{"execute":"migrate-set-parameters","arguments":{"max-bandwidth":4194304}}' >/dev/null
migrate 0 1 >/dev/null
sleep 3
st=$(mig_status 0)
check "migration to B in progress after 3 s (bandwidth throttled): $st" test "$st" = active
qmp 0 '{"execute":"migrate_cancel"}' >/dev/null
wait_for 30 over 0 || true
check "migrate_cancel: the migration is $(mig_status 0)" test "$(mig_status 0)" = cancelled
check "the guest runs on on A: $(status_of 0)" test "$(status_of 0)" = running
wait_for 20 gone 1 || { kill -TERM "${pid_of[q1]}" 2>/dev/null || true; }
check "vgpuctl: VM mig on A ($(vms_on A)), nothing on B ($(vms_on B))" placed A B
qmp 0 '{"execute":"migrate-set-parameters","arguments":{"max-bandwidth":1073741824}}' >/dev/null

# 2. a destination that refuses the profile
rm -f "$run/q2.console.log"
start_qemu 2 C incoming
migrate 0 2 >/dev/null
wait_for 60 over 0 || true
check "migration to C failed: $(mig_status 0) ($(qmp 0 '{"execute":"query-migrate"}' | jq -r '.return["error-desc"] // ""'))" test "$(mig_status 0)" = failed
wait_for 20 gone 2 || { kill -TERM "${pid_of[q2]}" 2>/dev/null || true; }
check "C's QEMU said vgpud's reason: $(grep -m1 'refused the incoming VM' "$run/q2.qemu.log" || true)" \
	grep -q 'refused the incoming VM' "$run/q2.qemu.log"
check "the guest runs on on A: $(status_of 0)" test "$(status_of 0)" = running
check "vgpuctl: VM mig on A ($(vms_on A)), nothing on C ($(vms_on C))" placed A C

# 3. switches A -> B -> A ...
src=0 from=A figures=''
for ((k = 1; k <= switches; k++)); do
	dst=$((k + 2)) to=$([[ $from == A ]] && echo B || echo A)
	has '^VGPU-MIG-DONE' && bad "switch $k: the guest's workloads ended before it (duration $duration too short here)"
	start_qemu "$dst" "$to" incoming
	qmp "$src" '{"execute":"migrate-set-parameters","arguments":{"downtime-limit":100,"max-bandwidth":1073741824}}' >/dev/null
	migrate "$src" "$dst" >/dev/null
	wait_for 180 over "$src" || true
	info=$(qmp "$src" '{"execute":"query-migrate"}')
	st=$(jq -r '.return.status' <<<"$info")
	if [[ $st != completed ]]; then
		bad "switch $k $from -> $to: $st $(jq -r '.return["error-desc"] // ""' <<<"$info"); $(tail -n 3 "$run/q$dst.qemu.log" | tr '\n' '|')"
		break
	fi
	dev=$(for p in x-migration-downtime-ns x-migration-bytes-sent x-migration-vm-bytes x-migration-rounds; do
		qmp "$src" "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/machine/peripheral/gpu0\",\"property\":\"$p\"}}" | jq -r .return
	done | tr '\n' ' ')
	read -r vdown vbytes vsize vrounds <<<"$dev"
	line="switch $k $from -> $to: QEMU downtime $(jq -r .return.downtime <<<"$info") ms, total $(jq -r '.return["total-time"]' <<<"$info") ms; vgpud: downtime $((vdown / 1000000)) ms, $vbytes bytes sent for $vsize of vGPU memory, $vrounds pre-copy rounds"
	ok "$line"
	figures+="$line"$'\n'
	check "switch $k: the guest runs on $to (query-status)" wait_for 20 running_is "$dst"
	quit_qemu "$src"
	check "switch $k: vgpuctl: VM mig on $to, nothing on $from" wait_for 20 placed "$to" "$from"
	echo "    vgpuctl $to: $(vms_on "$to"); vgpuctl $from: '$(vms_on "$from")'"
	src=$dst from=$to
done
check "the guest's workloads ended" wait_for 400 has '^VGPU-MIG-DONE'
while IFS= read -r l; do
	case $l in
	"VGPU-MIG-L2 ok: "*) ok "guest: ${l#VGPU-MIG-L2 ok: }" ;;
	"VGPU-MIG-L2 FAIL: "*) bad "guest: ${l#VGPU-MIG-L2 FAIL: }" ;;
	esac
done < <(cat "$run"/q*.console.log | tr -d '\r' | grep -a '^VGPU-MIG-L2 ')
check "the guest's stream, stencil and user program (saxpy) all verified" bash -c "cat '$run'/q*.console.log | grep -ac '^VGPU-MIG-L2 ok: \(stream\|stencil\|saxpy\) verified' | grep -qx 3"
check "the guest's QEMU still answers: $(status_of "$src")" test "$(status_of "$src")" = running
printf '%s' "$figures" >"$run/figures.txt"
finish "cancel, refusal and $switches switches between two vgpuds"
exit
}
