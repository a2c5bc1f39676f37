// SPDX-License-Identifier: MIT
/* fuzz_target_fatbin.c - libFuzzer entry: arbitrary bytes as a fat binary
 * (fuzz_fatbin.h). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_fatbin_run(data, size);
	return 0;
}
