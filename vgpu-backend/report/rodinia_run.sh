#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rodinia_run.sh - one run of vgpu-report's Rodinia experiments: INSTANCES
# instances of one tests/rodinia program at once, as local tenants of a
# private vgpud on simgpu, with AVAIL bytes of VRAM left to them.
#
#   rodinia_run.sh BUILD_DIR KERNEL_DIR OUT_PREFIX PROGRAM SIZE REPEAT AVAIL \
#                  POLICY SEED SWAP INSTANCES [DUMMY [CHUNK]]
#
# vgpud gets 32 MiB of simgpu VRAM (28 MiB for VMs) with CHUNK-byte chunks
# (default 64 KiB) and
# the eviction policy POLICY (random, priority, refbits) seeded with SEED;
# POLICY+whole (e.g. refbits+whole) evicts whole buffers instead of chunks
# (vgpud --whole-buffer-eviction yes: the whole-buffer-swap baseline).
# The available memory is set by a ballast: a vgpu-tenant of a profile of
# weight 1000 that allocates (VRAM for VMs - AVAIL) first and holds it; the
# core always picks the VM with the most resident bytes per weight as the
# victim, so the ballast is never evicted and the programs share AVAIL.
# DUMMY > 0: before the programs start, an idle tenant of the programs'
# weight allocates DUMMY bytes of AVAIL and holds them, never submitting
# (the thesis's dummy of §6.3.2, against which evictions see no
# contention); vgpud's eviction passes then take from it and the programs.
# SWAP=1 runs nn with RODINIA_NN_SWAP=1. vgpud runs with
# SIMGPU_ACCESS_PROFILE (vgpu-backend/simgpu/access_profile.h): each
# program's address space leaves its per-page access counts and its modeled
# busy time; they are copied to OUT_PREFIX-I.tsv.
#
# Prints one line per program address space, "as=N modeled_ns=T" (compute +
# copy engine time of the address space on simgpu's modeled clock, N in
# creation order), one per instance, "instance=I status=RC runtime_ms=W
# kernel_ms=K" (the program's own wall-clock line), and a last line
# "moved_bytes=B" (chunks evicted or placed on the host, times CHUNK) and
# "eviction passes=N policy_ns=.. setup_ns=.. copy_ns=.. copy_modeled_ns=..
# other_ns=.. drain_ns=.. pause_ns=.. suspensions=.. bytes=..", vgpud's
# eviction time over the run (vgpuctl status: gpu.eviction).
# Exit 0 when it ran (the instances' own statuses are in their lines), 2 when
# vgpud or the ballast could not be set up.
set -uo pipefail

