#!/usr/bin/env bash
# gpu-bundle.sh - pack built programs for a GPU machine that has no build
# dependencies and no network: each program named, plus the shared libraries
# it needs that a bare machine may lack (glibc and the CUDA driver stay
# behind: the GPU machine has its own), into DIR/bin and DIR/lib.
#
# Usage: tests/cudagpu/gpu-bundle.sh DIR PROGRAM...
# Then, there: LD_LIBRARY_PATH=DIR/lib DIR/bin/PROGRAM
#        tests/cudagpu/gpu-bundle.sh --libs-only LIBDIR PROGRAM...
# copies only those libraries, into LIBDIR (vm-bundle.sh: QEMU's).
set -euo pipefail

copy_libs() { # LIBDIR PROGRAM
	ldd "$2" | awk '/=> \// { print $3 }' | while read -r lib; do
		case "$(basename "$lib")" in
		libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libcuda.so*) ;;
		*) cp -n "$lib" "$1/" ;;
		esac
	done
}

if [ "${1:-}" = --libs-only ]; then
	libdir=$2
	shift 2
	mkdir -p "$libdir"
	for program in "$@"; do
		copy_libs "$libdir" "$program"
	done
	exit 0
fi
dir=$1
shift
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib"
for program in "$@"; do
	cp "$program" "$dir/bin/"
	copy_libs "$dir/lib" "$program"
done
du -sh "$dir"
