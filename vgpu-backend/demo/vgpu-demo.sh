#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# vgpu-demo.sh - the main demo (./vgpu-dev demo): three VMs share a small GPU
# whose memory they oversubscribe more than twice over.
#
#   1. vgpud starts on a 512 MiB simgpu with a private runtime directory
#      (mktemp: both sockets, the logs and the tenants' results live there).
#   2. Three vgpu-tenant processes ("VMs without VMs": they attach over the
#      local transport exactly as a VM's vGPU device would) run stream,
#      stencil and gups with weights 1:2:1. Their data is ~2.4x the VRAM, so
#      vgpud evicts chunks to host memory (GPUswap) and returns them when
#      memory is freed. The vgpuctl status table is shown while they run.
#   3. Each workload runs again, the same amount of work (same size, seed
#      and iteration count), alone on an idle vgpud of the same size: the
#      reference for the modeled slowdown.
#   4. Summary: per VM resident/evicted at the steady state (all three VMs
#      holding all their memory, VRAM full), the fairness error in chunks
#      (|resident - fair share| / chunk; the fair share is vgpud's water
#      filling of the VRAM by weight), the modeled slowdown (the VM's GPU
#      time on simgpu's modeled clock, compute + copy engines, shared vs.
#      alone; deterministic, independent of the host's load) and the
#      integrity verdict (every buffer of every run checksummed on the GPU
#      and compared with the CPU reference by the tenant itself).
#
# The modeled runtime is per VM in vgpud (vgpuctl stats VM) and disappears
# when the VM detaches, so tenants run with --linger: they print their
# result, stay attached holding nothing, and the demo reads their figures
# before it lets them go.
#
# Exit status: 0 all data verified; 1 a tenant's data did not verify or a
# tenant failed; 2 the demo could not run (binaries missing, vgpud did not
# start); 64 bad usage. Every process it starts is stopped and the runtime
# directory removed on every exit path, Ctrl-C included.
#
# Needs: the built vgpud, vgpuctl and vgpu-tenant, jq and coreutils.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
	cat <<'EOF'
Usage: vgpu-backend/demo/vgpu-demo.sh [--quick] [--gpu GPU] [--build-dir DIR] [--interval SECS] [--keep]

Three tenants (stream, stencil, gups; weights 1:2:1) oversubscribe a 512 MiB
simgpu through vgpud about 2.4 times; shows the live vgpuctl table, then a
summary: resident/evicted per VM, fairness error in chunks, modeled slowdown
against running alone, and whether every tenant's data verified.

  --quick            a 128 MiB GPU and smaller, shorter workloads (~10 s;
                     the meson test 'demo-quick' runs this)
  --gpu GPU          the GPU vgpud shares: simgpu (default), cuda or cuda:N (an
                     NVIDIA GPU: the same VRAM size is taken from it as a
                     budget, and GPU times are measured, not modeled)
  --build-dir DIR    where the binaries are (default: build/plain); $VGPUD,
                     $VGPUCTL and $VGPU_TENANT override single binaries
  --interval SECS    refresh the table every SECS (default 2; quick 1)
  --keep             keep the runtime directory (logs, results, snapshots)
                     for inspection; the processes are stopped all the same
  -h, --help         this text

Plain output (no redraw, no bold) when stdout is not a terminal or CI=true.
Exit status: 0 all data verified, 1 an integrity check failed, 2 the demo
could not run, 64 bad usage.
EOF
}

