// SPDX-License-Identifier: MIT
/* fuzz_target_pushbuffer.c - libFuzzer entry: arbitrary bytes as GPFIFO
 * entries and a pushbuffer (layout: fuzz_pushbuffer.h). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_pushbuffer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_pushbuffer_run(data, size);
	return 0;
}
