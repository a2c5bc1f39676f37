# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# vgpud-env.sh - a private vgpud on simgpu for the CUDA programs' tests,
# and the programs started as its local tenants; sourced by
# run-tenants.sh and run-hostile.sh (after tests/lib/needs.sh,
# tests/lib/checks.sh and vgpu-backend/demo/processes.sh).
#
# Inputs (meson test sets them; the defaults fit ./vgpu-dev build):
#   VGPUD, VGPUCTL          the daemon and its control client
#   CUDA_PROG_DIR           where the programs (cuda-saxpy, ...) are built
#   LIBCUDA_DIR             where libcuda.so.1 is (guest-driver/cuda)
#   CUDA_PROG_KERNELS       the kernels' PTX and fatbins (tests/cuda/kernels)
#
# need_cuda_programs NAME PROG...  exit 77 (skipped, reason printed) when
#                          libcuda.so.1 or a program is not built
# start_vgpud VRAM ARGS... vgpud with VRAM on simgpu, 1 MiB chunks, every
#                          profile allowed, sockets in RUN_DIR; exit 2
#                          when it does not come up; sets SOCKET, CONTROL,
#                          LOG, VGPUD_PID
# start_program VM PROG ARGS...  PROG as the tenant VM (VGPU_VM_NAME),
#                          stdout+stderr in RUN_DIR/VM.out; sets
#                          PROG_PID[VM]
# wait_program VM          wait for it; sets PROG_STATUS[VM]
# ctl ARGS...              vgpuctl on this vgpud
# moved_bytes              bytes of chunks that went to host memory so far
#                          (evicted from VRAM plus placed there at once;
#                          vgpud's counters, from status)
# evicted_now              bytes of VMs' memory in host memory right now

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build/plain}"
VGPUD="${VGPUD:-$BUILD_DIR/vgpu-backend/daemon/vgpud}"
VGPUCTL="${VGPUCTL:-$BUILD_DIR/vgpu-backend/ctl/vgpuctl}"
CUDA_PROG_DIR="${CUDA_PROG_DIR:-$BUILD_DIR/tests/cuda}"
LIBCUDA_DIR="${LIBCUDA_DIR:-$BUILD_DIR/guest-driver/cuda}"
export CUDA_PROG_KERNELS="${CUDA_PROG_KERNELS:-$ROOT/tests/cuda/kernels}"
CHUNK=1M
# shellcheck disable=SC2034 # PROG_STATUS: read by the sourcing script
declare -A PROG_PID=() PROG_STATUS=()

need_cuda_programs() {
	local name="$1" prog
	shift
	if [ ! -e "$LIBCUDA_DIR/libcuda.so.1" ]; then
		echo "SKIP: $LIBCUDA_DIR/libcuda.so.1 is not built (guest-driver/cuda); $name needs it"
		exit 77
	fi
	for prog; do
		if [ ! -x "$CUDA_PROG_DIR/$prog" ]; then
			echo "SKIP: $CUDA_PROG_DIR/$prog is not built (tests/cuda builds the programs only with libcuda); $name needs it"
			exit 77
		fi
	done
}

ctl() { "$VGPUCTL" --socket "$CONTROL" "$@"; }

start_vgpud() {
	local vram="$1" i
	shift
	SOCKET="$RUN_DIR/vgpud.sock"
	CONTROL="$RUN_DIR/control.sock"
	LOG="$RUN_DIR/vgpud.log"
	: >"$RUN_DIR/vgpud.conf" # built-in profiles, flags only
	echo "\$ vgpud --gpu simgpu --vram $vram --chunk-size $CHUNK $*"
	"$VGPUD" --config "$RUN_DIR/vgpud.conf" --gpu simgpu --vram "$vram" --chunk-size "$CHUNK" \
		--allowed-profiles '*' --socket "$SOCKET" --control-socket "$CONTROL" \
		--log-level warn "$@" 2>"$LOG" &
	VGPUD_PID=$!
	PIDS+=("$VGPUD_PID")
	for ((i = 0; i < 100; i++)); do
		ctl health >/dev/null 2>&1 && return 0
		kill -0 "$VGPUD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "${PROGRAM:-vgpud-env}: vgpud did not start; its log:" >&2
	cat "$LOG" >&2
	exit 2
}

start_program() {
	local vm="$1" prog="$2"
	shift 2
	echo "\$ VGPU_VM_NAME=$vm ${CUDA_PROG_BYTES:+CUDA_PROG_BYTES=$CUDA_PROG_BYTES }${CUDA_PROG_REPEAT:+CUDA_PROG_REPEAT=$CUDA_PROG_REPEAT }$prog $*"
	LD_LIBRARY_PATH="$LIBCUDA_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		VGPUD_SOCKET="$SOCKET" VGPU_VM_NAME="$vm" \
		"$CUDA_PROG_DIR/$prog" "$@" >"$RUN_DIR/$vm.out" 2>&1 &
	PROG_PID[$vm]=$!
	PIDS+=("$!")
}

wait_program() {
	local vm="$1"
	wait "${PROG_PID[$vm]}"
	# shellcheck disable=SC2034 # read by the sourcing script
	PROG_STATUS[$vm]=$?
	forget_pid "${PROG_PID[$vm]}"
}

moved_bytes() {
	ctl status --json 2>/dev/null |
		jq -r '(.gpu.chunks_evicted + .gpu.chunks_placed_on_host) * .gpu.chunk' 2>/dev/null |
		grep -E '^[0-9]+$' || echo 0
}

evicted_now() {
	ctl status --json 2>/dev/null | jq -r '.gpu.evicted' 2>/dev/null | grep -E '^[0-9]+$' || echo 0
}

# wait_idle SECS: until no VM is attached (a tenant's detach follows its
# exit), at most SECS.
wait_idle() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		[ "$(ctl status --json 2>/dev/null | jq -r '.gpu.vms' 2>/dev/null)" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
