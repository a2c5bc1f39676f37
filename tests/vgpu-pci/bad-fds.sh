#!/bin/bash
# tests/vgpu-pci/bad-fds.sh - QEMU's vgpu-pci device refuses the
# descriptors it must not map (issue 24). Run as root.
set -euo pipefail

export VM_PROG=vgpu-pci-bad-fds
{
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
ROOT=$(cd "$HERE/../.." && pwd)

usage() {
	cat <<EOF2
Usage: $0 [--qemu PATH]

vgpud sends memfds over its local socket and QEMU's vgpu-pci maps them
into the guest's BAR2 with MAP_FIXED: a descriptor too short for the range,
one that is not shared memory, or a memfd that can still be truncated
would give the guest's next access there SIGBUS (TCG) or an EFAULT exit
(KVM), and QEMU would die. Here fake-vgpud --local (tests/vm/mdev/, built
with cc) plays vgpud for one QEMU ('-accel tcg', no guest kernel: the
firmware assigns the BARs) and answers its ATTACH, then sends MAP_REGION
with a short sealed memfd, a pipe, an unsealed memfd (truncated to 0 right
after QEMU answers) and a good sealed memfd filled with 0x5a. Checks:
  1. fake-vgpud got a refusal for the first three, 0 for the good one
  2. QEMU said why for each refused one (stderr: "refused to map BAR2")
  3. QEMU runs on: QMP query-status answers; BAR2 read through the
     monitor (xp) at the good region gives 0x5a5a5a5a, at the unsealed
     (now truncated) one 0 (unbacked, no SIGBUS), and QEMU is still alive
  4. QMP quit ends it with status 0
Prints 'ok: ...' / 'FAIL: ...', 'vgpu-pci bad fds: N passed, N failed' and
PASS or FAIL; exits 0, 1 (a check failed), 2 (usage) or 77 (not root, or
no patched QEMU: no qemu-patches/build.sh and no \$VGPU_QEMU).
EOF2
}
qemu=''
while (($#)); do
	case $1 in
	--qemu) qemu=${2:?}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
if [[ $(id -u) != 0 ]]; then
	echo "SKIP: tests/vgpu-pci/bad-fds.sh needs root"
	exit 77
fi
# shellcheck source=../lib/checks.sh
source "$ROOT/tests/lib/checks.sh"
run=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-pci-bad-fds.XXXXXX")
fake_pid='' qemu_pid=''
cleanup() {
	local p
	for p in $qemu_pid $fake_pid; do
		{ kill -KILL "$p" && wait "$p"; } 2>/dev/null || true
	done
}
finish() {
	cleanup
	echo "vgpu-pci bad fds: $passed passed, $failed failed"
	if ((failed == 0 && passed > 0)); then
		echo "PASS: vgpu-pci bad fds; run dir $run"
		exit 0
	fi
	echo "FAIL: vgpu-pci bad fds: $* (logs in $run)"
	exit 1
}
trap 'cleanup' EXIT

if [[ -z $qemu ]]; then
	if [[ -n ${VGPU_QEMU:-} ]]; then
		qemu=$VGPU_QEMU
	elif [[ ! -x $ROOT/qemu-patches/build.sh ]]; then
		echo "SKIP: no patched QEMU (no qemu-patches/build.sh, no \$VGPU_QEMU)"
		exit 77
	elif ! qemu=$("$ROOT/qemu-patches/build.sh" 2>>"$run/qemu-build.log" | tail -n 1); then
		bad "qemu-patches/build.sh failed (log $run/qemu-build.log)"
		finish "no patched QEMU"
	fi
fi
[[ -x $qemu ]] || { bad "QEMU '$qemu' is not an executable"; finish "no QEMU"; }
make -s -C "$ROOT/tests/vm/mdev" OUT="$run" "$run/fake-vgpud" >"$run/fake-build.log" 2>&1 ||
	{ bad "fake-vgpud build (log $run/fake-build.log)"; finish "build"; }

# --- fake vgpud, QEMU --------------------------------------------------------
"$run/fake-vgpud" --local "$run/vgpud.sock" >"$run/fake.log" 2>&1 &
fake_pid=$!
wait_for 10 grep -q 'listening' "$run/fake.log" ||
	{ bad "fake-vgpud did not start: $(tr '\n' '|' <"$run/fake.log")"; finish "fake-vgpud"; }
timeout -k 5 120 "$qemu" -nodefaults -no-user-config -display none -accel tcg -m 64M \
	-serial "file:$run/serial.log" -qmp "unix:$run/qmp.sock,server=on,wait=off" \
	-device "vgpu-pci,socket=$run/vgpud.sock,name=badfds" 2>"$run/qemu.log" &
qemu_pid=$!
qmp() { python3 "$HERE/qmp.py" "$run/qmp.sock" "$1"; }
hmp() { # COMMAND: the monitor's output
	qmp "$(jq -cn --arg c "$1" '{execute: "human-monitor-command",
		arguments: {"command-line": $c}}')" | jq -r '.return // .error.desc'
}
alive() { kill -0 "$qemu_pid" 2>/dev/null; }

# 1. fake-vgpud's verdict on QEMU's answers
if wait_for 30 grep -q 'fd checks:' "$run/fake.log"; then
	if grep -q 'fd checks: 4 ok, 0 wrong' "$run/fake.log"; then
		ok "QEMU refused the short, pipe and unsealed descriptors and mapped the good one"
	else
		bad "QEMU's answers: $(grep 'MAP_REGION' "$run/fake.log" | tr '\n' '|')"
	fi
else
	bad "no answers to MAP_REGION: $(tail -n 5 "$run/fake.log" | tr '\n' '|') qemu: $(tail -n 3 "$run/qemu.log" | tr '\n' '|')"
	finish "MAP_REGION"
fi

# 2. QEMU's reasons
for why in 'shorter than the range' 'not shared memory' 'not sealed against shrinking'; do
	if grep -q "refused to map BAR2.*$why" "$run/qemu.log"; then
		ok "QEMU said why: ...$why..."
	else
		bad "QEMU did not say '$why': $(tr '\n' '|' <"$run/qemu.log")"
	fi
done

# 3. QEMU runs on, and BAR2 reads as it should
wait_for 20 test -S "$run/qmp.sock" || { bad "no QMP socket"; finish "QMP"; }
status=$(qmp '{"execute":"query-status"}' | jq -r '.return.status // "?"') || status='?'
if [[ $status == running ]]; then
	ok "QEMU runs on (query-status: running)"
else
	bad "QEMU status '$status' after the refusals"
fi
bar2=''
for _ in $(seq 1 50); do # the firmware assigns the BARs
	bar2=$(qmp '{"execute":"query-pci"}' | jq -r '[.return[].devices[] |
		select(.id.vendor == 6900 and .id.device == 4336) | .regions[] |
		select(.bar == 2) | .address] | first // empty') || bar2=''
	[[ -n $bar2 && $bar2 != 0 && $bar2 != 18446744073709551615 ]] && break
	bar2=''
	sleep 0.2
done
if [[ -z $bar2 ]]; then
	bad "no BAR2 address for vgpu-pci (query-pci)"
else
	offset_of() { sed -n "s/.*case $1 at \(0x[0-9a-f]*\).*/\1/p" "$run/fake.log"; }
	good=$(hmp "xp /1wx $((bar2 + $(offset_of good)))") || good="(no answer)"
	unsealed=$(hmp "xp /1wx $((bar2 + $(offset_of unsealed)))") || unsealed="(no answer)"
	if [[ $good == *0x5a5a5a5a* ]]; then
		ok "BAR2 reads the good region's 0x5a (mapped)"
	else
		bad "BAR2 at the good region: '$good'"
	fi
	if alive && [[ $unsealed == *0x00000000* ]]; then
		ok "BAR2 at the truncated unsealed memfd reads 0 (never mapped, no SIGBUS)"
	else
		bad "BAR2 at the unsealed region: '$unsealed' (QEMU alive: $(alive && echo yes || echo no))"
	fi
fi
if alive; then
	ok "QEMU is alive after every access"
else
	bad "QEMU died: $(tail -n 3 "$run/qemu.log" | tr '\n' '|')"
fi

# 4. a clean end
qmp '{"execute":"quit"}' >/dev/null 2>&1 || true
rc=0
wait "$qemu_pid" || rc=$?
qemu_pid=''
if ((rc == 0)); then
	ok "QMP quit: QEMU ended with status 0"
else
	bad "QEMU ended with status $rc"
fi
finish "checks failed"
}
