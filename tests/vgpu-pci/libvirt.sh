#!/bin/bash
# tests/vgpu-pci/libvirt.sh - a libvirt domain with QEMU's vgpu-pci device
# (issue 14, item 4), started by libvirtd on the host. Run as root.
set -euo pipefail

export VM_PROG=vgpu-pci-libvirt # vm_log's tag
# All of it in one block: bash parses the block before it runs any of it, so
# an edit to this file while a test runs does not change the running test.
{
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../vm/lib/common.sh
source "$ROOT/tests/vm/lib/common.sh"
# shellcheck source=../vm/lib/build.sh
source "$VM_LIB_DIR/build.sh"

usage() {
	cat <<EOF
Usage: $0 [--qemu PATH] [--head] [--no-device] [-v]

The vgpu-pci device through libvirt (libvirt-xml/vgpu-pci-domain.xml), with
libvirt's daemon started by this test on the host, no nesting:
  host: libvirt's Debian packages (libvirt-daemon, libvirt-daemon-driver-qemu,
        libvirt-clients; their maintainer scripts start no service); the
        patched QEMU from \$(qemu-patches/build.sh | tail -1) (\$VGPU_QEMU or
        --qemu instead); the kernel, vgpu.ko, vgpud, vgpuctl, vgpu-run and the
        guest's initramfs exactly as tests/vgpu-pci/run builds them
        (tests/vm/lib/build.sh, tests/vgpu-pci/guest-job.sh)
  a private mount namespace (unshare): directories of the run directory over
        /etc/libvirt, /var/lib/libvirt, /var/log/libvirt, /var/cache/libvirt,
        /run/libvirt and /run/vgpud, and the libvirt-qemu user and group
        when the host has none, so nothing of the host's libvirt is seen or
        touched; libvirtd with the qemu.conf an operator writes (QEMU as
        libvirt-qemu:libvirt-qemu, dynamic ownership; stdio to files instead
        of virtlogd and no cgroups, as the host runs neither)
  the domain: libvirt-xml/vgpu-pci-domain.xml as shipped validates
        (virt-xml-validate), and so does the test's copy (the patched QEMU as
        <emulator>, the guest's kernel command line, a second serial port);
        virsh define; virsh start fails with the device's error while no
        vgpud runs, and while vgpud's socket has no socket_group (QEMU is
        refused); vgpud on its default sockets in /run/vgpud with
        socket_group = libvirt-qemu (64 MiB simgpu): virsh start; QEMU runs
        as libvirt-qemu with -name guest=<domain> and the -device from
        <qemu:commandline>; the guest's vgpu.ko binds the vgpu-pci function;
        vgpuctl status names the VM by the domain name (the XML gives the
        device no name); the guest's stream workload holds 48M (vgpuctl
        shows them); virsh save while it holds them: the domain is shut
        off, vgpud lists no VM; virsh restore: the domain runs, vgpud holds
        its memory again; the same with virsh managedsave and virsh start;
        then stream, stencil and gups pass their checksums
        (tests/vgpu-pci/guest-job.sh); while it runs stream again, virsh
        destroy: the domain is shut off, its QEMU gone, and vgpud has no VM
        and all its memory free again; started again, the domain gets a
        vGPU under its name again; virsh undefine removes the domain;
        libvirtd and vgpud stop, no process of the test is left
Prints one line per check ('ok: ...' / 'FAIL: ...'), timings,
'vgpu-pci libvirt: N passed, N failed' and PASS or FAIL; exits 0 only when
every check passed, 1 otherwise, 2 for bad usage, 77 when it cannot run here
(not root, no mount namespace, or no patched QEMU: no qemu-patches/build.sh
and no \$VGPU_QEMU). Every wait is bounded; libvirtd, QEMU and vgpud are
stopped on every exit path. The run directory \$VGPU_CACHE/runs/vgpu-pci-lv-*
keeps libvirt's directories under libvirt/ (libvirt/var/log/libvirt/qemu/:
the domain's QEMU log and serial console; .../libvirtd.log), vgpud's log
and the XML.

Options:
  --qemu PATH      the qemu-system-x86_64 to use (default: \$VGPU_QEMU, else
                   the last line of qemu-patches/build.sh)
  --head           build the last commit (git archive HEAD) instead of the
                   working tree, e.g. in a tree others are editing
  --no-device      check the harness with a QEMU that has no vgpu-pci (default
                   the system's qemu-system-x86_64): the domain without its
                   <qemu:commandline> starts, the guest finds no vGPU, virsh
                   destroy and undefine work
  -v, --verbose    copy the guest's console to stderr
  -h, --help       this text

Environment: VGPU_CACHE (default /var/cache/vgpu-dev), VGPU_KERNEL_ENV,
VGPU_QEMU (a patched qemu-system-x86_64: used instead of building one).
EOF
}

qemu='' head=0 device=1 verbose=0 args=("$@")
while (($#)); do
	case $1 in
	--qemu) qemu=${2:?}; shift 2 ;;
	--head) head=1; shift ;;
	--no-device) device=0; shift ;;
	-v | --verbose) verbose=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: tests/vgpu-pci/libvirt.sh needs root (apt-get, libvirtd, mount namespaces); run it as root"
	exit 77
