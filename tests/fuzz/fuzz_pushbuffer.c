// SPDX-License-Identifier: MIT
/* fuzz_pushbuffer.c - feed arbitrary bytes to a simgpu channel
 * (see fuzz_pushbuffer.h). */
#include "fuzz_pushbuffer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgpu/hal.h"
#include "vgpu/simgpu.h"
#include "vgpu/abi/commands.h"

#define WAIT_MS 20

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct vgpu_hal *hal;
	uint64_t pushbuffer_pages[FUZZ_PUSHBUFFER_BYTES / 4096];
	uint64_t data_page;
	uint64_t read_only_page;
	uint64_t privileged_page;
	struct vgpu_hal_host_buf *sysmem;
	uint64_t sysmem_iova;
	/* events of the current input */
	uint32_t channel_id;
	uint64_t ticket;
	bool fence_seen;
	unsigned errors_seen;
	bool input_active;
} fuzz = { .once = PTHREAD_ONCE_INIT };

static void die(const char *what)
{
	fprintf(stderr, "fuzz_pushbuffer: %s\n", what);
	abort();
}

static void on_event(void *ctx, const struct vgpu_hal_event *event)
{
	(void)ctx;
	pthread_mutex_lock(&fuzz.lock);
	if (fuzz.input_active && event->channel_id == fuzz.channel_id) {
		if (event->type == VGPU_EVENT_PRIV_FENCE && event->value == fuzz.ticket)
			fuzz.fence_seen = true;
		if (event->type == VGPU_EVENT_CHANNEL_ERROR)
			fuzz.errors_seen++;
	}
	pthread_cond_broadcast(&fuzz.changed);
	pthread_mutex_unlock(&fuzz.lock);
}

static void setup(void)
{
	struct simgpu_config config;
	uint64_t sysmem_iova = 0;

	simgpu_config_defaults(&config);
	config.vram_bytes = 64u << 20;
	config.max_stream_passes = 4;       /* bound the work per command */
	config.max_random_updates = 4096;
	config.pfifo_idle_sleep_max_us = 100;
	pthread_mutex_init(&fuzz.lock, NULL);
	pthread_cond_init(&fuzz.changed, NULL);
	if (simgpu_create(&config, &fuzz.hal))
		die("simgpu_create failed");
	vgpu_hal_set_event_handler(fuzz.hal, on_event, NULL);
	if (vgpu_hal_vram_alloc(fuzz.hal, VGPU_PAGE_4K, FUZZ_PUSHBUFFER_BYTES / 4096,
	                        fuzz.pushbuffer_pages) ||
	    vgpu_hal_vram_alloc(fuzz.hal, VGPU_PAGE_64K, 1, &fuzz.data_page) ||
	    vgpu_hal_vram_alloc(fuzz.hal, VGPU_PAGE_4K, 1, &fuzz.read_only_page) ||
	    vgpu_hal_vram_alloc(fuzz.hal, VGPU_PAGE_4K, 1, &fuzz.privileged_page) ||
	    vgpu_hal_host_alloc(fuzz.hal, FUZZ_SYSMEM_BYTES, &fuzz.sysmem) ||
	    vgpu_hal_iommu_map(fuzz.hal, fuzz.sysmem, 0, FUZZ_SYSMEM_BYTES, &sysmem_iova))
		die("setup allocation failed");
	fuzz.sysmem_iova = sysmem_iova;
}

static void map_or_die(struct vgpu_hal_as *as, uint64_t va, uint32_t page_size, uint64_t count,
                       enum vgpu_hal_target target, const uint64_t *addresses, uint32_t flags)
{
	if (vgpu_hal_as_map(as, va, page_size, count, target, addresses, flags))
		die("as_map failed");
}

static struct vgpu_hal_as *create_address_space(void)
{
	struct vgpu_hal_as *as;
	uint64_t sysmem[FUZZ_SYSMEM_BYTES / 4096], bad_iova = UINT64_C(1) << 47;
	unsigned i;

	if (vgpu_hal_as_create(fuzz.hal, &as))
		die("as_create failed");
	for (i = 0; i < FUZZ_SYSMEM_BYTES / 4096; i++)
		sysmem[i] = fuzz.sysmem_iova + i * 4096;
	map_or_die(as, FUZZ_PUSHBUFFER_VA, VGPU_PAGE_4K, FUZZ_PUSHBUFFER_BYTES / 4096,
	           VGPU_TARGET_VRAM, fuzz.pushbuffer_pages, 0);
	map_or_die(as, FUZZ_DATA_VA, VGPU_PAGE_64K, 1, VGPU_TARGET_VRAM, &fuzz.data_page, 0);
	map_or_die(as, FUZZ_READ_ONLY_VA, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM, &fuzz.read_only_page,
	           VGPU_MAP_READ_ONLY);
	map_or_die(as, FUZZ_PRIVILEGED_VA, VGPU_PAGE_4K, 1, VGPU_TARGET_VRAM,
	           &fuzz.privileged_page, VGPU_MAP_PRIVILEGED);
	map_or_die(as, FUZZ_SYSMEM_VA, VGPU_PAGE_4K, FUZZ_SYSMEM_BYTES / 4096,
	           VGPU_TARGET_SYSMEM_NONCOHERENT, sysmem, 0);
	map_or_die(as, FUZZ_BAD_IOVA_VA, VGPU_PAGE_4K, 1, VGPU_TARGET_SYSMEM_COHERENT, &bad_iova, 0);
	return as;
}

