#!/bin/bash
# tests/libvirt/validate-xml.sh VGPUCTL LIBVIRT_XML_DIR - every XML file in
# libvirt-xml/ and everything `vgpuctl xml` prints validate against libvirt's
# schemas (virt-xml-validate, Debian package libvirt-clients); the generator's
# parent/type lookup in a fake sysfs tree, its UUIDs and its errors.
# Prints one line per check; exit 0 only if all passed, 77 (skip) without
# virt-xml-validate.
set -u
vgpuctl=${1:?usage: validate-xml.sh VGPUCTL LIBVIRT_XML_DIR}
dir=${2:?usage: validate-xml.sh VGPUCTL LIBVIRT_XML_DIR}
if ! command -v virt-xml-validate >/dev/null || ! command -v xmllint >/dev/null; then
	echo "SKIP: virt-xml-validate or xmllint missing (apt-get install libvirt-clients libxml2-utils)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/lib/checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"
validate() { # FILE [TYPE] WHAT
	local out
	if out=$(virt-xml-validate "$1" ${2:+"$2"} 2>&1); then
		ok "$3 validates${2:+ as $2}"
	else
		bad "$3: $out"
	fi
}
json_ok() { # FILE WHAT
	if jq -e '.mdev_type and (.start == "auto" or .start == "manual") and (.attrs | type == "array")' \
		"$1" >/dev/null 2>&1; then
		ok "$2 is an mdevctl definition (mdev_type, start, attrs)"
	else
		bad "$2 is not valid mdevctl JSON: $(cat "$1")"
	fi
}

