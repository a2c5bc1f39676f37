#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# hostile-tenant.sh - a hostile VM next to two honest ones on one vgpud.
#
#   1. vgpud starts with a private runtime directory (mktemp: sockets, log,
#      the tenants' results) on $VGPU_GPU (default simgpu; cuda or cuda:N for
#      an NVIDIA GPU), 128 MiB of VRAM, 2 MiB chunks. Every size below is a
#      multiple of 2 MiB, so the same run works on cudagpu's 2 MiB pages.
#   2. Two honest tenants: vm-stream (stream 80M, weight 1) and vm-gups
#      (gups 48M, weight 2). Once both hold their memory the hostile one
#      starts: vm-escape (vgpu-tenant --workload escape, 16M). Together
#      they hold more than the VRAM, so vgpud evicts chunks to host memory
#      while the escape runs. The escape tries (a) a STREAM past the end of
#      its last buffer, (b) a FILL far from anything it allocated, (c) a COPY
#      to addresses it does not own, each on a fresh channel. (simgpu runs a
#      kernel page by page, so (a) streams the escape's own last buffer up
#      to the fault at its end; the escape's verification allows exactly
#      that. cudagpu refuses the launch before it runs.)
#   3. Checks: every escape was refused (the GPU killed that channel) and
#      the escape tenant's own data verified (exit 0); both honest tenants
#      verified (exit 0); vgpud counted channel errors for vm-escape only
#      and its log names vm-escape, and no other VM, in its channel error
#      lines; the tenants together held more than the VRAM and chunks went
#      to host memory; afterwards vgpuctl health says ok with invariants
#      ok, and vgpud stops with status 0.
#
# Usage: tests/demo/hostile-tenant.sh [--build-dir DIR] [--gpu GPU] [--keep]
#   --build-dir DIR  where the binaries are (default: build/plain);
#                    $VGPUD, $VGPUCTL and $VGPU_TENANT override single
#                    binaries (meson test passes them)
#   --gpu GPU        simgpu, cuda or cuda:N (default: $VGPU_GPU, else simgpu)
#   --keep           keep the runtime directory (logs, results)
#
# Exit status: 0 all checks passed; 1 a check failed; 2 the test could not
# run (binaries missing, vgpud did not start); 64 bad usage; 77 skipped
# (no jq, or a CUDA GPU asked for and no CUDA driver or device here: the
# reason is printed). Every process it starts is stopped and the runtime
# directory removed on every exit path (Ctrl-C included).
#
# Needs: vgpud, vgpuctl, vgpu-tenant (built), jq, coreutils, grep, sed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
	cat <<'EOF'
Usage: tests/demo/hostile-tenant.sh [--build-dir DIR] [--gpu GPU] [--keep]

A hostile tenant (vgpu-tenant --workload escape) next to two honest ones
(stream, gups) on one vgpud with 128 MiB of VRAM: every escape must be
refused, every tenant's data must verify, only the hostile VM's channels
die, and vgpud stays healthy.

  --build-dir DIR  where the binaries are (default: build/plain); $VGPUD,
                   $VGPUCTL and $VGPU_TENANT override single binaries
  --gpu GPU        simgpu, cuda or cuda:N (default: $VGPU_GPU, else simgpu)
  --keep           keep the runtime directory (logs, results)
  -h, --help       this text

Exit status: 0 passed, 1 a check failed, 2 could not run, 64 bad usage,
77 skipped (no jq; or a CUDA GPU asked for and none here).
EOF
}

GPU="${VGPU_GPU:-simgpu}"
BUILD_DIR="$ROOT/build/plain"
KEEP=0
while [ $# -gt 0 ]; do
	case "$1" in
	--build-dir)
		[ $# -ge 2 ] || { echo "hostile-tenant: --build-dir wants a directory" >&2; exit 64; }
		BUILD_DIR="$2"
		shift ;;
	--gpu)
		[ $# -ge 2 ] || { echo "hostile-tenant: --gpu wants simgpu, cuda or cuda:N" >&2; exit 64; }
		GPU="$2"
		shift ;;
	--keep) KEEP=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "hostile-tenant: unknown argument '$1'; try --help" >&2; exit 64 ;;
	esac
	shift
