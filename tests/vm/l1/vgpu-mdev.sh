#!/bin/bash
# tests/vm/l1/vgpu-mdev.sh - the L1 half of tests/vm/vgpu-mdev.sh (runs INSIDE L1).
#
# Usage (via boot-l1.sh): l1/vgpu-mdev.sh VGPU_MDEV.ko BIN_DIR L2_INITRD|none
#
# BIN_DIR holds tests/vm/mdev's fake-vgpud and mdev-client. Checks, in order:
#   1. module load; no mdev parent until a vgpud connects
#   2. fake-vgpud registers types: sysfs type attributes; a CREATE vgpud
#      refuses fails the sysfs write with its message in the kernel log
#   3. VFIO-level client on an mdev (no guest): config space, BARs, mmap,
#      interrupts, DMA/pins, shadow swap, reset, bad inputs; vendor/ sysfs
#   4. an L2 KVM guest with -device vfio-pci,sysfsdev=...: its checks (IDs,
#      registers, BAR2, doorbell, MSI-X/MSI/INTx, DMA, swap under guest
#      writes), then fake-vgpud dies with a window blocked; L1 sees
#      backend-gone, restarts fake-vgpud (EXISTS replay), refuses rmmod,
#      removes the mdev while L2 runs (QEMU hot-unplugs it)
#   4b. the real vgpud (simgpu) through vgpu-backend/daemon/transport_mdev.c:
#      its profiles as types, mdev-client --vgpud speaks the real mailbox
#   5. lifetime without vgpud: an idle mdev keeps the parent, creating fails,
#      removing the last one unregisters it; rmmod with an idle mdev (and
#      refused while vgpud is connected); no BUG/Oops/WARNING in dmesg
# One line per check: "VGPU-MDEV-CHECK ok: ..." or "VGPU-MDEV-CHECK FAIL: ...".
set -uo pipefail

ko=${1:?usage: vgpu-mdev.sh VGPU_MDEV.ko BIN_DIR L2_INITRD|none}
bin=${2:?usage: vgpu-mdev.sh VGPU_MDEV.ko BIN_DIR L2_INITRD|none}
l2_initrd=${3:?usage: vgpu-mdev.sh VGPU_MDEV.ko BIN_DIR L2_INITRD|none}
: "${VMLINUZ:?not run by boot-l1.sh}"

parent=/sys/class/mdev_bus/vgpu
types=$parent/mdev_supported_types
vgpud_pid=
qemu_pid=
failures=0

CHECK_TAG=VGPU-MDEV
# shellcheck source=../lib/l1-checks.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/l1-checks.sh"
new_uuid() { cat /proc/sys/kernel/random/uuid; }

start_vgpud() {
	rm -f vgpud.ready
	"$bin/fake-vgpud" --mode commands --ready-file "$PWD/vgpud.ready" >>fake-vgpud.log 2>&1 &
	vgpud_pid=$!
	wait_for 10 test -e vgpud.ready
}

# l2_wait SECONDS PATTERN: until l2.log has PATTERN; fails early if QEMU died
l2_wait() {
	local deadline=$(($(date +%s) + $1))
	until grep -q "$2" l2.log 2>/dev/null; do
		if ! kill -0 "$qemu_pid" 2>/dev/null; then
			grep -q "$2" l2.log 2>/dev/null
			return
		fi
		(($(date +%s) < deadline)) || return 1
		sleep 0.5
	done
}

finish() {
	[[ -n $qemu_pid ]] && kill "$qemu_pid" 2>/dev/null
	[[ -n $vgpud_pid ]] && kill "$vgpud_pid" 2>/dev/null
	echo "--- fake-vgpud log (tail)"
	tail -n 40 fake-vgpud.log 2>/dev/null | sed 's/^/    /'
	echo "--- dmesg (vgpu, mdev, vfio)"
	dmesg | grep -i 'vgpu\|mdev\|vfio' | tail -n 40 | sed 's/^/    /'
	echo "VGPU-MDEV-L1-FAILURES=$failures"
}

dmesg_clean() {
	! dmesg | grep -E 'BUG|Oops|WARNING|general protection|Call Trace|soft lockup|hung task' >dmesg-bad.txt
}

