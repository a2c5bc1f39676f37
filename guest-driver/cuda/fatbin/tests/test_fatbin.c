// SPDX-License-Identifier: MIT
/*
 * test_fatbin.c - vgpu_fatbin_ptx on nvcc's fatbins (samples/, made by
 * samples/regenerate.sh), on synthesized ones (lz4 entries, which CUDA 13
 * no longer makes; the choice among entries; the wrapper), and on
 * truncated and randomly corrupted images.
 *
 * The randomized test takes its seed from VGPU_TEST_SEED (default: the
 * time) and prints it on failure.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <lz4.h>
#include <zstd.h>

#include "fatbin.h"
#include "fuzz_fatbin.h"

struct blob {
	unsigned char *data;
	size_t size;
};

static struct blob load(const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", FATBIN_SAMPLES_DIR, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	struct blob b = { 0 };
	size_t cap = 0;
	for (;;) {
		if (b.size == cap) {
			cap = cap ? 2 * cap : 4096;
			b.data = realloc(b.data, cap);
			assert_non_null(b.data);
		}
		size_t n = fread(b.data + b.size, 1, cap - b.size, f);
		if (!n)
			break;
		b.size += n;
	}
	fclose(f);
	assert_true(b.size > 0);
	return b;
}

/* The whitespace-separated tokens of PTX without its // comments, joined by
 * one space: nvcc strips comments and respaces the PTX it puts in a fatbin. */
static char *tokens(const char *ptx)
{
	size_t n = strlen(ptx);
	char *out = malloc(n + 1), *o = out;
	assert_non_null(out);
	for (const char *p = ptx; *p;) {
		if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				p++;
		} else if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
			if (o != out && o[-1] != ' ')
				*o++ = ' ';
			p++;
		} else {
			*o++ = *p++;
		}
	}
	if (o != out && o[-1] == ' ')
		o--;
	*o = '\0';
	return out;
}

static char *text_of(const char *name)
{
	struct blob b = load(name);
	char *s = malloc(b.size + 1);
	assert_non_null(s);
	memcpy(s, b.data, b.size);
	s[b.size] = '\0';
	free(b.data);
	return s;
}

/* Extract from a copy of exactly `limit` bytes (ASan sees reads past it). */
static int extract(const void *image, size_t limit, char **ptx, size_t *len, char *why,
		   size_t why_len)
{
	unsigned char *copy = malloc(limit ? limit : 1);
	assert_non_null(copy);
	memcpy(copy, image, limit);
	int rc = vgpu_fatbin_ptx(copy, limit, ptx, len, why, why_len);
	free(copy);
	return rc;
}

static void expect_sample_ptx(const char *fatbin, const char *expected_ptx,
			      const char *target)
{
	struct blob b = load(fatbin);
	char why[256], *ptx;
	size_t len;
	int rc = extract(b.data, b.size, &ptx, &len, why, sizeof(why));
	if (rc)
		fail_msg("%s: %d %s", fatbin, rc, why);
	assert_int_equal(strlen(ptx), len);
	assert_non_null(strstr(ptx, target));
	char *want = text_of(expected_ptx), *a = tokens(ptx), *e = tokens(want);
	assert_string_equal(a, e);
	free(a);
	free(e);
	free(want);
	free(ptx);

	/* an unknown bound reads only what the header declares */
	rc = vgpu_fatbin_ptx(b.data, SIZE_MAX, &ptx, &len, why, sizeof(why));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(ptx, target));
	free(ptx);
	free(b.data);
}

static void test_ptx_uncompressed(void **state)
{
	(void)state;
	expect_sample_ptx("ptx_plain.fatbin", "compute_80.ptx", ".target sm_80");
}

static void test_ptx_zstd(void **state)
{
	(void)state;
	expect_sample_ptx("ptx_zstd.fatbin", "compute_90.ptx", ".target sm_90");
}

/* SASS sm_90 + PTX compute_75, compute_90, compute_100: compute_90 runs. */
static void test_sass_and_ptx_picks_newest_runnable(void **state)
{
	(void)state;
	expect_sample_ptx("sass_ptx.fatbin", "compute_90.ptx", ".target sm_90");
}

