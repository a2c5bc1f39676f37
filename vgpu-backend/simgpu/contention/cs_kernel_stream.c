// SPDX-License-Identifier: MIT
/* cs_kernel_stream.c - warp tasks of the built-in kernels
 * (see cs_kernel_stream.h). */
#include "cs_kernel_stream.h"

#include <errno.h>
#include <string.h>

#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

/*
 * Warp instructions per task (32 elements), from the loop bodies of
 * gpu_kernels.c, one instruction per ALU op, load or store, plus 2 for the
 * loop counter and address:
 *  FILL           splitmix64: add, shift+mul (index), 3 x (shift, xor), 2 mul;
 *                 store; loop                                            = 14
 *  COPY           load, store, loop                                      =  4
 *  STREAM         load, mul, add, store, loop                            =  6
 *  STENCIL        2 clamps, 5 scratchpad loads, shift (4c), 4 adds, shift
 *                 (/8), store, loop (the row load is one per 32 cells)    = 16
 *  RANDOM_ACCESS  xorshift64 (3 shifts, 3 xors), 64-bit modulo (about 12
 *                 on a GPU without a divider), scale+add, load, xor,
 *                 store, loop                                            = 23
 *  CHECKSUM       load, xor, 64-bit multiply (3), loop                   =  7
 */
static const uint32_t instructions[] = {
	[VGPU_KERNEL_FILL] = 14,   [VGPU_KERNEL_COPY] = 4,
	[VGPU_KERNEL_STREAM] = 6,  [VGPU_KERNEL_STENCIL] = 16,
	[VGPU_KERNEL_RANDOM_ACCESS] = 23, [VGPU_KERNEL_CHECKSUM] = 7,
};

static const uint32_t arg_counts[] = {
	[VGPU_KERNEL_FILL] = 3,    [VGPU_KERNEL_COPY] = 3,
	[VGPU_KERNEL_STREAM] = 3,  [VGPU_KERNEL_STENCIL] = 4,
	[VGPU_KERNEL_RANDOM_ACCESS] = 4, [VGPU_KERNEL_CHECKSUM] = 3,
};

#define VA_LIMIT (UINT64_C(1) << 40)
#define KERNEL_COUNT (sizeof(arg_counts) / sizeof(arg_counts[0]))

static bool range_ok(uint64_t va, uint64_t bytes)
{
	return bytes != 0 && va < VA_LIMIT && bytes <= VA_LIMIT - va;
}

static bool words_ok(uint64_t va, uint64_t bytes)
{
	return range_ok(va, bytes) && va % 8 == 0 && bytes % 8 == 0;
}

int cs_kernel_stream_init(struct cs_kernel_stream *s, uint32_t kernel, const uint64_t *args,
                          uint32_t nargs)
{
	const uint64_t *a = args;

	if (kernel == 0 || kernel >= KERNEL_COUNT || nargs != arg_counts[kernel])
		return -EINVAL;
	switch (kernel) {
	case VGPU_KERNEL_FILL:
		if (!words_ok(a[0], a[1]))
			return -EINVAL;
		break;
	case VGPU_KERNEL_COPY:
		if (!range_ok(a[0], a[2]) || !range_ok(a[1], a[2]))
			return -EINVAL;
		break;
	case VGPU_KERNEL_STREAM:
		if (!words_ok(a[0], a[1]) || a[2] == 0)
			return -EINVAL;
		break;
	case VGPU_KERNEL_STENCIL: {
		uint64_t total;

		if (a[2] == 0 || a[2] > VGPU_STENCIL_MAX_WIDTH || a[3] == 0 ||
		    a[3] > VA_LIMIT / (a[2] * 4))
			return -EINVAL;
		total = a[2] * 4 * a[3];
		if (a[0] % 4 || a[1] % 4 || !range_ok(a[0], total) || !range_ok(a[1], total) ||
		    (a[0] < a[1] + total && a[1] < a[0] + total))
			return -EINVAL;
		break;
	}
	case VGPU_KERNEL_RANDOM_ACCESS:
		if (!words_ok(a[0], a[1]) || a[2] == 0)
			return -EINVAL;
		break;
	case VGPU_KERNEL_CHECKSUM:
		if (!words_ok(a[0], a[1]) || !words_ok(a[2], 8))
			return -EINVAL;
		break;
	}
	memset(s, 0, sizeof(*s));
	s->kernel = kernel;
	memcpy(s->args, args, nargs * sizeof(*args));
	cs_kernel_stream_restart(s);
	return 0;
}

void cs_kernel_stream_restart(struct cs_kernel_stream *s)
{
	s->pass = s->offset = s->done = 0;
	s->finished = false;
	s->state = s->args[3] ? s->args[3] : VGPU_RANDOM_DEFAULT_SEED;
}

