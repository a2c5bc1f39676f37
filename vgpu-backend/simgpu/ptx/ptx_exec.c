// SPDX-License-Identifier: MIT
/*
 * ptx_exec.c - ptx_launch (ptx_exec.h): checks the launch, hands blocks to
 * host threads, and runs each block's warps until they finish, releasing
 * barriers when every non-exited thread has arrived.
 */
#include "ptx_exec.h"

#include <errno.h>
#include <fenv.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_run.h"

int ptx_fault(struct ptx_block *b, const struct ptx_insn *in, int rc,
	      enum ptx_fault kind, uint64_t address, const char *fmt, ...)
{
	struct ptx_run *run = b->run;
	pthread_mutex_lock(&run->lock);
	if (!run->rc) {
		char what[160];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(what, sizeof(what), fmt, ap);
		va_end(ap);
		run->rc = rc;
		run->result->fault = kind;
		run->result->fault_address = address;
		snprintf(run->result->message, sizeof(run->result->message),
			 "%s:%u: %s (block %u,%u,%u)", run->module->name,
			 in ? in->line : 0, what, b->ctaid.x, b->ctaid.y, b->ctaid.z);
	}
	pthread_mutex_unlock(&run->lock);
	atomic_store(&run->abort, 1);
	return rc;
}

