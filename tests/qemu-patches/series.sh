#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# series.sh BUILD_SH - qemu-patches/build.sh --check, offline:
#   1. the series in qemu-patches/ applies to the Debian QEMU source that
#      build.sh builds;
#   2. a series whose second patch does not apply fails, naming that patch;
#   3. a series naming a file that is not there fails, naming the file;
#   4. the packages build.sh installs are the ones ./vgpu-dev lists.
# Never downloads: 1-3 need the Debian source in the cache ($VGPU_CACHE/qemu;
# './vgpu-dev qemu' or any build puts it there); without it the test exits
# 77 (skipped) unless 4 failed.
# Prints "qemu-patches-series: N passed, N failed".
set -euo pipefail

BUILD_SH=$(realpath "$1")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/checks.sh
source "$HERE/../lib/checks.sh"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# build.sh installs its packages itself; ./vgpu-dev installs the same list
# (QEMU_PACKAGES) for 'qemu', 'deps' and 'test'.
root=$(dirname "$(dirname "$BUILD_SH")")
array_words() { # file, array names...: the words of those array assignments
	local file=$1
	shift
	bash -c 'for a in "$@"; do source <(sed -n "/^$a=(/,/)/p" "$0"); declare -n r=$a; printf "%s\n" "${r[@]}"; done' "$file" "$@" | sort -u
}
array_words "$BUILD_SH" BUILD_PKGS RUNTIME_PKGS >"$TMP/build-pkgs"
array_words "$root/vgpu-dev" QEMU_PACKAGES >"$TMP/vgpu-dev-pkgs"
check "build.sh's packages are vgpu-dev's QEMU_PACKAGES ($(wc -l <"$TMP/build-pkgs") packages)" \
	bash -c "[[ -s '$TMP/build-pkgs' ]] && diff '$TMP/build-pkgs' '$TMP/vgpu-dev-pkgs'"

rc=0
"$BUILD_SH" --check --offline >"$TMP/out" 2>"$TMP/err" || rc=$?
if ((rc == 77)); then
	cat "$TMP/err"
	if ((failed)); then
		echo "qemu-patches-series: $passed passed, $failed failed (no Debian QEMU source in the cache for the rest)"
		exit 1
	fi
	echo "qemu-patches-series: skipped (no Debian QEMU source in the cache)"
	exit 77
fi
cat "$TMP/err"
check "the series applies to the Debian source (exit $rc)" test "$rc" -eq 0
check "--check prints nothing on stdout" test ! -s "$TMP/out"

# A two-patch series: the first adds a file, the second changes a line of
# QEMU's VERSION file that is not there.
mkdir "$TMP/bad"
cat >"$TMP/bad/0001-add.patch" <<'PATCH'
diff --git a/vgpu-series-test.txt b/vgpu-series-test.txt
new file mode 100644
--- /dev/null
+++ b/vgpu-series-test.txt
@@ -0,0 +1 @@
+added by the first patch
PATCH
cat >"$TMP/bad/0002-stale.patch" <<'PATCH'
diff --git a/VERSION b/VERSION
--- a/VERSION
+++ b/VERSION
@@ -1 +1 @@
-0.0.0-not-this-version
+7.2.99
PATCH
printf '# a test series\n0001-add.patch\n\n0002-stale.patch   # a comment\n' >"$TMP/bad/series"
rc=0
"$BUILD_SH" --check --offline --patches "$TMP/bad" >/dev/null 2>"$TMP/err" || rc=$?
check "a patch that does not apply fails the check (exit $rc)" test "$rc" -ne 0 -a "$rc" -ne 77
check "the failure names the patch" grep -q '0002-stale.patch (number 2 in the series) does not apply' "$TMP/err"
check "the first patch is not blamed" bash -c "! grep -q '0001-add.patch.*does not apply' '$TMP/err'"

# The same first patch alone applies.
printf '0001-add.patch\n' >"$TMP/bad/series"
check "a patch adding a file applies" "$BUILD_SH" --check --offline --patches "$TMP/bad"

printf '0001-add.patch\n0003-missing.patch\n' >"$TMP/bad/series"
rc=0
"$BUILD_SH" --check --offline --patches "$TMP/bad" >/dev/null 2>"$TMP/err" || rc=$?
check "a series naming a missing file fails" test "$rc" -ne 0 -a "$rc" -ne 77
check "the failure names the missing file" grep -q '0003-missing.patch' "$TMP/err"

echo "qemu-patches-series: $passed passed, $failed failed"
((failed == 0))
