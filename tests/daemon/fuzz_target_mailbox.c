// SPDX-License-Identifier: MIT
/* fuzz_target_mailbox.c - libFuzzer entry for the mailbox (fuzz_mailbox.h). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_mailbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_mailbox_run(data, size);
	return 0;
}