fi
# Everything below runs in a mount namespace of its own: the bind mounts
# over libvirt's directories are seen by this test, its libvirtd and QEMU
# only, and go away with them.
if [[ ${VGPU_PCI_LV_NAMESPACE:-} != "$$" ]]; then
	if ! unshare --mount --propagation private true 2>/dev/null; then
		echo "SKIP: tests/vgpu-pci/libvirt.sh needs a private mount namespace (unshare --mount) for libvirt's directories"
		exit 77
	fi
	# unshare execs the script in this very process: the same $$
	VGPU_PCI_LV_NAMESPACE=$$ exec unshare --mount --propagation private -- \
		"$BASH" "$(readlink -f "${BASH_SOURCE[0]}")" "${args[@]}"
fi

vram=64M chunk=4M size=48M buffer=8M small=16M duration=2s iterations=10
boot_wait=180 phase_wait=300 gone_wait=30
lv_user=libvirt-qemu # Debian's QEMU user and group under libvirt (qemu.conf)
# shellcheck source=../lib/checks.sh
source "$ROOT/tests/lib/checks.sh"
jq_true() { jq -e "$@" >/dev/null; } # JQ-ARGS...: a check on JSON
t0=$(vm_now)
run='' libvirtd_pid='' vgpud_pid='' dom=''
declare -a helper_pids=() created_dirs=() mounted=()
virsh() { command virsh -q -c qemu:///system "$@"; }
qemu_pids() { # of the domains libvirt runs (driver.pid is libvirtd's own)
	local f
	for f in /run/libvirt/qemu/*.pid; do
		[[ -f $f && $f != */driver.pid ]] && cat "$f"
	done
	return 0
}
alive() { # PID: the process exists and is no zombie
	[[ -e /proc/$1/stat ]] && [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) != Z ]]
}
gone() { ! alive "$1"; }
stop_child() { # PID SECONDS: SIGTERM, SIGKILL after SECONDS; reaped; its exit status
	local pid=$1 rc
	kill "$pid" 2>/dev/null
	wait_for "$2" gone "$pid" || kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null && rc=0 || rc=$?
	return "$rc"
}
cleanup() {
	local p d i
	set +e
	if [[ -n $libvirtd_pid ]] && alive "$libvirtd_pid"; then
		for d in $(virsh list --name 2>/dev/null); do
			virsh destroy "$d" >/dev/null 2>&1
		done
	fi
	# a QEMU libvirtd could not stop (libvirt keeps its pid file)
	for p in $(qemu_pids); do
		kill -KILL "$p" 2>/dev/null
	done
	[[ -n $libvirtd_pid ]] && stop_child "$libvirtd_pid" 20
	[[ -n $vgpud_pid ]] && stop_child "$vgpud_pid" 10
	libvirtd_pid='' vgpud_pid=''
	for p in "${helper_pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	helper_pids=()
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount "${mounted[i]}" 2>/dev/null
	done
	mounted=()
	# directories this test made on the host for its mount points
	for d in "${created_dirs[@]}"; do
		rmdir "$d" 2>/dev/null
	done
	created_dirs=()
	set -e
	return 0
}
trap cleanup EXIT
trap 'bad "interrupted (SIGINT)"; finish "interrupted"' INT
trap 'bad "interrupted (SIGTERM)"; finish "interrupted"' TERM
finish() { # VERDICT-TEXT
	cleanup
	echo "vgpu-pci libvirt: $passed passed, $failed failed"
	if ((failed == 0 && passed > 0)); then
		local what="harness with a QEMU without vgpu-pci (--no-device)"
		((device)) && what="a libvirt domain got its vGPU through vgpu-pci, vgpuctl named it by the domain, virsh destroy gave its memory back"
		echo "PASS: vgpu-pci libvirt: $what; run dir $run; $(vm_elapsed "$t0")s"
		exit 0
	fi
	echo "FAIL: vgpu-pci libvirt: $*${run:+ (logs in the run dir $run: libvirt/var/log/libvirt/qemu/, libvirt/var/log/libvirt/libvirtd.log, vgpud.log)}; $(vm_elapsed "$t0")s"
	exit 1
}

# --- host: packages, QEMU, kernel, builds ----------------------------------------------
vm_ensure_host_pkgs
vm_ensure_pkgs meson ninja-build pkg-config libjson-c-dev libdrm-dev jq binutils coreutils
lv_pkgs=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients libxml2-utils)
vm_ensure_pkgs_no_services "${lv_pkgs[@]}" || { bad "Debian packages ${lv_pkgs[*]} could not be installed"; finish "packages"; }
vm_kernel_env
run=$(vm_new_run_dir vgpu-pci-lv)
vm_log "kernel $KVER ($KPKGVER), run dir $run"