done

VGPUD="${VGPUD:-$BUILD_DIR/vgpu-backend/daemon/vgpud}"
VGPUCTL="${VGPUCTL:-$BUILD_DIR/vgpu-backend/ctl/vgpuctl}"
VGPU_TENANT="${VGPU_TENANT:-$BUILD_DIR/guest-driver/tools/vgpu-tenant}"

# ------------------------------------------------------------ scenario
VRAM=128M
CHUNK=2M
BUFFER=8M
GPFIFO_ENTRIES=32 # small rings: a channel resume after an eviction is quick
# name workload size profile(weight) iterations|rest
HONEST=(
	"vm-stream stream 80M vgpu-1G rest"
	"vm-gups   gups   48M vgpu-2G 24"
)
ESCAPE="vm-escape escape 16M vgpu-1G"
ATTEMPTS=3
HOLD_DEADLINE=30 # s: start the escape by then even if the others are not ready
DEADLINE=150     # s: for the whole run
LINGER=300s      # tenants stay attached until their figures are read

# ------------------------------------------------------------ checks
# shellcheck source=tests/lib/needs.sh
. "$ROOT/tests/lib/needs.sh"
need_binaries hostile-tenant "$VGPUD" "$VGPUCTL" "$VGPU_TENANT"
need_jq

# shellcheck source=tests/lib/checks.sh
. "$ROOT/tests/lib/checks.sh"

# ------------------------------------------------------------ processes
PROGRAM=hostile-tenant
# shellcheck source=vgpu-backend/demo/processes.sh
. "$ROOT/vgpu-backend/demo/processes.sh"
trap 'echo "hostile-tenant: interrupted; stopping everything" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-hostile.XXXXXX")" || { echo "hostile-tenant: cannot create a temporary directory" >&2; exit 2; }
: >"$RUN_DIR/vgpud.conf" # not /etc/vgpud/vgpud.conf: built-in profiles, flags only
SOCKET="$RUN_DIR/vgpud.sock"
CONTROL="$RUN_DIR/vgpud.control.sock"
LOG="$RUN_DIR/vgpud.log"
START=$(date +%s)
elapsed() { echo $(($(date +%s) - START)); }
ctl() { "$VGPUCTL" --socket "$CONTROL" "$@"; }

# ------------------------------------------------------------ vgpud
echo "runtime directory $RUN_DIR (removed at exit)"
echo "\$ vgpud --gpu $GPU --vram $VRAM --chunk-size $CHUNK --log-level warn"
"$VGPUD" --config "$RUN_DIR/vgpud.conf" --gpu "$GPU" --vram "$VRAM" --chunk-size "$CHUNK" \
	--allowed-profiles '*' --socket "$SOCKET" --control-socket "$CONTROL" --log-level warn 2>"$LOG" &
VGPUD_PID=$!
PIDS+=("$VGPUD_PID")
ready=0
START_WAIT=100 # x 0.1 s; a CUDA GPU may take a while (cuInit, kernels loaded)
[ "$GPU" = simgpu ] || START_WAIT=600
for ((i = 0; i < START_WAIT; i++)); do
	if ctl health >/dev/null 2>&1; then
		ready=1
		break
	fi
	kill -0 "$VGPUD_PID" 2>/dev/null || break
	sleep 0.1
done
if [ "$ready" = 0 ]; then
	reap "$VGPUD_PID" 5
	# No NVIDIA GPU here (no driver, or no device): skipped, not failed.
	if [ "$GPU" != simgpu ] && grep -qE 'cannot open GPU .*: no CUDA (driver|device)' "$LOG"; then
		echo "skipped: vgpud --gpu $GPU: $(grep -oE 'cannot open GPU .*' "$LOG" | head -1)"
		exit 77
	fi
	echo "hostile-tenant: vgpud did not start; its log:" >&2
	cat "$LOG" >&2
	exit 2
