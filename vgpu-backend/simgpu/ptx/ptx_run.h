/* SPDX-License-Identifier: MIT */
/*
 * ptx_run.h - the executor's state: one run per launch, one worker per
 * host thread, one block at a time per worker, its warps and their call
 * frames. Internal to the library: ptx_exec.c schedules blocks and warps,
 * ptx_warp.c interprets instructions.
 *
 * Threads: a run is shared by its workers (next_block, abort and the
 * instruction count are atomics; the first fault is recorded under lock).
 * Everything else belongs to one worker.
 */
#ifndef SIMGPU_PTX_RUN_H
#define SIMGPU_PTX_RUN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ptx_exec.h"
#include "ptx_ir.h"

#define PTX_BARRIERS 16
#define PTX_POLL_INTERVAL 4096u
#define PTX_WARP_SLICE 2048u     /* warp instructions before the next warp */

struct ptx_run {
	const struct ptx_launch *launch;
	const struct ptx_module *module;
	const struct ptx_func *entry;
	uint64_t first_block;        /* the grid's blocks run: first_block + */
	uint64_t total_blocks;       /* [0, total_blocks) */
	uint32_t block_threads;
	uint32_t shared_bytes;       /* static + dynamic */
	uint32_t stack_bytes;        /* local memory per thread */
	uint32_t max_depth;
	uint64_t budget;
	_Atomic uint64_t next_block;
	_Atomic uint64_t instructions;
	atomic_int abort;
	pthread_mutex_t lock;
	int rc;
	struct ptx_launch_result *result;
};

struct ptx_frame {
	uint32_t func;
	uint32_t reg_base;           /* in registers (32 slots each) */
	uint32_t local_base;
	uint32_t call;               /* call index in the caller */
	uint32_t caller_live;
	uint32_t saved_pc[PTX_WARP_SIZE];
};

struct ptx_warp {
	uint32_t pc[PTX_WARP_SIZE];  /* lanes not in active */
	uint32_t cur_pc;             /* the active lanes' PC */
	uint32_t active;
	uint32_t merge_pc;           /* next PC where waiting lanes are */
	uint32_t live;               /* lanes running in the current frame */
	uint32_t returned;           /* lanes that returned from it */
	uint32_t exited, blocked, parked;
	uint32_t wsync_parked;       /* parked at a bar.warp.sync */
	uint32_t carry;              /* CC.CF per lane (add.cc, addc, ...) */
	uint32_t initial;            /* lanes that exist */
	uint8_t bar_id[PTX_WARP_SIZE];
	/* bar.red: where each waiting lane gets the reduction at release */
	uint32_t red_pending;
	uint8_t red_mode[PTX_WARP_SIZE];
	uint32_t red_reg[PTX_WARP_SIZE];  /* absolute register (frame base added) */
	uint32_t index;
	const struct ptx_func *func;
	uint32_t func_index;
	uint64_t *regs;              /* current frame: regs[r * 32 + lane] */
	uint64_t *regstack;
	uint32_t regstack_cap;       /* registers */
	uint32_t reg_base;
	uint32_t local_base;
	uint8_t *local;              /* 32 lanes * stack_bytes */
	struct ptx_frame *frames;
	uint32_t depth, frames_cap;
	uint64_t clock;
};

struct ptx_worker {
	struct ptx_run *run;
	unsigned index;
	struct ptx_stats stats;
	uint64_t unpolled;           /* warp instructions since the last poll */
	/* reused across blocks */
	struct ptx_warp *warps;
	uint32_t nwarps_cap;
	uint8_t *shared;
	uint8_t *local;
	size_t local_cap;
};

struct ptx_block {
	struct ptx_worker *worker;
	struct ptx_run *run;
	struct ptx_dim3 ctaid;
	uint64_t linear;
	uint32_t nwarps;
	struct ptx_warp *warps;
	uint8_t *shared;
	uint32_t bar_arrived[PTX_BARRIERS];
	uint32_t bar_count[PTX_BARRIERS];  /* 0: all threads */
	uint32_t bar_popc[PTX_BARRIERS];   /* bar.red accumulators */
	uint8_t bar_and[PTX_BARRIERS], bar_or[PTX_BARRIERS];
};

/*
 * Records the launch's first fault (later ones are dropped), sets abort,
 * and returns rc. The message gets the module name and insn's line.
 */
int ptx_fault(struct ptx_block *b, const struct ptx_insn *in, int rc,
	      enum ptx_fault kind, uint64_t address, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/*
 * Runs w until none of its lanes can run or it has executed slice warp
 * instructions (then it is still runnable); 0 or a fault's rc.
 */
int ptx_warp_run(struct ptx_block *b, struct ptx_warp *w, uint32_t slice);

/* Sets w's active lanes and merge point from the lane PCs. */
void ptx_warp_schedule(struct ptx_warp *w);

#endif
