#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# regenerate.sh - rebuild the committed PTX of the Rodinia programs'
# kernels (kernels/NAME.ptx) from their CUDA C (kernels/NAME.cu).
#
#   tests/rodinia/regenerate.sh          rewrite the PTX
#   tests/rodinia/regenerate.sh --check  compare instead (meson test
#                                        rodinia-ptx-fresh): exit 1 when one
#                                        differs, 77 (skipped, reason
#                                        printed) when nvcc is missing
#
# nvcc -ptx for compute_75, the oldest target CUDA 13 compiles for
# (simgpu's PTX executor takes sm_70 and up). The comparison leaves out
# nvcc's header comments (they name the compiler build). NVCC picks the
# compiler (default /usr/local/cuda/bin/nvcc, then nvcc on PATH).
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kernels"
ARCH=compute_75
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
	     "the committed PTX of tests/rodinia/kernels is not checked against its source" >&2
	exit 77
fi

body() { sed -n '/^\.version/,$p' "$1"; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
status=0
for cu in "$DIR"/*.cu; do
	name="$(basename "$cu" .cu)"
	# relative names: nothing of the checkout's path in the output
	(cd "$DIR" && "$NVCC" -ptx -arch="$ARCH" -o "$tmp/$name.ptx" "$name.cu")
	if $check; then
		if [ ! -f "$DIR/$name.ptx" ] || ! cmp -s <(body "$tmp/$name.ptx") <(body "$DIR/$name.ptx"); then
			echo "STALE: kernels/$name.ptx does not match kernels/$name.cu (run tests/rodinia/regenerate.sh)" >&2
			status=1
		fi
	else
		cp "$tmp/$name.ptx" "$DIR/$name.ptx"
	fi
done
if $check && [ $status = 0 ]; then
	echo "committed PTX matches its CUDA sources ($("$NVCC" --version | tail -1))"
fi
exit $status
