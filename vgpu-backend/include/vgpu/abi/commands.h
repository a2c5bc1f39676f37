/* SPDX-License-Identifier: MIT */
/*
 * vgpu/abi/commands.h - the command format of a vGPU's channels.
 *
 * FORMAT VERSION 1, REVISION 3 (VGPU_COMMANDS_VERSION, VGPU_COMMANDS_REVISION).
 * This format is part of the vGPU device ABI: a guest writes control pages,
 * GPFIFO entries and pushbuffers in exactly this layout. Every field is
 * fixed-width and little-endian. Changes are additive only (new opcodes, new
 * kernels, new flag bits) and bump the revision; an existing encoding never
 * changes meaning, and the version stays 1 (a guest built for revision 1
 * checks that the version is exactly 1, and keeps working).
 *   revision 1: NOP, SEMAPHORE_RELEASE/ACQUIRE, COPY, MEMSET, LAUNCH.
 *   revision 2: LAUNCH_FUNCTION (a function of a module the VM loaded,
 *               device ABI 1.3's MODULE_LOAD; offered with
 *               VGPU_FEATURE_MODULES).
 *   revision 3: SEMAPHORE_RELEASE flag VGPU_SEMAPHORE_TIMESTAMP (the GPU's
 *               nanosecond clock beside the value; device ABI 1.4, offered
 *               with VGPU_FEATURE_SEMAPHORE_TIMESTAMP). A revision 2 guest
 *               never sets the flag and sees nothing new.
 *
 * A channel is
 *  - a control page (VGPU_CONTROL_BYTES) with three 32-bit words:
 *      GP_PUT    (offset 0x0) index of the next free ring entry; written by
 *                software only.
 *      GP_GET    (offset 0x4) index of the next entry the GPU fetches;
 *                written by the GPU only. Software writes to it are ignored:
 *                the GPU keeps its own value and writes it back.
 *      DOORBELL  (offset 0x8) any write is a hint that GP_PUT moved. The GPU
 *                also notices GP_PUT by itself (it polls), so ringing is
 *                never required for correctness.
 *    the version word (offset 0xc, VGPU_COMMANDS_VERSION, read-only) and,
 *    since revision 2, the revision word (offset 0x10,
 *    VGPU_COMMANDS_REVISION, read-only; 0 on a revision 1 GPU).
 *  - a GPFIFO ring of 2^n entries (struct vgpu_gpfifo_entry, 16 bytes):
 *    entries [GP_GET, GP_PUT) are pending. Each points at a pushbuffer in the
 *    channel's GPU virtual address space. length 0 is a NOP. The GPU fetches
 *    an entry, advances GP_GET, reads the whole pushbuffer and runs it. An
 *    entry with a length that is not a multiple of 4 or larger than
 *    VGPU_PUSHBUFFER_MAX_BYTES, nonzero flags, or a GP_PUT outside the ring
 *    is a VGPU_FAULT_BAD_COMMAND.
 *  - pushbuffers: sequences of commands. A command is a 32-bit header
 *        bits 31..24 opcode (enum vgpu_command_opcode)
 *        bits 23..16 flags (per opcode; unknown bits are a bad command)
 *        bits 15..0  number of 32-bit argument words that follow
 *    and its arguments. 64-bit arguments are two words, low word first.
 *    A command that overruns the pushbuffer, an unknown opcode or a wrong
 *    argument count is a VGPU_FAULT_BAD_COMMAND and kills the channel.
 *
 * Commands (arguments in order; every address is a GPU virtual address)
 *  NOP                any number of argument words, ignored (padding).
 *  SEMAPHORE_RELEASE  va(64), value(64); flags VGPU_SEMAPHORE_INTERRUPT,
 *                     VGPU_SEMAPHORE_TIMESTAMP (revision 3).
 *                     Writes the 64-bit value at va (8-byte aligned) once
 *                     every earlier command of the channel has finished; with
 *                     INTERRUPT, raises VGPU_EVENT_FENCE (value, address = va).
 *                     With TIMESTAMP, va must be 16-byte aligned (else a bad
 *                     command) and the GPU also writes, as a 64-bit word at
 *                     va + 8, its clock in nanoseconds at the time the
 *                     release ran (after every earlier command of the
 *                     channel finished); the timestamp is written before the
 *                     value, so whoever sees the value sees its timestamp.
 *                     The clock is the GPU's, one per GPU, never decreasing;
 *                     only differences of timestamps mean something (simgpu:
 *                     its modeled compute-engine time; cudagpu: the real
 *                     GPU's global timer).
 *  SEMAPHORE_ACQUIRE  va(64), value(64). Waits until the 64-bit word at va
 *                     (8-byte aligned) is >= value (unsigned). A waiting
 *                     channel does not hold up other channels; one that
 *                     waits past the backend's acquire timeout is killed
 *                     (VGPU_FAULT_TIMEOUT).
 *  COPY               dst(64), src(64), bytes(64). Byte copy; the ranges
 *                     should not overlap (if they do, the result is the
 *                     page-by-page forward copy).
 *  MEMSET             dst(64), pattern(32), bytes(64). Byte i of the range
 *                     becomes byte (i mod 4) of the little-endian pattern.
 *  LAUNCH             kernel(32), then up to VGPU_KERNEL_MAX_ARGS 64-bit
 *                     arguments: runs a built-in kernel (enum vgpu_kernel,
 *                     documented in vgpu/abi/kernels.h). Bad arguments are
 *                     VGPU_FAULT_BAD_KERNEL_ARGS.
 *  LAUNCH_FUNCTION    (revision 2) module(32), function(32), grid x, y, z
 *                     (32 each), block x, y, z (32 each), dynamic shared
 *                     bytes(32), parameter bytes(32), then the parameter
 *                     block inline, zero-padded to whole words. Runs function
 *                     index `function` of module handle `module` (MODULE_LOAD
 *                     of this VM) over the grid; the parameter block is laid
 *                     out as MODULE_LOAD's table says. A module or function
 *                     the VM does not have, a wrong parameter size or an
 *                     impossible grid or block is VGPU_FAULT_BAD_KERNEL_ARGS;
 *                     a fault inside the function (an access outside the
 *                     VM's mappings, the watchdog, a trap) kills the channel
 *                     with the GPU's usual cause.
 *  PRIV_FENCE         privileged only (the GPU's own pushbuffers for
 *                     vgpu_hal_channel_priv_submit); in a user pushbuffer it is
 *                     a bad command.
 *
 * Every command of a channel runs after the previous one has finished (one
 * engine per channel), so a semaphore release orders everything before it.
 */