fi
VRAM_BYTES=$(ctl status --json | jq -r '.gpu.vram')
echo "vgpud on $(ctl status --json | jq -r '.gpu.hal'): $VRAM_BYTES bytes of VRAM for VMs"

# ------------------------------------------------------------ tenants
declare -A TPID=() WANT=() STATUS=() ERRORS=() FINISHED=() ALONGSIDE=()
NAMES=()
# start_tenant NAME WORKLOAD SIZE PROFILE [ITERATIONS|rest]: result in NAME.json
start_tenant() {
	local name="$1" workload="$2" size="$3" profile="$4" iterations="${5:-}"
	local args=(--socket "$SOCKET" --name "$name" --profile "$profile" --workload "$workload"
		--size "$size" --buffer-size "$BUFFER" --gpfifo-entries "$GPFIFO_ENTRIES"
		--seed "$((${#NAMES[@]} + 1))" --json --linger "$LINGER")
	if [ "$iterations" = rest ]; then
		args+=(--duration "${DEADLINE}s") # until told to stop
	elif [ -n "$iterations" ]; then
		args+=(--iterations "$iterations")
	fi
	echo "\$ vgpu-tenant --name $name --profile $profile --workload $workload --size $size --buffer-size $BUFFER${iterations:+ ($iterations)}"
	"$VGPU_TENANT" "${args[@]}" >"$RUN_DIR/$name.json" 2>"$RUN_DIR/$name.err" &
	TPID[$name]=$!
	PIDS+=("$!")
	NAMES+=("$name")
	WANT[$name]=$((${size%M} * 1048576)) # sizes here are in MiB
}

reported() { # name: printed its result (then lingers, attached)
	[ -s "$RUN_DIR/$1.json" ] && jq -e 'has("verified")' "$RUN_DIR/$1.json" >/dev/null 2>&1
}

# collect NAME: once it reported (or died), read its VM's channel errors
# from vgpud, let it go, keep its exit status. 1 while it still runs.
collect() {
	local name="$1" pid="${TPID[$1]}"
	if reported "$name"; then
		ERRORS[$name]=$(ctl stats "$name" 2>/dev/null | jq -r '.channel_errors // empty')
		# The VMs that held all their memory when it was done.
		ALONGSIDE[$name]=$(ctl status --json 2>/dev/null | jq -r --argjson want "$(want_json)" \
			'[.vms[] | select(.allocated > 0 and .allocated == $want[.name]) | .name] | join(" ")')
	elif kill -0 "$pid" 2>/dev/null; then
		return 1
	fi
	reap "$pid" 30
	STATUS[$name]=$REAPED_STATUS
	FINISHED[$name]=1
	echo "  $name done after $(elapsed) s: exit ${STATUS[$name]}, $(jq -r 'if .message == "" then "verified \(.verified), \(.iterations) iterations" else .message end' "$RUN_DIR/$name.json" 2>/dev/null || echo 'no result')"
	return 0
}

want_json() { # {"name": bytes, ...} of the tenants started so far
	local name out="{"
	for name in "${NAMES[@]}"; do
		[ "$out" = "{" ] || out+=","
		out+="\"$name\": ${WANT[$name]}"
	done
	echo "$out}"
}

holding_all() { # every honest tenant holds all its memory
	local status name
	status=$(ctl status --json 2>/dev/null) || return 1
	for name in "${NAMES[@]}"; do
		jq -e --arg n "$name" --argjson b "${WANT[$name]}" \
			'any(.vms[]; .name == $n and .allocated == $b)' <<<"$status" >/dev/null || return 1
	done
}

for line in "${HONEST[@]}"; do
	# shellcheck disable=SC2086 # the scenario's fields
	start_tenant $line
done
for ((i = 0; i < HOLD_DEADLINE * 5; i++)); do
	holding_all && break
	sleep 0.2