# ------------------------------------------------------------ options
QUICK=0
KEEP=0
GPU=simgpu
BUILD_DIR="$ROOT/build/plain"
INTERVAL=""
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--keep) KEEP=1 ;;
	--gpu)
		[ $# -ge 2 ] || { echo "vgpu-demo: --gpu wants simgpu, cuda or cuda:N" >&2; exit 64; }
		GPU="$2"
		shift ;;
	--build-dir)
		[ $# -ge 2 ] || { echo "vgpu-demo: --build-dir wants a directory" >&2; exit 64; }
		BUILD_DIR="$2"
		shift ;;
	--interval)
		if [ $# -lt 2 ] || ! [[ "$2" =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
			echo "vgpu-demo: --interval wants seconds, e.g. 2" >&2
			exit 64
		fi
		INTERVAL="$2"
		shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "vgpu-demo: unknown argument '$1'; try --help" >&2; exit 64 ;;
	esac
	shift
done

VGPUD="${VGPUD:-$BUILD_DIR/vgpu-backend/daemon/vgpud}"
VGPUCTL="${VGPUCTL:-$BUILD_DIR/vgpu-backend/ctl/vgpuctl}"
VGPU_TENANT="${VGPU_TENANT:-$BUILD_DIR/guest-driver/tools/vgpu-tenant}"

# ------------------------------------------------------------ scenario
# One tenant per line: name workload size profile(weight) iterations start.
# Each alone fits in the VRAM; together they hold more than twice of it.
# Sizes are multiples of 2 x BUFFER, so every workload allocates exactly its
# size (stencil allocates pairs of grids).
#
# iterations: a number, or "rest": iterate until the tenants with a number
# are done (the demo then stops it with SIGTERM; it verifies and frees as
# usual). stencil and gups verify by replaying every iteration on the CPU,
# so they get a number; stream verifies in one pass whatever it did, and
# keeps the GPU shared while the others run.
#
# start: "now", or "later": once the tenants before it hold all their
# memory. While a VM is the victim of an eviction vgpud drains its channels
# (waits for the work it has queued: up to two iterations), and gups
# iterations are long; allocating last, gups takes its share from the
# others instead of making their allocations wait on its queue.
if [ "$QUICK" = 1 ]; then
	VRAM=128M
	CHUNK=2M
	BUFFER=8M
	TENANTS=(
		"vm-stream  stream  120M vgpu-1G rest now"
		"vm-stencil stencil 96M  vgpu-2G 80   now"
		"vm-gups    gups    48M  vgpu-1G 3    later"
	)
	INTERVAL="${INTERVAL:-1}"
	DEADLINE=90
else
	VRAM=512M
	CHUNK=4M
	BUFFER=32M
	TENANTS=(
		"vm-stream  stream  480M vgpu-1G rest now"
		"vm-stencil stencil 448M vgpu-2G 32   now"
		"vm-gups    gups    288M vgpu-1G 3    later"
	)
	INTERVAL="${INTERVAL:-2}"
	DEADLINE=180
fi
# Small channel rings. When vgpud resumes a VM's channel after moving its
# memory it refills the ring with NOP entries until GP_GET wraps around
# (docs/DESIGN.md §3.4), and simgpu's PFIFO serves one entry per channel per round,
# between the other VMs' kernels: a resume costs about ring-size rounds.
# With vgpud's default of 512 entries an eviction under load takes seconds.
GPFIFO_ENTRIES=${VGPU_DEMO_GPFIFO_ENTRIES:-32}
SAMPLE_INTERVAL=0.5 # JSON snapshots (for the steady state) this often
LINGER=300s         # tenants stay attached until the demo has their figures

# ------------------------------------------------------------ output
FANCY=0
if [ -t 1 ] && [ "${CI:-}" != "true" ]; then
	FANCY=1
fi
bold() {
	if [ "$FANCY" = 1 ]; then printf '\033[1m%s\033[0m\n' "$*"; else printf '%s\n' "$*"; fi
}
say() { printf '%s\n' "$*"; }
fail_setup() { printf 'vgpu-demo: %s\n' "$*" >&2; exit 2; }

# Bytes as B/KiB/MiB/GiB.
human() {
	awk -v b="$1" 'BEGIN {
		if (b >= 1073741824) printf "%.2f GiB", b / 1073741824;
		else if (b >= 1048576) printf "%.0f MiB", b / 1048576;
		else if (b >= 1024) printf "%.0f KiB", b / 1024;
		else printf "%d B", b }'
}
# Nanoseconds as us/ms/s.
human_ns() {
	awk -v n="$1" 'BEGIN {
		if (n >= 1e9) printf "%.2f s", n / 1e9;
		else if (n >= 1e6) printf "%.1f ms", n / 1e6;
		else printf "%.0f us", n / 1e3 }'
}
now_ns() { date +%s%N; }
seconds_since() { awk -v s="$1" -v n="$(now_ns)" 'BEGIN { printf "%.1f", (n - s) / 1e9 }'; }

