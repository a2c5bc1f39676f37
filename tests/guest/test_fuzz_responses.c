// SPDX-License-Identifier: MIT
/*
 * test_fuzz_responses.c - the hostile-device harness (fuzz_responses.h) as a
 * seeded regression test: random inputs, plus a few hand-made ones. Set
 * VGPU_SEED to repeat a run; the seed is printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fuzz_responses.h"
#include "vgpu/abi/kernels.h"

static void test_hand_made_inputs(void **state)
{
	static const uint8_t honest[64] = { 0 };
	uint8_t everything[1024];
	size_t i;

	(void)state;
	fuzz_guest_responses(NULL, 0);
	fuzz_guest_responses(honest, sizeof(honest));
	for (i = 0; i < sizeof(everything); i++)
		everything[i] = (uint8_t)(i % 8 == 0 ? 7 : 0xff); /* corrupt every response */
	fuzz_guest_responses(everything, sizeof(everything));
	memset(everything, 0xa5, sizeof(everything)); /* garbage ring indices */
	fuzz_guest_responses(everything, sizeof(everything));
}

static void test_random_inputs(void **state)
{
	const char *env = getenv("VGPU_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ 0x5eed;
	uint8_t input[768];
	unsigned run;
	size_t i;

	(void)state;
	if (!seed)
		seed = 1;
	print_message("seed %llu (set VGPU_SEED to repeat)\n", (unsigned long long)seed);
	for (run = 0; run < 300; run++) {
		size_t size = vgpu_xorshift64(&seed) % sizeof(input);

		for (i = 0; i < size; i++) {
			uint64_t r = vgpu_xorshift64(&seed);

			/* Mostly honest answers, so that later requests are reached. */
			input[i] = (uint8_t)(r % 4 == 0 ? r >> 8 : (r >> 8) & 0xf8);
		}
		fuzz_guest_responses(input, size);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_made_inputs),
		cmocka_unit_test(test_random_inputs),
	};

	return cmocka_run_group_tests_name("guest protocol vs a hostile device", tests, NULL, NULL);
}
