// SPDX-License-Identifier: MIT
/* gpu_kernels.c - built-in kernels on the compute engine (see gpu_kernels.h). */
#include "gpu_kernels.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "simgpu_device.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define VA_LIMIT (UINT64_C(1) << 40)

/* [va, va + bytes) lies inside the GPU's VA space. */
static bool range_ok(uint64_t va, uint64_t bytes)
{
	return bytes != 0 && va < VA_LIMIT && bytes <= VA_LIMIT - va;
}

static bool words_ok(uint64_t va, uint64_t bytes)
{
	return range_ok(va, bytes) && va % 8 == 0 && bytes % 8 == 0;
}

void command_progress_reset(struct command_progress *progress)
{
	uint32_t *rows = progress->rows;
	size_t rows_bytes = progress->rows_bytes;

	memset(progress, 0, sizeof(*progress));
	progress->rows = rows;
	progress->rows_bytes = rows_bytes;
}

void command_progress_release(struct command_progress *progress)
{
	free(progress->rows);
	progress->rows = NULL;
	progress->rows_bytes = 0;
}

/* After a span: more to do and the engine's turn is over. */
static bool must_yield(const struct engine_context *ctx, uint64_t done, uint64_t bytes)
{
	return done < bytes && engine_should_yield(ctx);
}

int gpu_copy(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t dst,
             uint64_t src, uint64_t bytes, uint64_t *done)
{
	while (*done < bytes) {
		struct access_span from, to;
		uint64_t n = 0, left = bytes - *done;
		int ret;

		access_begin(ctx, as);
		ret = access_translate(ctx, as, src + *done, left, ACCESS_READ, false, &from);
		if (ret == 0)
			ret = access_translate(ctx, as, dst + *done, from.bytes, ACCESS_WRITE, false,
			                       &to);
		if (ret == 0) {
			n = to.bytes; /* <= from.bytes */
			memmove(to.host, from.host, n);
			access_charge(ctx, as, from.target, ACCESS_READ, n);
			access_charge(ctx, as, to.target, ACCESS_WRITE, n);
		}
		access_end(ctx, as);
		if (ret)
			return ret;
		*done += n;
		if (must_yield(ctx, *done, bytes))
			return GPU_YIELD;
	}
	return 0;
}

int gpu_memset(struct engine_context *ctx, struct simgpu_address_space *as, uint64_t dst,
               uint32_t pattern, uint64_t bytes, uint64_t *done)
{
	uint8_t pattern_bytes[256 + 4];
	unsigned i;

	for (i = 0; i < sizeof(pattern_bytes); i++)
		pattern_bytes[i] = (uint8_t)(pattern >> (8 * (i % 4)));
	while (*done < bytes) {
		struct access_span span;
		uint64_t filled = 0;
		int ret;

		access_begin(ctx, as);
		ret = access_translate(ctx, as, dst + *done, bytes - *done, ACCESS_WRITE, true,
		                       &span);
		if (ret == 0) {
			unsigned phase = (unsigned)(*done % 4);

			while (filled < span.bytes) {
				uint64_t n = span.bytes - filled;

				if (n > 256)
					n = 256;
				memcpy(span.host + filled, pattern_bytes + phase, n);
				filled += n;
			}
		}
		access_end(ctx, as);
		if (ret)
			return ret;
		*done += span.bytes;
		if (must_yield(ctx, *done, bytes))
			return GPU_YIELD;
	}
	return 0;
}

static int kernel_fill(struct engine_context *ctx, struct simgpu_address_space *as,
                       const uint64_t *args, struct command_progress *p)
{
	uint64_t dst = args[0], bytes = args[1], seed = args[2];

	if (!words_ok(dst, bytes))
		return -EINVAL;
	while (p->done < bytes) {
		struct access_span span;
		int ret;

		access_begin(ctx, as);
		ret = access_translate(ctx, as, dst + p->done, bytes - p->done, ACCESS_WRITE, true,
		                       &span);
		if (ret == 0) {
			uint64_t *words = (uint64_t *)span.host, i;

			for (i = 0; i < span.bytes / 8; i++)
				words[i] = vgpu_fill_word(seed, p->done + i * 8);
		}
		access_end(ctx, as);
		if (ret)
			return ret;
		p->done += span.bytes;
		if (must_yield(ctx, p->done, bytes))
			return GPU_YIELD;
	}
	return 0;
}

static int kernel_copy(struct engine_context *ctx, struct simgpu_address_space *as,
                       const uint64_t *args, struct command_progress *p)
{
	if (!range_ok(args[0], args[2]) || !range_ok(args[1], args[2]))
		return -EINVAL;
	return gpu_copy(ctx, as, args[0], args[1], args[2], &p->done);
}