# 1. the files
shopt -s globstar nullglob
files=("$dir"/**/*.xml)
((${#files[@]} >= 3)) && ok "${#files[@]} XML files in libvirt-xml/" ||
	bad "expected the domain templates and the nodedev XML in $dir, found ${#files[@]} files"
for f in "${files[@]}"; do
	validate "$f" "" "${f#"$dir"/}"
done
for f in "$dir"/**/*.json; do
	json_ok "$f" "${f#"$dir"/}"
done
template=$dir/vgpu-domain.xml
[[ -f $template ]] || bad "no domain template $template"
grep -q "<hostdev mode='subsystem' type='mdev' model='vfio-pci'" "$template" &&
	ok "the template assigns an mdev with <hostdev mode='subsystem' type='mdev' model='vfio-pci'>" ||
	bad "the template has no mdev hostdev"

# the template with its <hostdev> replaced by FILE's
splice() { # HOSTDEV-FILE OUT
	awk -v f="$1" '
		/^ *<hostdev / { skip = 1; while ((getline line < f) > 0) print line; next }
		skip && /<\/hostdev>/ { skip = 0; next }
		!skip { print }' "$template" >"$2"
}

# 2. vgpuctl xml with the parent and type found in (fake) sysfs
sys=$tmp/sys
types=$sys/class/mdev_bus/0000:00:10.0/mdev_supported_types
mkdir -p "$types/vgpu-1G" "$types/vgpu-big" "$sys/class/mdev_bus/vgpu/mdev_supported_types/vgpu-virt"
echo vgpu-1G >"$types/vgpu-1G/name"
echo vgpu-4G >"$types/vgpu-big/name" # a type whose directory is not the profile's name
echo vgpu-virt >"$sys/class/mdev_bus/vgpu/mdev_supported_types/vgpu-virt/name"
export VGPU_SYSFS=$sys

if "$vgpuctl" xml guest-a vgpu-1G >"$tmp/both" 2>"$tmp/err"; then
	ok "vgpuctl xml guest-a vgpu-1G"
	# two documents separated by a blank line
	awk -v RS= -v d="$tmp" '{ print > (d "/doc" NR ".xml") }' "$tmp/both"
	validate "$tmp/doc1.xml" nodedev "its first document (node device)"
	splice "$tmp/doc2.xml" "$tmp/dom.xml"
	validate "$tmp/dom.xml" domain "the template with its second document (<hostdev>)"
	u1=$(xmllint --xpath 'string(/device/capability/uuid)' "$tmp/doc1.xml")
	u2=$(xmllint --xpath 'string(/hostdev/source/address/@uuid)' "$tmp/doc2.xml")
	[[ $u1 =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] &&
		ok "a random (version 4) UUID $u1" || bad "generated UUID '$u1'"
	[[ $u1 == "$u2" ]] && ok "both documents name the same mdev" || bad "UUIDs differ: $u1 / $u2"
	[[ $(xmllint --xpath 'string(/device/parent)' "$tmp/doc1.xml") == pci_0000_00_10_0 ]] &&
		ok "parent pci_0000_00_10_0 (libvirt's name of 0000:00:10.0)" || bad "parent: $(cat "$tmp/doc1.xml")"
	[[ $(xmllint --xpath 'string(/device/capability/type/@id)' "$tmp/doc1.xml") == vgpu-1G ]] &&
		ok "type vgpu-1G" || bad "type: $(cat "$tmp/doc1.xml")"
	[[ $(xmllint --xpath 'string(/device/name)' "$tmp/doc1.xml") == "mdev_${u1//-/_}_0000_00_10_0" ]] &&
		ok "<name> is libvirt's name of the mdev" || bad "name: $(cat "$tmp/doc1.xml")"
else
	bad "vgpuctl xml guest-a vgpu-1G: $(cat "$tmp/err")"
fi
"$vgpuctl" xml guest-b vgpu-1G >"$tmp/other" 2>/dev/null
[[ $(grep -o "uuid='[^']*'" "$tmp/other") != $(grep -o "uuid='[^']*'" "$tmp/both") ]] &&
	ok "another call, another UUID" || bad "the same UUID twice"

# the type is found by its 'name', not by its directory
"$vgpuctl" xml --nodedev vm vgpu-4G >"$tmp/big.xml" 2>"$tmp/err" &&
	[[ $(xmllint --xpath 'string(/device/capability/type/@id)' "$tmp/big.xml") == vgpu-big ]] &&
	ok "profile vgpu-4G is type vgpu-big (found by the type's name)" || bad "vgpu-4G: $(cat "$tmp/big.xml" "$tmp/err")"

# --uuid (upper case accepted, written lower case), single documents, files
U=3B5C2A0E-1111-4222-8333-444455556666 u=3b5c2a0e-1111-4222-8333-444455556666
"$vgpuctl" xml --hostdev --uuid "$U" guest-a vgpu-1G >"$tmp/h.xml" && splice "$tmp/h.xml" "$tmp/dom2.xml" &&
	validate "$tmp/dom2.xml" domain "--hostdev spliced into the template" &&
	{ grep -q "uuid='$u'" "$tmp/h.xml" && ok "--uuid is used, lower case" || bad "--uuid: $(cat "$tmp/h.xml")"; }
"$vgpuctl" xml --nodedev --uuid "$U" guest-a vgpu-1G >"$tmp/n.xml" &&
	validate "$tmp/n.xml" nodedev "--nodedev"
"$vgpuctl" xml --mdevctl --autostart guest-a vgpu-1G >"$tmp/m.json" && json_ok "$tmp/m.json" "--mdevctl" &&
	{ [[ $(jq -r .start "$tmp/m.json") == auto && $(jq -r .mdev_type "$tmp/m.json") == vgpu-1G ]] &&
		ok "--autostart: start auto, type vgpu-1G" || bad "--mdevctl: $(cat "$tmp/m.json")"; }
if "$vgpuctl" xml -o "$tmp/out" --uuid "$u" guest-a vgpu-1G >"$tmp/commands"; then
	validate "$tmp/out/guest-a-vgpu-nodedev.xml" nodedev "--output-dir's nodedev file"
	splice "$tmp/out/guest-a-vgpu-hostdev.xml" "$tmp/dom3.xml"
	validate "$tmp/dom3.xml" domain "--output-dir's hostdev file in the template"
	json_ok "$tmp/out/guest-a-vgpu-mdevctl.json" "--output-dir's mdevctl file"
	grep -q "virsh nodedev-define $tmp/out/guest-a-vgpu-nodedev.xml" "$tmp/commands" &&
		grep -q "virsh attach-device 'guest-a' $tmp/out/guest-a-vgpu-hostdev.xml --config" "$tmp/commands" &&
		ok "--output-dir prints the virsh commands" || bad "commands: $(cat "$tmp/commands")"
else
	bad "vgpuctl xml -o"
fi

# for another host: --parent in either form, the type from vgpud's rule
VGPU_SYSFS=$tmp/none "$vgpuctl" xml --nodedev --parent pci_0000_00_10_0 vm vgpu-2G >"$tmp/p.xml" &&
	validate "$tmp/p.xml" nodedev "--parent pci_0000_00_10_0 without sysfs" &&
	{ [[ $(xmllint --xpath 'string(/device/capability/type/@id)' "$tmp/p.xml") == vgpu-2G ]] &&
		ok "type vgpu-2G from the profile's name" || bad "type: $(cat "$tmp/p.xml")"; }
VGPU_SYSFS=$tmp/none "$vgpuctl" xml --nodedev --parent 0000:00:10.0 --type vgpu-x vm big >"$tmp/q.xml" &&
	[[ $(xmllint --xpath 'string(/device/parent)' "$tmp/q.xml") == pci_0000_00_10_0 &&
		$(xmllint --xpath 'string(/device/capability/type/@id)' "$tmp/q.xml") == vgpu-x ]] &&
	ok "--parent 0000:00:10.0 --type vgpu-x" || bad "--parent/--type: $(cat "$tmp/q.xml")"

# "--" in the output path, the VM name, the profile and the type (and names
# ending in '-'): XML forbids "--" in a comment and a comment ending in '-',
# and libxml2 (so libvirt) refuses such a document, so every file and every
# printed document must still parse
well_formed() { # FILE WHAT
	local out
	if out=$(xmllint --noout "$1" 2>&1); then
		ok "$2 is well-formed XML"
	else
		bad "$2: $out"
	fi
}
dashes=$tmp/out--dir-
if VGPU_SYSFS=$tmp/none "$vgpuctl" xml -o "$dashes" --parent pci_0000_00_10_0 --autostart \
	'vm--a-' 'vgpu--x-' >/dev/null 2>"$tmp/err"; then
	for f in "$dashes"/vm--a--vgpu-{nodedev,hostdev}.xml; do
		well_formed "$f" "-o DIR--: ${f##*/}"
	done
	validate "$dashes/vm--a--vgpu-nodedev.xml" nodedev "-o DIR--: the nodedev file"
else
	bad "vgpuctl xml -o with -- in the names: $(cat "$tmp/err")"
fi
if VGPU_SYSFS=$tmp/none "$vgpuctl" xml --parent pci_0000_00_10_0 --type 'vgpu--t-' \
	-- '--vm-' 'p--' >"$tmp/dashes" 2>"$tmp/err"; then
	awk -v RS= -v d="$tmp" '{ print > (d "/dashes" NR ".xml") }' "$tmp/dashes"
	well_formed "$tmp/dashes1.xml" "the node device of VM --vm- (profile p--, type vgpu--t-)"
	well_formed "$tmp/dashes2.xml" "the <hostdev> of VM --vm-"
else
	bad "vgpuctl xml with -- in the names: $(cat "$tmp/err")"
fi

# errors: exit status and a message saying what to do
expect() { # STATUS PATTERN WHAT ARGS...
	local want=$1 pattern=$2 what=$3 rc
	shift 3
	"$vgpuctl" xml "$@" >/dev/null 2>"$tmp/err"
	rc=$?
	if [[ $rc == "$want" ]] && grep -q -- "$pattern" "$tmp/err"; then
		ok "$what: exit $rc"
	else
		bad "$what: exit $rc (want $want), stderr: $(cat "$tmp/err")"
	fi
}
expect 1 "no mdev parent offers profile vgpu-8G" "an unknown profile" vm vgpu-8G
expect 64 "is not a UUID" "a bad --uuid" --uuid 1234 vm vgpu-1G
expect 64 "needs a VM" "a missing profile" vm
expect 64 "at most one of" "two selectors" --hostdev --nodedev vm vgpu-1G
expect 64 "must be 1..63" "a VM name with /" a/b vgpu-1G
expect 1 "not a PCI device" "--nodedev for the virtual parent" --nodedev vm vgpu-virt
"$vgpuctl" xml --hostdev vm vgpu-virt >/dev/null 2>&1 && ok "--hostdev for the virtual parent works" ||
	bad "--hostdev for the virtual parent"
"$vgpuctl" xml --help | grep -q "Usage: vgpuctl xml" && ok "vgpuctl xml --help" || bad "--help"

echo "libvirt-xml: $passed passed, $failed failed"
((failed == 0))
