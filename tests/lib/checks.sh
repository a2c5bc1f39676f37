# SPDX-License-Identifier: MIT
#
# checks.sh - the pass/fail bookkeeping of the host-side shell tests
# (tests/demo, tests/soak, tests/consumers, tests/libvirt, tests/vgpu-pci),
# sourced by each.
#
#   check WHAT COMMAND...   runs COMMAND: "ok:   WHAT" when it succeeds,
#                           "FAIL: WHAT" when it does not
#   ok WHAT / bad WHAT      the same for a result the script decided itself
#   wait_for SECONDS COMMAND...
#                           polls COMMAND every 0.2 s until it succeeds; 1
#                           when SECONDS pass first
#   passed, failed          the counts so far; each script prints its own
#                           summary ("NAME: N passed, N failed")
#
# The scripts under tests/vm run inside VMs and have their own
# (tests/vm/lib).

passed=0
failed=0

ok() {
	echo "ok:   $*"
	passed=$((passed + 1))
}

bad() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

check() {
	local what="$1"
	shift
	if "$@"; then
		ok "$what"
	else
		bad "$what"
	fi
}

wait_for() {
	local deadline=$(($(date +%s) + $1))
	shift
	until "$@"; do
		(($(date +%s) < deadline)) || return 1
		sleep 0.2
	done
}
