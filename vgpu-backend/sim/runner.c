// SPDX-License-Identifier: MIT
/* runner.c - executing scenarios, see runner.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"
#include "vgpu/util.h"

#define KERNEL_TIMEOUT_MS 120000
#define STENCIL_WIDTH 1024u /* cells of 4 bytes: one 4 KiB row */

static void say(struct sim_run *run, const struct sim_step *step, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

static void say(struct sim_run *run, const struct sim_step *step, const char *format, ...)
{
	va_list args;

	if (step)
		fprintf(run->log, "%s:%u: ", run->scenario->path, step->line);
	va_start(args, format);
	vfprintf(run->log, format, args);
	va_end(args);
	fputc('\n', run->log);
}

/* A buffer's FILL seed: FNV-1a of "vm/buffer", so contents depend only on
 * the names. */
static uint64_t name_seed(const char *vm, const char *buffer)
{
	uint64_t hash = 0xcbf29ce484222325ull;

	for (const char *c = vm; *c; c++)
		hash = (hash ^ (uint8_t)*c) * 0x100000001b3ull;
	hash = (hash ^ '/') * 0x100000001b3ull;
	for (const char *c = buffer; *c; c++)
		hash = (hash ^ (uint8_t)*c) * 0x100000001b3ull;
	return hash;
}

static struct sim_vm *find_vm(struct sim_run *run, const char *name)
{
	/* The last one with the name: a destroyed VM's name may be reused. */
	for (size_t i = run->vm_count; i-- > 0;)
		if (!strcmp(run->vms[i].name, name) && run->vms[i].vm)
			return &run->vms[i];
	return NULL;
}

static struct sim_buffer *find_buffer(struct sim_vm *vm, const char *name)
{
	for (size_t i = 0; i < vm->buffer_count; i++)
		if (vm->buffers[i].live && !strcmp(vm->buffers[i].name, name))
			return &vm->buffers[i];
	return NULL;
}

static struct sim_buffer *new_buffer(struct sim_vm *vm, const char *name)
{
	for (size_t i = 0; i < vm->buffer_count; i++)
		if (!vm->buffers[i].live)
			return &vm->buffers[i];
	if (vm->buffer_count == vm->buffer_capacity) {
		size_t capacity = vm->buffer_capacity ? 2 * vm->buffer_capacity : 16;
		struct sim_buffer *buffers = realloc(vm->buffers, capacity * sizeof(*buffers));

		if (!buffers)
			return NULL;
		vm->buffers = buffers;
		vm->buffer_capacity = capacity;
	}
	return &vm->buffers[vm->buffer_count++];
}

static uint64_t modeled_ns(struct sim_vm *vm)
{
	struct vgpu_hal_as_counters counters;

	if (!vm->vm)
		return vm->modeled_ns;
	vgpu_hal_as_counters(vgpu_core_vm_address_space(vm->vm), &counters);
	return counters.busy_ns[VGPU_ENGINE_COMPUTE];
}

/* Keep the VM's figures while its address space exists. */
static void keep_figures(struct sim_vm *vm)
{
	vm->modeled_ns = modeled_ns(vm);
	vm->has_contention = vgpu_hal_as_contention(vgpu_core_vm_address_space(vm->vm),
	                                            &vm->contention) == 0;
}

static int gpu_run(struct sim_run *run, const struct sim_step *step, struct sim_vm *vm,
                   const uint32_t *words, uint32_t count)
{
	int err = sim_guest_run(vm->guest, words, count, KERNEL_TIMEOUT_MS);

	if (err == -EIO) {
		if (!vm->gpu_errors++)
			say(run, step, "VM '%s': %s; its later GPU work is skipped", vm->name,
			    sim_guest_error(vm->guest));
		run->kernels_failed++;
	} else if (err) {
		say(run, step, "VM '%s': GPU work did not finish within %u s (%s)", vm->name,
		    KERNEL_TIMEOUT_MS / 1000, strerror(-err));
		run->kernels_failed++;
	}
	return err;
}

/* ---- steps ------------------------------------------------------------------ */

static int step_vm(struct sim_run *run, const struct sim_step *step)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct vgpu_vm_config config;
	struct sim_vm *vm, *vms;
	int err;

	vms = realloc(run->vms, (run->vm_count + 1) * sizeof(*vms));
	if (!vms)
		return -ENOMEM;
	run->vms = vms;
	vm = &run->vms[run->vm_count];
	memset(vm, 0, sizeof(*vm));
	snprintf(vm->name, sizeof(vm->name), "%s", step->vm);
	vgpu_vm_config_defaults(&config);
	config.name = step->vm;
	config.weight = step->weight;
	config.cap_bytes = step->cap;
	config.chunk_bytes = step->chunk;
	err = vgpu_core_vm_create(run->core, &config, &vm->vm, &error);
	if (err) {
		say(run, step, "cannot create VM '%s': %s", step->vm, vgpu_error_msg(&error));
		return err;
	}
	vm->chunk = step->chunk ? step->chunk : run->scenario->gpu.chunk;
	err = sim_guest_create(run->hal, vm->vm, &vm->guest);
	if (err) {
		say(run, step, "cannot create a channel for VM '%s': %s", step->vm,
		    vgpu_error_msg(&error));
		vgpu_core_vm_destroy(vm->vm);
		return err;
	}
	run->vm_count++;
	return 0;
}

