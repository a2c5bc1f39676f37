/* SPDX-License-Identifier: MIT */
/*
 * ptx_exec.h - run a kernel of a loaded PTX module (ptx_module.h).
 *
 * Execution model: a block's threads run as warps of 32 lanes. Each
 * lowered instruction executes once per warp over the lanes of an active
 * mask. Divergence uses per-lane program counters with minimum-PC
 * scheduling: the warp always runs the lanes whose PC is the lowest among
 * its runnable lanes, so lanes that branched apart rejoin when the lagging
 * ones reach the others' PC (for the forward-branch and loop layouts
 * compilers emit, that is the immediate post-dominator). A .func call runs
 * the calling lanes in a frame of their own until all of them return or
 * exit; the other lanes wait in the caller. Warp-synchronous instructions
 * (shfl.sync, vote.sync, bar.warp.sync) wait until every lane of their
 * member mask that has not exited has reached them.
 *
 * Barriers: bar.sync/barrier.sync id releases when every non-exited thread
 * of the block (or the given thread count) has arrived at barrier id;
 * threads that exit release a barrier they were holding up. When no thread
 * of a block can run and no barrier can release, the launch fails with
 * PTX_FAULT_DEADLOCK.
 *
 * Memory: .global and .const accesses, and generic accesses outside the
 * shared and local windows below, go through struct ptx_memory_ops. .shared
 * is a per-block buffer (zero filled at block start), .local a per-thread
 * stack holding the frames of the entry and of called functions, .param the
 * launch's parameter block. Generic addresses in [PTX_SHARED_WINDOW,
 * +4 GiB) name shared memory and in [PTX_LOCAL_WINDOW, +4 GiB) the thread's
 * local memory, so global memory at those addresses is unreachable through
 * generic pointers. Misaligned accesses fail like on the GPU.
 *
 * Threads: ptx_launch runs the grid's blocks on host_threads host threads
 * (the calling thread plus host_threads - 1 it starts and joins); each block
 * runs on one host thread, start to end, its warps taking turns in slices. The memory callbacks are called
 * from all of them at once; atomic must be atomic against concurrent
 * atomics. Any number of launches may run at once.
 *
 * Errors: ptx_launch returns 0, or a negative errno with result->fault and
 * result->message saying why: -EINVAL bad launch (grid, block, shared size,
 * parameter block size, variable addresses), -EFAULT a memory fault
 * (result->fault_address), -ETIMEDOUT the watchdog, -EDEADLK a barrier or
 * warp-sync deadlock, -ELOOP call depth or local stack exceeded, -ECANCELED
 * trap. The first fault stops the whole launch; blocks may have partially
 * run (on the GPU, the channel is killed).
 */
#ifndef SIMGPU_PTX_EXEC_H
#define SIMGPU_PTX_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "ptx_module.h"

#define PTX_WARP_SIZE 32u
#define PTX_SHARED_WINDOW 0xfe00000000000000ull
#define PTX_LOCAL_WINDOW 0xfd00000000000000ull
#define PTX_MAX_BLOCK_THREADS 1024u
#define PTX_MAX_GRID_X 0x7fffffffu
#define PTX_MAX_GRID_YZ 65535u
#define PTX_DEFAULT_CALL_DEPTH 64u
#define PTX_DEFAULT_STACK_BYTES 4096u
#define PTX_MAX_STACK_BYTES (512u * 1024u)
#define PTX_DEFAULT_INSTRUCTION_BUDGET (1ull << 40)

enum ptx_atomic_op {
	PTX_ATOM_ADD, PTX_ATOM_MIN, PTX_ATOM_MAX, PTX_ATOM_EXCH, PTX_ATOM_CAS,
	PTX_ATOM_AND, PTX_ATOM_OR, PTX_ATOM_XOR, PTX_ATOM_INC, PTX_ATOM_DEC,
};

enum ptx_atomic_type {
	PTX_ATYPE_U32, PTX_ATYPE_S32, PTX_ATYPE_U64, PTX_ATYPE_S64,
	PTX_ATYPE_F32, PTX_ATYPE_F64,
};

struct ptx_atomic {
	enum ptx_atomic_op op;
	enum ptx_atomic_type type;
	uint32_t size;     /* 4 or 8 bytes */
	uint64_t operand;  /* b (the value; cas: the compare value) */
	uint64_t swap;     /* cas: the new value */
};

/*
 * The new value an atomic stores given the old one (the low size bytes,
 * little endian, zero extended). Pure; for memory callbacks that implement
 * atomic as lock, read, ptx_atomic_apply, write, unlock.
 */
uint64_t ptx_atomic_apply(const struct ptx_atomic *op, uint64_t old);

