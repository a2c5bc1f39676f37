// SPDX-License-Identifier: MIT
/*
 * test_ptx_fuzz_regression.c - the PTX fuzz harness without libFuzzer: every
 * corpus module (tests/ptx/NAME.ptx) as is, then seeded mutations of each
 * (bytes replaced, lines dropped or repeated), loaded and launched with a
 * tight budget; none may crash or hang. SIMGPU_TEST_SEED=n replays a seed.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz_ptx.h"

#define MUTANTS 40

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *t = malloc((size_t)n + 1);
	assert_int_equal(fread(t, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return t;
}

static void test_corpus_and_mutants(void **state)
{
	const char *env = getenv("SIMGPU_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x5eed5eedull;
	printf("seed %llu\n", (unsigned long long)seed);
	DIR *d = opendir(PTX_CORPUS_DIR);
	assert_non_null(d);
	struct dirent *de;
	int files = 0, launched = 0;
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		if (nl < 5 || strcmp(de->d_name + nl - 4, ".ptx"))
			continue;
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", PTX_CORPUS_DIR, de->d_name);
		size_t len;
		char *text = read_all(path, &len);
		launched += fuzz_ptx_run((const uint8_t *)text, len);
		files++;
		char *mut = malloc(2 * len + 1);
		for (int k = 0; k < MUTANTS; k++) {
			uint64_t s = seed ^ ((uint64_t)files << 32) ^ (uint64_t)k;
			next(&s);
			size_t n = len;
			memcpy(mut, text, len);
			unsigned edits = 1 + (unsigned)(next(&s) % 6);
			for (unsigned e = 0; e < edits; e++) {
				size_t at = next(&s) % n;
				switch (next(&s) % 3) {
				case 0:  /* replace a byte */
					mut[at] = "0123456789%._;,{}[]@!-|rdpf \n"[next(&s) % 29];
					break;
				case 1: { /* drop to the end of the line */
					size_t end = at;
					while (end < n && mut[end] != '\n')
						end++;
					memmove(mut + at, mut + end, n - end);
					n -= end - at;
					break;
				}
				default: { /* repeat a chunk */
					size_t c = 1 + next(&s) % 64;
					if (at + c > n || n + c > 2 * len)
						break;
					memmove(mut + at + c, mut + at, n - at);
					n += c;
					break;
				}
				}
				if (n == 0)
					break;
			}
			fuzz_ptx_run((const uint8_t *)mut, n);
		}
		free(mut);
		free(text);
	}
	closedir(d);
	assert_true(files >= 10);
	assert_true(launched >= 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_and_mutants),
	};
	return cmocka_run_group_tests_name("ptx-fuzz-regression", tests, NULL, NULL);
}