static int step_alloc(struct sim_run *run, const struct sim_step *step)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct sim_vm *vm = find_vm(run, step->vm);
	struct sim_buffer *buffer = new_buffer(vm, step->buffers[0]);
	char size[32];
	int err;

	if (!buffer)
		return -ENOMEM;
	memset(buffer, 0, sizeof(*buffer));
	snprintf(buffer->name, sizeof(buffer->name), "%s", step->buffers[0]);
	err = vgpu_core_alloc(vm->vm, step->size, step->priority, 0, &buffer->info, &error);
	if (err) {
		vm->allocs_failed++;
		say(run, step, "alloc %s %s %s refused: %s", step->vm, step->buffers[0],
		    vgpu_format_size(step->size, size, sizeof(size)), vgpu_error_msg(&error));
		return 0; /* reported, not fatal */
	}
	buffer->live = true;
	sim_contents_init(&buffer->contents, buffer->info.bytes);
	if (step->fill && !vm->gpu_errors) {
		uint64_t seed = name_seed(step->vm, step->buffers[0]);
		uint32_t words[VGPU_COMMAND_MAX_WORDS];

		if (!gpu_run(run, step, vm, words,
		             vgpu_push_launch_fill(words, buffer->info.gpu_va, buffer->info.bytes,
		                                   seed)))
			sim_contents_fill(&buffer->contents, seed);
	}
	if (run->verbose)
		say(run, step, "alloc %s %s: %s at %#" PRIx64, step->vm, step->buffers[0],
		    vgpu_format_size(buffer->info.bytes, size, sizeof(size)), buffer->info.gpu_va);
	return 0;
}

static int step_free(struct sim_run *run, const struct sim_step *step)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	struct sim_vm *vm = find_vm(run, step->vm);
	struct sim_buffer *buffer = find_buffer(vm, step->buffers[0]);

	if (!buffer)
		return 0; /* its alloc was refused: nothing to free */
	if (vgpu_core_free(vm->vm, buffer->info.handle, &error))
		say(run, step, "free %s %s: %s", step->vm, step->buffers[0],
		    vgpu_error_msg(&error));
	buffer->live = false;
	sim_contents_fini(&buffer->contents);
	return 0;
}

static void kernel_stream(struct sim_run *run, const struct sim_step *step, struct sim_vm *vm,
                          struct sim_buffer *buffer)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	if (!gpu_run(run, step, vm, words,
	             vgpu_push_launch_stream(words, buffer->info.gpu_va, buffer->info.bytes,
	                                     step->passes)))
		sim_contents_stream(&buffer->contents, step->passes);
	else
		sim_contents_unknown(&buffer->contents);
}

static void kernel_gups(struct sim_run *run, const struct sim_step *step, struct sim_vm *vm,
                        struct sim_buffer *buffer)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t updates = (buffer->info.bytes / 8) * step->passes / 4 + 1;
	uint64_t seed = name_seed(vm->name, buffer->name) ^ ((uint64_t)step->line << 32);

	if (gpu_run(run, step, vm, words,
	            vgpu_push_launch_random_access(words, buffer->info.gpu_va, buffer->info.bytes,
	                                           updates, seed))) {
		sim_contents_unknown(&buffer->contents);
		return;
	}
	if (buffer->contents.known) {
		if (sim_contents_materialize(&buffer->contents)) {
			sim_contents_unknown(&buffer->contents);
			return;
		}
		vgpu_kernel_reference_random_access(buffer->contents.data, buffer->contents.bytes, updates,
		                                    seed);
	}
}

