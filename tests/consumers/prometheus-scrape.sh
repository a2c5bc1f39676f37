#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# prometheus-scrape.sh - Debian's Prometheus server scrapes vgpud's /metrics
# and answers queries about the VMs (issue 12 §9: a real consumer).
#
#   1. vgpud on simgpu (64 MiB of VRAM, nothing oversubscribed) with a
#      private runtime directory (mktemp) and `--metrics 127.0.0.1:0`: a free
#      loopback port, read back from `vgpuctl health --json` (metrics_url).
#   2. Two tenants hold known amounts: prom-a 6 MiB and prom-b 4 MiB
#      (vgpu-tenant --workload alloc-leak, 2 MiB buffers, held until
#      stopped), both on the default profile; the test waits until vgpuctl
#      shows them holding it all.
#   3. prometheus (the Debian package's /usr/bin/prometheus) with a generated
#      prometheus.yml in the runtime directory: one job 'vgpud' scraping
#      that URL every second, TSDB storage in the runtime directory, the web
#      API on 127.0.0.1 and a free port (tried until one binds).
#   4. Checks, through Prometheus's HTTP API (GET /api/v1/targets and
#      /api/v1/query, answered as JSON and read with jq): the target is up
#      with no scrape error; up{job="vgpud"} is 1; vgpu_vms is 2;
#      vgpu_vm_resident_bytes{name="prom-a"} is 6291456 and {name="prom-b"}
#      4194304, each with the labels profile="vgpu-1G" and transport="local
#      socket" (and no uuid: vgpud's uuid="" of a local tenant is an absent
#      label to Prometheus); vgpu_vm_allocated_bytes summed by name over both is 10 MiB;
#      vgpu_gpu_vram_bytes equals the VRAM vgpuctl reports.
#
# Nothing listens on anything but 127.0.0.1, and everything it starts is
# stopped and the runtime directory removed on every exit path.
#
# Usage: tests/consumers/prometheus-scrape.sh [--build-dir DIR] [--keep]
#   $VGPUD, $VGPUCTL, $VGPU_TENANT override single binaries (meson passes
#   them); $PROMETHEUS the server (default: prometheus on PATH, else
#   /usr/bin/prometheus).
#
# Exit status: 0 passed; 1 a check failed; 2 could not run (binaries
# missing, vgpud or prometheus did not start); 64 bad usage; 77 skipped:
# prometheus (or jq) is not installed and this is not root. As root a
# missing package is a failure: ./vgpu-dev installs it (its package list),
# so CI, which runs as root, always runs this test.
# The last line is "prometheus-scrape: N passed, N failed".
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="$ROOT/build/plain"
KEEP=0
while [ $# -gt 0 ]; do
	case "$1" in
	--build-dir)
		[ $# -ge 2 ] || { echo "prometheus-scrape: --build-dir wants a directory" >&2; exit 64; }
		BUILD_DIR="$2"
		shift ;;
	--keep) KEEP=1 ;;
	-h | --help)
		sed -n '3,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0 ;;
	*) echo "prometheus-scrape: unknown argument '$1'; try --help" >&2; exit 64 ;;
	esac
	shift
done

VGPUD="${VGPUD:-$BUILD_DIR/vgpu-backend/daemon/vgpud}"
VGPUCTL="${VGPUCTL:-$BUILD_DIR/vgpu-backend/ctl/vgpuctl}"
VGPU_TENANT="${VGPU_TENANT:-$BUILD_DIR/guest-driver/tools/vgpu-tenant}"
# shellcheck source=tests/lib/needs.sh
. "$ROOT/tests/lib/needs.sh"
need_binaries prometheus-scrape "$VGPUD" "$VGPUCTL" "$VGPU_TENANT"
PROMETHEUS="${PROMETHEUS:-$(command -v prometheus || echo /usr/bin/prometheus)}"
missing=()
[ -x "$PROMETHEUS" ] || missing+=(prometheus)
command -v jq >/dev/null 2>&1 || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "skipped: the Debian package(s) ${missing[*]} are not installed and this is not root;" \
			"install them with ./vgpu-dev deps as root (or apt-get install ${missing[*]})"
		exit 77
	fi
	echo "prometheus-scrape: the Debian package(s) ${missing[*]} are not installed although this is" \
		"root: run ./vgpu-dev deps (./vgpu-dev test installs them first)"
	echo "prometheus-scrape: 0 passed, 1 failed"
	exit 1
fi

