#!/bin/bash
# tests/vgpu-pci/migrate-bench.sh - issue 28's figures: a live migration's
# downtime as the guest sees it, its total time and bytes, for VMs of
# different vGPU memory sizes. Figures, not pass/fail. Run as root.
set -euo pipefail

export VM_PROG=vgpu-pci-migrate-bench
# All of it in one block: an edit to this file while it runs changes nothing.
{
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../vm/lib/common.sh
source "$ROOT/tests/vm/lib/common.sh"
# shellcheck source=../vm/lib/build.sh
source "$VM_LIB_DIR/build.sh"

usage() {
	cat <<EOF2
Usage: $0 [--qemu PATH] [--head] [--json FILE] [--sizes "64M 512M"]
          [--write SIZE] [--rate SIZE] [--repeats N]

For each vGPU memory size (default 64M and 512M): two vgpuds A and B
(simgpu, 256 MiB of VRAM each, 4 MiB chunks), a guest on A ('qemu-system-x86_64
-accel tcg', vgpu-pci) running vgpu-fence-gaps --timeline (guest-driver/tools):
it holds SIZE of GPU memory, rewrites --write of it (default 16M) at --rate
bytes per second (default 16M; a dirty rate below the migration's link)
and prints every fence's submission and completion on its console. Once it
runs, --repeats (default 5) live migrations A -> B -> A ... through QMP
(downtime-limit 100 ms), one QEMU after the other.
Figures per size, the median over the switches and its _max:
  migration_downtime_ms   the guest-visible pause of the GPU at the switch:
                          the longest wait (submission to completion) of
                          the fences across it, the first ones completed on
                          the destination (fence_switch.py: the switch is
                          where the guest's console moves to the
                          destination QEMU; the guest's clock, which under
                          TCG stops while QEMU stops the vCPUs)
  migration_qemu_downtime_ms, migration_total_s (QEMU's query-migrate)
  migration_vgpud_downtime_ms, migration_bytes_sent, migration_vm_bytes,
  migration_bytes_ratio (sent / VM), migration_rounds (vgpu-pci's
                          x-migration-* properties, vgpud's export;
                          medians only, but vgpud's downtime also _max)
  migration_switches      how many switches the figures are over
Keys for the largest size unsuffixed, every size also with _SIZE (e.g.
migration_downtime_ms_64M, migration_downtime_ms_max_64M). The guest's data
is checked by checksum after the last switch (a check, not a figure). Writes one JSON object to --json
(default build/bench/vgpu-pci-migrate-bench.json; './vgpu-dev bench --vm'
merges it into build/bench/bench.json) and ends with
'vgpu-pci migrate-bench: N passed, N failed'. Exit status 0 (every check
passed), 1, 2 (usage), 77 (not root, or no patched QEMU).
EOF2
}
qemu='' head=0 json="$ROOT/build/bench/vgpu-pci-migrate-bench.json" sizes="64M 512M"
write=16M rate=16M repeats=5
while (($#)); do
	case $1 in
	--qemu) qemu=${2:?}; shift 2 ;;
	--head) head=1; shift ;;
	--json) json=${2:?}; shift 2 ;;
	--sizes) sizes=${2:?}; shift 2 ;;
	--write) write=${2:?}; shift 2 ;;
	--rate) rate=${2:?}; shift 2 ;;
	--repeats) repeats=${2:?}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: tests/vgpu-pci/migrate-bench.sh needs root"
	exit 77
fi
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
vram=256M chunk=4M
# shellcheck source=../lib/checks.sh
source "$ROOT/tests/lib/checks.sh"
t0=$(vm_now)
run=''
declare -A pid_of=()
cleanup() {
	local p
	for p in "${!pid_of[@]}"; do
		# TERM: timeout(1) passes it on to its QEMU (KILL would leave QEMU)
		[[ -z ${pid_of[$p]} ]] || { kill -TERM "${pid_of[$p]}" && wait "${pid_of[$p]}"; } 2>/dev/null || true
		unset "pid_of[$p]"
	done
	return 0
}
trap cleanup EXIT
trap "exit 143" TERM INT

