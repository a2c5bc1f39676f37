#!/usr/bin/env bash
# regen-ptx.sh - regenerate builtin_kernels.ptx from builtin_kernels.cu.
#
# Needs the CUDA toolkit's nvcc and ptxas (12.x or 13.x): $NVCC, else nvcc on
# PATH, else /usr/local/cuda/bin/nvcc. Run it after editing the .cu file and
# commit the .ptx it writes: the build embeds that file and never needs CUDA.
#
# The PTX targets compute_75 (the oldest that CUDA 13's nvcc still emits), so
# the driver JITs it for Turing and every later GPU. Its .version line is
# pinned to PTX ISA 8.2, the one CUDA 12.2 drivers read (cudagpu needs a
# 12.2 driver anyway): nvcc writes its own, newer ISA version, which older
# drivers refuse, although these kernels use nothing newer. ptxas then
# assembles the result for sm_75 and sm_90, which fails if they do.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

ARCH=compute_75
PTX_ISA=8.2

NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
if [ ! -x "$NVCC" ]; then
	echo "regen-ptx.sh: nvcc not found (set NVCC or install the CUDA toolkit)" >&2
	exit 1
fi
PTXAS="$(dirname "$NVCC")/ptxas"
if [ ! -x "$PTXAS" ]; then
	echo "regen-ptx.sh: ptxas not found beside $NVCC" >&2
	exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$NVCC" -ptx -arch="$ARCH" -O3 -o "$tmp/builtin_kernels.ptx" builtin_kernels.cu
sed -i "s/^\.version .*/.version $PTX_ISA/" "$tmp/builtin_kernels.ptx"
for sm in sm_75 sm_90; do
	"$PTXAS" -arch="$sm" -o "$tmp/check-$sm.cubin" "$tmp/builtin_kernels.ptx"
done
mv "$tmp/builtin_kernels.ptx" builtin_kernels.ptx
echo "regen-ptx.sh: wrote builtin_kernels.ptx ($ARCH, PTX ISA $PTX_ISA) with $("$NVCC" --version | tail -1)"
