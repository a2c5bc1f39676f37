#!/bin/bash
# qemu-patches/export.sh QEMU_GIT_TREE [BASE]
#
# Write the device patches of the series from a QEMU git tree whose history
# is: Debian's source (dpkg-source -x) as BASE, then the standard-headers
# commit, then the device commits. Patch 0001 is not exported: it is
# generated from the project's headers by update-headers.sh. BASE defaults
# to the commit whose subject starts with "Debian qemu"; the series file is
# rewritten to list 0001 and the exported patches in order.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case ${1:-} in
'' | -h | --help)
	sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
	[[ -n ${1:-} ]] && exit 0
	exit 2
	;;
esac
tree=$1
base=${2:-$(git -C "$tree" log --format=%H --grep='^Debian qemu' -n 1)}
[[ -n $base ]] || {
	echo "export.sh: no base commit: name it (the commit of Debian's unpacked source)" >&2
	exit 1
}
headers=$(git -C "$tree" log --format=%H --reverse "$base..HEAD" | head -n 1)
[[ $(git -C "$tree" log -1 --format=%s "$headers") == standard-headers:* ]] || {
	echo "export.sh: the first commit after $base must be the standard-headers import" >&2
	exit 1
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
git -C "$tree" format-patch -q --zero-commit --no-signature --start-number 2 \
	-o "$out" "$headers..HEAD"
find "$here" -maxdepth 1 -name '0*.patch' ! -name '0001-*' -delete
cp "$out"/*.patch "$here/"
{
	sed -n '/^#/p' "$here/series"
	(cd "$here" && ls 0*.patch)
} >"$here/series.new"
mv "$here/series.new" "$here/series"
echo "exported $(ls "$out" | wc -l) patch(es) from $tree; series:" >&2
grep -v '^#' "$here/series" >&2
