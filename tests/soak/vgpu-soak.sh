#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# vgpu-soak.sh - many VMs living randomly on one oversubscribed vgpud for
# minutes (./vgpu-dev soak; a 2-minute run is the meson test 'soak').
#
#   1. vgpud on simgpu with a private runtime directory (mktemp): VRAM sized
#      so that the tenants' memory is about three times the VRAM (at least
#      2x is checked; 37 MiB for 64 tenants), 256 KiB chunks, the default profile vgpu-1G allowed
#      any number of instances, room for every tenant's address space and
#      channel, a host cache of 8 MiB.
#   2. --tenants vgpu-tenant processes (default 64), each `--workload soak`
#      for --minutes: random allocate / free / STREAM / verify / detach
#      holding its buffers and attach again, at most 4 MiB each (more with
#      fewer than 21 tenants), buffers of up to 1 MiB, every buffer checksummed against the CPU's reference
#      before it is freed or dropped and at the end. Every 4 s (not in the
#      last tenth of the run) one random tenant is killed with SIGKILL, in
#      whatever it is doing, and a new one takes its place under a new name
#      (the hard detach: vgpud sees the connection drop).
#   2b. The hostile mix (issue 24; --no-hostile leaves it out): at random
#      kill ticks one of three attackers starts, at most one of each kind
#      at a time, for 5 to 15 s: a hog (vgpu-tenant --workload hog: its
#      channel full of long STREAM kernels, re-armed when killed), a
#      re-arming staller (--workload staller: a channel parked on an
#      acquire nothing releases, parked again when killed) and a slow
#      control reader (control-hog: pipelines status requests, reads a
#      byte every 50 ms). vgpud's drain timeout is 2 s here. They are
#      named hostile-*, are not soak tenants, and must all have ended by
#      the end; channel errors are allowed for them only.
#   3. Every few seconds (about 60 samples a run): vgpud's RSS (VmRSS,
#      RssAnon, RssShmem of /proc/PID/status), its open file descriptors,
#      and from `vgpuctl status --json` the memory allocated, resident,
#      evicted and in host RAM.
#   4. Checks:
#        - every tenant that was not killed exited 0 with every checksum
#          right (none wrong), and took steps;
#        - at most 1% of the ALLOCs were refused (no host budget and a 1 GiB
#          cap: only BUSY after allocate's retries could refuse one);
#        - the tenants together held at least 2x the VRAM (median over the
#          samples of the second half: a status taken while a wave of
#          tenants detaches and attaches again sees a fraction of the memory
#          for an instant) and chunks were evicted and returned;
#        - RSS flat after warm-up, judged on two series sampled together,
#          the first half of the run being the warm-up:
#            * VmRSS less the host memory holding evicted chunks
#              (`host_used`): its peak in the second half at most 16 MiB
#              above its peak in the first half;
#            * RssAnon (heap, thread stacks, simgpu's VRAM image): at most
#              8 MiB above.
#          Why this holds for a daemon without leaks: simgpu's VRAM is an
#          anonymous mapping whose pages stay once touched, and a VRAM
#          oversubscribed this much is touched in full within seconds; the
#          host memory of evicted chunks follows the tenants' load (the
#          arena punches a hole where a chunk is freed), which is why it is
#          taken out: what remains is the host cache (at most 8 MiB here),
#          the channel windows, mailboxes and shadow pages of at most
#          --tenants VMs, and the heap, all bounded by the tenant count and
#          reached once every tenant has attached and held memory. The
#          remaining noise is a few MiB (RSS and host_used are read a few
#          milliseconds apart while chunks move). A run takes tens of
#          thousands of steps a minute, so a leak of a few hundred bytes per
#          step, or of one VM's state per detach, grows past the bounds in
#          the second half.
#        - file descriptors: after every tenant has gone, vgpud holds
#          exactly as many as before the first attached (evicted chunks,
#          channel windows, mailboxes, eventfds and sockets are per VM or
#          per chunk: all must be closed by the detaches), and no VM,
#          allocation or host memory is left;
#        - `vgpuctl status` answered at every sample (within 10 s; the
#          hostile mix must not freeze the control plane);
#        - vgpud's invariants hold (`vgpuctl health --check`), no channel
#          error of a soak tenant (no soak tenant does anything wrong; the
#          hostile ones' channels are killed), vgpud logged no error, and it stops on SIGTERM with status 0 (under
#          AddressSanitizer that includes its leak check).
#
# Under AddressSanitizer (VGPU_SOAK_SANITIZED=1, set by meson for a
# sanitized build) the RSS bound is not judged: ASan's quarantine keeps
# freed memory (up to 256 MiB) on purpose, and its leak check at vgpud's
# exit does that job better.
#
# Usage: tests/soak/vgpu-soak.sh [--minutes N] [--tenants N] [--build-dir DIR]
#                                [--keep]
# VGPU_SEED (default: random) seeds everything random: the tenants' steps,
# which tenant is killed when, vgpud's eviction policy. It is printed.
#
# Exit status: 0 all checks passed; 1 a check failed; 2 the test could not
# run (binaries missing, vgpud did not start); 64 bad usage; 77 skipped (no
# jq). Every process it starts is stopped and the runtime directory removed
# on every exit path (Ctrl-C included). The last line is
# "soak: N passed, N failed".
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
	cat <<'EOF'