# ------------------------------------------------------------ checks
for bin in "$VGPUD" "$VGPUCTL" "$VGPU_TENANT"; do
	[ -x "$bin" ] || fail_setup "$bin is missing: build first (./vgpu-dev build, or meson compile -C DIR and pass --build-dir DIR)"
done
for tool in jq numfmt awk mktemp; do
	command -v "$tool" >/dev/null 2>&1 ||
		fail_setup "$tool is missing: install it (apt-get install jq coreutils gawk, or ./vgpu-dev deps as root)"
done

# ------------------------------------------------------------ processes
PROGRAM=vgpu-demo
# shellcheck source=vgpu-backend/demo/processes.sh
. "$ROOT/vgpu-backend/demo/processes.sh"
trap 'echo; echo "vgpu-demo: interrupted; stopping everything" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-demo.XXXXXX")" || fail_setup "cannot create a temporary directory"
: >"$RUN_DIR/vgpud.conf" # not /etc/vgpud/vgpud.conf: built-in profiles, flags only
START_NS=$(now_ns)

# ------------------------------------------------------------ vgpud
# start_vgpud NAME: a vgpud with sockets $RUN_DIR/NAME.sock and
# $RUN_DIR/NAME.control.sock, log $RUN_DIR/NAME.log; sets DAEMON_PID,
# DAEMON_SOCKET and DAEMON_CONTROL once it answers.
start_vgpud() {
	local name="$1" i
	DAEMON_SOCKET="$RUN_DIR/$name.sock"
	DAEMON_CONTROL="$RUN_DIR/$name.control.sock"
	"$VGPUD" --config "$RUN_DIR/vgpud.conf" --gpu "$GPU" --vram "$VRAM" --chunk-size "$CHUNK" \
		--allowed-profiles '*' --socket "$DAEMON_SOCKET" --control-socket "$DAEMON_CONTROL" \
		--log-level warn 2>"$RUN_DIR/$name.log" &
	DAEMON_PID=$!
	PIDS+=("$DAEMON_PID")
	for ((i = 0; i < 100; i++)); do
		"$VGPUCTL" --socket "$DAEMON_CONTROL" health >/dev/null 2>&1 && return 0
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			cat "$RUN_DIR/$name.log" >&2
			fail_setup "vgpud ($name) exited at start (its log is above)"
		fi
		sleep 0.1
	done
	fail_setup "vgpud ($name) did not answer on $DAEMON_CONTROL within 10 s"
}

# ------------------------------------------------------------ tenants
# Per tenant index i: NAME WORKLOAD SIZE (BYTES) PROFILE CAP START.
NAME=() WORKLOAD=() SIZE=() BYTES=() PROFILE=() CAP=() START=()
for line in "${TENANTS[@]}"; do
	read -r n w s p c st <<<"$line"
	NAME+=("$n") WORKLOAD+=("$w") SIZE+=("$s") PROFILE+=("$p") CAP+=("$c") START+=("$st")
	BYTES+=("$(numfmt --from=iec "$s")")
