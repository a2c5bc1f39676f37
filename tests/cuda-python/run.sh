#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run.sh - the cuda-python programs of this directory through the vGPU and,
# as the reference, against NVIDIA's own libcuda.so.1; compares results
# and times.
#
#   run.sh [--lib DIR] [--vgpud PATH] [--gpu simgpu|cuda|cuda:N]
#          [--no-reference] [--out FILE]
#
# Through the vGPU: a private vgpud (--gpu, default simgpu; --vgpud,
# default build/plain/vgpu-backend/daemon/vgpud) and each program with
# LD_LIBRARY_PATH=DIR (--lib, default build/plain/guest-driver/cuda: the
# project's libcuda.so.1) and VGPUD_SOCKET, as a user runs them.
# Reference: the same program with the system's libcuda.so.1 (NVIDIA's;
# only where /dev/nvidiactl exists, else skipped, or --no-reference).
# Each program's last line is RESULT {json} (cp_common.py); a program
# passes when it says ok, and with a reference when both checksums are
# equal. One line per program with both times goes to stdout and to
# --out FILE (JSON lines).
#
# Exit: 0 all passed, 1 a program failed or the results differ, 2 could
# not run (vgpud), 77 cuda.bindings does not import (the reason printed).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
LIB="$ROOT/build/plain/guest-driver/cuda"
VGPUD="$ROOT/build/plain/vgpu-backend/daemon/vgpud"
GPU=simgpu
REFERENCE=auto
OUT=
PROGRAMS=(vector_add reduction module_globals streams_events)

while [ $# -gt 0 ]; do
	case "$1" in
	--lib) LIB="$(cd "$2" && pwd)"; shift 2 ;;
	--vgpud) VGPUD="$2"; shift 2 ;;
	--gpu) GPU="$2"; shift 2 ;;
	--no-reference) REFERENCE=no; shift ;;
	--out) OUT="$2"; shift 2 ;;
	*) echo "usage: $0 [--lib DIR] [--vgpud PATH] [--gpu simgpu|cuda|cuda:N] [--no-reference] [--out FILE]" >&2
		exit 64 ;;
	esac
done

PY=${PYTHON:-python3}
if ! why=$("$PY" -c 'import cuda.bindings.driver, cuda.bindings.nvrtc' 2>&1); then
	echo "cuda.bindings does not import here: skipped (${why##*$'\n'})"
	exit 77
fi
[ -e "$LIB/libcuda.so.1" ] || { echo "no $LIB/libcuda.so.1 (build first)" >&2; exit 2; }
[ -x "$VGPUD" ] || { echo "no vgpud at $VGPUD" >&2; exit 2; }
if [ "$REFERENCE" = auto ]; then
	REFERENCE=no
	[ -e /dev/nvidiactl ] && REFERENCE=yes
fi

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vgpu-cuda-python.XXXXXX")" || exit 2
VGPUD_PID=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [ -n "$VGPUD_PID" ]; then
		kill -TERM "$VGPUD_PID" 2>/dev/null
		wait "$VGPUD_PID" 2>/dev/null
	fi
	rm -rf "$RUN_DIR"
}
trap cleanup EXIT

SOCK="$RUN_DIR/vgpud.sock"
vram=(--vram 256M)
[ "$GPU" = simgpu ] || vram=()
"$VGPUD" --gpu "$GPU" "${vram[@]}" --socket "$SOCK" --control-socket "$RUN_DIR/control.sock" \
	--allowed-profiles '*' >"$RUN_DIR/vgpud.log" 2>&1 &
VGPUD_PID=$!
for _ in $(seq 100); do
	[ -S "$SOCK" ] && break
	kill -0 "$VGPUD_PID" 2>/dev/null || break
	sleep 0.1
done
if [ ! -S "$SOCK" ]; then
	echo "vgpud did not start:" >&2
	sed 's/^/    /' "$RUN_DIR/vgpud.log" >&2
	exit 2
fi

result() { # log: its RESULT json, or empty
	sed -n 's/^RESULT //p' "$1" | tail -n 1
}
field() { # json key
	"$PY" -c 'import json,sys; v=json.loads(sys.argv[1]).get(sys.argv[2]); print(json.dumps(v))' "$1" "$2"
}

failed=0
[ -n "$OUT" ] && : >"$OUT"
printf '%-16s %-6s %-6s %12s %12s %s\n' program vgpu ref vgpu_s ref_s checksums
for prog in "${PROGRAMS[@]}"; do
	vlog="$RUN_DIR/$prog.vgpu.log" rlog="$RUN_DIR/$prog.ref.log"
	(cd "$HERE" && LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		VGPUD_SOCKET="$SOCK" VGPU_VM_NAME="cuda-python-$prog" \
		timeout -k 5 300 "$PY" "$prog.py") >"$vlog" 2>&1
	vrc=$?
	vres=$(result "$vlog")
	vok=false vsec=null vsum=null
	[ -n "$vres" ] && vok=$(field "$vres" ok) vsec=$(field "$vres" seconds) vsum=$(field "$vres" checksum)
	if [ "$vrc" -ne 0 ] || [ "$vok" != true ]; then
		vok=false failed=1
		sed 's/^/    /' "$vlog"
	fi
	rok=- rsec=null rsum=null same=
	if [ "$REFERENCE" = yes ]; then
		(cd "$HERE" && env -u VGPUD_SOCKET timeout -k 5 300 "$PY" "$prog.py") >"$rlog" 2>&1
		rres=$(result "$rlog")
		rok=false
		[ -n "$rres" ] && rok=$(field "$rres" ok) rsec=$(field "$rres" seconds) rsum=$(field "$rres" checksum)
		[ "$rok" = true ] || { failed=1; sed 's/^/    ref: /' "$rlog"; }
		if [ "$vsum" = "$rsum" ]; then same="equal"; else same="DIFFER"; failed=1; fi
	fi
	printf '%-16s %-6s %-6s %12s %12s %s %s %s\n' "$prog" "$vok" "$rok" "$vsec" "$rsec" "$vsum" "$rsum" "$same"
	[ -n "$OUT" ] && printf '{"program": "%s", "gpu": "%s", "vgpu_ok": %s, "vgpu_seconds": %s, "ref_ok": %s, "ref_seconds": %s, "vgpu_checksum": %s, "ref_checksum": %s}\n' \
		"$prog" "$GPU" "$vok" "$vsec" "$([ "$rok" = - ] && echo null || echo "$rok")" "$rsec" "$vsum" "$rsum" >>"$OUT"
done
[ "$failed" -eq 0 ] && echo "cuda-python: all passed" || echo "cuda-python: FAILED"
exit "$failed"