Usage: tests/soak/vgpu-soak.sh [--minutes N] [--tenants N] [--build-dir DIR] [--keep]
                               [--no-hostile]

Runs N tenants (default 64) with random allocate/free/submit/detach for
N minutes (default 10) on one vgpud at >= 2x oversubscription, checking
every buffer's checksum, vgpud's RSS (flat after warm-up) and file
descriptors (back to the baseline), and prints a summary.

  --minutes N      how long (default 10; a decimal such as 0.5 is fine)
  --tenants N      tenants at once (default 64)
  --build-dir DIR  where the binaries are (default: build/plain); $VGPUD,
                   $VGPUCTL and $VGPU_TENANT override single binaries
  --keep           keep the runtime directory (logs, results, samples)
  --no-hostile     without the hostile mix (a hog, a re-arming staller and a
                   slow control reader started at random; $CONTROL_HOG is
                   the reader, default BUILD_DIR/tests/soak/control-hog)
  -h, --help       this text

VGPU_SEED seeds every random choice (default: random; printed).
Exit status: 0 passed, 1 a check failed, 2 could not run, 64 bad usage,
77 skipped (no jq).
EOF
}

MINUTES=10
TENANTS=64
BUILD_DIR="$ROOT/build/plain"
KEEP=0
HOSTILE=1
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes)
		[ $# -ge 2 ] || { echo "soak: --minutes wants a number" >&2; exit 64; }
		MINUTES="$2"
		shift ;;
	--tenants)
		[ $# -ge 2 ] || { echo "soak: --tenants wants a number" >&2; exit 64; }
		TENANTS="$2"
		shift ;;
	--build-dir)
		[ $# -ge 2 ] || { echo "soak: --build-dir wants a directory" >&2; exit 64; }
		BUILD_DIR="$2"
		shift ;;
	--keep) KEEP=1 ;;
	--no-hostile) HOSTILE=0 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "soak: unknown argument '$1'; try --help" >&2; exit 64 ;;
	esac
	shift
done
if ! [[ "$MINUTES" =~ ^[0-9]+(\.[0-9]+)?$ ]] || [ "$(awk -v m="$MINUTES" 'BEGIN { print (m > 0) }')" != 1 ]; then
	echo "soak: --minutes wants a positive number such as 2 or 0.5, not '$MINUTES'" >&2
	exit 64
fi
if ! [[ "$TENANTS" =~ ^[0-9]+$ ]] || [ "$TENANTS" -lt 8 ] || [ "$TENANTS" -gt 256 ]; then
	echo "soak: --tenants wants a number from 8 to 256, not '$TENANTS'" >&2
	exit 64
fi

VGPUD="${VGPUD:-$BUILD_DIR/vgpu-backend/daemon/vgpud}"
VGPUCTL="${VGPUCTL:-$BUILD_DIR/vgpu-backend/ctl/vgpuctl}"
VGPU_TENANT="${VGPU_TENANT:-$BUILD_DIR/guest-driver/tools/vgpu-tenant}"
# shellcheck source=tests/lib/needs.sh
. "$ROOT/tests/lib/needs.sh"
need_binaries soak "$VGPUD" "$VGPUCTL" "$VGPU_TENANT"
CONTROL_HOG="${CONTROL_HOG:-$BUILD_DIR/tests/soak/control-hog}"
[ "$HOSTILE" = 0 ] || need_binaries soak "$CONTROL_HOG"
need_jq