done
HELD_AT_START=0
if holding_all; then
	HELD_AT_START=1
else
	echo "  (the honest tenants do not hold all their memory after ${HOLD_DEADLINE} s; starting the escape anyway)"
fi
# shellcheck disable=SC2086 # the scenario's fields
start_tenant $ESCAPE
ESCAPE_NAME=${ESCAPE%% *}

# Until all are done: the escape and the honest tenant with an iteration
# count finish by themselves; then the "rest" one is told to stop (it
# verifies and reports as usual).
told_rest=0
told_all=0
PEAK_ALLOCATED=0
while :; do
	left=0
	for name in "${NAMES[@]}"; do
		[ -n "${FINISHED[$name]:-}" ] && continue
		collect "$name" || left=$((left + 1))
	done
	[ "$left" = 0 ] && break
	allocated=$(ctl status --json 2>/dev/null | jq -r '.gpu.allocated // 0')
	[ "${allocated:-0}" -gt "$PEAK_ALLOCATED" ] && PEAK_ALLOCATED=$allocated
	if [ "$told_rest" = 0 ]; then
		others_done=1
		for line in "${HONEST[@]}" "$ESCAPE"; do
			read -r name _ _ _ iterations <<<"$line"
			[ "$iterations" = rest ] || [ -n "${FINISHED[$name]:-}" ] || reported "$name" || others_done=0
		done
		if [ "$others_done" = 1 ]; then
			for line in "${HONEST[@]}"; do
				read -r name _ _ _ iterations <<<"$line"
				[ "$iterations" = rest ] && kill -TERM "${TPID[$name]}" 2>/dev/null
			done
			told_rest=1
		fi
	fi
	if [ "$(elapsed)" -ge "$DEADLINE" ]; then
		if [ "$told_all" = 1 ]; then
			echo "hostile-tenant: the tenants did not stop; giving up. vgpud's log:"
			tail -40 "$LOG"
			exit 1
		fi
		echo "  the tenants did not finish within ${DEADLINE} s; stopping them"
		for name in "${NAMES[@]}"; do
			[ -n "${FINISHED[$name]:-}" ] || kill -TERM "${TPID[$name]}" 2>/dev/null
		done
		told_all=1
		DEADLINE=$((DEADLINE + 30))
	fi
	sleep 0.2
done

GPU_JSON=$(ctl status --json 2>/dev/null)
HEALTH_JSON=$(ctl health --json --check 2>/dev/null)
reap "$VGPUD_PID" 10
VGPUD_STATUS=$REAPED_STATUS
echo "all done after $(elapsed) s; vgpud stopped with status $VGPUD_STATUS"
echo

# ------------------------------------------------------------ verdict
result() { jq -r "$2" "$RUN_DIR/$1.json" 2>/dev/null; }

E=$ESCAPE_NAME
check "$E exited 0 (status ${STATUS[$E]:-?})" test "${STATUS[$E]:-1}" = 0
check "$E verified its own data ($(result "$E" '.checksums') checksums, $(result "$E" '.mismatches') wrong)" \
	test "$(result "$E" '.verified and .checksums > 0 and .mismatches == 0')" = true
check "$E tried $ATTEMPTS escapes and the GPU refused all of them ($(result "$E" '.escapes_refused') of $(result "$E" '.escapes_tried'))" \
	test "$(result "$E" "(.escapes_tried == $ATTEMPTS) and (.escapes_refused == $ATTEMPTS) and ([.escapes[] | select(.refused and .error == -5)] | length == $ATTEMPTS)")" = true
check "$E says so: \"$(result "$E" '.message')\"" \
	test "$(result "$E" ".message | startswith(\"$ATTEMPTS of $ATTEMPTS escapes refused by the GPU; own data intact\")")" = true
