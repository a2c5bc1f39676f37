#!/bin/bash
# tests/vm/l1/e2e.sh - the L1 half of tests/vm/run (runs INSIDE L1, started
# by boot-l1.sh; everything it needs comes in E2E_* variables, see tests/vm/run).
#
#   1. load vfio, vfio_iommu_type1, mdev, vfio_virqfd, kvm_amd and vgpu_mdev.ko
#   2. start the real vgpud (simgpu with E2E_VRAM of VRAM, E2E_CHUNK chunks)
#      whose mdev transport registers its profiles as mdev types
#   3. create E2E_VMS mdevs of type vgpu-1G through sysfs
#   4. boot E2E_VMS L2 guests at once (-accel kvm -device vfio-pci,sysfsdev=),
#      each running vgpu-run (l2/e2e-guest.sh) with E2E_SIZE of GPU memory:
#      together about 2x the VRAM. An L2 that does not reach its init
#      (VGPU-L2-HELLO) within E2E_L2_BOOT_TIMEOUT is an infrastructure hang
#      before any guest code of ours ran: diagnosed (QEMU monitor: status,
#      registers, the kernel symbol at RIP) and restarted once, saying so.
#      Guests may reboot (no -no-reboot): QEMU logs the CPU state at every
#      reset (-d cpu_reset), so a guest that resets itself (triple fault,
#      panic=-1) is caught with its RIP; before its init that counts as its
#      one retry, during the test it is a failure.
#   5. while every guest holds its memory: vgpuctl status --json (each VM's
#      allocated bytes = what its guest holds, oversubscription, evicted > 0),
#      vgpuctl stats (mailbox doorbells vs. submissions), sysfs vendor/
#   6. release every guest but the last (a line on their ttyS1): each
#      verifies its data byte for byte (GPU checksums vs. CPU references)
#      and frees it, while L1 resets the last guest again and again (QEMU
#      system_reset: VFIO_DEVICE_RESET of its mdev, vgpud detaches and
#      re-attaches it; the guest reboots and allocates anew): the others'
#      data must come through intact (issue 12: repeated RESET)
#   7. the last guest, rebooted, holds its memory again; released, it
#      verifies, then waits for a fence that never passes (vgpu-run
#      --workload stall); L1 kills vgpud with SIGKILL and the guest's wait
#      must end with device lost (vgpu_mdev.ko raises VGPU_IRQ_DEVICE_LOST;
#      issue 12: vgpud killed): the goal is 1 s from the kill, asserted with
#      a margin (2 s), since the guest's wait also holds its announcement's
#      way out through the serial console under TCG
#   8. a new vgpud takes over the mdevs (EXISTS) with no VM and no memory;
#      mdevs removed, vgpud stops cleanly, vgpu_mdev unloads, the kernel log
#      is clean
# One line per check: "VGPU-E2E-CHECK ok: ..." or "VGPU-E2E-CHECK FAIL: ...".
set -uo pipefail
# All of it in one block: bash parses the block before it runs any of it, so
# an edit to this file while a test runs does not change the running test.
{
: "${VMLINUZ:?not run by boot-l1.sh}" "${E2E_VGPUD:?}" "${E2E_VGPUCTL:?}" "${E2E_MDEV_KO:?}"
: "${E2E_L2_INITRD:?}"
vms=${E2E_VMS:-3} size=${E2E_SIZE:-168M} buffer=${E2E_BUFFER:-24M}
duration=${E2E_DURATION:-4s} vram=${E2E_VRAM:-256M} chunk=${E2E_CHUNK:-4M}
l2_mem=${E2E_L2_MEM:-256M} boot_timeout=${E2E_L2_BOOT_TIMEOUT:-150}
hold_timeout=${E2E_HOLD_TIMEOUT:-300} l2_timeout=${E2E_L2_TIMEOUT:-420}

sock=/tmp/vgpud/vgpud.sock ctl=/tmp/vgpud/control.sock fifo=/tmp/e2e
# the guest whose mdev is reset again and again (6), and who waits on a
# fence when vgpud is killed (7)
victim=$((vms - 1)) max_resets=${E2E_MAX_RESETS:-12}
types=/sys/class/mdev_bus/vgpu/mdev_supported_types
type=vgpu-1G
failures=0 vgpud_pid='' helper_pids=()
declare -a uuid qemu_pid attempts held resets_known

CHECK_TAG=VGPU-E2E
# shellcheck source=../lib/l1-checks.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../lib/l1-checks.sh"
vgpuctl() { "$E2E_VGPUCTL" --socket "$ctl" "$@"; }
bytes() { numfmt --from=iec "$1"; }

cleanup() {
	local i
	for i in "${!qemu_pid[@]}"; do
		[[ -n ${qemu_pid[$i]} ]] && kill "${qemu_pid[$i]}" 2>/dev/null
	done
	[[ -n $vgpud_pid ]] && kill "$vgpud_pid" 2>/dev/null
	for i in "${helper_pids[@]}"; do kill "$i" 2>/dev/null; done
	return 0
}
trap cleanup EXIT

finish() {
	cleanup
	echo "--- vgpud log (tail)"
	tail -n 25 vgpud.log 2>/dev/null | sed 's/^/    /'
	echo "--- dmesg (vgpu, mdev, vfio, kvm)"
	dmesg | grep -i 'vgpu\|mdev\|vfio\|kvm' | tail -n 25 | sed 's/^/    /'
	echo "VGPU-E2E-L1-SECONDS=$(elapsed "$t_job")"
	echo "VGPU-E2E-L1-FAILURES=$failures"
	((failures == 0)) && echo "VGPU-E2E-L1-DONE"
	exit $((failures != 0))
}

dmesg_clean() {
	! dmesg | grep -E 'BUG:|Oops|WARNING:|general protection|Call Trace|soft lockup|hung task' >dmesg-bad.txt
}

t_job=$(now)
dmesg -n 1 2>/dev/null # the console is for the job's output
mkdir -p /tmp/vgpud "$fifo"

# --- 1. modules --------------------------------------------------------------
for m in vfio vfio_iommu_type1 mdev vfio_virqfd; do
	modprobe "$m" || { fail "modprobe $m"; finish; }
done
modprobe kvm_amd nested=1 || { fail "modprobe kvm_amd nested=1"; finish; }
if insmod "$E2E_MDEV_KO"; then
	pass "vfio, vfio_iommu_type1, mdev, kvm_amd and vgpu_mdev.ko loaded"
else
	fail "insmod $E2E_MDEV_KO"
	finish
fi

# --- 2. vgpud --------------------------------------------------------------------
cat >vgpud.conf <<EOF
# written by tests/vm/l1/e2e.sh
[simgpu]
vram = $vram
[core]
chunk_size = $chunk
[daemon]
socket = $sock
control_socket = $ctl
mdev = on
EOF
"$E2E_VGPUD" --config "$PWD/vgpud.conf" 2>vgpud.log &
vgpud_pid=$!
if wait_for 30 grep -q 'ready:' vgpud.log && wait_for 10 test -d "$types/$type"; then
	pass "vgpud started with simgpu ($vram VRAM, $chunk chunks) and its mdev transport: $(grep -o 'ready: .*' vgpud.log)"
else
	fail "vgpud did not come up with the mdev transport: $(tail -n 5 vgpud.log | tr '\n' '|')"
	finish
fi
check "vgpud serves mdevs through /dev/vgpu_mdev (log)" grep -q 'mdevs through /dev/vgpu_mdev' vgpud.log
check "its profiles are the mdev types ($(cd "$types" && echo *))" \
	test -d "$types/vgpu-1G" -a -d "$types/vgpu-2G" -a -d "$types/vgpu-4G"
vram_bytes=$(vgpuctl status --json | jq -r '.gpu.vram')
say "VRAM for VMs: $vram_bytes bytes"

# --- 3. mdevs --------------------------------------------------------------------
for ((i = 0; i < vms; i++)); do
	uuid[i]=$(cat /proc/sys/kernel/random/uuid)
	if echo "${uuid[i]}" >"$types/$type/create"; then
		pass "mdev ${uuid[i]} of type $type created through sysfs"
	else
		fail "creating mdev $i of type $type"
		finish
	fi
done
check "available_instances of $type follows (16 - $vms)" \
	grep -qx $((16 - vms)) "$types/$type/available_instances"
# An operator's change to the profile's instance limit reaches sysfs at once,
# and a create beyond the new limit is refused.
limit=$((vms + 1))
check "vgpuctl set-profile $type --max-instances $limit: available_instances $((limit - vms))" \
	bash -c "$E2E_VGPUCTL --socket $ctl set-profile $type --max-instances $limit >/dev/null &&
		grep -qx $((limit - vms)) $types/$type/available_instances"
extra=$(cat /proc/sys/kernel/random/uuid) extra2=$(cat /proc/sys/kernel/random/uuid)
if echo "$extra" >"$types/$type/create" 2>/dev/null && grep -qx 0 "$types/$type/available_instances" &&
	! echo "$extra2" >"$types/$type/create" 2>/dev/null; then
	pass "the limit holds: mdev $((vms + 1)) of $limit created, the next one refused"
else
	fail "instance limit $limit not enforced (available_instances $(cat "$types/$type/available_instances"))"
fi
[[ -e /sys/bus/mdev/devices/$extra ]] && echo 1 >"/sys/bus/mdev/devices/$extra/remove"
[[ -e /sys/bus/mdev/devices/$extra2 ]] && echo 1 >"/sys/bus/mdev/devices/$extra2/remove"
vgpuctl set-profile "$type" --max-instances 16 >/dev/null
check "set-profile back to 16 instances: available_instances $((16 - vms))" \
	wait_for 5 grep -qx $((16 - vms)) "$types/$type/available_instances"

# --- 4. L2 guests ------------------------------------------------------------------
start_l2() { # INDEX
	local i=$1 log=l2-$1.log
	attempts[i]=$((${attempts[i]:-0} + 1))
	rm -f "$fifo/ctl$i".{in,out} "$fifo/mon$i".{in,out}
	mkfifo "$fifo/ctl$i.in" "$fifo/ctl$i.out" "$fifo/mon$i.in" "$fifo/mon$i.out"
	cat "$fifo/ctl$i.out" >/dev/null &
	helper_pids+=($!)
	cat "$fifo/mon$i.out" >>"l2-$i.monitor.log" &
	helper_pids+=($!)
	if ((attempts[i] > 1)); then
		mv "$log" "l2-$i.attempt$((attempts[i] - 1)).log"
		mv "l2-$i.qemu-debug.log" "l2-$i.attempt$((attempts[i] - 1)).qemu-debug.log" 2>/dev/null
	fi
	timeout -k 5 "$l2_timeout" qemu-system-x86_64 -nodefaults -no-user-config -display none \
		-name "e2e-vm$i" -accel kvm -cpu host -machine pc -m "$l2_mem" -smp 1 \
		-kernel "$VMLINUZ" -initrd "$E2E_L2_INITRD" \
		-append "console=ttyS0 earlyprintk=serial,ttyS0,115200 panic=-1 loglevel=4 nokaslr random.trust_cpu=on e2e.vm=$i e2e.size=$size e2e.buffer=$buffer e2e.duration=$duration e2e.seed=$((1000 + i)) e2e.hold=$hold_timeout e2e.lost=$((i == victim))" \
		-device "vfio-pci,sysfsdev=/sys/bus/mdev/devices/${uuid[i]}" \
		-serial stdio -serial "pipe:$fifo/ctl$i" -monitor "pipe:$fifo/mon$i" \
		-d cpu_reset,guest_errors -D "$PWD/l2-$i.qemu-debug.log" \
		</dev/null >"$log" 2>&1 &
	qemu_pid[i]=$!
	resets_known[i]=0
	say "L2 vm=$i (attempt ${attempts[i]}) started: QEMU pid ${qemu_pid[i]}, mdev ${uuid[i]}, serial $PWD/$log"
}
running() { [[ -n ${qemu_pid[$1]} ]] && kill -0 "${qemu_pid[$1]}" 2>/dev/null; }
# guest_resets I: resets guest I caused. QEMU (-d cpu_reset) logs the CPU
# state before every reset: the machine's own at start in real mode, a guest
# kernel's in long mode (a "RIP=" line).
guest_resets() {
	local n
	n=$(grep -c '^RIP=' "l2-$1.qemu-debug.log" 2>/dev/null) || true
	echo "${n:-0}"
}
reset_new() { (($(guest_resets "$1") > ${resets_known[$1]:-0})); }
l2_over() { ! running "$1" || reset_new "$1"; }
reset_where() { # I: RIP and kernel symbol of guest I's last reset
	local rip
	rip=$(grep '^RIP=' "l2-$1.qemu-debug.log" | tail -n 1 | sed 's/^RIP=\([0-9a-f]*\).*/\1/')
	echo "RIP=$rip $(rip_symbol "$rip") (CPU state: $PWD/l2-$1.qemu-debug.log)"
}
has() { grep -qa "$2" "l2-$1.log" 2>/dev/null; }

# rip_symbol HEX: the L2 kernel symbol at a RIP (L2 boots with nokaslr)
rip_symbol() {
	[[ -n $1 && -r $KROOT/boot/System.map-$KVER ]] || return 0
	awk -v rip="$1" 'BEGIN { r = strtonum("0x" rip) }
		{ a = strtonum("0x" $1); if (a <= r && a > best) { best = a; name = $3 } }
		END { if (name != "") printf "%s+0x%x", name, r - best }' "$KROOT/boot/System.map-$KVER"
}

# Why did L2 $1 not boot: QEMU's view (status, registers, the symbol at RIP).
diagnose_l2() {
	local i=$1 rip
	if running "$i"; then
		printf 'info status\ninfo registers\ninfo pci\n' >"$fifo/mon$i.in"
		sleep 1
	fi
	rip=$(grep -o 'RIP=[0-9a-f]*' "l2-$i.monitor.log" | tail -n 1 | cut -d= -f2)
	say "L2 vm=$i diagnosis: $(grep -a -m1 'VM status' "l2-$i.monitor.log" | tr -d '\r'), RIP=${rip:-?} $(rip_symbol "$rip") (monitor log $PWD/l2-$i.monitor.log, QEMU log $PWD/l2-$i.qemu-debug.log, serial $PWD/l2-$i.log: $(wc -c <"l2-$i.log") bytes)"
	tail -n 5 "l2-$i.log" | tr -d '\r' | sed "s/^/    l2-$i: /"
}

modprobe kvm_amd nested=1 2>/dev/null
t_l2=$(now)
for ((i = 0; i < vms; i++)); do
	start_l2 "$i"
done
# Every guest to its init (VGPU-L2-HELLO); one restart for a pre-init hang.
declare -a t_start
for ((i = 0; i < vms; i++)); do t_start[i]=$(date +%s); done
booted=0
while ((booted < vms)); do
	booted=0
	for ((i = 0; i < vms; i++)); do
		if has "$i" '^VGPU-L2-HELLO'; then
			booted=$((booted + 1))
			continue
		fi
		if reset_new "$i"; then
			resets_known[i]=$(guest_resets "$i")
			tail -n 5 "l2-$i.log" | tr -d '\r' | sed "s/^/    l2-$i: /"
			if ((attempts[i] < 2)); then
				echo "VGPU-E2E-RETRY: L2 vm=$i reset itself before reaching its init at $(reset_where "$i"); it reboots: that is its one retry"
				attempts[i]=2
				t_start[i]=$(date +%s)
				continue
			fi
			fail "L2 vm=$i reset itself again before reaching its init at $(reset_where "$i")"
			finish
		fi
		if running "$i" && (($(date +%s) - t_start[i] < boot_timeout)); then
			continue
		fi
		diagnose_l2 "$i"
		if running "$i"; then
			state="still running after ${boot_timeout}s"
			kill "${qemu_pid[i]}" 2>/dev/null
			wait "${qemu_pid[i]}" 2>/dev/null
		else
			wait "${qemu_pid[i]}" 2>/dev/null
			state="QEMU exited with status $? after $(($(date +%s) - t_start[i]))s"
		fi
		if ((attempts[i] < 2)) && ! has "$i" 'VGPU-L2'; then
			echo "VGPU-E2E-RETRY: L2 vm=$i did not reach its init ($state): an infrastructure failure before any guest code ran; restarting it once"
			start_l2 "$i"
			t_start[i]=$(date +%s)
		else
			fail "L2 vm=$i never reached its init ($state; attempt ${attempts[i]}; serial $PWD/l2-$i.log)"
			finish
		fi
	done
	((booted < vms)) && sleep 0.5
done
for ((i = 0; i < vms; i++)); do
	pass "L2 vm=$i booted with the mdev (attempt ${attempts[i]}): $(grep -a -m1 '^VGPU-L2-HELLO' "l2-$i.log" | tr -d '\r' | cut -d' ' -f2-)"
done
say "all $vms L2 guests reached init after $(elapsed "$t_l2") s"

# --- 5. every guest holds its memory: vgpud's view -----------------------------
t_hold=$(now)
deadline=$(($(date +%s) + hold_timeout))
while :; do
	n=0 dead=0
	for ((i = 0; i < vms; i++)); do
		has "$i" '^VGPU-E2E-HOLD' && n=$((n + 1))
		{ has "$i" '^VGPU-E2E-L2-DONE' || ! running "$i"; } && ! has "$i" '^VGPU-E2E-HOLD' && dead=$((dead + 1))
		if reset_new "$i"; then
			fail "L2 vm=$i reset itself during the test at $(reset_where "$i"); killed"
			tail -n 5 "l2-$i.log" | tr -d '\r' | sed "s/^/    l2-$i: /"
			resets_known[i]=$(guest_resets "$i")
			kill "${qemu_pid[i]}"
			dead=$((dead + 1))
		fi
	done
	((n == vms || dead > 0 || $(date +%s) >= deadline)) && break
	sleep 0.5
done
say "$n of $vms guests hold their memory after $(elapsed "$t_hold") s more"
total_held=0
for ((i = 0; i < vms; i++)); do
	line=$(grep -a -m1 '^VGPU-E2E-HOLD' "l2-$i.log" | tr -d '\r')
	held[i]=$(sed -n 's/.* bytes=\([0-9]*\) buffers=.*/\1/p' <<<"$line")
	if [[ -n ${held[i]} ]]; then
		line=${line#VGPU-E2E-HOLD vm="$i" bytes=* }
		pass "L2 vm=$i holds ${held[i]} bytes of GPU memory: ${line/ (SIGUSR1*free)/}"
		total_held=$((total_held + held[i]))
	else
		fail "L2 vm=$i never held its memory ($(grep -a 'VGPU-E2E-L2 FAIL\|vgpu-run:' "l2-$i.log" | tr -d '\r' | head -n 3 | tr '\n' '|'))"
	fi
done
if ((n == vms)); then
	vgpuctl status --json >status-hold.json 2>&1
	vgpuctl status >status-hold.txt 2>&1
	sed 's/^/    /' status-hold.txt
	check "vgpuctl status --json lists $vms VMs" test "$(jq '.vms | length' status-hold.json)" = "$vms"
	for ((i = 0; i < vms; i++)); do
		# attached under the mdev UUID ("uuid"), named by QEMU's -name ("name")
		got=$(jq -r --arg n "${uuid[i]}" '.vms[] | select((.uuid // .name) == $n) |
			"\(.allocated) \(.resident) \(.evicted) \(.transport) \(.name) \(.name_source // "-")"' status-hold.json)
		read -r alloc res evi transport name source <<<"$got"
		check "vgpuctl: VM ${uuid[i]} ('${name:-?}' from ${source:-?}) allocated ${alloc:-?} = ${held[i]} bytes its guest (vm=$i) holds (resident ${res:-?}, evicted ${evi:-?}, transport ${transport:-?})" \
			test "${alloc:-x}" = "${held[i]}"
	done
	total=$(jq '[.vms[].allocated] | add' status-hold.json)
	check "VRAM oversubscribed about 2x: $total bytes allocated / $vram_bytes of VRAM = $(awk -v a="$total" -v b="$vram_bytes" 'BEGIN { printf "%.2f", a / b }') (want >= 1.8)" \
		awk -v a="$total" -v b="$vram_bytes" 'BEGIN { exit !(a >= 1.8 * b) }'
	check "evicted > 0 for at least one VM ($(jq -r '[.vms[] | "\(.evicted)"] | join(", ")' status-hold.json))" \
		test "$(jq '[.vms[] | select(.evicted > 0)] | length' status-hold.json)" -gt 0
	# shellcheck disable=SC2016 # jq's variables
	check "every VM's resident + evicted = allocated, GPU resident <= VRAM" \
		jq -e --argjson vram "$vram_bytes" 'all(.vms[]; .resident + .evicted == .allocated) and .gpu.resident <= $vram' status-hold.json
	for ((i = 0; i < vms; i++)); do
		vgpuctl stats "${uuid[i]}" >"stats-$i.json" 2>&1
		subs=$(grep -a -m1 '^VGPU-E2E-HOLD' "l2-$i.log" | sed -n 's/.* submissions=\([0-9]*\).*/\1/p')
		read -r doorbells requests <<<"$(jq -r '"\(.doorbells // .vm.doorbells) \(.requests // .vm.requests)"' "stats-$i.json")"
		check "vm=$i submissions do not trap: $subs submissions so far, $doorbells doorbells relayed to vgpud for $requests mailbox requests" \
			awk -v s="${subs:-0}" -v d="${doorbells:-x}" -v r="${requests:-0}" 'BEGIN { exit !(d ~ /^[0-9]+$/ && d <= r && s > d) }'
		dev=/sys/bus/mdev/devices/${uuid[i]}/vendor
		read -r moved suspensions blocked <<<"$(jq -r '"\(.evicted_bytes_total) \(.suspensions) \(.guest_blocked_ns)"' "stats-$i.json")"
		read -r to_shadow to_real waited <"$dev/swaps"
		if ((${moved:-0} > 0)); then
			check "vm=$i channel suspended while its chunks moved ($moved bytes): $suspensions suspensions, windows swapped to shadow $to_shadow and back $to_real times, $waited guest faults waited ($((${blocked:-0} / 1000)) us blocked)" \
				test "${suspensions:-0}" -gt 0 -a "$to_shadow" -gt 0 -a "$to_real" = "$to_shadow"
			swapped=$((${swapped:-0} + 1))
		fi
		check "vm=$i sysfs vendor/allocated = ${held[i]} (vendor/resident $(cat "$dev/resident"), evicted $(cat "$dev/evicted"), state $(cat "$dev/state"))" \
			wait_for 5 grep -qx "${held[i]}" "$dev/allocated"
	done
	check "at least one VM's channel was swapped to shadow pages and back (fault-time swap)" \
		test "${swapped:-0}" -gt 0
else
	fail "not every guest held its memory within ${hold_timeout}s: nothing to compare"
fi

# --- 6. release, verification in the guests; the victim is reset meanwhile -------
# detaches N: how often vgpud detached guest N's VM (named by its UUID or
# QEMU's -name)
detaches() {
	grep -c "VM '\(e2e-vm$1\|${uuid[$1]}\)' (id [0-9]*) detached" vgpud.log 2>/dev/null || true
}
others_over() {
	local i
	for ((i = 0; i < victim; i++)); do l2_over "$i" || return 1; done
}
log_has_since() { # INDEX OFFSET PATTERN: PATTERN in guest INDEX's log after OFFSET bytes
	tail -c +"$(($2 + 1))" "l2-$1.log" 2>/dev/null | grep -qa "$3"
}
# watch_log INDEX OFFSET PATTERN SECONDS: wait until PATTERN appears in guest
# INDEX's log after OFFSET bytes, reacting at once (tail -f, not a polling loop)
watch_log() {
	local pid rc
	rm -f "$fifo/watch"
	mkfifo "$fifo/watch"
	timeout "$4" tail -c +"$(($2 + 1))" -f -s 0.05 "l2-$1.log" >"$fifo/watch" &
	pid=$!
	grep -qa -m1 "$3" <"$fifo/watch"
	rc=$?
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -f "$fifo/watch"
	return "$rc"
}
t_rel=$(now)
for ((i = 0; i < victim; i++)); do
	running "$i" && timeout 5 bash -c "echo go >$fifo/ctl$i.in"
done
detached0=$(detaches "$victim") resets=0 reset_at=0
while running "$victim" && ((resets < max_resets)) && { ((resets < 3)) || ! others_over; }; do
	reset_at=$(stat -c %s "l2-$victim.log")
	timeout 5 bash -c "printf 'system_reset\n' >$fifo/mon$victim.in" || break
	resets=$((resets + 1))
	sleep 3
done
resets_known[victim]=$(guest_resets "$victim")
say "reset L2 vm=$victim $resets times (QEMU system_reset) while the others verified"
for ((i = 0; i < vms; i++)); do
	if ((i == victim)); then
		# --- 7. the victim again: hold, release, then vgpud killed under its wait ---
		check "its mdev was reset $resets times (>= 3) and vgpud detached and re-attached the VM each time ($(($(detaches "$victim") - detached0)) detaches), with no failed reset" \
			bash -c "(($resets >= 3 && $(detaches "$victim") - $detached0 >= $resets)) && ! grep -q 'reset: ' vgpud.log"
		check "vgpud detached the VMs that powered off and holds none of their memory; only vm=$victim's VM remains" \
			wait_for 10 bash -c "$E2E_VGPUCTL --socket $ctl status --json | jq -e '(.vms | length) == 1 and .gpu.allocated == .vms[0].allocated' >/dev/null"
		if wait_for "$hold_timeout" log_has_since "$i" "$reset_at" '^VGPU-E2E-HOLD'; then
			pass "L2 vm=$i rebooted after its last reset and holds its memory again: $(tail -c +$((reset_at + 1)) "l2-$i.log" | grep -a -m1 '^VGPU-E2E-HOLD' | tr -d '\r' | cut -d' ' -f3-5)"
			timeout 5 bash -c "echo go >$fifo/ctl$i.in"
		else
			fail "L2 vm=$i did not hold its memory again within ${hold_timeout}s of its last reset"
		fi
		if watch_log "$i" "$reset_at" 'vgpu-run: STALL waiting' 240; then
			kill -KILL "$vgpud_pid"
			t_kill=$(now) up_kill=$(cut -d' ' -f1 /proc/uptime)
			watch_log "$i" "$reset_at" 'vgpu-run: stall: ' 30
			seen=$(elapsed "$t_kill")
			wait "$vgpud_pid" 2>/dev/null
			vgpud_pid=''
			line=$(tail -c +$((reset_at + 1)) "l2-$i.log" | grep -a -m1 'vgpu-run: stall: ' | tr -d '\r')
			waited=$(sed -n 's/.*device lost after \([0-9.]*\) s of waiting.*/\1/p' <<<"$line")
			closed=$(dmesg | sed -n 's/^\[ *\([0-9.]*\)\] vgpu_mdev: vgpud disconnected.*/\1/p' | tail -n 1)
			say "vgpud killed: vgpu_mdev.ko saw its control file close $(awk -v a="${closed:-0}" -v b="$up_kill" 'BEGIN { printf "%.2f", a - b }') s later (the process's exit); L1 read the guest's result ${seen} s after the kill"
			# The guest timed its wait from before it announced it, so the kill
			# came later: its wait time bounds the time from the kill to the
			# wait's end (it also holds the announcement's way out through the
			# serial console and L1's reaction, so it errs on the safe side).
			# The goal is issue 12's 1 s, said beside the figure; the check
			# takes a margin, as timing checks here do (1.07 s was seen with
			# vgpud's exit alone taking 0.36 s under TCG).
			goal=$(awk -v w="${waited:-x}" 'BEGIN { print (w ~ /^[0-9.]+$/ && w <= 1.0) ? "met" : "missed" }')
			check "vgpud killed (SIGKILL) while vm=$i waited on a fence: the guest's wait ended with device lost within 2 s of the kill (it waited ${waited:-?} s in all, from before it asked for the kill; the 1 s goal: $goal): ${line#vgpu-run: stall: }" \
				awk -v w="${waited:-x}" 'BEGIN { exit !(w ~ /^[0-9.]+$/ && w <= 2.0) }'
		else
			fail "L2 vm=$i never started waiting on its stalled fence"
		fi
	fi
	if ! wait_for "$l2_timeout" l2_over "$i"; then
		fail "L2 vm=$i still running ${l2_timeout}s after the release; killed"
		diagnose_l2 "$i"
		kill "${qemu_pid[i]}"
	fi
	if reset_new "$i"; then
		fail "L2 vm=$i reset itself during the test at $(reset_where "$i"); killed"
		kill "${qemu_pid[i]}"
	fi
	wait "${qemu_pid[i]}"
	rc=$?
	qemu_pid[i]=''
	if ! has "$i" '^VGPU-L2-STATUS='; then
		say "L2 vm=$i ended without its status line (QEMU status $rc, $(guest_resets "$i") resets by the guest); last serial lines:"
		tail -n 8 "l2-$i.log" | tr -d '\r' | sed "s/^/    l2-$i: /"
	fi
	grep -a '^VGPU-E2E-L2 \|^VGPU-E2E-NOTE\|^VGPU-E2E-RESULT\|^VGPU-E2E-RELEASED\|^VGPU-E2E-STDERR\|^VGPU-E2E-STALL\|^qemu-system' "l2-$i.log" | tr -d '\r' |
		sed 's/^VGPU-E2E-L2 ok vm=/VGPU-E2E-CHECK ok: L2 vm=/; s/^VGPU-E2E-L2 FAIL vm=/VGPU-E2E-CHECK FAIL: L2 vm=/
			s/^VGPU-E2E-NOTE /VGPU-E2E: note: /'
	failures=$((failures + $(grep -ac '^VGPU-E2E-L2 FAIL' "l2-$i.log")))
	check "L2 vm=$i finished (VGPU-L2-STATUS=0, QEMU exit status $rc)" \
		bash -c "grep -aq '^VGPU-L2-STATUS=0' l2-$i.log && test $rc = 0"
done
say "guests verified and powered off $(elapsed "$t_rel") s after the release"

# --- 8. a new vgpud after the kill; teardown --------------------------------------------
if [[ -n $vgpud_pid ]]; then # the kill step did not run
	kill -KILL "$vgpud_pid" 2>/dev/null
	wait "$vgpud_pid" 2>/dev/null
fi
"$E2E_VGPUD" --config "$PWD/vgpud.conf" 2>vgpud-2.log &
vgpud_pid=$!
if wait_for 30 grep -q 'ready:' vgpud-2.log; then
	pass "a new vgpud started after the kill and took over the mdev types"
else
	fail "no new vgpud after the kill: $(tail -n 5 vgpud-2.log | tr '\n' '|')"
fi
check "it has no VM and holds no GPU memory" \
	wait_for 10 bash -c "$E2E_VGPUCTL --socket $ctl status --json | jq -e '(.vms | length) == 0 and .gpu.allocated == 0' >/dev/null"
for ((i = 0; i < vms; i++)); do
	echo 1 >"/sys/bus/mdev/devices/${uuid[i]}/remove" || fail "removing mdev ${uuid[i]}"
done
check "available_instances of $type back to 16" wait_for 5 grep -qx 16 "$types/$type/available_instances"
kill "$vgpud_pid"
wait "$vgpud_pid"
rc=$?
vgpud_pid=''
check "the new vgpud exits cleanly on SIGTERM (status $rc)" test "$rc" = 0
check "no error in either vgpud's log" bash -c '! grep -q " error: " vgpud.log vgpud-2.log'
check "vgpu_mdev parent gone with vgpud and the mdevs" wait_for 10 test ! -e /sys/class/mdev_bus/vgpu
check "rmmod vgpu_mdev" rmmod vgpu_mdev
check "no BUG/Oops/WARNING/lockup in L1's kernel log" dmesg_clean
[[ -s dmesg-bad.txt ]] && sed 's/^/    dmesg: /' dmesg-bad.txt | head -n 20
finish
exit
}
