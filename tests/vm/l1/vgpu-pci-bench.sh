#!/bin/bash
# tests/vm/l1/vgpu-pci-bench.sh - the L1 half of tests/vm/vgpu-pci-bench.sh
# (runs INSIDE L1, started by boot-l1.sh; its inputs come in B_* variables).
#
#   1. load vfio, vfio_iommu_type1, mdev, vfio_virqfd, kvm_amd, vgpu_mdev.ko;
#      start one vgpud (simgpu B_VRAM, B_CHUNK chunks) with its mdev
#      transport and its local socket (idle_timeout_ms = 0)
#   2. boot two L2 guests with -accel kvm, each running vgpu-submit-rate
#      (l2/submit-rate-guest.sh): "mdev" through an mdev of vgpu_mdev.ko
#      (B_MDEV_QEMU, default the stock qemu-system-x86_64, -device
#      vfio-pci,sysfsdev=), "pci" through QEMU's vgpu-pci (B_QEMU, the
#      patched QEMU, -device vgpu-pci) on the same vgpud
#   3. submission rate: B_WARMUP_ROUNDS rounds not counted (the first
#      rounds of a fresh L1 run slower: TCG translates L2's and vgpud's
#      code), then B_ROUNDS rounds of 2 x B_SEGMENTS segments of
#      B_SEGMENT_MS each, in the order A B B A A B B A ..., A alternating
#      between the paths from round to round; L1 starts each segment with a
#      line on the guest's ttyS1 and reads its result from there, so only
#      one guest submits at a time. Per round: ratio = pci rate / mdev rate
#      (each rate the median of that path's segment rates in the round)
#   4. window swaps: the mdev guest quits; the pci guest allocates B_HOLD
#      (so the two guests were alike for step 3) and submits in
#      segments of B_SWAP_SEGMENT_MS while vgpu-tenant (local socket) allocates B_TENANT_SIZE,
#      B_SWAP_CYCLES times: vgpud evicts the pci guest's memory (it holds
#      the most) and its return pass brings it back, each time suspending
#      the guest's channel with a window swap. Then QMP qom-get of the
#      device's x-window-* properties, and from its trace (vgpu_pci_window_*)
#      how long each block waited for the vCPUs to be quiescent; the guest
#      checks its held memory
#   5. B_OUT_JSON (in the run dir): the figures as one JSON object
# Lines: "VGPU-BENCH-CHECK ok|FAIL: ...", "VGPU-BENCH: ..." (notes),
# "VGPU-BENCH-ROUND ..." (per round); exit status 1 if any check failed.
set -uo pipefail
{
: "${VMLINUZ:?not run by boot-l1.sh}" "${B_VGPUD:?}" "${B_VGPUCTL:?}" "${B_TENANT:?}"
: "${B_MDEV_KO:?}" "${B_L2_INITRD:?}" "${B_QEMU:?}" "${B_OUT_JSON:?}"
mdev_qemu=${B_MDEV_QEMU:-qemu-system-x86_64}
rounds=${B_ROUNDS:-21} segments=${B_SEGMENTS:-4} seg_ms=${B_SEGMENT_MS:-250}
warmup=${B_WARMUP_ROUNDS:-1} swap_seg_ms=${B_SWAP_SEGMENT_MS:-2000}
work=${B_WORK:-nop} vram=${B_VRAM:-256M} chunk=${B_CHUNK:-4M} hold=${B_HOLD:-192M}
tenant_size=${B_TENANT_SIZE:-128M} swap_cycles=${B_SWAP_CYCLES:-4}
l2_mem=${B_L2_MEM:-256M} boot_timeout=${B_L2_BOOT_TIMEOUT:-150}

sock=/tmp/vgpud/vgpud.sock ctl=/tmp/vgpud/control.sock fifo=/tmp/bench
types=/sys/class/mdev_bus/vgpu/mdev_supported_types type=vgpu-1G
failures=0 vgpud_pid='' uuid='' helper_pids=()
declare -A qemu_pid cmd_fd res_fd

CHECK_TAG=VGPU-BENCH
# shellcheck source=../lib/l1-checks.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/l1-checks.sh"
vgpuctl() { "$B_VGPUCTL" --socket "$ctl" "$@"; }

cleanup() {
	local v
	for v in "${!qemu_pid[@]}"; do
		[[ -n ${qemu_pid[$v]} ]] && kill "${qemu_pid[$v]}" 2>/dev/null
	done
	for v in "${helper_pids[@]}"; do kill "$v" 2>/dev/null; done
	[[ -n $vgpud_pid ]] && kill "$vgpud_pid" 2>/dev/null
	return 0
}
trap cleanup EXIT

finish() {
	cleanup
	echo "--- vgpud log (tail)"
	tail -n 15 vgpud.log 2>/dev/null | sed 's/^/    /'
	echo "--- dmesg (vgpu, mdev, vfio, kvm)"
	dmesg | grep -i 'vgpu\|mdev\|vfio\|kvm' | tail -n 15 | sed 's/^/    /'
	echo "VGPU-BENCH-L1-SECONDS=$(elapsed "$t_job")"
	((failures == 0)) && echo "VGPU-BENCH-L1-DONE"
	exit $((failures != 0))
}

t_job=$(now)
dmesg -n 1 2>/dev/null
# FIFOs and the QMP socket on tmpfs (a socket cannot be bound on 9p)
mkdir -p /tmp/vgpud "$fifo"

# --- 1. modules, vgpud ---------------------------------------------------------------
for m in vfio vfio_iommu_type1 mdev vfio_virqfd; do
	modprobe "$m" || { fail "modprobe $m"; finish; }
done
modprobe kvm_amd nested=1 || { fail "modprobe kvm_amd nested=1"; finish; }
insmod "$B_MDEV_KO" || { fail "insmod $B_MDEV_KO"; finish; }
cat >vgpud.conf <<EOF
# written by tests/vm/l1/vgpu-pci-bench.sh
[simgpu]
vram = $vram
[core]
chunk_size = $chunk
[daemon]
socket = $sock
control_socket = $ctl
mdev = on
[socket]
idle_timeout_ms = 0
EOF
"$B_VGPUD" --config "$PWD/vgpud.conf" 2>vgpud.log &
vgpud_pid=$!
if wait_for 30 grep -q 'ready:' vgpud.log && wait_for 10 test -d "$types/$type"; then
	pass "vgpud up with simgpu ($vram VRAM, $chunk chunks), its mdev transport and its local socket"
else
	fail "vgpud did not come up: $(tail -n 5 vgpud.log | tr '\n' '|')"
	finish
fi
uuid=$(cat /proc/sys/kernel/random/uuid)
echo "$uuid" >"$types/$type/create" || { fail "creating an mdev of type $type"; finish; }

# --- 2. the two L2 guests ---------------------------------------------------------
# start_l2 NAME QEMU DEVICE-ARGS...
start_l2() {
	local v=$1 q=$2 fd
	shift 2
	rm -f "$fifo/ctl-$v".{in,out}
	mkfifo "$fifo/ctl-$v.in" "$fifo/ctl-$v.out"
	timeout -k 5 900 "$q" -nodefaults -no-user-config -display none \
		-name "bench-$v" -accel kvm -cpu host -machine pc -m "$l2_mem" -smp 1 \
		-kernel "$VMLINUZ" -initrd "$B_L2_INITRD" \
		-append "console=ttyS0 panic=-1 loglevel=4 nokaslr random.trust_cpu=on rate.vm=$v rate.work=$work" \
		"$@" -serial stdio -serial "pipe:$fifo/ctl-$v" -no-reboot \
		</dev/null >"l2-$v.log" 2>&1 &
	qemu_pid[$v]=$!
	# read-write opens of the FIFOs never block
	exec {fd}<>"$fifo/ctl-$v.in"
	cmd_fd[$v]=$fd
	exec {fd}<>"$fifo/ctl-$v.out"
	res_fd[$v]=$fd
	say "L2 $v started: QEMU pid ${qemu_pid[$v]}, serial $PWD/l2-$v.log"
}
running() { [[ -n ${qemu_pid[$1]:-} ]] && kill -0 "${qemu_pid[$1]}" 2>/dev/null; }
# result NAME TIMEOUT PATTERN: the next line from guest NAME's ttyS1 that
# matches PATTERN (blocking reads, no polling: L1 has one vCPU, shared with
# the guests it measures)
result() {
	local line
	while IFS= read -r -t "$2" line <&"${res_fd[$1]}"; do
		line=${line%$'\r'}
		echo "$line" >>"l2-$1.ttyS1.log"
		# shellcheck disable=SC2053 # PATTERN is a glob
		if [[ $line == $3 ]]; then
			printf '%s\n' "$line"
			return 0
		fi
	done
	return 1
}
command_l2() { echo "$2" >&"${cmd_fd[$1]}"; }

t_l2=$(now)
start_l2 mdev "$mdev_qemu" -L /usr/share/qemu -L /usr/share/seabios -device "vfio-pci,sysfsdev=/sys/bus/mdev/devices/$uuid"
start_l2 pci "$B_QEMU" -L /usr/share/qemu -L /usr/share/seabios \
	-device "vgpu-pci,id=gpu0,socket=$sock,name=bench-pci" \
	-qmp "unix:$fifo/qmp-pci.sock,server=on,wait=off" \
	-trace 'vgpu_pci_window_*' -D "$PWD/l2-pci.trace"
for v in mdev pci; do
	if line=$(result "$v" "$boot_timeout" 'VGPU-SUBMIT-READY *'); then
		pass "L2 $v ready: $line"
	else
		fail "L2 $v not ready within ${boot_timeout}s (serial $PWD/l2-$v.log: $(tail -n 5 "l2-$v.log" | tr -d '\r' | tr '\n' '|'))"
		finish
	fi
done
say "both L2 guests ready after $(elapsed "$t_l2") s"
vgpuctl status >status-ready.txt 2>&1 && sed 's/^/    /' status-ready.txt

# --- 3. submission rate, interleaved -------------------------------------------
# segment NAME ID: one segment on guest NAME; prints "SUBMISSIONS NS"
segment() { # NAME ID [MS]
	local line
	command_l2 "$1" "run $2 ${3:-$seg_ms}"
	line=$(result "$1" 120 "VGPU-SUBMIT-RATE id=$2 *") || return 1
	sed -n 's/.* submissions=\([0-9]*\) ns=\([0-9]*\) .*/\1 \2/p' <<<"$line"
}
# median min max of the arguments
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s %s %s\n", m, v[1], v[NR] }'; }
# A path's rate in a round is the median of its segments' rates: a segment
# in which the host took the CPU from the whole L1 (other work on the host)
# says nothing about the device path, and the median leaves it out.
order=(0 1 1 0) paths=(mdev pci)
ratios=() rates_pci=() rates_mdev=()
t_rounds=$(now)
for ((r = -warmup; r < rounds; r++)); do
	seg_mdev=() seg_pci=()
	for ((s = 0; s < 2 * segments; s++)); do
		v=${paths[(r + warmup + order[s % 4]) % 2]}
		got=$(segment "$v" "r$r.s$s") || got=''
		read -r c n <<<"$got"
		if [[ -z ${n:-} ]]; then
			fail "L2 $v: no result for segment r$r.s$s (serial $PWD/l2-$v.log: $(tail -n 5 "l2-$v.log" | tr -d '\r' | tr '\n' '|'))"
			finish
		fi
		rate=$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.1f", c / (n / 1e9) }')
		if [[ $v == mdev ]]; then seg_mdev+=("$rate"); else seg_pci+=("$rate"); fi
	done
	read -r rm _ _ <<<"$(stats "${seg_mdev[@]}")"
	read -r rp _ _ <<<"$(stats "${seg_pci[@]}")"
	ratio=$(awk -v m="$rm" -v p="$rp" 'BEGIN { printf "%.4f", p / m }')
	if ((r < 0)); then
		say "warm-up round (not counted): mdev $rm/s, pci $rp/s"
		continue
	fi
	ratios+=("$ratio") rates_mdev+=("$rm") rates_pci+=("$rp")
	echo "VGPU-BENCH-ROUND $r first=${paths[(r + warmup) % 2]} mdev=$rm/s (segments ${seg_mdev[*]}) pci=$rp/s (segments ${seg_pci[*]}) ratio=$ratio"
done
say "$rounds rounds in $(elapsed "$t_rounds") s"
read -r ratio ratio_min ratio_max <<<"$(stats "${ratios[@]}")"
read -r rate_pci _ _ <<<"$(stats "${rates_pci[@]}")"
read -r rate_mdev _ _ <<<"$(stats "${rates_mdev[@]}")"
pass "submission rate through vgpu-pci / through the mdev: median $ratio ($ratio_min..$ratio_max) over $rounds rounds ($work; median rates: pci $rate_pci/s, mdev $rate_mdev/s)"
vgpuctl status --json >status-rate.json 2>&1

# --- 4. window swaps while the pci guest submits ---------------------------------------
command_l2 mdev quit
if line=$(result mdev 60 'VGPU-SUBMIT-DONE *'); then
	pass "L2 mdev quit: $line"
fi
qom() { # PROPERTY...: their values, one a line, from the pci guest's QEMU over QMP
	python3 - "$fifo/qmp-pci.sock" "$@" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
def call(cmd, args=None):
    f.write(json.dumps({"execute": cmd, **({"arguments": args} if args else {})}) + "\n")
    f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r or "error" in r:
            return r
json.loads(f.readline())  # greeting
call("qmp_capabilities")
for p in sys.argv[2:]:
    r = call("qom-get", {"path": "/machine/peripheral/gpu0", "property": p})
    print(r.get("return", "error"))
EOF
}
command_l2 pci "hold $hold"
if line=$(result pci 300 'VGPU-SUBMIT-HELD *'); then
	pass "L2 pci holds GPU memory for vgpud to relocate: $line"
else
	fail "L2 pci: no VGPU-SUBMIT-HELD after 'hold $hold' (serial $PWD/l2-pci.log: $(tail -n 5 l2-pci.log | tr -d '\r' | tr '\n' '|'))"
	finish
fi
props=(x-window-swaps x-window-blocked-ns-total x-window-blocked-ns-max x-window-waits x-window-wait-ns-total x-window-wait-ns-max)
# no process substitution: L1 has no /dev/fd
shown() { # VALUES...: PROPERTY=VALUE ...
	local i out='' vals=("$@")
	for i in "${!props[@]}"; do out+="${props[i]}=${vals[i]:-?} "; done
	echo "$out"
}
mapfile -t before <<<"$(qom "${props[@]}")"
say "before the swaps: $(shown "${before[@]}")"
(
	for ((c = 0; c < swap_cycles; c++)); do
		"$B_TENANT" --socket "$sock" --name "bench-tenant-$c" --workload alloc-leak \
			--size "$tenant_size" --buffer-size 32M --duration 1s >"tenant-$c.log" 2>&1 ||
			echo "tenant $c: exit status $?" >>tenants.failed
		sleep 1 # the return pass brings the guest's memory back meanwhile
	done
) &
tenants=$!
helper_pids+=("$tenants")
t_swap=$(now) k=0 swap_subs=0
while kill -0 "$tenants" 2>/dev/null; do
	got=$(segment pci "w$k" "$swap_seg_ms") || got=''
	read -r c n <<<"$got"
	if [[ -z ${n:-} ]]; then
		fail "L2 pci: no result for swap segment w$k (serial $PWD/l2-pci.log: $(tail -n 5 l2-pci.log | tr -d '\r' | tr '\n' '|'))"
		break
	fi
	swap_subs=$((swap_subs + c)) k=$((k + 1))
done
wait "$tenants"
say "$swap_cycles tenant cycles of $tenant_size in $(elapsed "$t_swap") s; the pci guest submitted $swap_subs times in $k segments meanwhile"
check "every vgpu-tenant run verified its data" test ! -e tenants.failed
sleep 1 # the last return pass
mapfile -t after <<<"$(qom "${props[@]}")"
say "after the swaps: $(shown "${after[@]}")"
vgpuctl status --json >status-swap.json 2>&1
vgpuctl stats bench-pci >stats-pci.json 2>&1
say "vgpud's view of the pci guest: $(jq -c '{evicted_bytes_total, suspensions, guest_blocked_ns}' stats-pci.json 2>/dev/null)"
declare -A d
for i in "${!props[@]}"; do
	d[${props[i]}]=$((${after[i]:-0} - ${before[i]:-0}))
done
# the maxima are over the device's life (nothing swapped before step 4)
blocked_max=${after[2]:-0} wait_max=${after[5]:-0}
swaps=${d[x-window-swaps]} waits=${d[x-window-waits]}
blocked_mean=$(awk -v t="${d[x-window-blocked-ns-total]}" -v n="$swaps" 'BEGIN { printf "%.0f", n ? t / n : 0 }')
wait_mean=$(awk -v t="${d[x-window-wait-ns-total]}" -v n="$waits" 'BEGIN { printf "%.0f", n ? t / n : 0 }')
# the trace: "window N bar2 ... quiescent after NS ns" per WINDOW_BLOCK
read -r quiet_n quiet_max quiet_mean <<<"$(sed -n 's/.*vgpu_pci_window_block .* quiescent after \([0-9]*\) ns.*/\1/p' l2-pci.trace |
	awk '{ n++; t += $1; if ($1 > m) m = $1 } END { printf "%d %d %.0f\n", n, m, n ? t / n : 0 }')"
