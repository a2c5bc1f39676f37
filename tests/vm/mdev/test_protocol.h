/* SPDX-License-Identifier: MIT */
/*
 * test_protocol.h - how the vgpu_mdev tests talk to fake-vgpud through the
 * vGPU itself: a *test-only* command block in the first page of BAR2 (the
 * mailbox memory fake-vgpud maps there), rung with VGPU_REG_MAILBOX_DOORBELL.
 * Not the real mailbox protocol of device_abi.h: the tests exercise the
 * module (mapping, doorbell relay, interrupts, DMA, swaps), not vgpud.
 *
 * A client writes T_CMD, T_ARG0/1, then increments T_SEQ, then rings the
 * doorbell; fake-vgpud performs the command, writes T_RESULT/T_VALUE*,
 * then T_DONE_SEQ = T_SEQ, sets VGPU_IRQ_MAILBOX in IRQ_STATUS and raises
 * VGPU_MSIX_VECTOR_MAILBOX.
 *
 * BAR2 [T_PATTERN_OFFSET, VGPU_MAILBOX_SIZE) holds t_pattern(word index).
 * Channel window 0 is backed by fake-vgpud's "real" memfd (T_WINDOW_BYTES);
 * its first T_SWAP_BYTES (control page + GPFIFO) are what swaps shadow.
 */
#ifndef VGPU_TEST_PROTOCOL_H
#define VGPU_TEST_PROTOCOL_H

#include <stdint.h>

#include <vgpu/abi/device_abi.h>

#define T_CMD 0x100       /* uint32_t */
#define T_SEQ 0x104       /* uint32_t */
#define T_ARG0 0x108      /* uint64_t */
#define T_ARG1 0x110      /* uint64_t */
#define T_DONE_SEQ 0x118  /* uint32_t */
#define T_RESULT 0x11c    /* uint32_t: 0 = ok */
#define T_VALUE0 0x120    /* uint64_t */
#define T_VALUE1 0x128    /* uint64_t */
#define T_MESSAGE 0x140   /* char[192] */
#define T_MESSAGE_MAX 192

#define T_PATTERN_OFFSET 0x1000u

#define T_WINDOW_OFFSET VGPU_CHANNEL_WINDOW_BASE /* window 0 */
#define T_WINDOW_BYTES 0x10000u
#define T_SWAP_BYTES 0x4000u

enum t_command {
	T_PING = 1,        /* VALUE0 = ARG0 + 1 */
	T_RAISE = 2,       /* IRQ_STATUS |= ARG1, raise vectors ARG0 */
	T_DMA = 3,         /* guest buffer at IOVA ARG0, ARG1 bytes holds t_dma_pattern();
	                      fake-vgpud checks it (VALUE0 = words matching), pins and
	                      unpins it, then writes ~t_dma_pattern() back */
	T_PIN = 4,         /* pin ARG1 pages at IOVA ARG0 and keep them; VALUE0 = pin id */
	T_SWAP_START = 5,  /* swap window 0 to shadow and back every ARG0 microseconds */
	T_SWAP_STOP = 6,   /* stop (real pages mapped), check words [0, ARG0) of the real
	                      window are i + 1: VALUE0 = swaps, VALUE1 = first bad word or ~0 */
	T_STATS = 7,       /* VALUE0 = PIN_RELEASED events, VALUE1 = doorbell events */
	T_DIE_BLOCKED = 8, /* answer, block window 0's swap range, sleep ARG0 ms, exit */
	T_READ_REG = 9,    /* VALUE0 = VGPU_MDEV_REG_READ(ARG0) */
};

static inline uint32_t t_pattern(uint32_t word)
{
	return 0x5a000000u ^ (word * 2654435761u);
}

static inline uint32_t t_dma_pattern(uint32_t word)
{
	return 0xd0000000u ^ (word * 40503u);
}

#endif /* VGPU_TEST_PROTOCOL_H */
