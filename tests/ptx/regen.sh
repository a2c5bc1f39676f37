#!/usr/bin/env bash
# regen.sh - regenerate the committed PTX of the corpus from its CUDA C.
#
#   tests/ptx/regen.sh            rewrite every NAME.ptx from NAME.cu
#   tests/ptx/regen.sh --check    compare instead; exit 1 when one differs,
#                                 77 (skipped) when nvcc is missing
#
# A line "// nvcc-flags: ..." in a .cu file adds flags for that file.
# NVCC (default /usr/local/cuda/bin/nvcc, then nvcc on PATH) picks the
# compiler; the corpus is generated with CUDA 13 for sm_90.
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ARCH=sm_90
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
	     "the committed PTX is not checked against its source" >&2
	exit 77
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
status=0
for cu in "$DIR"/*.cu; do
	name="$(basename "$cu" .cu)"
	flags="$(sed -n 's|^// nvcc-flags: ||p' "$cu" | head -1)"
	# relative source names: __FILE__ (assert messages) must not carry
	# the checkout's path into the committed PTX
	# shellcheck disable=SC2086
	(cd "$DIR" && "$NVCC" -ptx -arch="$ARCH" $flags -o "$tmp/$name.ptx" "$name.cu")
	if $check; then
		# the compiler build line names the toolkit build; compare the rest
		if ! diff -q <(grep -v '^// Compiler Build ID' "$tmp/$name.ptx") \
			     <(grep -v '^// Compiler Build ID' "$DIR/$name.ptx") >/dev/null 2>&1; then
			echo "STALE: $name.ptx does not match $name.cu (run tests/ptx/regen.sh)" >&2
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
