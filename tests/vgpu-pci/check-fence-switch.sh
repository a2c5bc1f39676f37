#!/bin/bash
# SPDX-License-Identifier: MIT
# check-fence-switch.sh - fence_switch.py (the guest-visible pause at one
# switch-over of a live migration, for migrate-bench.sh) on consoles made
# here, where the answer is known: the switch lies between the source's
# last complete fence line and the destination's first ones; a line cut
# off at the end of a console does not count; no fence on one side gives
# no figure (exit 1); bad usage exits 2.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=../lib/checks.sh
source "$HERE/../lib/checks.sh"
check() { # name, expected stdout, expected exit status, console files...
	local name="$1" want="$2" want_rc="$3" got rc
	shift 3
	got="$(python3 "$HERE/fence_switch.py" "$@" 2>/dev/null)"
	rc=$?
	if [ "$rc" = "$want_rc" ] && [ "$got" = "$want" ]; then
		ok "$name"
	else
		bad "$name: got '$got' (exit $rc), want '$want' (exit $want_rc)"
	fi
}

# Source: fences 1-3 complete, fence 4's line cut off by the stop.
printf 'boot noise\r\nVGPU-FENCE-T n=1 s=100 c=200\r\nVGPU-FENCE-T n=2 s=300 c=400\n' >"$tmp/a"
printf 'VGPU-FENCE-T n=3 s=500 c=600\nVGPU-FENCE-T n=4 s=700 c=7' >>"$tmp/a"
# Destination: fence 3 printed again (before the switch: ignored), then 4
# (submitted before the stop, its wait spans the pause), 5, 6.
printf 'VGPU-FENCE-T n=3 s=500 c=600\nVGPU-FENCE-T n=4 s=700 c=90700\n' >"$tmp/b"
printf 'VGPU-FENCE-T n=5 s=90800 c=90900\nVGPU-FENCE-T n=6 s=1000000 c=9000000\n' >>"$tmp/b"
check "the pause is the longest wait of the first two fences after the switch" \
	'{"source_fences": 3, "destination_fences": 4, "downtime_ns": 90000, "fence": 4, "gap_ns": 90100}' \
	0 "$tmp/a" "$tmp/b"

# The second fence after the switch waited longest.
printf 'VGPU-FENCE-T n=4 s=700 c=800\nVGPU-FENCE-T n=5 s=750 c=50750\n' >"$tmp/c"
check "the second fence across the switch can be the longest" \
	'{"source_fences": 3, "destination_fences": 2, "downtime_ns": 50000, "fence": 5, "gap_ns": 200}' \
	0 "$tmp/a" "$tmp/c"

: >"$tmp/empty"
check "no fence on the destination: no figure" \
	'{"source_fences": 3, "destination_fences": 0, "downtime_ns": 0, "fence": 0, "gap_ns": 0}' \
	1 "$tmp/a" "$tmp/empty"
printf 'VGPU-FENCE-T n=2 s=300 c=400\n' >"$tmp/old"
check "nothing after the source's last fence: no figure" \
	'{"source_fences": 3, "destination_fences": 1, "downtime_ns": 0, "fence": 0, "gap_ns": 0}' \
	1 "$tmp/a" "$tmp/old"
check "one argument is bad usage" "" 2 "$tmp/a"

echo "fence_switch: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
