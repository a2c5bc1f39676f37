# SPDX-License-Identifier: MIT
#
# processes.sh - the processes a demo or test script starts, and its clean
# exit: sourced by vgpu-backend/demo/vgpu-demo.sh and tests/demo/*.sh.
#
# The script sets PROGRAM (its name, for messages), KEEP (1: keep RUN_DIR)
# and RUN_DIR (its temporary directory, once made), appends every process
# it starts to PIDS, and calls reap for the ones it waits for. On any exit
# (the EXIT trap set here) every process still in PIDS is stopped and RUN_DIR
# removed unless KEEP=1.

RUN_DIR=""
PIDS=() # every process the script started and has not reaped

forget_pid() { # pid
	local i
	for i in "${!PIDS[@]}"; do
		[ "${PIDS[$i]}" = "$1" ] && unset 'PIDS[i]'
	done
}

# reap PID SECS: SIGTERM, wait up to SECS, then SIGKILL; sets REAPED_STATUS.
reap() {
	local pid="$1" secs="$2" i
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	REAPED_STATUS=$?
	forget_pid "$pid"
}

# shellcheck disable=SC2317 # called from the EXIT trap
stop_all() {
	local pid alive i
	[ ${#PIDS[@]} -eq 0 ] && return 0
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for ((i = 0; i < 50; i++)); do
		alive=0
		for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && break
		sleep 0.1
	done
	for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	PIDS=()
}

# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	stop_all
	if [ -n "$RUN_DIR" ]; then
		if [ "${KEEP:-0}" = 1 ]; then
			echo "${PROGRAM:-$0}: kept $RUN_DIR" >&2
		else
			rm -rf "$RUN_DIR"
		fi
	fi
	exit "$rc"
}
trap cleanup EXIT