for line in "${HONEST[@]}"; do
	read -r name _ <<<"$line"
	check "$name exited 0 (status ${STATUS[$name]:-?})" test "${STATUS[$name]:-1}" = 0
	check "$name verified ($(result "$name" '.checksums') checksums, $(result "$name" '.mismatches') wrong, $(result "$name" '.iterations') iterations)" \
		test "$(result "$name" '.verified and .checksums > 0 and .mismatches == 0')" = true
done

# The escape starts once the honest tenants hold all their memory; the
# "rest" one (stream) holds it until the escape is done. The one with an
# iteration count may be done before the escape on a fast GPU: only noted.
check "the honest tenants held all their memory when $E started" test "$HELD_AT_START" = 1
for line in "${HONEST[@]}"; do
	read -r name _ _ _ iterations <<<"$line"
	if grep -qw -- "$name" <<<"${ALONGSIDE[$E]:-}"; then
		echo "ok:   $name still held all its memory when $E was done"
	elif [ "$iterations" = rest ]; then
		check "$name still held all its memory when $E was done" false
	else
		echo "note: $name had finished before $E was done"
	fi
done
check "vgpud counted $ATTEMPTS channel errors for $E (${ERRORS[$E]:-?})" test "${ERRORS[$E]:-0}" = "$ATTEMPTS"
for line in "${HONEST[@]}"; do
	read -r name _ <<<"$line"
	check "vgpud counted no channel error for $name (${ERRORS[$name]:-?})" test "${ERRORS[$name]:-x}" = 0
done
LOGGED_ESCAPE=$(grep -c "VM '$E': channel error" "$LOG")
LOGGED_OTHER=$(grep "channel error" "$LOG" | grep -vc "VM '$E': channel error")
check "vgpud's log has $E's channel errors ($LOGGED_ESCAPE lines)" test "$LOGGED_ESCAPE" -ge "$ATTEMPTS"
check "vgpud's log has no channel error of another VM ($LOGGED_OTHER lines)" test "$LOGGED_OTHER" = 0

HELD=0
for name in "${NAMES[@]}"; do
	HELD=$((HELD + $(result "$name" '.bytes_allocated // 0')))
done
check "the tenants together allocated more than the VRAM ($HELD of $VRAM_BYTES bytes; most seen at once $PEAK_ALLOCATED)" \
	test "$HELD" -gt "$VRAM_BYTES"
check "vgpud moved chunks to host memory ($(jq -r '.gpu.chunks_evicted' <<<"$GPU_JSON") evicted, $(jq -r '.gpu.chunks_placed_on_host' <<<"$GPU_JSON") placed there)" \
	test "$(jq -r '.gpu.chunks_evicted + .gpu.chunks_placed_on_host > 0' <<<"$GPU_JSON")" = true
check "afterwards: vgpuctl health ok, invariants ok ($(jq -r '"\(.status // "?"), invariants \(.invariants // "?")"' <<<"$HEALTH_JSON" 2>/dev/null))" \
	test "$(jq -r '.status == "ok" and .invariants == "ok"' <<<"$HEALTH_JSON" 2>/dev/null)" = true
check "afterwards: no VM attached, nothing allocated ($(jq -r '"\(.gpu.vms) VMs, \(.gpu.allocated) bytes"' <<<"$GPU_JSON"))" \
	test "$(jq -r '.gpu.vms == 0 and .gpu.allocated == 0' <<<"$GPU_JSON")" = true
check "vgpud stopped with status 0 ($VGPUD_STATUS)" test "$VGPUD_STATUS" = 0

if [ "$failed" -ne 0 ]; then
	for name in "${NAMES[@]}"; do
		echo "--- $name result:"
		cat "$RUN_DIR/$name.json"
		if [ -s "$RUN_DIR/$name.err" ]; then
			echo "--- $name stderr:"
			tail -20 "$RUN_DIR/$name.err"
		fi
	done
	echo "--- vgpud log:"
	tail -40 "$LOG"
	echo "$failed check(s) failed"
	exit 1
fi
echo "--- vgpud's channel error lines:"
grep "channel error" "$LOG"
echo "all checks passed"
