// SPDX-License-Identifier: MIT
/* spatial.c - spatial sharing driven by the contention model (see spatial.h). */
#include "spatial.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "address_space.h"
#include "clock.h"
#include "cs_kernel_stream.h"
#include "cs_model.h"
#include "simgpu_device.h"

/* The model runs in steps of this many cycles while it waits for a kernel. */
#define SPATIAL_STEP_CYCLES 4096u
/* Tasks counted to know a kernel's instructions (beyond: the count so far). */
#define SPATIAL_COUNT_TASKS_MAX (UINT64_C(1) << 24)
#define SPATIAL_ALONE_CACHE 32u
#define SPATIAL_KERNEL_ARGS 4u

struct kernel_run {
	uint32_t kernel;
	uint32_t nargs;
	uint64_t args[SPATIAL_KERNEL_ARGS];
};

struct tenant_slot {
	struct simgpu_address_space *as; /* NULL: free */
	bool has_kernel;
	struct kernel_run last;          /* its latest kernel ... */
	uint64_t start_ps, end_ps;       /* ... and when it ran on its clock */
	struct vgpu_hal_as_contention figures;
};

/* A kernel alone on sms SMs (baseline policies): cycles and counters. */
struct alone_entry {
	bool used;
	struct kernel_run k;
	uint32_t sms;
	uint64_t cycles;
};

/*
 * Locks: lock serializes the modeling (the PFIFO thread simulates under it,
 * for as long as a kernel's simulation takes) and guards the slots and the
 * alone cache; figures_lock, taken inside it, guards the slots' as and
 * figures, so readers of the figures (vgpuctl, /metrics) never wait for a
 * simulation.
 */
struct spatial {
	struct simgpu *gpu;
	pthread_mutex_t lock;
	pthread_mutex_t figures_lock;
	struct cs_model_config model;
	uint64_t core_mhz, max_cycles;
	uint32_t slot_count;
	struct tenant_slot *slots;
	struct alone_entry alone[SPATIAL_ALONE_CACHE];
	uint32_t alone_next;
	uint64_t latest_end_ps;
};

static const enum cs_walker_policy walker_policies[] = {
	[SIMGPU_WALKERS_SHARED] = CS_WALKERS_SHARED,
	[SIMGPU_WALKERS_STATIC] = CS_WALKERS_STATIC,
	[SIMGPU_WALKERS_DWS] = CS_WALKERS_DWS,
	[SIMGPU_WALKERS_DWSPP] = CS_WALKERS_DWSPP,
};

static const enum cs_mem_policy mem_policies[] = {
	[SIMGPU_MEMSCHED_FRFCFS] = CS_SCHED_FRFCFS,
	[SIMGPU_MEMSCHED_RR] = CS_SCHED_RR_FRFCFS,
	[SIMGPU_MEMSCHED_PRIORITY] = CS_SCHED_PRIORITY,
	[SIMGPU_MEMSCHED_ITS] = CS_SCHED_ITS,
	[SIMGPU_MEMSCHED_WEIS] = CS_SCHED_WEIS,
};

struct spatial *spatial_create(struct simgpu *gpu, int *err)
{
	const struct simgpu_config *config = &gpu->config;
	struct spatial *sp;

	*err = 0;
	if (config->sharing != SIMGPU_SHARING_SPATIAL)
		return NULL;
	if ((unsigned)config->spatial_walkers >= sizeof(walker_policies) / sizeof(*walker_policies) ||
	    (unsigned)config->spatial_memsched >= sizeof(mem_policies) / sizeof(*mem_policies) ||
	    config->spatial_core_mhz == 0 || config->spatial_max_cycles == 0) {
		*err = -EINVAL;
		return NULL;
	}
	sp = calloc(1, sizeof(*sp));
	if (sp)
		sp->slots = calloc(config->max_address_spaces, sizeof(*sp->slots));
	if (!sp || !sp->slots) {
		free(sp);
		*err = -ENOMEM;
		return NULL;
	}
	sp->gpu = gpu;
	sp->slot_count = config->max_address_spaces;
	cs_model_config_defaults(&sp->model);
	sp->model.walkers.policy = walker_policies[config->spatial_walkers];
	sp->model.sched.policy = mem_policies[config->spatial_memsched];
	sp->core_mhz = config->spatial_core_mhz;
	sp->max_cycles = config->spatial_max_cycles;
	pthread_mutex_init(&sp->lock, NULL);
	pthread_mutex_init(&sp->figures_lock, NULL);
	return sp;
}