# shellcheck source=tests/lib/checks.sh
. "$ROOT/tests/lib/checks.sh"

PROGRAM=prometheus-scrape
# shellcheck source=vgpu-backend/demo/processes.sh
. "$ROOT/vgpu-backend/demo/processes.sh"
trap 'echo "prometheus-scrape: interrupted; stopping everything" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-prometheus.XXXXXX")" || { echo "prometheus-scrape: cannot create a temporary directory" >&2; exit 2; }
: >"$RUN_DIR/vgpud.conf"
SOCKET="$RUN_DIR/vgpud.sock"
CONTROL="$RUN_DIR/control.sock"
LOG="$RUN_DIR/vgpud.log"
ctl() { "$VGPUCTL" --socket "$CONTROL" "$@"; }

# http_get HOST PORT PATH: the body of GET http://HOST:PORT/PATH (HTTP/1.0,
# bash's /dev/tcp: no HTTP client package needed); status 1 unless 200.
http_get() {
	local host="$1" port="$2" path="$3" status line
	exec 9<>"/dev/tcp/$host/$port" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' "$path" "$host" "$port" >&9
	IFS= read -r status <&9 || { exec 9<&-; return 1; }
	while IFS= read -r line <&9; do
		[ "${line%$'\r'}" = "" ] && break
	done
	cat <&9
	exec 9<&-
	[[ "$status" == "HTTP/1."?" 200 "* ]]
}
uri() { jq -rn --arg v "$1" '$v | @uri'; }
# query EXPR: Prometheus's JSON answer to an instant query.
query() { http_get 127.0.0.1 "$PROM_PORT" "/api/v1/query?query=$(uri "$1")"; }
# value EXPR: the single sample's value ("" unless exactly one).
value() { query "$1" | jq -r 'if .status == "success" and (.data.result | length) == 1 then .data.result[0].value[1] else "" end' 2>/dev/null; }

# ------------------------------------------------------------ vgpud
echo "runtime directory $RUN_DIR (removed at exit unless --keep)"
"$VGPUD" --config "$RUN_DIR/vgpud.conf" --gpu simgpu --vram 64M --chunk-size 1M \
	--socket "$SOCKET" --control-socket "$CONTROL" --metrics 127.0.0.1:0 --mdev off \
	--log-level warn 2>"$LOG" &
VGPUD_PID=$!
PIDS+=("$VGPUD_PID")
METRICS_URL=""
for ((i = 0; i < 100; i++)); do
	METRICS_URL=$(ctl health --json 2>/dev/null | jq -r '.metrics_url // empty')
	[ -n "$METRICS_URL" ] && break
	kill -0 "$VGPUD_PID" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$METRICS_URL" ]; then
	echo "prometheus-scrape: vgpud did not start with metrics; its log:" >&2
	cat "$LOG" >&2
	exit 2
