// SPDX-License-Identifier: MIT
/*
 * ptx_check.c - tests/ptx/modules.ptx through the runtime, checked against
 * the CPU (see ptx_check.h).
 */
#include "ptx_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/abi/commands.h"
#include "vgpu_compat.h"

/* What tests/ptx/modules.cu declares. */
#define MODULE_BIAS 7u
#define MODULE_SCALE 3u
#define BLOCK_THREADS 256u
#define SUM_BLOCKS 64u
/* Host memory per upload or download call. */
#define CHUNK_BYTES (1u << 20)
#define MAX_PARAM_BYTES 64u

struct ptx_run {
	struct vgpu_guest_device *dev;
	struct vgpu_channel *ch;
	struct vgpu_guest_module *module;
	const struct vgpu_guest_function *vadd, *scale_bias, *sum;
	const struct ptx_check_options *o;
	struct ptx_check_result *r;
	struct vgpu_guest_buffer *buffers; /* 3 per group, then the sums */
	uint64_t buffer_count;
	uint32_t *chunk;
};

static int fail(struct ptx_run *p, int err, const char *fmt, ...)
{
	const char *why = p->dev ? vgpu_device_last_error(p->dev) : "";
	va_list args;
	int len;

	va_start(args, fmt);
	len = vsnprintf(p->r->message, sizeof(p->r->message), fmt, args);
	va_end(args);
	if (len >= 0 && (size_t)len < sizeof(p->r->message))
		snprintf(p->r->message + len, sizeof(p->r->message) - (size_t)len, ": %s%s%s",
		         strerror(-err), *why ? "; " : "", why);
	return err;
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Word i of input which (0: a, 1: b) of group g. */
static uint32_t input_word(uint64_t seed, uint64_t g, uint32_t which, uint64_t i)
{
	return (uint32_t)mix64(seed ^ mix64((g << 1 | which) + 1) ^ (i * 0x2545f4914f6cdd1dull));
}

/* The CPU's c[i] of group g. */
static uint32_t expected_word(const struct ptx_check_options *o, uint64_t g, uint64_t i)
{
	uint32_t c = input_word(o->seed, g, 0, i) + input_word(o->seed, g, 1, i);

	for (uint32_t k = 0; k < o->iterations; k++)
		c = c * MODULE_SCALE + MODULE_BIAS;
	return c;
}

/* The parameter block of f from values (one per parameter, 4 or 8 bytes). */
static int pack_params(const struct vgpu_guest_function *f, const uint64_t *values,
                       uint32_t count, uint8_t *block)
{
	if (f->param_count != count || f->param_bytes > MAX_PARAM_BYTES)
		return -EINVAL;
	memset(block, 0, f->param_bytes);
	for (uint32_t i = 0; i < count; i++) {
		const struct vgpu_module_param *param = &f->params[i];
		uint32_t word = (uint32_t)values[i];

		if ((param->size != 4 && param->size != 8) ||
		    param->offset > f->param_bytes - param->size)
			return -EINVAL;
		/* Little-endian, as the GPU reads it. */
		memcpy(block + param->offset, param->size == 4 ? (const void *)&word :
		                                                 (const void *)&values[i],
		       param->size);
	}
	return 0;
}

static int launch(struct ptx_run *p, const struct vgpu_guest_function *f, uint32_t blocks,
                  const uint64_t *values, uint32_t count)
{
	uint32_t threads = BLOCK_THREADS;
	struct vgpu_launch_dims dims = { .grid = { blocks, 1, 1 } };
	uint8_t block[MAX_PARAM_BYTES];
	uint32_t *words, used;
	int ret;

	if (f->max_threads_per_block && f->max_threads_per_block < threads)
		threads = f->max_threads_per_block;
	dims.block[0] = threads;
	dims.block[1] = dims.block[2] = 1;
	if (threads != BLOCK_THREADS)
		return fail(p, -EINVAL, "%s allows %u threads per block, the program needs %u",
		            f->name, threads, BLOCK_THREADS);
	ret = pack_params(f, values, count, block);
	if (ret)
		return fail(p, ret, "%s: %u parameters of %u bytes, not the %u of modules.cu",
		            f->name, f->param_count, f->param_bytes, count);
	ret = vgpu_channel_begin(p->ch, vgpu_launch_function_words(f->param_bytes), &words);
	if (ret)
		return fail(p, ret, "no room in the channel for a launch of %s", f->name);
	used = vgpu_push_launch_function(words, p->r->module, f->index, &dims, block,
	                                 f->param_bytes);
	ret = vgpu_channel_submit(p->ch, used, 0, NULL);
	if (ret)
		return fail(p, ret, "submitting a launch of %s", f->name);
	p->r->launches++;
	return 0;
}

static uint32_t blocks_for(uint64_t elements)
{
	return (uint32_t)((elements + BLOCK_THREADS - 1) / BLOCK_THREADS);
}

static int upload_inputs(struct ptx_run *p, uint64_t g)
{
	uint64_t words = p->o->buffer_bytes / 4, chunk_words = CHUNK_BYTES / 4;
	int ret;

	for (uint32_t which = 0; which < 2; which++) {
		const struct vgpu_guest_buffer *buf = &p->buffers[3 * g + which];

		for (uint64_t i = 0; i < words; i += chunk_words) {
			uint64_t n = words - i < chunk_words ? words - i : chunk_words;

			for (uint64_t k = 0; k < n; k++)
				p->chunk[k] = input_word(p->o->seed, g, which, i + k);
			ret = vgpu_channel_upload(p->ch, buf->gpu_va + i * 4, p->chunk, n * 4, NULL);
			if (ret)
				return fail(p, ret, "uploading input %c of group %llu", 'a' + which,
				            (unsigned long long)g);
			p->r->uploaded_bytes += n * 4;
		}
	}
	return 0;
}

/* Everything the GPU does for group g, in channel order. */
static int run_group(struct ptx_run *p, uint64_t g)
{
	const struct vgpu_guest_buffer *a = &p->buffers[3 * g], *b = a + 1, *c = a + 2;
	const struct vgpu_guest_buffer *sums = &p->buffers[p->buffer_count - 1];
	uint64_t n = p->o->buffer_bytes / 4, zero = 0;
	int ret;

	ret = upload_inputs(p, g);
	if (ret)
		return ret;
	ret = vgpu_channel_upload(p->ch, sums->gpu_va + 8 * g, &zero, sizeof(zero), NULL);
	if (ret)
		return fail(p, ret, "clearing the sum of group %llu", (unsigned long long)g);
	ret = launch(p, p->vadd, blocks_for(n),
	             (const uint64_t[]){ a->gpu_va, b->gpu_va, c->gpu_va, n }, 4);
	for (uint32_t k = 0; !ret && k < p->o->iterations; k++)
		ret = launch(p, p->scale_bias, blocks_for(n), (const uint64_t[]){ c->gpu_va, n }, 2);
	if (!ret)
		ret = launch(p, p->sum, SUM_BLOCKS,
		             (const uint64_t[]){ c->gpu_va, n, sums->gpu_va + 8 * g }, 3);
	return ret;
}

static int verify_group(struct ptx_run *p, uint64_t g)
{
	const struct vgpu_guest_buffer *c = &p->buffers[3 * g + 2];
	const struct vgpu_guest_buffer *sums = &p->buffers[p->buffer_count - 1];
	uint64_t words = p->o->buffer_bytes / 4, chunk_words = CHUNK_BYTES / 4;
	uint64_t sum = 0, gpu_sum;
	int ret;

	for (uint64_t i = 0; i < words; i += chunk_words) {
		uint64_t n = words - i < chunk_words ? words - i : chunk_words;

		ret = vgpu_channel_download(p->ch, p->chunk, c->gpu_va + i * 4, n * 4);
		if (ret)
			return fail(p, ret, "downloading c of group %llu", (unsigned long long)g);
		p->r->downloaded_bytes += n * 4;
		for (uint64_t k = 0; k < n; k++) {
			uint32_t want = expected_word(p->o, g, i + k);

			sum += want;
			if (p->chunk[k] != want && !p->r->mismatches++)
				snprintf(p->r->message, sizeof(p->r->message),
				         "group %llu word %llu: GPU 0x%08x, CPU 0x%08x",
				         (unsigned long long)g, (unsigned long long)(i + k),
				         p->chunk[k], want);
		}
	}
	ret = vgpu_channel_download(p->ch, &gpu_sum, sums->gpu_va + 8 * g, sizeof(gpu_sum));
	if (ret)
		return fail(p, ret, "downloading the sum of group %llu", (unsigned long long)g);
	p->r->downloaded_bytes += sizeof(gpu_sum);
	if (gpu_sum != sum && !p->r->sum_mismatches++ && !p->r->mismatches)
		snprintf(p->r->message, sizeof(p->r->message),
		         "group %llu: sum_u32 says %llu, the CPU %llu", (unsigned long long)g,
		         (unsigned long long)gpu_sum, (unsigned long long)sum);
	return 0;
}

/* bias and scale as declared, launches = the scale_bias launches made. */
static int verify_variables(struct ptx_run *p, uint64_t scale_bias_launches)
{
	const struct vgpu_guest_variable *bias = vgpu_module_variable(p->module, "bias");
	const struct vgpu_guest_variable *scale = vgpu_module_variable(p->module, "scale");
	const struct vgpu_guest_variable *launches = vgpu_module_variable(p->module, "launches");
	uint32_t bias_value = 0, scale_value = 0;
	uint64_t launches_value = 0;
	int ret;

	if (!bias || !scale || !launches || bias->bytes < 4 || scale->bytes < 4 ||
	    launches->bytes < 8)
		return fail(p, -EINVAL, "the module lacks its variables bias, scale, launches");
	ret = vgpu_channel_download(p->ch, &bias_value, bias->gpu_va, 4);
	if (!ret)
		ret = vgpu_channel_download(p->ch, &scale_value, scale->gpu_va, 4);
	if (!ret)
		ret = vgpu_channel_download(p->ch, &launches_value, launches->gpu_va, 8);
	if (ret)
		return fail(p, ret, "downloading the module's variables");
	p->r->downloaded_bytes += 16;
	p->r->variables_ok = bias_value == MODULE_BIAS && scale_value == MODULE_SCALE &&
	                     launches_value == scale_bias_launches;
	if (!p->r->variables_ok && !p->r->mismatches && !p->r->sum_mismatches)
		snprintf(p->r->message, sizeof(p->r->message),
		         "variables: bias %u (want %u), scale %u (want %u), launches %llu (want %llu)",
		         bias_value, MODULE_BIAS, scale_value, MODULE_SCALE,
		         (unsigned long long)launches_value,
		         (unsigned long long)scale_bias_launches);
	return 0;
}

/* A malformed image must be refused (-EINVAL), and nothing loaded. */
static int check_bad_image(struct ptx_run *p)
{
	static const char bad[] = ".version 9.0\n.target sm_90\n.address_size 64\n"
	                          ".visible .entry broken(\n{\n\tno.such.instruction;\n";
	struct vgpu_guest_module *m = NULL;
	int ret = vgpu_module_load(p->dev, p->ch, bad, sizeof(bad), &m);

	if (ret == 0) {
		vgpu_module_unload(p->dev, m);
		return fail(p, -EPROTO, "a malformed module was loaded");
	}
	p->r->bad_image_refused = ret == -EINVAL;
	if (!p->r->bad_image_refused)
		return fail(p, ret, "a malformed module was refused with %d, not -EINVAL", ret);
	return 0;
}

static int prepare(struct ptx_run *p)
{
	const struct ptx_check_options *o = p->o;
	struct ptx_check_result *r = p->r;
	int ret;

	ret = vgpu_channel_create(p->dev, 0, &p->ch);
	if (ret)
		return fail(p, ret, "creating a channel");
	ret = vgpu_module_load(p->dev, p->ch, o->image, o->image_bytes, &p->module);
	if (ret)
		return fail(p, ret, "loading the module (%zu bytes of PTX)", o->image_bytes);
	r->module = p->module->handle;
	r->function_count = p->module->function_count;
	r->variable_count = p->module->variable_count;
	p->vadd = vgpu_module_function(p->module, "vadd_u32");
	p->scale_bias = vgpu_module_function(p->module, "scale_bias");
	p->sum = vgpu_module_function(p->module, "sum_u32");
	if (!p->vadd || !p->scale_bias || !p->sum)
		return fail(p, -EINVAL, "the module lacks vadd_u32, scale_bias or sum_u32 "
		                        "(is it tests/ptx/modules.ptx?)");

	p->buffer_count = 3 * r->groups + 1;
	p->buffers = calloc(p->buffer_count, sizeof(*p->buffers));
	p->chunk = malloc(CHUNK_BYTES);
	if (!p->buffers || !p->chunk)
		return fail(p, -ENOMEM, "host memory");
	for (uint64_t i = 0; i < p->buffer_count; i++) {
		uint64_t bytes = i + 1 < p->buffer_count ? o->buffer_bytes : 8 * r->groups;

		ret = vgpu_buffer_alloc(p->dev, bytes, o->priority, &p->buffers[i]);
		if (ret) {
			p->buffers[i].bytes = 0;
			return fail(p, ret, "allocating buffer %llu of %llu (%llu bytes)",
			            (unsigned long long)i, (unsigned long long)p->buffer_count,
			            (unsigned long long)bytes);
		}
		r->allocated_bytes += p->buffers[i].bytes;
	}
	return 0;
}

static void cleanup(struct ptx_run *p)
{
	for (uint64_t i = 0; p->buffers && i < p->buffer_count; i++)
		if (p->buffers[i].bytes)
			vgpu_buffer_free(p->dev, &p->buffers[i]);
	if (p->module)
		vgpu_module_unload(p->dev, p->module);
	if (p->ch)
		vgpu_channel_destroy(p->ch);
	free(p->buffers);
	free(p->chunk);
}

int ptx_check_run(struct vgpu_guest_device *dev, const struct ptx_check_options *o,
                  struct ptx_check_result *r)
{
	struct ptx_run p = { .dev = dev, .o = o, .r = r };
	uint64_t start = vgpu_now_ns();
	int ret;

	memset(r, 0, sizeof(*r));
	if (!o->image || !o->image_bytes || o->buffer_bytes < VGPU_PAGE_SIZE ||
	    o->buffer_bytes % 4 || o->buffer_bytes / 4 > INT32_MAX || !o->iterations ||
	    o->priority > VGPU_PRIORITY_MAX)
		return fail(&p, -EINVAL, "bad options");
	r->groups = o->size_bytes / (3 * o->buffer_bytes);
	if (!r->groups)
		r->groups = 1;
	r->elements = r->groups * (o->buffer_bytes / 4);

	ret = prepare(&p);
	for (uint64_t g = 0; !ret && g < r->groups; g++)
		ret = run_group(&p, g);
	if (!ret) {
		ret = vgpu_channel_finish(p.ch, -1);
		if (ret)
			fail(&p, ret, "waiting for the launches");
	}
	if (!ret) {
		struct vgpu_stats_response stats;

		ret = vgpu_device_stats(dev, &stats);
		if (ret)
			fail(&p, ret, "reading the VM's statistics");
		r->vm_allocated_bytes = stats.allocated_bytes;
		r->vm_evicted_bytes = stats.evicted_bytes;
		r->vm_evictions = stats.evictions;
	}
	for (uint64_t g = 0; !ret && g < r->groups; g++)
		ret = verify_group(&p, g);
	if (!ret)
		ret = verify_variables(&p, r->groups * o->iterations);
	if (!ret)
		ret = check_bad_image(&p);
	cleanup(&p);
	r->seconds = (double)(vgpu_now_ns() - start) / 1e9;
	if (!ret && (r->mismatches || r->sum_mismatches || !r->variables_ok))
		ret = -EBADMSG;
	if (!ret)
		snprintf(r->message, sizeof(r->message),
		         "%llu words in %llu groups exact, %llu launches", (unsigned long long)r->elements,
		         (unsigned long long)r->groups, (unsigned long long)r->launches);
	return ret;
}