static void test_sass_only_says_rebuild(void **state)
{
	(void)state;
	struct blob b = load("sass_only.fatbin");
	char why[256], *ptx = (char *)1;
	size_t len = 1;
	assert_int_equal(extract(b.data, b.size, &ptx, &len, why, sizeof(why)), -ENOENT);
	assert_null(ptx);
	assert_int_equal(len, 0);
	assert_string_equal(why, "the fatbin carries only machine code for sm_90; rebuild"
			    " with -gencode arch=compute_90,code=compute_90");
	/* a short message buffer is truncated, still terminated */
	char tiny[8];
	assert_int_equal(extract(b.data, b.size, &ptx, &len, tiny, sizeof(tiny)), -ENOENT);
	assert_string_equal(tiny, "the fat");
	assert_int_equal(extract(b.data, b.size, &ptx, &len, NULL, 0), -ENOENT);
	free(b.data);
}

static void test_ptx_for_later_gpu_only(void **state)
{
	(void)state;
	struct blob b = load("ptx_future.fatbin");
	char why[256], *ptx;
	size_t len;
	assert_int_equal(extract(b.data, b.size, &ptx, &len, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "PTX only for compute_100"));
	free(b.data);
}

static void test_is_fatbin(void **state)
{
	(void)state;
	struct blob b = load("ptx_zstd.fatbin");
	assert_true(vgpu_fatbin_is_fatbin(b.data, b.size));
	assert_false(vgpu_fatbin_is_fatbin(b.data, 3));
	assert_false(vgpu_fatbin_is_fatbin(NULL, 100));
	assert_false(vgpu_fatbin_is_fatbin(".version 8.0\n", 13));
	uint32_t wrapper = VGPU_FATBIN_WRAPPER_MAGIC;
	assert_true(vgpu_fatbin_is_fatbin(&wrapper, sizeof(wrapper)));
	free(b.data);
}

/* ---- synthesized fatbins ---- */

struct synth_entry {
	uint16_t kind;
	uint32_t arch;
	uint16_t isa_major, isa_minor;
	uint64_t flags;
	const void *payload;
	uint32_t payload_size;    /* bytes of payload (padded to 8) */
	uint32_t compressed_size;
	uint64_t uncompressed_size;
};

static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* A fat binary of these entries, laid out as nvcc does (80-byte entry
 * headers, payloads padded to 8 bytes). */
static struct blob synth(const struct synth_entry *e, size_t n)
{
	size_t size = 16;
	for (size_t i = 0; i < n; i++)
		size += 80 + ((e[i].payload_size + 7u) & ~7u);
	struct blob b = { calloc(1, size), size };
	assert_non_null(b.data);
	put32(b.data, VGPU_FATBIN_MAGIC);
	put16(b.data + 4, 1);
	put16(b.data + 6, 16);
	put64(b.data + 8, size - 16);
	size_t at = 16;
	for (size_t i = 0; i < n; i++) {
		unsigned char *h = b.data + at;
		uint32_t padded = (e[i].payload_size + 7u) & ~7u;
		put16(h, e[i].kind);
		put16(h + 2, 0x0101);
		put32(h + 4, 80);
		put64(h + 8, padded);
		put32(h + 16, e[i].compressed_size);
		put32(h + 20, 0x40);
		put16(h + 24, e[i].isa_minor);
		put16(h + 26, e[i].isa_major);
		put32(h + 28, e[i].arch);
		put64(h + 40, e[i].flags);
		put64(h + 56, e[i].uncompressed_size);
		memcpy(h + 80, e[i].payload, e[i].payload_size);
		at += 80 + padded;
	}
	return b;
}

static const char ptx90_v85[] = ".version 8.5\n.target sm_90\n.address_size 64\n";
static const char ptx90_v90[] = ".version 9.0\n.target sm_90\n.address_size 64\n";
static const char ptx90_v90b[] = ".version 9.0\n.target sm_90\n.address_size 64\n// b\n";
static const char ptx86[] = ".version 9.0\n.target sm_86\n.address_size 64\n";
static const char ptx52[] = ".version 7.0\n.target sm_52\n.address_size 64\n";

