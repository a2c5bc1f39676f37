/* SPDX-License-Identifier: MIT */
/*
 * hal_conformance.h - the fixture of the HAL conformance suite.
 *
 * The suite checks the contract of vgpu/hal.h (plus the channel command
 * format of vgpu/abi/commands.h and the kernels of vgpu/abi/kernels.h,
 * which every backend implements) against the backend that $VGPU_HAL names
 * (vgpu/hal_open.h): it uses nothing but those headers, so the same binary
 * tests simgpu and cudagpu. It adapts to the backend's caps instead of
 * assuming simgpu's: VRAM tests use the largest page size of
 * caps.page_size_mask, command areas (pushbuffers, semaphores) a small host
 * buffer mapped SYSMEM with 4 KiB pages where SYSMEM takes them, data is
 * checked through the aperture (vgpu_hal_as_read/as_write) rather than CPU
 * pointers, and times and counters are checked for growth, never values.
 *
 * One HAL per test group (opened in the group setup). Each test creates and
 * destroys its own objects through the helpers below, which also record
 * them: the per-test teardown releases whatever a failed test left behind,
 * then checks that VRAM came back (vram_free_bytes as before the test).
 *
 * Every wait has a deadline (HAL_TEST_TIMEOUT_MS) so a broken backend fails
 * the test instead of hanging it.
 */
#ifndef HAL_CONFORMANCE_H
#define HAL_CONFORMANCE_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "vgpu/hal.h"
#include "vgpu/abi/commands.h"
#include "vgpu/abi/kernels.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

#define HAL_TEST_TIMEOUT_MS 10000
#define HAL_TEST_VRAM_BYTES (UINT64_C(256) << 20)

/* Open the backend $VGPU_HAL names (vgpu/hal_open.h), or "simgpu-2m":
 * simgpu behind tests/core's 2 MiB-page double. */
int hal_suite_open(struct vgpu_hal **out, struct vgpu_error *error);
struct simgpu_config;
/* The same with simgpu settings (cuda takes the ones hal_open.h says). */
int hal_suite_open_config(const struct simgpu_config *sim, struct vgpu_hal **out,
                          struct vgpu_error *error);
#define HAL_TEST_EVENT_LOG 65536

/*
 * VA layout of a test address space (struct tspace). The command area holds
 * one pushbuffer slice per channel and, at its end, semaphore slots.
 */
#define CMD_VA UINT64_C(0x10000000)
#define CMD_BYTES (512 * KIB)
#define CMD_SLICE_BYTES (64 * KIB)
#define CMD_SLICES 7u
#define SEM_OFFSET (CMD_SLICES * CMD_SLICE_BYTES)
#define SEM_SLOT_BYTES 64u
#define SEM_SLOTS ((unsigned)((CMD_BYTES - SEM_OFFSET) / SEM_SLOT_BYTES))
/* Data areas, far apart so any page size fits between them. */
#define DATA_VA UINT64_C(0x40000000)
#define DATA2_VA UINT64_C(0x80000000)
#define DATA3_VA UINT64_C(0xc0000000)

/* What the group knows about the backend. */
struct hal_suite {
	struct vgpu_hal *hal;
	struct vgpu_hal_caps caps;
	char backend[32];          /* $VGPU_HAL as given ("simgpu", "cuda", ...) */
	uint32_t sysmem_mask;      /* page sizes usable for SYSMEM targets */
	uint32_t vram_page;        /* largest size of caps.page_size_mask */
	uint32_t min_page;         /* smallest size of caps.page_size_mask */
	uint32_t cmd_page;         /* page size of command areas */
	enum vgpu_hal_target cmd_target; /* SYSMEM_COHERENT, or VRAM when SYSMEM
	                                    has no 4 KiB pages */

	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct vgpu_hal_event *events; /* HAL_TEST_EVENT_LOG entries */
	unsigned event_count;
	bool event_overflow;

	uint64_t vram_free_at_start; /* of the running test */
};

extern struct hal_suite suite;