say "window blocks in the trace: $quiet_n, the vCPUs quiescent (WINDOW_BLOCK acknowledged) after max $quiet_max ns, mean $quiet_mean ns"
# Each wait against its own swap: a waiting access completes once WINDOW_MAP
# has run, so its trace line follows that map's ("blocked N ns").
# The ones that waited longer go to longer-waits.txt with their swap's lines.
read -r waits_traced waits_longer <<<"$(awk '
	/vgpu_pci_window_block window/ { w = $3; blk[w] = $0 }
	/vgpu_pci_window_map window/ { w = $3; sub(/,$/, "", w); map[w] = $0; for (i = 1; i < NF; i++) if ($i == "blocked") b[w] = $(i + 1) }
	/vgpu_pci_window_wait window/ { w = $3; sub(/:$/, "", w); n++
		for (i = 1; i < NF; i++) if ($i == "waited" && (!(w in b) || $(i + 1) + 0 > b[w] + 0)) {
			longer++; printf "%s\n%s\n%s\n", blk[w], map[w], $0 >"longer-waits.txt" } }
	END { printf "%d %d\n", n, longer }' l2-pci.trace)"
[[ -s longer-waits.txt ]] && sed 's/^/VGPU-BENCH: a wait longer than its swap: /' longer-waits.txt
check "the pci guest's channel window was swapped while it submitted: $swaps swaps, windows blocked max $blocked_max ns, mean $blocked_mean ns; $waits guest accesses waited, max $wait_max ns, mean $wait_mean ns" \
	test "$swaps" -gt 0