[ $# -ge 11 ] && [ $# -le 13 ] || { echo "usage: $0 BUILD_DIR KERNEL_DIR OUT_PREFIX PROGRAM SIZE REPEAT AVAIL POLICY SEED SWAP INSTANCES [DUMMY [CHUNK]]" >&2; exit 2; }
BUILD="$1" KERNELS="$2" PREFIX="$3" PROG="$4" SIZE="$5" REPEAT="$6" AVAIL="$7"
POLICY="$8" SEED="$9" SWAP="${10}" INSTANCES="${11}" DUMMY="${12:-0}" CHUNK="${13:-65536}"
VGPUD="$BUILD/vgpu-backend/daemon/vgpud"
VGPUCTL="$BUILD/vgpu-backend/ctl/vgpuctl"
TENANT="$BUILD/guest-driver/tools/vgpu-tenant"
LIBCUDA="$BUILD/guest-driver/cuda"
BIN="$BUILD/tests/rodinia/rodinia-$PROG"
for f in "$VGPUD" "$VGPUCTL" "$TENANT" "$BIN" "$LIBCUDA/libcuda.so.1"; do
	[ -e "$f" ] || { echo "rodinia_run: $f is not built" >&2; exit 2; }
done

DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-report-rodinia.XXXXXX")" || exit 2
VGPUD_PID="" BALLAST_PID="" DUMMY_PID=""
cleanup() {
	[ -n "$DUMMY_PID" ] && kill -TERM "$DUMMY_PID" 2>/dev/null && wait "$DUMMY_PID" 2>/dev/null
	[ -n "$BALLAST_PID" ] && kill -TERM "$BALLAST_PID" 2>/dev/null && wait "$BALLAST_PID" 2>/dev/null
	[ -n "$VGPUD_PID" ] && kill -TERM "$VGPUD_PID" 2>/dev/null && wait "$VGPUD_PID" 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT
ctl() { "$VGPUCTL" --socket "$DIR/control.sock" "$@"; }
status_field() { ctl status --json 2>/dev/null | sed -n "s/^ *\"$1\": *\\([0-9]*\\),*$/\\1/p" | head -1; }

mkdir "$DIR/profiles"
: >"$DIR/vgpud.conf"
REFBITS=no WHOLE=no
case "$POLICY" in *+whole) WHOLE=yes POLICY="${POLICY%+whole}" ;; esac
[ "$POLICY" = refbits ] && REFBITS=yes
SIMGPU_ACCESS_PROFILE="$DIR/profiles" "$VGPUD" --config "$DIR/vgpud.conf" --gpu simgpu \
	--vram 32M --reserved-vram 4M --chunk-size "$CHUNK" --policy "$POLICY" --seed "$SEED" \
	--reference-bits "$REFBITS" --whole-buffer-eviction "$WHOLE" --gpu-accounting no \
	--profile ballast:weight=1000,cap=0,max_instances=1 --allowed-profiles '*' \
	--socket "$DIR/vgpud.sock" --control-socket "$DIR/control.sock" \
	--log-level error 2>"$DIR/vgpud.log" &
VGPUD_PID=$!
for ((i = 0; i < 100; i++)); do
	ctl health >/dev/null 2>&1 && break
	kill -0 "$VGPUD_PID" 2>/dev/null || { cat "$DIR/vgpud.log" >&2; exit 2; }
	sleep 0.05
done
VRAM=$(status_field vram)
BALLAST=$(((VRAM - AVAIL) / 65536 * 65536))
if [ "$BALLAST" -gt 0 ]; then
	"$TENANT" --socket "$DIR/vgpud.sock" --name ballast --profile ballast \
		--workload alloc-leak --size "$BALLAST" --buffer-size "$BALLAST" --duration 1h \
		--priority 15 >"$DIR/ballast.log" 2>&1 &
	BALLAST_PID=$!
	for ((i = 0; ; i++)); do
		a=$(status_field allocated)
		[ "${a:-0}" -ge "$BALLAST" ] && break
		if [ "$i" -ge 200 ] || ! kill -0 "$BALLAST_PID" 2>/dev/null; then
			echo "rodinia_run: the ballast did not allocate $BALLAST bytes" >&2
			cat "$DIR/ballast.log" >&2
			exit 2
		fi
		sleep 0.05
	done
fi

TENANTS=$([ "$BALLAST" -gt 0 ] && echo 1 || echo 0)
DUMMY=$((DUMMY / 65536 * 65536))
if [ "$DUMMY" -gt 0 ]; then
	"$TENANT" --socket "$DIR/vgpud.sock" --name dummy --workload alloc-leak --size "$DUMMY" \
		--buffer-size 262144 --duration 1h >"$DIR/dummy.log" 2>&1 &
	DUMMY_PID=$!
	TENANTS=$((TENANTS + 1))
	for ((i = 0; ; i++)); do
		a=$(status_field allocated)
		[ "${a:-0}" -ge $((BALLAST + DUMMY)) ] && break
		if [ "$i" -ge 200 ] || ! kill -0 "$DUMMY_PID" 2>/dev/null; then
			echo "rodinia_run: the dummy did not allocate $DUMMY bytes" >&2
			cat "$DIR/dummy.log" >&2
			exit 2
		fi
		sleep 0.05
	done
	sleep 0.2 # its last buffer's fill (a kernel) finishes; then it only holds
fi

declare -a PIDS=()
for ((i = 1; i <= INSTANCES; i++)); do
	env LD_LIBRARY_PATH="$LIBCUDA" VGPUD_SOCKET="$DIR/vgpud.sock" VGPU_VM_NAME="$PROG-$i" \
		RODINIA_KERNELS="$KERNELS" RODINIA_NN_SWAP="$SWAP" \
		"$BIN" --repeat "$REPEAT" --seed "$i" "$SIZE" >"$DIR/out-$i" 2>&1 &
	PIDS[i]=$!
done
for ((i = 1; i <= INSTANCES; i++)); do
	wait "${PIDS[i]}"
	echo $? >"$DIR/status-$i"
done
# The address spaces are destroyed when the VMs detach: wait for that.
for ((i = 0; i < 100; i++)); do
	[ "$(status_field vms)" = "$TENANTS" ] && break
	sleep 0.05
done
MOVED=$(($(status_field chunks_evicted) + $(status_field chunks_placed_on_host)))
EVICTION=$(ctl status --json 2>/dev/null | jq -r '.gpu.eviction | "passes=\(.passes) policy_ns=\(.policy_ns) setup_ns=\(.setup_ns) copy_ns=\(.copy_ns) copy_modeled_ns=\(.copy_modeled_ns) other_ns=\(.other_ns) drain_ns=\(.victim_drain_ns) pause_ns=\(.victim_pause_ns) suspensions=\(.vm_suspensions) bytes=\(.bytes_copied)"')

# One profile per program's address space (the ballast's is written when
# it is stopped, after this), in creation order; which instance made which
# is not known, so the modeled times are printed per address space.
mapfile -t FILES < <(ls -1v "$DIR/profiles" 2>/dev/null)
n=0
for f in "${FILES[@]}"; do
	n=$((n + 1))
	cp "$DIR/profiles/$f" "$PREFIX-$n.tsv"
	modeled=$(sed -n 's/^# busy_ns compute=\([0-9]*\) copy=\([0-9]*\)$/\1 \2/p' "$PREFIX-$n.tsv" |
		awk '{ print $1 + $2 }')
	echo "as=$n modeled_ns=${modeled:--}"
done
for ((i = 1; i <= INSTANCES; i++)); do
	line=$(tail -1 "$DIR/out-$i")
	rt=$(sed -n 's/^runtime_ms=\([0-9.]*\) .*/\1/p' <<<"$line")
	kt=$(sed -n 's/.* kernel_ms=\([0-9.]*\) .*/\1/p' <<<"$line")
	echo "instance=$i status=$(cat "$DIR/status-$i") runtime_ms=${rt:--} kernel_ms=${kt:--}"
	[ "$(cat "$DIR/status-$i")" = 0 ] || sed 's/^/    /' "$DIR/out-$i" | tail -3 >&2
done
echo "moved_bytes=$((MOVED * CHUNK))"
echo "eviction ${EVICTION:-passes=-}"
