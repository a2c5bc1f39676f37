#!/bin/bash
# tests/vm/lib/boot-l1.sh - boot the L1 "host" VM under TCG and run a script in it.
set -euo pipefail

VM_PROG=boot-l1
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
	cat <<EOF
Usage: $0 [options] [--] SCRIPT [ARGS...]
       $0 [options] --shell

Boots Debian's generic kernel (fetched by fetch-kernel.sh) under
'qemu-system-x86_64 -accel tcg -cpu max' as the L1 host, with the host root
shared read-only over 9p as L1's root filesystem (see init-l1.sh) and a
writable run directory (--out) shared at the same path. Inside L1 it runs
SCRIPT ARGS (as root, cwd = the run directory, host paths unchanged, the
kernel variables KVER KROOT VMLINUZ KDIR MODDIR exported, 'modprobe' pointed
at the fetched kernel's modules), then powers off. Exits with SCRIPT's exit
status; 124 if the hard timeout hit; 125 if L1 died without reporting one;
126 if L1 did not reach its stage 2 within --ready-timeout (killed: an
infrastructure hang before any project code ran, safe to retry).

The run directory receives:
  serial.log  L1 serial console (kernel + job output)    qemu.log  QEMU's own
  job.log     the job's stdout+stderr                     status    exit status
  job.env     what the job was started with               timings   seconds:
              l1_boot (QEMU start to stage 2 ready), job, total, rc

Only one VM chain runs at a time on the machine: the script waits for
\$VGPU_CACHE/vm.lock. QEMU runs under 'nice -n 10'.

Options:
  --out DIR          run directory (default: new \$VGPU_CACHE/runs/<stamp>;
                     the 10 newest default ones are kept). Path without spaces.
  --timeout SEC      hard limit for the whole VM (default 900)
  --ready-timeout SEC  kill L1 and exit 126 if it has not reached stage 2
                     (VGPU-L1-READY) after SEC seconds (default: no limit)
  --mem SIZE         L1 memory (default 4G)
  --smp N            L1 vCPUs (default 1; see 'One L1 vCPU' in tests/vm/README.md:
                     with 2 or more, QEMU's multi-threaded TCG sometimes hands
                     L1 an interrupt between VMRUN and the host-state reload, so
                     L1 panics or an L2 guest triple-faults; use 2 only for jobs
                     that run no L2 guest)
  --append PARAMS    extra L1 kernel parameters
  --qemu-arg ARG     extra QEMU argument (repeatable; e.g. a device for L1)
  --env NAME=VALUE   export NAME=VALUE to the job (repeatable)
  --initrd FILE      L1 initramfs (default: mkinitramfs.sh --preset l1)
  --shell            interactive shell in L1 on this terminal instead of SCRIPT
  --no-lock          do not wait for \$VGPU_CACHE/vm.lock
  -v, --verbose      copy the serial console to stderr while running
  -h, --help         this text

Environment: VGPU_CACHE, VGPU_KERNEL_ENV (see fetch-kernel.sh).
EOF
}

out='' timeout=900 ready_timeout=0 mem=4G smp=1 append='' initrd='' shell=0 lock=1 verbose=0
qemu_extra=() envs=()
while (($#)); do
	case $1 in
	--out) out=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--ready-timeout) ready_timeout=${2:?}; shift 2 ;;
	--mem) mem=${2:?}; shift 2 ;;
	--smp) smp=${2:?}; shift 2
		[[ $smp =~ ^[1-9][0-9]*$ ]] || { echo "boot-l1.sh: --smp wants a vCPU count, not '$smp'" >&2; exit 2; } ;;
	--append) append=${2:?}; shift 2 ;;
	--qemu-arg) qemu_extra+=("${2:?}"); shift 2 ;;
	--env) envs+=("${2:?}"); shift 2 ;;
	--initrd) initrd=${2:?}; shift 2 ;;
	--shell) shell=1; shift ;;
	--no-lock) lock=0; shift ;;
	-v | --verbose) verbose=1; shift ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) usage >&2; exit 2 ;;
	*) break ;;
	esac
done
if ((shell)); then
	job=(--shell)