# ------------------------------------------------------------ the run
# vgpud runs with its defaults but for the sizes, the room for --tenants VMs
# (address spaces, channels, instances of the default profile), a small host
# cache (a bounded term of the RSS), and 30 s instead of 2 s (swap acks) and
# 5 s (attach) for a tenant to answer: 64 tenant processes share two CPUs
# here, and a tenant's agent thread that waits seconds for one is not what
# the soak tests (a killed tenant's socket closes at once, no timeout
# involved).
SEED="${VGPU_SEED:-$(od -An -N3 -tu4 /dev/urandom | tr -d ' ')}"
if ! [[ "$SEED" =~ ^[0-9]+$ ]]; then
	echo "soak: VGPU_SEED wants a number, not '$SEED'" >&2
	exit 64
fi
RANDOM=$((SEED % 32768)) # bash's generator: which tenant is killed when
DURATION_S=$(awk -v m="$MINUTES" 'BEGIN { s = int(m * 60 + 0.5); print (s < 1 ? 1 : s) }')
TENANT_SIZE_MIB=4 # most one tenant holds
BUFFER=1M
CHUNK=256K
RESERVED_MIB=4
VRAM_MIN_MIB=12 # vgpud wants 16 MiB of VRAM at least, 4 of them reserved
# A tenant holds between a quarter of its size and all of it (about 45% on
# average, with what detaches and kills drop): VRAM for VMs of a seventh of
# the sizes makes about 3x. Few tenants hold more each, so that the VRAM
# need not go below vgpud's least.
while [ $((TENANTS * TENANT_SIZE_MIB)) -lt $((VRAM_MIN_MIB * 7)) ]; do
	TENANT_SIZE_MIB=$((TENANT_SIZE_MIB * 2))
done
VRAM_MIB=$(((TENANTS * TENANT_SIZE_MIB + 6) / 7))
HOST_CACHE=8M
KILL_EVERY_S=4
SAMPLES=60
SAMPLE_EVERY_S=$(((DURATION_S + SAMPLES - 1) / SAMPLES))
[ "$SAMPLE_EVERY_S" -lt 1 ] && SAMPLE_EVERY_S=1
RSS_GROWTH_MAX_KIB=$((16 * 1024))  # VmRSS less host_used
ANON_GROWTH_MAX_KIB=$((8 * 1024))  # RssAnon
OVERSUBSCRIPTION_MIN=2
SANITIZED="${VGPU_SOAK_SANITIZED:-0}"

# shellcheck source=tests/lib/checks.sh
. "$ROOT/tests/lib/checks.sh"

PROGRAM=soak
# shellcheck source=vgpu-backend/demo/processes.sh
. "$ROOT/vgpu-backend/demo/processes.sh"
trap 'echo "soak: interrupted; stopping everything" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-soak.XXXXXX")" || { echo "soak: cannot create a temporary directory" >&2; exit 2; }
: >"$RUN_DIR/vgpud.conf" # not /etc/vgpud/vgpud.conf: built-in profiles, flags only
SOCKET="$RUN_DIR/vgpud.sock"
CONTROL="$RUN_DIR/control.sock"
LOG="$RUN_DIR/vgpud.log"
SAMPLE_FILE="$RUN_DIR/samples"
ctl() { "$VGPUCTL" --socket "$CONTROL" "$@"; }

echo "soak: $TENANTS tenants for $MINUTES min ($DURATION_S s), VGPU_SEED=$SEED"
echo "runtime directory $RUN_DIR (removed at exit unless --keep)"
VGPUD_ARGS=(--config "$RUN_DIR/vgpud.conf" --gpu simgpu
	--vram "$((VRAM_MIB + RESERVED_MIB))M" --reserved-vram "${RESERVED_MIB}M"
	--chunk-size "$CHUNK" --seed "$SEED" --host-cache "$HOST_CACHE"
	--max-address-spaces "$((TENANTS * 2 + 8))" --max-channels "$((TENANTS * 2 + 8))"
	--profile "vgpu-1G:weight=1,cap=1G,max_instances=0" --default-profile vgpu-1G
	--swap-timeout-ms 30000 --attach-timeout-ms 30000 --drain-timeout-ms 2000
	--socket "$SOCKET" --control-socket "$CONTROL" --metrics off --mdev off
	--log-level warn)
