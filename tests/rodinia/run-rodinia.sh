#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-rodinia.sh - the Rodinia programs of tests/rodinia as local tenants
# of a private vgpud on simgpu, through libcuda.so.1 (LD_LIBRARY_PATH,
# VGPUD_SOCKET, VGPU_VM_NAME: as a user runs them).
#
#   run-rodinia.sh programs  (meson test rodinia-programs) each of the
#                            eight once, one after another, small, with
#                            few repetitions, on 64 MiB of VRAM: each
#                            exits 0 with its results right and prints its
#                            runtime line.
#   run-rodinia.sh pressure  (meson test rodinia-pressure) two instances
#                            each of bfs, heartwall and nn at once, their
#                            working sets together more than twice the
#                            16 MiB of VRAM: every instance exits 0 with
#                            its results right (bfs and heartwall exactly),
#                            vgpud's counters say chunks went to host
#                            memory and more than the VRAM was allocated at
#                            once.
# Both: afterwards vgpud is healthy, its invariants hold, nothing is left
# allocated, and it stops with status 0.
#
# Options after the mode: --keep (keep the runtime directory). Exit status:
# 0 passed, 1 a check failed, 2 could not run, 64 usage, 77 skipped
# (libcuda.so.1 or the programs not built, or no jq; the reason printed).
set -uo pipefail

MODE="${1:-}"
KEEP=0
[ "${2:-}" = --keep ] && KEEP=1
case "$MODE" in
programs | pressure) ;;
*) echo "usage: $0 programs|pressure [--keep]" >&2; exit 64 ;;
esac

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PROGRAM="run-rodinia $MODE"
BUILD_DIR="${BUILD_DIR:-$ROOT/build/plain}"
VGPUD="${VGPUD:-$BUILD_DIR/vgpu-backend/daemon/vgpud}"
VGPUCTL="${VGPUCTL:-$BUILD_DIR/vgpu-backend/ctl/vgpuctl}"
RODINIA_DIR="${RODINIA_DIR:-$BUILD_DIR/tests/rodinia}"
LIBCUDA_DIR="${LIBCUDA_DIR:-$BUILD_DIR/guest-driver/cuda}"
export RODINIA_KERNELS="${RODINIA_KERNELS:-$HERE/kernels}"
# shellcheck source=tests/lib/needs.sh
. "$ROOT/tests/lib/needs.sh"
# shellcheck source=tests/lib/checks.sh
. "$ROOT/tests/lib/checks.sh"
need_binaries "$PROGRAM" "$VGPUD" "$VGPUCTL"
need_jq

# program, size, repetitions (small: simgpu interprets every instruction)
PROGRAMS=("backprop 256K 3" "bfs 512K 2" "heartwall 256K 1" "hotspot 256K 2"
	"lud 128K 2" "nn 1M 3" "srad-v1 256K 2" "srad-v2 256K 2")
PRESSURE=("bfs 4M 1" "bfs 4M 1" "heartwall 6M 1" "heartwall 6M 1" "nn 6M 2" "nn 6M 2")
VRAM=64M
[ "$MODE" = pressure ] && VRAM=16M

if [ ! -e "$LIBCUDA_DIR/libcuda.so.1" ]; then
	echo "SKIP: $LIBCUDA_DIR/libcuda.so.1 is not built (guest-driver/cuda); $PROGRAM needs it"
	exit 77
fi
for t in "${PROGRAMS[@]}"; do
	prog="rodinia-${t%% *}"
	if [ ! -x "$RODINIA_DIR/$prog" ]; then
		echo "SKIP: $RODINIA_DIR/$prog is not built (tests/rodinia builds the programs only with libcuda); $PROGRAM needs it"
		exit 77
	fi
done

# shellcheck source=vgpu-backend/demo/processes.sh
. "$ROOT/vgpu-backend/demo/processes.sh"
trap 'exit 130' INT
trap 'exit 143' TERM
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-rodinia.XXXXXX")" || exit 2
START=$(date +%s)
SOCKET="$RUN_DIR/vgpud.sock"
CONTROL="$RUN_DIR/control.sock"
LOG="$RUN_DIR/vgpud.log"
declare -A PROG_PID=() PROG_STATUS=()

ctl() { "$VGPUCTL" --socket "$CONTROL" "$@"; }

: >"$RUN_DIR/vgpud.conf" # built-in profiles, flags only
echo "\$ vgpud --gpu simgpu --vram $VRAM --chunk-size 1M"
"$VGPUD" --config "$RUN_DIR/vgpud.conf" --gpu simgpu --vram "$VRAM" --chunk-size 1M \
	--allowed-profiles '*' --socket "$SOCKET" --control-socket "$CONTROL" \
	--log-level warn 2>"$LOG" &
VGPUD_PID=$!
PIDS+=("$VGPUD_PID")
for ((i = 0; i < 100; i++)); do
	ctl health >/dev/null 2>&1 && break
	if ! kill -0 "$VGPUD_PID" 2>/dev/null || [ "$i" = 99 ]; then
		echo "$PROGRAM: vgpud did not start; its log:" >&2
		cat "$LOG" >&2
		exit 2
	fi
	sleep 0.1
