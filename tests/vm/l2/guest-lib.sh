# shellcheck shell=dash
# tests/vm/l2/guest-lib.sh - what every L2 guest job that drives a vGPU does,
# sourced as /lib/vgpu-guest.sh (mkinitramfs.sh --preset l2 puts it there)
# by e2e-guest.sh, submit-rate-guest.sh, tests/vgpu-pci/guest-job.sh and
# migrate-job.sh, and tests/cudagpu/vm-job.sh.
# busybox only. The job defines ok and bad (its check lines) first.

# vgpu_guest_load [INSMOD ARGS...]: load drm.ko and vgpu.ko; a check line
# either way; status 1 when they did not load.
vgpu_guest_load() {
	if modprobe drm && insmod /vgpu.ko "$@"; then
		ok "drm.ko and vgpu.ko loaded"
		return 0
	fi
	bad "loading drm.ko and vgpu.ko: $(dmesg | tail -n 5 | tr '\n' '|')"
	return 1
}

# vgpu_guest_find_node TRIES: set node to the render node vgpu.ko bound
# (/dev/dri/renderD*), looking every 0.1 s at most TRIES times; status 1
# (node empty) when there is none.
vgpu_guest_find_node() {
	local i=0 n
	node=
	while [ "$i" -lt "$1" ]; do
		for n in /sys/class/drm/renderD*; do
			[ -e "$n/device/driver" ] || continue
			[ "$(basename "$(readlink "$n/device/driver")")" = vgpu ] && node=/dev/dri/$(basename "$n")
		done
		[ -n "$node" ] && [ -c "$node" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	node=
	return 1
}

# vgpu_guest_bound TRIES: vgpu_guest_find_node and a check line on it;
# status 1 when vgpu.ko bound no render node.
vgpu_guest_bound() {
	if vgpu_guest_find_node "$1"; then
		ok "vGPU bound, render node $node ($(dmesg | grep -m1 'vGPU ABI' | sed 's/^\[[^]]*\] //'))"
		return 0
	fi
	bad "no vgpu render node: $(dmesg | grep -i vgpu | tail -n 5 | tr '\n' '|')"
	return 1
}

# vgpu_guest_unload [WHEN]: unload vgpu.ko and drm.ko; a check line, WHEN
# (e.g. "after the device was lost") appended to it.
vgpu_guest_unload() {
	if rmmod vgpu && rmmod drm; then
		ok "vgpu.ko and drm.ko unloaded${1:+ $1}"
	else
		bad "unloading vgpu.ko/drm.ko${1:+ $1}"
	fi
}

# vgpu_guest_log_clean MARK SINCE [EXTRA]: a check that the kernel log holds
# no BUG, WARNING, Oops, ... since the MARK line the job wrote to /dev/kmsg
# ("kernel log clean since SINCE"); EXTRA: more patterns, |-separated.
vgpu_guest_log_clean() {
	local problems
	problems=$(dmesg | sed -n "/$1\$/,\$p" |
		grep -E "BUG:|WARNING:|Oops|Call Trace|general protection|refcount_t:|list_del corruption${3:+|$3}" |
		head -n 3)
	if [ -z "$problems" ]; then
		ok "kernel log clean since $2"
	else
		bad "kernel log: $(echo "$problems" | tr '\n' '|')"
	fi
}

# vgpu_guest_own_programs PTX_SIZE CUDA_BYTES [PTX_BUFFER]: GPU programs of the guest's
# own on $node (issue 23), run while the VM holds other GPU memory:
# vgpu-ptx-run loads /ptx/modules.ptx through vgpu.ko (MODULE_LOAD),
# launches its kernels over PTX_SIZE of data (buffers of PTX_BUFFER, default
# 2M, the size of one launch) and checks every word against
# the CPU; then the CUDA driver-API program /bin/cuda-saxpy (built against
# cuda.h, linked with -lcuda) runs on CUDA_BYTES with libcuda.so.1 from
# /opt/vgpu-cuda, as a user runs it (LD_LIBRARY_PATH), its kernel from
# /cuda/kernels. Their output goes to the console as "VGPU-PROGRAM ..."
# lines; a check line each.
vgpu_guest_own_programs() {
	local out rc
	# The libvirt tests' guest images carry no programs of their own (they
	# test libvirt's side; tests/vm/run and tests/vgpu-pci/run run these).
	if [ ! -x /bin/vgpu-ptx-run ]; then
		echo "VGPU-PROGRAM none: this guest image carries no programs of its own"
		return 0
	fi
	out=$(/bin/vgpu-ptx-run -D "$node" --ptx /ptx/modules.ptx --size "$1" \
		--buffer-size "${3:-2M}" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/VGPU-PROGRAM /'
	if [ "$rc" = 0 ] && echo "$out" | grep -q '^vgpu-ptx-run: PASS '; then
		ok "its own PTX module loaded through vgpu.ko and launched, every result exact: $(echo "$out" | grep -o ' \(words\|launches\|vm_allocated\|vm_evicted\|bad_image\|seconds\)=[^ :]*' | tr -d '\n')"
	else
		bad "vgpu-ptx-run (exit status $rc): $(echo "$out" | tail -n 2 | tr '\n' '|')"
	fi
	out=$(VGPU_DRM_DEVICE="$node" LD_LIBRARY_PATH=/opt/vgpu-cuda CUDA_PROG_KERNELS=/cuda/kernels \
		/bin/cuda-saxpy "$2" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/VGPU-PROGRAM /'
	if [ "$rc" = 0 ] && echo "$out" | grep -q '^saxpy: ok'; then
		ok "a CUDA driver-API program with libcuda.so.1 on vgpu.ko, every result exact: $(echo "$out" | grep -m1 '^saxpy: ok')"
	else
		bad "cuda-saxpy with libcuda.so.1 (exit status $rc): $(echo "$out" | tail -n 2 | tr '\n' '|')"
	fi
}

# vgpu_guest_judge_run WORKLOAD RC JSON-FILE: one check line on a vgpu-run
# of WORKLOAD that exited with RC and wrote its --json report to JSON-FILE:
# it passed when it exited 0, verified and found no mismatch.
vgpu_guest_judge_run() {
	if [ "$2" = 0 ] && grep -q '"verified":true' "$3" && grep -q '"mismatches":0' "$3"; then
		ok "$1 verified every buffer by checksum ($(grep -o '"checksums":[0-9]*' "$3"), $(grep -o '"submissions":[0-9]*' "$3" | head -n 1))"
	else
		bad "$1: exit status $2: $(grep -o '"message":"[^"]*"' "$3")"
	fi
}
