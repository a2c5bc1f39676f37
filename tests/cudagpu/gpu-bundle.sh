#!/usr/bin/env bash
# gpu-bundle.sh - pack built programs for a GPU machine that has no build
# dependencies and no network: each program named, plus the shared libraries
# it needs that a bare machine may lack (glibc and the CUDA driver stay
# behind: the GPU machine has its own), into DIR/bin and DIR/lib.
#
# Usage: tests/cudagpu/gpu-bundle.sh DIR PROGRAM...
# Then, there: LD_LIBRARY_PATH=DIR/lib DIR/bin/PROGRAM
set -euo pipefail
dir=$1
shift
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib"
for program in "$@"; do
	cp "$program" "$dir/bin/"
	ldd "$program" | awk '/=> \// { print $3 }' | while read -r lib; do
		case "$(basename "$lib")" in
		libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libcuda.so*) ;;
		*) cp -n "$lib" "$dir/lib/" ;;
		esac
	done
done
du -sh "$dir"