static void kernel_stencil(struct sim_run *run, const struct sim_step *step, struct sim_vm *vm,
                           struct sim_buffer *in, struct sim_buffer *out)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint32_t height = (uint32_t)(in->info.bytes / (4 * STENCIL_WIDTH));
	char size[32];

	if (!height || out->info.bytes < (uint64_t)height * 4 * STENCIL_WIDTH || in == out) {
		say(run, step, "stencil needs an input of at least %s and a different output at "
		    "least as large; "
		    "skipped", vgpu_format_size(4 * STENCIL_WIDTH, size, sizeof(size)));
		run->kernels_failed++;
		return;
	}
	for (unsigned pass = 0; pass < step->passes; pass++) {
		if (gpu_run(run, step, vm, words,
		            vgpu_push_launch_stencil(words, in->info.gpu_va, out->info.gpu_va,
		                                     STENCIL_WIDTH, height))) {
			sim_contents_unknown(&out->contents);
			return;
		}
	}
	if (!in->contents.known) {
		sim_contents_unknown(&out->contents);
		return;
	}
	if (!out->contents.known && out->info.bytes != (uint64_t)height * 4 * STENCIL_WIDTH)
		return; /* the tail of out stays unspecified */
	if (!out->contents.known) {
		sim_contents_fill(&out->contents, 0); /* every byte is overwritten below */
	}
	if (sim_contents_materialize(&in->contents) || sim_contents_materialize(&out->contents)) {
		sim_contents_unknown(&out->contents);
		return;
	}
	vgpu_kernel_reference_stencil(in->contents.data, out->contents.data, STENCIL_WIDTH, height);
}

static void kernel_checksum(struct sim_run *run, const struct sim_step *step, struct sim_vm *vm,
                            struct sim_buffer *buffer)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t got, expected;

	for (unsigned pass = 0; pass < step->passes; pass++) {
		if (gpu_run(run, step, vm, words,
		            vgpu_push_launch_checksum(words, buffer->info.gpu_va, buffer->info.bytes,
		                                      sim_guest_scratch_va(vm->guest))))
			return;
	}
	if (!buffer->contents.known)
		return;
	got = sim_guest_read_scratch(vm->guest);
	expected = sim_contents_checksum(&buffer->contents);
	if (got != expected) {
		say(run, step, "VM '%s': checksum of '%s' is %#" PRIx64 ", expected %#" PRIx64,
		    vm->name, buffer->name, got, expected);
		vm->verify = VERIFY_FAIL;
		run->kernels_failed++;
	}
}

static int step_run(struct sim_run *run, const struct sim_step *step)
{
	struct sim_vm *vm = find_vm(run, step->vm);
	struct sim_buffer *buffers[SIM_RUN_BUFFERS_MAX];

	for (unsigned i = 0; i < step->buffer_count; i++) {
		buffers[i] = find_buffer(vm, step->buffers[i]);
		if (!buffers[i]) {
			say(run, step, "run on '%s', whose allocation was refused; skipped",
			    step->buffers[i]);
			return 0;
		}
	}
	if (vm->gpu_errors)
		return 0;
	switch (step->kernel) {
	case KERNEL_STREAM:
		for (unsigned i = 0; i < step->buffer_count; i++)
			kernel_stream(run, step, vm, buffers[i]);
		break;
	case KERNEL_GUPS:
		for (unsigned i = 0; i < step->buffer_count; i++)
			kernel_gups(run, step, vm, buffers[i]);
		break;
	case KERNEL_STENCIL:
		kernel_stencil(run, step, vm, buffers[0], buffers[1]);
		break;
	case KERNEL_CHECKSUM:
		for (unsigned i = 0; i < step->buffer_count; i++)
			kernel_checksum(run, step, vm, buffers[i]);
		break;
	}
	return 0;
}

static void return_pass(struct sim_run *run, const struct sim_step *step)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	int moved = vgpu_core_return_pass(run->core, &error);

	if (moved < 0)
		say(run, step, "return pass failed: %s", vgpu_error_msg(&error));
	else if (moved && run->verbose)
		say(run, step, "return pass moved %d chunks back to VRAM", moved);
}