tb=$(vm_now)
if [[ -z $qemu ]]; then
	if ((!device)); then
		qemu=$(command -v qemu-system-x86_64)
	elif [[ -n ${VGPU_QEMU:-} ]]; then
		qemu=$VGPU_QEMU
	elif [[ -x $ROOT/qemu-patches/build.sh ]]; then
		vm_log "qemu-patches/build.sh (log $run/qemu-build.log)"
		if ! qemu=$("$ROOT/qemu-patches/build.sh" 2>>"$run/qemu-build.log" | tee -a "$run/qemu-build.log" | tail -n 1); then
			tail -n 20 "$run/qemu-build.log"
			bad "qemu-patches/build.sh failed (log $run/qemu-build.log)"
			finish "no patched QEMU"
		fi
	else
		echo "SKIP: no patched QEMU: qemu-patches/build.sh does not exist and VGPU_QEMU is not set"
		exit 77
	fi
fi
if [[ ! -x $qemu ]]; then
	bad "QEMU '$qemu' is not an executable"
	finish "no QEMU"
fi
qemu=$(readlink -f "$qemu")
qemu_version=$("$qemu" --version | head -n 1)
if ((device)); then
	check "$qemu ($qemu_version) has the vgpu-pci device" \
		bash -c "'$qemu' -nodefaults -machine none -device help 2>/dev/null | grep -q '\"vgpu-pci\"'"
	((failed == 0)) || finish "a QEMU without vgpu-pci (--no-device checks the harness with one)"
else
	vm_log "--no-device: $qemu ($qemu_version)"
fi

vm_build_sources "$ROOT" "$head"
if vm_build_kmod guest-driver/kernel "$run/guest-kmod-build.log"; then
	ok "vgpu.ko builds against $KVER (make -C \$KDIR M=guest-driver/kernel)"
else
	tail -n 20 "$run/guest-kmod-build.log"
	bad "vgpu.ko build (log $run/guest-kmod-build.log)"
fi
if vm_build_meson "$run/meson-build.log" vgpu-backend/daemon/vgpud vgpu-backend/ctl/vgpuctl \
	guest-driver/tools/vgpu-run; then
	ok "vgpud, vgpuctl and vgpu-run build (meson, $VM_MBUILD)"
else
	tail -n 20 "$run/meson-build.log"
	bad "meson build of vgpud, vgpuctl, vgpu-run (log $run/meson-build.log)"
fi
build_s=$(vm_elapsed "$tb")
((failed == 0)) || finish "build failed"
# The run keeps its own copies: the build tree is free for other tests.
mkdir -p "$run/bin"
strip --strip-debug -o "$run/bin/vgpu.ko" "$VM_KSRC/guest-driver/kernel/vgpu.ko"
strip -o "$run/bin/vgpu-run" "$VM_MBUILD/guest-driver/tools/vgpu-run"
cp "$VM_MBUILD/vgpu-backend/daemon/vgpud" "$VM_MBUILD/vgpu-backend/ctl/vgpuctl" "$run/bin/"
# the guest of tests/vgpu-pci/run: the same initramfs (cached by content)
initrd=$("$VM_LIB_DIR/mkinitramfs.sh" --preset l2 --name vgpu-pci --modules drm \
	--file "$run/bin/vgpu.ko:/vgpu.ko" --file "$HERE/guest-job.sh:/l2-job" \
	--file "$run/bin/vgpu-run:/bin/vgpu-run" --bin "$run/bin/vgpu-run") ||
	{ bad "guest initramfs (mkinitramfs.sh)"; finish "initramfs"; }
flock -u 8
xml_src=$ROOT/libvirt-xml/vgpu-pci-domain.xml
[[ -f $xml_src ]] || { bad "$xml_src is missing"; finish "no domain XML"; }
cp "$xml_src" "$run/"
prep=$(vm_elapsed "$t0")
vm_log "prepared in ${prep}s (builds ${build_s}s)"

# --- a private libvirt host ------------------------------------------------------------------
# private DIR: an empty directory of the run directory mounted over DIR (the
# mount point made on the host when missing, removed again at the end)
private() {
	local dir=$1 src=$run/${2:-libvirt$1}
	mkdir -p "$src"
	if [[ ! -d $dir ]]; then
		mkdir -p "$dir" && created_dirs+=("$dir")
	fi
	mount --bind "$src" "$dir" && mounted+=("$dir")
}
for d in /etc/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt /run/libvirt; do
	private "$d" || { bad "bind mount over $d"; finish "mount namespace"; }