t_job=$(now)
dmesg -n 1 2>/dev/null # keep the console for the job's own output
for m in vfio vfio_iommu_type1 mdev vfio_virqfd; do
	modprobe "$m" || { fail "modprobe $m"; finish; exit 1; }
done
if ! insmod "$ko"; then
	fail "insmod $ko"
	finish
	exit 1
fi
pass "vgpu_mdev.ko loaded"
check "control device /dev/vgpu_mdev exists" test -c /dev/vgpu_mdev
check "no mdev parent before vgpud connects" test ! -e "$parent"

# --- 2. types ---------------------------------------------------------------
if ! start_vgpud; then
	fail "fake-vgpud did not come up"
	finish
	exit 1
fi
pass "fake-vgpud connected and registered its types"
check "types vgpu-vgpu-test... are vgpu-test and vgpu-refuse" \
	test -d "$types/vgpu-test" -a -d "$types/vgpu-refuse"
check "type name is the profile (vgpu-test)" grep -qx vgpu-test "$types/vgpu-test/name"
check "device_api is vfio-pci" grep -qx vfio-pci "$types/vgpu-test/device_api"
check "available_instances comes from vgpud (4)" grep -qx 4 "$types/vgpu-test/available_instances"
check "description comes from vgpud" grep -q "test profile" "$types/vgpu-test/description"
check "a second vgpud is refused (EBUSY)" \
	bash -c '! exec 3<>/dev/vgpu_mdev' 2>/dev/null
u=$(new_uuid)
if echo "$u" >"$types/vgpu-refuse/create" 2>/dev/null; then
	fail "CREATE refused by vgpud should fail the sysfs write"
else
	pass "CREATE refused by vgpud fails the sysfs write"
fi
check "the refusal reason is in the kernel log" bash -c 'dmesg | grep -q "has no capacity"'
check "no device left behind by the refused create" test ! -e "/sys/bus/mdev/devices/$u"

# --- 3. VFIO-level client ---------------------------------------------------
ua=$(new_uuid)
if echo "$ua" >"$types/vgpu-test/create"; then
	pass "mdev $ua created"
	dev=/sys/bus/mdev/devices/$ua
	check "vendor/profile is vgpu-test" grep -qx vgpu-test "$dev/vendor/profile"
	check "vendor/state is closed" grep -qx closed "$dev/vendor/state"
	t0=$(now)
	"$bin/mdev-client" "$ua" 2>&1 | sed 's/^/VGPU-MDEV-VFIO /'
	rc=${PIPESTATUS[0]}
	echo "VGPU-MDEV-VFIO-SECONDS=$(elapsed "$t0")"
	check "mdev-client exit status 0 (got $rc)" test "$rc" = 0
	id=$(cat "$dev/vendor/id")
	check "vendor/vm is what vgpud pushed (fake-vm-$id)" grep -qx "fake-vm-$id" "$dev/vendor/vm"
	check "vendor/resident, evicted, fair_share, allocated from vgpud" \
		bash -c "grep -qx 805306368 $dev/vendor/resident && grep -qx 268435456 $dev/vendor/evicted &&
			grep -qx 536870912 $dev/vendor/fair_share && grep -qx 1073741824 $dev/vendor/allocated"
	echo "VGPU-MDEV: vendor/swaps $(cat "$dev/vendor/swaps") (to shadow, to real, faults that waited)"
	# shellcheck disable=SC2016 # awk's own variables
	check "vendor/swaps counted the client's swaps" \
		awk '$1 >= 20 && $2 >= 20 { ok = 1 } END { exit !ok }' "$dev/vendor/swaps"
	check "vendor/state is closed again" grep -qx closed "$dev/vendor/state"
	check "remove an idle mdev" bash -c "echo 1 >$dev/remove"
	check "vgpud got CLOSE and REMOVE" \
		bash -c "grep -q 'CLOSE device $id' fake-vgpud.log && grep -q 'REMOVE device $id' fake-vgpud.log"
else
	fail "create mdev $ua"
fi
check "no BUG/Oops/WARNING after the VFIO client" dmesg_clean