# a figure (the goal: a guest waits no longer than the swap), not a check
say "guest waits against the swaps: wait max $wait_max ns, blocked max $blocked_max ns; of the $waits_traced traced waits, $waits_longer waited longer than their own swap"
check "the trace has every wait the device counted ($waits_traced traced, $waits counted)" \
	test "$waits_traced" = "$waits"
command_l2 pci quit
if line=$(result pci 120 'VGPU-SUBMIT-DONE *'); then
	check "L2 pci: its held memory came through the swaps intact: $line" grep -q ' changed=0' <<<"$line"
else
	fail "L2 pci: no VGPU-SUBMIT-DONE after quit"
fi
for v in mdev pci; do
	wait_for 60 bash -c "! kill -0 ${qemu_pid[$v]} 2>/dev/null"
	grep -a '^VGPU-RATE-L2 ' "l2-$v.log" | tr -d '\r' |
		sed 's/^VGPU-RATE-L2 ok /VGPU-BENCH-CHECK ok: L2 /; s/^VGPU-RATE-L2 FAIL /VGPU-BENCH-CHECK FAIL: L2 /'
	failures=$((failures + $(grep -ac '^VGPU-RATE-L2 FAIL' "l2-$v.log")))
	check "L2 $v finished (VGPU-L2-STATUS=0)" grep -aq '^VGPU-L2-STATUS=0' "l2-$v.log"
	qemu_pid[$v]=''
