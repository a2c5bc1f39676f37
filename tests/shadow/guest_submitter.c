// SPDX-License-Identifier: MIT
/*
 * guest_submitter.c - a guest driver submitting work into one channel window
 * through the guest window double, checking its view on every access.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guest_double.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define PAGE_BYTES 4096u
#define REGION_ALIGN 65536u
#define PUSHBUFFER_SLOT_BYTES 256u
#define RAW_SLOTS 256u

/* The log in the data region. */
#define SEQ_OFFSET 0u
#define RECORD_OFFSET 64u

struct guest_submitter {
	struct vgpu_hal *hal;
	struct vgpu_hal_as *as;
	struct guest_window_double *window;
	struct vgpu_hal_channel_info info;
	uint32_t entries;
	uint32_t mask;
	uint64_t reserved_base;
	uint32_t max_submissions;
	uint32_t max_pause_us;
	uint64_t rng;

	/* Memory. */
	uint64_t data_va;
	uint64_t data_bytes;
	uint64_t counter_offset;
	uint64_t pushbuffer_va;
	uint64_t pushbuffer_bytes;
	uint64_t pushbuffer_slots;
	bool alloc_memory;
	uint64_t *vram_pages;
	uint64_t vram_page_count;
	struct vgpu_hal_host_buf *pushbuffer_buf;
	uint8_t *pushbuffer_cpu; /* NULL: write through vgpu_hal_as_write */
	uint64_t pushbuffer_iova;

	/* The guest driver's own state (one thread at a time). */
	uint32_t put;      /* its GP_PUT */
	uint32_t last_get; /* the last GP_GET it read */
	struct vgpu_gpfifo_entry *mirror; /* what it wrote to each slot */
	uint64_t next_slot;
	uint64_t next_ordered;

	/* Shared with other threads. */
	uint64_t submitted; /* atomic: ordered submissions published */
	uint64_t view_errors; /* atomic */
	pthread_mutex_t error_lock;
	char first_error[256];

	pthread_t thread;
	bool running;
	bool stop; /* atomic */
};

static uint64_t align_up(uint64_t value, uint64_t align)
{
	return (value + align - 1) / align * align;
}

static uint64_t counter_offset_of(uint32_t max_submissions)
{
	return align_up(RECORD_OFFSET + 8ull * max_submissions, 64);
}

static uint64_t scratch_offset_of(uint32_t max_submissions)
{
	return align_up(counter_offset_of(max_submissions) + 8ull * max_submissions, PAGE_BYTES);
}

uint64_t guest_submitter_data_bytes(uint32_t max_submissions)
{
	return align_up(scratch_offset_of(max_submissions) + PAGE_BYTES, REGION_ALIGN);
}

uint64_t guest_submitter_scratch_va(struct guest_submitter *guest)
{
	return guest->data_va + scratch_offset_of(guest->max_submissions);
}

uint64_t guest_submitter_pushbuffer_bytes(uint32_t max_submissions)
{
	return align_up(((uint64_t)max_submissions + RAW_SLOTS) * PUSHBUFFER_SLOT_BYTES,
	                REGION_ALIGN);
}

static void record_error(struct guest_submitter *guest, const char *fmt, ...)
{
	va_list args;

	pthread_mutex_lock(&guest->error_lock);
	if (!__atomic_load_n(&guest->view_errors, __ATOMIC_RELAXED)) {
		va_start(args, fmt);
		vsnprintf(guest->first_error, sizeof(guest->first_error), fmt, args);
		va_end(args);
	}
	__atomic_add_fetch(&guest->view_errors, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&guest->error_lock);
}