echo "\$ vgpud ${VGPUD_ARGS[*]}"
"$VGPUD" "${VGPUD_ARGS[@]}" 2>"$LOG" &
VGPUD_PID=$!
PIDS+=("$VGPUD_PID")
ready=0
for ((i = 0; i < 100; i++)); do
	if ctl health >/dev/null 2>&1; then
		ready=1
		break
	fi
	kill -0 "$VGPUD_PID" 2>/dev/null || break
	sleep 0.1
done
if [ "$ready" = 0 ]; then
	echo "soak: vgpud did not start; its log:" >&2
	cat "$LOG" >&2
	exit 2
fi
# vgpud's open file descriptors, less simgpu's host arenas: the 256 MiB
# memfds that hold evicted chunks are kept for reuse for vgpud's lifetime
# (simgpu/host_arena.h), one more whenever host memory in use first passes
# another 256 MiB; they are counted apart (arena_count).
fd_links() { find "/proc/$VGPUD_PID/fd" -mindepth 1 -maxdepth 1 -printf '%l\n' 2>/dev/null; }
fd_count() { fd_links | grep -vc '^/memfd:simgpu-host-arena'; }
arena_count() { fd_links | grep -c '^/memfd:simgpu-host-arena'; }
status_kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$VGPUD_PID/status"; }
FD_BASELINE=$(fd_count)
fd_links | grep -v '^/memfd:simgpu-host-arena' >"$RUN_DIR/fds.before"
VRAM_BYTES=$(ctl status --json | jq -r '.gpu.vram')
echo "vgpud pid $VGPUD_PID: $((VRAM_BYTES >> 20)) MiB of VRAM for VMs, $FD_BASELINE file descriptors, RSS $(status_kib VmRSS) KiB"

# ------------------------------------------------------------ tenants
START=$(date +%s)
END=$((START + DURATION_S))
elapsed() { echo $(($(date +%s) - START)); }
declare -A TPID=() KILLED=()
declare -a SLOT_NAME=() # the tenant of each slot now
NAMES=()
serial=0

# start_tenant SLOT: a new tenant in slot SLOT, for the rest of the run.
start_tenant() {
	local slot="$1" name left
	serial=$((serial + 1))
	name=$(printf 'soak-%03d-%d' "$slot" "$serial")
	left=$((END - $(date +%s)))
	[ "$left" -lt 1 ] && left=1
	"$VGPU_TENANT" --socket "$SOCKET" --name "$name" --workload soak \
		--size "${TENANT_SIZE_MIB}M" --buffer-size "$BUFFER" --gpfifo-entries 32 \
		--duration "${left}s" --seed "$((SEED * 4096 + serial))" --timeout-ms 60000 \
		--json >"$RUN_DIR/$name.json" 2>"$RUN_DIR/$name.err" &
	TPID[$name]=$!
	PIDS+=("$!")
	NAMES+=("$name")
	SLOT_NAME[slot]=$name
}
for ((slot = 0; slot < TENANTS; slot++)); do
	start_tenant "$slot"
done
echo "started $TENANTS tenants (vgpu-tenant --workload soak --size ${TENANT_SIZE_MIB}M --buffer-size $BUFFER --duration ${DURATION_S}s)"