else
	(($#)) || { usage >&2; exit 2; }
	script=$(realpath -e "$1") || vm_die "no such script: $1"
	shift
	job=("$script" "$@")
fi

vm_ensure_host_pkgs
vm_kernel_env
[[ -n $initrd ]] || initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l1)

[[ -n $out ]] || out=$(vm_new_run_dir)
mkdir -p "$out"
out=$(realpath "$out")
[[ $out != *[[:space:]]* ]] || vm_die "--out path must not contain spaces: $out"
rm -f "$out"/{status,status.tmp,serial.log,job.log,qemu.log,timings}

# L1 sees the host root over 9p, but its /tmp, /run and /var/tmp are fresh
# tmpfs mounts of its own (init-l1.sh): nothing of the host under them is in
# L1's view, the run directory (its own 9p share) excepted. A clone there
# (say /tmp/vgpu) would leave L1 without its stage 2 and the job's scripts,
# so those, tests/vm/ as a whole, are staged into the run directory and L1
# runs them from there; any other such path the job is given is refused
# here, before booting, with the reason.
l1_hidden() { # path: true when L1 cannot see it
	local p
	p=$(realpath -m "$1")
	[[ $p == "$out" || $p == "$out"/* ]] && return 1
	case $p in
	/tmp | /tmp/* | /run | /run/* | /var/tmp | /var/tmp/*) return 0 ;;
	esac
	return 1
}
l1_vm_dir=$VM_DIR
if l1_hidden "$VM_DIR"; then
	rm -rf "$out/vm-tests"
	cp -a "$VM_DIR" "$out/vm-tests"
	l1_vm_dir=$out/vm-tests
	vm_log "note: $VM_DIR is under a tmpfs path L1 does not share; staged it into $l1_vm_dir"
fi
# l1_path PATH: PATH as L1 sees it (tests/vm/ staged); dies when L1 cannot.
l1_path() {
	local p=$1
	if [[ $l1_vm_dir != "$VM_DIR" && ($p == "$VM_DIR" || $p == "$VM_DIR"/*) ]]; then
		echo "$l1_vm_dir${p#"$VM_DIR"}"
		return 0
	fi
	if [[ $p == /* && -e $p ]] && l1_hidden "$p"; then
		vm_die "L1 cannot read $p: /tmp, /run and /var/tmp are L1's own tmpfs mounts (put it in the clone outside them, in \$VGPU_CACHE or in the run directory)"
	fi
	echo "$p"
}

if ((!shell)); then
	if [[ $script != "$VM_DIR"/* ]] && l1_hidden "$script"; then
		cp "$script" "$out/job-script"
		vm_log "note: $script is under a tmpfs path L1 does not share; copied into $out"
		script=$out/job-script
	fi
	job=("$script" "$@")
	for i in "${!job[@]}"; do
		job[i]=$(l1_path "${job[i]}")
	done
	[[ -x $script ]] || job=(bash "${job[@]}")
fi
# The kernel variables and --env values as L1 sees them (plain assignments:
# an l1_path that dies ends this script).
declare -A l1_kvars
for v in KVER KPKGVER KROOT VMLINUZ KDIR MODDIR VGPU_KERNEL_ENV VGPU_CACHE; do
	l1_kvars[$v]=$(l1_path "${!v}")
done
for i in "${!envs[@]}"; do
	e=${envs[i]}
	[[ $e == [A-Za-z_]*=* ]] || vm_die "--env wants NAME=VALUE, got '$e'"
	envs[i]=${e%%=*}=$(l1_path "${e#*=}")
done

{
	echo "# written by boot-l1.sh for the L1 job"
	for v in KVER KPKGVER KROOT VMLINUZ KDIR MODDIR VGPU_KERNEL_ENV VGPU_CACHE; do
		printf 'export %s=%q\n' "$v" "${l1_kvars[$v]}"
	done
	printf 'export VM_OUT=%q VM_DIR=%q VM_LIB_DIR=%q\n' "$out" "$l1_vm_dir" "$l1_vm_dir/lib"
	for e in "${envs[@]}"; do
		printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"
	done
	printf 'VM_JOB=('
	printf '%q ' "${job[@]}"
	printf ')\n'
} >"$out/job.env"

if ((lock)); then
	vm_lock "$VGPU_CACHE/vm.lock" 9
fi

cmdline="console=ttyS0,115200 panic=-1 kvm_amd.nested=1 random.trust_cpu=on"
cmdline+=" vgpu.out=$out vgpu.stage2=$l1_vm_dir/lib/l1-stage2.sh${append:+ $append}"
if ((shell)); then
	serial=(-chardev "stdio,id=ser0,signal=off,logfile=$out/serial.log" -serial chardev:ser0)
else
	serial=(-serial "file:$out/serial.log")
fi
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
	-accel tcg -cpu max -machine pc -m "$mem" -smp "$smp"
	-kernel "$VMLINUZ" -initrd "$initrd" -append "$cmdline"
	"${serial[@]}"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$out,mount_tag=vgpuout,security_model=none,multidevs=remap"
	"${qemu_extra[@]}")

qpid='' tpid='' not_ready=0
cleanup() {
	if [[ -n $qpid ]] && kill -0 "$qpid" 2>/dev/null; then
		vm_log "stopping QEMU (pid $qpid)"
		kill -TERM "$qpid" 2>/dev/null || true
		sleep 1
		kill -KILL "$qpid" 2>/dev/null || true
	fi
	[[ -n $tpid ]] && kill "$tpid" 2>/dev/null
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

printf '%q ' "${qemu[@]}" >"$out/qemu.cmd"
echo >>"$out/qemu.cmd"
vm_log "booting L1 ($KVER, TCG, $mem, $smp vCPUs), run dir $out"
t0=$(vm_now) t_ready=
if ((shell)); then
	# Foreground, on this terminal; still bounded by the timeout.
	set +e
	timeout -k 10 "$timeout" nice -n 10 "${qemu[@]}" 2>"$out/qemu.log"
	qrc=$?
	set -e
else
	# timeout(1) is QEMU's parent: it forwards our TERM and enforces the limit.
	timeout -k 10 "$timeout" nice -n 10 "${qemu[@]}" </dev/null >"$out/qemu.log" 2>&1 &
	qpid=$!
	if ((verbose)); then
		touch "$out/serial.log"
		tail -n +1 -f --pid="$qpid" "$out/serial.log" >&2 &
		tpid=$!
	fi
	while kill -0 "$qpid" 2>/dev/null; do
		if [[ -z $t_ready ]] && grep -qa '^VGPU-L1-READY' "$out/serial.log" 2>/dev/null; then
			t_ready=$(vm_now)
		fi
		if [[ -z $t_ready ]] && ((ready_timeout > 0)) &&
			awk -v a="$t0" -v b="$(vm_now)" -v l="$ready_timeout" 'BEGIN { exit !(b - a > l) }'; then
			vm_log "L1 did not reach stage 2 within ${ready_timeout}s; killing it (see $out/serial.log)"
			not_ready=1
			kill -TERM "$qpid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	set +e
	wait "$qpid"
	qrc=$?
	set -e
	qpid=
	[[ -n $tpid ]] && { wait "$tpid" 2>/dev/null || true; tpid=; }
fi
t_end=$(vm_now)
[[ -n $t_ready ]] || ! grep -qa '^VGPU-L1-READY' "$out/serial.log" 2>/dev/null || t_ready=$t_end

rc=
if [[ -s $out/status ]]; then
	rc=$(tr -dc 0-9 <"$out/status")
fi
if [[ -z $rc ]]; then
	rc=$(sed -n 's/^VGPU-L1-STATUS=\([0-9]*\).*/\1/p' "$out/serial.log" 2>/dev/null | tail -n 1)
fi
if [[ -z $rc ]] && ((not_ready)); then
	tail -n 20 "$out/serial.log" >&2 2>/dev/null || true
	rc=126
fi
if [[ -z $rc ]]; then
	if ((qrc == 124 || qrc == 137)); then
		vm_log "TIMEOUT: L1 still running after ${timeout}s; killed (see $out/serial.log)"
		rc=124
	else
		vm_log "L1 ended without an exit status (QEMU rc $qrc); see $out/serial.log, $out/qemu.log"
		tail -n 20 "$out/serial.log" >&2 2>/dev/null || true
		rc=125
	fi
fi

{ grep -a '^VGPU-L1-INIT-FAILED' "$out/serial.log" 2>/dev/null || true; } | while read -r l; do vm_log "$l"; done

l1_boot=$([[ -n $t_ready ]] && awk -v a="$t0" -v b="$t_ready" 'BEGIN { printf "%.1f", b - a }' || echo NA)
job_s=$([[ -n $t_ready ]] && awk -v a="$t_ready" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }' || echo NA)
total=$(awk -v a="$t0" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')
printf 'l1_boot=%s\njob=%s\ntotal=%s\nrc=%s\n' "$l1_boot" "$job_s" "$total" "$rc" >"$out/timings"
vm_log "L1 done: rc=$rc l1_boot=${l1_boot}s job=${job_s}s total=${total}s (run dir $out)"
exit "$rc"
