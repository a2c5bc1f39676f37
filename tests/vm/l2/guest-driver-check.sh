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
#   - when a vGPU (1af4:10f0) is present (served in L1 by fake-vgpud
#     --mode mailbox):
#     probe, BAR0 magic/ABI version, mailbox HELLO (the driver's log line),
#     the render node, vgpu-info, /vgpu-drm-check full (every ioctl, host
#     errors as errno + log line, mmap rules, interrupt-driven fences,
#     timeouts, signals, killed channels, lifetimes), unbind while a
#     process holds a buffer, a channel and its mapping (/vgpu-drm-check
#     hold), rmmod refused while a file is open, rebind;
#   - unload, and load/unload cycles in every interrupt mode, stay clean
#     (with a vGPU: the probe picks the asked-for mode and a quick check
#     with a fence interrupt passes in each);
#   - with a vGPU, last: the backend dies (fake-vgpud exits on a magic
#     ALLOC); requests and fence waits fail with ENODEV at once, unbind
#     works, a new probe refuses the device with a log line;
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
	check "no DRM node left behind by the refused probe" test ! -e "/sys/bus/pci/devices/$foreign/drm"
else
	skipped "foreign device refusal (no ivshmem device in this guest)"
fi

# 4. a vGPU (served by fake-vgpud --mode mailbox in L1, or later by vgpud)
render_node() { # the vGPU's render node in /dev/dri
	for n in $(vgpu_drm_nodes); do
		case $n in renderD*) echo "/dev/dri/$n" && return 0 ;; esac
	done
	return 1
}
run_check() { # MODE: run /vgpu-drm-check, pass its lines through, count failures
	node=$(render_node) || { bad "$1: no render node"; return; }
	/vgpu-drm-check "$1" "$node" >/tmp/check.out 2>&1
	rc=$?
	cat /tmp/check.out
	p=$(grep -c '^VGPU-GD-CHECK PASS' /tmp/check.out)
	f=$(grep -c '^VGPU-GD-CHECK FAIL' /tmp/check.out)
	pass=$((pass + p))
	fail=$((fail + f))
	[ "$rc" = 0 ] || [ "$f" != 0 ] || bad "vgpu-drm-check $1 exit status $rc"
}
if [ -n "$vgpu" ]; then
	if bound_to_vgpu "$vgpu"; then
		ok "vGPU $vgpu bound to vgpu"
	else
		bad "vGPU $vgpu bound to vgpu (driver: $(readlink "/sys/bus/pci/devices/$vgpu/driver"))"
	fi
	line=$(klog_since 1 | grep -m1 'vGPU ABI' | sed 's/^\[[^]]*\] //')
	if [ -n "$line" ]; then
		ok "probe: BAR0 magic/ABI, mailbox HELLO + QUERY: $line"
	else
		bad "no 'vGPU ABI' probe line: $(dmesg | grep vgpu | tail -n 3 | tr '\n' '|')"
	fi
	node=$(render_node)
	check "render node ${node:-missing}" test -c "$node"
	if [ -x /vgpu-info ]; then
		if /vgpu-info >/tmp/info 2>&1; then
			ok "vgpu-info (libdrm): $(tr '\n' '|' </tmp/info | tr -s ' ' | cut -c1-400)"
		else
			bad "vgpu-info: $(tr '\n' '|' </tmp/info | cut -c1-400)"
		fi
	fi
	if [ -x /vgpu-drm-check ]; then
		mark
		run_check full
		why=$(klog_since "$mark_n" | grep -m1 'ALLOC of .* failed' | sed 's/^\[[^]]*\] //')
		check "host error logged: ${why:-nothing}" test -n "$why"
		why=$(klog_since "$mark_n" | grep -m1 'killed channel' | sed 's/^\[[^]]*\] //')
		check "killed channel logged: ${why:-nothing}" test -n "$why"

		# Unbind while userspace holds a buffer, a channel and its mapping.
		mark
		/vgpu-drm-check hold "$node" >/tmp/hold.out 2>&1 &
		holder=$!
		i=0
		while ! grep -q HOLD-READY /tmp/hold.out && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		echo "$vgpu" >/sys/bus/pci/drivers/vgpu/unbind
		check "unbind with objects alive: DRM nodes gone" test -z "$(vgpu_drm_nodes)"
		if rmmod vgpu 2>/dev/null; then
			bad "rmmod refused while a file is open"
		else
			ok "rmmod refused while a file is open (module in use)"
		fi
		kill -USR1 "$holder"
		wait "$holder"
		cat /tmp/hold.out
		p=$(grep -c '^VGPU-GD-CHECK PASS' /tmp/hold.out)
		f=$(grep -c '^VGPU-GD-CHECK FAIL' /tmp/hold.out)
		pass=$((pass + p))
		fail=$((fail + f))
		freed=$(klog_since "$mark_n" | grep -m1 'unbind: freed' | sed 's/^\[[^]]*\] //')
		check "unbind freed the held buffer on the host: ${freed:-nothing}" test -n "$freed"
		destroyed=$(klog_since "$mark_n" | grep -m1 'unbind: destroyed' | sed 's/^\[[^]]*\] //')
		check "unbind destroyed the held channel on the host: ${destroyed:-nothing}" \
			test -n "$destroyed"
		echo "$vgpu" >/sys/bus/pci/drivers/vgpu/bind
		check "rebind the vGPU" bound_to_vgpu "$vgpu"
		[ -x /vgpu-drm-check ] && run_check quick
	fi