vm_ensure_host_pkgs
vm_ensure_pkgs meson ninja-build pkg-config libjson-c-dev libdrm-dev jq binutils coreutils python3
vm_kernel_env
run=$(vm_new_run_dir vgpu-pci-migrate-bench)
if [[ -z $qemu ]]; then
	if [[ -n ${VGPU_QEMU:-} ]]; then
		qemu=$VGPU_QEMU
	elif ! qemu=$("$ROOT/qemu-patches/build.sh" 2>>"$run/qemu-build.log" | tail -n 1); then
		echo "SKIP: qemu-patches/build.sh failed (log $run/qemu-build.log)"
		exit 77
	fi
fi
[[ -x $qemu ]] || { echo "SKIP: QEMU '$qemu' is not an executable"; exit 77; }
vm_build_sources "$ROOT" "$head"
vm_build_kmod guest-driver/kernel "$run/guest-kmod-build.log" || { echo "FAIL: vgpu.ko build"; exit 1; }
vm_build_meson "$run/meson-build.log" vgpu-backend/daemon/vgpud vgpu-backend/ctl/vgpuctl \
	guest-driver/tools/vgpu-fence-gaps || { echo "FAIL: meson build (log $run/meson-build.log)"; exit 1; }
mkdir -p "$run/bin"
strip --strip-debug -o "$run/bin/vgpu.ko" "$VM_KSRC/guest-driver/kernel/vgpu.ko"
strip -o "$run/bin/vgpu-fence-gaps" "$VM_MBUILD/guest-driver/tools/vgpu-fence-gaps"
cp "$VM_MBUILD/vgpu-backend/daemon/vgpud" "$VM_MBUILD/vgpu-backend/ctl/vgpuctl" "$run/bin/"
initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name vgpu-pci-migrate-bench --modules drm \
	--file "$run/bin/vgpu.ko:/vgpu.ko" --file "$HERE/migrate-bench-job.sh:/l2-job" \
	--file "$run/bin/vgpu-fence-gaps:/bin/vgpu-fence-gaps" --bin "$run/bin/vgpu-fence-gaps") ||
	{ echo "FAIL: guest initramfs"; exit 1; }
flock -u 8
ok "prepared: $("$qemu" --version | sed -n 1p), kernel $KVER, in $(vm_elapsed "$t0")s"

start_vgpud() { # NAME DIR
	cat >"$2/vgpud-$1.conf" <<EOF2
[simgpu]
vram = $vram
[core]
chunk_size = $chunk
[daemon]
socket = $2/$1.sock
control_socket = $2/$1.ctl
mdev = off
libvirt_uri = none
EOF2
	"$run/bin/vgpud" --config "$2/vgpud-$1.conf" --allowed-profiles '*' 2>"$2/vgpud-$1.log" &
	pid_of[vgpud-$1]=$!
	wait_for 30 grep -q 'ready:' "$2/vgpud-$1.log"
}
qmp() { # SOCKET JSON
	python3 "$HERE/qmp.py" "$1" "$2"
}
start_qemu() { # DIR I VGPUD SIZE [incoming]
	local d=$1 i=$2 incoming=()
	[[ ${5:-} ]] && incoming=(-incoming "unix:$d/q$i.mig")
	timeout -k 5 600 "$qemu" -nodefaults -no-user-config -display none -no-reboot \
		-name migb -accel tcg -machine pc -cpu max -m 256M -smp 1 \
		-kernel "$VMLINUZ" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 loglevel=4 random.trust_cpu=on pci.size=$4 pci.write=$write pci.rate=$rate pci.duration=$duration" \
		-device "vgpu-pci,id=gpu0,socket=$d/$3.sock,name=migb" \
		-serial "file:$d/q$i.console.log" -qmp "unix:$d/q$i.qmp,server=on,wait=off" \
		"${incoming[@]}" </dev/null >"$d/q$i.qemu.log" 2>&1 &
	pid_of[q$i]=$!
	wait_for 20 test -S "$d/q$i.qmp"
}
over() { local st; st=$(qmp "$1" '{"execute":"query-migrate"}' | jq -r '.return.status // "none"'); [[ $st == completed || $st == failed || $st == cancelled ]]; }

