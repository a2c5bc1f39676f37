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
#  - the top table lists every evaluation figure and table of the five
#    seeds (the list below, made from the seeds' captions, not from the
#    report's source), each exactly once with one of the four statuses, and
#    its counts add up;
#  - the shape checks of the experiments added for issue 25 ran (a quick
#    run that silently skipped one would pass otherwise).
#  - experiment 9's LoGA figures (seed 002) were evaluated: without a
#    bench.json the report runs loga-bench (--brief) itself, so no LoGA
#    verdict may be "not evaluated", and the section says where its
#    figures came from.
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

# Every evaluation figure and table of the seeds, from their captions
# (design diagrams and set-up tables left out).
expected=(
	"thesis Fig. 4.4" "thesis Fig. 6.1" "thesis Fig. 6.2" "thesis Fig. 6.3" "thesis Fig. 6.4"
	"thesis Fig. 6.5" "thesis Fig. 6.6" "thesis Fig. 6.7" "thesis Fig. 6.8" "thesis Fig. 6.9"
	"thesis Fig. 6.10"
	"paper Fig. 4" "paper Fig. 5" "paper Fig. 6a" "paper Fig. 6b" "paper Fig. 6c"
	"paper Fig. 7" "paper Fig. 8" "paper Fig. 9"
	"LoGA Fig. 7a" "LoGA Fig. 7b" "LoGA Fig. 8" "LoGA Fig. 9" "LoGA Fig. 10" "LoGA Fig. 11"
	"DWS Fig. 2" "DWS Fig. 3" "DWS Table III" "DWS Fig. 5" "DWS Fig. 6" "DWS Fig. 7"
	"DWS Table V" "DWS Table VI" "DWS Fig. 8" "DWS Fig. 9" "DWS Fig. 10" "DWS Fig. 11"
	"DWS Fig. 12" "DWS Fig. 13" "DWS Fig. 14"
	"Jog Fig. 2" "Jog Fig. 3" "Jog Table 1" "Jog Fig. 4" "Jog Fig. 5" "Jog Fig. 6"
	"Jog Fig. 7" "Jog Fig. 8" "Jog Fig. 9" "Jog Fig. 10" "Jog Fig. 11" "Jog Fig. 12"
	"Jog Fig. 13" "Jog Fig. 14"
)
for label in "${expected[@]}"; do
	n=$(printf '%s\n' "$table" | grep -cF "| $label | " || true)
	[ "$n" -eq 1 ] || fail "the top table lists '$label' $n times (expected once)"
done
[ "$rows" -eq "${#expected[@]}" ] ||
	fail "the top table has $rows rows, the seeds ${#expected[@]} evaluation figures"

# Experiment 9 (LoGA, seed 002): every figure evaluated, the source named.
for label in "LoGA Fig. 7a" "LoGA Fig. 7b" "LoGA Fig. 8" "LoGA Fig. 9" "LoGA Fig. 10" \
	"LoGA Fig. 11"; do
	line=$(printf '%s\n' "$table" | grep -F "| $label | " || true)
	[[ "$line" != *'not evaluated'* ]] || fail "'$label' was not evaluated: $line"
done
if grep -F 'Verdict**' "$md" | grep -F '(LoGA Fig. ' | grep -F '**Not evaluated**' >&2; then
	fail "LoGA verdicts not evaluated (above)"
fi
loga=$(grep -F 'Verdict**' "$md" | grep -cF '(LoGA Fig. ' || true)
[ "$loga" -ge 6 ] || fail "$loga verdicts on LoGA's figures (expected >= 6)"
grep -qE '^\*\*Figures:\*\* LoGA figures from ' "$md" ||
	fail "experiment 9 does not say where its LoGA figures came from"

# The shape checks of the experiments added for issue 25, each present and
# passed (a failed one already failed the run above).
for check in "S-(TLB+PTW): no walk waits for another tenant's walk" \
	"this model's Fig. 2 shape" "this model's Fig. 14 shape" \
	"every traced run gives the untraced run's IT and WS" \
	"every traced run's windows add up" "this model's Fig. 7 shape" \
	"this model's Fig. 9 shape" "every allocate/free cycle at every size succeeded"; do
	grep -qF -- "- ✅ $check" "$md" || fail "shape check missing or failed: $check"
done

echo "check_report: $verdicts verdicts, $rows seed figures (${sum:-none})"
exit "$rc"