static int launch_error(struct ptx_launch_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int launch_error(struct ptx_launch_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	r->fault = PTX_FAULT_LAUNCH;
	return -EINVAL;
}

static int setup_block(struct ptx_worker *wk, struct ptx_block *b, uint64_t linear)
{
	struct ptx_run *run = wk->run;
	const struct ptx_launch *L = run->launch;
	memset(b, 0, sizeof(*b));
	b->worker = wk;
	b->run = run;
	b->linear = linear;
	b->ctaid.x = (uint32_t)(linear % L->grid.x);
	b->ctaid.y = (uint32_t)((linear / L->grid.x) % L->grid.y);
	b->ctaid.z = (uint32_t)(linear / ((uint64_t)L->grid.x * L->grid.y));
	b->nwarps = (run->block_threads + PTX_WARP_SIZE - 1) / PTX_WARP_SIZE;
	if (b->nwarps > wk->nwarps_cap) {
		struct ptx_warp *w = realloc(wk->warps, b->nwarps * sizeof(*w));
		if (!w)
			return -ENOMEM;
		memset(w + wk->nwarps_cap, 0, (b->nwarps - wk->nwarps_cap) * sizeof(*w));
		wk->warps = w;
		wk->nwarps_cap = b->nwarps;
	}
	b->warps = wk->warps;
	b->shared = wk->shared;
	memset(b->bar_and, 1, sizeof(b->bar_and));
	if (run->shared_bytes)
		memset(b->shared, 0, run->shared_bytes);
	const struct ptx_func *f = run->entry;
	for (uint32_t i = 0; i < b->nwarps; i++) {
		struct ptx_warp *w = &b->warps[i];
		uint64_t *regstack = w->regstack;
		uint32_t regcap = w->regstack_cap;
		struct ptx_frame *frames = w->frames;
		uint32_t fcap = w->frames_cap;
		memset(w, 0, sizeof(*w));
		w->regstack = regstack;
		w->regstack_cap = regcap;
		w->frames = frames;
		w->frames_cap = fcap;
		uint32_t nthreads = run->block_threads - i * PTX_WARP_SIZE;
		w->initial = nthreads >= 32 ? 0xffffffffu : (1u << nthreads) - 1;
		w->live = w->initial;
		w->index = i;
		w->func = f;
		w->func_index = (uint32_t)(f - run->module->funcs);
		w->merge_pc = UINT32_MAX;
		if (w->regstack_cap < f->nregs + 1) {
			uint32_t cap = f->nregs + 1;
			uint64_t *r = realloc(w->regstack, (size_t)cap * PTX_WARP_SIZE * 8);
			if (!r)
				return -ENOMEM;
			w->regstack = r;
			w->regstack_cap = cap;
		}
		w->regs = w->regstack;
		memset(w->regs, 0, (size_t)f->nregs * PTX_WARP_SIZE * 8);
		w->local = wk->local ? wk->local + (size_t)i * PTX_WARP_SIZE * run->stack_bytes : NULL;
		w->active = w->initial;
		w->cur_pc = 0;
	}
	return 0;
}

static int run_block(struct ptx_worker *wk, uint64_t linear)
{
	struct ptx_run *run = wk->run;
	struct ptx_block blk, *b = &blk;
	int rc = setup_block(wk, b, linear);
	if (rc)
		return ptx_fault(b, NULL, rc, PTX_FAULT_LAUNCH, 0, "out of memory");
	if (wk->local)
		memset(wk->local, 0, (size_t)b->nwarps * PTX_WARP_SIZE * run->stack_bytes);
	for (;;) {
		/* round robin in slices, so a warp spinning on another's store
		 * to shared or global memory lets that warp run */
		bool ran;
		do {
			ran = false;
			for (uint32_t i = 0; i < b->nwarps; i++) {
				struct ptx_warp *w = &b->warps[i];
				if (!(w->live & ~w->blocked))
					continue;
				if ((rc = ptx_warp_run(b, w, PTX_WARP_SLICE)))
					return rc;
				ran = true;
			}
		} while (ran);
		uint32_t live = 0;
		for (uint32_t i = 0; i < b->nwarps; i++)
			live += ptx_popcount32(b->warps[i].initial &
							     ~b->warps[i].exited);
		if (!live)
			break;
		bool released = false;
		for (uint32_t id = 0; id < PTX_BARRIERS; id++) {
			if (!b->bar_arrived[id])
				continue;
			uint32_t want = b->bar_count[id] ? b->bar_count[id] : live;
			if (b->bar_arrived[id] < want)
				continue;
			for (uint32_t i = 0; i < b->nwarps; i++) {
				struct ptx_warp *w = &b->warps[i];
				uint32_t unblock = 0;
				for (uint32_t m = w->blocked; m; m &= m - 1) {
					unsigned l = (unsigned)__builtin_ctz(m);
					if (w->bar_id[l] == id)
						unblock |= 1u << l;
				}
				if (unblock) {
					w->blocked &= ~unblock;
					w->active = 0;
				}
				for (uint32_t m = unblock & w->red_pending; m; m &= m - 1) {
					unsigned l = (unsigned)__builtin_ctz(m);
					uint64_t v = w->red_mode[l] == MODE_RED_POPC ? b->bar_popc[id] :
						     w->red_mode[l] == MODE_RED_AND ? b->bar_and[id] :
						     b->bar_or[id];
					w->regstack[(size_t)w->red_reg[l] * PTX_WARP_SIZE + l] = v;
				}
				w->red_pending &= ~unblock;
			}
			b->bar_arrived[id] = 0;
			b->bar_count[id] = 0;
			b->bar_popc[id] = 0;
			b->bar_and[id] = 1;
			b->bar_or[id] = 0;
			wk->stats.barriers++;
			released = true;
		}
		if (!released) {
			uint32_t waiting = 0;
			for (uint32_t id = 0; id < PTX_BARRIERS; id++)
				waiting += b->bar_arrived[id];
			return ptx_fault(b, NULL, -EDEADLK, PTX_FAULT_DEADLOCK, 0,
					 "barrier deadlock: %u of %u live threads wait at "
					 "barriers that cannot complete", waiting, live);
		}
	}
	wk->stats.blocks++;
	return 0;
}

static void *worker_main(void *arg)
{
	struct ptx_worker *wk = arg;
	struct ptx_run *run = wk->run;
	fesetround(FE_TONEAREST);
	for (;;) {
		if (atomic_load(&run->abort))
			break;
		uint64_t blk = atomic_fetch_add(&run->next_block, 1);
		if (blk >= run->total_blocks)
			break;
		if (run_block(wk, run->first_block + blk))
			break;
	}
	if (wk->unpolled) {
		atomic_fetch_add(&run->instructions, wk->unpolled);
		wk->unpolled = 0;
	}
	return NULL;
}

static void free_worker(struct ptx_worker *wk)
{
	for (uint32_t i = 0; i < wk->nwarps_cap; i++) {
		free(wk->warps[i].regstack);
		free(wk->warps[i].frames);
	}
	free(wk->warps);
	free(wk->shared);
	free(wk->local);
}

static void add_stats(struct ptx_stats *to, const struct ptx_stats *s)
{
	to->warp_instructions += s->warp_instructions;
	to->thread_instructions += s->thread_instructions;
	for (unsigned i = 0; i < PTX_CLASS_COUNT; i++)
		to->thread_instructions_by_class[i] += s->thread_instructions_by_class[i];
	to->global_load_transactions += s->global_load_transactions;
	to->global_load_bytes += s->global_load_bytes;
	to->global_store_transactions += s->global_store_transactions;
	to->global_store_bytes += s->global_store_bytes;
	to->global_atomics += s->global_atomics;
	to->shared_load_bytes += s->shared_load_bytes;
	to->shared_store_bytes += s->shared_store_bytes;
	to->shared_atomics += s->shared_atomics;
	to->local_load_bytes += s->local_load_bytes;
	to->local_store_bytes += s->local_store_bytes;
	to->barriers += s->barriers;
	to->printf_calls += s->printf_calls;
	to->blocks += s->blocks;
}

int ptx_launch(const struct ptx_launch *L, struct ptx_launch_result *r)
{
	memset(r, 0, sizeof(*r));
	if (!L || !L->module || !L->mem || !L->mem->read || !L->mem->write ||
	    !L->mem->atomic)
		return launch_error(r, "launch without a module or memory callbacks");
	const struct ptx_module *m = L->module;
	if (L->entry >= m->nentries)
		return launch_error(r, "no entry %u", L->entry);
	const struct ptx_func *f = &m->funcs[m->entry_func[L->entry]];
	const struct ptx_entry_info *e = &m->entries[L->entry];
	if (L->grid.x == 0 || L->grid.y == 0 || L->grid.z == 0 ||
	    L->grid.x > PTX_MAX_GRID_X || L->grid.y > PTX_MAX_GRID_YZ ||
	    L->grid.z > PTX_MAX_GRID_YZ)
		return launch_error(r, "%s: invalid grid %u x %u x %u", e->name,
				    L->grid.x, L->grid.y, L->grid.z);
	uint64_t threads = (uint64_t)L->block.x * L->block.y * L->block.z;
	if (threads == 0 || threads > PTX_MAX_BLOCK_THREADS || L->block.z > 64)
		return launch_error(r, "%s: invalid block %u x %u x %u", e->name,
				    L->block.x, L->block.y, L->block.z);
	if (L->param_size != e->param_bytes || (e->param_bytes && !L->params))
		return launch_error(r, "%s: parameter block of %zu bytes, expected %u",
				    e->name, L->param_size, e->param_bytes);
	if (L->var_count != m->nvars || (m->nvars && !L->var_addresses))
		return launch_error(r, "%s: %zu variable addresses, module has %u",
				    e->name, L->var_count, m->nvars);
	uint64_t shared = (uint64_t)m->shared_bytes + L->dynamic_shared_bytes;
	if (shared > PTX_MAX_SHARED_BYTES)
		return launch_error(r, "%s: %llu bytes of shared memory (at most %u)",
				    e->name, (unsigned long long)shared, PTX_MAX_SHARED_BYTES);
	uint32_t stack = f->frame_bytes;
	if (f->may_call || m->nfuncs > m->nentries) {
		stack = L->stack_bytes ? L->stack_bytes : PTX_DEFAULT_STACK_BYTES;
		if (stack < f->frame_bytes)
			stack = f->frame_bytes;
	}
	if (stack > PTX_MAX_STACK_BYTES)
		return launch_error(r, "%s: stack of %u bytes per thread (at most %u)",
				    e->name, stack, PTX_MAX_STACK_BYTES);
	stack = (stack + 15) & ~15u;

	struct ptx_run run;
	memset(&run, 0, sizeof(run));
	run.launch = L;
	run.module = m;
	run.entry = f;
	uint64_t grid_blocks = (uint64_t)L->grid.x * L->grid.y * L->grid.z;
	if (L->first_block >= grid_blocks ||
	    (L->block_count && L->block_count > grid_blocks - L->first_block))
		return launch_error(r, "%s: blocks %llu+%llu outside a grid of %llu", e->name,
				    (unsigned long long)L->first_block,
				    (unsigned long long)L->block_count,
				    (unsigned long long)grid_blocks);
	run.first_block = L->first_block;
	run.total_blocks = L->block_count ? L->block_count : grid_blocks - L->first_block;
	run.block_threads = (uint32_t)threads;
	run.shared_bytes = (uint32_t)shared;
	run.stack_bytes = stack;
	run.max_depth = L->max_call_depth ? L->max_call_depth : PTX_DEFAULT_CALL_DEPTH;
	run.budget = L->instruction_budget ? L->instruction_budget
					   : PTX_DEFAULT_INSTRUCTION_BUDGET;
	run.result = r;
	atomic_init(&run.next_block, 0);
	atomic_init(&run.instructions, 0);
	atomic_init(&run.abort, 0);
	pthread_mutex_init(&run.lock, NULL);

	unsigned nworkers = L->host_threads ? L->host_threads : 1;
	if (nworkers > 256)
		nworkers = 256;
	if (run.total_blocks < nworkers)
		nworkers = (unsigned)run.total_blocks;
	struct ptx_worker *wk = calloc(nworkers, sizeof(*wk));
	pthread_t *tids = calloc(nworkers, sizeof(*tids));
	int rc = 0;
	if (!wk || !tids) {
		rc = -ENOMEM;
		goto out;
	}
	uint32_t nwarps = (run.block_threads + PTX_WARP_SIZE - 1) / PTX_WARP_SIZE;
	for (unsigned i = 0; i < nworkers; i++) {
		wk[i].run = &run;
		wk[i].index = i;
		wk[i].shared = calloc(1, shared ? shared : 1);
		if (stack)
			wk[i].local = calloc((size_t)nwarps * PTX_WARP_SIZE, stack);
		if (!wk[i].shared || (stack && !wk[i].local))
			rc = -ENOMEM;
	}
	if (rc)
		goto out;
	unsigned started = 1;
	for (unsigned i = 1; i < nworkers; i++) {
		if (pthread_create(&tids[i], NULL, worker_main, &wk[i]))
			break;
		started++;
	}
	int saved_mode = fegetround();
	worker_main(&wk[0]);
	fesetround(saved_mode);
	for (unsigned i = 1; i < started; i++)
		pthread_join(tids[i], NULL);
	/* blocks the failed thread starts left behind run on the others */
	for (unsigned i = 0; i < nworkers; i++)
		add_stats(&r->stats, &wk[i].stats);
	rc = run.rc;
out:
	if (wk)
		for (unsigned i = 0; i < nworkers; i++)
			free_worker(&wk[i]);
	free(wk);
	free(tids);
	pthread_mutex_destroy(&run.lock);
	if (rc == -ENOMEM && !r->message[0])
		snprintf(r->message, sizeof(r->message), "out of memory");
	return rc;
}