done
private /run/vgpud vgpud-run || { bad "bind mount over /run/vgpud"; finish "mount namespace"; }
# What libvirt-daemon-system would provide: QEMU's user and group (libvirtd
# resolves them at start, vgpud gives its socket to the group), the user in
# group kvm (libvirt probes QEMU's capabilities with KVM when QEMU could open
# /dev/kvm, and takes its probe for stale at every look-up when the user may
# not: a 40 s virsh define). Made in copies of passwd and group seen in this
# namespace only.
in_kvm() { ! getent group kvm >/dev/null || id -nG "$lv_user" 2>/dev/null | grep -qw kvm; }
if ! getent passwd "$lv_user" >/dev/null || ! getent group "$lv_user" >/dev/null || ! in_kvm; then
	cp /etc/passwd /etc/group "$run/"
	grep -q "^$lv_user:" "$run/group" || echo "$lv_user:x:64055:" >>"$run/group"
	gid=$(awk -F: -v u="$lv_user" '$1 == u { print $3 }' "$run/group")
	grep -q "^$lv_user:" "$run/passwd" ||
		echo "$lv_user:x:64055:$gid:Libvirt Qemu:/var/lib/libvirt:/usr/sbin/nologin" >>"$run/passwd"
	awk -F: -v OFS=: -v u="$lv_user" '$1 == "kvm" && ("," $4 ",") !~ ("," u ",") { $4 = ($4 == "" ? u : $4 "," u) }
		{ print }' "$run/group" >"$run/group.new" && mv "$run/group.new" "$run/group"
	mount --bind "$run/passwd" /etc/passwd && mounted+=(/etc/passwd)
	mount --bind "$run/group" /etc/group && mounted+=(/etc/group)
	check "user $lv_user (group $lv_user, member of kvm) in this mount namespace: $(id "$lv_user" 2>&1)" \
		bash -c "getent passwd '$lv_user' >/dev/null && id -nG '$lv_user' | grep -qw kvm"
fi
mkdir -p /var/log/libvirt/qemu /var/lib/libvirt/boot /var/cache/libvirt/qemu/capabilities
# AppArmor and SELinux: where libvirt's AppArmor profiles are loaded (Debian's
# libvirt-daemon-system with AppArmor on) /usr/sbin/libvirtd runs confined by
# path, may not run an emulator outside /usr and confines QEMU to a profile
# that does not know vgpud's socket; under SELinux QEMU gets a label that may
# not connect to it. The rules for both are the host's, not this test's
# (libvirt-xml/README.md): it runs its libvirtd unconfined there and QEMU
# without a security driver, and says so. This host has neither.
lv_exec=(libvirtd) lv_security=''
if grep -qs '^libvirtd ' /sys/kernel/security/apparmor/profiles; then
	lv_exec=(aa-exec -p unconfined -- libvirtd) lv_security='AppArmor (libvirtd profile loaded)'
fi
if [[ $(cat /sys/fs/selinux/enforce 2>/dev/null) == 1 ]]; then
	lv_security+="${lv_security:+, }SELinux enforcing"
fi
[[ -n $lv_security ]] &&
	echo "NOTE: $lv_security on this host: the test runs libvirt with security_driver = \"none\"; the confinement rules of libvirt-xml/README.md are not exercised"
