#!/usr/bin/env bash
# vm.sh - the GPU session's vm step: a vgpu-pci guest on the GPU machine
# (issue 27 item 6), everything from the bundle (make-bundle.sh --vm: BUNDLE/vm,
# tests/cudagpu/vm-bundle.sh says what is in it).
#
#   1. native: the guest's own cuda-saxpy binary on the host against the
#      machine's libcuda.so.1 (NVIDIA's; with VGPU_CUDA_LIBRARY set, that
#      library's directory comes first: the CPU stand-in), its kernel time
#   2. vgpud --gpu cuda, process isolation (a vgpu-gpu-worker per VM: user
#      PTX needs it), [simgpu] vram = VRAM as its GPU memory budget
#   3. the patched QEMU under TCG (-accel tcg: the GPU machine's /dev/kvm
#      does not boot the guest), its libraries and firmware from the bundle,
#      one guest with -device vgpu-pci; the guest (vm-job.sh) runs cuda-saxpy
#      alone (timed), then stream over SIZE (> VRAM: GPUswap evicts), with
#      its own programs (vgpu-ptx-run, cuda-saxpy) while that memory is
#      held, then stencil and gups, all verified; it powers off when done.
#      Meanwhile vgpuctl's figures for the VM are sampled.
#   4. checks: every guest check passed, the program's results exact, the
#      guest's memory oversubscribed (vgpuctl: allocated > VRAM, evicted > 0;
#      the guest driver's counters: evicted > 0), QEMU exited 0
# Writes OUT/vm.json (figures, including the guest's and the native kernel
# time and their ratio), keeps the logs in OUT/vm/ (console.log, qemu.log,
# vgpud.log, vgpuctl samples), prints 'ok: ...' / 'FAIL: ...' lines, then
# 'vm: N passed, N failed' and a last 'vm: ...' line of figures (the
# session copies it to summary.txt). Exit 0 when every check passed, 1
# otherwise, 2 bad usage or bundle.
#
# Usage: tests/cudagpu/vm.sh BUNDLE OUT
# Environment (defaults): VGPU_VM_VRAM (64M), VGPU_VM_SIZE (96M),
#   VGPU_VM_SAXPY (bytes of cuda-saxpy's working set: 32M, 2M on the
#   stand-in, whose kernels run on the CPU), VGPU_VM_REPEAT (launches, 5),
#   VGPU_VM_LIMIT (seconds for QEMU, 240), VGPU_CUDA_LIBRARY (a libcuda.so.1
#   to use instead of the system's: the CPU stand-in fake_libcuda.c).
set -uo pipefail
{
bundle=$(cd "${1:?usage: vm.sh BUNDLE OUT}" && pwd) || exit 2
out=${2:?usage: vm.sh BUNDLE OUT}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lib/checks.sh
source "$ROOT/tests/lib/checks.sh"
vm=$bundle/vm bin=$bundle/bin
for f in qemu-system-x86_64.gz vmlinuz initrd.cpio.gz native/cuda-saxpy firmware/bios-256k.bin; do
	[[ -e $vm/$f ]] || { echo "vm.sh: no $vm/$f (make-bundle.sh --vm)" >&2; exit 2; }
done
for f in vgpud vgpu-gpu-worker vgpuctl jq; do
	[[ -x $bin/$f ]] || { echo "vm.sh: no $bin/$f (make-bundle.sh)" >&2; exit 2; }
done
vram=${VGPU_VM_VRAM:-64M} size=${VGPU_VM_SIZE:-96M} repeat=${VGPU_VM_REPEAT:-5}
limit=${VGPU_VM_LIMIT:-240}
libcuda=system
if [[ -n ${VGPU_CUDA_LIBRARY:-} ]]; then
	libcuda=$VGPU_CUDA_LIBRARY
	saxpy_bytes=${VGPU_VM_SAXPY:-2M}
else
	saxpy_bytes=${VGPU_VM_SAXPY:-32M}
fi
mkdir -p "$out/vm"
log=$out/vm
now() { date +%s.%N; }
since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1f", e - s }'; }
t0=$(now)
jq() { "$bin/jq" "$@"; }
children_named() { # PID NAME: how many children of PID are named NAME (/proc: no procps needed)
	local stat n=0 rest
	for stat in /proc/[0-9]*/stat; do
		# "pid (comm) state ppid ..."
		read -r rest 2>/dev/null <"$stat" || continue
		[[ $rest == *"($2) "* ]] || continue
		rest=${rest##*) }
		read -r _ ppid _ <<<"$rest"
		[[ $ppid == "$1" ]] && n=$((n + 1))
	done
	echo "$n"
}
bytes_of() { numfmt --from=iec "$1"; }

# --- 1. the program natively ---------------------------------------------------
native_env=(CUDA_PROG_KERNELS="$vm/native/kernels" CUDA_PROG_REPEAT="$repeat" CUDA_PROG_SEED=27)
[[ $libcuda == system ]] ||
	native_env+=(LD_LIBRARY_PATH="$(dirname "$libcuda")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
env "${native_env[@]}" timeout 120 "$vm/native/cuda-saxpy" "$saxpy_bytes" >"$log/native.log" 2>&1
rc=$?
native=$(grep -m1 '^saxpy: ok' "$log/native.log")
check "native: cuda-saxpy over $saxpy_bytes against $( [[ $libcuda == system ]] && echo "the system's libcuda.so.1" || echo "$libcuda") (exit $rc): ${native:-$(tail -n 2 "$log/native.log" | tr '\n' '|')}" \
	test -n "$native"

# --- 2. vgpud --gpu cuda ---------------------------------------------------------
sockdir=$(mktemp -d /tmp/gpuvm.XXXXXX)
sock=$sockdir/vgpud.sock ctl=$sockdir/control.sock
vgpud_pid='' qemu_pid=''
cleanup() {
	# TERM to timeout(1) passes it on to QEMU; KILL to QEMU itself
	[[ -z $qemu_pid ]] || kill -TERM "$qemu_pid" 2>/dev/null
	[[ -s $sockdir/qemu.pid ]] && kill -KILL "$(cat "$sockdir/qemu.pid")" 2>/dev/null
	if [[ -n $vgpud_pid ]]; then
		kill -TERM "$vgpud_pid" 2>/dev/null
		wait "$vgpud_pid" 2>/dev/null
	fi
	rm -rf "$sockdir"
	# the unpacked QEMU goes: the bundle must stay small enough to carry
	rm -f "$vm/qemu-system-x86_64" "$vm/qemu-system-x86_64.tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
cat >"$log/vgpud.conf" <<EOF
# written by tests/cudagpu/vm.sh
[simgpu]
vram = $vram
[core]
chunk_size = 4M
[cuda]
isolation = process
[daemon]
socket = $sock
control_socket = $ctl
mdev = off
libvirt_uri = none
EOF
"$bin/vgpud" --config "$log/vgpud.conf" --gpu cuda --allowed-profiles '*' 2>"$log/vgpud.log" &
vgpud_pid=$!
vgpuctl() { "$bin/vgpuctl" --socket "$ctl" "$@"; }
if wait_for 60 grep -q 'ready:' "$log/vgpud.log"; then
	ok "vgpud --gpu cuda --isolation process started: $(grep -o 'ready: .*' "$log/vgpud.log")"
else
	bad "vgpud did not start: $(tail -n 5 "$log/vgpud.log" | tr '\n' '|')"
fi
vram_bytes=$(vgpuctl status --json 2>/dev/null | jq -r '.gpu.vram // empty')

# --- 3. the guest --------------------------------------------------------------
qemu_rc=''
# Unpacked beside the bundle's copy (a /tmp mounted noexec would not run
# it), else in the temporary directory.
qemu=$vm/qemu-system-x86_64
[[ -w $vm ]] || qemu=$sockdir/qemu-system-x86_64
if ! { gzip -dc "$vm/qemu-system-x86_64.gz" >"$qemu.tmp" && chmod 755 "$qemu.tmp" &&
	mv "$qemu.tmp" "$qemu"; }; then
	bad "unpacking $vm/qemu-system-x86_64.gz into $(dirname "$qemu")"
fi
if ((failed == 0)); then
	append="console=ttyS0 panic=-1 loglevel=4 random.trust_cpu=on gpuvm.size=$size"
	append+=" gpuvm.cuda=$saxpy_bytes gpuvm.repeat=$repeat"
	qemu_version=$(LD_LIBRARY_PATH="$vm/lib" "$qemu" --version | sed -n 1p)
	t_boot=$(now)
	LD_LIBRARY_PATH="$vm/lib" timeout -k 5 "$limit" "$qemu" -L "$vm/firmware" \
		-nodefaults -no-user-config -display none -no-reboot -name gpuvm \
		-accel tcg -machine pc -cpu max -m 512M -smp 1 \
		-kernel "$vm/vmlinuz" -initrd "$vm/initrd.cpio.gz" -append "$append" \
		-device "vgpu-pci,socket=$sock,name=gpuvm" \
		-serial "file:$log/console.log" -pidfile "$sockdir/qemu.pid" </dev/null >"$log/qemu.log" 2>&1 &
	qemu_pid=$!
	# vgpuctl's figures for the VM while it runs: the highest of each
	max_alloc=0 max_evicted=0 max_evicted_total=0 seen=0 boot_s='' workers=0
	while kill -0 "$qemu_pid" 2>/dev/null; do
		# the VM's GPU work in a process of its own (process isolation)
		n=$(children_named "$vgpud_pid" vgpu-gpu-worker)
		((n > workers)) && workers=$n
		if [[ -z $boot_s ]] && grep -qa '^VGPU-GPUVM-START' "$log/console.log" 2>/dev/null; then
			boot_s=$(since "$t_boot")
		fi
		if vgpuctl status --json >"$log/status.json" 2>/dev/null &&
			read -r a e < <(jq -r '.vms[] | select(.name == "gpuvm") | "\(.allocated) \(.evicted)"' "$log/status.json") &&
			[[ -n $a ]]; then
			seen=1
			((a > max_alloc)) && { max_alloc=$a; cp "$log/status.json" "$log/status-max.json"; }
			((e > max_evicted)) && max_evicted=$e
			vgpuctl stats gpuvm >"$log/stats.json" 2>/dev/null &&
				t=$(jq -r '(.vm // .).evicted_bytes_total // 0' "$log/stats.json") &&
				((t > max_evicted_total)) && { max_evicted_total=$t; cp "$log/stats.json" "$log/stats-max.json"; }
		fi
		sleep 0.5
	done
	wait "$qemu_pid"
	qemu_rc=$?
	qemu_pid=''
	guest_s=$(since "$t_boot")
	console() { tr -d '\r' <"$log/console.log" 2>/dev/null; }
	check "QEMU ($qemu_version, -accel tcg) booted the guest (${boot_s:-never} s to its job) and exited with status 0 after ${guest_s} s (got $qemu_rc$([[ $qemu_rc == 124 ]] && echo ": killed at the ${limit} s limit"))" \
		test "$qemu_rc" = 0
	while IFS= read -r line; do
		case $line in
		"VGPU-GPUVM ok: "*) ok "guest: ${line#VGPU-GPUVM ok: }" ;;
		"VGPU-GPUVM FAIL: "*) bad "guest: ${line#VGPU-GPUVM FAIL: }" ;;
		esac
	done < <(console | grep -a '^VGPU-GPUVM \(ok\|FAIL\): ')
	check "the guest's job ended with no failure: $(console | grep -a -m1 '^VGPU-GPUVM-DONE' || echo "no DONE line: $(console | tail -n 3 | tr '\n' '|')")" \
		bash -c "tr -d '\r' <'$log/console.log' | grep -aq '^VGPU-GPUVM-DONE failures=0 '"
	guest=$(console | grep -a -m1 '^VGPU-GPUVM-SAXPY ' | sed 's/^VGPU-GPUVM-SAXPY //')
	check "guest: cuda-saxpy timed: ${guest:-no result}" test -n "$guest"
	hold=$(console | grep -a -m1 '^VGPU-GPUVM-HOLD ' | sed 's/^VGPU-GPUVM-HOLD //')
	# what vgpu.ko negotiated: with SEMAPHORE_TIMESTAMP (0x20) the guest's
	# events carry the GPU's clock, else the times the guest saw the fences
	features=$(console | grep -a -m1 -o 'vGPU ABI [0-9.]*, features 0x[0-9a-f]*' | sed 's/.*features //')
	timing=host
	[[ -n $features ]] && (((features & 0x20) != 0)) && timing=gpu
	check "vgpuctl saw the VM 'gpuvm' while it ran" test "$seen" = 1
	check "vgpud ran its GPU work in a vgpu-gpu-worker process ($workers at most)" test "$workers" -ge 1
	check "vgpuctl: the VM allocated more than vgpud's VRAM ($max_alloc bytes > ${vram_bytes:-?})" \
		test "$max_alloc" -gt "${vram_bytes:-0}"
	check "vgpuctl: its memory evicted (evicted at most $max_evicted bytes at once, evicted_bytes_total $max_evicted_total)" \
		test "$max_evicted_total" -gt 0 -a "$max_evicted" -gt 0
fi
trap - EXIT
cleanup
grep -a ' error: ' "$log/vgpud.log" | head -n 3 | sed 's/^/    vgpud: /'

# --- 4. figures ------------------------------------------------------------------
ms() { # LINE WHICH: the 'kernel mean X ms fastest Y ms' figure
	sed -n "s/.*kernel mean \([0-9.]*\) ms fastest \([0-9.]*\) ms.*/\\$2/p" <<<"$1"
}
g_mean=$(ms "${guest:-}" 1) g_fast=$(ms "${guest:-}" 2)
n_mean=$(ms "$native" 1) n_fast=$(ms "$native" 2)
ratio_of() { awk -v g="$1" -v n="$2" 'BEGIN { if (g != "" && n > 0) printf "%.3f", g / n }'; }
# the fastest launches too: the first one may include loading the function
ratio=$(ratio_of "$g_mean" "$n_mean") ratio_fast=$(ratio_of "$g_fast" "$n_fast")
jq -n --arg libcuda "$libcuda" --arg qemu "${qemu_version:-}" --arg manifest "$(cat "$vm/MANIFEST" 2>/dev/null)" \
	--arg bytes "$saxpy_bytes" --argjson repeat "$repeat" \
	--arg g_mean "$g_mean" --arg g_fast "$g_fast" --arg n_mean "$n_mean" --arg n_fast "$n_fast" \
	--arg ratio "$ratio" --arg ratio_fast "$ratio_fast" --arg timing "${timing:-}" --arg features "${features:-}" --arg guest "${guest:-}" --arg native "$native" --arg hold "${hold:-}" \
	--arg vram "${vram_bytes:-}" --arg size "$(bytes_of "$size")" \
	--arg alloc "${max_alloc:-0}" --arg evicted "${max_evicted:-0}" --arg evicted_total "${max_evicted_total:-0}" \
	--arg boot "${boot_s:-}" --arg guest_s "${guest_s:-}" --arg qemu_rc "${qemu_rc:-}" \
	--argjson passed "$passed" --argjson failed "$failed" --arg total "$(since "$t0")" '
	def num: if . == "" then null else tonumber end;
	{ libcuda: $libcuda, qemu: $qemu, accel: "tcg", bundle: $manifest,
	  program: { name: "cuda-saxpy", bytes: $bytes, launches: $repeat,
	    guest_kernel_ms_mean: ($g_mean | num), guest_kernel_ms_fastest: ($g_fast | num),
	    native_kernel_ms_mean: ($n_mean | num), native_kernel_ms_fastest: ($n_fast | num),
	    guest_over_native: ($ratio | num), guest_over_native_fastest: ($ratio_fast | num),
	    guest_event_timing: $timing,
	    guest_vgpu_features: $features, guest_line: $guest, native_line: $native },
	  oversubscription: { vgpud_vram: ($vram | num), stream_bytes: ($size | num),
	    vm_allocated_max: ($alloc | num), vm_evicted_max: ($evicted | num),
	    vm_evicted_bytes_total: ($evicted_total | num), guest_hold: $hold },
	  guest_boot_s: ($boot | num), guest_run_s: ($guest_s | num), qemu_exit: ($qemu_rc | num),
	  checks_passed: $passed, checks_failed: $failed, total_s: ($total | num) }' >"$out/vm.json"
echo "vm: $passed passed, $failed failed"
echo "vm: saxpy kernel ${g_mean:-?} ms in the guest (${timing:-?}-timed events) vs ${n_mean:-?} ms native (${ratio:-?}x; fastest ${g_fast:-?} vs ${n_fast:-?} ms, ${ratio_fast:-?}x; $saxpy_bytes, $repeat launches, libcuda $( [[ $libcuda == system ]] && echo system || echo stand-in)); evicted $((${max_evicted_total:-0} >> 20)) MiB of $(((${max_alloc:-0}) >> 20)) MiB on $(((${vram_bytes:-0}) >> 20)) MiB; boot ${boot_s:-?} s, guest ${guest_s:-?} s; $( ((failed == 0)) && echo PASS || echo FAIL)"
((failed == 0))
exit
}
