# shellcheck shell=bash
# tests/vm/lib/l1-checks.sh - the check helpers of the L1 jobs (l1/*.sh).
# Source it after setting CHECK_TAG, the marker the host side greps:
#   pass TEXT / fail TEXT      print "$CHECK_TAG-CHECK ok: TEXT" / "... FAIL: TEXT"
#                              (fail also counts in $failures)
#   check TEXT COMMAND...      pass or fail by COMMAND's exit status
#   say TEXT                   print "$CHECK_TAG: TEXT"
#   now / elapsed START        wall clock, seconds since START (one decimal)
#   wait_for SECONDS COMMAND...  poll COMMAND every 0.2 s until it succeeds;
#                              1 when SECONDS pass first
: "${CHECK_TAG:?set CHECK_TAG before sourcing l1-checks.sh}"
failures=${failures:-0}

pass() { echo "$CHECK_TAG-CHECK ok: $*"; }
fail() {
	echo "$CHECK_TAG-CHECK FAIL: $*"
	failures=$((failures + 1))
}
check() { # DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
say() { echo "$CHECK_TAG: $*"; }
now() { date +%s.%N; }
elapsed() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1f", e - s }'; }
wait_for() {
	local deadline
	deadline=$(awk -v n="$(now)" -v s="$1" 'BEGIN { printf "%d", n + s }')
	shift
	until "$@"; do
		(($(date +%s) < deadline)) || return 1
		sleep 0.2
	done
}
