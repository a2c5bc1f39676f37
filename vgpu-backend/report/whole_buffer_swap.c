// SPDX-License-Identifier: MIT
/* whole_buffer_swap.c - Gdev-style whole-buffer swapping, see whole_buffer_swap.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/abi/commands.h"
#include "whole_buffer_swap.h"

#define VRAM_PAGE 65536u
#define HOST_PAGE 4096u
#define COPY_TIMEOUT_MS 120000
#define BUFFERS_MAX 16

struct swapped_buffer {
	uint64_t bytes;
	uint64_t va;      /* where kernels use it */
	uint64_t host_va; /* its backing copy, mapped SYSMEM */
	struct vgpu_hal_host_buf *host;
	uint64_t iova;
	bool iova_mapped;
	uint64_t *vram;   /* bytes / VRAM_PAGE pages while resident, else NULL */
	uint64_t last_use;
};

struct whole_buffer_swap {
	struct vgpu_hal *hal;
	struct vgpu_vm *vm;
	struct vgpu_hal_as *as;
	struct sim_guest *guest;
	struct swapped_buffer buffers[BUFFERS_MAX];
	unsigned count;
	uint64_t vram_bytes, use_clock, copied;
	char error[160];
};

int whole_buffer_swap_create(struct vgpu_hal *hal, struct vgpu_vm *vm, struct sim_guest *guest,
                             struct whole_buffer_swap **out)
{
	struct whole_buffer_swap *swap = calloc(1, sizeof(*swap));
	struct vgpu_hal_caps caps;

	if (!swap)
		return -ENOMEM;
	vgpu_hal_get_caps(hal, &caps);
	swap->hal = hal;
	swap->vm = vm;
	swap->as = vgpu_core_vm_address_space(vm);
	swap->guest = guest;
	swap->vram_bytes = caps.vram_bytes;
	*out = swap;
	return 0;
}

static int fail(struct whole_buffer_swap *swap, int err, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

static int fail(struct whole_buffer_swap *swap, int err, const char *format, ...)
{
	va_list args;

	va_start(args, format);
	vsnprintf(swap->error, sizeof(swap->error), format, args);
	va_end(args);
	return err;
}

const char *whole_buffer_swap_error(const struct whole_buffer_swap *swap)
{
	return swap->error;
}

uint64_t whole_buffer_swap_copied(const struct whole_buffer_swap *swap)
{
	return swap->copied;
}

/* One COPY command on the VM's channel, waited for. */
static int channel_copy(struct whole_buffer_swap *swap, uint64_t dst, uint64_t src,
                        uint64_t bytes)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	int err = sim_guest_run(swap->guest, words, vgpu_push_copy(words, dst, src, bytes),
	                        COPY_TIMEOUT_MS);

	if (err)
		return fail(swap, err, "copy of %llu bytes failed: %s", (unsigned long long)bytes,
		            err == -EIO ? sim_guest_error(swap->guest) : strerror(-err));
	swap->copied += bytes;
	return 0;
}

static int swap_out(struct whole_buffer_swap *swap, struct swapped_buffer *buffer)
{
	uint64_t pages = buffer->bytes / VRAM_PAGE;
	int err = channel_copy(swap, buffer->host_va, buffer->va, buffer->bytes);

	if (err)
		return err;
	err = vgpu_hal_as_unmap(swap->as, buffer->va, buffer->bytes);
	if (err)
		return fail(swap, err, "unmap: %s", strerror(-err));
	vgpu_hal_as_tlb_invalidate(swap->as);
	vgpu_hal_vram_free(swap->hal, VRAM_PAGE, pages, buffer->vram);
	free(buffer->vram);
	buffer->vram = NULL;
	return 0;
}

/* VRAM pages mapped at the buffer's address; copy_in: its contents too. */
static int swap_in(struct whole_buffer_swap *swap, struct swapped_buffer *buffer, bool copy_in)
{
	uint64_t pages = buffer->bytes / VRAM_PAGE;
	uint64_t *vram = malloc(pages * sizeof(*vram));
	int err;

	if (!vram)
		return fail(swap, -ENOMEM, "out of host memory");
	err = vgpu_hal_vram_alloc(swap->hal, VRAM_PAGE, pages, vram);
	if (!err)
		err = vgpu_hal_as_map(swap->as, buffer->va, VRAM_PAGE, pages, VGPU_TARGET_VRAM, vram, 0);
	if (err) {
		free(vram);
		return fail(swap, err, "VRAM for %llu bytes: %s", (unsigned long long)buffer->bytes,
		            strerror(-err));
	}
	buffer->vram = vram;
	return copy_in ? channel_copy(swap, buffer->va, buffer->host_va, buffer->bytes) : 0;
}

static bool pinned(const unsigned *pins, unsigned count, unsigned index)
{
	for (unsigned i = 0; i < count; i++)
		if (pins[i] == index)
			return true;
	return false;
}