# med_max VALUES...: "median max" (the lower median for an even count)
med_max() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%s %s\n", v[int((NR + 1) / 2)], v[NR] }'; }
declare -A fig=()
for size in $sizes; do
	d=$run/$size
	mkdir -p "$d"
	# the guest's workload outlasts the switches: each takes a QEMU start,
	# 3 s of rhythm, the pre-copy (about 1 s per 32 MiB of vGPU memory
	# here, with the host's load) and the source QEMU's exit
	duration=$((20 + repeats * (12 + $(numfmt --from=iec "$size") / (32 << 20))))
	start_vgpud A "$d" && start_vgpud B "$d" || { bad "$size: vgpuds did not start"; cleanup; continue; }
	start_qemu "$d" 0 A "$size" || { bad "$size: QEMU did not start"; cleanup; continue; }
	if ! wait_for 300 grep -qa '^VGPU-FENCE-GAPS-READY' "$d/q0.console.log"; then
		bad "$size: the guest's workload did not start: $(tr -d '\r' <"$d/q0.console.log" | tail -n 3 | tr '\n' '|')"
		cleanup
		continue
	fi
	declare -a down=() qdown=() vdowns=() total=() ratio=() sent=() rounds=()
	src=0 from=A vsize=0 done_ok=1
	for ((k = 1; k <= repeats; k++)); do
		to=$([[ $from == A ]] && echo B || echo A)
		if grep -qa '^VGPU-MIGB-DONE' "$d/q$src.console.log"; then
			bad "$size: the guest's workload ended before switch $k (duration $duration too short here)"
			done_ok=0
			break
		fi
		start_qemu "$d" "$k" "$to" "$size" incoming
		sleep 3 # the workload's rhythm before the switch
		qmp "$d/q$src.qmp" '{"execute":"migrate-set-parameters","arguments":{"downtime-limit":100,"max-bandwidth":1073741824}}' >/dev/null
		qmp "$d/q$src.qmp" "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"unix:$d/q$k.mig\"}}" >/dev/null
		wait_for 240 over "$d/q$src.qmp" || true
		info=$(qmp "$d/q$src.qmp" '{"execute":"query-migrate"}')
		if [[ $(jq -r .return.status <<<"$info") != completed ]]; then
			bad "$size: switch $k $from -> $to: migration $(jq -r '.return.status, .return["error-desc"] // ""' <<<"$info" | tr '\n' ' ')"
			done_ok=0
			break
		fi
		prop() { qmp "$d/q$src.qmp" "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/machine/peripheral/gpu0\",\"property\":\"$1\"}}" | jq -r .return; }
		vdown=$(prop x-migration-downtime-ns) vbytes=$(prop x-migration-bytes-sent)
		vsize=$(prop x-migration-vm-bytes) vrounds=$(prop x-migration-rounds)
		qmp "$d/q$src.qmp" '{"execute":"quit"}' >/dev/null 2>&1 || true
		# the guest's fences across this switch: the source's console
		# against the destination's, once a few fences completed there
		wait_for 60 bash -c "(( \$(grep -ac '^VGPU-FENCE-T ' '$d/q$k.console.log') >= 3 ))" || true
		sw=$(python3 "$HERE/fence_switch.py" "$d/q$src.console.log" "$d/q$k.console.log") ||
			{ bad "$size: switch $k: no fences on both sides of it ($sw)"; done_ok=0; break; }
		g=$(jq -r '.downtime_ns / 1e6' <<<"$sw")
		down+=("$g") qdown+=("$(jq -r .return.downtime <<<"$info")")
		vdowns+=("$(awk -v g="$vdown" 'BEGIN { printf "%.1f", g / 1e6 }')")
		total+=("$(jq -r '.return["total-time"] / 1000' <<<"$info")")
		sent+=("$vbytes") rounds+=("$vrounds")
		ratio+=("$(awk -v a="$vbytes" -v b="$vsize" 'BEGIN { printf "%.3f", b ? a / b : 0 }')")
		echo "    $size switch $k $from -> $to: guest-visible GPU pause $(printf '%.1f' "$g") ms (fence $(jq -r .fence <<<"$sw"), completions $(jq -r '.gap_ns / 1e6' <<<"$sw") ms apart across the switch); QEMU downtime ${qdown[-1]} ms, total ${total[-1]} s; vgpud downtime ${vdowns[-1]} ms, $vbytes bytes sent for $vsize ($vrounds rounds); $(grep -a 'exported:' "$d/vgpud-$from.log" | tail -n 1 | sed 's/.*exported: //')"
		src=$k from=$to
	done
	if ((!done_ok)); then
		cleanup
		continue
	fi
	if ! wait_for $((duration + 120)) grep -qa '^VGPU-MIGB-DONE' "$d/q$src.console.log"; then
		bad "$size: the guest did not finish on $from: $(tr -d '\r' <"$d/q$src.console.log" | tail -n 3 | tr '\n' '|')"
		cleanup
		continue
	fi
	summary=$(cat "$d"/q*.console.log | tr -d '\r' | grep -a '^VGPU-FENCE-GAPS ' | tail -n 1)
	changed=$(sed -n 's/.* changed=\([0-9]*\).*/\1/p' <<<"$summary")
	if [[ $changed != 0 ]]; then
		bad "$size: the guest's data after $repeats migrations: ${summary:-no summary} $(grep -a STDERR "$d"/q*.console.log | head -n 3 | tr '\n' '|')"
		cleanup
		continue
	fi
	ok "$size: $repeats switches; the guest's $size verified by checksum after them (${summary#VGPU-FENCE-GAPS })"
	read -r fig[downtime_ms_$size] fig[downtime_ms_max_$size] < <(med_max "${down[@]}")
	read -r fig[qemu_downtime_ms_$size] fig[qemu_downtime_ms_max_$size] < <(med_max "${qdown[@]}")
	read -r fig[vgpud_downtime_ms_$size] fig[vgpud_downtime_ms_max_$size] < <(med_max "${vdowns[@]}")
	read -r fig[total_s_$size] fig[total_s_max_$size] < <(med_max "${total[@]}")
	read -r fig[bytes_ratio_$size] _ < <(med_max "${ratio[@]}")
	read -r fig[bytes_sent_$size] _ < <(med_max "${sent[@]}")
	read -r fig[rounds_$size] _ < <(med_max "${rounds[@]}")
	fig[vm_bytes_$size]=$vsize
	fig[switches_$size]=$repeats
	echo "    $size over $repeats switches (median, max): guest-visible GPU pause ${fig[downtime_ms_$size]}, ${fig[downtime_ms_max_$size]} ms; QEMU downtime ${fig[qemu_downtime_ms_$size]}, ${fig[qemu_downtime_ms_max_$size]} ms; vgpud downtime ${fig[vgpud_downtime_ms_$size]}, ${fig[vgpud_downtime_ms_max_$size]} ms; total ${fig[total_s_$size]}, ${fig[total_s_max_$size]} s"
	unset down qdown vdowns total ratio sent rounds
	cleanup
	last=$size
done
mkdir -p "$(dirname "$json")"
{
	for k in "${!fig[@]}"; do
		printf '%s\n' "migration_$k" "${fig[$k]}"
	done
	if [[ -n ${last:-} ]]; then
		for k in downtime_ms downtime_ms_max qemu_downtime_ms qemu_downtime_ms_max total_s \
			total_s_max vgpud_downtime_ms vgpud_downtime_ms_max bytes_sent vm_bytes bytes_ratio \
			rounds switches; do
			printf '%s\n' "migration_$k" "${fig[${k}_$last]}"
		done
	fi
} | jq -Rn '[inputs] as $l | [range(0; $l | length; 2) as $i | {key: $l[$i], value: ($l[$i + 1] | tonumber)}] | from_entries' >"$json"
echo "figures: $json"
echo "vgpu-pci migrate-bench: $passed passed, $failed failed"
((failed == 0)) || exit 1
exit 0
}
