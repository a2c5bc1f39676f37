#!/bin/bash
# checkpatch.sh - the kernel code (host-kmod/, guest-driver/kernel/,
# guest-driver/common/) passes the kernel's scripts/checkpatch.pl --strict
# with nothing reported. Exits 77 (skipped) when no checkpatch.pl is found.
#
# checkpatch.pl: $CHECKPATCH if set, else scripts/checkpatch.pl of $KDIR or
# of the running kernel's build tree, else one on PATH. Debian ships it in
# linux-source-6.1 (usr/src/linux-source-6.1.tar.xz: scripts/checkpatch.pl,
# with spelling.txt and const_structs.checkpatch beside it).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

checkpatch=${CHECKPATCH:-}
if [[ -z $checkpatch ]]; then
	for c in "${KDIR:+$KDIR/scripts/checkpatch.pl}" \
		"/lib/modules/$(uname -r)/build/scripts/checkpatch.pl" \
		"$(command -v checkpatch.pl || true)"; do
		if [[ -n $c && -f $c ]]; then
			checkpatch=$c
			break
		fi
	done
fi
if [[ -z $checkpatch || ! -f $checkpatch ]]; then
	echo "checkpatch: skipped: no checkpatch.pl (set CHECKPATCH or KDIR)"
	exit 77
fi
if ! command -v perl >/dev/null; then
	echo "checkpatch: skipped: perl is not installed"
	exit 77
fi

cd "$root"
shopt -s nullglob
files=(host-kmod/*.[ch] guest-driver/kernel/*.[ch] guest-driver/common/*.[ch])
report=$(perl "$checkpatch" --strict --no-tree --terse --show-types -f "${files[@]}" 2>&1 |
	grep -v '^total: 0 errors, 0 warnings, 0 checks, ' || true)
if [[ -n $report ]]; then
	printf '%s\n' "$report"
	echo "checkpatch: FAILED: $(grep -vc "^total: " <<<"$report") finding(s) in the kernel code ($checkpatch --strict)"
	exit 1
fi
echo "checkpatch: ${#files[@]} files, nothing reported ($checkpatch --strict)"