void spatial_destroy(struct spatial *sp)
{
	if (!sp)
		return;
	pthread_mutex_destroy(&sp->figures_lock);
	pthread_mutex_destroy(&sp->lock);
	free(sp->slots);
	free(sp);
}

static uint64_t cycles_to_ps(const struct spatial *sp, uint64_t cycles)
{
	return (uint64_t)((unsigned __int128)cycles * 1000000u / sp->core_mhz);
}

static bool same_kernel(const struct kernel_run *a, const struct kernel_run *b)
{
	return a->kernel == b->kernel && a->nargs == b->nargs &&
	       !memcmp(a->args, b->args, a->nargs * sizeof(*a->args));
}

/* Instruction-equivalents of one launch (counted up to a bound). */
static uint64_t kernel_instructions(const struct kernel_run *k)
{
	struct cs_kernel_stream stream;
	struct cs_task task;
	uint64_t instructions = 0, tasks = 0;

	if (cs_kernel_stream_init(&stream, k->kernel, k->args, k->nargs))
		return 0;
	while (tasks++ < SPATIAL_COUNT_TASKS_MAX && cs_kernel_stream_next(&stream, &task))
		instructions += task.instructions;
	return instructions;
}

/*
 * Run kernels[0] side by side with kernels[1..n) (closed-loop), each on sms
 * SMs, under cfg, until kernels[0] has committed `instructions`. *cycles:
 * when it did (interpolated within a step; extrapolated past max_cycles);
 * *c: its counters then. 0 or a negative errno.
 */
static int simulate(const struct spatial *sp, const struct cs_model_config *cfg,
                    const struct kernel_run *kernels, uint32_t n, uint32_t sms,
                    uint64_t instructions, uint64_t *cycles, struct cs_tenant_counters *c)
{
	uint32_t sms_per_tenant[CS_MAX_TENANTS] = { 0 };
	uint64_t before = 0, now = 0;
	struct cs_model *m;
	uint32_t i;
	int ret = 0;

	for (i = 0; i < n; i++)
		sms_per_tenant[i] = sms;
	m = cs_model_create(cfg, n, sms_per_tenant);
	if (!m)
		return -EINVAL;
	for (i = 0; i < n && ret == 0; i++)
		ret = cs_model_attach_kernel(m, i, kernels[i].kernel, kernels[i].args,
		                             kernels[i].nargs);
	while (ret == 0) {
		ret = cs_model_run_until(m, now + SPATIAL_STEP_CYCLES);
		if (ret)
			break;
		now += SPATIAL_STEP_CYCLES;
		cs_model_counters(m, 0, c);
		if (c->instructions >= instructions) {
			uint64_t gained = c->instructions - before;

			*cycles = now - SPATIAL_STEP_CYCLES;
			if (gained)
				*cycles += (instructions - before) * SPATIAL_STEP_CYCLES / gained;
			break;
		}
		if (now >= sp->max_cycles) {
			*cycles = c->instructions
				? (uint64_t)((unsigned __int128)now * instructions / c->instructions)
				: now;
			break;
		}
		before = c->instructions;
	}
	cs_model_destroy(m);
	if (ret == 0 && *cycles == 0)
		*cycles = 1;
	return ret;
}

/* The kernel alone on sms SMs with the baseline policies (cached). */
static int alone_cycles(struct spatial *sp, const struct kernel_run *k, uint32_t sms,
                        uint64_t instructions, uint64_t *cycles)
{
	struct cs_model_config baseline = sp->model;
	struct cs_tenant_counters c;
	struct alone_entry *e;
	uint32_t i;
	int ret;

	for (i = 0; i < SPATIAL_ALONE_CACHE; i++) {
		e = &sp->alone[i];
		if (e->used && e->sms == sms && same_kernel(&e->k, k)) {
			*cycles = e->cycles;
			return 0;
		}
	}
	baseline.walkers.policy = CS_WALKERS_SHARED;
	baseline.sched.policy = CS_SCHED_FRFCFS;
	ret = simulate(sp, &baseline, k, 1, sms, instructions, cycles, &c);
	if (ret)
		return ret;
	e = &sp->alone[sp->alone_next];
	sp->alone_next = (sp->alone_next + 1) % SPATIAL_ALONE_CACHE;
	*e = (struct alone_entry){ .used = true, .k = *k, .sms = sms, .cycles = *cycles };
	return 0;
}