done
COUNT=${#NAME[@]}

# start_tenant PHASE I SOCKET ITERATIONS|"" [DURATION]: its result goes to
# $RUN_DIR/PHASE.I.json, its stderr to PHASE.I.err.
declare -A TENANT_PID=() MODELED=() EXIT_STATUS=() FINISHED=()
start_tenant() {
	local phase="$1" i="$2" socket="$3" iterations="$4" duration="${5:-}"
	local args=(--socket "$socket" --name "${NAME[$i]}" --profile "${PROFILE[$i]}"
		--workload "${WORKLOAD[$i]}" --size "${SIZE[$i]}" --buffer-size "$BUFFER"
		--seed $((i + 1)) --gpfifo-entries "$GPFIFO_ENTRIES" --json --linger "$LINGER")
	[ -n "$iterations" ] && args+=(--iterations "$iterations")
	[ -n "$duration" ] && args+=(--duration "$duration")
	"$VGPU_TENANT" "${args[@]}" >"$RUN_DIR/$phase.$i.json" 2>"$RUN_DIR/$phase.$i.err" &
	TENANT_PID[$phase.$i]=$!
	PIDS+=("$!")
}

# Has the tenant printed its result? (It then lingers, attached.)
tenant_reported() { # phase i
	[ -s "$RUN_DIR/$1.$2.json" ] && jq -e 'has("verified")' "$RUN_DIR/$1.$2.json" >/dev/null 2>&1
}

# collect_tenant PHASE I CONTROL: once the tenant reported (or died), read
# its VM's modeled runtime from vgpud, let it go and keep its exit status.
# 1 while it is still running.
collect_tenant() {
	local phase="$1" i="$2" control="$3" pid="${TENANT_PID[$1.$2]}"
	if tenant_reported "$phase" "$i"; then
		MODELED[$phase.$i]=$("$VGPUCTL" --socket "$control" stats "${NAME[$i]}" 2>/dev/null |
			jq -r '.debug_modeled_runtime_ns // empty')
	elif kill -0 "$pid" 2>/dev/null; then
		return 1
	fi
	reap "$pid" 10
	EXIT_STATUS[$phase.$i]=$REAPED_STATUS
	FINISHED[$phase.$i]=1
	return 0
}

# ------------------------------------------------------------ live table
LAST_LINES=0
show_table() { # control
	local out lines
	out="$("$VGPUCTL" --socket "$1" status 2>&1)"
	if [ "$FANCY" = 1 ]; then
		# Redraw in place: up over the previous table, clear to the end.
		[ "$LAST_LINES" -gt 0 ] && printf '\033[%dA\033[J' "$LAST_LINES"
		lines=$(printf '%s\n' "$out" | wc -l)
		printf '\033[1mvgpuctl status\033[0m  t=%ss\n%s\n' "$(seconds_since "$START_NS")" "$out"
		LAST_LINES=$((lines + 1))
	else
		printf 'vgpuctl status  t=%ss\n%s\n\n' "$(seconds_since "$START_NS")" "$out"
	fi
}

# ================================================================ setup
bold "vgpu demo: three VMs oversubscribe one $VRAM GPU through vgpud$([ "$QUICK" = 1 ] && echo ' (quick)')"
say "runtime directory $RUN_DIR (sockets, logs; removed at exit)"
say "\$ vgpud --gpu $GPU --vram $VRAM --chunk-size $CHUNK --socket $RUN_DIR/shared.sock --control-socket $RUN_DIR/shared.control.sock"
start_vgpud shared
SHARED_PID=$DAEMON_PID
SHARED_SOCKET=$DAEMON_SOCKET
SHARED_CONTROL=$DAEMON_CONTROL
GPU_JSON="$("$VGPUCTL" --socket "$SHARED_CONTROL" status --json)" || fail_setup "vgpuctl status failed"
VRAM_BYTES=$(jq -r '.gpu.vram' <<<"$GPU_JSON")
CHUNK_BYTES=$(jq -r '.gpu.chunk' <<<"$GPU_JSON")
say "$GPU: $(human "$VRAM_BYTES") of VRAM for VMs, $(human "$CHUNK_BYTES") chunks, eviction policy $(jq -r '.gpu.policy' <<<"$GPU_JSON")"
say
say "tenants (vgpu-tenant: a VM without a VM, attached over the local transport):"
TOTAL_ASKED=0
for ((i = 0; i < COUNT; i++)); do
	if [ "${CAP[$i]}" = rest ]; then
		what="iterates until the others are done"
	else
		what="${CAP[$i]} iterations"
	fi
	[ "${START[$i]}" = later ] && what+=", starts once the others hold their memory"
	printf '  %-11s %-8s %5s  %s (weight %s)  %s\n' "${NAME[$i]}" "${WORKLOAD[$i]}" "${SIZE[$i]}" \
		"${PROFILE[$i]}" \
		"$("$VGPUCTL" --socket "$SHARED_CONTROL" types --json | jq -r --arg p "${PROFILE[$i]}" '.profiles[] | select(.name == $p) | .weight')" \
		"$what"
	TOTAL_ASKED=$((TOTAL_ASKED + BYTES[i]))
done
say "  together $(human "$TOTAL_ASKED") = $(awk -v a="$TOTAL_ASKED" -v v="$VRAM_BYTES" 'BEGIN { printf "%.2f", a / v }') x the VRAM"
say

# ================================================================ phase 1
bold "phase 1: the three together on one vgpud"
SNAPSHOTS="$RUN_DIR/snapshots.jsonl"
: >"$SNAPSHOTS"
NEXT=0 # tenants started so far

# Start the next tenants: all "now" ones at once; a "later" one once every
# tenant started before it holds all its memory (or after 20 s regardless).
start_next_tenants() {
	local j ready=1
	[ "$NEXT" -lt "$COUNT" ] || return 0
	if [ "$NEXT" -gt 0 ] && [ "${START[$NEXT]}" = later ]; then
		for ((j = 0; j < NEXT; j++)); do
			[ -n "${FINISHED[shared.$j]:-}" ] && continue
			tail -1 "$SNAPSHOTS" | jq -e --arg n "${NAME[$j]}" --argjson b "${BYTES[$j]}" \
				'any(.vms[]; .name == $n and .allocated == $b)' >/dev/null 2>&1 || ready=0
		done
		[ "$ready" = 1 ] || [ $(($(now_ns) - PHASE_START)) -ge $((20 * 1000000000)) ] || return 0
	fi
	start_shared_tenant "$NEXT"
	NEXT=$((NEXT + 1))
	while [ "$NEXT" -lt "$COUNT" ] && [ "${START[$NEXT]}" != later ]; do
		start_shared_tenant "$NEXT"
		NEXT=$((NEXT + 1))
	done
}
start_shared_tenant() { # i
	if [ "${CAP[$1]}" = rest ]; then
		start_tenant shared "$1" "$SHARED_SOCKET" "" "${DEADLINE}s"
	else
		start_tenant shared "$1" "$SHARED_SOCKET" "${CAP[$1]}"
	fi
}

# Once every tenant with an iteration count is done, stop the "rest" ones.
declare -A TOLD_TO_STOP=()
stop_rest_tenants() {
	local j
	[ "$NEXT" -eq "$COUNT" ] || return 0
	for ((j = 0; j < COUNT; j++)); do
		[ "${CAP[$j]}" = rest ] || [ -n "${FINISHED[shared.$j]:-}" ] || return 0
	done
	for ((j = 0; j < COUNT; j++)); do
		if [ "${CAP[$j]}" = rest ] && [ -z "${FINISHED[shared.$j]:-}" ] &&
			[ -z "${TOLD_TO_STOP[$j]:-}" ]; then
			kill -TERM "${TENANT_PID[shared.$j]}" 2>/dev/null
			TOLD_TO_STOP[$j]=1
		fi
	done
}

PHASE_START=$(now_ns)
INTERVAL_NS=$(awk -v s="$INTERVAL" 'BEGIN { printf "%d", s * 1e9 }')
next_table=0
start_next_tenants
while :; do
	now=$(now_ns)
	"$VGPUCTL" --socket "$SHARED_CONTROL" status --json 2>/dev/null |
		jq -c --arg t "$(seconds_since "$START_NS")" '. + {t: ($t | tonumber)}' >>"$SNAPSHOTS" 2>/dev/null
	if [ "$now" -ge "$next_table" ]; then
		show_table "$SHARED_CONTROL"
		next_table=$((now + INTERVAL_NS))
	fi
	start_next_tenants
	left=$((COUNT - NEXT))
	for ((i = 0; i < NEXT; i++)); do
		[ -n "${FINISHED[shared.$i]:-}" ] && continue
		collect_tenant shared "$i" "$SHARED_CONTROL" || left=$((left + 1))
	done
	[ "$left" = 0 ] && break
	stop_rest_tenants
	if [ $(((now - PHASE_START) / 1000000000)) -ge "$DEADLINE" ]; then
		say "vgpu-demo: the tenants did not finish within ${DEADLINE}s; stopping them" >&2
		for ((i = 0; i < NEXT; i++)); do
			[ -n "${FINISHED[shared.$i]:-}" ] || kill -TERM "${TENANT_PID[shared.$i]}" 2>/dev/null
		done
		NEXT=$COUNT # start no more
	fi
	sleep "$SAMPLE_INTERVAL"
done
SHARED_SECONDS=$(seconds_since "$PHASE_START")
GPU_JSON="$("$VGPUCTL" --socket "$SHARED_CONTROL" status --json 2>/dev/null)"
HEALTH_JSON="$("$VGPUCTL" --socket "$SHARED_CONTROL" health --json --check 2>/dev/null)"
reap "$SHARED_PID" 10
SHARED_VGPUD_STATUS=$REAPED_STATUS
say "all three done after ${SHARED_SECONDS}s"
say "vgpud moved $(jq -r '.gpu.chunks_evicted' <<<"$GPU_JSON") chunks to host memory (and placed $(jq -r '.gpu.chunks_placed_on_host' <<<"$GPU_JSON") there at allocation), returned $(jq -r '.gpu.chunks_returned' <<<"$GPU_JSON") to VRAM"
say "after the tenants left: $(jq -r '.gpu.vms' <<<"$GPU_JSON") VMs, $(human "$(jq -r '.gpu.free' <<<"$GPU_JSON")") of VRAM free, $(human "$(jq -r '.gpu.host_used' <<<"$GPU_JSON")") of host memory in use; health $(jq -r '.status // "unknown"' <<<"$HEALTH_JSON"), invariants $(jq -r '.invariants // "unknown"' <<<"$HEALTH_JSON"); vgpud stopped with status $SHARED_VGPUD_STATUS"
say

# ================================================================ phase 2
bold "phase 2: the same work again, each tenant alone on an idle vgpud of the same size"
declare -A ALONE_CONTROL=() ALONE_PID=()
for ((i = 0; i < COUNT; i++)); do
	iterations=$(jq -r '.iterations' "$RUN_DIR/shared.$i.json" 2>/dev/null)
	[[ "$iterations" =~ ^[0-9]+$ ]] && [ "$iterations" -gt 0 ] || iterations=1
	start_vgpud "alone$i"
	ALONE_CONTROL[$i]=$DAEMON_CONTROL
	ALONE_PID[$i]=$DAEMON_PID
	start_tenant alone "$i" "$DAEMON_SOCKET" "$iterations"
	say "  ${NAME[$i]}: ${WORKLOAD[$i]} ${SIZE[$i]}, $iterations iterations (as in phase 1)"
done
PHASE_START=$(now_ns)
while :; do
	left=0
	for ((i = 0; i < COUNT; i++)); do
		[ -n "${FINISHED[alone.$i]:-}" ] && continue
		collect_tenant alone "$i" "${ALONE_CONTROL[$i]}" || left=$((left + 1))
	done
	[ "$left" = 0 ] && break
	if [ $((($(now_ns) - PHASE_START) / 1000000000)) -ge "$DEADLINE" ]; then
		say "vgpu-demo: the alone runs did not finish within ${DEADLINE}s; stopping them" >&2
		for ((i = 0; i < COUNT; i++)); do
			[ -n "${FINISHED[alone.$i]:-}" ] || kill -TERM "${TENANT_PID[alone.$i]}" 2>/dev/null
		done
	fi
	sleep 0.2
done
for ((i = 0; i < COUNT; i++)); do reap "${ALONE_PID[$i]}" 10; done
say "  done after $(seconds_since "$PHASE_START")s"
say

# ================================================================ summary
# The steady state: the last snapshot in which every VM held all the memory
# it ended up with and the VRAM was full (nothing to return, nothing to
# evict).
ALLOCATED_JSON="{"
for ((i = 0; i < COUNT; i++)); do
	a=$(jq -r '.bytes_allocated // 0' "$RUN_DIR/shared.$i.json" 2>/dev/null)
	ALLOCATED_JSON+="$([ "$i" -gt 0 ] && echo ,)\"${NAME[$i]}\": ${a:-0}"
done
ALLOCATED_JSON+="}"
STEADY="$(jq -c --argjson want "$ALLOCATED_JSON" --argjson n "$COUNT" '
	select((.vms | length) == $n
	       and .gpu.free < .gpu.chunk
	       and all(.vms[]; .allocated > 0 and .allocated == $want[.name]))' \
	"$SNAPSHOTS" 2>/dev/null | tail -1)"

bold "summary"
TOTAL_ALLOCATED=$(jq -r '[.[]] | add' <<<"$ALLOCATED_JSON")
say "oversubscription: $(human "$TOTAL_ALLOCATED") allocated on $(human "$VRAM_BYTES") of VRAM = $(awk -v a="$TOTAL_ALLOCATED" -v v="$VRAM_BYTES" 'BEGIN { printf "%.2f", a / v }') x"
if [ -n "$STEADY" ]; then
	say "memory at the steady state (t=$(jq -r '.t' <<<"$STEADY")s: all three hold all their memory, VRAM full):"
	printf '  %-11s %6s %10s %10s %10s %10s %15s\n' VM WEIGHT ALLOCATED RESIDENT EVICTED "FAIR SHARE" "FAIRNESS ERROR"
	MAX_ERROR=0
	while IFS=$'\t' read -r name weight allocated resident evicted fair; do
		err=$(awk -v r="$resident" -v f="$fair" -v c="$CHUNK_BYTES" 'BEGIN { d = r - f; if (d < 0) d = -d; printf "%.2f", d / c }')
		printf '  %-11s %6s %10s %10s %10s %10s %8s chunks\n' "$name" "$weight" "$(human "$allocated")" \
			"$(human "$resident")" "$(human "$evicted")" "$(human "$fair")" "$err"
		MAX_ERROR=$(awk -v a="$MAX_ERROR" -v b="$err" 'BEGIN { print (b > a ? b : a) }')
	done < <(jq -r '.vms[] | [.name, .weight, .allocated, .resident, .evicted, .fair_share] | @tsv' <<<"$STEADY")
	say "fairness: largest error $MAX_ERROR chunks of $(human "$CHUNK_BYTES") (|resident - fair share|); every VM within one chunk: $(awk -v e="$MAX_ERROR" 'BEGIN { print (e <= 1.0 ? "yes" : "NO") }')"
else
	say "memory: no snapshot caught all three VMs holding all their memory with the VRAM full (see the tables above)"
	say "fairness: not measured"
fi
say

if [ "$GPU" = simgpu ]; then
	say "modeled GPU time of each VM over its whole run (simgpu's clock; compute + copy engines):"
else
	say "GPU time of each VM over its whole run (measured with CUDA events; compute + copy engines):"
fi
printf '  %-11s %-8s %10s %10s %10s %9s %10s  %s\n' VM WORKLOAD ITERATIONS SHARED ALONE SLOWDOWN CHECKSUMS INTEGRITY
INTEGRITY_OK=1
RUNS=0
CHECKSUMS=0
WRONG=0
SLOWDOWNS=""
for ((i = 0; i < COUNT; i++)); do
	failed="" message=""
	for phase in shared alone; do
		f="$RUN_DIR/$phase.$i.json"
		RUNS=$((RUNS + 1))
		if ! tenant_reported "$phase" "$i"; then
			failed+="${failed:+; }$phase: no result, exit ${EXIT_STATUS[$phase.$i]:-?}"
			continue
		fi
		read -r verified checksums mismatches < <(jq -r '[.verified, .checksums, .mismatches] | @tsv' "$f")
		CHECKSUMS=$((CHECKSUMS + checksums))
		WRONG=$((WRONG + mismatches))
		if [ "$verified" != true ] || [ "$mismatches" != 0 ] || [ "$checksums" = 0 ] ||
			[ "${EXIT_STATUS[$phase.$i]:-1}" != 0 ]; then
			failed+="${failed:+; }$phase: $mismatches of $checksums checksums wrong, exit ${EXIT_STATUS[$phase.$i]:-?}"
			[ -n "$message" ] || message=$(jq -r '.message // ""' "$f")
		fi
	done
	if [ -n "$failed" ]; then
		verdict="FAILED ($failed)${message:+: $message}"
		INTEGRITY_OK=0
	else
		verdict="ok"
	fi
	shared_ns="${MODELED[shared.$i]:-}"
	alone_ns="${MODELED[alone.$i]:-}"
	if [ -n "$shared_ns" ] && [ -n "$alone_ns" ] && [ "$alone_ns" -gt 0 ]; then
		slowdown=$(awk -v s="$shared_ns" -v a="$alone_ns" 'BEGIN { printf "%.2fx", s / a }')
		shared_h=$(human_ns "$shared_ns")
		alone_h=$(human_ns "$alone_ns")
	else
		slowdown="-" shared_h="-" alone_h="-"
	fi
	SLOWDOWNS+="${SLOWDOWNS:+, }${NAME[$i]} $slowdown"
	printf '  %-11s %-8s %10s %10s %10s %9s %10s  %s\n' "${NAME[$i]}" "${WORKLOAD[$i]}" \
		"$(jq -r '.iterations // "-"' "$RUN_DIR/shared.$i.json" 2>/dev/null || echo -)" \
		"$shared_h" "$alone_h" "$slowdown" \
		"$(jq -r '.checksums // "-"' "$RUN_DIR/shared.$i.json" 2>/dev/null || echo -)" "$verdict"
done
say "slowdown against running alone (modeled): $SLOWDOWNS"
say

if [ "$INTEGRITY_OK" = 1 ]; then
	bold "integrity: ok - all $RUNS runs verified every buffer ($CHECKSUMS checksums, $WRONG wrong)"
	say "demo finished in $(seconds_since "$START_NS")s"
	exit 0
fi
bold "integrity: FAILED - $WRONG of $CHECKSUMS checksums wrong, or a tenant failed (see above)"
for ((i = 0; i < COUNT; i++)); do
	for phase in shared alone; do
		if [ -s "$RUN_DIR/$phase.$i.err" ]; then
			say "--- ${NAME[$i]} ($phase run) stderr:"
			tail -5 "$RUN_DIR/$phase.$i.err"
		fi
	done
done
if [ -s "$RUN_DIR/shared.log" ]; then
	say "--- vgpud log (last lines):"
	tail -20 "$RUN_DIR/shared.log"
fi
say "demo finished in $(seconds_since "$START_NS")s"
exit 1
