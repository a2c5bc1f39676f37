#!/bin/bash
# qemu-patches/update-device.sh - regenerate patch 0002 of the series, the
# vgpu-pci device, from the files it is made of:
#
#   hw/misc/vgpu-pci.c      the device (a new file in QEMU's hw/misc/)
#   hw/misc/Kconfig         the lines the patch adds to QEMU's hw/misc/Kconfig
#   hw/misc/meson.build     ... to QEMU's hw/misc/meson.build
#   hw/misc/trace-events    ... to the end of QEMU's hw/misc/trace-events
#   vgpu-pci.message        the patch's commit message (subject, blank, body)
#
# all under qemu-patches/. The patch is git format-patch output of one commit
# on Debian's unpacked QEMU source, which the cache of build.sh holds
# ($VGPU_CACHE/qemu/src/<version>/tree; './vgpu-dev qemu --check' puts it
# there): QEMU's three build files give the patch its context lines.
#
#   qemu-patches/update-device.sh          rewrite the patch (needs the source)
#   qemu-patches/update-device.sh --check  exit 1 (and say so) if the patch is
#                                          out of date; changes nothing. With
#                                          the source in the cache it compares
#                                          the whole patch, without it what the
#                                          patch adds and its message
#   --qemu-tree DIR                        Debian's unpacked QEMU source
#                                          (default: the one in the cache)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patch_name=0002-hw-misc-vgpu-pci-a-vGPU-whose-backend-is-vgpud-local.patch
cache=${VGPU_CACHE:-/var/cache/vgpu-dev}
# QEMU's files the patch changes, each with where its part goes: "append",
# or "after REGEX" / "before REGEX" (the first line of QEMU's file matching).
glue=(
	"Kconfig|before ^config ECCMEMCTL\$"
	"meson.build|after ^softmmu_ss\\.add\\(when: 'CONFIG_IVSHMEM_DEVICE'"
	"trace-events|append"
)

die() {
	echo "update-device.sh: $*" >&2
	exit 1
}

check=0 tree=""
while (($#)); do
	case $1 in
	-h | --help)
		sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	--check) check=1 ;;
	--qemu-tree)
		(($# >= 2)) || die "--qemu-tree needs a directory"
		tree=$2
		shift
		;;
	*)
		echo "update-device.sh: unknown argument '$1' (see --help)" >&2
		exit 2
		;;
	esac
	shift
done

# Debian's unpacked source as build.sh leaves it, or nothing.
find_tree() {
	local ver
	[[ -s $cache/qemu/source-version ]] || return 0
	ver=$(<"$cache/qemu/source-version")
	ver=${ver//:/_}
	[[ -e $cache/qemu/src/$ver/.complete ]] && echo "$cache/qemu/src/$ver/tree"
	return 0
}
[[ -n $tree ]] || tree=$(find_tree)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Insert FRAGMENT into FILE as SPEC says.
place() { # file, fragment, spec
	local file=$1 frag=$2 spec=$3 how re
	how=${spec%% *}
	re=${spec#* }
	case $how in
	append)
		cat "$frag" >>"$file"
		return 0
		;;
	after | before) ;;
	*) die "bad placement '$spec'" ;;
	esac
	grep -Eq "$re" "$file" || die "no line of QEMU's $(basename "$file") matches '$re'"
	awk -v re="$re" -v how="$how" -v frag="$frag" '
		function put(  l) { while ((getline l < frag) > 0) print l; close(frag) }
		!done && $0 ~ re { if (how == "before") put(); print; if (how == "after") put(); done = 1; next }
		{ print }' "$file" >"$file.new"
	mv "$file.new" "$file"
}

generate() { # out-dir
	local g name
	[[ -f $tree/hw/misc/Kconfig ]] || die "$tree is not a QEMU source tree"
	git -C "$work" init -q repo
	mkdir -p "$work/repo/hw/misc"
	for g in "${glue[@]}"; do
		cp "$tree/hw/misc/${g%%|*}" "$work/repo/hw/misc/"
	done
	git -C "$work/repo" add hw
	commit -m "Debian qemu (the files the patch changes)"
	for g in "${glue[@]}"; do
		name=${g%%|*}
		place "$work/repo/hw/misc/$name" "$here/hw/misc/$name" "${g#*|}"
	done
	cp "$here/hw/misc/vgpu-pci.c" "$work/repo/hw/misc/"
	git -C "$work/repo" add hw
	commit -F "$here/vgpu-pci.message"
	git -C "$work/repo" format-patch -q --zero-commit --no-signature --abbrev=8 \
		--start-number 2 -1 -o "$1" HEAD
	[[ -f $1/$patch_name ]] || die "git format-patch did not write $patch_name (did the subject change?)"
}

# Fixed identity and date: the same files always give the same patch.
commit() {
	GIT_AUTHOR_NAME="vgpu project" GIT_AUTHOR_EMAIL=vgpu@localhost \
		GIT_COMMITTER_NAME="vgpu project" GIT_COMMITTER_EMAIL=vgpu@localhost \
		GIT_AUTHOR_DATE="2026-11-25T22:17:25Z" GIT_COMMITTER_DATE="2026-11-25T22:17:25Z" \
		git -C "$work/repo" commit -q "$@"
}

# Without QEMU's source: what each file of the patch adds is the file it is
# made of, and the message is vgpu-pci.message.
check_content() {
	local patch=$here/$patch_name g name ok=1
	mkdir -p "$work/added"
	awk -v dir="$work/added" '
		/^diff --git / { n = split($3, p, "/"); out = dir "/" p[n]; printf "" > out; next }
		out && /^\+\+\+ / { next }
		out && /^\+/ { print substr($0, 2) > out }' "$patch"
	for g in "${glue[@]}" "vgpu-pci.c|new"; do
		name=${g%%|*}
		cmp -s "$work/added/$name" "$here/hw/misc/$name" || {
			echo "qemu-patches/$patch_name: what it adds to hw/misc/$name is not qemu-patches/hw/misc/$name" >&2
			ok=0
		}
	done
	git mailinfo "$work/msg" "$work/body" <"$patch" >"$work/info"
	{
		sed -n 's/^Subject: //p' "$work/info"
		echo
		cat "$work/msg"
	} >"$work/message"
	cmp -s "$work/message" "$here/vgpu-pci.message" || {
		echo "qemu-patches/$patch_name: its message is not qemu-patches/vgpu-pci.message" >&2
		ok=0
	}
	((ok))
}

stale() {
	echo "qemu-patches/$patch_name is out of date with qemu-patches/hw/misc/ and vgpu-pci.message: run qemu-patches/update-device.sh" >&2
	exit 1
}

if ((check)); then
	if [[ -z $tree ]]; then
		check_content || stale
		echo "qemu-patches/$patch_name adds qemu-patches/hw/misc/ (no QEMU source in $cache: the context lines were not checked)"
		exit 0
	fi
	generate "$work/out"
	cmp -s "$work/out/$patch_name" "$here/$patch_name" || stale
	echo "qemu-patches/$patch_name matches qemu-patches/hw/misc/ and vgpu-pci.message"
	exit 0
fi
[[ -n $tree ]] || die "no Debian QEMU source in $cache/qemu: run './vgpu-dev qemu --check' (downloads it) or name one with --qemu-tree"
generate "$work/out"
cp "$work/out/$patch_name" "$here/$patch_name"
echo "wrote qemu-patches/$patch_name"