static int kernel_stream(struct engine_context *ctx, struct simgpu_address_space *as,
                         const uint64_t *args, struct command_progress *p)
{
	uint64_t buffer = args[0], bytes = args[1], passes = args[2];

	if (!words_ok(buffer, bytes) || passes == 0 ||
	    passes > ctx->gpu->config.max_stream_passes)
		return -EINVAL;
	while (p->step < passes) {
		while (p->done < bytes) {
			struct access_span span;
			int ret;

			access_begin(ctx, as);
			ret = access_translate(ctx, as, buffer + p->done, bytes - p->done,
			                       ACCESS_READ_WRITE, true, &span);
			if (ret == 0) {
				uint64_t *words = (uint64_t *)span.host, i;

				for (i = 0; i < span.bytes / 8; i++)
					words[i] = vgpu_stream_word(words[i]);
			}
			access_end(ctx, as);
			if (ret)
				return ret;
			p->done += span.bytes;
			if (p->done == bytes) {
				p->done = 0;
				p->step++;
				if (p->step == passes)
					return 0;
			}
			if (engine_should_yield(ctx))
				return GPU_YIELD;
		}
	}
	return 0;
}

static void stencil_row(const uint32_t *north, const uint32_t *centre, const uint32_t *south,
                        uint32_t *out, uint32_t width)
{
	uint32_t x;

	for (x = 0; x < width; x++) {
		uint64_t west = centre[x > 0 ? x - 1 : x];
		uint64_t east = centre[x + 1 < width ? x + 1 : x];

		out[x] = (uint32_t)((4 * (uint64_t)centre[x] + north[x] + south[x] + west + east) / 8);
	}
}

/*
 * Rows 0..2 of p->rows hold input rows (north and centre are two of them,
 * kept across yields), row 3 the output row. p->step is the next output
 * row; p->done is 1 once row 0 has been read.
 */
static int kernel_stencil(struct engine_context *ctx, struct simgpu_address_space *as,
                          const uint64_t *args, struct command_progress *p)
{
	uint64_t in = args[0], out = args[1], width = args[2], height = args[3];
	uint64_t row_bytes, total;
	uint32_t *output;
	int ret;

	if (width == 0 || width > VGPU_STENCIL_MAX_WIDTH || height == 0 || height > VA_LIMIT)
		return -EINVAL;
	row_bytes = width * 4;
	if (height > VA_LIMIT / row_bytes)
		return -EINVAL;
	total = row_bytes * height;
	if (in % 4 || out % 4 || !range_ok(in, total) || !range_ok(out, total))
		return -EINVAL;
	if (in < out + total && out < in + total)
		return -EINVAL; /* overlapping */
	if (p->rows_bytes < 4 * row_bytes) {
		uint32_t *grown = realloc(p->rows, 4 * row_bytes);

		if (!grown)
			return -EINVAL;
		p->rows = grown;
		p->rows_bytes = 4 * row_bytes;
	}
	output = p->rows + 3 * width;

	if (!p->done) {
		ret = gpu_read(ctx, as, in, p->rows, row_bytes);
		if (ret)
			return ret;
		p->north = p->centre = 0;
		p->done = 1;
	}
	while (p->step < height) {
		uint64_t y = p->step;
		unsigned south = p->centre;

		if (y + 1 < height) {
			/* the row neither north nor centre uses */
			for (south = 0; south < 3; south++)
				if (south != p->north && south != p->centre)
					break;
			ret = gpu_read(ctx, as, in + (y + 1) * row_bytes, p->rows + south * width,
			               row_bytes);
			if (ret)
				return ret;
		}
		stencil_row(p->rows + p->north * width, p->rows + p->centre * width,
		            p->rows + south * width, output, (uint32_t)width);
		ret = gpu_write(ctx, as, out + y * row_bytes, output, row_bytes);
		if (ret)
			return ret;
		p->north = p->centre;
		p->centre = south;
		p->step++;
		if (p->step < height && engine_should_yield(ctx))
			return GPU_YIELD;
	}
	return 0;
}