# --- 4. L2 guest --------------------------------------------------------------
if [[ $l2_initrd != none ]]; then
	modprobe kvm_amd nested=1 || fail "modprobe kvm_amd"
	ub=$(new_uuid)
	dev=/sys/bus/mdev/devices/$ub
	if echo "$ub" >"$types/vgpu-test/create"; then
		pass "mdev $ub created for L2"
		echo "VGPU-MDEV: booting L2 with -accel kvm -device vfio-pci,sysfsdev=$dev"
		t_l2=$(now)
		timeout -k 5 400 qemu-system-x86_64 -nodefaults -no-user-config -display none \
			-no-reboot -accel kvm -cpu host -machine pc -m 256M -smp 1 \
			-kernel "$VMLINUZ" -initrd "$l2_initrd" \
			-append "console=ttyS0 panic=-1 quiet" \
			-device "vfio-pci,sysfsdev=$dev" \
			-serial stdio </dev/null >l2.log 2>&1 &
		qemu_pid=$!
		if l2_wait 240 'VGPU-L2-DIE-START'; then
			if wait_for 30 bash -c "! kill -0 $vgpud_pid 2>/dev/null"; then
				pass "fake-vgpud exited while the VM runs (window 0 blocked)"
				wait "$vgpud_pid" 2>/dev/null
				check "vendor/state is backend-gone" \
					wait_for 10 grep -qx backend-gone "$dev/vendor/state"
				check "parent and types stay while an mdev exists" test -d "$types/vgpu-test"
				check "available_instances reads 0 without vgpud" \
					grep -qx 0 "$types/vgpu-test/available_instances"
				if start_vgpud; then
					pass "a new fake-vgpud connected with the same types"
					check "it was told about the existing mdev (EXISTS)" \
						wait_for 5 grep -q "EXISTS device" fake-vgpud.log
				else
					fail "restart fake-vgpud"
				fi
			else
				fail "fake-vgpud did not exit after T_DIE_BLOCKED"
			fi
		else
			fail "L2 did not reach the backend-gone test"
		fi
		if l2_wait 120 'VGPU-L2-READY-FOR-REMOVE'; then
			check "rmmod vgpu_mdev is refused while the device is open" \
				bash -c '! rmmod vgpu_mdev 2>/dev/null'
			t0=$(now)
			timeout 120 bash -c "echo 1 >$dev/remove"
			rc=$?
			check "mdev removed while L2 runs ($(elapsed "$t0") s, QEMU released it)" \
				test "$rc" = 0 -a ! -e "$dev"
			check "L2 saw the hot-unplug" l2_wait 60 'VGPU-L2-UNPLUGGED'
		else
			fail "L2 never became ready for the removal"
		fi
		wait_for 120 bash -c "! kill -0 $qemu_pid 2>/dev/null" || kill "$qemu_pid"
		wait "$qemu_pid"
		rc=$?
		qemu_pid=
		echo "VGPU-MDEV-L2-SECONDS=$(elapsed "$t_l2")"
		grep -a '^VGPU-L2-\|^qemu-system' l2.log
		check "L2 finished (VGPU-L2-STATUS=0), QEMU exit status $rc" \
			bash -c "grep -q '^VGPU-L2-STATUS=0' l2.log && test $rc = 0"
		check "fake-vgpud got REMOVE for the L2 mdev" \
			wait_for 5 grep -q "REMOVE device" fake-vgpud.log
	else
		fail "create mdev for L2"
	fi
	check "no BUG/Oops/WARNING after the L2 run" dmesg_clean
fi

stop_vgpud() {
	kill "$vgpud_pid" 2>/dev/null
	wait "$vgpud_pid" 2>/dev/null
	vgpud_pid=
}

