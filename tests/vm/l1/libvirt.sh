#!/bin/bash
# tests/vm/l1/libvirt.sh - the L1 half of tests/vm/libvirt.sh (runs INSIDE L1,
# started by boot-l1.sh; its inputs are LV_* variables, see tests/vm/libvirt.sh).
#
# A libvirt host as an operator runs it, with the project's pieces:
#   1. vfio, mdev, kvm_amd, vgpu_mdev.ko; the stand-in GPU (pci-testdev at
#      LV_GPU) bound to the module's PCI driver "vgpu"; vgpud (simgpu with
#      LV_VRAM, profile LV_PROFILE with max_instances 2) serving mdevs
#   2. libvirt from the host's Debian packages (host root over 9p, read-only):
#      tmpfs for its state, config and mdevctl's, udevd (libvirt's node
#      devices follow udev events), libvirtd; the mdevctl call-out
#      libvirt-xml/mdevctl/vgpu-callout installed
#   3. profiles as libvirt and mdevctl list them; two mdevs from `vgpuctl xml`
#      output: guest-a's through virsh nodedev-define + nodedev-start (+
#      autostart), guest-b's through virsh nodedev-create; a third is refused
#      by the call-out with its reason
#   4. two domains from libvirt-xml/vgpu-domain.xml (name, kernel, initrd,
#      command line and the <hostdev> from `vgpuctl xml`; plus a test-only
#      second serial port, a pipe, to release the guests), virsh define +
#      start; each guest runs l2/e2e-guest.sh: vgpu.ko, vgpu-run holding
#      LV_SIZE of GPU memory (together more than the VRAM)
#   5. while both hold: vgpuctl status --json names both VMs by their domain
#      (name_source libvirt) with their shares; sysfs vendor/vm too
#   6. virsh destroy guest-a: its memory returns to guest-b (evicted drops,
#      resident rises); guest-b verifies its data byte for byte
#   7. the mdev is reused: guest-c defined on guest-a's mdev, started, named
#      guest-c, verifies its data; meanwhile the README's "Assigning a vGPU
#      with libvirt" commands run as written for a domain myvm (profile
#      vgpu-1G): list profiles, create the mdev, attach, start, read shares
#   7b. QEMU started by hand (no libvirt) on an mdev: named by its -name, or
#      by the mdev UUID without one
#   8. teardown through libvirt (the README's removal for myvm; undefine,
#      nodedev-destroy/-undefine); autostart: with no mdev left and vgpud
#      restarted, udev + mdevctl start guest-a's defined mdev by themselves;
#      vgpud stops cleanly, the GPU unbinds, vgpu_mdev unloads, dmesg clean
# One line per check: "VGPU-LV-CHECK ok: ..." / "VGPU-LV-CHECK FAIL: ...".
set -uo pipefail
# All of it in one block: bash parses the block before it runs any of it, so
# an edit to this file while a test runs does not change the running test.
{
: "${VMLINUZ:?not run by boot-l1.sh}" "${LV_VGPUD:?}" "${LV_VGPUCTL:?}" "${LV_MDEV_KO:?}"
: "${LV_L2_INITRD:?}" "${LV_XML_DIR:?}" "${LV_README:?}"
gpu=${LV_GPU:-0000:00:10.0} vram=${LV_VRAM:-256M} size=${LV_SIZE:-200M} buffer=${LV_BUFFER:-24M}
duration=${LV_DURATION:-4s} profile=${LV_PROFILE:-vgpu-256M} l2_mem=${LV_L2_MEM:-256M}
boot_timeout=${LV_L2_BOOT_TIMEOUT:-150} hold_timeout=${LV_HOLD_TIMEOUT:-240}
caps_cache=${LV_CAPS_CACHE:-}

run=$PWD
ctl=/run/vgpud/control.sock # vgpud's defaults: the README's commands use them
PATH=$(dirname "$LV_VGPUCTL"):$PATH
export PATH
pipes=/run/vgpu-lv
virsh() { command virsh -q -c qemu:///system "$@"; }
vgpuctl() { "$LV_VGPUCTL" --socket "$ctl" "$@"; }
failures=0 vgpud_pid='' udevd_started=0 libvirtd_started=0 plain_pid=
nodedev=pci_${gpu//[:.]/_}

CHECK_TAG=VGPU-LV
# shellcheck source=../lib/l1-checks.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/l1-checks.sh"
serial() { echo "/var/log/libvirt/qemu/$1-serial.log"; }
has() { grep -qa "$2" "$(serial "$1")" 2>/dev/null; }
state() { virsh domstate "$1" 2>/dev/null | head -n 1; }
shut_off() { [[ $(state "$1") == "shut off" ]]; }
# the vgpuctl status --json entry of VM NAME (field $2, or the whole object)
vm_field() { vgpuctl status --json 2>/dev/null | jq -r --arg n "$1" ".vms[] | select(.name == \$n) | .$2"; }
field_is() { [[ $(vm_field "$1" "$2") == "$3" ]]; } # NAME FIELD VALUE (for wait_for)
vm_count_is() { [[ $(vgpuctl status --json 2>/dev/null | jq '.vms | length') == "$1" ]]; }

cleanup() {
	local d
	if ((libvirtd_started)); then
		for d in $(command virsh -c qemu:///system list --name 2>/dev/null); do
			command virsh -c qemu:///system destroy "$d" >/dev/null 2>&1
		done
		pkill -x libvirtd 2>/dev/null
	fi
	[[ -n $plain_pid ]] && kill "$plain_pid" 2>/dev/null
	[[ -n $vgpud_pid ]] && kill "$vgpud_pid" 2>/dev/null
	((udevd_started)) && udevadm control --exit 2>/dev/null
	return 0
}
trap cleanup EXIT

finish() {
	local d
	for d in guest-a guest-b guest-c myvm; do
		[[ -f $(serial "$d") ]] && tr -d '\r' <"$(serial "$d")" >"l2-$d.log"
		[[ -f /var/log/libvirt/qemu/$d.log ]] && cp "/var/log/libvirt/qemu/$d.log" "qemu-$d.log"
	done
	[[ -f /var/log/libvirt/libvirtd.log ]] && cp /var/log/libvirt/libvirtd.log libvirtd.log
	mkdir -p caps
	cp /var/cache/libvirt/qemu/capabilities/*.xml caps/ 2>/dev/null
	cleanup
	echo "--- vgpud log (tail)"
	tail -n 20 vgpud.log 2>/dev/null | sed 's/^/    /'
	echo "--- libvirtd log (errors, tail)"
	grep -a ': error :' libvirtd.log 2>/dev/null | grep -v 'dnsmasq\|DBus\|system bus' | tail -n 10 |
		sed 's/^/    /'
	echo "--- dmesg (vgpu, mdev, vfio)"
	dmesg | grep -i 'vgpu\|mdev\|vfio' | tail -n 15 | sed 's/^/    /'
	echo "VGPU-LV-L1-SECONDS=$(elapsed "$t_job")"
	echo "VGPU-LV-L1-FAILURES=$failures"
	((failures == 0)) && echo "VGPU-LV-L1-DONE"
	exit $((failures != 0))
}
dmesg_clean() {
	! dmesg | grep -E 'BUG:|Oops|WARNING:|general protection|Call Trace|soft lockup|hung task' >dmesg-bad.txt
}
step() { echo "VGPU-LV-STEP $1 $(elapsed "$t_job")"; }

t_job=$(now)
dmesg -n 1 2>/dev/null

# --- 1. modules, the GPU, vgpud ----------------------------------------------------------
step modules
for m in vfio vfio_iommu_type1 mdev vfio_virqfd; do
	modprobe "$m" || { fail "modprobe $m"; finish; }
done
modprobe kvm_amd nested=1 || { fail "modprobe kvm_amd nested=1"; finish; }
insmod "$LV_MDEV_KO" || { fail "insmod $LV_MDEV_KO"; finish; }
if [[ -e /sys/bus/pci/devices/$gpu ]]; then
	echo vgpu >"/sys/bus/pci/devices/$gpu/driver_override"
	echo "$gpu" >/sys/bus/pci/drivers_probe
fi
check "the stand-in GPU $gpu ($(cat "/sys/bus/pci/devices/$gpu/vendor" 2>/dev/null):$(cat "/sys/bus/pci/devices/$gpu/device" 2>/dev/null)) is bound to vgpu_mdev's PCI driver 'vgpu'" \
	test "$(basename "$(readlink "/sys/bus/pci/devices/$gpu/driver" 2>/dev/null)")" = vgpu

mkdir -p /run/vgpud "$pipes"
cat >vgpud.conf <<EOF
# written by tests/vm/l1/libvirt.sh
[simgpu]
vram = $vram
[core]
chunk_size = 4M
[daemon]
socket = /run/vgpud/vgpud.sock
control_socket = $ctl
mdev = on
default_profile = $profile
libvirt_uri = qemu:///system
metrics = 127.0.0.1:9464
[profile $profile]
weight = 1
cap = $vram
max_instances = 2
[profile vgpu-1G]
weight = 1
cap = 1G
max_instances = 4
EOF
start_vgpud() {
	"$LV_VGPUD" --config "$PWD/vgpud.conf" 2>>vgpud.log &
	vgpud_pid=$!
}
stop_vgpud() { # -> the exit status
	local rc
	kill "$vgpud_pid"
	wait "$vgpud_pid"
	rc=$?
	vgpud_pid=
	return "$rc"
}
start_vgpud
types=/sys/class/mdev_bus/$gpu/mdev_supported_types
if wait_for 30 grep -q 'ready:' vgpud.log && wait_for 10 test -d "$types/$profile"; then
	pass "vgpud serves mdevs; its profiles are the mdev types of the GPU ($(cd "$types" && echo *))"
else
	fail "vgpud with the mdev transport did not come up: $(tail -n 5 vgpud.log | tr '\n' '|')"
	finish
fi

# --- 2. libvirt ---------------------------------------------------------------------------
step libvirt
# State, config and mdevctl's directory on tmpfs over the read-only host
# root; the empty mount points /var/{lib,log,cache}/libvirt come from the host.
for d in /etc/libvirt /etc/mdevctl.d /var/lib/libvirt /var/log/libvirt /var/cache/libvirt; do
	if [[ ! -d $d ]]; then
		fail "$d does not exist on the host (tests/vm/libvirt.sh creates the mount points)"
		finish
	fi
	mkdir -p "/run/lv-root$d"
	cp -a "$d/." "/run/lv-root$d/" 2>/dev/null
	mount --bind "/run/lv-root$d" "$d" || { fail "bind mount over $d"; finish; }
done
mkdir -p /var/log/libvirt/qemu /var/lib/libvirt/qemu /var/cache/libvirt/qemu/capabilities \
	/etc/mdevctl.d/scripts.d/callouts /etc/mdevctl.d/scripts.d/notifiers
# What libvirt-daemon-system and udev would provide: the QEMU user libvirt
# resolves at start (we run QEMU as root), and /dev/stdin (mdevctl --jsonfile).
for f in passwd group; do
	cp "/etc/$f" "/run/lv-root/$f"
done
grep -q '^libvirt-qemu:' /etc/passwd ||
	echo 'libvirt-qemu:x:64055:64055:Libvirt Qemu:/var/lib/libvirt:/usr/sbin/nologin' >>/run/lv-root/passwd
grep -q '^libvirt-qemu:' /etc/group || echo 'libvirt-qemu:x:64055:' >>/run/lv-root/group
grep -q '^libvirt:' /etc/group || echo 'libvirt:x:64056:' >>/run/lv-root/group
grep -q '^kvm:' /etc/group || echo 'kvm:x:64057:' >>/run/lv-root/group
mount --bind /run/lv-root/passwd /etc/passwd && mount --bind /run/lv-root/group /etc/group
[[ -e /dev/stdin ]] || ln -s /proc/self/fd/0 /dev/stdin
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
cat >/etc/libvirt/qemu.conf <<EOF
# tests/vm/l1/libvirt.sh: QEMU as root, no cgroups, namespaces or security
# driver in this minimal L1 (no systemd, no AppArmor policy); QEMU writes the
# serial logs itself (no virtlogd)
user = "root"
group = "root"
dynamic_ownership = 0
security_driver = "none"
namespaces = [ ]
cgroup_controllers = [ ]
stdio_handler = "file"
EOF
cat >/etc/libvirt/libvirtd.conf <<EOF
log_outputs = "2:file:/var/log/libvirt/libvirtd.log"
EOF
install -m 0755 "$LV_XML_DIR/mdevctl/vgpu-callout" /etc/mdevctl.d/scripts.d/callouts/vgpu
# Debian 12's mdevctl 1.2 udev rule runs /usr/sbin/mdevctl, but the package
# installs /usr/bin/mdevctl: autostart mdevs would never start. The fix the
# README gives, as an override in /run/udev/rules.d (same file name wins).
mkdir -p /run/udev/rules.d
sed 's#/usr/sbin/mdevctl#/usr/bin/mdevctl#g' /lib/udev/rules.d/60-mdevctl.rules >/run/udev/rules.d/60-mdevctl.rules
if [[ -n $caps_cache && -d $caps_cache ]]; then
	cp "$caps_cache"/*.xml /var/cache/libvirt/qemu/capabilities/ 2>/dev/null
fi
t0=$(now)
if /lib/systemd/systemd-udevd --daemon >udevd.log 2>&1; then
	udevd_started=1
else
	fail "systemd-udevd: $(cat udevd.log)"
fi
libvirtd -d && libvirtd_started=1
if wait_for 30 test -S /run/libvirt/libvirt-sock && version=$(virsh version 2>&1); then
	pass "libvirtd $(libvirtd --version | awk '{ print $NF }') answers on qemu:///system ($(echo "$version" | grep -o 'QEMU [0-9.]*' | tail -n 1); $(elapsed "$t0") s incl. probing QEMU)"
else
	fail "libvirtd did not come up: ${version:-} $(tail -n 5 /var/log/libvirt/libvirtd.log 2>/dev/null | tr '\n' '|')"
	finish
fi

# --- 3. profiles and mdevs through libvirt ------------------------------------------------
step nodedev
check "virsh nodedev-list --cap mdev_types lists the GPU ($nodedev)" \
	bash -c "command virsh -q -c qemu:///system nodedev-list --cap mdev_types | grep -qx $nodedev"
virsh nodedev-dumpxml "$nodedev" >gpu-nodedev.xml 2>&1
check "virsh nodedev-dumpxml $nodedev: type $profile, $profile's name, vfio-pci, 2 available" \
	bash -c "xmllint --xpath \"//capability[@type='mdev_types']/type[@id='$profile']/availableInstances/text()\" gpu-nodedev.xml | grep -qx 2 &&
		xmllint --xpath \"//type[@id='$profile']/deviceAPI/text()\" gpu-nodedev.xml | grep -qx vfio-pci"
mdevctl types >mdevctl-types.txt 2>&1
check "mdevctl types lists $profile on $gpu" grep -q "$profile" mdevctl-types.txt

mkdir -p xml
vgpuctl xml --output-dir xml guest-a "$profile" --autostart >xml/guest-a.txt 2>&1 &&
	vgpuctl xml --output-dir xml guest-b "$profile" >xml/guest-b.txt 2>&1
check "vgpuctl xml wrote guest-a's and guest-b's nodedev/hostdev XML and mdevctl JSON" \
	test -s xml/guest-a-vgpu-nodedev.xml -a -s xml/guest-b-vgpu-hostdev.xml -a -s xml/guest-a-vgpu-mdevctl.json
for f in xml/*-nodedev.xml; do
	check "virt-xml-validate $(basename "$f")" virt-xml-validate "$f" nodedev
done
uuid_a=$(xmllint --xpath 'string(/device/capability/uuid)' xml/guest-a-vgpu-nodedev.xml)
uuid_b=$(xmllint --xpath 'string(/device/capability/uuid)' xml/guest-b-vgpu-nodedev.xml)
mdev_a=mdev_${uuid_a//-/_}_${gpu//[:.]/_}
mdev_b=mdev_${uuid_b//-/_}_${gpu//[:.]/_}
say "guest-a's mdev $uuid_a ($mdev_a), guest-b's $uuid_b ($mdev_b)"

t0=$(now)
if virsh nodedev-define xml/guest-a-vgpu-nodedev.xml >nodedev-a.txt 2>&1 &&
	virsh nodedev-start "$mdev_a" >>nodedev-a.txt 2>&1 &&
	virsh nodedev-autostart "$mdev_a" >>nodedev-a.txt 2>&1; then
	pass "guest-a's mdev: virsh nodedev-define + nodedev-start + nodedev-autostart ($(elapsed "$t0") s)"
else
	fail "nodedev-define/start/autostart $mdev_a: $(tr '\n' ' ' <nodedev-a.txt)"
fi
t0=$(now)
if virsh nodedev-create xml/guest-b-vgpu-nodedev.xml >nodedev-b.txt 2>&1; then
	pass "guest-b's mdev: virsh nodedev-create (transient; $(elapsed "$t0") s)"
else
	fail "nodedev-create $mdev_b: $(tr '\n' ' ' <nodedev-b.txt)"
fi
check "both mdevs exist in sysfs, bound to vgpu_mdev" \
	test -e "/sys/bus/mdev/devices/$uuid_a/vendor/profile" -a -e "/sys/bus/mdev/devices/$uuid_b/vendor/profile"
check "mdevctl: guest-a's mdev defined (auto start) and active" \
	bash -c "mdevctl list -d | grep -q '^$uuid_a $gpu $profile auto (active)'"
check "virsh nodedev-info: guest-a's mdev persistent, active, autostart" \
	bash -c "command virsh -c qemu:///system nodedev-info $mdev_a | grep -q 'Persistent:.*yes' &&
		command virsh -c qemu:///system nodedev-info $mdev_a | grep -q 'Active:.*yes' &&
		command virsh -c qemu:///system nodedev-info $mdev_a | grep -q 'Autostart:.*yes'"
check "available_instances of $profile is 0" grep -qx 0 "$types/$profile/available_instances"

# a third one: the call-out refuses, libvirt says why
vgpuctl xml --nodedev guest-x "$profile" >xml/guest-x-nodedev.xml 2>/dev/null
uuid_x=$(xmllint --xpath 'string(/device/capability/uuid)' xml/guest-x-nodedev.xml 2>/dev/null)
if virsh nodedev-create xml/guest-x-nodedev.xml >nodedev-x.txt 2>&1; then
	fail "a third mdev of $profile (max_instances 2) was created"
else
	check "a third mdev is refused by the call-out with its reason: '$(grep -o 'vGPU profile [^.]*' nodedev-x.txt | head -n 1)'" \
		grep -q "vGPU profile $profile has no instances left" nodedev-x.txt
fi
check "no third mdev exists" test ! -e "/sys/bus/mdev/devices/${uuid_x:-none}"

# --- 4. domains from the template ---------------------------------------------------------
step domains
# make_domain NAME MDEV-UUID HOSTDEV-FILE INDEX: the template with this
# guest's name, kernel, initrd, command line, <hostdev>, plus a test-only
# second serial port (a pipe) on which L1 releases the guest's workload.
make_domain() {
	local name=$1 index=$4 out=xml/$1.xml
	mkfifo "$pipes/$name.in" "$pipes/$name.out" 2>/dev/null
	awk -v hostdev="$3" -v name="$name" -v kernel="$VMLINUZ" -v initrd="$LV_L2_INITRD" \
		-v mem="${l2_mem%M}" -v pipe="$pipes/$name" \
		-v cmdline="console=ttyS0 panic=-1 loglevel=4 nokaslr random.trust_cpu=on e2e.vm=$index e2e.size=$size e2e.buffer=$buffer e2e.duration=$duration e2e.seed=$((2000 + index)) e2e.hold=$hold_timeout" '
		/^<!--/, /-->$/ { next }                      # the template'\''s header comment
		/<name>vgpu-guest<\/name>/ { sub(/vgpu-guest/, name) }
		/<memory unit=/ { sub(/>[0-9]+</, ">" mem "<") }
		/<vcpu / { sub(/>[0-9]+</, ">1<") }
		/<kernel>/ { sub(/>.*</, ">" kernel "<") }
		/<initrd>/ { sub(/>.*</, ">" initrd "<") }
		/<cmdline>/ { sub(/>.*</, ">" cmdline "<") }
		/vgpu-guest-serial.log/ { sub(/vgpu-guest-serial.log/, name "-serial.log") }
		/<console type=/ { print "    <serial type='\''pipe'\''><source path='\''" pipe "'\''/><target port='\''1'\''/></serial>" }
		/^ *<hostdev / { skip = 1; while ((getline line < hostdev) > 0) if (line !~ /^<!--|-->$|^     /) print "    " line; next }
		skip && /<\/hostdev>/ { skip = 0; next }
		skip { next }
		{ print }' "$LV_XML_DIR/vgpu-domain.xml" >"$out"
	# drain what the guest writes to that port
	cat "$pipes/$name.out" >/dev/null &
}
make_domain guest-a "$uuid_a" xml/guest-a-vgpu-hostdev.xml 1
make_domain guest-b "$uuid_b" xml/guest-b-vgpu-hostdev.xml 2
for d in guest-a guest-b; do
	check "$d.xml (template + vgpuctl xml's <hostdev>) validates" virt-xml-validate "xml/$d.xml" domain
	check "$d.xml assigns its mdev" grep -q "<address uuid='$([[ $d == guest-a ]] && echo "$uuid_a" || echo "$uuid_b")'/>" "xml/$d.xml"
	if virsh define "xml/$d.xml" >/dev/null 2>"define-$d.err"; then
		pass "virsh define $d"
	else
		fail "virsh define $d: $(cat "define-$d.err")"
	fi
done
t_l2=$(now)
for d in guest-a guest-b; do
	if virsh start "$d" >/dev/null 2>"start-$d.err"; then
		pass "virsh start $d ($(elapsed "$t_l2") s)"
	else
		fail "virsh start $d: $(cat "start-$d.err")"
		finish
	fi
done
check "QEMU of guest-a has the mdev as vfio-pci (-device ...sysfsdev=/sys/bus/mdev/devices/$uuid_a)" \
	bash -c "tr '\0' ' ' </proc/\$(pgrep -f 'guest=guest-a' | head -n 1)/cmdline | grep -q 'sysfsdev.*$uuid_a'"

# both guests boot (their init) and hold their memory
step boot
for d in guest-a guest-b; do
	if wait_for "$boot_timeout" has "$d" '^VGPU-L2-HELLO'; then
		pass "$d booted to its init ($(elapsed "$t_l2") s after the first start)"
	else
		fail "$d did not reach its init within ${boot_timeout}s (state $(state "$d"); serial $run/l2-$d.log)"
		finish
	fi
done
for d in guest-a guest-b; do
	if wait_for "$hold_timeout" has "$d" '^VGPU-E2E-HOLD'; then
		pass "$d: vgpu.ko bound, vgpu-run holds $size: $(grep -a -m1 '^VGPU-E2E-HOLD' "$(serial "$d")" | tr -d '\r' | cut -d' ' -f3-7)"
	else
		fail "$d never held its memory (serial $run/l2-$d.log: $(grep -a 'VGPU-E2E-L2 FAIL' "$(serial "$d")" | tr -d '\r' | head -n 2 | tr '\n' '|'))"
		finish
	fi
done

# --- 5. names and shares ------------------------------------------------------------------
step names
names_ok() {
	[[ $(vm_field guest-a name_source) == libvirt && $(vm_field guest-b name_source) == libvirt ]]
}
if wait_for 20 names_ok; then
	pass "vgpuctl status --json names both VMs by their libvirt domain (name_source libvirt)"
else
	fail "VM names: $(vgpuctl status --json | jq -c '[.vms[] | {name, uuid, name_source}]')"
fi
vgpuctl status --json >status-held.json
vgpuctl status >status-held.txt
sed 's/^/    /' status-held.txt
size_bytes=$(numfmt --from=iec "$size")
vram_bytes=$(jq -r .gpu.vram status-held.json)
for d in guest-a guest-b; do
	u=$([[ $d == guest-a ]] && echo "$uuid_a" || echo "$uuid_b")
	check "$d: uuid $u, profile $profile, transport mdev" \
		test "$(jq -r --arg n "$d" '.vms[] | select(.name == $n) | "\(.uuid) \(.profile) \(.transport)"' status-held.json)" = "$u $profile mdev"
	check "$d: allocated = what its guest holds ($size)" \
		test "$(jq -r --arg n "$d" '.vms[] | select(.name == $n) | .allocated' status-held.json)" = "$size_bytes"
	check "$d: resident > 0 and a fair share" \
		test "$(jq -r --arg n "$d" '.vms[] | select(.name == $n) | (.resident > 0 and .fair_share > 0)' status-held.json)" = true
	check "sysfs vendor/vm of $d's mdev is '$d'" wait_for 5 grep -qx "$d" "/sys/bus/mdev/devices/$u/vendor/vm"
done
check "the guests hold more than the VRAM ($(jq '[.vms[].allocated] | add' status-held.json) > $vram_bytes): oversubscribed" \
	test "$(jq "[.vms[].allocated] | add > $vram_bytes" status-held.json)" = true
check "memory was evicted to host RAM (gpu.evicted $(jq .gpu.evicted status-held.json) > 0)" \
	test "$(jq '.gpu.evicted > 0' status-held.json)" = true
check "vgpuctl status (table) shows guest-a and guest-b" \
	bash -c "grep -q '^guest-a ' status-held.txt && grep -q '^guest-b ' status-held.txt"
check "vgpuctl stats guest-a (a domain name) answers" bash -c "'$LV_VGPUCTL' --socket $ctl stats guest-a >/dev/null"
# The metrics endpoint names the VMs the same way (HTTP without curl: bash's /dev/tcp)
scrape() {
	exec 5<>/dev/tcp/127.0.0.1/9464 || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&5
	tr -d '\r' <&5
	exec 5<&-
}
(scrape) >metrics-held.http 2>/dev/null || true
vgpuctl metrics >metrics-held.txt || true
check "GET /metrics answers 200 in Prometheus text format" \
	bash -c "head -n 1 metrics-held.http | grep -q ' 200 ' && grep -qi '^content-type: text/plain; version=0.0.4' metrics-held.http"
for d in guest-a guest-b; do
	u=$([[ $d == guest-a ]] && echo "$uuid_a" || echo "$uuid_b")
	line="vgpu_vm_allocated_bytes{uuid=\"$u\",name=\"$d\",profile=\"$profile\",transport=\"mdev\"} $size_bytes"
	check "metrics (HTTP and vgpuctl metrics) name $d by its domain: $line" \
		bash -c 'grep -qxF "$1" metrics-held.http && grep -qxF "$1" metrics-held.txt' _ "$line"
done
grep -a 'the VM is libvirt domain' vgpud.log | sed 's/^/VGPU-LV: vgpud: /'

# --- 6. destroy guest-a: its memory returns to guest-b ------------------------------------
step destroy
b_evicted=$(jq -r '.vms[] | select(.name == "guest-b") | .evicted' status-held.json)
b_resident=$(jq -r '.vms[] | select(.name == "guest-b") | .resident' status-held.json)
b_returns=$(jq -r '.vms[] | select(.name == "guest-b") | .returns' status-held.json)
say "guest-b before: resident $b_resident, evicted $b_evicted, returns $b_returns"
t0=$(now)
check "virsh destroy guest-a" virsh destroy guest-a
check "vgpud detached guest-a (gone from vgpuctl status)" \
	wait_for 30 bash -c "! '$LV_VGPUCTL' --socket $ctl status --json | jq -e '.vms[] | select(.name == \"guest-a\")' >/dev/null"
returned() {
	local e r
	e=$(vm_field guest-b evicted) r=$(vm_field guest-b resident)
	[[ -n $e && -n $r ]] && ((e < b_evicted || (b_evicted == 0 && r >= b_resident)))
}
if ((b_evicted > 0)) && wait_for 30 returned; then
	pass "guest-a's memory returned to guest-b: evicted $b_evicted -> $(vm_field guest-b evicted), resident $b_resident -> $(vm_field guest-b resident), returns $b_returns -> $(vm_field guest-b returns) ($(elapsed "$t0") s)"
else
	fail "no return to guest-b (evicted before $b_evicted, now $(vm_field guest-b evicted); resident $(vm_field guest-b resident))"
fi
check "guest-b: everything resident again (evicted 0)" wait_for 20 field_is guest-b evicted 0
check "guest-a's mdev is closed again (vendor/state)" wait_for 10 grep -qx closed "/sys/bus/mdev/devices/$uuid_a/vendor/state"
# guest-b verifies its data and shuts down
timeout 5 bash -c "echo go >$pipes/guest-b.in" || fail "releasing guest-b (pipe)"
if wait_for 120 has guest-b '^VGPU-E2E-L2-DONE'; then
	check "guest-b verified every buffer byte for byte after the return" has guest-b 'VGPU-E2E-L2 ok .*verified every buffer'
	check "guest-b's checks all passed ($(grep -a -m1 'VGPU-E2E-L2-DONE' "$(serial guest-b)" | tr -d '\r'))" \
		has guest-b '^VGPU-E2E-L2-DONE vm=2 failures=0'
else
	fail "guest-b did not finish (serial $run/l2-guest-b.log)"
fi
check "guest-b powered off: domain shut off" wait_for 60 shut_off guest-b

# --- 7. the mdev reused by another domain; the README as a new user runs it ----------------
step reuse
# walkthrough N: the README's block after "<!-- test: libvirt-walkthrough N -->",
# run by bash -e in walkthrough/ with the variables of the earlier blocks
walkthrough() {
	local n=$1 rc
	awk -v n="$n" '$0 == "<!-- test: libvirt-walkthrough " n " -->" { mark = 1; next }
		mark && /^```sh$/ { code = 1; next }
		code && /^```$/ { exit }
		code { print }' "$LV_README" >"walkthrough/block$n.sh"
	[[ -s walkthrough/block$n.sh ]] || { echo "no block $n in $LV_README"; return 1; }
	(cd walkthrough && bash -e -c "[[ -f vars ]] && source ./vars; set -x; source ./block$n.sh
		declare -p gpu uuid mdev 2>/dev/null >vars || true") >"walkthrough/block$n.log" 2>&1
	rc=$?
	sed "s/^/    README $n: /" "walkthrough/block$n.log" | grep -v '^    README [0-9]: + ' | head -n 30
	return "$rc"
}
make_domain guest-c "$uuid_a" xml/guest-a-vgpu-hostdev.xml 3
make_domain myvm none /dev/null 4 # the template without its <hostdev>: a plain domain
check "guest-c.xml (guest-a's mdev) validates" virt-xml-validate xml/guest-c.xml domain
t0=$(now)
if virsh define xml/guest-c.xml >/dev/null 2>define-guest-c.err && virsh start guest-c >/dev/null 2>start-guest-c.err; then
	pass "virsh define + start guest-c on guest-a's mdev $uuid_a"
else
	fail "guest-c: $(cat define-guest-c.err start-guest-c.err 2>/dev/null)"
fi
mkdir -p walkthrough
check "virsh define myvm (no vGPU yet)" virsh define xml/myvm.xml
check "README walkthrough 1 (list profiles) runs as written" walkthrough 1
check "  ... it listed vgpu-1G with its instances (vgpuctl types, nodedev-dumpxml, mdevctl types)" \
	bash -c "grep -c vgpu-1G walkthrough/block1.log | awk '\$1 >= 3 { ok = 1 } END { exit !ok }'"
check "README walkthrough 2 (create the vGPU) runs as written" walkthrough 2
uuid_m=$(sed -n 's/^declare -- uuid="\(.*\)"$/\1/p' walkthrough/vars)
check "  ... myvm's mdev $uuid_m exists, persistent and autostarted" \
	bash -c "test -e /sys/bus/mdev/devices/$uuid_m && mdevctl list -d | grep -q '^$uuid_m $gpu vgpu-1G auto (active)'"
check "README walkthrough 3 (attach, start) runs as written" walkthrough 3
check "  ... myvm's live XML has the vGPU" \
	bash -c "command virsh -c qemu:///system dumpxml myvm | grep -q \"<address uuid='$uuid_m'/>\""
for d in guest-c myvm; do
	if wait_for "$hold_timeout" has "$d" '^VGPU-E2E-HOLD'; then
		pass "$d holds its memory ($(elapsed "$t0") s)"
	else
		fail "$d never held its memory (serial $run/l2-$d.log)"
	fi
done
check "vgpuctl names the reused mdev's VM guest-c (uuid $uuid_a)" \
	wait_for 20 field_is guest-c uuid "$uuid_a"
check "sysfs vendor/vm of the mdev follows: guest-c" wait_for 5 grep -qx guest-c "/sys/bus/mdev/devices/$uuid_a/vendor/vm"
wait_for 20 field_is myvm name_source libvirt
check "README walkthrough 4 (read the shares) runs as written" walkthrough 4
check "  ... vgpuctl status shows myvm; JSON name myvm with its uuid; sysfs vendor/vm is myvm" \
	bash -c "grep -q '^myvm ' walkthrough/block4.log && grep -q '\"name\": \"myvm\"' walkthrough/block4.log &&
		grep -q '\"uuid\": \"$uuid_m\"' walkthrough/block4.log && grep -q 'vendor/vm:myvm' walkthrough/block4.log"
for d in guest-c myvm; do
	timeout 5 bash -c "echo go >$pipes/$d.in" || fail "releasing $d (pipe)"
done
for d in guest-c myvm; do
	n=$([[ $d == guest-c ]] && echo 3 || echo 4)
	wait_for 120 has "$d" '^VGPU-E2E-L2-DONE'
	check "$d verified its data and passed its checks" has "$d" "^VGPU-E2E-L2-DONE vm=$n failures=0"
	check "$d shut off" wait_for 60 shut_off "$d"
done
check "README walkthrough 5 (remove the vGPU) runs as written" walkthrough 5
check "  ... myvm's mdev and its definition are gone; myvm has no vGPU" \
	bash -c "test ! -e /sys/bus/mdev/devices/$uuid_m && ! mdevctl list -d | grep -q $uuid_m &&
		! command virsh -c qemu:///system dumpxml myvm --inactive | grep -q '<hostdev'"

# --- 7b. a VM libvirt does not know: named by QEMU's -name, else its UUID ------------------
step plain
# QEMU started by hand on guest-b's mdev, paused (-S): it opens the device at
# start, so vgpud attaches the VM; the guest never runs.
plain_qemu() { # [-name NAME]
	qemu-system-x86_64 -S -nodefaults -no-user-config -display none -accel kvm -m 64 "$@" \
		-device "vfio-pci,sysfsdev=/sys/bus/mdev/devices/$uuid_b" </dev/null >>plain-qemu.log 2>&1 &
	plain_pid=$!
}
plain_stop() {
	kill "$plain_pid" 2>/dev/null
	wait "$plain_pid" 2>/dev/null
	wait_for 20 bash -c "! '$LV_VGPUCTL' --socket $ctl status --json | jq -e '.vms[] | select(.uuid == \"$uuid_b\")' >/dev/null"
}
plain_field() { vgpuctl status --json 2>/dev/null | jq -r --arg u "$uuid_b" ".vms[] | select(.uuid == \$u) | .$1"; }
plain_is() { [[ "$(plain_field name) $(plain_field name_source)" == "$1" ]]; }
plain_qemu -name plain-vm,debug-threads=on
check "QEMU without libvirt, -name plain-vm: vgpuctl names it plain-vm (name_source qemu)" \
	wait_for 20 plain_is "plain-vm qemu"
check "  ... sysfs vendor/vm is plain-vm" wait_for 5 grep -qx plain-vm "/sys/bus/mdev/devices/$uuid_b/vendor/vm"
check "  ... detached when QEMU exits" plain_stop
plain_qemu
sleep 3 # the resolver has looked by then (libvirt and /proc, at once and after 0.2, 0.5, 1, 2 s)
check "QEMU without -name: the VM keeps its mdev UUID as its name (name_source uuid)" \
	plain_is "$uuid_b uuid"
check "  ... detached when QEMU exits" plain_stop

# --- 8. teardown through libvirt; autostart --------------------------------------------------
step teardown
check "vgpud has no VM left" wait_for 20 vm_count_is 0
for d in guest-a guest-b guest-c myvm; do
	command virsh -c qemu:///system destroy "$d" >/dev/null 2>&1
	check "virsh undefine $d" virsh undefine "$d"
done
check "virsh nodedev-destroy guest-b's transient mdev: gone" \
	bash -c "command virsh -c qemu:///system nodedev-destroy $mdev_b >/dev/null && test ! -e /sys/bus/mdev/devices/$uuid_b"
check "virsh nodedev-destroy guest-a's mdev: stopped, still defined (autostart)" \
	bash -c "command virsh -c qemu:///system nodedev-destroy $mdev_a >/dev/null && test ! -e /sys/bus/mdev/devices/$uuid_a &&
		mdevctl list -d | grep -q '^$uuid_a $gpu $profile auto$'"
stop_vgpud
check "vgpud stopped, no mdev left: the GPU's mdev parent is unregistered" \
	wait_for 10 test ! -e "/sys/class/mdev_bus/$gpu"
t0=$(now)
start_vgpud
check "autostart: vgpud registers the types again and udev + mdevctl start guest-a's mdev by themselves" \
	wait_for 30 test -e "/sys/bus/mdev/devices/$uuid_a"
say "autostart after $(elapsed "$t0") s"
check "virsh nodedev-info: guest-a's mdev active again" \
	wait_for 10 bash -c "command virsh -c qemu:///system nodedev-info $mdev_a | grep -q 'Active:.*yes'"
check "virsh nodedev-destroy + nodedev-undefine guest-a's mdev: gone, and its definition" \
	bash -c "command virsh -c qemu:///system nodedev-destroy $mdev_a >/dev/null &&
		command virsh -c qemu:///system nodedev-undefine $mdev_a >/dev/null &&
		test ! -e /sys/bus/mdev/devices/$uuid_a && test -z \"\$(mdevctl list -d)\""
check "available_instances of $profile back to 2" wait_for 10 grep -qx 2 "$types/$profile/available_instances"
pkill -x libvirtd
wait_for 20 bash -c '! pgrep -x libvirtd >/dev/null'
libvirtd_started=0
stop_vgpud
rc=$?
check "vgpud exits cleanly on SIGTERM (status $rc)" test "$rc" = 0
echo "$gpu" >/sys/bus/pci/drivers/vgpu/unbind 2>/dev/null
check "the GPU unbinds from 'vgpu'" test ! -e "/sys/bus/pci/devices/$gpu/driver"
check "rmmod vgpu_mdev" rmmod vgpu_mdev
check "no BUG/Oops/WARNING in dmesg" dmesg_clean
[[ -s dmesg-bad.txt ]] && sed 's/^/    dmesg: /' dmesg-bad.txt | head -n 20
step end
finish
exit
}
