#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# regenerate.sh - rebuild the committed PTX (and the PTX-only fatbins) of
# the CUDA programs' kernels from their CUDA C.
#
#   tests/cuda/regenerate.sh          rewrite kernels/NAME.ptx from NAME.cu,
#                                     and kernels/NAME.fatbin for the
#                                     kernels listed in FATBINS
#   tests/cuda/regenerate.sh --check  compare instead (the meson test
#                                     cuda-ptx-fresh): exit 1 when one
#                                     differs, 77 (skipped, reason printed)
#                                     when nvcc is missing
#
# PTX: nvcc -ptx for compute_75 (the oldest target CUDA 13 compiles for;
# simgpu's PTX executor takes sm_70 and up). Fatbins: nvcc -fatbin with
# PTX only (code=compute_75), compressed as nvcc does by default. The PTX
# is compared without nvcc's leading comment lines (they name the
# compiler build); a fatbin embeds those lines too, so it is compared byte
# for byte only when this nvcc is the release that made the committed
# files, and otherwise its PTX alone is checked (a note says so).
# NVCC (default /usr/local/cuda/bin/nvcc, then nvcc on PATH) picks the
# compiler.
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kernels"
ARCH=compute_75
FATBINS=(saxpy)
check=false
case "${1:-}" in
--check) check=true ;;
"") ;;
*) echo "usage: $0 [--check]" >&2; exit 64 ;;
esac

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
	     "the committed PTX of tests/cuda/kernels is not checked against its source" >&2
	exit 77
fi

# the PTX without nvcc's header comments (everything before .version)
body() { sed -n '/^\.version/,$p' "$1"; }
release() { grep -m1 '^// Cuda compilation tools' "$1" || true; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
status=0
for cu in "$DIR"/*.cu; do
	name="$(basename "$cu" .cu)"
	# relative source names: nothing of the checkout's path in the output
	(cd "$DIR" && "$NVCC" -ptx -arch="$ARCH" -o "$tmp/$name.ptx" "$name.cu")
	if $check; then
		if ! cmp -s <(body "$tmp/$name.ptx") <(body "$DIR/$name.ptx"); then
			echo "STALE: kernels/$name.ptx does not match kernels/$name.cu (run tests/cuda/regenerate.sh)" >&2
			status=1
		fi
	else
		cp "$tmp/$name.ptx" "$DIR/$name.ptx"
	fi
done
for name in "${FATBINS[@]}"; do
	(cd "$DIR" && "$NVCC" -fatbin -gencode "arch=$ARCH,code=$ARCH" -o "$tmp/$name.fatbin" "$name.cu")
	if ! $check; then
		cp "$tmp/$name.fatbin" "$DIR/$name.fatbin"
	elif [ "$(release "$tmp/$name.ptx")" = "$(release "$DIR/$name.ptx")" ]; then
		if ! cmp -s "$tmp/$name.fatbin" "$DIR/$name.fatbin"; then
			echo "STALE: kernels/$name.fatbin does not match kernels/$name.cu (run tests/cuda/regenerate.sh)" >&2
			status=1
		fi
	else
		echo "note: kernels/$name.fatbin was made by another nvcc release; only its PTX is checked"
	fi
done
if $check && [ $status = 0 ]; then
	echo "committed PTX matches its CUDA sources ($("$NVCC" --version | tail -1))"
fi
exit $status