# ------------------------------------------------------------ hostile mix
declare -A HOSTILE_PID=() # kind -> pid of the one running
HOSTILE_NAMES=()
hostile_started=0
# start_hostile KIND SECONDS
start_hostile() {
	local kind="$1" secs="$2" name
	serial=$((serial + 1))
	name="hostile-$kind-$serial"
	case "$kind" in
	reader)
		"$CONTROL_HOG" "$CONTROL" "$secs" >"$RUN_DIR/$name.out" 2>&1 & ;;
	*)
		"$VGPU_TENANT" --socket "$SOCKET" --name "$name" --workload "$kind" \
			--size 2M --buffer-size 1M --gpfifo-entries 32 --duration "${secs}s" \
			--timeout-ms 60000 --json >"$RUN_DIR/$name.json" 2>"$RUN_DIR/$name.err" & ;;
	esac
	HOSTILE_PID[$kind]=$!
	PIDS+=("$!")
	HOSTILE_NAMES+=("$name:$!")
	hostile_started=$((hostile_started + 1))
}
maybe_start_hostile() { # one kind at random, if none of it runs
	local kinds=(hog staller reader) kind secs
	[ "$HOSTILE" = 1 ] || return 0
	[ $((RANDOM % 2)) = 0 ] || return 0
	kind=${kinds[$((RANDOM % 3))]}
	if [ -n "${HOSTILE_PID[$kind]:-}" ] && kill -0 "${HOSTILE_PID[$kind]}" 2>/dev/null; then
		return 0
	fi
	secs=$((5 + RANDOM % 11))
	[ $(($(date +%s) + secs)) -lt "$KILL_UNTIL" ] || return 0
	start_hostile "$kind" "$secs"
}

# ------------------------------------------------------------ sampling
# time vmrss rssanon rssshmem fds allocated resident evicted host_used vms
: >"$SAMPLE_FILE"
status_failures=0
samples_taken=0
sample() {
	local status
	samples_taken=$((samples_taken + 1))
	status=$(timeout 10 "$VGPUCTL" --socket "$CONTROL" status --json 2>/dev/null) ||
		{ status='{}'; status_failures=$((status_failures + 1)); }
	printf '%s %s %s %s %s %s\n' "$(elapsed)" "$(status_kib VmRSS)" "$(status_kib RssAnon)" \
		"$(status_kib RssShmem)" "$(fd_count)" \
		"$(jq -r '[.gpu.allocated, .gpu.resident, .gpu.evicted, .gpu.host_used, .gpu.vms] | map(. // 0) | join(" ")' <<<"$status")" \
		>>"$SAMPLE_FILE"
}
KILL_UNTIL=$((END - DURATION_S / 10))
next_sample=$START
next_kill=$((START + KILL_EVERY_S))
killed=0
while [ "$(date +%s)" -lt "$END" ]; do
	now=$(date +%s)
	if [ "$now" -ge "$next_sample" ]; then
		sample
		next_sample=$((next_sample + SAMPLE_EVERY_S))
	fi
	if [ "$now" -ge "$next_kill" ] && [ "$now" -lt "$KILL_UNTIL" ]; then
		slot=$((RANDOM % TENANTS))
		victim=${SLOT_NAME[$slot]}
		if kill -0 "${TPID[$victim]}" 2>/dev/null; then
			kill -KILL "${TPID[$victim]}" 2>/dev/null
			wait "${TPID[$victim]}" 2>/dev/null
			forget_pid "${TPID[$victim]}"
			KILLED[$victim]=1
			killed=$((killed + 1))
			start_tenant "$slot"
		fi
		maybe_start_hostile
		next_kill=$((next_kill + KILL_EVERY_S))
	fi
	sleep 0.5
done

# ------------------------------------------------------------ the end
# The hostile actors ended before the kills did (their durations); reap.
hostile_hung=0
for entry in "${HOSTILE_NAMES[@]}"; do
	pid=${entry##*:}
	for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		echo "  ${entry%%:*} still runs after its duration; stopping it"
		hostile_hung=$((hostile_hung + 1))
	fi
	reap "$pid" 5
done
# Each tenant verifies everything it holds and frees it; give them time.
declare -A STATUS=()
GRACE=$((60 + DURATION_S / 4))
for name in "${NAMES[@]}"; do
	[ -n "${KILLED[$name]:-}" ] && continue
	pid=${TPID[$name]}
	while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt $((END + GRACE)) ]; do
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "  $name still runs ${GRACE} s after the end; stopping it"
	fi
	reap "$pid" 10
	STATUS[$name]=$REAPED_STATUS
done
sample
# vgpud detaches a VM once its connection is gone: wait for the last ones.
for ((i = 0; i < 100; i++)); do
	vms=$(ctl status --json 2>/dev/null | jq -r '.gpu.vms // -1')
	[ "$vms" = 0 ] && [ "$(fd_count)" = "$FD_BASELINE" ] && break
	sleep 0.1