# The settings an operator makes in qemu.conf for vgpu-pci (libvirt-xml/README.md):
cat >/etc/libvirt/qemu.conf <<EOF
# written by tests/vgpu-pci/libvirt.sh
# QEMU's user and group (Debian's defaults, spelled out): vgpud's
# socket_group must be this group
user = "$lv_user"
group = "$lv_user"
# libvirt chowns what the XML names (kernel, initrd, the serial pipe) to
# them, and back; it does not know vgpud's socket
dynamic_ownership = 1
# the test runs no virtlogd: QEMU writes its stdio and serial logs itself
stdio_handler = "file"
# with no systemd (machined) on the host libvirt would make a "machine"
# cgroup in every controller of the host's cgroup tree and leave it there
cgroup_controllers = [ ]
$([[ -n $lv_security ]] && printf '# %s on this host (see above)\nsecurity_driver = "none"' "$lv_security")
EOF
cat >/etc/libvirt/libvirtd.conf <<EOF
# written by tests/vgpu-pci/libvirt.sh
log_outputs = "2:file:/var/log/libvirt/libvirtd.log"
EOF
# libvirt's probes of the QEMU binaries (Debian's and the patched one, ~4 s
# each), kept between runs
caps=$VGPU_CACHE/libvirt-host-qemu-caps
mkdir -p "$caps"
cp "$caps"/*.xml /var/cache/libvirt/qemu/capabilities/ 2>/dev/null || true
cp "$VMLINUZ" /var/lib/libvirt/boot/vmlinuz
cp "$initrd" /var/lib/libvirt/boot/initrd.img

t_lv=$(vm_now)
"${lv_exec[@]}" --pid-file "$run/libvirtd.pid" >"$run/libvirtd.out" 2>&1 </dev/null &
libvirtd_pid=$!
if wait_for 60 test -S /run/libvirt/libvirt-sock && lv_version=$(virsh version 2>&1); then
	lv_s=$(vm_elapsed "$t_lv")
	ok "libvirtd $(libvirtd --version | awk '{ print $NF }') answers on qemu:///system in a private mount namespace ($lv_s s)"
else
	bad "libvirtd did not come up: ${lv_version:-} $(tail -n 5 /var/log/libvirt/libvirtd.log 2>/dev/null | tr '\n' '|')"
	finish "no libvirtd"
fi

# vgpud on its default sockets; the local one given to QEMU's group, as the
# README says, unless GROUP is 'none' (a check that QEMU is then refused)
sock=/run/vgpud/vgpud.sock ctl=/run/vgpud/control.sock
vgpuctl() { "$run/bin/vgpuctl" --socket "$ctl" "$@"; }
start_vgpud() { # GROUP
	cat >"$run/vgpud.conf" <<EOF
# written by tests/vgpu-pci/libvirt.sh
[simgpu]
vram = $vram
[core]
chunk_size = $chunk
[daemon]
socket = $sock
control_socket = $ctl
$([[ $1 == none ]] && echo '# no socket_group' || echo "socket_group = $1")
mdev = off
libvirt_uri = none
EOF
	"$run/bin/vgpud" --config "$run/vgpud.conf" >>"$run/vgpud.log" 2>&1 </dev/null &
	vgpud_pid=$!
	vgpud_starts=$((vgpud_starts + 1))
	if wait_for 30 bash -c "grep -c 'ready:' '$run/vgpud.log' | grep -qx $vgpud_starts"; then
		ok "vgpud started ($([[ $1 == none ]] && echo 'no socket_group' || echo "socket_group = $1")): $(grep -o 'ready: .*' "$run/vgpud.log" | tail -n 1)"
	else
		bad "vgpud did not start: $(tail -n 5 "$run/vgpud.log" | tr '\n' '|')"
		finish "no vgpud"
	fi
}
vgpud_starts=0
: >"$run/vgpud.log"

# --- the domain ---------------------------------------------------------------------------------
check "libvirt-xml/vgpu-pci-domain.xml validates (virt-xml-validate)" \
	bash -c "virt-xml-validate '$xml_src' domain >'$run/validate-src.txt' 2>&1"
dom=$(xmllint --xpath 'string(/domain/name)' "$xml_src")
fifo=$run/fifo
mkdir -p "$fifo"
mkfifo "$fifo/ctl.in" "$fifo/ctl.out"
# the test's copy: the patched QEMU, the guest's command line, a second
# serial port (a pipe) on which the test steps the guest through its job
append="console=ttyS0 panic=-1 loglevel=4 random.trust_cpu=on pci.vm=0 pci.device=$device"
append+=" pci.size=$size pci.buffer=$buffer pci.small=$small pci.duration=$duration pci.iterations=$iterations"
append+=" pci.seed=3000 pci.wait=$phase_wait pci.lost=stream"
xml=$run/$dom.xml
awk -v emulator="$qemu" -v append="$append" -v pipe="$fifo/ctl" -v device="$device" '
	/^ *<emulator>/ { sub(/>.*</, ">" emulator "<") }
	/^ *<cmdline>/ { sub(/>.*</, ">" append "<") }
	/^ *<console type=/ { print "    <serial type='\''pipe'\''><source path='\''" pipe "'\''/><target port='\''1'\''/></serial>" }
	!device && /^ *<qemu:commandline>/ { skip = 1 }
	skip { if (/<\/qemu:commandline>/) skip = 0; next }
	{ print }' "$xml_src" >"$xml"
check "the test's copy $xml validates" bash -c "virt-xml-validate '$xml' domain >'$run/validate.txt' 2>&1"
device_arg=$(xmllint --xpath "string(//*[local-name()='commandline']/*[local-name()='arg'][preceding-sibling::*[1]/@value='-device']/@value)" "$xml_src")
if ((device)); then
	check "the XML's -device is vgpu-pci on vgpud's default socket, with no name= ($device_arg)" \
		bash -c "[[ '$device_arg' == vgpu-pci,* && '$device_arg' == *socket=$sock* && '$device_arg' != *name=* ]]"
fi
if virsh define "$xml" >"$run/define.txt" 2>&1; then
	ok "virsh define: domain $dom"
else
	bad "virsh define $xml: $(cat "$run/define.txt")"
	finish "define"
fi

con=/var/log/libvirt/qemu/$dom-serial.log
has() { grep -qa "$1" "$con" 2>/dev/null; }
line_of() { grep -a -m1 "$1" "$con" 2>/dev/null | tr -d '\r' || true; }
state() { virsh domstate "$dom" 2>/dev/null | head -n 1; }
running() { [[ $(state) == running ]]; }
shut_off() { [[ $(state) == "shut off" ]]; }
reported=0
report_guest_checks() { # the guest's VGPU-PCI-L2 lines not reported yet
	local line
	while IFS= read -r line; do
		case $line in
		"VGPU-PCI-L2 ok vm=0: "*) ok "guest: ${line#VGPU-PCI-L2 ok vm=0: }" ;;
		"VGPU-PCI-L2 FAIL vm=0: "*) bad "guest: ${line#VGPU-PCI-L2 FAIL vm=0: }" ;;
		esac
	done < <(grep -a '^VGPU-PCI-L2 ' "$con" 2>/dev/null | tr -d '\r' | tail -n +$((reported + 1)))
	reported=$(grep -ac '^VGPU-PCI-L2 ' "$con" 2>/dev/null || true)
}
over() { # PATTERN: the console shows PATTERN, or the guest can go no further
	has "$1" || has '^VGPU-PCI-GUEST-DONE' || ! running
}
why_not() { # what the guest did instead
	if ! running; then
		echo "domain $(state): $(tail -n 3 "/var/log/libvirt/qemu/$dom.log" 2>/dev/null | tr '\n' '|')"
	else
		echo "console: $(tail -n 3 "$con" 2>/dev/null | tr -d '\r' | tr '\n' '|')"
	fi
}
to_guest() { printf '%s\n' "$1" >&20; } # a line on the guest's ttyS1
# read-write opens of the FIFOs never block
exec 20<>"$fifo/ctl.in"
cat "$fifo/ctl.out" >/dev/null 2>&1 <>"$fifo/ctl.out" &
helper_pids+=($!)

# QEMU cannot reach vgpud: virsh start fails, and the domain's log has the
# device's error (virsh's message usually has it too, but when QEMU is gone
# before libvirt reaches its monitor libvirt says only that)
refused() { # WHAT WHY-PATTERN: virsh start must fail, the error naming the socket and WHY
	local err qlog=/var/log/libvirt/qemu/$dom.log before
	before=$({ wc -l <"$qlog"; } 2>/dev/null || echo 0)
	if virsh start "$dom" >"$run/start-refused.txt" 2>&1; then
		bad "$1: virsh start succeeded"
		virsh destroy "$dom" >/dev/null 2>&1
		return
	fi
	err=$(tail -n +$((before + 1)) "$qlog" 2>/dev/null | grep -o "vgpu-pci: cannot connect to vgpud at '$sock'.*" | head -n 1 || true)
	check "$1: virsh start fails ($(head -n 1 "$run/start-refused.txt" | cut -c1-60)...); the domain's log has the device's error: ${err:-none, $(tail -n 2 "$qlog" 2>/dev/null | tr '\n' ' ')}" \
		grep -q "$2" <<<"$err"
	check "  ... and the domain stays shut off" shut_off
}
if ((device)); then
	refused "vgpud not running" 'No such file or directory'
	start_vgpud none
	refused "vgpud's socket without socket_group (root:root 0660; QEMU runs as $lv_user)" 'Permission denied'
	stop_child "$vgpud_pid" 10 || true
	vgpud_pid=''
fi
start_vgpud "$lv_user"
check "vgpud's local socket $sock is $lv_user's group's, mode 0660 ($(stat -c '%A %U:%G' "$sock"))" \
	test "$(stat -c '%a %G' "$sock")" = "660 $lv_user"
free0=$(vgpuctl status --json | jq -r '.gpu.free')

t_start=$(vm_now)
if virsh start "$dom" >"$run/start.txt" 2>&1; then
	ok "virsh start $dom ($(vm_elapsed "$t_start") s)"
else
	bad "virsh start $dom: $(cat "$run/start.txt") $(tail -n 5 "/var/log/libvirt/qemu/$dom.log" 2>/dev/null | tr '\n' '|')"
	finish "start"
fi
if ((verbose)); then
	tail -n +1 -F "$con" 2>/dev/null >&2 &
	helper_pids+=($!)
fi
qpid=$(cat "/run/libvirt/qemu/$dom.pid" 2>/dev/null || true)
qcmd=$(tr '\0' '\n' <"/proc/${qpid:-0}/cmdline" 2>/dev/null || true)
check "QEMU (pid ${qpid:-?}) is $qemu" test "$(readlink -f "/proc/${qpid:-0}/exe" 2>/dev/null)" = "$qemu"
check "QEMU runs as $lv_user (qemu.conf), not root: $(ps -o user:32=,group:32= -p "${qpid:-0}" 2>/dev/null | tr -s ' ')" \
	test "$(ps -o user= -p "${qpid:-0}" 2>/dev/null | tr -d ' ')" = "$lv_user"
check "libvirt gave QEMU -name guest=$dom" grep -qx "guest=$dom,.*" <<<"$(grep -A1 -x -- -name <<<"$qcmd" | tail -n 1)"
if ((device)); then
	check "libvirt passed <qemu:commandline> on: -device $device_arg" grep -qxF -- "$device_arg" <<<"$qcmd"
fi

# --- the guest and its vGPU -----------------------------------------------------------------
wait_for "$boot_wait" over '^VGPU-PCI-READY' || true
ready_s=$(vm_elapsed "$t_start")
if has '^VGPU-PCI-READY'; then
	ok "the guest booted ($(line_of '^VGPU-L2-HELLO' | cut -d' ' -f2-3)) and is ready (${ready_s} s after virsh start)"
else
	bad "the guest is not ready after ${boot_wait}s: $(why_not)"
fi
report_guest_checks

if ((device)) && has '^VGPU-PCI-READY'; then
	vgpuctl status --json >"$run/status-ready.json"
	vgpuctl status >"$run/status-ready.txt"
	sed 's/^/    /' "$run/status-ready.txt"
	check "vgpuctl status --json names the VM by its libvirt domain: $(jq -c '[.vms[] | {name, transport, profile}]' "$run/status-ready.json")" \
		jq_true --arg n "$dom" '[.vms[] | select(.name == $n and .transport == "local socket")] | length == 1' "$run/status-ready.json"
	check "vgpuctl status (table) shows $dom" grep -q "^$dom " "$run/status-ready.txt"

	t_work=$(vm_now)
	to_guest go
	wait_for "$phase_wait" over '^VGPU-PCI-HOLD' || true
	line=$(line_of '^VGPU-PCI-HOLD')
	held=$(sed -n 's/.* bytes=\([0-9]*\) .*/\1/p' <<<"$line")
	if [[ -n $held ]]; then
		ok "the guest holds its stream memory: ${line#VGPU-PCI-HOLD vm=0 }"
		alloc=$(vgpuctl stats "$dom" 2>/dev/null | jq -r '(.vm // .) | .allocated' || true)
		check "vgpuctl stats $dom (the domain name): allocated ${alloc:-?} bytes = the $held its guest holds" \
			test "${alloc:-x}" = "$held"
	else
		bad "the guest never held its memory: $(why_not)"
	fi

	# virsh save and restore while the guest holds its memory (issue 28):
	# QEMU's migration to a file carries the vGPU (vgpu-pci's handlers,
	# vgpud's export and import); the guest verifies it all after "release"
	no_vm() { vgpuctl status --json 2>/dev/null | jq_true '.vms | length == 0'; }
	vm_holds() { # BYTES
		vgpuctl status --json 2>/dev/null |
			jq_true --arg n "$dom" --argjson b "$1" '[.vms[] | select(.name == $n) | .allocated] == [$b]'
	}
	t_save=$(vm_now)
	if virsh save "$dom" "$run/saved.img" >"$run/save.txt" 2>&1; then
		ok "virsh save $dom to $run/saved.img ($(vm_elapsed "$t_save") s, $(du -h "$run/saved.img" | cut -f1))"
		check "  ... the domain is shut off, its QEMU gone" wait_for "$gone_wait" bash -c \
			"[[ \$(command virsh -q -c qemu:///system domstate '$dom' | head -n 1) == 'shut off' ]] && ! kill -0 ${qpid:-0} 2>/dev/null"
		check "  ... vgpud lists no VM (the saved VM left with its QEMU)" wait_for "$gone_wait" no_vm
		t_restore=$(vm_now)
		if virsh restore "$run/saved.img" >"$run/restore.txt" 2>&1; then
			ok "virsh restore $run/saved.img ($(vm_elapsed "$t_restore") s)"
			check "  ... the domain runs" running
			check "  ... vgpuctl: $dom is back on vgpud with the ${held:-?} bytes its guest holds" \
				wait_for 30 vm_holds "${held:-0}"
			qpid=$(cat "/run/libvirt/qemu/$dom.pid" 2>/dev/null || true)
			reported=0 # the restored QEMU starts a new console log
			restored=1
			# managedsave: libvirt's own file; virsh start restores from it
			if virsh managedsave "$dom" >"$run/managedsave.txt" 2>&1; then
				ok "virsh managedsave $dom"
				check "  ... the domain is shut off, with a managed save image, vgpud lists no VM" \
					wait_for "$gone_wait" bash -c "[[ \$(command virsh -q -c qemu:///system domstate '$dom' | head -n 1) == 'shut off' ]] && command virsh -q -c qemu:///system dominfo '$dom' | grep -q '^Managed save: *yes' && '$run/bin/vgpuctl' --socket '$ctl' status --json | jq -e '.vms | length == 0' >/dev/null"
				if virsh start "$dom" >"$run/start-managed.txt" 2>&1; then
					ok "virsh start $dom (from its managed save)"
					check "  ... vgpuctl: $dom is back with the ${held:-?} bytes its guest holds" \
						wait_for 30 vm_holds "${held:-0}"
					qpid=$(cat "/run/libvirt/qemu/$dom.pid" 2>/dev/null || true)
				else
					bad "virsh start $dom from its managed save: $(cat "$run/start-managed.txt")"
				fi
			else
				bad "virsh managedsave $dom: $(cat "$run/managedsave.txt")"
			fi
		else
			bad "virsh restore $run/saved.img: $(cat "$run/restore.txt") $(tail -n 5 "/var/log/libvirt/qemu/$dom.log" 2>/dev/null | tr '\n' '|')"
		fi
	else
		bad "virsh save $dom: $(cat "$run/save.txt") $(tail -n 5 "/var/log/libvirt/qemu/$dom.log" 2>/dev/null | tr '\n' '|')"
	fi
	to_guest release
	wait_for "$phase_wait" over '^VGPU-PCI-WORKLOADS-DONE' || true
	work_s=$(vm_elapsed "$t_work")
	has '^VGPU-PCI-WORKLOADS-DONE' || bad "the guest did not finish its workloads within ${phase_wait}s: $(why_not)"
	report_guest_checks
	if ((${restored:-0})); then
		check "after virsh restore the guest verified the stream memory it held across the save by checksum" \
			has '^VGPU-PCI-L2 ok vm=0: stream verified'
	fi

	# virsh destroy while the guest submits
	iterating() { # its stream workload holds its memory and a channel in vgpud
		vgpuctl status --json 2>/dev/null | jq -e --arg n "$dom" --argjson b "$(numfmt --from=iec "$buffer")" \
			'.vms[] | select(.name == $n) | .allocated == $b and .channels >= 1' >/dev/null
	}
	to_guest lost
	check "the guest runs stream again (vgpuctl: $buffer and a channel of $dom)" wait_for "$phase_wait" iterating
