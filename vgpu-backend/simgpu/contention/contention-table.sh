#!/usr/bin/env bash
# contention-table.sh - runs contention-sim over the experiments of seeds 003
# and 004 and prints their figures as Markdown tables (what README.md's
# "Measured" section shows). Usage: contention-table.sh [SIM] [CYCLES]
#   SIM     the contention-sim binary (default build/plain/.../contention-sim)
#   CYCLES  modeled cycles per run (default 300000)
set -euo pipefail
SIM="${1:-build/plain/vgpu-backend/simgpu/contention/contention-sim}"
CYCLES="${2:-300000}"

# figure KEY... from one run's JSON on stdin: tenant fields as t0.x, t1.x
fields() {
	python3 -c '
import json, sys
r = json.load(sys.stdin)
out = []
for k in sys.argv[1:]:
    if k[0] == "t" and k[1].isdigit():
        i, f = k[1:].split(".", 1)
        out.append(r["tenants"][int(i)][f])
    else:
        out.append(r[k])
print(" ".join("%.3f" % v if isinstance(v, float) else str(v) for v in out))
' "$@"
}

run() { "$SIM" --json --cycles "$CYCLES" "$@"; }

echo "### Seed 004: memory schedulers (2 MiB pages), IT / WS"
echo
echo "| pair | MPKI | B/cycle alone | FR-FCFS | RR | ITS | WEIS | ITS vs FR-FCFS / RR (IT) | WEIS vs FR-FCFS / RR (WS) |"
echo "|---|---|---|---|---|---|---|---|---|"
for pair in "gups stream" "gups stencil" "stencil stream" "gups fill" "gups checksum" "stream copy"; do
	set -- $pair
	declare -A it ws
	for s in frfcfs rr its weis; do
		read -r i w m0 m1 < <(run --page 2m --sched "$s" --tenant "$1" --tenant "$2" |
			fields throughput weighted_speedup t0.mpki t1.mpki)
		it[$s]=$i; ws[$s]=$w; mp="$m0 / $m1"
	done
	bw=$(run --page 2m --tenant "$1" --tenant "$2" | python3 -c '
import json,sys; r=json.load(sys.stdin)
print(" / ".join("%.0f" % t["alone"]["bandwidth_bytes_per_cycle"] for t in r["tenants"]))')
	pct() { python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print('%+.0f%%' % (100*(a/b-1)))" "$1" "$2"; }
	echo "| $1+$2 | $mp | $bw | ${it[frfcfs]} / ${ws[frfcfs]} | ${it[rr]} / ${ws[rr]} | ${it[its]} / ${ws[its]} | ${it[weis]} / ${ws[weis]} | $(pct "${it[its]}" "${it[frfcfs]}") / $(pct "${it[its]}" "${it[rr]}") | $(pct "${ws[weis]}" "${ws[frfcfs]}") / $(pct "${ws[weis]}" "${ws[rr]}") |"
done

echo
echo "### Seed 003: page walkers (4 KiB pages): interleaving (walks of the other tenant waited for, mean / max per tenant)"
echo
echo "| pair | shared | static | DWS | DWS++ |"
echo "|---|---|---|---|---|"
for pair in "gups stream" "gups stencil" "gups fill" "stream stencil" "gups gups:seed=7"; do
	set -- $pair
	row="| $1+$2 |"
	for w in shared static dws dws++; do
		v=$(run --walkers "$w" --tenant "$1" --tenant "$2" |
			fields t0.interleaving t0.interleaving_max t1.interleaving t1.interleaving_max |
			awk '{printf "%s (%s) / %s (%s)", $1, $2, $3, $4}')
		row="$row $v |"
	done
	echo "$row"
done

echo
echo "### Seed 003: throughput (IT = sum IPC) / weighted IPC (WS) / fairness"
echo
echo "| tenants | shared | static | DWS | DWS++ |"
echo "|---|---|---|---|---|"
for mix in "gups stream" "gups stencil" "gups fill" "gups checksum" "stream stencil" \
	"gups stream stencil" "gups stream stencil fill" "gups gups:seed=7 stream"; do
	args=()
	for t in $mix; do args+=(--tenant "$t"); done
	row="| ${mix// /+} |"
	for w in shared static dws dws++; do
		v=$(run --walkers "$w" "${args[@]}" | fields throughput weighted_speedup fairness |
			awk '{printf "%s / %s / %s", $1, $2, $3}')
		row="$row $v |"
	done
	echo "$row"
done
