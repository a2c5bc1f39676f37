/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pushbuffer.h - feed arbitrary bytes to a simgpu channel.
 *
 * Input layout (every byte sequence is valid input):
 *   byte 0      bits 0-2: GPFIFO entries - 1; bit 3: raw entries (16 bytes
 *               each, straight from the input, else 4 bytes: u16 first word
 *               and u16 word count inside the pushbuffer area); bit 4:
 *               scribble over GP_GET; bit 5: a wild GP_PUT (u32 follows)
 *   entries     as selected
 *   the rest    pushbuffer bytes, written at FUZZ_PUSHBUFFER_VA
 * The address space maps, besides the pushbuffer: VRAM data (64 KiB page),
 * a read-only page, a privileged page, system RAM, and a page whose IOVA is
 * not mapped, at small fixed VAs a fuzzer finds quickly.
 *
 * The GPU is created once and reused; each input gets a fresh address space
 * and channel. After the entries, a privileged fence is submitted and
 * awaited (or the channel's death, or 20 ms without completion, which a
 * never-satisfied SEMAPHORE_ACQUIRE legitimately causes).
 */
#ifndef FUZZ_PUSHBUFFER_H
#define FUZZ_PUSHBUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FUZZ_PUSHBUFFER_VA UINT64_C(0x100000)
#define FUZZ_PUSHBUFFER_BYTES (64u << 10)
#define FUZZ_DATA_VA UINT64_C(0x200000)
#define FUZZ_DATA_BYTES (64u << 10)
#define FUZZ_READ_ONLY_VA UINT64_C(0x300000)
#define FUZZ_PRIVILEGED_VA UINT64_C(0x400000)
#define FUZZ_SYSMEM_VA UINT64_C(0x500000)
#define FUZZ_SYSMEM_BYTES (16u << 10)
#define FUZZ_BAD_IOVA_VA UINT64_C(0x600000)

enum fuzz_outcome {
	FUZZ_COMPLETED,  /* the fence after the input completed */
	FUZZ_CHANNEL_ERROR,
	FUZZ_STILL_RUNNING, /* e.g. waiting on an acquire; channel destroyed */
};

/* Run one input. Aborts the process if simgpu misbehaves (a fence
 * completing on a dead channel, a second error event, ...). */
enum fuzz_outcome fuzz_pushbuffer_run(const uint8_t *data, size_t size);

/* True when a fresh channel still completes work (the GPU survived). */
bool fuzz_pushbuffer_gpu_alive(void);

/* Release the GPU (tests; the fuzzer never calls it). */
void fuzz_pushbuffer_shutdown(void);

#endif /* FUZZ_PUSHBUFFER_H */
