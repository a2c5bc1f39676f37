#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# hostile-core.sh - a tenant that stalls the eviction of its own memory,
# next to two honest tenants and a victim that needs the room, on one vgpud
# (issue 12, items 1, 2, 6 and 7).
#
#   1. vgpud starts with a private runtime directory on simgpu, 128 MiB of
#      VRAM, 2 MiB chunks, a swap timeout of 1 s and the drain timeout of the
#      scenario (3 s; sigterm: the default, 10 s).
#   2. Two honest tenants run checksummed workloads until told to stop:
#      vm-stream (stream 24M, weight 1) and vm-gups (gups 16M, weight 2).
#   3. The hostile tenant vm-stuck (vgpu-tenant --workload never-release,
#      64M, weight 1) fills its memory and submits a SEMAPHORE_ACQUIRE that
#      nothing ever releases (it says so on stderr): its channel can never
#      drain. It holds the most VRAM per weight, so it is the victim of the
#      next eviction.
#   4. vm-victim (alloc-leak 48M in 8M buffers, weight 4) needs more VRAM
#      than is free: vgpud must evict vm-stuck's chunks.
#
# Scenarios (the first argument):
#   acquire  vgpud must kill the stuck channel when it does not drain,
#            relocate vm-stuck's memory and complete vm-victim's
#            allocations, waiting for the stuck channel once only. While
#            vm-victim allocates, `vgpuctl status --json` is probed every
#            50 ms: each probe must answer within 1.5 s (a status that waits
#            for the eviction takes the whole 3 s drain timeout, or forever)
#            and the median within 1 s; vm-stuck's own STATS requests (a
#            guest's mailbox request, answered from the same statistics as
#            QUERY) must each answer within 1.5 s. Then vm-stuck is told to
#            stop: its channel was killed, its data verifies.
#   killed   vm-stuck is killed (SIGKILL) while vgpud
#            relocates it (its channel suspended, the drain waiting): the
#            others finish intact, vm-victim's allocations complete, and
#            vgpud frees everything of vm-stuck (nothing allocated, no VM
#            attached, invariants ok; under AddressSanitizer no leak).
#   sigterm  the default drain timeout (10 s). While vgpud waits for the
#            stuck channel to drain, vgpud gets SIGTERM: it must exit, with
#            status 0, within 5 s.
#   hog      the hostile tenant is vm-hog instead (vgpu-tenant --workload
#            hog 64M, issue 24 items 1 and 5): its channel's ring is kept
#            full of long but watchdog-legal STREAM kernels, thousands
#            queued, and it re-arms on a fresh channel when one is killed.
#            vgpud must kill the busy channel once the drain timeout
#            passes (the kill gets in however much is queued), treat
#            vm-hog as a drain offender from then on (its re-armed
#            channels are killed after 50 ms, not the drain timeout: all
#            its relocations together wait under two drain timeouts),
#            complete vm-victim's allocations and answer status meanwhile
#            as in acquire; then vm-hog's own detach (SIGTERM to it)
#            completes and it is gone.
#   hog-sigterm
#            vm-hog as in hog, the default drain timeout (10 s): while
#            vgpud waits for the hog's channel to drain, SIGTERM must end
#            vgpud, with status 0, within 5 s.
#   swap-ack the hostile tenant is vm-noack instead (vgpu-tenant
#            --never-ack-swaps --workload stream 64M): its channel drains,
#            but it never acknowledges a window swap. vgpud (swap timeout
#            1 s) must cut it off and detach it, complete vm-victim's
#            allocations, and answer `vgpuctl status` meanwhile as in
#            acquire.
# Every scenario checks that the honest tenants verified, and (but sigterm)
# that vgpud is healthy afterwards and stops with status 0.
#
# Probe timings: wide bounds, 1 s for the median and 1.5 s for the worst
# single probe, so that a loaded 2-core machine under AddressSanitizer (a
# vgpuctl process start included in every probe) cannot fail the test
# while a status that waits for the eviction (3 s here) still does. How
# fast status answers under attack is the benchmark's figure
# (status_ms_under_attack_p99), not a test.
#
# Usage: tests/demo/hostile-core.sh SCENARIO [--build-dir DIR] [--keep]
# Exit status: 0 passed, 1 a check failed, 2 could not run, 64 bad usage,
# 77 skipped (no jq). Prints "N passed, N failed".
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
	cat <<'EOF'