fi

t_destroy=$(vm_now)
if virsh destroy "$dom" >"$run/destroy.txt" 2>&1; then
	ok "virsh destroy $dom ($(vm_elapsed "$t_destroy") s)"
else
	bad "virsh destroy $dom: $(cat "$run/destroy.txt")"
fi
check "the domain is shut off" wait_for "$gone_wait" shut_off
check "its QEMU (pid ${qpid:-?}) is gone" wait_for "$gone_wait" gone "${qpid:-0}"
if ((device)); then
	vm_gone() {
		vgpuctl status --json >"$run/status-destroyed.json" 2>/dev/null &&
			jq -e '.vms | length == 0' "$run/status-destroyed.json" >/dev/null
	}
	check "vgpud detached the VM: vgpuctl status lists no VM ($(vm_elapsed "$t_destroy") s after virsh destroy)" \
		wait_for "$gone_wait" vm_gone
	check "all of vgpud's memory is free again: $(jq -r '.gpu | "allocated \(.allocated), resident \(.resident), evicted \(.evicted), free \(.free)"' "$run/status-destroyed.json") (free before the VM: $free0)" \
		jq_true --argjson f "$free0" '.gpu.allocated == 0 and .gpu.resident == 0 and .gpu.evicted == 0 and .gpu.vms == 0 and .gpu.free == $f' "$run/status-destroyed.json"
	vgpuctl status >"$run/status-destroyed.txt" 2>&1 || true
	check "vgpuctl stats $dom: no such VM any more" bash -c "! '$run/bin/vgpuctl' --socket '$ctl' stats '$dom' >/dev/null 2>&1"

	# the same domain again: nothing of the destroyed VM stands in its way
	reported=0 # a new console log
	t_again=$(vm_now)
	if virsh start "$dom" >"$run/start-again.txt" 2>&1; then
		wait_for "$boot_wait" over '^VGPU-PCI-READY' || true
		check "virsh start $dom again: its guest's vgpu.ko binds a vGPU again ($(vm_elapsed "$t_again") s)" \
			has "^VGPU-PCI-L2 ok vm=0: vgpu.ko bound"
		only_vm() { vgpuctl status --json 2>/dev/null | jq_true --arg n "$dom" '[.vms[].name] == [$n]'; }
		check "vgpuctl names it $dom again, the only VM" wait_for 10 only_vm
		check "virsh destroy $dom again" \
			bash -c "command virsh -q -c qemu:///system destroy '$dom' >/dev/null 2>&1"
		check "  ... vgpud lists no VM" wait_for "$gone_wait" vm_gone
	else
		bad "virsh start $dom again: $(cat "$run/start-again.txt")"
	fi