/* Page sizes: mask bit -> bytes, and the sizes a mask lists. */
uint32_t page_bytes_of_bit(uint32_t bit);
unsigned page_sizes_of_mask(uint32_t mask, uint32_t *sizes, unsigned max);
/* The largest SYSMEM page size that divides bytes (0 if none). */
uint32_t sysmem_page_for(uint64_t bytes);
/* The largest SYSMEM page size <= max that both iova and bytes are aligned
 * to (0 if none). */
uint32_t sysmem_page_at(uint64_t iova, uint64_t bytes, uint32_t max);

/* Group setup/teardown (open the HAL named by $VGPU_HAL, install the event
 * logger) and per-test setup/teardown (see above). */
int hal_group_setup(void **state);
int hal_group_teardown(void **state);
int hal_test_setup(void **state);
int hal_test_teardown(void **state);
#define HAL_TEST(f) cmocka_unit_test_setup_teardown(f, hal_test_setup, hal_test_teardown)

/* A HAL opened by main's probe, handed to the first group setup; destroyed
 * by hal_suite_release_unused if no group took it. */
void hal_suite_hand_over(struct vgpu_hal *hal);
void hal_suite_release_unused(void);

/* ------------------------------------------------------------------------ */
/* Events                                                                   */

unsigned event_mark(void);
/* Wait for an event of type (for a channel unless COPY_DONE; with value
 * unless any_value) logged at index >= start. */
bool wait_event(enum vgpu_hal_event_type type, uint32_t channel_id, bool any_value,
                uint64_t value, unsigned start, struct vgpu_hal_event *out);
/* Events of type for channel_id logged at index >= start. */
unsigned count_events(enum vgpu_hal_event_type type, uint32_t channel_id, unsigned start);
/* Copy of event index i (i < event_mark()). */
struct vgpu_hal_event event_at(unsigned i);
void sleep_ms(unsigned ms);

/* ------------------------------------------------------------------------ */
/* Memory: a mapping of VRAM or of a host buffer at a VA, with its backing  */

struct tmem {
	struct vgpu_hal_as *as;
	uint64_t va, bytes;
	uint32_t page; /* may be smaller than asked for SYSMEM (see mem_sysmem) */
	enum vgpu_hal_target target;
	uint64_t *vram;    /* VRAM pages (target VRAM), bytes / page of them */
	struct vgpu_hal_host_buf *host; /* SYSMEM targets */
	uint64_t iova;
	bool iova_mapped;
};

/* bytes is rounded up to the page size. mem_sysmem maps with smaller pages
 * where the backend's IOVA is not aligned to page (mem->page says). */
struct tmem *mem_vram(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes, uint32_t page,
                      uint32_t flags);
struct tmem *mem_sysmem(struct vgpu_hal_as *as, uint64_t va, uint64_t bytes, uint32_t page,
                        enum vgpu_hal_target target, uint32_t flags);
/* Unmap, invalidate the TLB, release the backing. */
void mem_free(struct tmem *mem);

/* Map a host buffer through the IOMMU, trying for an IOVA aligned to align
 * (hal.h promises the smallest SYSMEM page size only; see the .c). */
uint64_t iommu_map_aligned(struct vgpu_hal_host_buf *buf, uint64_t bytes, uint32_t align);

/* Map [iova, iova+bytes) at va with SYSMEM pages of page bytes. */
void map_iova_range(struct vgpu_hal_as *as, uint64_t va, uint64_t iova, uint64_t bytes,
                    uint32_t page, enum vgpu_hal_target target, uint32_t flags);

/* Helpers asserting success. */
void write_ok(struct vgpu_hal_as *as, uint64_t va, const void *src, uint64_t bytes);
void read_ok(struct vgpu_hal_as *as, uint64_t va, void *dst, uint64_t bytes);
void *xmalloc(size_t bytes);
/* Fill a host array with FILL(seed)'s content. */
void *reference_fill(uint64_t bytes, uint64_t seed);
/* Assert the bytes at va equal expected, with the first differing offset. */
void expect_bytes(struct vgpu_hal_as *as, uint64_t va, const void *expected, uint64_t bytes,
                  const char *what);