#ifndef VGPU_ABI_COMMANDS_H
#define VGPU_ABI_COMMANDS_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VGPU_COMMANDS_VERSION 1u
#define VGPU_COMMANDS_REVISION 3u

/* ------------------------------------------------------------------------ */
/* Control page                                                             */

#define VGPU_CONTROL_BYTES 4096u
#define VGPU_CONTROL_GP_PUT 0x0u
#define VGPU_CONTROL_GP_GET 0x4u
#define VGPU_CONTROL_DOORBELL 0x8u
#define VGPU_CONTROL_VERSION 0xcu
#define VGPU_CONTROL_REVISION 0x10u

/* ------------------------------------------------------------------------ */
/* GPFIFO ring                                                              */

struct vgpu_gpfifo_entry {
	uint64_t pushbuffer_va; /* little-endian GPU VA of the pushbuffer */
	uint32_t length_bytes;  /* multiple of 4; 0 = NOP entry */
	uint32_t flags;         /* must be 0 */
};

#define VGPU_GPFIFO_ENTRY_BYTES 16u
#define VGPU_PUSHBUFFER_MAX_BYTES (1u << 20)

/* ------------------------------------------------------------------------ */
/* Pushbuffer commands                                                      */

/* Pushbuffer opcodes (VGPU_CMD_*); the mailbox's requests are the other
 * opcodes, enum vgpu_opcode (VGPU_OP_*, vgpu/abi/device_abi.h). */
enum vgpu_command_opcode {
	VGPU_CMD_NOP = 0x00,
	VGPU_CMD_SEMAPHORE_RELEASE = 0x01,
	VGPU_CMD_SEMAPHORE_ACQUIRE = 0x02,
	VGPU_CMD_COPY = 0x03,
	VGPU_CMD_MEMSET = 0x04,
	VGPU_CMD_LAUNCH = 0x05,
	VGPU_CMD_LAUNCH_FUNCTION = 0x06, /* revision 2 */
	VGPU_CMD_PRIV_FENCE = 0x7f,
};