static int step_tick(struct sim_run *run, const struct sim_step *step)
{
	uint32_t interval = run->scenario->gpu.return_interval_ms;

	run->time_ms += step->size;
	if (!interval) {
		return_pass(run, step);
		return 0;
	}
	/* One pass per interval that ended; passes with nothing to do are
	 * free, so one is enough for several intervals. */
	if (run->time_ms >= run->next_pass_ms) {
		return_pass(run, step);
		run->next_pass_ms = (run->time_ms / interval + 1) * interval;
	}
	return 0;
}

static void verify_vm(struct sim_run *run, const struct sim_step *step, struct sim_vm *vm)
{
	bool ok = true;

	for (size_t i = 0; i < vm->buffer_count; i++) {
		struct sim_buffer *buffer = &vm->buffers[i];
		struct vgpu_error why = VGPU_ERROR_INIT;

		if (!buffer->live || !buffer->contents.known)
			continue;
		if (sim_contents_verify(&buffer->contents, vgpu_core_vm_address_space(vm->vm),
		                        buffer->info.gpu_va, &why)) {
			say(run, step, "verify %s: buffer '%s' differs: %s", vm->name, buffer->name,
			    vgpu_error_msg(&why));
			ok = false;
		}
	}
	if (!ok) {
		vm->verify = VERIFY_FAIL;
		run->verifies_failed++;
	} else if (vm->verify == VERIFY_NOT_RUN) {
		vm->verify = VERIFY_OK;
	}
}

static int step_verify(struct sim_run *run, const struct sim_step *step)
{
	if (!step->all) {
		verify_vm(run, step, find_vm(run, step->vm));
		return 0;
	}
	for (size_t i = 0; i < run->vm_count; i++)
		if (run->vms[i].vm)
			verify_vm(run, step, &run->vms[i]);
	return 0;
}

static uint64_t quantity(struct sim_vm *vm, enum sim_quantity what)
{
	struct vgpu_hal_as_contention c = { 0 };
	struct vgpu_vm_stats stats_now, *stats = &stats_now;

	vgpu_core_vm_stats(vm->vm, stats);
	if (what >= QUANTITY_KERNELS)
		vgpu_hal_as_contention(vgpu_core_vm_address_space(vm->vm), &c);
	switch (what) {
	case QUANTITY_KERNELS:
		return c.kernels;
	case QUANTITY_WALKS:
		return c.walks;
	case QUANTITY_WALKS_WAITED_MAX:
		return c.foreign_walks_waited_max;
	case QUANTITY_RESIDENT:
		return stats->resident_bytes;
	case QUANTITY_EVICTED:
		return stats->evicted_bytes;
	case QUANTITY_ALLOCATED:
		return stats->allocated_bytes;
	default:
		return stats->fair_share_bytes;
	}
}

/* A buffer's resident, evicted or allocated bytes, from its chunks. */
static uint64_t buffer_quantity(struct sim_vm *vm, struct sim_buffer *buffer,
                                enum sim_quantity what)
{
	struct vgpu_chunk_info *chunks;
	uint64_t sum = 0;
	int count;

	if (what == QUANTITY_ALLOCATED)
		return buffer->info.bytes;
	count = vgpu_core_buffer_chunks(vm->vm, buffer->info.handle, NULL, 0, NULL);
	if (count <= 0 || !(chunks = malloc((size_t)count * sizeof(*chunks))))
		return 0;
	count = vgpu_core_buffer_chunks(vm->vm, buffer->info.handle, chunks, (size_t)count, NULL);
	for (int i = 0; i < count; i++)
		if ((chunks[i].location == VGPU_CHUNK_RESIDENT) == (what == QUANTITY_RESIDENT))
			sum += chunks[i].bytes;
	free(chunks);
	return sum;
}

/* Bytes as sizes, counts as numbers. */
static const char *format_quantity(enum sim_quantity what, uint64_t value, char *buf, size_t len)
{
	if (what < QUANTITY_KERNELS)
		return vgpu_format_size(value, buf, len);
	snprintf(buf, len, "%" PRIu64, value);
	return buf;
}