/* ------------------------------------------------------------------------ */
/* Address spaces with a command area, and channels                         */

struct tspace {
	struct vgpu_hal_as *as;
	struct tmem *cmd;
	uint32_t slices_used; /* bit i: slice i belongs to a live channel */
};

struct tchan {
	struct tspace *space;
	struct vgpu_hal_channel *channel;
	struct vgpu_hal_channel_info info;
	int slice;            /* pushbuffer slice, -1 when none was left */
	uint64_t push_va;     /* start of the slice */
	uint64_t push_offset;
	uint32_t put;         /* GP_PUT as this side wrote it */
	uint64_t fence_value;
	uint64_t sem_va;      /* this channel's fence semaphore */
};

struct tspace *space_create(void);
void space_destroy(struct tspace *space);
/* A semaphore slot of the command area (slots 0..CMD_SLICES-1 belong to
 * the channels of the space). */
uint64_t space_sem_va(struct tspace *space, unsigned slot);

/* gpfifo_entries 0 = the backend's default. */
struct tchan *chan_create(struct tspace *space, uint32_t gpfifo_entries);
void chan_destroy(struct tchan *tc);
/* Append one pushbuffer of count words as one GPFIFO entry and publish
 * GP_PUT (no kick). count 0 is a NOP entry. */
void chan_push(struct tchan *tc, const uint32_t *words, uint32_t count);
/* Append a GPFIFO entry as given (for malformed entries). */
void chan_push_entry(struct tchan *tc, uint64_t pushbuffer_va, uint32_t length_bytes);
/* Append a fence (release of the next value with interrupt) and kick;
 * returns the value. */
uint64_t chan_fence(struct tchan *tc);
bool chan_wait_fence(struct tchan *tc, uint64_t value, unsigned start);
/* Fence and wait: everything pushed before has completed. */
bool chan_sync(struct tchan *tc);
/* Push words, then chan_sync. */
bool chan_run(struct tchan *tc, const uint32_t *words, uint32_t count);
/* Wait for the channel's CHANNEL_ERROR (logged at index >= start), check it
 * against vgpu_hal_channel_state, and return it. */
bool chan_wait_error(struct tchan *tc, unsigned start, struct vgpu_hal_event *error);
bool chan_wait_gp_get(struct tchan *tc, uint32_t expected);
/* Re-read GP_PUT (after privileged submissions moved it). */
void chan_resync_put(struct tchan *tc);

/* A bare address space (no command area), recorded for cleanup. */
struct vgpu_hal_as *as_create_ok(void);
void as_destroy_ok(struct vgpu_hal_as *as);

/* Record or forget a bare host buffer / IOMMU mapping / VRAM page array for
 * the teardown's cleanup. */
void track_host(struct vgpu_hal_host_buf *buf);
void untrack_host(struct vgpu_hal_host_buf *buf);
void track_iova(uint64_t iova, uint64_t bytes);
void untrack_iova(uint64_t iova);
void track_vram(uint32_t page, uint64_t count, uint64_t *addresses);
void untrack_vram(uint64_t *addresses);
void track_channel(struct vgpu_hal_channel *channel);
void untrack_channel(struct vgpu_hal_channel *channel);

/* ------------------------------------------------------------------------ */
/* The test groups                                                          */

struct hal_test_group {
	const char *name;
	const struct CMUnitTest *tests;
	size_t count;
};

extern const struct hal_test_group hal_memory_group;
extern const struct hal_test_group hal_copy_group;
extern const struct hal_test_group hal_channel_group;
extern const struct hal_test_group hal_kernel_group;
extern const struct hal_test_group hal_concurrency_group;
extern const struct hal_test_group hal_isolation_group;
extern const struct hal_test_group hal_module_group;
extern const struct hal_test_group hal_kill_group;

#endif /* HAL_CONFORMANCE_H */
