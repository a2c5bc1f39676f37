#!/bin/busybox sh
# shellcheck shell=dash
# tests/vm/l2/guest-driver-check.sh - /l2-job for tests/vm/guest-driver.sh
# (runs INSIDE the L2 guest, busybox only).
#
# Checks vgpu.ko (copied to /vgpu.ko) in a real guest kernel:
#   - drm.ko (from the initramfs) and vgpu.ko load; the PCI driver, its
#     module parameters and its sysfs entries appear;
#   - with no vGPU present, nothing binds and no DRM device appears;
#   - a foreign device forced onto the driver (an ivshmem-plain 1af4:1110
#     that L1 adds, bound through new_id) is refused with a log line that
#     says why, and leaves nothing behind;
#   - when a vGPU (1af4:10f0) is present: probe, BAR0 magic/ABI version,
#     mailbox HELLO (the driver's log line), a render node; then unbind with
#     the device bound and rebind;
#   - unload, and load/unload cycles in every interrupt mode, stay clean;
#   - the kernel log has no warning, BUG, oops or leak report.
# Every check prints "VGPU-GD-CHECK PASS|FAIL|SKIP <what>"; the last line is
# "VGPU-GD-SUMMARY <passed> <failed> <skipped>". Exit status: failed count.
pass=0
fail=0
skip=0
ok() {
	echo "VGPU-GD-CHECK PASS $*"
	pass=$((pass + 1))
}
bad() {
	echo "VGPU-GD-CHECK FAIL $*"
	fail=$((fail + 1))
}
skipped() {
	echo "VGPU-GD-CHECK SKIP $*"
	skip=$((skip + 1))
}
check() { # WHAT COMMAND...: PASS when COMMAND succeeds
	what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
klog_since() { # the kernel log after marker N (see mark)
	dmesg | sed -n "/VGPU-GD-MARK-$1\$/,\$p"
}
mark_n=0
mark() {
	mark_n=$((mark_n + 1))
	echo "VGPU-GD-MARK-$mark_n" >/dev/kmsg
}
pci_find() { # VENDOR DEVICE: print the first matching PCI address
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor")" = "$1" ] && [ "$(cat "$d/device")" = "$2" ]; then
			basename "$d"
			return 0
		fi
	done
	return 1
}
bound_to_vgpu() { # ADDR
	[ "$(basename "$(readlink "/sys/bus/pci/devices/$1/driver" 2>/dev/null)")" = vgpu ]
}
vgpu_drm_nodes() { # render/card nodes whose driver is vgpu
	for n in /sys/class/drm/*; do
		[ -e "$n/device/driver" ] || continue
		[ "$(basename "$(readlink "$n/device/driver")")" = vgpu ] && basename "$n"
	done
}

echo "VGPU-GD: L2 kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) vCPU"
mark
t0=$(cut -d' ' -f1 /proc/uptime)

# 1. load
check "drm.ko loads (modprobe drm)" modprobe drm
if insmod /vgpu.ko; then
	ok "vgpu.ko loads"
else
	bad "vgpu.ko loads"
	dmesg | tail -n 20
	echo "VGPU-GD-SUMMARY $pass $fail $skip"
	exit 1
fi
check "PCI driver 'vgpu' registered" test -d /sys/bus/pci/drivers/vgpu
check "module parameters present (irq_mode=$(cat /sys/module/vgpu/parameters/irq_mode 2>/dev/null))" \
	test "$(cat /sys/module/vgpu/parameters/irq_mode 2>/dev/null)" = auto -a \
	-e /sys/module/vgpu/parameters/mailbox_timeout_ms -a \
	-e /sys/module/vgpu/parameters/attach_timeout_ms
check "drm.ko is held by vgpu" grep -q '^drm .* vgpu' /proc/modules

vgpu=$(pci_find 0x1af4 0x10f0 || true)
foreign=$(pci_find 0x1af4 0x1110 || true)

# 2. no vGPU: nothing binds
if [ -z "$vgpu" ]; then
	nodes=$(vgpu_drm_nodes)
	bound=0
	for b in /sys/bus/pci/drivers/vgpu/0000:*; do
		[ -e "$b" ] && bound=$((bound + 1))
	done
	check "no vGPU present: no device bound, no DRM node (bound=$bound, nodes='$nodes')" \
		test "$bound" = 0 -a -z "$nodes"
fi

# 3. a foreign device forced onto the driver is refused
if [ -n "$foreign" ]; then
	mark
	echo "1af4 1110" >/sys/bus/pci/drivers/vgpu/new_id 2>/dev/null
	sleep 1
	if bound_to_vgpu "$foreign"; then
		bad "foreign device $foreign (ivshmem 1af4:1110) refused: it was bound"
		echo "$foreign" >/sys/bus/pci/drivers/vgpu/unbind
	else
		why=$(klog_since "$mark_n" | grep -m1 'vgpu.*\(BAR\|magic\)' | sed 's/^\[[^]]*\] //')
		if [ -n "$why" ]; then
			ok "foreign device $foreign (ivshmem 1af4:1110) refused, log: $why"
		else
			bad "foreign device $foreign refused without a log line saying why"
		fi
	fi
	echo "1af4 1110" >/sys/bus/pci/drivers/vgpu/remove_id 2>/dev/null
	check "no DRM node left behind by the refused probe" test -z "$(vgpu_drm_nodes)"
else
	skipped "foreign device refusal (no ivshmem device in this guest)"
fi

# 4. a real vGPU
if [ -n "$vgpu" ]; then
	if bound_to_vgpu "$vgpu"; then
		ok "vGPU $vgpu bound to vgpu"
	else
		bad "vGPU $vgpu bound to vgpu (driver: $(readlink "/sys/bus/pci/devices/$vgpu/driver"))"
	fi
	line=$(dmesg | grep -m1 'vGPU ABI' | sed 's/^\[[^]]*\] //')
	if [ -n "$line" ]; then
		ok "probe read magic/ABI and completed HELLO: $line"
	else
		bad "no 'vGPU ABI' probe line (HELLO): $(dmesg | grep vgpu | tail -n 3 | tr '\n' '|')"
	fi
	nodes=$(vgpu_drm_nodes | tr '\n' ' ')
	case $nodes in
	*renderD*) ok "render node: $nodes" ;;
	*) bad "render node for the vGPU (nodes: '$nodes')" ;;
	esac
	if [ -x /vgpu-info ]; then
		if /vgpu-info >/tmp/info 2>&1; then
			ok "vgpu-info: $(tr '\n' ' ' </tmp/info | cut -c1-300)"
		else
			bad "vgpu-info: $(tr '\n' ' ' </tmp/info | cut -c1-300)"
		fi
	fi
	mark
	echo "$vgpu" >/sys/bus/pci/drivers/vgpu/unbind
	check "unbind the bound vGPU" test -z "$(vgpu_drm_nodes)"
	echo "$vgpu" >/sys/bus/pci/drivers/vgpu/bind
	check "rebind the vGPU" bound_to_vgpu "$vgpu"
else
	skipped "probe against a vGPU (no 1af4:10f0 device in this guest)"
fi

# 5. unload, then cycles in every interrupt mode
mark
check "rmmod vgpu" rmmod vgpu
check "module gone after rmmod" test ! -d /sys/module/vgpu
cycles_ok=1
for mode in auto msix msi intx poll bogus; do
	if ! insmod /vgpu.ko irq_mode=$mode; then
		cycles_ok=0
		echo "VGPU-GD: insmod irq_mode=$mode failed"
		continue
	fi
	if [ -n "$vgpu" ] && ! bound_to_vgpu "$vgpu"; then
		cycles_ok=0
		echo "VGPU-GD: irq_mode=$mode: vGPU not bound"
	fi
	rmmod vgpu || cycles_ok=0
done
check "load/unload cycles with irq_mode=auto,msix,msi,intx,poll,bogus" test "$cycles_ok" = 1
check "rmmod drm" rmmod drm

# 6. the kernel log since the checks began (the boot itself may warn: the
#    nested CPU model makes 6.1's xstate init WARN once, unrelated to us)
boot_warn=$(dmesg | sed -n '1,/VGPU-GD-MARK-1$/p' | grep -m1 'WARNING:' | sed 's/^\[[^]]*\] //')
[ -n "$boot_warn" ] && echo "VGPU-GD: note: warning during L2 boot, before the checks: $boot_warn"
problems=$(klog_since 1 | grep -E 'BUG:|WARNING:|Oops|Call Trace|general protection|refcount_t:|list_del corruption|kmemleak|UBSAN|KASAN|sleeping function called|lockdep' | head -n 5)
if [ -z "$problems" ]; then
	ok "kernel log clean since the first check (no warning, BUG, oops, leak)"
else
	bad "kernel log: $(echo "$problems" | tr '\n' '|')"
fi
echo "VGPU-GD: kernel log of vgpu:"
dmesg | grep -i 'vgpu' | sed 's/^/VGPU-GD-KLOG /' | head -n 40
echo "VGPU-GD-SECONDS=$(awk -v s="$t0" -v e="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", e - s }')"
echo "VGPU-GD-SUMMARY $pass $fail $skip"
exit "$fail"
