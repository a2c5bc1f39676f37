#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-hostile.sh MODE - a hostile CUDA program (hostile MODE: oob-store,
# spin, huge-grid, bad-image, huge-image or param-size; see hostile.c)
# beside a good one (reduce, its checksum summed again and again) as two
# local tenants of a private vgpud on simgpu with a short watchdog
# (--watchdog-ns: 200 ms of modeled time per command; a users' function
# gets 3 s of host time in all, --function-launch-wall-ms).
#
# Checks: the hostile program got a CUDA error and said which (exit 0);
# the good program, attached before the hostile one started, finished with
# every checksum exact (exit 0); vgpud logged no channel error of the good
# VM; afterwards vgpud is healthy with its invariants, nothing is left
# allocated, and it stops with status 0. Meson tests cuda-hostile-MODE.
#
# Exit status: 0 passed, 1 a check failed, 2 could not run, 64 usage, 77
# skipped (libcuda.so.1 or the programs not built, or no jq).
set -uo pipefail

MODE="${1:-}"
KEEP=0
[ "${2:-}" = --keep ] && KEEP=1
case "$MODE" in
oob-store | spin | huge-grid | bad-image | huge-image | param-size) ;;
*) echo "usage: $0 oob-store|spin|huge-grid|bad-image|huge-image|param-size [--keep]" >&2; exit 64 ;;
esac

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROGRAM="run-hostile $MODE"
# shellcheck source=tests/cuda/vgpud-env.sh
. "$HERE/vgpud-env.sh"
# shellcheck source=tests/lib/needs.sh
. "$ROOT/tests/lib/needs.sh"
# shellcheck source=tests/lib/checks.sh
. "$ROOT/tests/lib/checks.sh"
need_binaries "$PROGRAM" "$VGPUD" "$VGPUCTL"
need_jq
need_cuda_programs "$PROGRAM" cuda-hostile cuda-reduce

# shellcheck source=vgpu-backend/demo/processes.sh
. "$ROOT/vgpu-backend/demo/processes.sh"
trap 'exit 130' INT
trap 'exit 143' TERM
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-cuda-hostile.XXXXXX")" || exit 2
START=$(date +%s)

start_vgpud 64M --watchdog-ns 200000000 --function-launch-wall-ms 3000
GOOD="vm-good"
BAD="vm-hostile"
CUDA_PROG_BYTES=4M CUDA_PROG_REPEAT=20 start_program "$GOOD" cuda-reduce
attached=0
for ((i = 0; i < 100; i++)); do
	if ctl status --json 2>/dev/null | jq -e --arg n "$GOOD" 'any(.vms[]; .name == $n and .allocated > 0)' >/dev/null 2>&1; then
		attached=1
		break
	fi
	kill -0 "${PROG_PID[$GOOD]}" 2>/dev/null || break
	sleep 0.1
done
start_program "$BAD" cuda-hostile "$MODE"
# The watchdog (200 ms of modeled time, simgpu's wall-clock limit of a
# piece of a grid) ends any kernel within seconds; BAD_WITHIN bounds the
# test when nothing does.
BAD_WITHIN=20
BAD_ENDED=1
wait_program_within "$BAD" "$BAD_WITHIN" || BAD_ENDED=0
GOOD_RUNNING=0
kill -0 "${PROG_PID[$GOOD]}" 2>/dev/null && GOOD_RUNNING=1
GOOD_ENDED=1
wait_program_within "$GOOD" 40 || GOOD_ENDED=0
echo "--- $BAD:"
sed 's/^/    /' "$RUN_DIR/$BAD.out"
echo "--- $GOOD:"
sed 's/^/    /' "$RUN_DIR/$GOOD.out"

check "$GOOD held its memory before $BAD started" test "$attached" = 1
check "$BAD ended within $BAD_WITHIN s (killed otherwise)" test "$BAD_ENDED" = 1
check "$BAD got a CUDA error and said which (status ${PROG_STATUS[$BAD]})" \
	test "${PROG_STATUS[$BAD]}" = 0
check "$BAD named the error" grep -q "^hostile $MODE: CUDA_ERROR_[A-Z_]* " "$RUN_DIR/$BAD.out"
check "$GOOD ended within 40 s after $BAD (killed otherwise)" test "$GOOD_ENDED" = 1
check "$GOOD finished with every checksum exact (status ${PROG_STATUS[$GOOD]})" \
	test "${PROG_STATUS[$GOOD]}" = 0
check "$GOOD said ok" grep -q '^reduce: ok (' "$RUN_DIR/$GOOD.out"
if [ "$GOOD_RUNNING" = 1 ]; then
	echo "ok:   $GOOD was still running when $BAD was done"
else
	echo "note: $GOOD had finished before $BAD was done"
fi
check "vgpud logged no channel error of $GOOD" \
	test "$(grep -c "VM '$GOOD': channel error" "$LOG")" = 0
wait_idle 10
GPU_JSON=$(ctl status --json 2>/dev/null)
HEALTH_JSON=$(ctl health --json --check 2>/dev/null)
check "afterwards: vgpuctl health ok, invariants ok" \
	test "$(jq -r '.status == "ok" and .invariants == "ok"' <<<"$HEALTH_JSON" 2>/dev/null)" = true
check "afterwards: no VM attached, nothing allocated ($(jq -r '"\(.gpu.vms) VMs, \(.gpu.allocated) bytes"' <<<"$GPU_JSON"))" \
	test "$(jq -r '.gpu.vms == 0 and .gpu.allocated == 0' <<<"$GPU_JSON")" = true
reap "$VGPUD_PID" 10
check "vgpud stopped with status 0 ($REAPED_STATUS)" test "$REAPED_STATUS" = 0
echo "$passed passed, $failed failed, $(($(date +%s) - START)) s"
if [ "$failed" -ne 0 ]; then
	echo "--- vgpud log:"
	tail -40 "$LOG"
	exit 1
fi