done
FINAL_FDS=$(fd_count)
fd_links | grep -v '^/memfd:simgpu-host-arena' >"$RUN_DIR/fds.after"
ARENAS=$(arena_count)
FINAL_JSON=$(ctl status --json 2>/dev/null)
HEALTH_JSON=$(ctl health --json 2>/dev/null)
CHECK_JSON=$(ctl health --json --check 2>/dev/null)
TOTAL_S=$(elapsed)
stop_start=$(date +%s%N)
reap "$VGPUD_PID" 10
VGPUD_STATUS=$REAPED_STATUS
STOP_MS=$((($(date +%s%N) - stop_start) / 1000000))
echo "all done after $TOTAL_S s; vgpud stopped with status $VGPUD_STATUS in $STOP_MS ms"
echo

# ------------------------------------------------------------ figures
FINISHED=()
for name in "${NAMES[@]}"; do
	[ -n "${KILLED[$name]:-}" ] || FINISHED+=("$name")
done
RESULTS="$RUN_DIR/results.json"
for name in "${FINISHED[@]}"; do
	if jq -e 'has("verified")' "$RUN_DIR/$name.json" >/dev/null 2>&1; then
		jq -c --arg n "$name" --argjson s "${STATUS[$name]:-1}" '. + {exit: $s}' "$RUN_DIR/$name.json"
	else
		jq -nc --arg n "$name" --argjson s "${STATUS[$name]:-1}" --arg e "$(head -c 300 "$RUN_DIR/$name.err")" \
			'{name: $n, exit: $s, verified: false, checksums: 0, mismatches: 0, message: ("no result: " + $e)}'
	fi
done | jq -s '.' >"$RESULTS"
sum() { jq -r "[.[] | $1 // 0] | add // 0" "$RESULTS"; }
STEPS=$(sum .soak.steps)
ALLOCS=$(sum .soak.allocs)
FREES=$(sum .soak.frees)
STREAMS=$(sum .soak.streams)
VERIFIES=$(sum .soak.verifies)
DETACHES=$(sum .soak.detaches)
REFUSED=$(sum .soak.alloc_refused)
CHECKSUMS=$(sum .checksums)
MISMATCHES=$(sum .mismatches)
FAILED_TENANTS=$(jq -r '[.[] | select(.exit != 0 or (.verified | not) or .mismatches > 0)] | length' "$RESULTS")
EVICTED=$(jq -r '.gpu.chunks_evicted + .gpu.chunks_placed_on_host' <<<"$FINAL_JSON" 2>/dev/null)
RETURNED=$(jq -r '.gpu.chunks_returned' <<<"$FINAL_JSON" 2>/dev/null)
CHANNEL_ERRORS=$(jq -r '.channel_error_events' <<<"$HEALTH_JSON" 2>/dev/null)
# channel errors of soak tenants (vgpud logs each VM's, rate-limited)
SOAK_CHANNEL_ERRORS=$(grep "channel error" "$LOG" | grep -vc "VM 'hostile-")
ATTACHED=$(jq -r '.attached_total' <<<"$HEALTH_JSON" 2>/dev/null)
LOG_ERRORS=$(grep -c ' vgpud error: ' "$LOG")

# RSS and oversubscription, first half (warm-up) against second half.
HALF=$((DURATION_S / 2))
rss_figures() { # awk expression in KiB: "peak_first peak_second"
	awk -v h="$HALF" -v e="$DURATION_S" '$1 <= e { x = '"$1"'
		if ($1 < h) { if (x > a) a = x } else { if (x > b) b = x } }
		END { printf "%d %d\n", a, b }' "$SAMPLE_FILE"
}
# shellcheck disable=SC2016 # awk expressions over the sample columns
read -r RSS_FIRST RSS_SECOND <<<"$(rss_figures '$2 - $9 / 1024')"
# shellcheck disable=SC2016
read -r ANON_FIRST ANON_SECOND <<<"$(rss_figures '$3')"
# The median over the second half's samples: a status taken while many
# tenants detach and attach again at once (they do, in waves, when vgpud is
# busy) sees a fraction of the memory for an instant.
read -r OVERSUBSCRIPTION OVERSUBSCRIPTION_RANGE < <(awk -v h="$HALF" -v e="$DURATION_S" -v v="$VRAM_BYTES" \
	'$1 >= h && $1 <= e { print $6 / v }' "$SAMPLE_FILE" | sort -n |
	awk '{ x[NR] = $1 } END { if (!NR) { print "0 -"; exit }
		printf "%.2f %.2f..%.2f\n", (x[int((NR + 1) / 2)] + x[int(NR / 2) + 1]) / 2, x[1], x[NR] }')