static int step_expect(struct sim_run *run, const struct sim_step *step)
{
	const char *const *names = sim_quantity_names;
	static const char *const ops[] = { "=", "<=", ">=", "~" };
	struct sim_vm *vm = find_vm(run, step->vm);
	uint64_t actual, wanted = step->size, slack;
	char a[32], w[32], s[32];
	bool ok;

	actual = quantity(vm, step->quantity);
	if (step->of_buffer) {
		struct sim_buffer *buffer = find_buffer(vm, step->buffers[0]);

		actual = buffer ? buffer_quantity(vm, buffer, step->quantity) : 0;
	}
	if (step->other_vm[0])
		wanted = quantity(find_vm(run, step->other_vm), step->quantity);
	slack = vm->chunk;
	switch (step->compare) {
	case COMPARE_EQUAL:
		ok = actual == wanted;
		break;
	case COMPARE_AT_MOST:
		ok = actual <= wanted;
		break;
	case COMPARE_AT_LEAST:
		ok = actual >= wanted;
		break;
	default:
		ok = (actual > wanted ? actual - wanted : wanted - actual) <= slack;
		break;
	}
	if (ok) {
		run->expects_passed++;
		if (run->verbose)
			say(run, step, "expect %s %s %s %s: ok (%s)", step->vm, names[step->quantity],
			    ops[step->compare], step->other_vm[0] ? step->other_vm
			                                          : format_quantity(step->quantity, wanted, w, sizeof(w)),
			    format_quantity(step->quantity, actual, a, sizeof(a)));
		return 0;
	}
	run->expects_failed++;
	say(run, step, "expect failed: VM '%s'%s%s %s is %s, wanted %s %s%s%s%s", step->vm,
	    step->of_buffer ? " buffer " : "", step->of_buffer ? step->buffers[0] : "",
	    names[step->quantity], format_quantity(step->quantity, actual, a, sizeof(a)), ops[step->compare],
	    format_quantity(step->quantity, wanted, w, sizeof(w)), step->other_vm[0] ? " (VM '" : "",
	    step->other_vm[0] ? step->other_vm : "", step->other_vm[0] ? "')" : "");
	if (step->compare == COMPARE_WITHIN_CHUNK)
		say(run, NULL, "    (~ allows one chunk: %s)", vgpu_format_size(slack, s, sizeof(s)));
	return 0;
}

static int step_destroy(struct sim_run *run, const struct sim_step *step)
{
	struct sim_vm *vm = find_vm(run, step->vm);

	vgpu_core_vm_stats(vm->vm, &vm->final);
	keep_figures(vm);
	vgpu_core_vm_destroy(vm->vm);
	sim_guest_destroy(vm->guest, true);
	vm->vm = NULL;
	vm->guest = NULL;
	for (size_t i = 0; i < vm->buffer_count; i++) {
		vm->buffers[i].live = false;
		sim_contents_fini(&vm->buffers[i].contents);
	}
	return 0;
}

static int run_step(struct sim_run *run, const struct sim_step *step)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	switch (step->kind) {
	case STEP_VM:
		return step_vm(run, step);
	case STEP_ALLOC:
		return step_alloc(run, step);
	case STEP_FREE:
		return step_free(run, step);
	case STEP_RUN:
		return step_run(run, step);
	case STEP_TICK:
		return step_tick(run, step);
	case STEP_VERIFY:
		return step_verify(run, step);
	case STEP_EXPECT:
		return step_expect(run, step);
	case STEP_WEIGHT:
		if (vgpu_core_set_weight(find_vm(run, step->vm)->vm, (uint32_t)step->size, &error))
			say(run, step, "weight: %s", vgpu_error_msg(&error));
		return 0;
	case STEP_PRIO: {
		struct sim_vm *vm = find_vm(run, step->vm);
		struct sim_buffer *buffer = find_buffer(vm, step->buffers[0]);

		if (buffer && vgpu_core_set_priority(vm->vm, buffer->info.handle,
		                                     (unsigned)step->size, &error))
			say(run, step, "prio: %s", vgpu_error_msg(&error));
		return 0;
	}
	case STEP_DESTROY:
		return step_destroy(run, step);
	}
	return 0;
}

/* ---- the run -------------------------------------------------------------- */