# --- 4b. the real vgpud through its mdev transport -----------------------------
if [[ -x $bin/vgpud-mdev ]]; then
	stop_vgpud
	check "fake-vgpud gone, no mdev: parent unregistered" wait_for 10 test ! -e "$parent"
	mkdir -p /tmp/vgpud # its UNIX sockets cannot live on the 9p run dir
	rm -f vgpud.ready
	"$bin/vgpud-mdev" --dir /tmp/vgpud --ready-file "$PWD/vgpud.ready" 2>vgpud.log &
	vgpud_pid=$!
	if wait_for 20 test -e vgpud.ready; then
		pass "vgpud (simgpu, mdev transport) connected"
		check "vgpud's profiles are the mdev types (vgpu-1G, vgpu-2G, vgpu-4G)" \
			test -d "$types/vgpu-1G" -a -d "$types/vgpu-2G" -a -d "$types/vgpu-4G"
		check "type vgpu-1G: name, device_api, available_instances = max_instances (16)" \
			bash -c "grep -qx vgpu-1G $types/vgpu-1G/name && grep -qx vfio-pci $types/vgpu-1G/device_api &&
				grep -qx 16 $types/vgpu-1G/available_instances"
		echo "VGPU-MDEV: vgpu-1G description: $(cat "$types/vgpu-1G/description")"
		ue=$(new_uuid)
		if echo "$ue" >"$types/vgpu-1G/create"; then
			pass "mdev of vgpu-1G created (vgpud accepted it)"
			check "available_instances follows (15)" grep -qx 15 "$types/vgpu-1G/available_instances"
			t0=$(now)
			"$bin/mdev-client" --vgpud "$ue" 2>&1 | sed 's/^/VGPU-MDEV-VFIO /'
			rc=${PIPESTATUS[0]}
			echo "VGPU-MDEV-VGPUD-SECONDS=$(elapsed "$t0")"
			check "mdev-client --vgpud exit status 0 (got $rc)" test "$rc" = 0
			check "vgpud attached the VM over mdev" grep -q "attached as vgpu-1G over mdev" vgpud.log
			check "vgpud detached it when the client closed the device" \
				wait_for 10 grep -q "'$ue' .*detached" vgpud.log
			check "remove the mdev" bash -c "echo 1 >/sys/bus/mdev/devices/$ue/remove"
			check "available_instances back to 16" wait_for 5 grep -qx 16 "$types/vgpu-1G/available_instances"
		else
			fail "create an mdev of vgpu-1G"
		fi
		kill "$vgpud_pid"
		wait "$vgpud_pid"
		rc=$?
		vgpud_pid=
		check "vgpud exits cleanly on SIGTERM (status $rc)" test "$rc" = 0
		check "vgpud gone, no mdev: parent unregistered" wait_for 10 test ! -e "$parent"
	else
		fail "vgpud-mdev did not come up"
		sed 's/^/    vgpud: /' vgpud.log | tail -n 20
		stop_vgpud
	fi
	echo "--- vgpud log (tail)"
	tail -n 15 vgpud.log | sed 's/^/    /'
	start_vgpud || fail "restart fake-vgpud"
else
	fail "no vgpud-mdev (the vgpud libraries did not build: see vgpud-build.log)"
fi

# --- 5. lifetime without vgpud, teardown ------------------------------------------
uc=$(new_uuid)
check "create an idle mdev" bash -c "echo $uc >$types/vgpu-test/create"
check "rmmod vgpu_mdev is refused while vgpud is connected" bash -c '! rmmod vgpu_mdev 2>/dev/null'
stop_vgpud
check "vgpud gone, an mdev exists: parent and types stay" test -d "$types/vgpu-test"
u=$(new_uuid)
if echo "$u" >"$types/vgpu-test/create" 2>/dev/null; then
	fail "creating an mdev without vgpud should fail"
else
	pass "creating an mdev without vgpud fails"
fi
check "removing the last mdev without vgpud works" bash -c "echo 1 >/sys/bus/mdev/devices/$uc/remove"
check "vgpud gone and no mdev left: parent unregistered" wait_for 10 test ! -e "$parent"
if start_vgpud; then
	check "a new vgpud registers the parent again" test -d "$types/vgpu-test"
	ud=$(new_uuid)
	check "create an idle mdev for the unload" bash -c "echo $ud >$types/vgpu-test/create"
	stop_vgpud
else
	fail "restart fake-vgpud for the unload test"
fi
check "rmmod vgpu_mdev with an idle mdev and no vgpud (the mdev goes with it)" rmmod vgpu_mdev
check "no mdev left after the unload" test ! -e "/sys/bus/mdev/devices/${ud:-none}"
check "no BUG/Oops/WARNING/lockup in dmesg" dmesg_clean
if [[ -s dmesg-bad.txt ]]; then
	sed 's/^/    dmesg: /' dmesg-bad.txt | head -n 40
fi
echo "VGPU-MDEV-L1-SECONDS=$(elapsed "$t_job")"
finish
((failures == 0)) && echo "VGPU-MDEV-L1-DONE"
exit $((failures != 0))