/*
 * Global memory. Each returns 0, or nonzero to fault the launch at va. A
 * read or write covers what one warp instruction asked for: one lane's
 * element (1 to 16 bytes, aligned to its size) or, when the lanes' accesses
 * are contiguous, all of them at once (up to 512 bytes, which may cross a
 * page boundary); after a failed combined access the executor retries lane
 * by lane to name the faulting address.
 */
struct ptx_memory_ops {
	int (*read)(void *ctx, uint64_t va, void *dst, size_t n);
	int (*write)(void *ctx, uint64_t va, const void *src, size_t n);
	/* Atomically: *old = value at va; value = ptx_atomic_apply(op, *old). */
	int (*atomic)(void *ctx, uint64_t va, const struct ptx_atomic *op,
		      uint64_t *old);
};

struct ptx_dim3 {
	uint32_t x, y, z;
};

/* Instruction classes counted in ptx_stats.thread_instructions_by_class. */
enum ptx_insn_class {
	PTX_CLASS_INT,      /* integer and bit arithmetic, moves, selects */
	PTX_CLASS_FP32,
	PTX_CLASS_FP64,
	PTX_CLASS_SFU,      /* .approx transcendentals, rcp/sqrt/rsqrt */
	PTX_CLASS_CONVERT,
	PTX_CLASS_CONTROL,  /* branches, calls, returns, exit */
	PTX_CLASS_MEMORY,   /* ld/st in every space */
	PTX_CLASS_ATOMIC,
	PTX_CLASS_WARP,     /* shfl, vote, activemask */
	PTX_CLASS_SYNC,     /* barriers, fences */
	PTX_CLASS_COUNT,
};

struct ptx_stats {
	uint64_t warp_instructions;
	uint64_t thread_instructions;
	uint64_t thread_instructions_by_class[PTX_CLASS_COUNT];
	/* Global (and .const) traffic; a transaction is one 32-byte sector
	 * a warp access touches. */
	uint64_t global_load_transactions, global_load_bytes;
	uint64_t global_store_transactions, global_store_bytes;
	uint64_t global_atomics;
	uint64_t shared_load_bytes, shared_store_bytes, shared_atomics;
	uint64_t local_load_bytes, local_store_bytes;
	uint64_t barriers;  /* barrier releases */
	uint64_t printf_calls;  /* vprintf calls (their output is dropped) */
	uint64_t blocks;
};

enum ptx_fault {
	PTX_FAULT_NONE,
	PTX_FAULT_LAUNCH,      /* invalid launch configuration */
	PTX_FAULT_MEMORY,      /* a memory callback failed, or out of bounds */
	PTX_FAULT_MISALIGNED,
	PTX_FAULT_WATCHDOG,
	PTX_FAULT_DEADLOCK,
	PTX_FAULT_STACK,       /* call depth or local stack */
	PTX_FAULT_TRAP,
};

struct ptx_launch {
	const struct ptx_module *module;
	uint32_t entry;                  /* index (ptx_module_find_entry) */
	struct ptx_dim3 grid, block;
	uint32_t dynamic_shared_bytes;
	const void *params;              /* the entry's param_bytes exactly */
	size_t param_size;
	/* Address of each module variable, indexed like ptx_module_var. */
	const uint64_t *var_addresses;
	size_t var_count;
	const struct ptx_memory_ops *mem;
	void *mem_ctx;
	unsigned host_threads;           /* 0 and 1: the calling thread only */
	/* Watchdog: the launch fails after this many warp instructions
	 * (0: PTX_DEFAULT_INSTRUCTION_BUDGET), or when poll returns nonzero;
	 * poll is called every few thousand warp instructions per host thread,
	 * from all of them. */
	uint64_t instruction_budget;
	int (*poll)(void *ctx);
	void *poll_ctx;
	uint32_t max_call_depth;         /* 0: PTX_DEFAULT_CALL_DEPTH */
	/* Run only blocks [first_block, first_block + block_count) of the
	 * grid (linear index x + X * (y + Y * z)); block_count 0: all. A
	 * caller that must yield (a channel's time slice) runs a grid in
	 * such pieces; blocks only meet through global memory. */
	uint64_t first_block, block_count;
	/* Local stack per thread when the entry calls functions (0: the
	 * larger of PTX_DEFAULT_STACK_BYTES and the entry's frame). */
	uint32_t stack_bytes;
};

struct ptx_launch_result {
	enum ptx_fault fault;
	uint64_t fault_address;
	char message[256];
	struct ptx_stats stats;
};

int ptx_launch(const struct ptx_launch *launch,
	       struct ptx_launch_result *result);

#endif