/* Appends the lines [va, va + bytes) touches. */
static void add_lines(uint64_t *list, uint32_t *n, uint64_t va, uint64_t bytes)
{
	uint64_t line = va / CS_LINE_BYTES, last = (va + bytes - 1) / CS_LINE_BYTES;

	for (; line <= last && *n < CS_TASK_MAX_LINES; line++)
		list[(*n)++] = line * CS_LINE_BYTES;
}

/* The next chunk of a linear sweep of bytes, chunk bytes at a time. */
static uint64_t sweep(struct cs_kernel_stream *s, uint64_t bytes, uint64_t chunk)
{
	uint64_t n = bytes - s->offset;

	if (n > chunk)
		n = chunk;
	return n;
}

bool cs_kernel_stream_next(struct cs_kernel_stream *s, struct cs_task *t)
{
	const uint64_t *a = s->args;
	uint64_t chunk = CS_WARP_LANES * 8, n;

	if (s->finished)
		return false;
	t->reads = t->writes = 0;
	t->instructions = instructions[s->kernel];
	switch (s->kernel) {
	case VGPU_KERNEL_FILL: /* FILL(dst, bytes, seed) */
		n = sweep(s, a[1], chunk);
		add_lines(t->write_va, &t->writes, a[0] + s->offset, n);
		s->offset += n;
		s->finished = s->offset == a[1];
		return true;
	case VGPU_KERNEL_COPY: /* COPY(dst, src, bytes) */
		n = sweep(s, a[2], chunk);
		add_lines(t->read_va, &t->reads, a[1] + s->offset, n);
		add_lines(t->write_va, &t->writes, a[0] + s->offset, n);
		s->offset += n;
		s->finished = s->offset == a[2];
		return true;
	case VGPU_KERNEL_STREAM: /* STREAM(buffer, bytes, passes) */
		n = sweep(s, a[1], chunk);
		add_lines(t->read_va, &t->reads, a[0] + s->offset, n);
		add_lines(t->write_va, &t->writes, a[0] + s->offset, n);
		s->offset += n;
		if (s->offset == a[1]) {
			s->offset = 0;
			s->finished = ++s->pass == a[2];
		}
		return true;
	case VGPU_KERNEL_STENCIL: { /* STENCIL(in, out, width, height) */
		uint64_t row_bytes = a[2] * 4, y = s->pass;

		/* row y: read input row y + 1 (row 0 too for y = 0), write output
		 * row y, 32 cells per task */
		n = sweep(s, row_bytes, CS_WARP_LANES * 4);
		if (y == 0)
			add_lines(t->read_va, &t->reads, a[0] + s->offset, n);
		if (y + 1 < a[3])
			add_lines(t->read_va, &t->reads, a[0] + (y + 1) * row_bytes + s->offset, n);
		add_lines(t->write_va, &t->writes, a[1] + y * row_bytes + s->offset, n);
		s->offset += n;
		if (s->offset == row_bytes) {
			s->offset = 0;
			s->finished = ++s->pass == a[3];
		}
		return true;
	}
	case VGPU_KERNEL_RANDOM_ACCESS: { /* RANDOM_ACCESS(table, bytes, updates, seed) */
		uint64_t words = a[1] / 8, i;

		for (i = 0; i < CS_WARP_LANES && s->done < a[2]; i++, s->done++) {
			uint64_t key = vgpu_xorshift64(&s->state);
			uint64_t va = a[0] + (key % words) * 8;

			add_lines(t->read_va, &t->reads, va, 8);
			add_lines(t->write_va, &t->writes, va, 8);
		}
		s->finished = s->done == a[2];
		return true;
	}
	case VGPU_KERNEL_CHECKSUM: /* CHECKSUM(src, bytes, result) */
		if (s->offset == a[1]) {
			t->instructions = 1;
			add_lines(t->write_va, &t->writes, a[2], 8);
			s->finished = true;
			return true;
		}
		n = sweep(s, a[1], chunk);
		add_lines(t->read_va, &t->reads, a[0] + s->offset, n);
		s->offset += n;
		return true;
	}
	return false;
}

static const char *const names[] = {
	[VGPU_KERNEL_FILL] = "fill",       [VGPU_KERNEL_COPY] = "copy",
	[VGPU_KERNEL_STREAM] = "stream",   [VGPU_KERNEL_STENCIL] = "stencil",
	[VGPU_KERNEL_RANDOM_ACCESS] = "gups", [VGPU_KERNEL_CHECKSUM] = "checksum",
};

uint32_t cs_kernel_from_name(const char *name)
{
	uint32_t k;

	if (strcmp(name, "random_access") == 0)
		return VGPU_KERNEL_RANDOM_ACCESS;
	for (k = 1; k < KERNEL_COUNT; k++)
		if (names[k] && strcmp(name, names[k]) == 0)
			return k;
	return 0;
}

const char *cs_kernel_name(uint32_t kernel)
{
	return kernel > 0 && kernel < KERNEL_COUNT ? names[kernel] : "?";
}