#define PLAIN(arch_, maj, min, text) \
	{ .kind = 1, .arch = (arch_), .isa_major = (maj), .isa_minor = (min), \
	  .flags = 0x11, .payload = (text), .payload_size = sizeof(text) }

static char *extract_ok(const struct blob *b)
{
	char why[256], *ptx;
	size_t len;
	int rc = extract(b->data, b->size, &ptx, &len, why, sizeof(why));
	if (rc)
		fail_msg("%d %s", rc, why);
	return ptx;
}

static void test_choice_among_entries(void **state)
{
	(void)state;
	const char elf[] = "\177ELF not really";
	struct synth_entry e[] = {
		PLAIN(52, 7, 0, ptx52),
		PLAIN(90, 9, 0, ptx90_v90),
		{ .kind = 2, .arch = 90, .isa_major = 1, .isa_minor = 8, .flags = 0x11,
		  .payload = elf, .payload_size = sizeof(elf) },
		PLAIN(90, 8, 5, ptx90_v85),
		PLAIN(86, 9, 0, ptx86),
	};
	struct blob b = synth(e, 5);
	char *ptx = extract_ok(&b);
	assert_string_equal(ptx, ptx90_v90); /* highest arch, newest ISA */
	free(ptx);
	free(b.data);

	/* same arch and ISA: the last one */
	struct synth_entry same[] = { PLAIN(90, 9, 0, ptx90_v90), PLAIN(90, 9, 0, ptx90_v90b) };
	b = synth(same, 2);
	ptx = extract_ok(&b);
	assert_string_equal(ptx, ptx90_v90b);
	free(ptx);
	free(b.data);

	/* below the executor's minimum only: refused, naming it */
	char why[256];
	size_t len;
	b = synth(e, 1);
	assert_int_equal(extract(b.data, b.size, &ptx, &len, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "PTX only for compute_52"));
	free(b.data);

	/* no entry at all */
	b = synth(NULL, 0);
	assert_int_equal(extract(b.data, b.size, &ptx, &len, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, "the fatbin carries no code");
	free(b.data);
}

/* A compressed PTX entry: text compressed with lz4 or zstd. */
static struct blob synth_compressed(const char *text, bool lz4, uint64_t declared_delta,
				    uint64_t extra_flags)
{
	size_t n = strlen(text) + 1; /* nvcc compresses the NUL too */
	size_t cap = lz4 ? (size_t)LZ4_compressBound((int)n) : ZSTD_compressBound(n);
	char *c = malloc(cap);
	assert_non_null(c);
	size_t csize;
	if (lz4) {
		int r = LZ4_compress_default(text, c, (int)n, (int)cap);
		assert_true(r > 0);
		csize = (size_t)r;
	} else {
		csize = ZSTD_compress(c, cap, text, n, 3);
		assert_false(ZSTD_isError(csize));
	}
	struct synth_entry e = {
		.kind = 1, .arch = 90, .isa_major = 9, .isa_minor = 0,
		.flags = 0x11 | (lz4 ? 0x2000 : 0x8000) | extra_flags,
		.payload = c, .payload_size = (uint32_t)csize,
		.compressed_size = (uint32_t)csize,
		.uncompressed_size = n + declared_delta,
	};
	struct blob b = synth(&e, 1);
	free(c);
	return b;
}

static void test_lz4_and_zstd_entries(void **state)
{
	(void)state;
	char *text = text_of("compute_90.ptx");
	for (int lz4 = 0; lz4 < 2; lz4++) {
		struct blob b = synth_compressed(text, lz4, 0, 0);
		char *ptx = extract_ok(&b);
		assert_string_equal(ptx, text);
		free(ptx);
		free(b.data);

		/* a declared size that is not what decompresses: malformed */
		char why[256];
		size_t len;
		for (int d = -1; d <= 1; d += 2) {
			b = synth_compressed(text, lz4, (uint64_t)(int64_t)d, 0);
			assert_int_equal(extract(b.data, b.size, &ptx, &len, why, sizeof(why)),
					 -EINVAL);
			assert_non_null(strstr(why, "does not decompress"));
			free(b.data);
		}
		/* both compression flags */
		b = synth_compressed(text, lz4, 0, 0xa000);
		assert_int_equal(extract(b.data, b.size, &ptx, &len, why, sizeof(why)), -EINVAL);
		free(b.data);
		/* a size beyond the bound on PTX */
		b = synth_compressed(text, lz4, VGPU_FATBIN_PTX_MAX, 0);
		assert_int_equal(extract(b.data, b.size, &ptx, &len, why, sizeof(why)), -ENOMEM);
		free(b.data);
		/* a compressed size past the payload */
		b = synth_compressed(text, lz4, 0, 0);
		put32(b.data + 16 + 16, (uint32_t)(b.size - 16 - 80 + 8));
		assert_int_equal(extract(b.data, b.size, &ptx, &len, why, sizeof(why)), -EINVAL);
		free(b.data);
	}
	free(text);
}

struct wrapper {
	uint32_t magic, version;
	const void *data;
	const void *filename;
};

static void test_wrapper(void **state)
{
	(void)state;
	struct blob b = load("ptx_zstd.fatbin");
	struct wrapper w = { VGPU_FATBIN_WRAPPER_MAGIC, 1, b.data, NULL };
	char why[256], *ptx;
	size_t len;
	assert_int_equal(extract(&w, sizeof(w), &ptx, &len, why, sizeof(why)), 0);
	assert_non_null(strstr(ptx, ".target sm_90"));
	free(ptx);
	assert_int_equal(vgpu_fatbin_ptx(&w, SIZE_MAX, &ptx, &len, why, sizeof(why)), 0);
	free(ptx);

	/* a wrapper cut before its pointer */
	assert_int_equal(extract(&w, 12, &ptx, &len, why, sizeof(why)), -EINVAL);
	struct wrapper bad = w;
	bad.version = 7;
	assert_int_equal(extract(&bad, sizeof(bad), &ptx, &len, why, sizeof(why)), -EINVAL);
	bad = w;
	bad.data = NULL;
	assert_int_equal(extract(&bad, sizeof(bad), &ptx, &len, why, sizeof(why)), -EINVAL);
	/* a wrapper pointing at a wrapper */
	bad = w;
	bad.data = &w;
	assert_int_equal(extract(&bad, sizeof(bad), &ptx, &len, why, sizeof(why)), -EINVAL);
	free(b.data);
}

static void test_bad_headers(void **state)
{
	(void)state;
	struct blob b = load("ptx_plain.fatbin");
	char why[256], *ptx;
	size_t len;
	unsigned char *c = malloc(b.size);
	assert_non_null(c);
	struct {
		size_t at;
		unsigned width;
		uint64_t value;
	} cases[] = {
		{ 0, 4, 0x1ee55a01 },           /* old-style magic */
		{ 4, 2, 2 },                    /* version */
		{ 6, 2, 24 },                   /* header size */
		{ 8, 8, UINT64_MAX },           /* body size overflows */
		{ 8, 8, UINT64_MAX - 15 },
		{ 8, 8, 8 },                    /* body shorter than an entry */
		{ 16 + 4, 4, 63 },              /* entry header too short */
		{ 16 + 4, 4, UINT32_MAX },      /* entry header past the end */
		{ 16 + 8, 8, UINT64_MAX },      /* payload overflows */
		{ 16 + 8, 8, 8 },               /* entries do not tile the body */
		{ 96, 1, 0 },                   /* empty PTX */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(c, b.data, b.size);
		if (cases[i].width == 1)
			c[cases[i].at] = (unsigned char)cases[i].value;
		else if (cases[i].width == 2)
			put16(c + cases[i].at, (uint16_t)cases[i].value);
		else if (cases[i].width == 4)
			put32(c + cases[i].at, (uint32_t)cases[i].value);
		else
			put64(c + cases[i].at, cases[i].value);
		int rc = extract(c, b.size, &ptx, &len, why, sizeof(why));
		if (rc != -EINVAL)
			fail_msg("case %zu: %d (%s)", i, rc, why);
	}
	free(c);
	free(b.data);
}

static const char *const samples[] = {
	"ptx_plain.fatbin", "ptx_zstd.fatbin", "sass_ptx.fatbin", "sass_only.fatbin",
	"ptx_future.fatbin",
};

/* Every prefix of every sample is refused as malformed, read within bounds. */
static void test_truncated(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof(samples) / sizeof(samples[0]); s++) {
		struct blob b = load(samples[s]);
		for (size_t limit = 0; limit < b.size; limit++) {
			int rc = fuzz_fatbin_run(b.data, limit);
			if (rc != -EINVAL)
				fail_msg("%s cut to %zu bytes: %d", samples[s], limit, rc);
		}
		int whole = fuzz_fatbin_run(b.data, b.size);
		assert_true(whole == 0 || whole == -ENOENT);
		free(b.data);
	}
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

/* Random corruption of the samples: bytes flipped, header fields set to
 * boundary values, cut, never a crash or a broken promise (fuzz_fatbin.h
 * aborts on one; the seed is printed first, so it is in the log). */
static void test_random_corruption(void **state)
{
	(void)state;
	const char *env = getenv("VGPU_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	fprintf(stderr, "test_random_corruption: seed %llu (VGPU_TEST_SEED=%llu to"
		" repeat)\n", (unsigned long long)seed, (unsigned long long)seed);
	rng_state = seed * 2 + 1;
	static const uint64_t edges[] = { 0, 1, 7, 8, 15, 16, 63, 64, 79, 80, 0x7fffffff,
					  0xffffffff, UINT64_MAX, UINT64_MAX - 7 };
	enum { NSAMPLES = sizeof(samples) / sizeof(samples[0]) };
	struct blob orig[NSAMPLES];
	for (size_t s = 0; s < NSAMPLES; s++)
		orig[s] = load(samples[s]);
	unsigned counts[3] = { 0 };
	for (unsigned iter = 0; iter < 20000; iter++) {
		const struct blob *o = &orig[rnd() % NSAMPLES];
		struct blob b = { malloc(o->size), o->size };
		assert_non_null(b.data);
		memcpy(b.data, o->data, o->size);
		unsigned edits = 1 + (unsigned)(rnd() % 4);
		for (unsigned k = 0; k < edits; k++) {
			/* mostly in the headers: the first 112 bytes and the
			 * later entry headers of sass_ptx */
			size_t at = rnd() % 2 ? rnd() % (b.size < 112 ? b.size : 112)
					      : rnd() % b.size;
			switch (rnd() % 3) {
			case 0:
				b.data[at] ^= (unsigned char)(1u << (rnd() % 8));
				break;
			case 1:
				b.data[at] = (unsigned char)rnd();
				break;
			default:
				if (at + 8 <= b.size)
					put64(b.data + at, edges[rnd() % (sizeof(edges) /
									sizeof(edges[0]))]);
				break;
			}
		}
		size_t limit = rnd() % 4 ? b.size : (size_t)(rnd() % (b.size + 1));
		int rc = fuzz_fatbin_run(b.data, limit);
		if (rc != 0 && rc != -EINVAL && rc != -ENOENT && rc != -ENOMEM)
			fail_msg("seed %llu iteration %u: %d", (unsigned long long)seed, iter,
				 rc);
		counts[rc == 0 ? 0 : rc == -EINVAL ? 1 : 2]++;
		free(b.data);
	}
	for (size_t s = 0; s < NSAMPLES; s++)
		free(orig[s].data);
	/* the corruption reaches both outcomes */
	if (!counts[0] || !counts[1])
		fail_msg("seed %llu: %u extracted, %u malformed, %u other",
			 (unsigned long long)seed, counts[0], counts[1], counts[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ptx_uncompressed),
		cmocka_unit_test(test_ptx_zstd),
		cmocka_unit_test(test_sass_and_ptx_picks_newest_runnable),
		cmocka_unit_test(test_sass_only_says_rebuild),
		cmocka_unit_test(test_ptx_for_later_gpu_only),
		cmocka_unit_test(test_is_fatbin),
		cmocka_unit_test(test_choice_among_entries),
		cmocka_unit_test(test_lz4_and_zstd_entries),
		cmocka_unit_test(test_wrapper),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_random_corruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
