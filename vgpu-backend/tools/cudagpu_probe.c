// SPDX-License-Identifier: MIT
/*
 * cudagpu-probe - can this machine's GPU run vgpud --gpu cuda?
 *
 * Opens the GPU through cudagpu and walks GPUswap's mechanism once, through
 * the HAL only: VRAM mapped into an address space, a chunk evicted to host
 * memory by the copy engine and remapped at the same GPU virtual address, a
 * channel that runs the built-in kernels on the evicted data, and the chunk
 * returned to VRAM. Prints each step and exits 0 when all of them worked,
 * 1 when one failed, 77 when there is no usable GPU (reason printed).
 *
 * Usage: cudagpu-probe [cuda:N]
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgpu/cudagpu.h"
#include "vgpu/hal_open.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define MIB (UINT64_C(1) << 20)
#define CHUNK (2 * MIB)
#define CHUNK_VA (64 * MIB)
#define WINDOW_VA (512 * MIB)
#define WINDOW_BYTES (64 * 1024)
#define SEMAPHORE_OFFSET 0x8000
#define RESULT_OFFSET 0x8100

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct vgpu_hal_event last[16];
static unsigned seen[8];

static void on_event(void *ctx, const struct vgpu_hal_event *event)
{
	(void)ctx;
	pthread_mutex_lock(&lock);
	if (event->type < 8) {
		seen[event->type]++;
		last[event->type] = *event;
	}
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

/* Wait until count events of type were seen (5 s at most). */
static bool wait_event(enum vgpu_hal_event_type type, unsigned count, struct vgpu_hal_event *out)
{
	struct timespec until;
	bool ok = true;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&lock);
	while (seen[type] < count && ok)
		ok = pthread_cond_timedwait(&cond, &lock, &until) == 0;
	ok = seen[type] >= count;
	if (ok && out)
		*out = last[type];
	pthread_mutex_unlock(&lock);
	return ok;
}

static int failures;

static void step(bool ok, const char *what)
{
	printf("  %-58s %s\n", what, ok ? "ok" : "FAILED");
	if (!ok)
		failures++;
}

