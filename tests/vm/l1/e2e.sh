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
#   6. release the guests (a line on their ttyS1): each verifies its data
#      byte for byte (GPU checksums vs. CPU references) and frees it
#   7. after the guests: vgpud has no VM and no memory left; mdevs removed,
#      vgpud stops cleanly, vgpu_mdev unloads, the kernel log is clean
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
		-append "console=ttyS0 earlyprintk=serial,ttyS0,115200 panic=-1 loglevel=4 nokaslr random.trust_cpu=on e2e.vm=$i e2e.size=$size e2e.buffer=$buffer e2e.duration=$duration e2e.seed=$((1000 + i)) e2e.hold=$hold_timeout" \
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

# --- 6. release, verification in the guests ---------------------------------------
t_rel=$(now)
for ((i = 0; i < vms; i++)); do
	running "$i" && timeout 5 bash -c "echo go >$fifo/ctl$i.in"
done
for ((i = 0; i < vms; i++)); do
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
	grep -a '^VGPU-E2E-L2 \|^VGPU-E2E-NOTE\|^VGPU-E2E-RESULT\|^VGPU-E2E-RELEASED\|^VGPU-E2E-STDERR\|^qemu-system' "l2-$i.log" | tr -d '\r' |
		sed 's/^VGPU-E2E-L2 ok vm=/VGPU-E2E-CHECK ok: L2 vm=/; s/^VGPU-E2E-L2 FAIL vm=/VGPU-E2E-CHECK FAIL: L2 vm=/
			s/^VGPU-E2E-NOTE /VGPU-E2E: note: /'
	failures=$((failures + $(grep -ac '^VGPU-E2E-L2 FAIL' "l2-$i.log")))
	check "L2 vm=$i finished (VGPU-L2-STATUS=0, QEMU exit status $rc)" \
		bash -c "grep -aq '^VGPU-L2-STATUS=0' l2-$i.log && test $rc = 0"
done
say "guests verified and powered off $(elapsed "$t_rel") s after the release"

# --- 7. teardown ----------------------------------------------------------------------
check "vgpud has detached every VM and holds no GPU memory" \
	wait_for 10 bash -c "$E2E_VGPUCTL --socket $ctl status --json | jq -e '(.vms | length) == 0 and .gpu.allocated == 0' >/dev/null"
for ((i = 0; i < vms; i++)); do
	echo 1 >"/sys/bus/mdev/devices/${uuid[i]}/remove" || fail "removing mdev ${uuid[i]}"
done
check "available_instances of $type back to 16" wait_for 5 grep -qx 16 "$types/$type/available_instances"
kill "$vgpud_pid"
wait "$vgpud_pid"
rc=$?
vgpud_pid=''
check "vgpud exits cleanly on SIGTERM (status $rc)" test "$rc" = 0
check "no error in vgpud's log" bash -c '! grep -q " error: " vgpud.log'
check "vgpu_mdev parent gone with vgpud and the mdevs" wait_for 10 test ! -e /sys/class/mdev_bus/vgpu
check "rmmod vgpu_mdev" rmmod vgpu_mdev
check "no BUG/Oops/WARNING/lockup in L1's kernel log" dmesg_clean
[[ -s dmesg-bad.txt ]] && sed 's/^/    dmesg: /' dmesg-bad.txt | head -n 20
finish
exit
}