static struct tenant_slot *slot_of(struct spatial *sp, struct simgpu_address_space *as,
                                   bool create)
{
	struct tenant_slot *free_slot = NULL;
	uint32_t i;

	for (i = 0; i < sp->slot_count; i++) {
		if (sp->slots[i].as == as)
			return &sp->slots[i];
		if (!sp->slots[i].as && !free_slot)
			free_slot = &sp->slots[i];
	}
	if (!create || !free_slot)
		return NULL;
	pthread_mutex_lock(&sp->figures_lock);
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->as = as;
	pthread_mutex_unlock(&sp->figures_lock);
	return free_slot;
}

/* The static priority (memsched prio) ranks tenants by slot: the address
 * space that launched first ranks first, whichever kernel is being timed. */
static void priority_by_slot(struct cs_model_config *cfg, const uint32_t *slot_ids, uint32_t n)
{
	uint32_t i, j;

	for (i = 0; i < n; i++)
		cfg->sched.priority[i] = i;
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && slot_ids[cfg->sched.priority[j - 1]] >
		                             slot_ids[cfg->sched.priority[j]]; j--) {
			uint32_t t = cfg->sched.priority[j];

			cfg->sched.priority[j] = cfg->sched.priority[j - 1];
			cfg->sched.priority[j - 1] = t;
		}
}

/* Other tenants' kernels overlapping [start, end), latest-ending first. */
static uint32_t co_runners(struct spatial *sp, const struct tenant_slot *self, uint64_t start,
                           uint64_t end, struct kernel_run *out, uint32_t *slot_ids,
                           uint32_t max)
{
	const struct tenant_slot *chosen[CS_MAX_TENANTS];
	uint32_t n = 0, i, j;

	for (i = 0; i < sp->slot_count; i++) {
		const struct tenant_slot *s = &sp->slots[i];

		if (s == self || !s->as || !s->has_kernel || s->end_ps <= start || s->start_ps >= end)
			continue;
		/* insertion by end, latest first; keep the first max */
		for (j = n; j > 0 && chosen[j - 1]->end_ps < s->end_ps; j--)
			if (j < max)
				chosen[j] = chosen[j - 1];
		if (j < max) {
			chosen[j] = s;
			if (n < max)
				n++;
		}
	}
	for (i = 0; i < n; i++) {
		out[i] = chosen[i]->last;
		slot_ids[i] = (uint32_t)(chosen[i] - sp->slots);
	}
	return n;
}

static uint32_t live_tenants(const struct spatial *sp)
{
	uint32_t i, n = 0;

	for (i = 0; i < sp->slot_count; i++)
		n += sp->slots[i].as && sp->slots[i].has_kernel;
	return n;
}

static void add_figures(struct vgpu_hal_as_contention *f, const struct cs_tenant_counters *c,
                        uint32_t line_bytes, uint64_t cycles, uint64_t alone)
{
	f->kernels++;
	f->walks += c->walks;
	f->walk_latency_cycles += c->walk_latency_sum;
	f->foreign_walks_waited += c->walkers.foreign_waited_sum;
	if (c->walkers.foreign_waited_max > f->foreign_walks_waited_max)
		f->foreign_walks_waited_max = c->walkers.foreign_waited_max;
	f->l2_tlb_lookups += c->l2_tlb_lookups;
	f->l2_tlb_hits += c->l2_tlb_hits;
	f->instructions += c->instructions;
	f->l2_misses += c->l2_misses;
	f->dram_bytes += (c->dram.reads + c->dram.writes) * line_bytes;
	f->cycles += cycles;
	f->alone_cycles += alone;
}

