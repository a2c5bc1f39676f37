#!/usr/bin/env bash
# check_report.sh VGPU_REPORT OUT_DIR [OPTION...]: the meson test
# 'report-shapes' (the options go to vgpu-report).
#
# Runs `vgpu-report --quick --out OUT_DIR OPTION...` (its exit status carries the
# shape checks), then asserts the form of the REPORT.md it wrote:
#  - every verdict line was produced by verdict.c: it starts with
#    "- **Verdict** `[ids]`", names only predicate ids that REPORT.md's
#    closing list defines, and ends in one of the computed outcomes;
#  - no hand-written verdict ("**Verdict.**", "**Verdict:**") is left;
#  - the top table lists the seeds' figures, each with one of the four
#    statuses, and its counts add up.
set -euo pipefail

report_bin="$1"
out="$2"
md="$out/REPORT.md"
rc=0

shift 2
"$report_bin" --quick --out "$out" "$@" || rc=$?
if [ "$rc" -gt 1 ] || [ ! -f "$md" ]; then
	echo "check_report: vgpu-report failed (exit $rc)" >&2
	exit 1
fi

fail() {
	echo "check_report: $*" >&2
	rc=1
}

# The predicate ids REPORT.md defines.
# shellcheck disable=SC2016 # the backticks are literal
mapfile -t ids < <(sed -n 's/^- predicate `\([a-z-]*\)`:.*/\1/p' "$md")
[ "${#ids[@]}" -gt 0 ] || fail "no predicate list at the end of REPORT.md"

verdicts=0
while IFS= read -r line; do
	verdicts=$((verdicts + 1))
	if ! [[ "$line" =~ ^-\ \*\*Verdict\*\*\ \`\[([a-z -]+)\]\`\ \( ]]; then
		fail "verdict line not made by a predicate: $line"
		continue
	fi
	for tag in ${BASH_REMATCH[1]}; do
		known=0
		for id in "${ids[@]}"; do
			[ "$tag" = "$id" ] && known=1
		done
		[ "$known" -eq 1 ] || fail "verdict names an unknown predicate '$tag': $line"
	done
	if [[ "$line" == *'[none]'* && "$line" != *'**Not evaluated**'* ]]; then
		fail "a verdict without predicates must be Not evaluated: $line"
	fi
	case "$line" in
	*'**Reproduced**'* | *'**Partly**'* | *'**Not reproduced**'* | *'**Not evaluated**'*) ;;
	*) fail "verdict line without a computed outcome: $line" ;;
	esac
done < <(grep -F 'Verdict**' "$md" | grep -v '^\*\*Verdicts' || true)
[ "$verdicts" -gt 0 ] || fail "REPORT.md has no verdicts"
if grep -nE '\*\*Verdict[.:]\*\*|\*\*Verdict\.' "$md" >&2; then
	fail "hand-written verdicts (above)"
fi

# The top table: one row per seed figure, each with a status.
table=$(sed -n "/^## The seeds' evaluation figures and tables/,/^## /p" "$md" |
	grep -E '^\| (thesis|paper|LoGA|DWS|Jog) ' || true)
rows=$(printf '%s\n' "$table" | grep -c . || true)
[ "$rows" -ge 50 ] || fail "the top table lists $rows seed figures (expected >= 50)"
bad=$(printf '%s\n' "$table" | grep -vE '\| (reproduced|partly|not reproduced|not reproducible here) \|' || true)
[ -z "$bad" ] || fail "top-table rows without a status: $bad"
sum=$(sed -n 's/.*\*\*\([0-9]*\) reproduced, \([0-9]*\) partly, \([0-9]*\) not reproduced, \([0-9]*\) not reproducible here\*\*.*/\1 \2 \3 \4/p' "$md")
read -r a b c d <<<"$sum"
[ "$((a + b + c + d))" -eq "$rows" ] || fail "the top table's counts ($sum) do not add up to $rows rows"

echo "check_report: $verdicts verdicts, $rows seed figures (${sum:-none})"
exit "$rc"
