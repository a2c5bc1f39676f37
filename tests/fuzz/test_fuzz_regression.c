// SPDX-License-Identifier: MIT
/*
 * test_fuzz_regression.c - the pushbuffer fuzzer's checks without libFuzzer:
 * replays tests/fuzz/corpus and a few thousand seeded random inputs (raw
 * bytes and well-formed command streams with random arguments), then checks
 * the GPU still completes work.
 *
 * Usage: test-fuzz-regression [corpus-dir]; SIMGPU_TEST_SEED=n to replay;
 * SIMGPU_WRITE_CORPUS=dir also saves the first 64 generated inputs there (to
 * seed libFuzzer with well-formed command streams).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fuzz_pushbuffer.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define RANDOM_INPUTS 3000

static const char *corpus_dir;

static uint64_t next_random(uint64_t *state)
{
	return vgpu_xorshift64(state);
}

static uint64_t random_address(uint64_t *state)
{
	static const uint64_t bases[] = {
		FUZZ_PUSHBUFFER_VA, FUZZ_DATA_VA, FUZZ_READ_ONLY_VA, FUZZ_PRIVILEGED_VA,
		FUZZ_SYSMEM_VA, FUZZ_BAD_IOVA_VA, 0, UINT64_C(1) << 40,
	};

	if (next_random(state) % 8 == 0)
		return next_random(state);
	return bases[next_random(state) % 8] + (next_random(state) % 0x12000 & ~UINT64_C(3));
}

/* A well-formed command with random arguments; returns words. */
static uint32_t random_command(uint64_t *state, uint32_t *words)
{
	uint64_t a = random_address(state), b = random_address(state);
	uint64_t bytes = next_random(state) % 0x11000;

	switch (next_random(state) % 9) {
	case 0:
		return vgpu_push_nop(words);
	case 1:
		return vgpu_push_semaphore_release(words, a & ~UINT64_C(7), next_random(state),
		                                   next_random(state) & 1);
	case 2:
		return vgpu_push_semaphore_acquire(words, a & ~UINT64_C(7),
		                                   next_random(state) % 2);
	case 3:
		return vgpu_push_copy(words, a, b, bytes);
	case 4:
		return vgpu_push_memset(words, a, (uint32_t)next_random(state), bytes);
	case 5: {
		uint64_t args[VGPU_KERNEL_MAX_ARGS];
		uint32_t nargs = (uint32_t)(next_random(state) % (VGPU_KERNEL_MAX_ARGS + 1)), i;

		for (i = 0; i < nargs; i++)
			args[i] = next_random(state) % 4 ? next_random(state) % 0x20000
			                                 : random_address(state);
		return vgpu_push_launch(words, (enum vgpu_kernel)(next_random(state) % 8), args,
		                        nargs);
	}
	case 6:
		return vgpu_push_launch_stream(words, a & ~UINT64_C(7), bytes & ~UINT64_C(7),
		                               1 + next_random(state) % 5);
	case 7:
		return vgpu_push_launch_stencil(words, a & ~UINT64_C(3), b & ~UINT64_C(3),
		                                (uint32_t)(next_random(state) % 300),
		                                (uint32_t)(next_random(state) % 40));
	default:
		words[0] = (uint32_t)next_random(state);
		return 1;
	}
}

static size_t random_input(uint64_t *state, uint8_t *input, size_t capacity)
{
	size_t size = 0;

	if (next_random(state) % 3 == 0) {
		/* raw bytes */
		size = 1 + next_random(state) % 512;
		for (size_t i = 0; i < size && i < capacity; i++)
			input[i] = (uint8_t)next_random(state);
		return size < capacity ? size : capacity;
	}
	{
		uint32_t words[64 * VGPU_COMMAND_MAX_WORDS], count = 0, commands, i;
		uint8_t mode = (uint8_t)(next_random(state) % 4); /* 1-4 entries */

		if (next_random(state) % 16 == 0)
			mode |= 0x10;
		commands = 1 + (uint32_t)(next_random(state) % 16);
		for (i = 0; i < commands; i++)
			count += random_command(state, words + count);
		if (next_random(state) % 8 == 0 && count > 1)
			count -= (uint32_t)(next_random(state) % count); /* truncate */
		input[size++] = mode;
		for (i = 0; i <= (mode & 3u); i++) {
			/* entries split the commands; some cover everything */
			uint32_t first = 0, n = count;

			if (next_random(state) % 4 == 0) {
				first = (uint32_t)(next_random(state) % (count + 1));
				n = (uint32_t)(next_random(state) % (count - first + 2));
			}
			input[size++] = (uint8_t)first;
			input[size++] = (uint8_t)(first >> 8);
			input[size++] = (uint8_t)n;
			input[size++] = (uint8_t)(n >> 8);
		}
		memcpy(input + size, words, (size_t)count * 4);
		return size + (size_t)count * 4;
	}
}

static void test_corpus_replay(void **state)
{
	DIR *dir;
	struct dirent *entry;
	unsigned replayed = 0;

	if (!corpus_dir || !(dir = opendir(corpus_dir))) {
		printf("# no corpus directory\n");
		skip();
		return;
	}
	while ((entry = readdir(dir))) {
		char path[4096];
		uint8_t data[1 << 16];
		size_t size;
		FILE *file;

		if (entry->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", corpus_dir, entry->d_name);
		file = fopen(path, "rb");
		if (!file)
			continue;
		size = fread(data, 1, sizeof(data), file);
		fclose(file);
		fuzz_pushbuffer_run(data, size);
		replayed++;
	}
	closedir(dir);
	printf("# replayed %u corpus inputs\n", replayed);
	assert_true(fuzz_pushbuffer_gpu_alive());
}

static void test_random_pushbuffers(void **state)
{
	const char *env = getenv("SIMGPU_TEST_SEED");
	uint64_t seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	uint64_t rng = seed | 1;
	unsigned outcomes[3] = { 0, 0, 0 }, i;
	static uint8_t input[1 << 16];

	printf("# random pushbuffers: seed %llu (replay with SIMGPU_TEST_SEED=%llu)\n",
	       (unsigned long long)seed, (unsigned long long)seed);
	fflush(stdout);
	const char *write_dir = getenv("SIMGPU_WRITE_CORPUS");

	for (i = 0; i < RANDOM_INPUTS; i++) {
		size_t size = random_input(&rng, input, sizeof(input));

		if (write_dir && i < 64) {
			char path[4096];
			FILE *file;

			snprintf(path, sizeof(path), "%s/seed-%03u", write_dir, i);
			file = fopen(path, "wb");
			if (file) {
				fwrite(input, 1, size, file);
				fclose(file);
			}
		}

		outcomes[fuzz_pushbuffer_run(input, size)]++;
	}
	printf("# %u completed, %u channel errors, %u still running\n", outcomes[0], outcomes[1],
	       outcomes[2]);
	/* both paths were exercised, and the GPU still works */
	assert_true(outcomes[FUZZ_COMPLETED] > 0);
	assert_true(outcomes[FUZZ_CHANNEL_ERROR] > 0);
	assert_true(fuzz_pushbuffer_gpu_alive());
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_replay),
		cmocka_unit_test(test_random_pushbuffers),
	};
	int failed;

	corpus_dir = argc > 1 ? argv[1] : NULL;
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	fuzz_pushbuffer_shutdown();
	return failed;
}
