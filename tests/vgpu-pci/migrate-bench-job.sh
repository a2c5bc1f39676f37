#!/bin/busybox sh
# shellcheck shell=dash
# tests/vgpu-pci/migrate-bench-job.sh - /l2-job of tests/vgpu-pci/migrate-bench.sh:
# runs INSIDE the guest while the host migrates it once. vgpu-fence-gaps
# holds pci.size of GPU memory, rewrites pci.write of it at pci.rate bytes/s
# for pci.duration seconds and prints its fence gaps (VGPU-FENCE-GAP[S]
# lines, VGPU-FENCE-GAPS-READY once its memory is filled) on the console,
# "VGPU-MIGB-DONE rc=N" at the end.
size=64M write=8M rate=16M duration=40
# shellcheck disable=SC2013 # words, not lines
for arg in $(cat /proc/cmdline); do
	case $arg in
	pci.size=*) size=${arg#pci.size=} ;;
	pci.write=*) write=${arg#pci.write=} ;;
	pci.rate=*) rate=${arg#pci.rate=} ;;
	pci.duration=*) duration=${arg#pci.duration=} ;;
	esac
done
# shellcheck source=tests/vm/l2/guest-lib.sh
. /lib/vgpu-guest.sh
done_() {
	echo "VGPU-MIGB-DONE rc=$1"
	while :; do sleep 3600; done
}
vgpu_guest_load || done_ 9
vgpu_guest_find_node 50
[ -n "$node" ] && [ -c "$node" ] || { echo "VGPU-MIGB-FAIL: no vGPU"; done_ 9; }
/bin/vgpu-fence-gaps -D "$node" --size "$size" --write "$write" --rate "$rate" \
	--duration "$duration" --timeline 2>/tmp/gaps.err
rc=$?
sed 's/^/VGPU-MIGB-STDERR: /' /tmp/gaps.err
done_ "$rc"