void spatial_kernel_done(struct spatial *sp, struct simgpu_address_space *as, uint32_t kernel,
                         const uint64_t *args, uint32_t nargs, uint64_t fixed_ps)
{
	struct kernel_run kernels[CS_MAX_TENANTS];
	uint32_t slot_ids[CS_MAX_TENANTS];
	struct cs_model_config cfg;
	struct cs_tenant_counters c;
	struct tenant_slot *slot;
	uint64_t busy_ps, start_ps, alone, cycles = 0, duration_ps, engine_ps = 0, instructions;
	uint32_t n, sms, live;

	if (!sp || nargs > SPATIAL_KERNEL_ARGS)
		return;
	memset(&kernels[0], 0, sizeof(kernels[0]));
	kernels[0].kernel = kernel;
	kernels[0].nargs = nargs;
	memcpy(kernels[0].args, args, nargs * sizeof(*args));
	instructions = kernel_instructions(&kernels[0]);
	if (!instructions)
		return; /* not a kernel the model knows (or no work): fixed cost */

	pthread_mutex_lock(&as->lock);
	busy_ps = as->busy_ps[VGPU_ENGINE_COMPUTE];
	pthread_mutex_unlock(&as->lock);
	start_ps = busy_ps >= fixed_ps ? busy_ps - fixed_ps : 0;

	pthread_mutex_lock(&sp->lock);
	slot = slot_of(sp, as, true);
	if (!slot) {
		pthread_mutex_unlock(&sp->lock);
		return;
	}
	slot->has_kernel = true;
	live = live_tenants(sp);
	sms = sp->model.sms / live ? sp->model.sms / live : 1;
	if (alone_cycles(sp, &kernels[0], sms, instructions, &alone)) {
		pthread_mutex_unlock(&sp->lock);
		return;
	}
	slot_ids[0] = (uint32_t)(slot - sp->slots);
	n = 1 + co_runners(sp, slot, start_ps, start_ps + cycles_to_ps(sp, alone), kernels + 1,
	                   slot_ids + 1, CS_MAX_TENANTS - 1);
	cfg = sp->model;
	priority_by_slot(&cfg, slot_ids, n);
	if (simulate(sp, &cfg, kernels, n, sms, instructions, &cycles, &c)) {
		pthread_mutex_unlock(&sp->lock);
		return;
	}
	pthread_mutex_lock(&sp->figures_lock);
	add_figures(&slot->figures, &c, sp->model.dram.line_bytes, cycles, alone);
	slot->figures.corunner_kernels += n - 1;
	pthread_mutex_unlock(&sp->figures_lock);
	duration_ps = cycles_to_ps(sp, cycles);
	slot->last = kernels[0];
	slot->start_ps = start_ps;
	slot->end_ps = start_ps + duration_ps;
	if (slot->end_ps > sp->latest_end_ps) {
		engine_ps = slot->end_ps - sp->latest_end_ps;
		sp->latest_end_ps = slot->end_ps;
	}
	pthread_mutex_unlock(&sp->lock);

	/* replace the fixed cost by the modeled duration (unsigned wrap-around
	 * adds a negative difference) */
	pthread_mutex_lock(&as->lock);
	as->busy_ps[VGPU_ENGINE_COMPUTE] += duration_ps - fixed_ps;
	pthread_mutex_unlock(&as->lock);
	gpu_clock_add(&sp->gpu->clock, VGPU_ENGINE_COMPUTE, engine_ps - fixed_ps);
}

void spatial_forget(struct spatial *sp, struct simgpu_address_space *as)
{
	struct tenant_slot *slot;

	if (!sp)
		return;
	pthread_mutex_lock(&sp->lock);
	slot = slot_of(sp, as, false);
	if (slot) {
		pthread_mutex_lock(&sp->figures_lock);
		memset(slot, 0, sizeof(*slot));
		pthread_mutex_unlock(&sp->figures_lock);
	}
	pthread_mutex_unlock(&sp->lock);
}

int spatial_as_figures(struct spatial *sp, struct simgpu_address_space *as,
                       struct vgpu_hal_as_contention *out)
{
	struct tenant_slot *slot;

	if (!sp)
		return -ENOTSUP;
	memset(out, 0, sizeof(*out));
	out->core_mhz = sp->core_mhz;
	out->dram_peak_bytes_per_cycle = (uint32_t)(sp->model.dram.channels *
	                                             sp->model.dram.line_bytes /
	                                             sp->model.dram.t_burst);
	pthread_mutex_lock(&sp->figures_lock);
	slot = slot_of(sp, as, false);
	if (slot) {
		uint32_t mhz = out->core_mhz, peak = out->dram_peak_bytes_per_cycle;

		*out = slot->figures;
		out->core_mhz = mhz;
		out->dram_peak_bytes_per_cycle = peak;
	}
	pthread_mutex_unlock(&sp->figures_lock);
	return 0;
}