Usage: tests/demo/hostile-core.sh acquire|killed|sigterm|swap-ack|hog|hog-sigterm [--build-dir DIR] [--keep]

A tenant whose channel never drains (a SEMAPHORE_ACQUIRE nothing releases)
is evicted for another tenant's allocation, next to two honest tenants.
  acquire  vgpud kills the stuck channel, the allocation completes, status
           and STATS answer meanwhile
  killed   the stuck tenant is SIGKILLed while vgpud relocates it
  sigterm  vgpud gets SIGTERM while it waits for the stuck channel
  swap-ack a tenant that never acknowledges window swaps is evicted instead
  hog      a tenant that keeps thousands of long kernels queued (and
           re-arms) is evicted instead
  hog-sigterm
           vgpud gets SIGTERM while it waits for the hog's channel

  --build-dir DIR  where the binaries are (default: build/plain); $VGPUD,
                   $VGPUCTL and $VGPU_TENANT override single binaries
  --keep           keep the runtime directory (logs, results)
EOF
}

SCENARIO="${1:-}"
case "$SCENARIO" in
acquire | killed | sigterm | swap-ack | hog | hog-sigterm) shift ;;
-h | --help) usage; exit 0 ;;
*) usage >&2; exit 64 ;;
esac
BUILD_DIR="$ROOT/build/plain"
KEEP=0
while [ $# -gt 0 ]; do
	case "$1" in
	--build-dir)
		[ $# -ge 2 ] || { echo "hostile-core: --build-dir wants a directory" >&2; exit 64; }
		BUILD_DIR="$2"
		shift ;;
	--keep) KEEP=1 ;;
	*) echo "hostile-core: unknown argument '$1'; try --help" >&2; exit 64 ;;
	esac
	shift
done

VGPUD="${VGPUD:-$BUILD_DIR/vgpu-backend/daemon/vgpud}"
VGPUCTL="${VGPUCTL:-$BUILD_DIR/vgpu-backend/ctl/vgpuctl}"
VGPU_TENANT="${VGPU_TENANT:-$BUILD_DIR/guest-driver/tools/vgpu-tenant}"
# shellcheck source=tests/lib/needs.sh
. "$ROOT/tests/lib/needs.sh"
need_binaries hostile-core "$VGPUD" "$VGPUCTL" "$VGPU_TENANT"
need_jq

DRAIN_TIMEOUT_MS=3000
[ "$SCENARIO" = sigterm ] || [ "$SCENARIO" = hog-sigterm ] && DRAIN_TIMEOUT_MS=10000
DEADLINE=120 # s, for the whole run
PROBE_MAX_MS=1500
PROBE_MEDIAN_MS=1000

# shellcheck source=tests/lib/checks.sh
. "$ROOT/tests/lib/checks.sh"