PEAK_HOST_MIB=$(awk '{ if ($9 > m) m = $9 } END { printf "%.1f\n", m / 1048576 }' "$SAMPLE_FILE")
PEAK_FDS=$(awk '{ if ($5 > m) m = $5 } END { print m + 0 }' "$SAMPLE_FILE")

echo "summary ($TENANTS tenants, $MINUTES min, VGPU_SEED=$SEED, $((VRAM_BYTES >> 20)) MiB VRAM):"
echo "  ops         $STEPS steps of the tenants that finished: $ALLOCS allocs ($REFUSED refused), $FREES frees, $STREAMS STREAM submissions, $VERIFIES verifies, $DETACHES detach+attach"
echo "  kills       $killed tenants killed with SIGKILL and replaced; $ATTACHED attaches in all"
echo "  checksums   $CHECKSUMS verified, $MISMATCHES wrong"
echo "  memory      tenants held ${OVERSUBSCRIPTION}x the VRAM (median of the second half's samples; $OVERSUBSCRIPTION_RANGE); at most $PEAK_HOST_MIB MiB in host RAM"
echo "  chunks      $EVICTED evicted, $RETURNED returned"
echo "  errors      $FAILED_TENANTS tenants failed, $CHANNEL_ERRORS channel errors ($SOAK_CHANNEL_ERRORS logged for soak tenants), $LOG_ERRORS error lines in vgpud's log"
echo "  hostile     $hostile_started attackers started (hog, staller, slow control reader); status failed in $status_failures of $samples_taken samples"
echo "  RSS (MiB)   $(awk '{ printf "%s%.1f", (NR > 1 ? " " : ""), $2 / 1024 }' "$SAMPLE_FILE")"
echo "  less host   $(awk '{ printf "%s%.1f", (NR > 1 ? " " : ""), ($2 - $9 / 1024) / 1024 }' "$SAMPLE_FILE") (VmRSS - host_used)
              peaks first half / second half: VmRSS - host_used $((RSS_FIRST / 1024)) / $((RSS_SECOND / 1024)) MiB, RssAnon $((ANON_FIRST / 1024)) / $((ANON_SECOND / 1024)) MiB"
echo "  fds         $FD_BASELINE before, at most $PEAK_FDS during, $FINAL_FDS after (besides $ARENAS host arena memfds of 256 MiB kept for reuse)"
echo "  samples     every $SAMPLE_EVERY_S s: time vmrss_kib rssanon_kib rssshmem_kib fds allocated resident evicted host_used vms$([ "$KEEP" = 1 ] && echo " (in $SAMPLE_FILE)")"
echo

# ------------------------------------------------------------ verdict
check "every tenant that was not killed exited 0 with every buffer verified (${#FINISHED[@]} tenants, $FAILED_TENANTS failed)" \
	test "$FAILED_TENANTS" = 0
jq -r '.[] | select(.exit != 0 or (.verified | not) or .mismatches > 0) | "      \(.name): exit \(.exit), \(.message)"' "$RESULTS" | head -10
check "checksums were verified, none wrong ($CHECKSUMS verified, $MISMATCHES wrong)" \
	test "$CHECKSUMS" -gt 0 -a "$MISMATCHES" = 0
check "the tenants allocated, freed, submitted and detached ($ALLOCS, $FREES, $STREAMS, $DETACHES)" \
	test "$ALLOCS" -gt 0 -a "$FREES" -gt 0 -a "$STREAMS" -gt 0 -a "$DETACHES" -gt 0
check "ALLOCs refused (out of memory, or BUSY after the retries) at most 1% of all ($REFUSED of $((ALLOCS + REFUSED)))" \
	test $((REFUSED * 100)) -le $((ALLOCS + REFUSED))