/* Swap out least recently used buffers (not pinned) until bytes fit. */
static int make_room(struct whole_buffer_swap *swap, uint64_t bytes, const unsigned *pins,
                     unsigned pin_count)
{
	while (vgpu_hal_vram_free_bytes(swap->hal) < bytes) {
		struct swapped_buffer *lru = NULL;
		int err;

		for (unsigned i = 0; i < swap->count; i++) {
			struct swapped_buffer *b = &swap->buffers[i];

			if (b->vram && !pinned(pins, pin_count, i) &&
			    (!lru || b->last_use < lru->last_use))
				lru = b;
		}
		if (!lru)
			return fail(swap, -ENOSPC, "no buffer left to swap out for %llu bytes",
			            (unsigned long long)bytes);
		err = swap_out(swap, lru);
		if (err)
			return err;
	}
	return 0;
}

int whole_buffer_swap_alloc(struct whole_buffer_swap *swap, uint64_t bytes, unsigned *index,
                            uint64_t *va)
{
	struct swapped_buffer *buffer;
	uint64_t host_pages = bytes / HOST_PAGE, *pages;
	int err;

	if (!bytes || bytes % VRAM_PAGE || swap->count == BUFFERS_MAX)
		return fail(swap, -EINVAL, "bad buffer size or too many buffers");
	if (bytes > swap->vram_bytes)
		return fail(swap, -E2BIG, "a buffer of %llu MiB is larger than VRAM (%llu MiB)",
		            (unsigned long long)(bytes >> 20),
		            (unsigned long long)(swap->vram_bytes >> 20));
	/* Counted at once: destroy releases what a failed alloc set up. */
	buffer = &swap->buffers[swap->count++];
	memset(buffer, 0, sizeof(*buffer));
	buffer->bytes = bytes;
	err = vgpu_core_reserve_va(swap->vm, bytes, &buffer->va, NULL);
	if (!err)
		err = vgpu_core_reserve_va(swap->vm, bytes, &buffer->host_va, NULL);
	if (!err)
		err = vgpu_hal_host_alloc(swap->hal, bytes, &buffer->host);
	if (!err)
		err = vgpu_hal_iommu_map(swap->hal, buffer->host, 0, bytes, &buffer->iova);
	buffer->iova_mapped = !err;
	if (err)
		return fail(swap, err, "backing store: %s", strerror(-err));
	pages = malloc(host_pages * sizeof(*pages));
	if (!pages)
		return fail(swap, -ENOMEM, "out of host memory");
	for (uint64_t i = 0; i < host_pages; i++)
		pages[i] = buffer->iova + i * HOST_PAGE;
	err = vgpu_hal_as_map(swap->as, buffer->host_va, HOST_PAGE, host_pages,
	                      VGPU_TARGET_SYSMEM_NONCOHERENT, pages, 0);
	free(pages);
	if (err)
		return fail(swap, err, "mapping the backing store: %s", strerror(-err));
	*index = swap->count - 1;
	*va = buffer->va;
	buffer->last_use = ++swap->use_clock;
	err = make_room(swap, bytes, index, 1);
	return err ? err : swap_in(swap, buffer, false);
}

int whole_buffer_swap_prepare(struct whole_buffer_swap *swap, const unsigned *buffers,
                              unsigned count)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < count; i++)
		if (!pinned(buffers, i, buffers[i]))
			total += swap->buffers[buffers[i]].bytes;
	if (total > swap->vram_bytes)
		return fail(swap, -E2BIG, "a kernel's buffers (%llu MiB) do not fit into VRAM "
		            "(%llu MiB)", (unsigned long long)(total >> 20),
		            (unsigned long long)(swap->vram_bytes >> 20));
	for (unsigned i = 0; i < count; i++) {
		struct swapped_buffer *buffer = &swap->buffers[buffers[i]];
		int err;

		buffer->last_use = ++swap->use_clock;
		if (buffer->vram)
			continue;
		err = make_room(swap, buffer->bytes, buffers, count);
		if (!err)
			err = swap_in(swap, buffer, true);
		if (err)
			return err;
	}
	return 0;
}

static void release(struct whole_buffer_swap *swap, struct swapped_buffer *buffer)
{
	/* Releasing a reservation unmaps it and invalidates the TLB. */
	if (buffer->va)
		vgpu_core_release_va(swap->vm, buffer->va, NULL);
	if (buffer->host_va)
		vgpu_core_release_va(swap->vm, buffer->host_va, NULL);
	if (buffer->vram) {
		vgpu_hal_vram_free(swap->hal, VRAM_PAGE, buffer->bytes / VRAM_PAGE, buffer->vram);
		free(buffer->vram);
	}
	if (buffer->iova_mapped)
		vgpu_hal_iommu_unmap(swap->hal, buffer->iova, buffer->bytes);
	if (buffer->host)
		vgpu_hal_host_free(swap->hal, buffer->host);
	memset(buffer, 0, sizeof(*buffer));
}

void whole_buffer_swap_free(struct whole_buffer_swap *swap, unsigned index)
{
	if (index >= swap->count)
		return;
	release(swap, &swap->buffers[index]);
	if (index == swap->count - 1)
		swap->count--;
}

void whole_buffer_swap_destroy(struct whole_buffer_swap *swap)
{
	if (!swap)
		return;
	for (unsigned i = 0; i < swap->count; i++)
		release(swap, &swap->buffers[i]);
	free(swap);
}
