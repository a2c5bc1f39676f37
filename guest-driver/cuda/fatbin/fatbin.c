// SPDX-License-Identifier: MIT
/* fatbin.c - find, decompress and return the PTX of a fat binary (fatbin.h;
 * the layout is described in README.md). */
#include "fatbin.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

/* The fat binary header. */
#define FATBIN_HEADER_SIZE 16u
#define FATBIN_VERSION 1u

/* An entry header (at least this long; its own size field says how long). */
#define ENTRY_HEADER_MIN 64u
#define ENTRY_KIND_PTX 1u
#define ENTRY_FLAG_LZ4 UINT64_C(0x2000)
#define ENTRY_FLAG_ZSTD UINT64_C(0x8000)

/* Offsets of an entry header's fields. */
#define E_KIND 0
#define E_HEADER_SIZE 4
#define E_PAYLOAD_SIZE 8
#define E_COMPRESSED_SIZE 16
#define E_ISA_MINOR 24
#define E_ISA_MAJOR 26
#define E_ARCH 28
#define E_FLAGS 40
#define E_UNCOMPRESSED_SIZE 56

/* The wrapper: int magic, int version, pointer to the fat binary, pointer. */
#define WRAPPER_DATA 8u
#define WRAPPER_SIZE (WRAPPER_DATA + sizeof(void *))

struct entry {
	size_t header;       /* offset of the entry header in the fat binary */
	size_t payload;      /* offset of its payload */
	uint64_t payload_size;
	uint32_t kind, arch, isa; /* isa: major << 16 | minor */
	uint32_t compressed_size;
	uint64_t uncompressed_size;
	uint64_t flags;
};

static uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

