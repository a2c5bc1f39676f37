#!/bin/busybox sh
# shellcheck shell=dash
# tests/vgpu-pci/migrate-job.sh - /l2-job of tests/vgpu-pci/migrate.sh:
# runs INSIDE the guest (busybox only) while the host migrates it between
# two vgpuds. Everything goes to the console (ttyS0), whose file changes
# with every QEMU the guest lands in:
#
#   load drm.ko + vgpu.ko; "VGPU-MIG-L2 ok|FAIL: vGPU bound ..."
#   VGPU-MIG-RUNNING once stream (pci.size, 2x the host's VRAM) and stencil
#     started; stream runs for pci.duration, stencil beside it; each is
#     verified by checksum: "VGPU-MIG-L2 ok|FAIL: stream ..." etc.
#   VGPU-MIG-DONE failures=F
# Kernel command line: pci.size= pci.buffer= pci.small= pci.duration=
# pci.iterations= pci.seed=
size=64M buffer=8M small=8M duration=60s iterations=20 seed=1
# shellcheck disable=SC2013 # words, not lines
for arg in $(cat /proc/cmdline); do
	case $arg in
	pci.size=*) size=${arg#pci.size=} ;;
	pci.buffer=*) buffer=${arg#pci.buffer=} ;;
	pci.small=*) small=${arg#pci.small=} ;;
	pci.duration=*) duration=${arg#pci.duration=} ;;
	pci.iterations=*) iterations=${arg#pci.iterations=} ;;
	pci.seed=*) seed=${arg#pci.seed=} ;;
	esac
done
failures=0
# shellcheck source=tests/vm/l2/guest-lib.sh
. /lib/vgpu-guest.sh
ok() { echo "VGPU-MIG-L2 ok: $*"; }
bad() {
	echo "VGPU-MIG-L2 FAIL: $*"
	failures=$((failures + 1))
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }
verdict() { # WORKLOAD RC JSON-FILE
	echo "VGPU-MIG-RESULT $1 rc=$2 $(tr -d '\n' <"$3" | tr -s ' ')"
	if [ "$2" = 0 ] && grep -q '"verified":true' "$3" && grep -q '"mismatches":0' "$3"; then
		ok "$1 verified every buffer by checksum ($(grep -o '"checksums":[0-9]*' "$3"), $(grep -o '"submissions":[0-9]*' "$3" | head -n 1))"
	else
		bad "$1: exit status $2: $(grep -o '"message":"[^"]*"' "$3")"
	fi
}
done_() {
	echo "VGPU-MIG-DONE failures=$failures uptime=$(uptime_s)"
	while :; do sleep 3600; done
}

vgpu_guest_load || done_
vgpu_guest_find_node 50
if [ -n "$node" ] && [ -c "$node" ]; then
	ok "vgpu.ko bound the vgpu-pci function: render node $node"
else
	bad "vgpu.ko bound no vGPU: $(dmesg | grep -i vgpu | tail -n 5 | tr '\n' '|')"
	done_
fi
/bin/vgpu-run -D "$node" --workload stream --size "$size" --buffer-size "$buffer" \
	--duration "$duration" --seed "$seed" --json >/tmp/stream.json 2>/tmp/stream.err &
stream=$!
sleep 1
/bin/vgpu-run -D "$node" --workload stencil --size "$small" --buffer-size "$small" \
	--iterations "$iterations" --seed "$seed" --json >/tmp/stencil.json 2>/tmp/stencil.err &
stencil=$!
echo "VGPU-MIG-RUNNING uptime=$(uptime_s)"
wait "$stencil"
rc=$?
sed 's/^/VGPU-MIG-STDERR stencil: /' /tmp/stencil.err
verdict stencil "$rc" /tmp/stencil.json
wait "$stream"
rc=$?
sed 's/^/VGPU-MIG-STDERR stream: /' /tmp/stream.err
verdict stream "$rc" /tmp/stream.json
done_