check "tenants were killed and replaced ($killed)" test "$killed" -gt 0 -o "$DURATION_S" -lt $((KILL_EVERY_S * 3))
check "oversubscribed at least ${OVERSUBSCRIPTION_MIN}x (${OVERSUBSCRIPTION}x the VRAM, median of the second half)" \
	awk -v o="$OVERSUBSCRIPTION" -v m="$OVERSUBSCRIPTION_MIN" 'BEGIN { exit !(o >= m) }'
check "chunks were evicted and returned ($EVICTED, $RETURNED)" test "${EVICTED:-0}" -gt 0 -a "${RETURNED:-0}" -gt 0
if [ "$SANITIZED" = 1 ]; then
	echo "note: RSS not judged under AddressSanitizer (its quarantine keeps freed memory on purpose; its leak check at vgpud's exit is judged instead)"
else
	check "RSS flat after warm-up: VmRSS less host memory in use peaks at most $((RSS_GROWTH_MAX_KIB / 1024)) MiB higher in the second half ($((RSS_FIRST / 1024)) -> $((RSS_SECOND / 1024)) MiB)" \
		test "$RSS_SECOND" -le $((RSS_FIRST + RSS_GROWTH_MAX_KIB))
	check "RssAnon flat after warm-up: peaks at most $((ANON_GROWTH_MAX_KIB / 1024)) MiB higher in the second half ($((ANON_FIRST / 1024)) -> $((ANON_SECOND / 1024)) MiB)" \
		test "$ANON_SECOND" -le $((ANON_FIRST + ANON_GROWTH_MAX_KIB))
fi
check "file descriptors back to the baseline after every detach ($FD_BASELINE before, $FINAL_FDS after)" \
	test "$FINAL_FDS" = "$FD_BASELINE"
[ "$FINAL_FDS" = "$FD_BASELINE" ] ||
	diff <(sort "$RUN_DIR/fds.before") <(sort "$RUN_DIR/fds.after") | sed -n 's/^[<>] /      /p' | head -10
check "host arenas within what the peak host memory needs ($ARENAS for $PEAK_HOST_MIB MiB)" \
	test "$ARENAS" -le "$(awk -v p="$PEAK_HOST_MIB" -v c="${HOST_CACHE%M}" 'BEGIN { print int((p + c) / 256) + 1 }')"
check "nothing left in vgpud: no VM, no allocation, no host memory ($(jq -c '[.gpu.vms, .gpu.allocated, .gpu.host_used]' <<<"$FINAL_JSON" 2>/dev/null))" \
	test "$(jq -r '.gpu.vms == 0 and .gpu.allocated == 0 and .gpu.host_used == 0' <<<"$FINAL_JSON" 2>/dev/null)" = true
check "vgpud's invariants hold (health --check: $(jq -r '.status' <<<"$CHECK_JSON" 2>/dev/null))" \
	test "$(jq -r '.ok' <<<"$CHECK_JSON" 2>/dev/null)" = true
if [ "$HOSTILE" = 1 ]; then
	check "no channel error of a soak tenant ($SOAK_CHANNEL_ERRORS logged; $CHANNEL_ERRORS in all, the hostile ones' included)" \
		test "$SOAK_CHANNEL_ERRORS" = 0
	check "every hostile actor ended with its duration ($hostile_started started, $hostile_hung still running)" \
		test "$hostile_hung" = 0
else
	check "no channel errors ($CHANNEL_ERRORS)" test "${CHANNEL_ERRORS:-1}" = 0
fi
check "vgpuctl status answered at every sample ($status_failures of $samples_taken failed)" \
	test "$status_failures" = 0
check "no error in vgpud's log ($LOG_ERRORS)" test "$LOG_ERRORS" = 0
grep ' vgpud error: ' "$LOG" | head -5 | sed 's/^/      /'
check "vgpud stopped on SIGTERM with status 0 ($VGPUD_STATUS)" test "$VGPUD_STATUS" = 0
if [ "$failed" -gt 0 ]; then
	echo "VGPU_SEED=$SEED reproduces the tenants' steps and the kills (timing differs); vgpud's log:"
	tail -20 "$LOG" | sed 's/^/      /'
fi
echo "soak: $passed passed, $failed failed"
[ "$failed" = 0 ]