static uint32_t read_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void deadline_after_ms(struct timespec *deadline, unsigned ms)
{
	clock_gettime(CLOCK_REALTIME, deadline);
	deadline->tv_nsec += (long)ms * 1000000L;
	while (deadline->tv_nsec >= 1000000000L) {
		deadline->tv_nsec -= 1000000000L;
		deadline->tv_sec++;
	}
}

enum fuzz_outcome fuzz_pushbuffer_run(const uint8_t *data, size_t size)
{
	struct vgpu_hal_channel_info info;
	struct vgpu_hal_channel *channel;
	struct vgpu_hal_as *as;
	struct timespec deadline;
	enum fuzz_outcome outcome;
	uint32_t entries, gp_put = 0, wild_put = 0, i;
	uint8_t mode;
	uint64_t ticket = 0;
	int ret;

	pthread_once(&fuzz.once, setup);
	if (size == 0)
		return FUZZ_COMPLETED;
	mode = data[0];
	data++;
	size--;
	as = create_address_space();
	if (vgpu_hal_channel_create(as, 16, &channel, &info))
		die("channel_create failed");
	pthread_mutex_lock(&fuzz.lock);
	fuzz.channel_id = info.id;
	fuzz.ticket = 0;
	fuzz.fence_seen = false;
	fuzz.errors_seen = 0;
	fuzz.input_active = true;
	pthread_mutex_unlock(&fuzz.lock);

	/* fetching stays off until everything is written */
	vgpu_hal_channel_set_fetch(channel, false);
	if ((mode & 0x20) && size >= 4) {
		wild_put = read_u32(data);
		data += 4;
		size -= 4;
	}
	entries = (mode & 7u) + 1;
	for (i = 0; i < entries; i++) {
		if (mode & 0x08) {
			struct vgpu_gpfifo_entry raw = { 0, 0, 0 };
			size_t n = size < sizeof(raw) ? size : sizeof(raw);

			memcpy(&raw, data, n);
			memcpy((uint8_t *)info.gpfifo + (size_t)gp_put * VGPU_GPFIFO_ENTRY_BYTES,
			       &raw, sizeof(raw));
			data += n;
			size -= n;
		} else {
			uint32_t first = 0, count = 0;

			if (size >= 4) {
				first = (uint32_t)data[0] | (uint32_t)data[1] << 8;
				count = (uint32_t)data[2] | (uint32_t)data[3] << 8;
				data += 4;
				size -= 4;
			}
			vgpu_gpfifo_write(info.gpfifo, 16, gp_put,
			                  FUZZ_PUSHBUFFER_VA + (uint64_t)first * 4, count * 4);
		}
		gp_put = (gp_put + 1) & 15;
	}
	if (size > FUZZ_PUSHBUFFER_BYTES)
		size = FUZZ_PUSHBUFFER_BYTES;
	if (size && vgpu_hal_as_write(as, FUZZ_PUSHBUFFER_VA, data, size))
		die("as_write failed");
	vgpu_control_write_gp_put(info.control, (mode & 0x20) ? wild_put : gp_put);
	if (mode & 0x10)
		__atomic_store_n((uint32_t *)((uint8_t *)info.control + VGPU_CONTROL_GP_GET),
		                 0xdeadbeef, __ATOMIC_RELEASE);
	ret = vgpu_hal_channel_priv_submit(channel, VGPU_PRIV_FENCE, &ticket);
	if (ret && ret != -EIO && ret != -ENOSPC)
		die("priv_submit: unexpected error");
	pthread_mutex_lock(&fuzz.lock);
	fuzz.ticket = ticket;
	pthread_mutex_unlock(&fuzz.lock);
	vgpu_hal_channel_set_fetch(channel, true);

	deadline_after_ms(&deadline, WAIT_MS);
	pthread_mutex_lock(&fuzz.lock);
	while (!fuzz.fence_seen && !fuzz.errors_seen)
		if (pthread_cond_timedwait(&fuzz.changed, &fuzz.lock, &deadline) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&fuzz.lock);

	vgpu_hal_channel_destroy(channel);
	pthread_mutex_lock(&fuzz.lock);
	fuzz.input_active = false;
	if (fuzz.errors_seen > 1)
		die("more than one error event for one channel");
	if (fuzz.fence_seen && fuzz.errors_seen)
		die("a dead channel completed a fence");
	outcome = fuzz.errors_seen ? FUZZ_CHANNEL_ERROR
	          : fuzz.fence_seen ? FUZZ_COMPLETED : FUZZ_STILL_RUNNING;
	pthread_mutex_unlock(&fuzz.lock);
	vgpu_hal_as_destroy(as);
	return outcome;
}

bool fuzz_pushbuffer_gpu_alive(void)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS + 1];
	uint8_t input[1 + 4 + sizeof(words)];
	uint32_t n = vgpu_push_semaphore_release(words, FUZZ_DATA_VA, 1, true);

	/* one entry over n words at word 0 */
	input[0] = 0;
	input[1] = 0;
	input[2] = 0;
	input[3] = (uint8_t)n;
	input[4] = 0;
	memcpy(input + 5, words, n * 4);
	return fuzz_pushbuffer_run(input, 5 + n * 4) == FUZZ_COMPLETED;
}

void fuzz_pushbuffer_shutdown(void)
{
	if (!fuzz.hal)
		return;
	vgpu_hal_iommu_unmap(fuzz.hal, fuzz.sysmem_iova, FUZZ_SYSMEM_BYTES);
	vgpu_hal_host_free(fuzz.hal, fuzz.sysmem);
	vgpu_hal_destroy(fuzz.hal);
	fuzz.hal = NULL;
	pthread_cond_destroy(&fuzz.changed);
	pthread_mutex_destroy(&fuzz.lock);
}
