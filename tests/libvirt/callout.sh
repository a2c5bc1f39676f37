#!/bin/bash
# tests/libvirt/callout.sh CALLOUT - the mdevctl call-out script
# (libvirt-xml/mdevctl/vgpu-callout) against a fake sysfs tree: which types
# it claims, get-attributes, and the refusals of "pre start" with their
# reasons. Prints one line per check; exit 0 only if all passed.
set -u
callout=${1:?usage: callout.sh CALLOUT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/lib/checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"

sys=$tmp/sys
parent=0000:00:10.0
types=$sys/class/mdev_bus/$parent/mdev_supported_types
mkdir -p "$types/vgpu-1G/devices" "$types/vgpu-2G/devices"
echo vgpu-1G >"$types/vgpu-1G/name"
echo vgpu-2G >"$types/vgpu-2G/name"
echo 3 >"$types/vgpu-1G/available_instances"
echo 0 >"$types/vgpu-2G/available_instances"
export VGPU_SYSFS=$sys

u=3b5c2a0e-1111-4222-8333-444455556666
# run EXPECTED-STATUS WHAT ARGS...: stdout in $out, stderr in $err
run() {
	local want=$1 what=$2 rc
	shift 2
	echo '{"mdev_type":"x","start":"manual"}' | "$callout" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	out=$(cat "$tmp/out") err=$(cat "$tmp/err")
	if [[ $rc == "$want" ]]; then
		ok "$what (exit $rc)"
		return 0
	fi
	bad "$what: exit $rc, want $want (stderr: $err)"
	return 1
}
expect_err() { # WHAT PATTERN
	if grep -q -- "$2" <<<"$err"; then ok "$1"; else bad "$1: stderr '$err' lacks '$2'"; fi
}

run 2 "another driver's type is not ours" -t i915-GVTg_V5_8 -e pre -a start -s none -u "$u" -p 0000:00:02.0
run 2 "a type named just 'vgpu-' is not ours" -t vgpu- -e pre -a start -s none -u "$u" -p "$parent"
run 0 "get attributes" -t vgpu-1G -e get -a attributes -s none -u "$u" -p "$parent" &&
	{ [[ $out == '[]' ]] && ok "get attributes prints []" || bad "get attributes printed '$out'"; }
run 0 "pre start with instances available" -t vgpu-1G -e pre -a start -s none -u "$u" -p "$parent"
run 0 "pre define is not checked" -t vgpu-2G -e pre -a define -s none -u "$u" -p "$parent"
run 0 "post start" -t vgpu-2G -e post -a start -s success -u "$u" -p "$parent"
run 0 "the -t=TYPE form" -t=vgpu-1G -e=pre -a=start -s=none -u="$u" -p="$parent"

# vgpu-2G: available 0, two of its mdevs exist -> no instances left
mkdir -p "$tmp/dev1" "$tmp/dev2"
ln -s "$tmp/dev1" "$types/vgpu-2G/devices/aaaaaaaa-0000-4000-8000-000000000001"
ln -s "$tmp/dev2" "$types/vgpu-2G/devices/aaaaaaaa-0000-4000-8000-000000000002"
if run 1 "pre start refused: profile full" -t vgpu-2G -e pre -a start -s none -u "$u" -p "$parent"; then
	expect_err "the reason names the profile and says no instances are left" "vGPU profile vgpu-2G has no instances left"
	expect_err "the reason counts its mdevs" "its 2 mdev(s)"
	expect_err "the reason says what to do" "max_instances"
	expect_err "the reason names the device" "$u"
fi
rm "$types/vgpu-2G/devices/"*
if run 1 "pre start refused: no instances and no mdevs (vgpud gone)" -t vgpu-2G -e pre -a start -s none -u "$u" -p "$parent"; then
	expect_err "the reason says vgpud is not serving" "vgpud is not serving"
fi
if run 1 "pre start refused: no such parent" -t vgpu-1G -e pre -a start -s none -u "$u" -p 0000:00:11.0; then
	expect_err "the reason names the missing parent and the ones there are" "no mdev parent '0000:00:11.0'.*$parent"
fi
if run 1 "pre start refused: the parent lacks the type" -t vgpu-8G -e pre -a start -s none -u "$u" -p "$parent"; then
	expect_err "the reason lists the types offered" "offers no type vgpu-8G (it offers: vgpu-1G vgpu-2G"
fi
echo garbage >"$types/vgpu-1G/available_instances"
run 1 "unreadable available_instances counts as none" -t vgpu-1G -e pre -a start -s none -u "$u" -p "$parent"

echo "libvirt-callout: $passed passed, $failed failed"
((failed == 0))