int main(int argc, char **argv)
{
	struct vgpu_hal_spec spec;
	struct vgpu_hal *hal;
	struct vgpu_hal_caps caps;
	struct vgpu_hal_as *vm = NULL, *dma = NULL;
	struct vgpu_hal_host_buf *host, *window;
	struct vgpu_hal_channel *ch;
	struct vgpu_hal_channel_info info;
	struct vgpu_hal_event event;
	struct vgpu_error error = VGPU_ERROR_INIT;
	char text[512];
	uint64_t vram[1], new_vram[1], host_iova, window_iova, window_pages[WINDOW_BYTES / 4096];
	uint64_t *data, *back, checksum = 0;
	uint32_t push[64], n = 0, i;
	int err;

	if (vgpu_hal_spec_parse(argc > 1 ? argv[1] : "cuda", &spec, NULL) ||
	    spec.backend != VGPU_HAL_BACKEND_CUDA) {
		fprintf(stderr, "usage: cudagpu-probe [cuda:N]\n");
		return 2;
	}
	err = vgpu_hal_open(&spec, NULL, 256 * MIB, &hal, &error);
	if (err) {
		printf("cudagpu-probe: no usable GPU: %s\n", vgpu_error_msg(&error));
		return err == -ENOENT || err == -ENODEV || err == -ENOTSUP ? 77 : 1;
	}
	data = malloc(CHUNK);
	back = malloc(CHUNK);
	if (!data || !back) {
		printf("cudagpu-probe: out of memory for two %u MiB buffers\n",
		       (unsigned)(CHUNK / MIB));
		free(data);
		free(back);
		vgpu_hal_destroy(hal);
		return 1;
	}
	printf("cudagpu-probe: %s\n", cudagpu_describe(hal, text, sizeof(text)));
	vgpu_hal_get_caps(hal, &caps);
	vgpu_hal_set_event_handler(hal, on_event, NULL);
	for (i = 0; i < CHUNK / 8; i++)
		data[i] = vgpu_fill_word(42, (uint64_t)i * 8);

	step(!vgpu_hal_as_create(hal, &vm) && !vgpu_hal_as_create(hal, &dma),
	     "two address spaces (cuMemAddressReserve)");
	step(!vgpu_hal_vram_alloc(hal, VGPU_PAGE_2M, 1, vram), "a 2 MiB VRAM page (cuMemCreate)");
	step(!vgpu_hal_as_map(vm, CHUNK_VA, VGPU_PAGE_2M, 1, VGPU_TARGET_VRAM, vram, 0),
	     "mapped into the VM's space (cuMemMap + cuMemSetAccess)");
	step(!vgpu_hal_as_write(vm, CHUNK_VA, data, CHUNK) &&
	     !vgpu_hal_as_read(vm, CHUNK_VA, back, CHUNK) && !memcmp(data, back, CHUNK),
	     "written and read back through the aperture");

	step(!vgpu_hal_host_alloc(hal, CHUNK, &host) &&
	     !vgpu_hal_iommu_map(hal, host, 0, CHUNK, &host_iova),
	     "host memory on the GPU's NUMA node (CU_MEM_LOCATION_TYPE_HOST_NUMA)");
	printf("  host memory %s a CPU mapping\n",
	       vgpu_hal_host_cpu_pointer(hal, host) ? "has" : "has no");
	step(!vgpu_hal_as_map(dma, 0, VGPU_PAGE_2M, 1, VGPU_TARGET_VRAM, vram, 0) &&
	     !vgpu_hal_as_map(dma, CHUNK, VGPU_PAGE_2M, 1, VGPU_TARGET_SYSMEM_NONCOHERENT,
	                      &host_iova, 0) &&
	     !vgpu_hal_copy(dma, CHUNK, 0, CHUNK, 1) && wait_event(VGPU_EVENT_COPY_DONE, 1, &event) &&
	     event.status == 0,
	     "evicted by the copy engine (cuMemcpyAsync VRAM -> host)");
	step(!vgpu_hal_as_map(vm, CHUNK_VA, VGPU_PAGE_2M, 1, VGPU_TARGET_SYSMEM_NONCOHERENT,
	                      &host_iova, 0),
	     "remapped to host memory at the same GPU VA");
	vgpu_hal_vram_scrub(hal, VGPU_PAGE_2M, 1, vram);
	vgpu_hal_as_unmap(dma, 0, 2 * CHUNK);
	vgpu_hal_vram_free(hal, VGPU_PAGE_2M, 1, vram);
	memset(back, 0, CHUNK);
	step(!vgpu_hal_as_read(vm, CHUNK_VA, back, CHUNK) && !memcmp(data, back, CHUNK),
	     "the evicted chunk reads the same");

	step(!vgpu_hal_host_alloc(hal, WINDOW_BYTES, &window) &&
	     !vgpu_hal_iommu_map(hal, window, 0, WINDOW_BYTES, &window_iova),
	     "a channel window (registered host pages)");
	for (i = 0; i < WINDOW_BYTES / 4096; i++)
		window_pages[i] = window_iova + (uint64_t)i * 4096;
	step(!vgpu_hal_as_map(vm, WINDOW_VA, VGPU_PAGE_4K, WINDOW_BYTES / 4096,
	                      VGPU_TARGET_SYSMEM_COHERENT, window_pages, 0),
	     "mapped with 4 KiB pages");
	step(!vgpu_hal_channel_create(vm, 0, &ch, &info), "a channel (CUDA stream + GPFIFO ring)");
	/* STREAM once over the evicted chunk, CHECKSUM it, release a fence. */
	n += vgpu_push_launch_stream(push + n, CHUNK_VA, CHUNK, 1);
	n += vgpu_push_launch_checksum(push + n, CHUNK_VA, CHUNK, WINDOW_VA + RESULT_OFFSET);
	n += vgpu_push_semaphore_release(push + n, WINDOW_VA + SEMAPHORE_OFFSET, 7, true);
	vgpu_hal_as_write(vm, WINDOW_VA, push, n * 4);
	vgpu_gpfifo_write(info.gpfifo, info.layout.gpfifo_entries, 0, WINDOW_VA, n * 4);
	vgpu_control_write_gp_put(info.control, 1);
	vgpu_hal_channel_kick(ch);
	step(wait_event(VGPU_EVENT_FENCE, 1, &event) && event.value == 7,
	     "STREAM + CHECKSUM kernels on the evicted chunk, fence");
	vgpu_hal_as_read(vm, WINDOW_VA + RESULT_OFFSET, &checksum, 8);
	step(checksum == vgpu_kernel_reference_fill_stream_checksum(42, CHUNK, 1),
	     "the checksum matches the CPU reference");

	step(!vgpu_hal_vram_alloc(hal, VGPU_PAGE_2M, 1, new_vram) &&
	     !vgpu_hal_as_map(dma, 0, VGPU_PAGE_2M, 1, VGPU_TARGET_SYSMEM_NONCOHERENT, &host_iova,
	                      0) &&
	     !vgpu_hal_as_map(dma, CHUNK, VGPU_PAGE_2M, 1, VGPU_TARGET_VRAM, new_vram, 0) &&
	     !vgpu_hal_copy(dma, CHUNK, 0, CHUNK, 2) && wait_event(VGPU_EVENT_COPY_DONE, 2, &event) &&
	     event.status == 0 &&
	     !vgpu_hal_as_map(vm, CHUNK_VA, VGPU_PAGE_2M, 1, VGPU_TARGET_VRAM, new_vram, 0),
	     "returned to VRAM");
	vgpu_kernel_reference_stream(data, CHUNK, 1);
	step(!vgpu_hal_as_read(vm, CHUNK_VA, back, CHUNK) && !memcmp(data, back, CHUNK),
	     "the returned chunk holds the kernel's result");
	n = vgpu_push_launch_fill(push, CHUNK_VA + 64 * MIB, CHUNK, 1);
	vgpu_hal_as_write(vm, WINDOW_VA + 0x1000, push, n * 4);
	vgpu_gpfifo_write(info.gpfifo, info.layout.gpfifo_entries, 1, WINDOW_VA + 0x1000, n * 4);
	vgpu_control_write_gp_put(info.control, 2);
	step(wait_event(VGPU_EVENT_CHANNEL_ERROR, 1, &event) && event.cause == VGPU_FAULT_UNMAPPED &&
	     event.address == CHUNK_VA + 64 * MIB,
	     "a kernel outside the VM's mappings is refused (UNMAPPED)");

	vgpu_hal_channel_destroy(ch);
	vgpu_hal_as_unmap(vm, CHUNK_VA, CHUNK);
	vgpu_hal_as_unmap(vm, WINDOW_VA, WINDOW_BYTES);
	vgpu_hal_as_unmap(dma, 0, 2 * CHUNK);
	vgpu_hal_iommu_unmap(hal, host_iova, CHUNK);
	vgpu_hal_iommu_unmap(hal, window_iova, WINDOW_BYTES);
	vgpu_hal_host_free(hal, host);
	vgpu_hal_host_free(hal, window);
	vgpu_hal_vram_free(hal, VGPU_PAGE_2M, 1, new_vram);
	vgpu_hal_as_destroy(vm);
	vgpu_hal_as_destroy(dma);
	vgpu_hal_destroy(hal);
	free(data);
	free(back);
	printf("cudagpu-probe: %s\n", failures ? "FAILED" : "this GPU can run vgpud --gpu cuda");
	return failures ? 1 : 0;
}
