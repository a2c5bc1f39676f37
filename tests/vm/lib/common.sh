# shellcheck shell=bash
# tests/vm/lib/common.sh - helpers shared by the tests/vm scripts.
#
# Source it; do not execute it. Everything here is side-effect free until a
# function is called, except that VGPU_CACHE gets its default value.
#
#   VGPU_CACHE   cache root, outside the git clone (default /var/cache/vgpu-dev)
#   VGPU_VM_QUIET=1  silences vm_log

: "${VGPU_CACHE:=/var/cache/vgpu-dev}"
export VGPU_CACHE

VM_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_DIR=$(dirname "$VM_LIB_DIR")

vm_log() {
	[[ ${VGPU_VM_QUIET:-0} == 1 ]] && return 0
	printf '[%s %s] %s\n' "$(date +%H:%M:%S)" "${VM_PROG:-vm}" "$*" >&2
}

vm_die() {
	printf '[%s %s] ERROR: %s\n' "$(date +%H:%M:%S)" "${VM_PROG:-vm}" "$*" >&2
	exit 1
}

# vm_now: seconds since the epoch with millisecond precision (for timings).
vm_now() { date +%s.%3N; }

# vm_elapsed START: seconds since START (a vm_now value), one decimal.
vm_elapsed() { awk -v s="$1" -v e="$(vm_now)" 'BEGIN { printf "%.1f", e - s }'; }

vm_need_root() {
	[[ $(id -u) == 0 ]] || vm_die "must run as root (apt-get, dpkg -x into $VGPU_CACHE)"
}

# vm_pkg_installed PKG: true when dpkg reports PKG fully installed.
vm_pkg_installed() {
	[[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

# apt-get with a wait for the dpkg lock: other engineers share the machine.
vm_apt_get() {
	DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 "$@"
}

# vm_apt_update_once: run `apt-get update` unless the package lists are
# already there (apt-cache knows the linux-image-amd64 meta package) or it was
# done earlier by this process tree.
vm_apt_update_once() {
	[[ ${VM_APT_UPDATED:-0} == 1 ]] && return 0
	if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
		vm_log "apt-get update (package lists missing)"
		vm_apt_get update >&2 || vm_die "apt-get update failed"
	fi
	VM_APT_UPDATED=1
	export VM_APT_UPDATED
}

# vm_ensure_pkgs PKG...: apt-get install the packages that are missing.
vm_ensure_pkgs() {
	local p missing=()
	for p in "$@"; do
		vm_pkg_installed "$p" || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	vm_need_root
	vm_log "installing host packages: ${missing[*]}"
	vm_apt_update_once
	if ! vm_apt_get install -y --no-install-recommends "${missing[@]}" >&2; then
		# A stale package list gives 404s: refresh once and retry.
		VM_APT_UPDATED=0
		vm_apt_get update >&2 || true
		vm_apt_get install -y --no-install-recommends "${missing[@]}" >&2 ||
			vm_die "apt-get install ${missing[*]} failed"
	fi
}

# vm_ensure_pkgs_no_services PKG...: vm_ensure_pkgs, but the packages'
# maintainer scripts start no service on this host (Debian's policy-rc.d
# mechanism, when the machine has no policy of its own): the libvirt tests
# install libvirt's daemons and start their own, privately. Fails when a
# package is still missing afterwards.
vm_ensure_pkgs_no_services() {
	local p missing=() policy=/usr/sbin/policy-rc.d own_policy=0
	for p in "$@"; do
		vm_pkg_installed "$p" || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\n# tests/vm: no service starts during its apt-get install\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		own_policy=1
	fi
	(
		# the policy goes however apt-get ends
		((own_policy)) && trap 'rm -f "$policy"' EXIT
		trap 'exit 130' INT
		trap 'exit 143' TERM
		vm_ensure_pkgs "${missing[@]}"
	) || true
	for p in "${missing[@]}"; do
		vm_pkg_installed "$p" || { vm_log "Debian package $p could not be installed"; return 1; }
	done
}

# Host packages the VM chain needs: QEMU (TCG host side, and the L1 guest
# runs the very same binary over 9p), busybox for the initramfs init, cpio
# and gzip to pack it, kmod for depmod/modprobe -d, and the compiler + libelf
# that Debian's linux-headers/linux-kbuild need for out-of-tree modules.
VM_HOST_PKGS=(qemu-system-x86 seabios busybox-static cpio gzip kmod
	gcc-12 gcc make libelf-dev libssl3 xz-utils zstd)

vm_ensure_host_pkgs() { vm_ensure_pkgs "${VM_HOST_PKGS[@]}"; }

# vm_sync_tree SRC DST FIND-ARGS...: copy the files `find FIND-ARGS` lists
# under SRC to DST where their bytes differ, so that make and ninja rebuild
# only what changed. A copied file gets the current time, never SRC's: a
# snapshot from `git archive` carries the commit's time, which can be older
# than objects built from an earlier snapshot, and make and ninja would then
# keep the stale objects. A DST without the marker .vm-sync-tree (a copy made
# before this rule, whose times cannot be trusted) is emptied first.
vm_sync_tree() {
	local src=$1 dst=$2 f
	shift 2
	if [[ ! -e $dst/.vm-sync-tree ]]; then
		rm -rf "$dst" && mkdir -p "$dst" && touch "$dst/.vm-sync-tree" || return 1
	fi
	(cd "$src" && find "$@" -print0) | while IFS= read -r -d '' f; do
		cmp -s "$src/$f" "$dst/$f" 2>/dev/null ||
			{ mkdir -p "$dst/$(dirname "$f")" && cp "$src/$f" "$dst/$f"; }
	done
}

# vm_lock FILE FD: take an exclusive flock on FILE with descriptor FD,
# waiting (and saying so) if someone else holds it.
vm_lock() {
	local file=$1 fd=$2
	mkdir -p "$(dirname "$file")"
	eval "exec $fd>>\"\$file\""
	if ! flock -n "$fd"; then
		vm_log "waiting for lock $file (another run holds it)"
		flock "$fd"
	fi
}

# vm_new_run_dir [PREFIX]: create and print a fresh run directory
# $VGPU_CACHE/runs/[PREFIX-]<stamp>-<pid>, pruning all but the 10 newest.
vm_new_run_dir() {
	local runs=$VGPU_CACHE/runs dir
	mkdir -p "$runs"
	find "$runs" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' | sort -rn |
		tail -n +10 | cut -d' ' -f2- | xargs -r rm -rf
	dir=$runs/${1:+$1-}$(date +%Y%m%d-%H%M%S)-$$
	mkdir -p "$dir"
	echo "$dir"
}

# vm_kernel_env: locate (and if needed fetch) the kernel, then source its
# kernel.env so KVER, KROOT, VMLINUZ, KDIR, MODDIR are set. Honours
# VGPU_KERNEL_ENV (path of a kernel.env to use as is).
vm_kernel_env() {
	local envf=${VGPU_KERNEL_ENV:-}
	if [[ -z $envf ]]; then
		local kdir
		kdir=$("$VM_LIB_DIR/fetch-kernel.sh") || vm_die "fetch-kernel.sh failed"
		envf=$kdir/kernel.env
	fi
	[[ -r $envf ]] || vm_die "no kernel env file $envf"
	# shellcheck disable=SC1090
	source "$envf"
	export VGPU_KERNEL_ENV=$envf KVER KPKGVER KROOT VMLINUZ KDIR MODDIR
}