fi
METRICS_TARGET=${METRICS_URL#http://}
METRICS_TARGET=${METRICS_TARGET%%/*}
echo "vgpud serves $METRICS_URL"
VRAM_BYTES=$(ctl status --json | jq -r '.gpu.vram')

# ------------------------------------------------------------ tenants
declare -A WANT=([prom-a]=$((6 << 20)) [prom-b]=$((4 << 20)))
for name in prom-a prom-b; do
	"$VGPU_TENANT" --socket "$SOCKET" --name "$name" --workload alloc-leak \
		--size "$((WANT[$name] >> 20))M" --buffer-size 2M --duration 600s \
		>"$RUN_DIR/$name.out" 2>&1 &
	PIDS+=("$!")
done
holding() {
	local status
	status=$(ctl status --json 2>/dev/null) || return 1
	jq -e --argjson a "${WANT[prom-a]}" --argjson b "${WANT[prom-b]}" \
		'any(.vms[]; .name == "prom-a" and .resident == $a) and any(.vms[]; .name == "prom-b" and .resident == $b)' \
		<<<"$status" >/dev/null
}
for ((i = 0; i < 150; i++)); do
	holding && break
	sleep 0.2
done
if ! holding; then
	echo "prometheus-scrape: the tenants do not hold their memory after 30 s:" >&2
	ctl status >&2
	cat "$RUN_DIR"/prom-*.out >&2
	exit 2
fi
echo "prom-a holds ${WANT[prom-a]} bytes, prom-b ${WANT[prom-b]} bytes (vgpuctl status)"

# ------------------------------------------------------------ prometheus
mkdir -p "$RUN_DIR/data"
cat >"$RUN_DIR/prometheus.yml" <<EOF
# Generated by tests/consumers/prometheus-scrape.sh
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: vgpud
    metrics_path: /metrics
    static_configs:
      - targets: ["$METRICS_TARGET"]
EOF
port_free() { ! (exec 8<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PROM_PORT=""
PROM_PID=""
for attempt in 1 2 3 4 5; do
	port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
	port_free "$port" || continue
	"$PROMETHEUS" --config.file="$RUN_DIR/prometheus.yml" \
		--storage.tsdb.path="$RUN_DIR/data" \
		--web.listen-address="127.0.0.1:$port" \
		--log.level=warn >"$RUN_DIR/prometheus.log" 2>&1 &
	PROM_PID=$!
	PIDS+=("$PROM_PID")
	for ((i = 0; i < 200; i++)); do
		http_get 127.0.0.1 "$port" /-/ready >/dev/null 2>&1 && { PROM_PORT=$port; break; }
		kill -0 "$PROM_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$PROM_PORT" ] && break
	echo "  prometheus on 127.0.0.1:$port did not become ready (attempt $attempt): $(tail -2 "$RUN_DIR/prometheus.log")"
	reap "$PROM_PID" 5
done
if [ -z "$PROM_PORT" ]; then
	echo "prometheus-scrape: prometheus did not start; its log:" >&2
	cat "$RUN_DIR/prometheus.log" >&2
	exit 2
fi
echo "prometheus $("$PROMETHEUS" --version 2>&1 | head -1 | awk '{ print $3 }') on 127.0.0.1:$PROM_PORT scrapes $METRICS_TARGET every second"

# Until it has scraped the VMs (a few scrapes; up to 60 s on a loaded machine).
for ((i = 0; i < 300; i++)); do
	[ "$(value 'vgpu_vm_resident_bytes{name="prom-a"}')" = "${WANT[prom-a]}" ] &&
		[ -n "$(value 'vgpu_vm_resident_bytes{name="prom-b"}')" ] && break
	sleep 0.2
done

# ------------------------------------------------------------ checks
TARGETS=$(http_get 127.0.0.1 "$PROM_PORT" /api/v1/targets)
check "the target $METRICS_TARGET is up, scraped without error ($(jq -c '[.data.activeTargets[] | {health, lastError}]' <<<"$TARGETS" 2>/dev/null))" \
	test "$(jq -r --arg t "$METRICS_TARGET" '[.data.activeTargets[] | select(.labels.job == "vgpud" and .labels.instance == $t and .health == "up" and .lastError == "")] | length' <<<"$TARGETS" 2>/dev/null)" = 1
check "up{job=\"vgpud\"} is 1 ($(value 'up{job="vgpud"}'))" test "$(value 'up{job="vgpud"}')" = 1
check "vgpu_vms is 2 ($(value 'vgpu_vms'))" test "$(value 'vgpu_vms')" = 2
for name in prom-a prom-b; do
	got=$(value "vgpu_vm_resident_bytes{name=\"$name\"}")
	check "vgpu_vm_resident_bytes{name=\"$name\"} is ${WANT[$name]} ($got)" test "$got" = "${WANT[$name]}"
	labels=$(query "vgpu_vm_resident_bytes{name=\"$name\"}" | jq -c '.data.result[0].metric | {job, profile, transport, uuid: (.uuid // "")}' 2>/dev/null)
	# (uuid="" of a local tenant: Prometheus keeps no empty label)
	check "its labels say job vgpud, profile vgpu-1G, local socket, no UUID ($labels)" \
		test "$labels" = '{"job":"vgpud","profile":"vgpu-1G","transport":"local socket","uuid":""}'
done
total=$(value 'sum(vgpu_vm_allocated_bytes{name=~"prom-a|prom-b"})')
check "sum(vgpu_vm_allocated_bytes) over both is $((10 << 20)) ($total)" test "$total" = $((10 << 20))
got=$(value 'vgpu_gpu_vram_bytes')
check "vgpu_gpu_vram_bytes is the VRAM vgpuctl reports, $VRAM_BYTES ($got)" test "$got" = "$VRAM_BYTES"

if [ "$failed" -gt 0 ]; then
	echo "prometheus's log:"
	tail -20 "$RUN_DIR/prometheus.log" | sed 's/^/      /'
	echo "vgpud's log:"
	tail -20 "$LOG" | sed 's/^/      /'
fi
echo "prometheus-scrape: $passed passed, $failed failed"
[ "$failed" = 0 ]
