#!/usr/bin/env bash
# regenerate.sh - rebuild the sample fatbins and their expected PTX from
# sample.cu with nvcc (CUDA 13).
#
#   regenerate.sh           rewrite the samples in this directory
#   regenerate.sh --check   compare instead: exit 1 when one differs, 77
#                           (skipped) when nvcc is missing
#
# nvcc's fatbins are byte-for-byte reproducible (no paths or times in them
# without -G), so the check compares bytes. NVCC (default
# /usr/local/cuda/bin/nvcc, then nvcc on PATH) picks the compiler.
#
#   ptx_plain.fatbin   PTX for compute_80, uncompressed (--no-compress)
#   ptx_zstd.fatbin    PTX for compute_90, compressed (-Xfatbin -compress-all)
#   sass_ptx.fatbin    SASS for sm_90 and PTX for compute_75, compute_90 and
#                      compute_100 (nvcc's default compression)
#   sass_only.fatbin   SASS for sm_90 only
#   ptx_future.fatbin  PTX for compute_100 only (newer than the vGPU)
#   compute_80.ptx, compute_90.ptx   nvcc -ptx of sample.cu: what the
#                      fatbins' PTX must be (nvcc strips its comments and
#                      spacing in a fatbin; the test compares tokens)
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
check=false
[ "${1:-}" = --check ] && check=true

NVCC="${NVCC:-}"
if [ -z "$NVCC" ]; then
	if [ -x /usr/local/cuda/bin/nvcc ]; then
		NVCC=/usr/local/cuda/bin/nvcc
	else
		NVCC="$(command -v nvcc || true)"
	fi
fi
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
	echo "SKIP: nvcc not found (set NVCC or install the CUDA toolkit);" \
	     "the committed sample fatbins are not checked against sample.cu" >&2
	exit 77
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$DIR/sample.cu" "$tmp/"
cd "$tmp"

gen() { # NAME NVCC-ARGS...
	local name="$1"
	shift
	"$NVCC" "$@" sample.cu -o "$name"
}
gen ptx_plain.fatbin -fatbin --no-compress -gencode arch=compute_80,code=compute_80
gen ptx_zstd.fatbin -fatbin -Xfatbin -compress-all -gencode arch=compute_90,code=compute_90
gen sass_ptx.fatbin -fatbin -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_75,code=compute_75 \
	-gencode arch=compute_90,code=compute_90 \
	-gencode arch=compute_100,code=compute_100
gen sass_only.fatbin -fatbin -gencode arch=compute_90,code=sm_90
gen ptx_future.fatbin -fatbin -gencode arch=compute_100,code=compute_100
gen compute_80.ptx -ptx -arch=compute_80
gen compute_90.ptx -ptx -arch=compute_90

status=0
for f in ptx_plain.fatbin ptx_zstd.fatbin sass_ptx.fatbin sass_only.fatbin \
	 ptx_future.fatbin compute_80.ptx compute_90.ptx; do
	if $check; then
		if ! cmp -s "$f" "$DIR/$f"; then
			echo "$f differs from what $NVCC makes of sample.cu;" \
			     "run $DIR/regenerate.sh and commit the result" >&2
			status=1
		fi
	else
		cp "$f" "$DIR/$f"
	fi
done
$check && [ $status -eq 0 ] && echo "the samples are what $NVCC makes of sample.cu"
exit $status
