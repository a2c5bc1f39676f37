#!/bin/bash
# check-usage.sh FAKE_VGPUD MDEV_CLIENT - the command lines of tests/vm/mdev's
# programs, outside a VM (meson test vm-programs-usage): exit statuses and
# the failure of a check that has nothing to check. The programs' real work
# needs vgpu_mdev.ko and runs in tests/vm/vgpu-mdev.sh and guest-driver.sh.
set -uo pipefail

fake=${1:?usage: check-usage.sh FAKE_VGPUD MDEV_CLIENT}
client=${2:?usage: check-usage.sh FAKE_VGPUD MDEV_CLIENT}
passed=0 failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

expect() { # STATUS PATTERN WHAT COMMAND...: exit STATUS, output matching PATTERN
	local want=$1 pattern=$2 what=$3 rc
	shift 3
	"$@" >"$out" 2>&1
	rc=$?
	if [[ $rc == "$want" ]] && grep -q -- "$pattern" "$out"; then
		echo "ok: $what (exit $rc)"
		passed=$((passed + 1))
	else
		echo "FAIL: $what: exit $rc (want $want, output matching '$pattern'):"
		sed 's/^/    /' "$out"
		failed=$((failed + 1))
	fi
}

expect 2 "usage: .*--mode commands|mailbox" "fake-vgpud: an unknown option" "$fake" --bogus
expect 2 "usage:" "fake-vgpud: an unknown mode" "$fake" --mode toy
expect 2 "usage:" "fake-vgpud: --ready-file without a path" "$fake" --ready-file
expect 0 "usage:" "fake-vgpud --help" "$fake" --help
if [[ ! -e /dev/vgpu_mdev ]]; then
	expect 1 "/dev/vgpu_mdev" "fake-vgpud without vgpu_mdev.ko" "$fake" --mode mailbox
fi
expect 2 "usage: .*--guest" "mdev-client without arguments" "$client"
expect 2 "usage:" "mdev-client --guest without a check" "$client" --guest
expect 2 "unknown check" "mdev-client --guest: an unknown check" "$client" --guest bogus /nonexistent
expect 1 "iommu_group" "mdev-client: no such mdev" "$client" 00000000-0000-0000-0000-000000000000
expect 1 "VGPU-L2-CHECK FAIL: PCI ID" "mdev-client --guest ids: a missing device fails its checks" \
	"$client" --guest ids /nonexistent
echo "vm-programs-usage: $passed passed, $failed failed"
((failed == 0))
