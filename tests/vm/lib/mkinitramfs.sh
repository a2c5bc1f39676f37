#!/bin/bash
# tests/vm/lib/mkinitramfs.sh - build a busybox initramfs for the L1 or L2 VM.
set -euo pipefail

VM_PROG=mkinitramfs
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
	cat <<EOF
Usage: $0 [--preset l1|l2] [options]

Builds a gzip'd newc cpio initramfs: static busybox (applet links made at
boot), /init, the named kernel modules of the fetched kernel with all their
dependencies (resolved with 'modprobe -d <unpacked kernel> --show-depends',
listed in load order in /etc/initramfs-modules, plus a modules.dep made by
depmod), and any extra files or host binaries. Prints the image's path.

The image is cached: \$VGPU_CACHE/initramfs/<name>-<hash>.cpio.gz, where the
hash covers every byte that goes into it, so an unchanged request costs only
the staging copy (well under a second) and a changed init or module rebuilds.

Presets:
  l1   init = lib/init-l1.sh, modules virtio_pci 9pnet_virtio 9p: the L1 host,
       which mounts the host root over 9p and runs lib/l1-stage2.sh from it
  l2   init = lib/init-l2.sh, no modules: a guest that prints VGPU-L2-HELLO,
       runs /l2-job if present and powers off; /lib/vgpu-guest.sh is
       l2/guest-lib.sh, the vGPU steps the jobs share

Options:
  --init FILE        use FILE as /init
  --modules "A B"    kernel modules to include (deps added; repeatable)
  --file SRC[:DST]   copy SRC to DST inside the image (DST defaults to SRC)
  --bin PATH         copy a host executable plus the libraries 'ldd' lists
  --name NAME        cache name prefix (default: the preset, or 'custom')
  -o, --output FILE  write the image to FILE instead of the cache
  -h, --help         this text

Environment: VGPU_CACHE, VGPU_KERNEL_ENV (kernel.env to use; default: run
fetch-kernel.sh).
EOF
}

init='' name='' output=''
modules=() files=() bins=()
preset() {
	case $1 in
	l1)
		init=$VM_LIB_DIR/init-l1.sh
		modules+=(virtio_pci 9pnet_virtio 9p)
		;;
	l2)
		init=$VM_LIB_DIR/init-l2.sh
		files+=("$VM_LIB_DIR/../l2/guest-lib.sh:/lib/vgpu-guest.sh")
		;;
	*) vm_die "unknown preset '$1'" ;;
	esac
	name=${name:-$1}
}
while (($#)); do
	case $1 in
	--preset) preset "${2:?}"; shift 2 ;;
	--init) init=${2:?}; shift 2 ;;
	--modules) read -r -a m <<<"${2//,/ }"; modules+=("${m[@]}"); shift 2 ;;
	--file) files+=("${2:?}"); shift 2 ;;
	--bin) bins+=("${2:?}"); shift 2 ;;
	--name) name=${2:?}; shift 2 ;;
	-o | --output) output=${2:?}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[[ -n $init ]] || { usage >&2; vm_die "no --init or --preset"; }
[[ -r $init ]] || vm_die "init script $init not readable"
name=${name:-custom}

vm_ensure_pkgs busybox-static cpio gzip kmod
vm_kernel_env

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,dev,proc,sys,etc,tmp,newroot,lib/modules/"$KVER"}
cp /bin/busybox "$stage/bin/busybox"
install -m 755 "$init" "$stage/init"
# The kernel opens /dev/console before devtmpfs is mounted.
mknod -m 600 "$stage/dev/console" c 5 1
mknod -m 666 "$stage/dev/null" c 1 3

# Modules: copy each one that --show-depends names, in load order.
: >"$stage/etc/initramfs-modules"
for m in "${modules[@]}"; do
	modprobe -d "$KROOT" -S "$KVER" --show-depends "$m" ||
		vm_die "module $m not found in $MODDIR"
done | while read -r kind path _; do
	[[ $kind == insmod ]] || continue # 'builtin NAME' needs nothing
	rel=${path#"$MODDIR"/}
	grep -qxF "$rel" "$stage/etc/initramfs-modules" && continue
	mkdir -p "$stage/lib/modules/$KVER/$(dirname "$rel")"
	cp "$path" "$stage/lib/modules/$KVER/$rel"
	echo "$rel" >>"$stage/etc/initramfs-modules"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[[ -e $MODDIR/$f ]] && cp "$MODDIR/$f" "$stage/lib/modules/$KVER/"
done
depmod -b "$stage" "$KVER"

copy_in() { # SRC DST: copy a file, dereferencing links, making parent dirs
	mkdir -p "$stage/$(dirname "$2")"
	cp -L "$1" "$stage/$2"
}
for spec in "${files[@]}"; do
	src=${spec%%:*} dst=${spec#*:}
	[[ $spec == *:* ]] || dst=$src
	[[ -e $src ]] || vm_die "--file $src: no such file"
	if [[ -d $src ]]; then
		mkdir -p "$stage/$dst"
		cp -a "$src/." "$stage/$dst/"
	else
		copy_in "$src" "$dst"
	fi
done
for b in "${bins[@]}"; do
	p=$(command -v "$b") || vm_die "--bin $b: not found"
	copy_in "$p" "$p"
	# ldd lines: 'libx.so => /path (addr)', '/lib64/ld-linux... (addr)', 'linux-vdso...'
	ldd "$p" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' |
		while read -r lib; do
			copy_in "$lib" "$lib"
		done
done

# Cache key: every path, mode and byte of the staging tree.
hash=$(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
	xargs -0 stat -c '%n %a %F %t:%T' | sha256sum | cut -c1-12)
hash=$(
	cd "$stage"
	{
		echo "$hash"
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
	} | sha256sum | cut -c1-16
)
if [[ -z $output ]]; then
	mkdir -p "$VGPU_CACHE/initramfs"
	output=$VGPU_CACHE/initramfs/$name-$KVER-$hash.cpio.gz
	if [[ -s $output ]]; then
		vm_log "reusing $output"
		echo "$output"
		exit 0
	fi
fi
tmp=$output.tmp.$$
(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --reproducible --quiet -R 0:0 | gzip -n -6) >"$tmp"
mv "$tmp" "$output"
vm_log "built $output ($(du -h "$output" | cut -f1))"
echo "$output"