#define VGPU_SEMAPHORE_INTERRUPT (1u << 0) /* SEMAPHORE_RELEASE flag */
#define VGPU_SEMAPHORE_TIMESTAMP (1u << 1) /* SEMAPHORE_RELEASE flag, revision 3 */
/* SEMAPHORE_RELEASE's flags each revision knows. */
#define VGPU_SEMAPHORE_RELEASE_FLAGS (VGPU_SEMAPHORE_INTERRUPT | VGPU_SEMAPHORE_TIMESTAMP)

#define VGPU_COMMAND_HEADER(opcode, flags, arg_words)                                    \
	((uint32_t)(((uint32_t)(opcode) & 0xffu) << 24 | ((uint32_t)(flags) & 0xffu) << 16 | \
	            ((uint32_t)(arg_words) & 0xffffu)))
#define VGPU_COMMAND_OPCODE(header) (((header) >> 24) & 0xffu)
#define VGPU_COMMAND_FLAGS(header) (((header) >> 16) & 0xffu)
#define VGPU_COMMAND_ARG_WORDS(header) ((header) & 0xffffu)

/* Argument words of each fixed-size command. */
#define VGPU_SEMAPHORE_ARG_WORDS 4u
#define VGPU_COPY_ARG_WORDS 6u
#define VGPU_MEMSET_ARG_WORDS 5u
/* LAUNCH_FUNCTION: the fixed words before the parameter block, and the
 * largest parameter block (PTX's limit for an entry's parameters). */
#define VGPU_LAUNCH_FUNCTION_FIXED_WORDS 10u
#define VGPU_LAUNCH_FUNCTION_MAX_PARAM_BYTES 32764u

struct vgpu_launch_dims {
	uint32_t grid[3], block[3];
	uint32_t shared_bytes; /* dynamic shared memory */
};

/* Built-in kernels for LAUNCH; arguments are documented in vgpu/abi/kernels.h. */
enum vgpu_kernel {
	VGPU_KERNEL_FILL = 1,
	VGPU_KERNEL_COPY = 2,
	VGPU_KERNEL_STREAM = 3,
	VGPU_KERNEL_STENCIL = 4,
	VGPU_KERNEL_RANDOM_ACCESS = 5,
	VGPU_KERNEL_CHECKSUM = 6,
	VGPU_KERNEL_THROTTLE = 7, /* the software GPU only; cudagpu rejects it */
};

#define VGPU_KERNEL_MAX_ARGS 8u

/* Longest command any encoder below writes, in 32-bit words. */
#define VGPU_COMMAND_MAX_WORDS (2u + 2u * VGPU_KERNEL_MAX_ARGS)

/* ------------------------------------------------------------------------ */
/* Encoders. Each writes one command at buf and returns the words written.  */

static inline uint32_t vgpu_push_u32(uint32_t *buf, uint32_t value)
{
	buf[0] = htole32(value);
	return 1;
}

static inline uint32_t vgpu_push_u64(uint32_t *buf, uint64_t value)
{
	buf[0] = htole32((uint32_t)value);
	buf[1] = htole32((uint32_t)(value >> 32));
	return 2;
}

static inline uint32_t vgpu_push_nop(uint32_t *buf)
{
	return vgpu_push_u32(buf, VGPU_COMMAND_HEADER(VGPU_CMD_NOP, 0, 0));
}

static inline uint32_t vgpu_push_semaphore_release(uint32_t *buf, uint64_t va, uint64_t value,
                                                   bool interrupt)
{
	uint32_t n = vgpu_push_u32(buf, VGPU_COMMAND_HEADER(VGPU_CMD_SEMAPHORE_RELEASE,
	                                                    interrupt ? VGPU_SEMAPHORE_INTERRUPT : 0,
	                                                    VGPU_SEMAPHORE_ARG_WORDS));
	n += vgpu_push_u64(buf + n, va);
	n += vgpu_push_u64(buf + n, value);
	return n;
}

/* SEMAPHORE_RELEASE with VGPU_SEMAPHORE_TIMESTAMP (revision 3): the value
 * at va (16-byte aligned), the GPU's nanosecond clock at va + 8. */