PROGRAM=hostile-core
# shellcheck source=vgpu-backend/demo/processes.sh
. "$ROOT/vgpu-backend/demo/processes.sh"
trap 'exit 130' INT
trap 'exit 143' TERM

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-hostile-core.XXXXXX")" || exit 2
: >"$RUN_DIR/vgpud.conf"
SOCKET="$RUN_DIR/vgpud.sock"
CONTROL="$RUN_DIR/control.sock"
LOG="$RUN_DIR/vgpud.log"
START=$(date +%s)
elapsed() { echo $(($(date +%s) - START)); }
ctl() { timeout 10 "$VGPUCTL" --socket "$CONTROL" "$@"; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

finish() {
	echo "$passed passed, $failed failed"
	if [ "$failed" -ne 0 ]; then
		for f in "$RUN_DIR"/*.json "$RUN_DIR"/*.err; do
			[ -s "$f" ] || continue
			echo "--- $(basename "$f"):"
			tail -30 "$f"
		done
		echo "--- vgpud log:"
		tail -40 "$LOG"
		exit 1
	fi
	exit 0
}

echo "scenario $SCENARIO; runtime directory $RUN_DIR"
"$VGPUD" --config "$RUN_DIR/vgpud.conf" --vram 128M --chunk-size 2M \
	--drain-timeout-ms "$DRAIN_TIMEOUT_MS" --swap-timeout-ms 1000 --allowed-profiles '*' \
	--socket "$SOCKET" --control-socket "$CONTROL" --log-level info 2>"$LOG" &
VGPUD_PID=$!
PIDS+=("$VGPUD_PID")
for ((i = 0; i < 100; i++)); do
	ctl health >/dev/null 2>&1 && break
	kill -0 "$VGPUD_PID" 2>/dev/null || break
	sleep 0.1
done
if ! ctl health >/dev/null 2>&1; then
	echo "hostile-core: vgpud did not start; its log:" >&2
	cat "$LOG" >&2
	exit 2
fi

declare -A TPID=()
start_tenant() { # name workload size profile [extra args...]
	local name="$1" workload="$2" size="$3" profile="$4"
	shift 4
	"$VGPU_TENANT" --socket "$SOCKET" --name "$name" --profile "$profile" \
		--workload "$workload" --size "$size" --buffer-size 8M --gpfifo-entries 32 \
		--json "$@" >"$RUN_DIR/$name.json" 2>"$RUN_DIR/$name.err" &
	TPID[$name]=$!
	PIDS+=("$!")
}
allocated() { # name: bytes the VM holds (0 if not attached)
	ctl status --json 2>/dev/null |
		jq -r --arg n "$1" '[.vms[] | select(.name == $n) | .allocated] | first // 0'
}
wait_allocated() { # name bytes
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(allocated "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
suspensions() { # name: the VM's channel suspensions so far
	ctl stats "$1" 2>/dev/null | jq -r '.suspensions // 0'
}
# result NAME JQ: a field of a tenant's JSON result
result() { jq -r "$2" "$RUN_DIR/$1.json" 2>/dev/null; }
# wait_exit NAME SECS: the tenant's exit status (124 if it did not exit)
wait_exit() {
	local pid="${TPID[$1]}" i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		reap "$pid" 5
		return 124
	fi
	wait "$pid"
	local status=$?
	forget_pid "$pid"
	return $status
}

MiB=1048576
start_tenant vm-stream stream 24M vgpu-1G --duration "${DEADLINE}s"
start_tenant vm-gups gups 16M vgpu-2G --duration "${DEADLINE}s"
check "the honest tenants hold their memory" \
	eval 'wait_allocated vm-stream $((24 * MiB)) && wait_allocated vm-gups $((16 * MiB))'
if [ "$SCENARIO" = hog ] || [ "$SCENARIO" = hog-sigterm ]; then
	start_tenant vm-hog hog 64M vgpu-1G
	check "vm-hog holds its memory (and keeps its channel full of kernels)" \
		wait_allocated vm-hog $((64 * MiB))
	sleep 1 # its queue fills
elif [ "$SCENARIO" = swap-ack ]; then
	start_tenant vm-noack stream 64M vgpu-1G --never-ack-swaps --duration "${DEADLINE}s"
	check "vm-noack holds its memory (and will never acknowledge a window swap)" \
		wait_allocated vm-noack $((64 * MiB))
else
	start_tenant vm-stuck never-release 64M vgpu-1G
	held=1
	for ((i = 0; i < 600; i++)); do
		grep -q "holding its memory behind the acquire" "$RUN_DIR/vm-stuck.err" && break
		kill -0 "${TPID[vm-stuck]}" 2>/dev/null || break
		sleep 0.1
	done
	grep -q "holding its memory behind the acquire" "$RUN_DIR/vm-stuck.err" || held=0
	check "vm-stuck holds its memory behind an acquire nothing releases" \
		test "$held" = 1 -a "$(allocated vm-stuck)" = $((64 * MiB))
fi

start_tenant vm-victim alloc-leak 48M vgpu-4G --duration 1s
VICTIM_START=$(now_ms)

# probe_status_while_victim_allocates: vgpuctl status every 50 ms until
# vm-victim is done; checks the victim's result and the probes' timings.
probe_status_while_victim_allocates() {
	local probes=() answered=0 t0 sorted count median worst
	while kill -0 "${TPID[vm-victim]}" 2>/dev/null && [ "$(elapsed)" -lt "$DEADLINE" ]; do
		t0=$(now_ms)
		if timeout 5 "$VGPUCTL" --socket "$CONTROL" status --json >/dev/null 2>&1; then
			answered=$((answered + 1))
			probes+=($(($(now_ms) - t0)))
		else
			probes+=(999999) # no answer within 5 s
		fi
		sleep 0.05
	done
	wait_exit vm-victim 10
	VICTIM_STATUS=$?
	sorted=$(printf '%s\n' "${probes[@]}" | sort -n)
	count=${#probes[@]}
	median=$(sed -n "$(((count + 1) / 2))p" <<<"$sorted")
	worst=$(tail -1 <<<"$sorted")
	echo "  vm-victim done after $(($(now_ms) - VICTIM_START)) ms; $count status probes meanwhile: median ${median:-?} ms, worst ${worst:-?} ms"
	check "vm-victim's allocations completed and verified (exit $VICTIM_STATUS: $(result vm-victim '.message'))" \
		test "$VICTIM_STATUS" = 0
	check "vm-victim got all 48M ($(result vm-victim '.bytes_allocated') bytes)" \
		test "$(result vm-victim '.bytes_allocated')" = $((48 * MiB))
	check "vgpuctl status answered at least 10 times during the eviction ($answered of $count)" \
		test "$answered" -ge 10
	check "every status probe answered within ${PROBE_MAX_MS} ms (worst ${worst:-?} ms)" \
		test "${worst:-999999}" -le "$PROBE_MAX_MS"
	check "the median status probe answered within ${PROBE_MEDIAN_MS} ms (${median:-?} ms)" \
		test "${median:-999999}" -le "$PROBE_MEDIAN_MS"
}

case "$SCENARIO" in
swap-ack)
	probe_status_while_victim_allocates
	check "vgpud cut vm-noack off for not acknowledging a window swap" \
		grep -q "tenant 'vm-noack': .*no acknowledgement within swap_timeout_ms; detaching it" "$LOG"
	wait_exit vm-noack 30
	NOACK_STATUS=$?
	check "vm-noack ended (its device gone: exit $NOACK_STATUS)" test "$NOACK_STATUS" != 124
	check "vm-noack is detached" \
		test "$(ctl status --json | jq '[.vms[] | select(.name == "vm-noack")] | length')" = 0
	;;
hog)
	probe_status_while_victim_allocates
	HOG_STATS=$(ctl stats vm-hog)
	check "vm-hog's busy channel was killed ($(jq -r .drain_kills <<<"$HOG_STATS") drain kills), and vm-hog is a drain offender" \
		test "$(jq -r '.drain_kills >= 1 and .drain_offender' <<<"$HOG_STATS")" = true
	check "vm-hog's relocations waited $(($(jq -r .drain_ns <<<"$HOG_STATS") / 1000000)) ms for it in all (under two drain timeouts)" \
		test "$(jq -r ".evictions > 0 and .drain_ns < 2 * $DRAIN_TIMEOUT_MS * 1000000" <<<"$HOG_STATS")" = true
	t0=$(now_ms)
	kill -TERM "${TPID[vm-hog]}" 2>/dev/null
	wait_exit vm-hog 30
	HOG_STATUS=$?
	for ((i = 0; i < 100; i++)); do
		[ "$(ctl status --json | jq '[.vms[] | select(.name == "vm-hog")] | length')" = 0 ] && break
		sleep 0.1
	done
	check "vm-hog's own detach completed within 10 s ($(($(now_ms) - t0)) ms; exit $HOG_STATUS: $(result vm-hog '.message'))" \
		test "$HOG_STATUS" != 124 -a "$(ctl status --json | jq '[.vms[] | select(.name == "vm-hog")] | length')" = 0 -a $(($(now_ms) - t0)) -le 10000
	check "vm-hog re-armed after a kill ($(result vm-hog '.hog_rearms') re-arms, $(result vm-hog '.hog_kernels') kernels queued)" \
		test "$(result vm-hog '.hog_rearms >= 1 and .hog_kernels > 1000')" = true
	;;
acquire)
	probe_status_while_victim_allocates
	# Killed once, the channel drains at once: later evictions of the
	# same VM (vm-victim allocates several buffers) do not wait again.
	STUCK_STATS=$(ctl stats vm-stuck)
	check "vm-stuck's channel was killed once ($(jq -r .channel_errors <<<"$STUCK_STATS") channel errors)" \
		test "$(jq -r .channel_errors <<<"$STUCK_STATS")" = 1
	check "vm-stuck was evicted $(jq -r .evictions <<<"$STUCK_STATS") chunks, its relocations waited $(($(jq -r .drain_ns <<<"$STUCK_STATS") / 1000000)) ms for it in all (under two drain timeouts)" \
		test "$(jq -r ".evictions > 0 and .drain_ns < 2 * $DRAIN_TIMEOUT_MS * 1000000" <<<"$STUCK_STATS")" = true
	kill -TERM "${TPID[vm-stuck]}" 2>/dev/null
	wait_exit vm-stuck 30
	STUCK_STATUS=$?
	check "vm-stuck verified its data afterwards (exit $STUCK_STATUS: $(result vm-stuck '.message'))" \
		test "$STUCK_STATUS" = 0
	check "vgpud killed vm-stuck's stuck channel" test "$(result vm-stuck '.acquire_killed')" = true
	check "vm-stuck's STATS requests answered within ${PROBE_MAX_MS} ms while it was relocated ($(result vm-stuck '.stats_probes') requests, slowest $(result vm-stuck '.stats_ms_max') ms)" \
		test "$(result vm-stuck ".stats_probes > 10 and .stats_ms_max <= $PROBE_MAX_MS")" = true
	check "vgpud's log says why it killed the channel" \
		grep -q "VM 'vm-stuck': channel error.*no progress within a time limit" "$LOG"
	;;
killed)
	for ((i = 0; i < 100; i++)); do
		[ "$(suspensions vm-stuck)" -gt 0 ] && break
		sleep 0.05
	done
	check "vgpud suspended vm-stuck's channel to relocate it" test "$(suspensions vm-stuck)" -gt 0
	kill -KILL "${TPID[vm-stuck]}"
	{ wait "${TPID[vm-stuck]}"; } 2>/dev/null
	forget_pid "${TPID[vm-stuck]}"
	echo "  vm-stuck killed $(($(now_ms) - VICTIM_START)) ms after vm-victim started"
	wait_exit vm-victim 60
	VICTIM_STATUS=$?
	check "vm-victim's allocations completed and verified (exit $VICTIM_STATUS: $(result vm-victim '.message'))" \
		test "$VICTIM_STATUS" = 0
	for ((i = 0; i < 100; i++)); do
		[ "$(ctl status --json | jq '[.vms[] | select(.name == "vm-stuck")] | length')" = 0 ] && break
		sleep 0.1
	done
	check "vm-stuck is detached" \
		test "$(ctl status --json | jq '[.vms[] | select(.name == "vm-stuck")] | length')" = 0
	;;
sigterm | hog-sigterm)
	STALLER=vm-stuck
	[ "$SCENARIO" = hog-sigterm ] && STALLER=vm-hog
	for ((i = 0; i < 100; i++)); do
		[ "$(suspensions $STALLER)" -gt 0 ] && break
		sleep 0.05
	done
	check "vgpud suspended $STALLER's channel to relocate it" test "$(suspensions $STALLER)" -gt 0
	sleep 1 # well into the drain wait
	t0=$(now_ms)
	kill -TERM "$VGPUD_PID"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$VGPUD_PID" 2>/dev/null || break
		sleep 0.05
	done
	stopped_ms=$(($(now_ms) - t0))
	alive=0
	kill -0 "$VGPUD_PID" 2>/dev/null && alive=1
	reap "$VGPUD_PID" 1
	VGPUD_STATUS=$REAPED_STATUS
	check "vgpud stopped within 5 s of SIGTERM while waiting for $STALLER's channel (${stopped_ms} ms)" \
		test "$alive" = 0 -a "$stopped_ms" -le 5000
	check "vgpud exited with status 0 ($VGPUD_STATUS)" test "$VGPUD_STATUS" = 0
	for name in vm-stream vm-gups vm-victim $STALLER; do
		reap "${TPID[$name]}" 5
	done
	finish
	;;
esac

# The honest tenants verify what they hold.
for name in vm-stream vm-gups; do
	kill -TERM "${TPID[$name]}" 2>/dev/null
	wait_exit "$name" 60
	status=$?
	check "$name verified ($(result "$name" '.checksums') checksums, $(result "$name" '.mismatches') wrong; exit $status)" \
		test "$status" = 0 -a "$(result "$name" '.verified and .mismatches == 0')" = true
done
STATUS_JSON=$(ctl status --json)
HEALTH_JSON=$(ctl health --json --check)
check "afterwards: nothing allocated, no VM attached ($(jq -r '"\(.gpu.vms) VMs, \(.gpu.allocated) bytes"' <<<"$STATUS_JSON"))" \
	test "$(jq -r '.gpu.vms == 0 and .gpu.allocated == 0' <<<"$STATUS_JSON")" = true
check "afterwards: vgpuctl health ok, invariants ok" \
	test "$(jq -r '.status == "ok" and .invariants == "ok"' <<<"$HEALTH_JSON")" = true
reap "$VGPUD_PID" 10
check "vgpud stopped with status 0 ($REAPED_STATUS)" test "$REAPED_STATUS" = 0
finish
