#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# demo-test.sh - the main demo (vgpu-backend/demo/vgpu-demo.sh) as a test.
#
#   demo-test.sh quick DEMO
#       The demo in quick mode must exit 0, report integrity ok, report that
#       the tenants together allocated more than the VRAM, give a modeled
#       slowdown for every VM, and leave nothing behind: its runtime
#       directory is gone and no process mentions it.
#   demo-test.sh integrity-failure DEMO CORRUPTING_TENANT
#       The same with a tenant whose data "does not verify" (the wrapper
#       corrupting-tenant.sh reports it so for one VM): the demo must exit 1,
#       say integrity FAILED and name that VM, and clean up all the same.
#
# The binaries come from $VGPUD, $VGPUCTL and $VGPU_TENANT (meson passes
# them). Exit 77 (skipped) without jq, which the demo needs.
set -uo pipefail

mode="${1:-}"
demo="${2:-}"
if [ -z "$mode" ] || [ ! -x "$demo" ]; then
	echo "usage: demo-test.sh quick|integrity-failure DEMO [CORRUPTING_TENANT]" >&2
	exit 2
fi
# shellcheck source=tests/lib/needs.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/needs.sh"
need_jq

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
# shellcheck source=tests/lib/checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"

expected_status=0
if [ "$mode" = integrity-failure ]; then
	corrupting="${3:-}"
	[ -x "$corrupting" ] || { echo "integrity-failure needs the corrupting tenant" >&2; exit 2; }
	export REAL_VGPU_TENANT="$VGPU_TENANT" CORRUPT_VM=vm-stencil
	export VGPU_TENANT="$corrupting"
	expected_status=1
elif [ "$mode" != quick ]; then
	echo "unknown mode '$mode'" >&2
	exit 2
fi

start=$(date +%s)
CI=true "$demo" --quick >"$out" 2>&1
status=$?
echo "demo exited $status after $(($(date +%s) - start)) s; its output:"
sed 's/^/| /' "$out"
echo

run_dir=$(sed -n 's/^runtime directory \([^ ]*\) .*/\1/p' "$out" | head -1)

# Nothing left behind: the directory is gone and no process refers to it
# (vgpud and the tenants all have it in their command lines).
leftovers() {
	local pid
	for pid in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$pid/cmdline"; } 2>/dev/null | grep -qF "$run_dir" && echo "${pid#/proc/}"
	done
}
check "the demo named its runtime directory" test -n "$run_dir"
check "the runtime directory is removed" test ! -e "${run_dir:-/nonexistent}"
check "no process left behind" test -z "$( [ -n "$run_dir" ] && leftovers)"
check "exit status $expected_status" test "$status" -eq "$expected_status"

ratio=$(sed -n 's/^oversubscription: .* = \([0-9.]*\) x$/\1/p' "$out")
check "the tenants together allocated more than the VRAM (${ratio:-?} x)" \
	awk -v r="${ratio:-0}" 'BEGIN { exit !(r > 1.0) }'

if [ "$mode" = quick ]; then
	check "integrity ok" grep -q '^integrity: ok - all 6 runs verified every buffer' "$out"
	check "the demo verified data (checksums > 0)" \
		grep -qE '^integrity: ok .*\(([1-9][0-9]*) checksums, 0 wrong\)' "$out"
	slowdowns=$(sed -n 's/^slowdown against running alone (modeled): //p' "$out")
	# shellcheck disable=SC2016 # $1 of the inner shell
	check "a modeled slowdown for every VM ($slowdowns)" \
		bash -c '[[ "$1" =~ ^vm-stream\ [0-9.]+x,\ vm-stencil\ [0-9.]+x,\ vm-gups\ [0-9.]+x$ ]]' _ "$slowdowns"
	check "vgpud released everything and kept its invariants" \
		grep -qE '^after the tenants left: 0 VMs, .* 0 B of host memory in use; health ok, invariants ok; vgpud stopped with status 0$' "$out"
else
	check "integrity FAILED reported" grep -q '^integrity: FAILED' "$out"
	check "the failing VM is named, in both runs" \
		grep -qE '^  vm-stencil .*FAILED \(shared: 1 of [0-9]+ checksums wrong, exit 1; alone: 1 of' "$out"
	# shellcheck disable=SC2016 # $1 of the inner shell
	check "the other VMs are ok" \
		bash -c 'grep -qE "^  vm-stream .* ok$" "$1" && grep -qE "^  vm-gups .* ok$" "$1"' _ "$out"
fi

[ "$failed" -eq 0 ] || { echo "$failed check(s) failed"; exit 1; }
echo "all checks passed"