static inline uint32_t vgpu_push_semaphore_release_timestamp(uint32_t *buf, uint64_t va,
                                                             uint64_t value, bool interrupt)
{
	uint32_t n = vgpu_push_u32(buf, VGPU_COMMAND_HEADER(VGPU_CMD_SEMAPHORE_RELEASE,
	                                                    VGPU_SEMAPHORE_TIMESTAMP |
	                                                    (interrupt ? VGPU_SEMAPHORE_INTERRUPT : 0),
	                                                    VGPU_SEMAPHORE_ARG_WORDS));
	n += vgpu_push_u64(buf + n, va);
	n += vgpu_push_u64(buf + n, value);
	return n;
}

static inline uint32_t vgpu_push_semaphore_acquire(uint32_t *buf, uint64_t va, uint64_t value)
{
	uint32_t n = vgpu_push_u32(buf, VGPU_COMMAND_HEADER(VGPU_CMD_SEMAPHORE_ACQUIRE, 0,
	                                                    VGPU_SEMAPHORE_ARG_WORDS));
	n += vgpu_push_u64(buf + n, va);
	n += vgpu_push_u64(buf + n, value);
	return n;
}

static inline uint32_t vgpu_push_copy(uint32_t *buf, uint64_t dst, uint64_t src, uint64_t bytes)
{
	uint32_t n = vgpu_push_u32(buf, VGPU_COMMAND_HEADER(VGPU_CMD_COPY, 0,
	                                                    VGPU_COPY_ARG_WORDS));
	n += vgpu_push_u64(buf + n, dst);
	n += vgpu_push_u64(buf + n, src);
	n += vgpu_push_u64(buf + n, bytes);
	return n;
}

static inline uint32_t vgpu_push_memset(uint32_t *buf, uint64_t dst, uint32_t pattern,
                                        uint64_t bytes)
{
	uint32_t n = vgpu_push_u32(buf, VGPU_COMMAND_HEADER(VGPU_CMD_MEMSET, 0,
	                                                    VGPU_MEMSET_ARG_WORDS));
	n += vgpu_push_u64(buf + n, dst);
	n += vgpu_push_u32(buf + n, pattern);
	n += vgpu_push_u64(buf + n, bytes);
	return n;
}

/* LAUNCH with nargs (<= VGPU_KERNEL_MAX_ARGS) 64-bit arguments. */
static inline uint32_t vgpu_push_launch(uint32_t *buf, enum vgpu_kernel kernel,
                                        const uint64_t *args, uint32_t nargs)
{
	uint32_t n, i;

	if (nargs > VGPU_KERNEL_MAX_ARGS)
		nargs = VGPU_KERNEL_MAX_ARGS;
	n = vgpu_push_u32(buf, VGPU_COMMAND_HEADER(VGPU_CMD_LAUNCH, 0, 1 + 2 * nargs));
	n += vgpu_push_u32(buf + n, (uint32_t)kernel);
	for (i = 0; i < nargs; i++)
		n += vgpu_push_u64(buf + n, args[i]);
	return n;
}

/* Words of a LAUNCH_FUNCTION with param_bytes of parameters. */
static inline uint32_t vgpu_launch_function_words(uint32_t param_bytes)
{
	return 1 + VGPU_LAUNCH_FUNCTION_FIXED_WORDS + (param_bytes + 3) / 4;
}

/* LAUNCH_FUNCTION (revision 2): buf must hold
 * vgpu_launch_function_words(param_bytes) words; param_bytes <=
 * VGPU_LAUNCH_FUNCTION_MAX_PARAM_BYTES. */
static inline uint32_t vgpu_push_launch_function(uint32_t *buf, uint32_t module,
                                                 uint32_t function,
                                                 const struct vgpu_launch_dims *dims,
                                                 const void *params, uint32_t param_bytes)
{
	uint32_t words = (param_bytes + 3) / 4, n;

	n = vgpu_push_u32(buf, VGPU_COMMAND_HEADER(VGPU_CMD_LAUNCH_FUNCTION, 0,
	                                           VGPU_LAUNCH_FUNCTION_FIXED_WORDS + words));
	n += vgpu_push_u32(buf + n, module);
	n += vgpu_push_u32(buf + n, function);
	for (int i = 0; i < 3; i++)
		n += vgpu_push_u32(buf + n, dims->grid[i]);
	for (int i = 0; i < 3; i++)
		n += vgpu_push_u32(buf + n, dims->block[i]);
	n += vgpu_push_u32(buf + n, dims->shared_bytes);
	n += vgpu_push_u32(buf + n, param_bytes);
	if (words)
		buf[n + words - 1] = 0; /* the padding */
	if (param_bytes)
		memcpy(buf + n, params, param_bytes);
	return n + words;
}