uint64_t guest_submitter_view_errors(struct guest_submitter *guest, char *first, size_t len)
{
	uint64_t errors;

	pthread_mutex_lock(&guest->error_lock);
	errors = __atomic_load_n(&guest->view_errors, __ATOMIC_RELAXED);
	if (first && len)
		snprintf(first, len, "%s", errors ? guest->first_error : "none");
	pthread_mutex_unlock(&guest->error_lock);
	return errors;
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */

static int zero_range(struct guest_submitter *guest, uint64_t va, uint64_t bytes)
{
	static const uint8_t zeros[REGION_ALIGN];
	uint64_t done;
	int ret;

	for (done = 0; done < bytes; done += sizeof(zeros)) {
		ret = vgpu_hal_as_write(guest->as, va + done, zeros, sizeof(zeros));
		if (ret)
			return ret;
	}
	return 0;
}

static int alloc_memory(struct guest_submitter *guest)
{
	uint64_t pages = guest->pushbuffer_bytes / PAGE_BYTES, i;
	uint64_t *iovas;
	int ret;

	guest->vram_page_count = guest->data_bytes / PAGE_BYTES;
	guest->vram_pages = calloc(guest->vram_page_count, sizeof(uint64_t));
	iovas = calloc(pages, sizeof(uint64_t));
	if (!guest->vram_pages || !iovas) {
		free(iovas);
		return -ENOMEM;
	}
	ret = vgpu_hal_vram_alloc(guest->hal, VGPU_PAGE_4K, guest->vram_page_count,
	                          guest->vram_pages);
	if (ret) {
		free(guest->vram_pages);
		guest->vram_pages = NULL;
		free(iovas);
		return ret;
	}
	ret = vgpu_hal_as_map(guest->as, guest->data_va, VGPU_PAGE_4K, guest->vram_page_count,
	                      VGPU_TARGET_VRAM, guest->vram_pages, 0);
	if (ret)
		goto out;

	ret = vgpu_hal_host_alloc(guest->hal, guest->pushbuffer_bytes, &guest->pushbuffer_buf);
	if (ret)
		goto out;
	guest->pushbuffer_cpu = vgpu_hal_host_cpu_pointer(guest->hal, guest->pushbuffer_buf);
	ret = vgpu_hal_iommu_map(guest->hal, guest->pushbuffer_buf, 0, guest->pushbuffer_bytes,
	                         &guest->pushbuffer_iova);
	if (ret) {
		vgpu_hal_host_free(guest->hal, guest->pushbuffer_buf);
		guest->pushbuffer_buf = NULL;
		goto out;
	}
	for (i = 0; i < pages; i++)
		iovas[i] = guest->pushbuffer_iova + i * PAGE_BYTES;
	ret = vgpu_hal_as_map(guest->as, guest->pushbuffer_va, VGPU_PAGE_4K, pages,
	                      VGPU_TARGET_SYSMEM_COHERENT, iovas, 0);
out:
	free(iovas);
	return ret;
}

static void free_memory(struct guest_submitter *guest)
{
	if (!guest->alloc_memory)
		return;
	vgpu_hal_as_unmap(guest->as, guest->data_va, guest->data_bytes);
	vgpu_hal_as_unmap(guest->as, guest->pushbuffer_va, guest->pushbuffer_bytes);
	vgpu_hal_as_tlb_invalidate(guest->as);
	if (guest->pushbuffer_buf) {
		vgpu_hal_iommu_unmap(guest->hal, guest->pushbuffer_iova, guest->pushbuffer_bytes);
		vgpu_hal_host_free(guest->hal, guest->pushbuffer_buf);
	}
	if (guest->vram_pages)
		vgpu_hal_vram_free(guest->hal, VGPU_PAGE_4K, guest->vram_page_count,
		                   guest->vram_pages);
	free(guest->vram_pages);
}

int guest_submitter_create(const struct guest_submitter_config *config,
                           struct guest_submitter **out)
{
	struct guest_submitter *guest;
	struct vgpu_hal_caps caps;
	int ret;

	if (!config->hal || !config->as || !config->window || !config->info ||
	    !config->max_submissions || config->data_va % REGION_ALIGN ||
	    config->pushbuffer_va % REGION_ALIGN ||
	    config->info->layout.gpfifo_entry_bytes != VGPU_GPFIFO_ENTRY_BYTES)
		return -EINVAL;
	guest = calloc(1, sizeof(*guest));
	if (!guest)
		return -ENOMEM;
	vgpu_hal_get_caps(config->hal, &caps);
	guest->hal = config->hal;
	guest->as = config->as;
	guest->window = config->window;
	guest->info = *config->info;
	guest->entries = config->info->layout.gpfifo_entries;
	guest->mask = guest->entries - 1;
	guest->reserved_base = caps.va_reserved_base;
	guest->max_submissions = config->max_submissions;
	guest->max_pause_us = config->max_pause_us;
	guest->rng = config->seed ? config->seed : 0x2545f4914f6cdd1dull;
	guest->data_va = config->data_va;
	guest->data_bytes = guest_submitter_data_bytes(config->max_submissions);
	guest->counter_offset = counter_offset_of(config->max_submissions);
	guest->pushbuffer_va = config->pushbuffer_va;
	guest->pushbuffer_bytes = guest_submitter_pushbuffer_bytes(config->max_submissions);
	guest->pushbuffer_slots = guest->pushbuffer_bytes / PUSHBUFFER_SLOT_BYTES;
	guest->alloc_memory = config->alloc_memory;
	pthread_mutex_init(&guest->error_lock, NULL);

	guest->mirror = calloc(guest->entries, sizeof(*guest->mirror));
	if (!guest->mirror) {
		ret = -ENOMEM;
		goto fail;
	}
	if (config->alloc_memory) {
		ret = alloc_memory(guest);
		if (ret)
			goto fail;
	}
	ret = zero_range(guest, guest->data_va, guest->data_bytes);
	if (ret)
		goto fail;

	/* Adopt the channel's current state as the driver's own. */
	{
		struct guest_window_view view;
		uint32_t i;

		guest_window_enter(guest->window, guest->info.id, &view);
		guest->put = vgpu_control_read_gp_put(view.control) & guest->mask;
		guest->last_get = vgpu_control_read_gp_get(view.control) & guest->mask;
		for (i = 0; i < guest->entries; i++)
			memcpy(&guest->mirror[i],
			       (uint8_t *)view.gpfifo + (size_t)i * VGPU_GPFIFO_ENTRY_BYTES,
			       VGPU_GPFIFO_ENTRY_BYTES);
		guest_window_leave(guest->window, guest->info.id);
	}
	*out = guest;
	return 0;
fail:
	free_memory(guest);
	free(guest->mirror);
	pthread_mutex_destroy(&guest->error_lock);
	free(guest);
	return ret;
}

void guest_submitter_destroy(struct guest_submitter *guest)
{
	if (!guest)
		return;
	guest_submitter_stop(guest);
	free_memory(guest);
	free(guest->mirror);
	pthread_mutex_destroy(&guest->error_lock);
	free(guest);
}

/* ------------------------------------------------------------------------ */
/* The guest's view                                                         */

/* Compare the mapped ring with what the guest wrote; report the first
 * difference. Caller is inside an access. */
static bool ring_matches(struct guest_submitter *guest, const void *gpfifo, bool report)
{
	uint32_t i;

	if (!memcmp(gpfifo, guest->mirror, (size_t)guest->entries * VGPU_GPFIFO_ENTRY_BYTES))
		return true;
	if (!report)
		return false;
	for (i = 0; i < guest->entries; i++) {
		struct vgpu_gpfifo_entry seen;
		const struct vgpu_gpfifo_entry *wrote = &guest->mirror[i];

		memcpy(&seen, (const uint8_t *)gpfifo + (size_t)i * VGPU_GPFIFO_ENTRY_BYTES,
		       sizeof(seen));
		if (memcmp(&seen, wrote, sizeof(seen))) {
			record_error(guest,
			             "ring slot %u shows va %#llx len %u%s; the guest wrote va %#llx "
			             "len %u",
			             i, (unsigned long long)le64toh(seen.pushbuffer_va),
			             le32toh(seen.length_bytes),
			             le64toh(seen.pushbuffer_va) >= guest->reserved_base
			                     ? " (a backend NOP/fence)"
			                     : "",
			             (unsigned long long)le64toh(wrote->pushbuffer_va),
			             le32toh(wrote->length_bytes));
			break;
		}
	}
	return false;
}

/* Check the control page the guest sees; returns GP_GET. Inside an access. */
static uint32_t check_control(struct guest_submitter *guest, void *control)
{
	uint32_t get = vgpu_control_read_gp_get(control);
	uint32_t put = vgpu_control_read_gp_put(control);
	uint32_t moved = (get - guest->last_get) & guest->mask;
	uint32_t pending = (guest->put - guest->last_get) & guest->mask;

	if (put != guest->put)
		record_error(guest, "GP_PUT reads %u, the guest wrote %u", put, guest->put);
	if (get > guest->mask) {
		record_error(guest, "GP_GET reads %u, outside a ring of %u", get, guest->entries);
		return guest->last_get;
	}
	if (moved > pending) {
		record_error(guest, "GP_GET reads %u: moved back or past the guest's GP_PUT %u "
		             "(last read %u)",
		             get, guest->put, guest->last_get);
		return guest->last_get;
	}
	guest->last_get = get;
	return get;
}

void guest_submitter_read_view(struct guest_submitter *guest, struct guest_submitter_view *out)
{
	struct guest_window_view view;

	guest_window_enter(guest->window, guest->info.id, &view);
	out->gp_put = vgpu_control_read_gp_put(view.control);
	out->gp_get = vgpu_control_read_gp_get(view.control);
	out->ring_matches = ring_matches(guest, view.gpfifo, false);
	out->shadow = view.shadow;
	check_control(guest, view.control);
	guest_window_leave(guest->window, guest->info.id);
}

uint32_t guest_submitter_put(struct guest_submitter *guest)
{
	return guest->put;
}

/* ------------------------------------------------------------------------ */
/* Submission                                                               */

static int write_pushbuffer(struct guest_submitter *guest, uint64_t slot, const uint32_t *words,
                            uint32_t count)
{
	uint64_t offset = slot * PUSHBUFFER_SLOT_BYTES;

	if (guest->pushbuffer_cpu) {
		memcpy(guest->pushbuffer_cpu + offset, words, count * sizeof(uint32_t));
		return 0;
	}
	return vgpu_hal_as_write(guest->as, guest->pushbuffer_va + offset, words,
	                         count * sizeof(uint32_t));
}

static int submit_words(struct guest_submitter *guest, const uint32_t *words, uint32_t count,
                        bool ordered)
{
	struct guest_window_view view;
	struct vgpu_gpfifo_entry *entry;
	uint64_t slot, va;
	uint32_t get;
	int ret;

	if (count * sizeof(uint32_t) > PUSHBUFFER_SLOT_BYTES)
		return -EINVAL;
	if (guest->next_slot >= guest->pushbuffer_slots)
		return -ENOSPC;

	/* Access 1: is there room (GP_GET), is the view sane? */
	guest_window_enter(guest->window, guest->info.id, &view);
	get = check_control(guest, view.control);
	ring_matches(guest, view.gpfifo, true);
	guest_window_leave(guest->window, guest->info.id);
	if (((guest->put + 1) & guest->mask) == get)
		return -EAGAIN;

	slot = guest->next_slot++;
	va = guest->pushbuffer_va + slot * PUSHBUFFER_SLOT_BYTES;
	ret = write_pushbuffer(guest, slot, words, count);
	if (ret)
		return ret;

	/* Access 2: the GPFIFO entry. */
	guest_window_enter(guest->window, guest->info.id, &view);
	vgpu_gpfifo_write(view.gpfifo, guest->entries, guest->put, va,
	                  count * (uint32_t)sizeof(uint32_t));
	guest_window_leave(guest->window, guest->info.id);
	entry = &guest->mirror[guest->put];
	entry->pushbuffer_va = htole64(va);
	entry->length_bytes = htole32(count * (uint32_t)sizeof(uint32_t));
	entry->flags = 0;
	guest->put = (guest->put + 1) & guest->mask;

	/* Access 3: GP_PUT. */
	guest_window_enter(guest->window, guest->info.id, &view);
	vgpu_control_write_gp_put(view.control, guest->put);
	guest_window_leave(guest->window, guest->info.id);
	if (ordered)
		__atomic_add_fetch(&guest->submitted, 1, __ATOMIC_RELEASE);

	/* Access 4: the doorbell. */
	guest_window_enter(guest->window, guest->info.id, &view);
	vgpu_control_ring_doorbell(view.control);
	guest_window_leave(guest->window, guest->info.id);
	return 0;
}

int guest_submitter_submit(struct guest_submitter *guest)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS * 3];
	uint64_t i = guest->next_ordered;
	uint64_t seq_va = guest->data_va + SEQ_OFFSET;
	uint32_t n = 0;
	int ret;

	if (i >= guest->max_submissions)
		return -ENOSPC;
	n += vgpu_push_copy(words + n, guest->data_va + RECORD_OFFSET + 8 * i, seq_va, 8);
	n += vgpu_push_launch_stream(words + n, guest->data_va + guest->counter_offset + 8 * i, 8,
	                             1);
	n += vgpu_push_semaphore_release(words + n, seq_va, i + 1, false);
	ret = submit_words(guest, words, n, true);
	if (ret == 0)
		guest->next_ordered++;
	return ret;
}

