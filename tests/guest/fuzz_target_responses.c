// SPDX-License-Identifier: MIT
/* fuzz_target_responses.c - libFuzzer entry point for fuzz_responses.h. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_responses.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_guest_responses(data, size);
}