static inline uint32_t vgpu_push_launch_fill(uint32_t *buf, uint64_t dst, uint64_t bytes,
                                             uint64_t seed)
{
	const uint64_t args[] = { dst, bytes, seed };

	return vgpu_push_launch(buf, VGPU_KERNEL_FILL, args, 3);
}

static inline uint32_t vgpu_push_launch_copy(uint32_t *buf, uint64_t dst, uint64_t src,
                                             uint64_t bytes)
{
	const uint64_t args[] = { dst, src, bytes };

	return vgpu_push_launch(buf, VGPU_KERNEL_COPY, args, 3);
}

static inline uint32_t vgpu_push_launch_stream(uint32_t *buf, uint64_t buffer, uint64_t bytes,
                                               uint32_t passes)
{
	const uint64_t args[] = { buffer, bytes, passes };

	return vgpu_push_launch(buf, VGPU_KERNEL_STREAM, args, 3);
}

static inline uint32_t vgpu_push_launch_stencil(uint32_t *buf, uint64_t in, uint64_t out,
                                                uint32_t width, uint32_t height)
{
	const uint64_t args[] = { in, out, width, height };

	return vgpu_push_launch(buf, VGPU_KERNEL_STENCIL, args, 4);
}

static inline uint32_t vgpu_push_launch_random_access(uint32_t *buf, uint64_t table,
                                                      uint64_t bytes, uint64_t updates,
                                                      uint64_t seed)
{
	const uint64_t args[] = { table, bytes, updates, seed };

	return vgpu_push_launch(buf, VGPU_KERNEL_RANDOM_ACCESS, args, 4);
}

static inline uint32_t vgpu_push_launch_checksum(uint32_t *buf, uint64_t src, uint64_t bytes,
                                                 uint64_t result_va)
{
	const uint64_t args[] = { src, bytes, result_va };

	return vgpu_push_launch(buf, VGPU_KERNEL_CHECKSUM, args, 3);
}

static inline uint32_t vgpu_push_launch_throttle(uint32_t *buf, uint64_t duration_ns)
{
	const uint64_t args[] = { duration_ns };

	return vgpu_push_launch(buf, VGPU_KERNEL_THROTTLE, args, 1);
}

/* ------------------------------------------------------------------------ */
/* Ring and control page helpers (the CPU side of a channel)               */

/* Write ring entry index (masked to the ring) of a ring with entries slots. */
static inline void vgpu_gpfifo_write(void *gpfifo, uint32_t entries, uint32_t index,
                                     uint64_t pushbuffer_va, uint32_t length_bytes)
{
	struct vgpu_gpfifo_entry entry = {
		.pushbuffer_va = htole64(pushbuffer_va),
		.length_bytes = htole32(length_bytes),
		.flags = 0,
	};

	memcpy((uint8_t *)gpfifo + (size_t)(index & (entries - 1)) * VGPU_GPFIFO_ENTRY_BYTES,
	       &entry, sizeof(entry));
}

static inline uint32_t *vgpu_control_word(void *control, uint32_t offset)
{
	return (uint32_t *)((uint8_t *)control + offset);
}

/* Publish GP_PUT: every ring entry and pushbuffer written before is visible
 * to the GPU before the new GP_PUT is (release store). */
static inline void vgpu_control_write_gp_put(void *control, uint32_t gp_put)
{
	__atomic_store_n(vgpu_control_word(control, VGPU_CONTROL_GP_PUT), htole32(gp_put),
	                 __ATOMIC_RELEASE);
}

static inline uint32_t vgpu_control_read_gp_put(void *control)
{
	return le32toh(__atomic_load_n(vgpu_control_word(control, VGPU_CONTROL_GP_PUT),
	                               __ATOMIC_ACQUIRE));
}

static inline uint32_t vgpu_control_read_gp_get(void *control)
{
	return le32toh(__atomic_load_n(vgpu_control_word(control, VGPU_CONTROL_GP_GET),
	                               __ATOMIC_ACQUIRE));
}

static inline void vgpu_control_ring_doorbell(void *control)
{
	__atomic_store_n(vgpu_control_word(control, VGPU_CONTROL_DOORBELL), htole32(1),
	                 __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif

#endif /* VGPU_ABI_COMMANDS_H */