int guest_submitter_submit_raw(struct guest_submitter *guest, const uint32_t *words,
                               uint32_t count)
{
	return submit_words(guest, words, count, false);
}

uint64_t guest_submitter_submitted(struct guest_submitter *guest)
{
	return __atomic_load_n(&guest->submitted, __ATOMIC_ACQUIRE);
}

uint64_t guest_submitter_executed(struct guest_submitter *guest)
{
	uint64_t seq = 0;

	if (vgpu_hal_as_read(guest->as, guest->data_va + SEQ_OFFSET, &seq, sizeof(seq)))
		return 0;
	return le64toh(seq);
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

int guest_submitter_wait_executed(struct guest_submitter *guest, uint64_t count,
                                  unsigned timeout_ms)
{
	uint64_t waited_us = 0;

	while (guest_submitter_executed(guest) < count) {
		if (waited_us >= (uint64_t)timeout_ms * 1000)
			return -ETIMEDOUT;
		sleep_us(100);
		waited_us += 100;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The guest thread                                                         */

static uint64_t next_random(struct guest_submitter *guest)
{
	return vgpu_xorshift64(&guest->rng);
}

static void *guest_thread(void *arg)
{
	struct guest_submitter *guest = arg;

	while (!__atomic_load_n(&guest->stop, __ATOMIC_ACQUIRE)) {
		int ret = guest_submitter_submit(guest);

		if (ret == -ENOSPC)
			break;
		if (ret == -EAGAIN) {
			sleep_us(20);
			continue;
		}
		if (ret) {
			record_error(guest, "guest submission failed: %d", ret);
			break;
		}
		if (guest->max_pause_us)
			sleep_us(next_random(guest) % (guest->max_pause_us + 1));
	}
	return NULL;
}

int guest_submitter_start(struct guest_submitter *guest)
{
	int ret;

	if (guest->running)
		return -EBUSY;
	__atomic_store_n(&guest->stop, false, __ATOMIC_RELEASE);
	ret = pthread_create(&guest->thread, NULL, guest_thread, guest);
	if (ret)
		return -ret;
	guest->running = true;
	return 0;
}

void guest_submitter_stop(struct guest_submitter *guest)
{
	if (!guest->running)
		return;
	__atomic_store_n(&guest->stop, true, __ATOMIC_RELEASE);
	pthread_join(guest->thread, NULL);
	guest->running = false;
}

/* ------------------------------------------------------------------------ */
/* Verification                                                             */

int guest_submitter_verify(struct guest_submitter *guest, char *why, size_t len)
{
	uint64_t submitted = guest_submitter_submitted(guest);
	uint64_t executed = guest_submitter_executed(guest);
	uint64_t *records, *counters, i;
	uint64_t once = vgpu_stream_word(0);
	int ret = -EINVAL;

	records = calloc(guest->max_submissions, sizeof(uint64_t));
	counters = calloc(guest->max_submissions, sizeof(uint64_t));
	if (!records || !counters) {
		snprintf(why, len, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	if (vgpu_hal_as_read(guest->as, guest->data_va + RECORD_OFFSET, records,
	                     8ull * guest->max_submissions) ||
	    vgpu_hal_as_read(guest->as, guest->data_va + guest->counter_offset, counters,
	                     8ull * guest->max_submissions)) {
		snprintf(why, len, "cannot read the log through the aperture");
		goto out;
	}
	if (executed != submitted) {
		snprintf(why, len, "seq is %llu after %llu submissions",
		         (unsigned long long)executed, (unsigned long long)submitted);
		goto out;
	}
	for (i = 0; i < guest->max_submissions; i++) {
		uint64_t record = le64toh(records[i]), counter = le64toh(counters[i]);

		if (i < submitted && counter != once) {
			snprintf(why, len,
			         "submission %llu ran %s (counter %#llx)", (unsigned long long)i,
			         counter == 0 ? "never" : "more than once", (unsigned long long)counter);
			goto out;
		}
		if (i < submitted && record != i) {
			snprintf(why, len, "submission %llu ran out of order: after %llu",
			         (unsigned long long)i, (unsigned long long)record);
			goto out;
		}
		if (i >= submitted && (counter || record)) {
			snprintf(why, len, "slot %llu of the log written though never submitted",
			         (unsigned long long)i);
			goto out;
		}
	}
	ret = 0;
	snprintf(why, len, "ok");
out:
	free(records);
	free(counters);
	return ret;
}