static int create_gpu(struct sim_run *run)
{
	struct vgpu_error error = VGPU_ERROR_INIT;
	const struct sim_gpu_config *gpu = &run->scenario->gpu;
	struct simgpu_config config;
	struct vgpu_core_config core;
	uint64_t reserved;
	char size[32];
	int err;

	if (gpu->vram % 65536) {
		say(run, NULL, "%s:%u: vram must be a multiple of 64K", run->scenario->path,
		    gpu->line);
		return -EINVAL;
	}
	/* simgpu keeps page tables in VRAM of its own on top of what the
	 * scenario gives to applications. */
	reserved = gpu->vram / 16;
	if (reserved < (8ull << 20))
		reserved = 8ull << 20;
	if (reserved > (256ull << 20))
		reserved = 256ull << 20;
	reserved = (reserved + 65535) & ~65535ull;
	if (gpu->vram + reserved < (16ull << 20))
		reserved = (16ull << 20) - gpu->vram;
	if (reserved * 2 >= gpu->vram + reserved)
		reserved = (gpu->vram + reserved) / 2 - 65536;
	simgpu_config_defaults(&config);
	config.vram_bytes = gpu->vram + reserved;
	config.reserved_vram_bytes = reserved;
	config.reference_bits = !strcmp(gpu->policy, "refbits");
	config.sharing = gpu->sharing;
	config.spatial_walkers = gpu->walkers;
	config.spatial_memsched = gpu->memsched;
	config.pfifo_idle_sleep_max_us = 200;
	err = simgpu_create(&config, &run->hal);
	if (err) {
		say(run, NULL, "%s:%u: cannot create a GPU with %s of VRAM: %s", run->scenario->path,
		    gpu->line, vgpu_format_size(gpu->vram, size, sizeof(size)), strerror(-err));
		return err;
	}
	vgpu_core_config_defaults(&core);
	core.chunk_bytes = gpu->chunk;
	core.policy = gpu->policy;
	core.seed = gpu->seed;
	core.host_budget_bytes = gpu->host_mem;
	core.return_interval_ms = 0; /* ticks drive the return pass */
	core.on_fence = sim_guest_on_fence;
	core.on_channel_error = sim_guest_on_channel_error;
	err = vgpu_core_create(run->hal, &core, &run->core, &error);
	if (err) {
		say(run, NULL, "%s:%u: %s", run->scenario->path, gpu->line, vgpu_error_msg(&error));
		vgpu_hal_destroy(run->hal);
		run->hal = NULL;
		return err;
	}
	return 0;
}

int sim_run(struct sim_run *run, const struct sim_scenario *scenario, FILE *log, bool verbose)
{
	struct vgpu_error broken = VGPU_ERROR_INIT;
	uint64_t start = vgpu_monotonic_ns();
	int err;

	memset(run, 0, sizeof(*run));
	run->scenario = scenario;
	run->log = log;
	run->verbose = verbose;
	run->next_pass_ms = scenario->gpu.return_interval_ms;
	err = create_gpu(run);
	if (err)
		return err;
	for (size_t i = 0; i < scenario->step_count; i++) {
		const struct sim_step *step = &scenario->steps[i];

		err = run_step(run, step);
		if (err)
			return err;
		run->steps++;
		if (!run->invariants[0] && vgpu_core_check_invariants(run->core, &broken)) {
			snprintf(run->invariants, sizeof(run->invariants), "%s",
			         vgpu_error_msg(&broken));
			say(run, step, "invariant broken: %s", run->invariants);
		}
	}
	for (size_t i = 0; i < run->vm_count; i++) {
		struct sim_vm *vm = &run->vms[i];

		if (vm->vm) {
			vgpu_core_vm_stats(vm->vm, &vm->final);
			keep_figures(vm);
		}
	}
	run->wall_ns = vgpu_monotonic_ns() - start;
	return 0;
}

bool sim_run_passed(const struct sim_run *run)
{
	return !run->expects_failed && !run->verifies_failed && !run->kernels_failed &&
	       !run->invariants[0];
}

void sim_run_free(struct sim_run *run)
{
	for (size_t i = 0; i < run->vm_count; i++) {
		struct sim_vm *vm = &run->vms[i];

		for (size_t j = 0; j < vm->buffer_count; j++)
			sim_contents_fini(&vm->buffers[j].contents);
		free(vm->buffers);
		if (vm->vm) {
			vgpu_core_vm_destroy(vm->vm);
			sim_guest_destroy(vm->guest, true);
		}
	}
	free(run->vms);
	vgpu_core_destroy(run->core);
	if (run->hal)
		vgpu_hal_destroy(run->hal);
	memset(run, 0, sizeof(*run));
}