done

# --- 5. the figures --------------------------------------------------------------
jq -n --argjson r "$ratio" --argjson rmin "$ratio_min" --argjson rmax "$ratio_max" \
	--argjson rounds "$rounds" --argjson pci "$rate_pci" --argjson mdev "$rate_mdev" \
	--arg work "$work" --argjson seg "$seg_ms" --argjson segs "$segments" \
	--argjson swaps "$swaps" --argjson bmax "$blocked_max" --argjson bmean "$blocked_mean" \
	--argjson waits "$waits" --argjson wmax "$wait_max" --argjson wmean "$wait_mean" \
	--argjson qmax "$quiet_max" --argjson qmean "$quiet_mean" --argjson warm "$warmup" \
	--argjson longer "$waits_longer" --arg mq "$mdev_qemu" \
	'{vgpu_pci_submit_ratio: $r, vgpu_pci_submit_ratio_min: $rmin, vgpu_pci_submit_ratio_max: $rmax,
	  vgpu_pci_submit_rounds: $rounds, vgpu_pci_submit_work: $work,
	  vgpu_pci_submit_segment_ms: $seg, vgpu_pci_submit_segments_per_round: (2 * $segs),
	  vgpu_pci_submit_rate: $pci, vgpu_pci_mdev_submit_rate: $mdev,
	  vgpu_pci_window_swaps: $swaps, vgpu_pci_window_blocked_ns_max: $bmax,
	  vgpu_pci_window_blocked_ns_mean: $bmean, vgpu_pci_window_waits: $waits,
	  vgpu_pci_window_wait_ns_max: $wmax, vgpu_pci_window_wait_ns_mean: $wmean,
	  vgpu_pci_window_waits_longer_than_swap: $longer,
	  vgpu_pci_window_quiescent_ns_max: $qmax, vgpu_pci_window_quiescent_ns_mean: $qmean,
	  vgpu_pci_submit_warmup_rounds: $warm,
	  vgpu_pci_bench_setup: ("nested: L1 TCG, both L2 guests -accel kvm, one vgpud; mdev guest on " + $mq)}' >"$B_OUT_JSON" ||
	fail "writing $B_OUT_JSON"
check "mdev $uuid removed" bash -c "echo 1 >/sys/bus/mdev/devices/$uuid/remove"
kill "$vgpud_pid"
wait "$vgpud_pid"
vgpud_pid=''
check "no error in vgpud's log" bash -c '! grep -q " error: " vgpud.log'
finish
exit
}
