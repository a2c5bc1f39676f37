// SPDX-License-Identifier: MIT
/*
 * window_copy.c - copying a channel window between its real and shadow
 * pages.
 *
 * Always called inside a block..map window, so the guest is not touching the
 * pages being copied. The GPU may be: it writes GP_GET in the real control
 * page at any time and reads GP_PUT and the ring. Control words are therefore
 * accessed as 32-bit atomics (the GPU's own accesses are atomic too), and the
 * real GP_PUT is published last with release ordering.
 */
#include <stddef.h>
#include <string.h>

#include "shadow_internal.h"

static uint32_t *control_word(void *page, uint32_t offset)
{
	return (uint32_t *)((char *)page + offset);
}

uint32_t shadow_real_gp_put(const struct vgpu_shadow_channel *sc)
{
	uint32_t put = __atomic_load_n(control_word(sc->real_control, sc->layout.gp_put_offset),
	                               __ATOMIC_ACQUIRE);

	return put & sc->ring_mask;
}

void shadow_copy_real_to_shadow(struct vgpu_shadow_channel *sc)
{
	uint32_t words = sc->layout.control_bytes / sizeof(uint32_t);
	uint32_t i;

	for (i = 0; i < words; i++) {
		uint32_t value = __atomic_load_n(control_word(sc->real_control, i * 4),
		                                 __ATOMIC_ACQUIRE);

		__atomic_store_n(control_word(sc->shadow_control, i * 4), value,
		                 __ATOMIC_RELAXED);
	}
	/* The ring is written only by the guest (blocked) and by
	 * channel_priv_submit (only we call it, not now). */
	memcpy(sc->shadow_gpfifo, sc->real_gpfifo, sc->layout.gpfifo_bytes);

	sc->guest_put = __atomic_load_n(control_word(sc->shadow_control, sc->layout.gp_put_offset),
	                                __ATOMIC_RELAXED) & sc->ring_mask;
	sc->guest_get = __atomic_load_n(control_word(sc->shadow_control, sc->layout.gp_get_offset),
	                                __ATOMIC_RELAXED);
}

void shadow_copy_shadow_to_real(struct vgpu_shadow_channel *sc)
{
	uint32_t words = sc->layout.control_bytes / sizeof(uint32_t);
	uint32_t get_word = sc->layout.gp_get_offset / sizeof(uint32_t);
	uint32_t put_word = sc->layout.gp_put_offset / sizeof(uint32_t);
	uint32_t i;

	/* GP_GET == GP_PUT on the real channel: the GPU reads no ring slot. */
	memcpy(sc->real_gpfifo, sc->shadow_gpfifo, sc->layout.gpfifo_bytes);

	/* Everything the guest may have written except GP_PUT (last) and
	 * GP_GET (the GPU's; the guest cannot write it). */
	for (i = 0; i < words; i++) {
		uint32_t value;

		if (i == get_word || i == put_word)
			continue;
		value = __atomic_load_n(control_word(sc->shadow_control, i * 4), __ATOMIC_RELAXED);
		__atomic_store_n(control_word(sc->real_control, i * 4), value, __ATOMIC_RELAXED);
	}
	__atomic_store_n(control_word(sc->real_control, sc->layout.gp_put_offset),
	                 __atomic_load_n(control_word(sc->shadow_control, sc->layout.gp_put_offset),
	                                 __ATOMIC_RELAXED),
	                 __ATOMIC_RELEASE);
}
