# SPDX-License-Identifier: MIT
#
# needs.sh - what a host-side shell test needs before it runs (tests/demo,
# tests/soak, tests/consumers), sourced by each.
#
#   need_binaries NAME BIN...   exits 2 ("could not run") unless every BIN
#                               is an executable file; NAME is the test's
#                               name in the message
#   need_jq                     exits 77 (skipped) when jq is not installed

need_binaries() {
	local name="$1" bin
	shift
	for bin; do
		if [ ! -x "$bin" ]; then
			echo "$name: $bin is missing: build first (./vgpu-dev build, or pass --build-dir DIR)" >&2
			exit 2
		fi
	done
}

need_jq() {
	if ! command -v jq >/dev/null 2>&1; then
		echo "jq is not installed: skipping (apt-get install jq, or ./vgpu-dev deps)"
		exit 77
	fi
}