else
	skipped "probe against a vGPU (no 1af4:10f0 device in this guest)"
fi

# 5. unload, then cycles in every interrupt mode (with a vGPU: each one
#    probes, says which interrupts it uses, and passes the quick check)
mark
check "rmmod vgpu" rmmod vgpu
check "module gone after rmmod" test ! -d /sys/module/vgpu
for mode in auto msix msi intx poll bogus; do
	case $mode in
	auto | msix | bogus) want="MSI-X" ;;
	msi) want="MSI" ;;
	intx) want="INTx" ;;
	poll) want="none (polling)" ;;
	esac
	mark
	if ! insmod /vgpu.ko irq_mode=$mode; then
		bad "insmod irq_mode=$mode"
		continue
	fi
	if [ -n "$vgpu" ]; then
		got=$(klog_since "$mark_n" | sed -n 's/.*vGPU ABI.*, interrupts \(.*\), render node.*/\1/p' | head -n 1)
		check "irq_mode=$mode: probe uses '$got' (want $want)" test "$got" = "$want"
		[ -x /vgpu-drm-check ] && run_check quick
	fi
	check "irq_mode=$mode: rmmod" rmmod vgpu
done
# 6. the backend dies while the VM runs (fake-vgpud exits on request)
if [ -n "$vgpu" ] && [ -x /vgpu-drm-check ]; then
	mark
	check "insmod for the backend-death check" insmod /vgpu.ko
	run_check gone
	echo "$vgpu" >/sys/bus/pci/drivers/vgpu/unbind
	check "unbind with the backend gone" test -z "$(vgpu_drm_nodes)"
	echo "$vgpu" >/sys/bus/pci/drivers/vgpu/bind 2>/dev/null
	why=$(klog_since "$mark_n" | grep -m1 'the host backend is gone' | sed 's/^\[[^]]*\] //')
	if ! bound_to_vgpu "$vgpu" && [ -n "$why" ]; then
		ok "probe refuses a vGPU whose backend is gone: $why"
	else
		bad "probe with the backend gone (bound: $(bound_to_vgpu "$vgpu" && echo yes || echo no), log: '$why')"
	fi
	check "rmmod vgpu after the backend died" rmmod vgpu
fi
check "rmmod drm" rmmod drm

# 7. the kernel log since the checks began (the boot itself may warn: the
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