__attribute__((format(printf, 4, 5)))
static int fail(char *why, size_t why_len, int err, const char *fmt, ...)
{
	if (why && why_len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

bool vgpu_fatbin_is_fatbin(const void *image, size_t limit)
{
	if (!image || limit < 4)
		return false;
	uint32_t magic = get32(image);
	return magic == VGPU_FATBIN_MAGIC || magic == VGPU_FATBIN_WRAPPER_MAGIC;
}

/* Read the entry at offset `at` of a fat binary of `size` bytes. */
static int read_entry(const unsigned char *fb, size_t size, size_t at, struct entry *e,
		      char *why, size_t why_len)
{
	if (size - at < ENTRY_HEADER_MIN)
		return fail(why, why_len, -EINVAL,
			    "fatbin entry at offset %zu: header truncated", at);
	const unsigned char *h = fb + at;
	uint32_t header_size = get32(h + E_HEADER_SIZE);
	if (header_size < ENTRY_HEADER_MIN || header_size > size - at)
		return fail(why, why_len, -EINVAL,
			    "fatbin entry at offset %zu: bad header size %u", at, header_size);
	e->header = at;
	e->payload = at + header_size;
	e->payload_size = get64(h + E_PAYLOAD_SIZE);
	if (e->payload_size > size - e->payload)
		return fail(why, why_len, -EINVAL,
			    "fatbin entry at offset %zu: payload of %llu bytes past the end",
			    at, (unsigned long long)e->payload_size);
	e->kind = get16(h + E_KIND);
	e->arch = get32(h + E_ARCH);
	e->isa = (uint32_t)get16(h + E_ISA_MAJOR) << 16 | get16(h + E_ISA_MINOR);
	e->compressed_size = get32(h + E_COMPRESSED_SIZE);
	e->uncompressed_size = get64(h + E_UNCOMPRESSED_SIZE);
	e->flags = get64(h + E_FLAGS);
	return 0;
}

/* Whether entry a is a better choice than entry b (NULL: none yet). */
static bool better(const struct entry *a, const struct entry *b)
{
	if (!b)
		return true;
	if (a->arch != b->arch)
		return a->arch > b->arch;
	return a->isa >= b->isa; /* the newest ISA, then the last entry */
}

/* The PTX text of entry e into a malloc'ed string. */
static int entry_text(const unsigned char *fb, const struct entry *e, char **ptx,
		      size_t *ptx_len, char *why, size_t why_len)
{
	const unsigned char *payload = fb + e->payload;
	bool lz4 = e->flags & ENTRY_FLAG_LZ4, zstd = e->flags & ENTRY_FLAG_ZSTD;
	size_t len;
	char *text;

	if (lz4 && zstd)
		return fail(why, why_len, -EINVAL,
			    "fatbin PTX entry for compute_%u: both lz4 and zstd flags set",
			    e->arch);
	if (lz4 || zstd) {
		uint64_t n = e->uncompressed_size;
		if (e->compressed_size > e->payload_size || e->compressed_size == 0)
			return fail(why, why_len, -EINVAL,
				    "fatbin PTX entry for compute_%u: compressed size %u"
				    " outside its payload of %llu bytes", e->arch,
				    e->compressed_size, (unsigned long long)e->payload_size);
		if (n == 0)
			return fail(why, why_len, -EINVAL,
				    "fatbin PTX entry for compute_%u: empty", e->arch);
		if (n > VGPU_FATBIN_PTX_MAX)
			return fail(why, why_len, -ENOMEM,
				    "fatbin PTX entry for compute_%u: %llu bytes of PTX"
				    " (at most %zu)", e->arch, (unsigned long long)n,
				    VGPU_FATBIN_PTX_MAX);
		text = malloc((size_t)n + 1);
		if (!text)
			return fail(why, why_len, -ENOMEM, "out of memory");
		bool ok;
		if (zstd) {
			size_t got = ZSTD_decompress(text, (size_t)n, payload,
						     e->compressed_size);
			ok = !ZSTD_isError(got) && got == n;
		} else {
			/* both sizes are below INT_MAX: VGPU_FATBIN_PTX_MAX,
			 * and compressed_size checked here */
			ok = e->compressed_size <= INT_MAX &&
			     LZ4_decompress_safe((const char *)payload, text,
						 (int)e->compressed_size, (int)n) == (int)n;
		}
		if (!ok) {
			free(text);
			return fail(why, why_len, -EINVAL,
				    "fatbin PTX entry for compute_%u: does not decompress (%s)"
				    " to its declared %llu bytes", e->arch,
				    zstd ? "zstd" : "lz4", (unsigned long long)n);
		}
		text[n] = '\0';
		len = strlen(text); /* the PTX ends at its NUL, if any */
	} else {
		size_t n = (size_t)e->payload_size;
		const unsigned char *nul = memchr(payload, '\0', n);
		len = nul ? (size_t)(nul - payload) : n;
		if (len > VGPU_FATBIN_PTX_MAX)
			return fail(why, why_len, -ENOMEM,
				    "fatbin PTX entry for compute_%u: %zu bytes of PTX"
				    " (at most %zu)", e->arch, len, VGPU_FATBIN_PTX_MAX);
		text = malloc(len + 1);
		if (!text)
			return fail(why, why_len, -ENOMEM, "out of memory");
		memcpy(text, payload, len);
		text[len] = '\0';
	}
	if (len == 0) {
		free(text);
		return fail(why, why_len, -EINVAL, "fatbin PTX entry for compute_%u: empty",
			    e->arch);
	}
	*ptx = text;
	*ptx_len = len;
	return 0;
}

/* "sm_75, sm_90" of the PTX (want_ptx) or machine-code entries, into buf;
 * the highest architecture into *highest. */
static void list_arches(const unsigned char *fb, size_t size, bool want_ptx,
			const char *prefix, char *buf, size_t buf_len, uint32_t *highest)
{
	size_t used = 0;
	struct entry e;
	buf[0] = '\0';
	*highest = 0;
	for (size_t at = FATBIN_HEADER_SIZE; at < size; at = e.payload + e.payload_size) {
		if (read_entry(fb, size, at, &e, NULL, 0))
			break;
		if ((e.kind == ENTRY_KIND_PTX) != want_ptx)
			continue;
		if (e.arch > *highest)
			*highest = e.arch;
		if (used < buf_len) {
			int n = snprintf(buf + used, buf_len - used, "%s%s%u", used ? ", " : "",
					 prefix, e.arch);
			if (n > 0)
				used += (size_t)n;
		}
	}
}

int vgpu_fatbin_ptx(const void *image, size_t limit, char **ptx, size_t *ptx_len,
		    char *why, size_t why_len)
{
	const unsigned char *fb = image;

	*ptx = NULL;
	*ptx_len = 0;
	if (why && why_len)
		why[0] = '\0';
	if (!fb || limit < 4)
		return fail(why, why_len, -EINVAL, "not a fatbin: image too short");

	if (get32(fb) == VGPU_FATBIN_WRAPPER_MAGIC) {
		if (limit < WRAPPER_SIZE)
			return fail(why, why_len, -EINVAL, "fatbin wrapper truncated");
		uint32_t version = get32(fb + 4);
		if (version != 1 && version != 2)
			return fail(why, why_len, -EINVAL,
				    "fatbin wrapper: unknown version %u", version);
		const void *data;
		memcpy(&data, fb + WRAPPER_DATA, sizeof(data));
		if (!data)
			return fail(why, why_len, -EINVAL, "fatbin wrapper: no fatbin");
		fb = data;
		limit = SIZE_MAX; /* the header that follows says the size */
		if (get32(fb) != VGPU_FATBIN_MAGIC)
			return fail(why, why_len, -EINVAL,
				    "fatbin wrapper: its data is not a fatbin (magic %#x)",
				    get32(fb));
	}

	if (get32(fb) != VGPU_FATBIN_MAGIC)
		return fail(why, why_len, -EINVAL, "not a fatbin (magic %#x)", get32(fb));
	if (limit < FATBIN_HEADER_SIZE)
		return fail(why, why_len, -EINVAL, "fatbin header truncated");
	uint16_t version = get16(fb + 4), header_size = get16(fb + 6);
	uint64_t body = get64(fb + 8);
	if (version != FATBIN_VERSION)
		return fail(why, why_len, -EINVAL, "fatbin version %u (expected %u)", version,
			    FATBIN_VERSION);
	if (header_size != FATBIN_HEADER_SIZE)
		return fail(why, why_len, -EINVAL, "fatbin header size %u (expected %u)",
			    header_size, FATBIN_HEADER_SIZE);
	if (body > limit - FATBIN_HEADER_SIZE || body > SIZE_MAX / 2)
		return fail(why, why_len, -EINVAL,
			    "fatbin of %llu bytes is larger than the image (%zu bytes)",
			    (unsigned long long)body, limit);
	size_t size = FATBIN_HEADER_SIZE + (size_t)body;

	/* Walk every entry (they must tile the body) and pick the PTX to run. */
	struct entry e, chosen = { 0 };
	bool have = false, any_ptx = false, any = false;
	for (size_t at = FATBIN_HEADER_SIZE; at < size; at = e.payload + e.payload_size) {
		int rc = read_entry(fb, size, at, &e, why, why_len);
		if (rc)
			return rc;
		any = true;
		if (e.kind != ENTRY_KIND_PTX)
			continue;
		any_ptx = true;
		if (e.arch < VGPU_FATBIN_PTX_ARCH_MIN || e.arch > VGPU_FATBIN_PTX_ARCH_MAX)
			continue;
		if (better(&e, have ? &chosen : NULL)) {
			chosen = e;
			have = true;
		}
	}
	if (have)
		return entry_text(fb, &chosen, ptx, ptx_len, why, why_len);

	char arches[128];
	uint32_t highest;
	if (!any)
		return fail(why, why_len, -ENOENT, "the fatbin carries no code");
	if (any_ptx) {
		list_arches(fb, size, true, "compute_", arches, sizeof(arches),
			    &highest);
		return fail(why, why_len, -ENOENT,
			    "the fatbin carries PTX only for %s, the vGPU runs PTX for"
			    " compute_%u to compute_%u; rebuild with -gencode"
			    " arch=compute_%u,code=compute_%u", arches,
			    VGPU_FATBIN_PTX_ARCH_MIN, VGPU_FATBIN_PTX_ARCH_MAX,
			    VGPU_FATBIN_PTX_ARCH_MAX, VGPU_FATBIN_PTX_ARCH_MAX);
	}
	list_arches(fb, size, false, "sm_", arches, sizeof(arches), &highest);
	uint32_t suggest = highest;
	if (suggest > VGPU_FATBIN_PTX_ARCH_MAX || suggest < VGPU_FATBIN_PTX_ARCH_MIN)
		suggest = VGPU_FATBIN_PTX_ARCH_MAX;
	return fail(why, why_len, -ENOENT,
		    "the fatbin carries only machine code for %s; rebuild with -gencode"
		    " arch=compute_%u,code=compute_%u", arches[0] ? arches : "no architecture",
		    suggest, suggest);
}