static int kernel_random_access(struct engine_context *ctx, struct simgpu_address_space *as,
                                const uint64_t *args, struct command_progress *p)
{
	uint64_t table = args[0], bytes = args[1], updates = args[2];
	uint64_t words;

	if (!words_ok(table, bytes) || updates > ctx->gpu->config.max_random_updates)
		return -EINVAL;
	words = bytes / 8;
	if (p->step == 0)
		p->value = args[3] ? args[3] : VGPU_RANDOM_DEFAULT_SEED;
	while (p->step < updates) {
		uint64_t key = vgpu_xorshift64(&p->value);
		uint64_t va = table + (key % words) * 8;
		struct access_span span;
		int ret;

		access_begin(ctx, as);
		ret = access_translate(ctx, as, va, 8, ACCESS_READ_WRITE, true, &span);
		if (ret == 0)
			*(uint64_t *)span.host ^= key;
		access_end(ctx, as);
		if (ret)
			return ret;
		p->step++;
		if (must_yield(ctx, p->step, updates))
			return GPU_YIELD;
	}
	return 0;
}

static int kernel_checksum(struct engine_context *ctx, struct simgpu_address_space *as,
                           const uint64_t *args, struct command_progress *p)
{
	uint64_t src = args[0], bytes = args[1], result = args[2];

	if (!words_ok(src, bytes) || !words_ok(result, 8))
		return -EINVAL;
	if (p->done == 0)
		p->value = VGPU_CHECKSUM_INITIAL;
	while (p->done < bytes) {
		struct access_span span;
		int ret;

		access_begin(ctx, as);
		ret = access_translate(ctx, as, src + p->done, bytes - p->done, ACCESS_READ, true,
		                       &span);
		if (ret == 0) {
			const uint64_t *words = (const uint64_t *)span.host;
			uint64_t i;

			for (i = 0; i < span.bytes / 8; i++)
				p->value = vgpu_checksum_step(p->value, words[i]);
		}
		access_end(ctx, as);
		if (ret)
			return ret;
		p->done += span.bytes;
		if (must_yield(ctx, p->done, bytes))
			return GPU_YIELD;
	}
	return gpu_write(ctx, as, result, &p->value, sizeof(p->value));
}

/* THROTTLE: modeled engine time and nothing else, charged up to the end of
 * the turn at a time (p->done: ns charged so far). */
static int kernel_throttle(struct engine_context *ctx, struct simgpu_address_space *as,
                           const uint64_t *args, struct command_progress *p)
{
	uint64_t duration_ns = args[0], watchdog_ns = ctx->gpu->config.watchdog_ns;

	if (!duration_ns || (watchdog_ns && duration_ns > watchdog_ns))
		return -EINVAL;
	while (p->done < duration_ns) {
		uint64_t ns = duration_ns - p->done;

		if (ctx->yield_at_ps != UINT64_MAX && ctx->yield_at_ps > ctx->charged_ps &&
		    (ctx->yield_at_ps - ctx->charged_ps) / 1000 < ns)
			ns = (ctx->yield_at_ps - ctx->charged_ps + 999) / 1000;
		pthread_mutex_lock(&as->lock);
		as->busy_ps[ctx->engine] += ns * 1000;
		pthread_mutex_unlock(&as->lock);
		ctx->charged_ps += ns * 1000;
		gpu_clock_add(&ctx->gpu->clock, ctx->engine, ns * 1000);
		p->done += ns;
		if (must_yield(ctx, p->done, duration_ns))
			return GPU_YIELD;
	}
	return 0;
}

struct kernel_descriptor {
	uint32_t args;
	int (*run)(struct engine_context *ctx, struct simgpu_address_space *as,
	           const uint64_t *args, struct command_progress *progress);
};

static const struct kernel_descriptor kernels[] = {
	[VGPU_KERNEL_FILL] = { 3, kernel_fill },
	[VGPU_KERNEL_COPY] = { 3, kernel_copy },
	[VGPU_KERNEL_STREAM] = { 3, kernel_stream },
	[VGPU_KERNEL_STENCIL] = { 4, kernel_stencil },
	[VGPU_KERNEL_RANDOM_ACCESS] = { 4, kernel_random_access },
	[VGPU_KERNEL_CHECKSUM] = { 3, kernel_checksum },
	[VGPU_KERNEL_THROTTLE] = { 1, kernel_throttle },
};

int gpu_kernel_launch(struct engine_context *ctx, struct simgpu_address_space *as,
                      uint32_t kernel, const uint64_t *args, uint32_t nargs,
                      struct command_progress *progress)
{
	const struct kernel_descriptor *descriptor;

	if (kernel >= sizeof(kernels) / sizeof(kernels[0]))
		return -EINVAL;
	descriptor = &kernels[kernel];
	if (!descriptor->run || descriptor->args != nargs)
		return -EINVAL;
	return descriptor->run(ctx, as, args, progress);
}
