// SPDX-License-Identifier: MIT
/* fuzz_target_ptx.c - libFuzzer entry: arbitrary bytes as a PTX module
 * (fuzz_ptx.h). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_ptx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_ptx_run(data, size);
	return 0;
}