done
VRAM_BYTES=$(ctl status --json | jq -r '.gpu.vram')
echo "vgpud on simgpu: $VRAM_BYTES bytes of VRAM for VMs"

start_program() { # vm prog size repeat
	local vm="$1" prog="rodinia-$2"
	echo "\$ VGPU_VM_NAME=$vm $prog --repeat $4 $3"
	LD_LIBRARY_PATH="$LIBCUDA_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		VGPUD_SOCKET="$SOCKET" VGPU_VM_NAME="$vm" \
		"$RODINIA_DIR/$prog" --repeat "$4" "$3" >"$RUN_DIR/$vm.out" 2>&1 &
	PROG_PID[$vm]=$!
	PIDS+=("$!")
}

finish_program() { # vm: wait, show its output, check it
	local vm="$1"
	wait "${PROG_PID[$vm]}"
	PROG_STATUS[$vm]=$?
	forget_pid "${PROG_PID[$vm]}"
	sed 's/^/    /' "$RUN_DIR/$vm.out"
	check "$vm exited 0 with its results right (status ${PROG_STATUS[$vm]})" \
		test "${PROG_STATUS[$vm]}" = 0
	check "$vm ended with its runtime line" \
		grep -Eq '^runtime_ms=[0-9.]+ kernel_ms=[0-9.]+ ' <(tail -1 "$RUN_DIR/$vm.out")
}

if [ "$MODE" = programs ]; then
	for t in "${PROGRAMS[@]}"; do
		read -r prog size repeat <<<"$t"
		t0=$(date +%s.%N)
		start_program "vm-$prog" "$prog" "$size" "$repeat"
		finish_program "vm-$prog"
		echo "    ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"
	done
else
	NAMES=()
	WANT=0
	n=0
	for t in "${PRESSURE[@]}"; do
		read -r prog size repeat <<<"$t"
		n=$((n + 1))
		start_program "vm-$prog-$n" "$prog" "$size" "$repeat"
		NAMES+=("vm-$prog-$n")
		WANT=$((WANT + ${size%M} * 1048576))
	done
	PEAK_ALLOCATED=0
	while :; do
		running=0
		for vm in "${NAMES[@]}"; do
			kill -0 "${PROG_PID[$vm]}" 2>/dev/null && running=1
		done
		[ "$running" = 0 ] && break
		a=$(ctl status --json 2>/dev/null | jq -r '.gpu.allocated // 0' 2>/dev/null)
		[[ "$a" =~ ^[0-9]+$ ]] && [ "$a" -gt "$PEAK_ALLOCATED" ] && PEAK_ALLOCATED=$a
		if [ $(($(date +%s) - START)) -gt 150 ]; then
			echo "the programs did not finish within 150 s; stopping them"
			for vm in "${NAMES[@]}"; do
				kill -0 "${PROG_PID[$vm]}" 2>/dev/null && kill -TERM "${PROG_PID[$vm]}"
			done
			break
		fi
		sleep 0.1
	done
	for vm in "${NAMES[@]}"; do
		finish_program "$vm"
	done
	MOVED=$(ctl status --json 2>/dev/null |
		jq -r '(.gpu.chunks_evicted + .gpu.chunks_placed_on_host) * .gpu.chunk' 2>/dev/null |
		grep -E '^[0-9]+$' || echo 0)
	check "the instances' working sets ($WANT bytes) are at least twice the VRAM ($VRAM_BYTES)" \
		test "$WANT" -ge $((2 * VRAM_BYTES))
	check "more than the VRAM was allocated at once (at most $PEAK_ALLOCATED bytes seen)" \
		test "$PEAK_ALLOCATED" -gt "$VRAM_BYTES"
	check "vgpud moved chunks to host memory ($MOVED bytes)" test "$MOVED" -gt 0
fi

for ((i = 0; i < 100; i++)); do
	[ "$(ctl status --json 2>/dev/null | jq -r '.gpu.vms' 2>/dev/null)" = 0 ] && break
	sleep 0.1
done
GPU_JSON=$(ctl status --json 2>/dev/null)
HEALTH_JSON=$(ctl health --json --check 2>/dev/null)
check "afterwards: vgpuctl health ok, invariants ok" \
	test "$(jq -r '.status == "ok" and .invariants == "ok"' <<<"$HEALTH_JSON" 2>/dev/null)" = true
check "afterwards: no VM attached, nothing allocated ($(jq -r '"\(.gpu.vms) VMs, \(.gpu.allocated) bytes"' <<<"$GPU_JSON"))" \
	test "$(jq -r '.gpu.vms == 0 and .gpu.allocated == 0' <<<"$GPU_JSON")" = true
reap "$VGPUD_PID" 10
check "vgpud stopped with status 0 ($REAPED_STATUS)" test "$REAPED_STATUS" = 0
echo "$PROGRAM: $passed passed, $failed failed, $(($(date +%s) - START)) s"
if [ "$failed" -ne 0 ]; then
	echo "--- vgpud log:"
	tail -40 "$LOG"
	exit 1
fi
