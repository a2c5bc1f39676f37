# shellcheck shell=bash
# tests/vm/lib/build.sh - the project's builds that the VM tests run, kept
# in the cache outside the clone so that a second run rebuilds nothing.
#
# Source it after common.sh, once vm_kernel_env has set KVER and KDIR:
#
#   vm_build_sources ROOT HEAD
#       sets VM_BUILD ($VGPU_CACHE/build/run-<hash of ROOT>, locked with
#       descriptor 8 until the caller releases it: 'flock -u 8'), VM_SRC (the
#       source tree: ROOT itself, or with HEAD=1 a snapshot of ROOT's last
#       commit, other people's uncommitted work left out), VM_MBUILD (its
#       meson build directory) and VM_KSRC (the kernel modules' sources,
#       mirrored out of the clone because Kbuild builds in the source
#       directory: host-kmod/, guest-driver/kernel/ and the headers they
#       include). Every test of one clone shares these, so a test that runs
#       after another builds nothing new.
#   vm_build_kmod DIR LOG
#       make -C $KDIR M=$VM_KSRC/DIR modules (DIR: host-kmod or
#       guest-driver/kernel), its output in LOG; the exit status of make.
#   vm_build_meson LOG TARGET...
#       builds the meson TARGETs (e.g. vgpu-backend/daemon/vgpud) in
#       $VM_MBUILD, setting it up first (-Dtests=false, debugoptimized) and
#       once more from scratch when ninja fails in a directory an older meson
#       made; output in LOG.
#   vm_build_own_programs DIR LOG
#       a guest's own GPU programs (issue 23) for an L2 initramfs, after
#       vm_build_meson built guest-driver/tools/vgpu-ptx-run and
#       guest-driver/cuda/libcuda.so.1: cuda-saxpy (tests/cuda) compiled
#       the way a user compiles a CUDA driver-API program (cc, cuda.h,
#       -lcuda), and everything stripped into DIR; sets VM_OWN_PROGRAM_ARGS,
#       the mkinitramfs.sh arguments that put them where
#       l2/guest-lib.sh's vgpu_guest_own_programs looks.

vm_build_sources() { # ROOT HEAD
	local root=$1 head=$2 stage
	VM_BUILD=$VGPU_CACHE/build/run-$(printf '%s' "$root" | sha256sum | cut -c1-8)
	mkdir -p "$VM_BUILD"
	vm_lock "$VM_BUILD.lock" 8
	VM_SRC=$root VM_MBUILD=$VM_BUILD/meson VM_KSRC=$VM_BUILD/kmod-$KVER
	if ((head)); then
		stage=$(mktemp -d)
		git -C "$root" archive HEAD | tar -x -C "$stage"
		VM_SRC=$VM_BUILD/head-src VM_MBUILD=$VM_BUILD/meson-head VM_KSRC+=-head
		vm_sync_tree "$stage" "$VM_SRC" . -type f
		rm -rf "$stage"
		vm_log "sources: commit $(git -C "$root" rev-parse --short HEAD) (--head)"
	fi
	vm_sync_tree "$VM_SRC" "$VM_KSRC" host-kmod guest-driver/kernel guest-driver/common \
		guest-driver/include vgpu-backend/include \
		-type f \( -name '*.[ch]' -o -name Kbuild -o -name '*.include' \)
	export VM_BUILD VM_SRC VM_MBUILD VM_KSRC
}

vm_build_kmod() { # DIR LOG
	nice make -C "$KDIR" M="$VM_KSRC/$1" modules >"$2" 2>&1
}

vm_build_meson() { # LOG TARGET...
	local log=$1
	shift
	{
		if [[ ! -f $VM_MBUILD/build.ninja ]]; then
			rm -rf "$VM_MBUILD"
			nice meson setup "$VM_MBUILD" "$VM_SRC" -Dtests=false -Dbuildtype=debugoptimized
		fi
		nice ninja -C "$VM_MBUILD" "$@" || {
			# a build directory from another meson version: set it up again once
			rm -rf "$VM_MBUILD"
			nice meson setup "$VM_MBUILD" "$VM_SRC" -Dtests=false -Dbuildtype=debugoptimized &&
				nice ninja -C "$VM_MBUILD" "$@"
		}
	} >"$log" 2>&1
}

vm_build_own_programs() { # DIR LOG
	local dir=$1 cuda=$VM_SRC/tests/cuda
	mkdir -p "$dir"
	{
		nice cc -O2 -std=gnu11 -I"$VM_SRC/guest-driver/cuda/include" \
			-DCUDA_PROG_KERNEL_DIR='"/cuda/kernels"' "$cuda/saxpy.c" "$cuda/cuda_prog.c" \
			-L"$VM_MBUILD/guest-driver/cuda" -lcuda -lm -o "$dir/cuda-saxpy" &&
			strip "$dir/cuda-saxpy" &&
			strip -o "$dir/vgpu-ptx-run" "$VM_MBUILD/guest-driver/tools/vgpu-ptx-run" &&
			strip --strip-unneeded -o "$dir/libcuda.so.1" "$VM_MBUILD/guest-driver/cuda/libcuda.so.1" &&
			chmod 755 "$dir/libcuda.so.1" &&
			cp "$VM_SRC/tests/ptx/modules.ptx" "$cuda/kernels/saxpy.ptx" "$dir/"
	} >"$2" 2>&1 || return 1
	VM_OWN_PROGRAM_ARGS=(--file "$dir/vgpu-ptx-run:/bin/vgpu-ptx-run" --bin "$dir/vgpu-ptx-run"
		--file "$dir/libcuda.so.1:/opt/vgpu-cuda/libcuda.so.1" --bin "$dir/libcuda.so.1"
		--file "$dir/cuda-saxpy:/bin/cuda-saxpy" --bin "$dir/cuda-saxpy"
		--file "$dir/modules.ptx:/ptx/modules.ptx" --file "$dir/saxpy.ptx:/cuda/kernels/saxpy.ptx")
	export VM_OWN_PROGRAM_ARGS
}
