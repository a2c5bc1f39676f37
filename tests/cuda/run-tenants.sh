#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-tenants.sh - the CUDA programs of tests/cuda as local tenants of a
# private vgpud on simgpu, through libcuda.so.1 (LD_LIBRARY_PATH,
# VGPUD_SOCKET, VGPU_VM_NAME: as a user runs them).
#
#   run-tenants.sh tenants  (meson test cuda-tenants) three programs at once
#                           (saxpy, reduce, streams), 24 MiB each, on 32 MiB
#                           of VRAM: together more than twice the VRAM, so
#                           GPUswap must move their chunks to host memory
#                           while they run. Checks: every program exits 0
#                           with every result exact; at least twice the
#                           VRAM was allocated at once (vgpud's status,
#                           read while every program holds its memory
#                           after its work: CUDA_PROG_HOLD); vgpud's
#                           counters say chunks were evicted from VRAM
#                           and brought back (the
#                           test cannot pass without oversubscription and
#                           GPUswap moving chunks); vgpud healthy with
#                           its invariants, nothing left allocated, and it
#                           stops with status 0.
#   run-tenants.sh each     (meson test cuda-programs) every program once,
#                           one after another, at its default size on
#                           64 MiB: each exits 0, exact.
#
# Options after the mode: --keep (keep the runtime directory). Exit status:
# 0 passed, 1 a check failed, 2 could not run, 64 usage, 77 skipped
# (libcuda.so.1 or the programs not built, or no jq; the reason printed).
set -uo pipefail

MODE="${1:-}"
KEEP=0
[ "${2:-}" = --keep ] && KEEP=1
case "$MODE" in
tenants | each) ;;
*) echo "usage: $0 tenants|each [--keep]" >&2; exit 64 ;;
esac

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROGRAM="run-tenants $MODE"
# shellcheck source=tests/cuda/vgpud-env.sh
. "$HERE/vgpud-env.sh"
# shellcheck source=tests/lib/needs.sh
. "$ROOT/tests/lib/needs.sh"
# shellcheck source=tests/lib/checks.sh
. "$ROOT/tests/lib/checks.sh"
need_binaries "$PROGRAM" "$VGPUD" "$VGPUCTL"
need_jq

ALL=(cuda-saxpy cuda-launch-forms cuda-reduce cuda-matmul cuda-histogram cuda-scan
	cuda-stencil cuda-streams cuda-events cuda-globals)
TENANTS=("cuda-saxpy 24M 1" "cuda-reduce 24M 3" "cuda-streams 24M 1")
VRAM=32M
[ "$MODE" = each ] && VRAM=64M
if [ "$MODE" = each ]; then
	need_cuda_programs "$PROGRAM" "${ALL[@]}"
else
	for t in "${TENANTS[@]}"; do
		need_cuda_programs "$PROGRAM" "${t%% *}"
	done
fi

# shellcheck source=vgpu-backend/demo/processes.sh
. "$ROOT/vgpu-backend/demo/processes.sh"
trap 'exit 130' INT
trap 'exit 143' TERM
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-cuda.XXXXXX")" || exit 2
START=$(date +%s)

start_vgpud "$VRAM"
VRAM_BYTES=$(ctl status --json | jq -r '.gpu.vram')
echo "vgpud on simgpu: $VRAM_BYTES bytes of VRAM for VMs"

show() { # vm: its output, indented
	sed 's/^/    /' "$RUN_DIR/$1.out"
}

if [ "$MODE" = each ]; then
	for prog in "${ALL[@]}"; do
		vm="vm-${prog#cuda-}"
		start_program "$vm" "$prog"
		wait_program "$vm"
		show "$vm"
		check "$prog exited 0 with every result exact (status ${PROG_STATUS[$vm]})" \
			test "${PROG_STATUS[$vm]}" = 0
	done