fi
check "virsh undefine $dom" bash -c "command virsh -q -c qemu:///system undefine '$dom' >'$run/undefine.txt' 2>&1"
check "libvirt no longer knows $dom (virsh list --all) and its definition file is gone" \
	bash -c "! command virsh -q -c qemu:///system list --all --name | grep -qx '$dom' && test ! -e '/etc/libvirt/qemu/$dom.xml'"

# --- teardown: libvirtd and vgpud stop, nothing is left ----------------------------------------
cp /var/cache/libvirt/qemu/capabilities/*.xml "$caps/" 2>/dev/null || true
stop_child "$libvirtd_pid" 20 && rc=0 || rc=$?
libvirtd_pid=''
check "libvirtd stopped on SIGTERM (status $rc)" test "$rc" = 0
stop_child "$vgpud_pid" 10 && rc=0 || rc=$?
vgpud_pid=''
check "vgpud exits cleanly on SIGTERM (status $rc)" test "$rc" = 0
left=$(for p in $(qemu_pids) ${qpid:-}; do alive "$p" && echo "$p"; done || true)
check "no QEMU of the test is left" test -z "$left"
check "no error in vgpud's log" bash -c "! grep -q ' error: ' '$run/vgpud.log'"

echo "--- vgpu-pci libvirt ($KVER $KPKGVER, $qemu_version, libvirt $(libvirtd --version | awk '{ print $NF }')), run dir $run"
printf 'timings: prep %ss (builds %ss), libvirtd up %ss, guest ready %ss after virsh start, workloads %ss, total %ss\n' \
	"$prep" "$build_s" "${lv_s:-NA}" "${ready_s:-NA}" "${work_s:-NA}" "$(vm_elapsed "$t0")"
finish "$failed check(s) failed"
exit
}
