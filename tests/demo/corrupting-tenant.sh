#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# corrupting-tenant.sh - stands in for vgpu-tenant in demo-test.sh's
# integrity-failure test. It runs the real tenant ($REAL_VGPU_TENANT) with
# the same arguments; for the VM named $CORRUPT_VM it then reports the data
# as not verified (one checksum wrong, exit status 1), as a tenant whose
# buffers came back changed would. Like vgpu-tenant --linger it waits after
# printing until SIGTERM.
set -u

args=("$@")
name=""
for ((i = 0; i < ${#args[@]}; i++)); do
	[ "${args[$i]}" = --name ] && name="${args[$((i + 1))]:-}"
done
[ "$name" = "${CORRUPT_VM:-}" ] || exec "$REAL_VGPU_TENANT" "$@"

# Without --linger (the VM detaches when the real tenant is done).
real_args=()
for ((i = 0; i < ${#args[@]}; i++)); do
	if [ "${args[$i]}" = --linger ]; then
		i=$((i + 1))
	else
		real_args+=("${args[$i]}")
	fi
done

result="$(mktemp)"
"$REAL_VGPU_TENANT" "${real_args[@]}" >"$result" &
tenant=$!
sleeper=""
trap 'kill $tenant $sleeper 2>/dev/null; rm -f "$result"; exit 1' TERM INT
wait "$tenant"
jq '.verified = false | .mismatches = 1 |
    .message = "checksum of buffer 0 wrong (corrupted on purpose by the test)"' "$result"
rm -f "$result"
sleep 600 &
sleeper=$!
wait "$sleeper"
exit 1