else
	NAMES=()
	WANT=0
	# Each program keeps its memory after its work until all have got
	# there (cuda_prog_hold, CUDA_PROG_HOLD): then all of it is allocated.
	mkdir -p "$RUN_DIR/hold"
	for t in "${TENANTS[@]}"; do
		read -r prog size repeat <<<"$t"
		vm="vm-${prog#cuda-}"
		CUDA_PROG_BYTES=$size CUDA_PROG_REPEAT=$repeat CUDA_PROG_HOLD="$RUN_DIR/hold" \
			start_program "$vm" "$prog"
		NAMES+=("$vm")
		WANT=$((WANT + ${size%M} * 1048576))
	done
	PEAK_ALLOCATED=0
	PEAK_EVICTED=0
	while :; do
		running=0
		for vm in "${NAMES[@]}"; do
			kill -0 "${PROG_PID[$vm]}" 2>/dev/null && running=1
		done
		[ "$running" = 0 ] && break
		status=$(ctl status --json 2>/dev/null) || status='{}'
		a=$(jq -r '.gpu.allocated // 0' <<<"$status")
		e=$(jq -r '.gpu.evicted // 0' <<<"$status")
		[ "$a" -gt "$PEAK_ALLOCATED" ] && PEAK_ALLOCATED=$a
		[ "$e" -gt "$PEAK_EVICTED" ] && PEAK_EVICTED=$e
		held=("$RUN_DIR"/hold/*.held)
		[ -e "${held[0]}" ] || held=()
		if [ ! -e "$RUN_DIR/hold/go" ] && [ "${#held[@]}" -ge "${#NAMES[@]}" ]; then
			a=$(ctl status --json 2>/dev/null | jq -r '.gpu.allocated // 0')
			echo "all ${#NAMES[@]} programs hold their memory: $a bytes allocated"
			[ "$a" -gt "$PEAK_ALLOCATED" ] && PEAK_ALLOCATED=$a
			# The first one ends alone: the VRAM it frees is where the
			# others' evicted chunks come back to (the return pass).
			first=${NAMES[0]}
			touch "$RUN_DIR/hold/${first#vm-}.go"
			for _ in $(seq 100); do # (waited for below, with the others)
				kill -0 "${PROG_PID[$first]}" 2>/dev/null || break
				sleep 0.1
			done
			for _ in $(seq 50); do
				[ "$(chunk_counter chunks_returned)" -gt 0 ] && break
				sleep 0.1
			done
			touch "$RUN_DIR/hold/go"
		fi
		if [ $(($(date +%s) - START)) -gt 50 ]; then
			echo "the programs did not finish within 50 s; stopping them"
			touch "$RUN_DIR/hold/go"
			break
		fi
		sleep 0.1
	done
	for vm in "${NAMES[@]}"; do
		kill -0 "${PROG_PID[$vm]}" 2>/dev/null && kill -TERM "${PROG_PID[$vm]}"
		wait_program "$vm"
		show "$vm"
		check "$vm exited 0 with every result exact (status ${PROG_STATUS[$vm]})" \
			test "${PROG_STATUS[$vm]}" = 0
		check "$vm said ok" grep -q ': ok (' "$RUN_DIR/$vm.out"
	done
	EVICTED=$(chunk_counter chunks_evicted)
	PLACED=$(chunk_counter chunks_placed_on_host)
	RETURNED=$(chunk_counter chunks_returned)
	echo "vgpud's chunk counters: $EVICTED evicted, $PLACED placed on host memory, $RETURNED returned"
	check "the programs' working sets ($WANT bytes) are at least twice the VRAM ($VRAM_BYTES)" \
		test "$WANT" -ge $((2 * VRAM_BYTES))
	check "at least twice the VRAM was allocated at once ($PEAK_ALLOCATED bytes seen at the peak)" \
		test "$PEAK_ALLOCATED" -ge $((2 * VRAM_BYTES))
	check "GPUswap evicted chunks of the running programs from VRAM ($EVICTED chunks; at most $PEAK_EVICTED bytes in host memory at once seen)" \
		test "$EVICTED" -gt 0
	check "GPUswap brought chunks back to VRAM ($RETURNED chunks)" test "$RETURNED" -gt 0
fi

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
