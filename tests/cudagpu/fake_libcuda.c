// SPDX-License-Identifier: MIT
/*
 * fake_libcuda.c - a CPU stand-in for libcuda.so.1, so that cudagpu's own
 * logic (its page table, host buffers, IOVAs, the submission thread,
 * completions, faults) runs in CI on machines without a GPU. cudagpu loads
 * it like the real driver: VGPU_CUDA_LIBRARY=.../libcuda.so.1.
 *
 * It is a test double, not a GPU: it proves nothing about the hardware (the
 * GPU tests, meson suite 'cudagpu' on a machine with an NVIDIA GPU, do).
 * What it does:
 *  - One device, "Fake CPU GPU", with FAKE_CUDA_TOTAL_MIB of memory (default
 *    4096), 2 MiB allocation granularity, VMM and host-NUMA VMM supported.
 *  - Physical allocations (cuMemCreate) are memfds; cuMemAddressReserve
 *    reserves host address space; cuMemMap maps the memfd there;
 *    cuMemSetAccess is mprotect. Device pointers are host addresses.
 *  - Every call does its work synchronously: kernels run on the CPU with
 *    the CPU references of vgpu/abi/kernels.h before the call returns.
 *    Streams and events complete at once too, unless a test gives the
 *    work a duration: with FAKE_CUDA_STREAM_PASS_US=N, the built-in
 *    STREAM kernel (vgpu_stream) takes N microseconds per pass on its
 *    stream's clock. A stream then completes its operations in order, each
 *    when the one before it and its own duration are over (its effects
 *    are still made at the call): cuStreamQuery says CUDA_ERROR_NOT_READY
 *    and cuStreamSynchronize sleeps until its last one is done, an event
 *    completes when what its stream had before it does. A stream holds at
 *    most FAKE_CUDA_STREAM_QUEUE (default 1024) unfinished operations: a
 *    call that would queue one more sleeps until the oldest is done, as
 *    the driver's launch into a full queue blocks. So a test can model a
 *    tenant's long kernels and a deep backlog.
 *  - Physical allocations made with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
 *    cross processes as the driver's do: cuMemExportToShareableHandle dups
 *    the memfd, cuMemImportFromShareableHandle wraps (a dup of) a received
 *    fd into an allocation of this process, so a worker process maps the
 *    same pages (cudagpu's process isolation, vgpu/cudagpu.h).
 *  - A context fault, for tests only: when FAKE_CUDA_FAULT_DIR is set and
 *    the file <dir>/fault-<pid> exists, this process's next kernel launch
 *    fails with CUDA_ERROR_ILLEGAL_ADDRESS and the context stays unusable
 *    (every launch, stream, event and copy call then returns that error),
 *    as a real context does after a kernel touches memory it has not
 *    mapped. It stands in for a bad user kernel (guests cannot load their
 *    own yet) and no guest can reach it: it needs the test's environment.
 *  - Address reservations made with a requested address (cuMemAddressReserve's
 *    addr) get exactly that device address range, backed by host memory
 *    elsewhere: every call translates device addresses of such a range to
 *    the host (so a worker's identity range, vgpu/cudagpu.h, works even at
 *    addresses a sanitizer keeps for itself). Other device pointers are host
 *    addresses.
 *  - PTX modules a VM brings run on the CPU: cuModuleLoadData parses them
 *    with the project's PTX executor (vgpu-backend/simgpu/ptx), each
 *    .global/.const variable gets host storage (cuModuleGetGlobal), and
 *    cuLaunchKernel runs the grid with ptx_launch. A kernel's access outside
 *    the device's mappings (or against their access flags) fails the launch
 *    with CUDA_ERROR_ILLEGAL_ADDRESS, a kernel running longer than
 *    FAKE_CUDA_WATCHDOG_MS (default 1000) with CUDA_ERROR_LAUNCH_TIMEOUT, a
 *    trap with CUDA_ERROR_ASSERT; all of them leave the context faulted, as
 *    on a GPU. A bad grid is CUDA_ERROR_INVALID_VALUE (not sticky).
 *  - It enforces the driver rules the H100 taught cudagpu (each one broke it
 *    once): cuMemMap maps a whole allocation (offset 0, size = the
 *    allocation's), cuMemsetD*Async stays within one mapped allocation,
 *    cuMemUnmap takes whole mappings. A call that breaks one returns
 *    CUDA_ERROR_INVALID_VALUE and says so on stderr.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuda_api.h"
#include "ptx_exec.h"
#include "ptx_module.h"
#include "vgpu/abi/kernels.h"

#define MIB (UINT64_C(1) << 20)
#define GRANULARITY (2 * MIB)
#define MAX_MAPPINGS 65536

/* Every entry point is exported under the driver's own (versioned) name. */
#define EXPORT __attribute__((visibility("default")))

struct allocation { /* a cuMemCreate handle */
	int fd;
	size_t bytes;
	bool device;
	bool exportable; /* made with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR */
	bool imported;   /* another process's: not charged here */
};

struct mapping { /* a cuMemMap range */
	uintptr_t start;
	size_t bytes;
	int prot; /* what cuMemSetAccess allowed (PROT_*) */
};

#define MAX_RESERVATIONS 256

struct reservation { /* a cuMemAddressReserve range at a requested address */
	uintptr_t device, host;
	size_t bytes;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t total_bytes = 4096 * MIB, used_bytes;
static struct mapping mappings[MAX_MAPPINGS];
static unsigned mapping_count;
static struct reservation reservations[MAX_RESERVATIONS];
static unsigned reservation_count;

/* The host address of device address d (lock held). */
static uintptr_t translate_locked(uintptr_t d)
{
	unsigned i;

	for (i = 0; i < reservation_count; i++)
		if (d >= reservations[i].device && d - reservations[i].device < reservations[i].bytes)
			return reservations[i].host + (d - reservations[i].device);
	return d;
}

static uintptr_t translate(uintptr_t d)
{
	uintptr_t h;

	pthread_mutex_lock(&lock);
	h = reservation_count ? translate_locked(d) : d;
	pthread_mutex_unlock(&lock);
	return h;
}

#define HOST(d) ((void *)translate((uintptr_t)(d)))

/* Set once this process's context faulted (FAKE_CUDA_FAULT_DIR). */
static bool context_faulted;
static cg_result sticky_error = CG_ERROR_ILLEGAL_ADDRESS; /* what a faulted context says */

/* ------------------------------------------------ time on streams */

#define STREAM_QUEUE_MAX 65536u

struct fake_stream {
	pthread_mutex_t lock;  /* issuers */
	uint64_t busy_until;   /* when its last operation is done (atomic) */
	unsigned head;
	uint64_t *done_at;     /* ring of stream_queue completion times */
};

static uint64_t stream_pass_ns;      /* FAKE_CUDA_STREAM_PASS_US, in ns */
static unsigned stream_queue = 1024; /* FAKE_CUDA_STREAM_QUEUE */

static uint64_t now_ns(void);

static void sleep_until(uint64_t t)
{
	uint64_t now = now_ns();

	if (t > now) {
		struct timespec ts = { (time_t)((t - now) / 1000000000u),
		                       (long)((t - now) % 1000000000u) };

		nanosleep(&ts, NULL);
	}
}

/* One operation of cost_ns on stream (none: the legacy stream, at once):
 * when it will be done. Sleeps while the stream's queue is full. */
static uint64_t stream_issue(cg_stream stream, uint64_t cost_ns)
{
	struct fake_stream *fs = (struct fake_stream *)(void *)stream;
	uint64_t now, start, end;

	if (!fs)
		return now_ns();
	pthread_mutex_lock(&fs->lock);
	sleep_until(fs->done_at[fs->head]); /* the queue is full until then */
	now = now_ns();
	start = __atomic_load_n(&fs->busy_until, __ATOMIC_ACQUIRE);
	if (start < now)
		start = now;
	end = start + cost_ns;
	fs->done_at[fs->head] = end;
	fs->head = (fs->head + 1) % stream_queue;
	__atomic_store_n(&fs->busy_until, end, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->lock);
	return end;
}

static uint64_t stream_busy_until(cg_stream stream)
{
	const struct fake_stream *fs = (const struct fake_stream *)(const void *)stream;

	return fs ? __atomic_load_n(&fs->busy_until, __ATOMIC_ACQUIRE) : 0;
}

static bool faulted(void)
{
	return __atomic_load_n(&context_faulted, __ATOMIC_ACQUIRE);
}

/* Does the test ask this process's context to fault now? */
static bool fault_requested(void)
{
	const char *dir = getenv("FAKE_CUDA_FAULT_DIR");
	char path[4096];

	if (!dir || !*dir)
		return false;
	snprintf(path, sizeof(path), "%s/fault-%ld", dir, (long)getpid());
	return access(path, F_OK) == 0;
}

static cg_result refuse(const char *call, const char *why)
{
	fprintf(stderr, "fake libcuda: %s refused: %s\n", call, why);
	return CG_ERROR_INVALID_VALUE;
}

static bool charge(size_t bytes)
{
	bool ok;

	pthread_mutex_lock(&lock);
	ok = used_bytes + bytes <= total_bytes;
	if (ok)
		used_bytes += bytes;
	pthread_mutex_unlock(&lock);
	return ok;
}

static void uncharge(size_t bytes)
{
	pthread_mutex_lock(&lock);
	used_bytes -= bytes;
	pthread_mutex_unlock(&lock);
}

/* The mapping holding [p, p + bytes), or -1 (lock held). */
static int mapping_of(uintptr_t p, size_t bytes)
{
	unsigned i;

	for (i = 0; i < mapping_count; i++)
		if (p >= mappings[i].start && p + bytes <= mappings[i].start + mappings[i].bytes)
			return (int)i;
	return -1;
}

static bool in_one_mapping(uintptr_t p, size_t bytes)
{
	bool inside, mapped_at_all = false;
	unsigned i;

	pthread_mutex_lock(&lock);
	inside = mapping_of(p, bytes) >= 0;
	for (i = 0; i < mapping_count && !inside; i++)
		if (p < mappings[i].start + mappings[i].bytes && mappings[i].start < p + bytes)
			mapped_at_all = true;
	pthread_mutex_unlock(&lock);
	/* Memory that is not VMM-mapped at all (cuMemAlloc, host) is fine. */
	return inside || !mapped_at_all;
}

/* ------------------------------------------------------------ device */

EXPORT cg_result cuInit(unsigned int flags)
{
	const char *mib = getenv("FAKE_CUDA_TOTAL_MIB");
	const char *pass_us = getenv("FAKE_CUDA_STREAM_PASS_US");
	const char *queue = getenv("FAKE_CUDA_STREAM_QUEUE");

	(void)flags;
	if (mib && *mib)
		total_bytes = strtoull(mib, NULL, 10) * MIB;
	if (pass_us && *pass_us)
		stream_pass_ns = strtoull(pass_us, NULL, 10) * 1000u;
	if (queue && *queue) {
		unsigned long n = strtoul(queue, NULL, 10);

		stream_queue = n < 1 ? 1 : n > STREAM_QUEUE_MAX ? STREAM_QUEUE_MAX : (unsigned)n;
	}
	return CG_SUCCESS;
}

EXPORT cg_result cuDriverGetVersion(int *version)
{
	*version = 12080;
	return CG_SUCCESS;
}

EXPORT cg_result cuGetErrorName(cg_result error, const char **name)
{
	*name = error == CG_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
	        : error == CG_ERROR_ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS"
	        : error == CG_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
	                                          : "CUDA_ERROR_UNKNOWN";
	return CG_SUCCESS;
}

EXPORT cg_result cuGetErrorString(cg_result error, const char **text)
{
	(void)error;
	*text = "an error of the fake driver";
	return CG_SUCCESS;
}

EXPORT cg_result cuDeviceGetCount(int *count)
{
	*count = 1;
	return CG_SUCCESS;
}

EXPORT cg_result cuDeviceGet(cg_device *device, int ordinal)
{
	if (ordinal)
		return CG_ERROR_INVALID_DEVICE;
	*device = 0;
	return CG_SUCCESS;
}

EXPORT cg_result cuDeviceGetName(char *name, int len, cg_device device)
{
	(void)device;
	snprintf(name, (size_t)len, "Fake CPU GPU");
	return CG_SUCCESS;
}

EXPORT cg_result cuDeviceGetAttribute(int *value, cg_device_attribute attribute, cg_device device)
{
	(void)device;
	switch (attribute) {
	case CG_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		*value = 4;
		break;
	case CG_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CG_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CG_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
		*value = 1;
		break;
	default:
		*value = 0;
		break;
	}
	return CG_SUCCESS;
}

EXPORT cg_result cuDeviceTotalMem_v2(size_t *bytes, cg_device device)
{
	(void)device;
	*bytes = total_bytes;
	return CG_SUCCESS;
}

EXPORT cg_result cuDevicePrimaryCtxRetain(cg_context *ctx, cg_device device)
{
	static int context;

	(void)device;
	*ctx = (cg_context)(void *)&context;
	return CG_SUCCESS;
}

EXPORT cg_result cuDevicePrimaryCtxRelease_v2(cg_device device)
{
	(void)device;
	return CG_SUCCESS;
}

EXPORT cg_result cuCtxSetCurrent(cg_context ctx)
{
	(void)ctx;
	return CG_SUCCESS;
}

EXPORT cg_result cuCtxSynchronize(void)
{
	if (faulted())
		return sticky_error;
	return CG_SUCCESS;
}

EXPORT cg_result cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	pthread_mutex_lock(&lock);
	*free_bytes = total_bytes - used_bytes;
	*total = total_bytes;
	pthread_mutex_unlock(&lock);
	return CG_SUCCESS;
}

/* --------------------------------------------------------------- VMM */

EXPORT cg_result cuMemGetAllocationGranularity(size_t *granularity,
                                               const struct cg_mem_allocation_prop *prop,
                                               cg_granularity_option option)
{
	(void)prop;
	(void)option;
	*granularity = GRANULARITY;
	return CG_SUCCESS;
}

EXPORT cg_result cuMemCreate(cg_mem_handle *handle, size_t size,
                             const struct cg_mem_allocation_prop *prop, unsigned long long flags)
{
	struct allocation *a;

	(void)flags;
	if (!size || size % GRANULARITY)
		return refuse("cuMemCreate", "size not a multiple of the granularity");
	a = calloc(1, sizeof(*a));
	if (!a)
		return CG_ERROR_OUT_OF_MEMORY;
	a->device = prop->location.type == CG_MEM_LOCATION_TYPE_DEVICE;
	a->exportable = prop->requested_handle_types & CG_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	a->bytes = size;
	if (a->device && !charge(size)) {
		free(a);
		return CG_ERROR_OUT_OF_MEMORY;
	}
	a->fd = memfd_create("fake-libcuda", MFD_CLOEXEC);
	if (a->fd < 0 || ftruncate(a->fd, (off_t)size) < 0) {
		if (a->fd >= 0)
			close(a->fd);
		if (a->device)
			uncharge(size);
		free(a);
		return CG_ERROR_OUT_OF_MEMORY;
	}
	*handle = (cg_mem_handle)(uintptr_t)a;
	return CG_SUCCESS;
}

EXPORT cg_result cuMemRelease(cg_mem_handle handle)
{
	struct allocation *a = (struct allocation *)(uintptr_t)handle;

	if (a->device && !a->imported)
		uncharge(a->bytes);
	close(a->fd); /* existing mappings keep the pages, as with the driver */
	free(a);
	return CG_SUCCESS;
}

EXPORT cg_result cuMemExportToShareableHandle(void *shareable_handle, cg_mem_handle handle,
                                              cg_mem_handle_type handle_type,
                                              unsigned long long flags)
{
	struct allocation *a = (struct allocation *)(uintptr_t)handle;
	int fd;

	if (handle_type != CG_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || flags)
		return refuse("cuMemExportToShareableHandle", "only POSIX fds, no flags");
	if (!a->exportable)
		return refuse("cuMemExportToShareableHandle",
		              "the allocation was not made with a POSIX fd handle type");
	fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return CG_ERROR_OUT_OF_MEMORY;
	*(int *)shareable_handle = fd;
	return CG_SUCCESS;
}

EXPORT cg_result cuMemImportFromShareableHandle(cg_mem_handle *handle, void *os_handle,
                                                cg_mem_handle_type handle_type)
{
	int fd = (int)(uintptr_t)os_handle;
	struct allocation *a;
	struct stat st;

	if (handle_type != CG_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return refuse("cuMemImportFromShareableHandle", "only POSIX fds");
	if (fstat(fd, &st) || !st.st_size || st.st_size % GRANULARITY)
		return refuse("cuMemImportFromShareableHandle", "not an exported allocation");
	a = calloc(1, sizeof(*a));
	if (!a)
		return CG_ERROR_OUT_OF_MEMORY;
	/* The caller keeps its fd (and closes it), as with the driver. */
	a->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (a->fd < 0) {
		free(a);
		return CG_ERROR_OUT_OF_MEMORY;
	}
	a->bytes = (size_t)st.st_size;
	a->imported = true;
	a->exportable = true;
	*handle = (cg_mem_handle)(uintptr_t)a;
	return CG_SUCCESS;
}

EXPORT cg_result cuMemAddressReserve(cg_deviceptr *ptr, size_t size, size_t alignment,
                                     cg_deviceptr addr, unsigned long long flags)
{
	size_t align = alignment ? alignment : GRANULARITY;
	uintptr_t host;
	unsigned i;
	bool free_range = true;
	char *p;

	(void)flags;
	p = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
	         0);
	if (p == MAP_FAILED)
		return CG_ERROR_OUT_OF_MEMORY;
	host = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	*ptr = host;
	if (!addr || addr % align)
		return CG_SUCCESS;
	/* The requested range, unless this process has device memory there. */
	pthread_mutex_lock(&lock);
	for (i = 0; i < reservation_count; i++)
		if (addr < reservations[i].device + reservations[i].bytes &&
		    reservations[i].device < addr + size)
			free_range = false;
	if (free_range && reservation_count < MAX_RESERVATIONS) {
		reservations[reservation_count++] = (struct reservation){
			.device = addr, .host = host, .bytes = size,
		};
		*ptr = addr;
	}
	pthread_mutex_unlock(&lock);
	return CG_SUCCESS;
}

EXPORT cg_result cuMemAddressFree(cg_deviceptr ptr, size_t size)
{
	uintptr_t host = ptr;
	unsigned i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < reservation_count; i++) {
		if (reservations[i].device == ptr) {
			host = reservations[i].host;
			reservations[i] = reservations[--reservation_count];
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	munmap((void *)host, size);
	return CG_SUCCESS;
}

EXPORT cg_result cuMemMap(cg_deviceptr ptr, size_t size, size_t offset, cg_mem_handle handle,
                          unsigned long long flags)
{
	struct allocation *a = (struct allocation *)(uintptr_t)handle;
	cg_result r = CG_SUCCESS;

	(void)flags;
	if (offset)
		return refuse("cuMemMap", "offset must be 0: a mapping takes a whole allocation");
	if (size != a->bytes || ptr % GRANULARITY)
		return refuse("cuMemMap", "size differs from the allocation's, or ptr misaligned");
	pthread_mutex_lock(&lock);
	ptr = translate_locked(ptr);
	if (mapping_of(ptr, 1) >= 0 || mapping_count == MAX_MAPPINGS) {
		r = refuse("cuMemMap", "the range is already mapped");
	} else if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, a->fd, 0) ==
	           MAP_FAILED) {
		r = CG_ERROR_OUT_OF_MEMORY;
	} else {
		mappings[mapping_count++] = (struct mapping){
			.start = ptr, .bytes = size, .prot = PROT_NONE,
		};
	}
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT cg_result cuMemUnmap(cg_deviceptr ptr, size_t size)
{
	uintptr_t end, at;
	cg_result r = CG_SUCCESS;
	int i;

	pthread_mutex_lock(&lock);
	ptr = translate_locked(ptr);
	end = ptr + size;
	at = ptr;
	/* Whole mappings only, back to back. */
	while (at < end && r == CG_SUCCESS) {
		i = mapping_of(at, 1);
		if (i < 0 || mappings[i].start != at || at + mappings[i].bytes > end)
			r = refuse("cuMemUnmap", "not a run of whole mappings");
		else
			at += mappings[i].bytes;
	}
	for (at = ptr; r == CG_SUCCESS && at < end;) {
		i = mapping_of(at, 1);
		at += mappings[i].bytes;
		mappings[i] = mappings[--mapping_count];
	}
	pthread_mutex_unlock(&lock);
	if (r == CG_SUCCESS)
		mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	return r;
}

EXPORT cg_result cuMemSetAccess(cg_deviceptr ptr, size_t size,
                                const struct cg_mem_access_desc *desc, size_t count)
{
	int prot = desc[0].flags == CG_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
	           : desc[0].flags == CG_MEM_ACCESS_FLAGS_PROT_READ    ? PROT_READ
	                                                               : PROT_NONE;

	uintptr_t host = translate(ptr);
	unsigned i;

	(void)count;
	if (mprotect((void *)host, size, prot))
		return CG_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	for (i = 0; i < mapping_count; i++)
		if (mappings[i].start >= host && mappings[i].start < host + size)
			mappings[i].prot = prot;
	pthread_mutex_unlock(&lock);
	return CG_SUCCESS;
}

/* ------------------------------------------------------- other memory */

EXPORT cg_result cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags)
{
	(void)p;
	(void)bytes;
	(void)flags;
	return CG_SUCCESS;
}

EXPORT cg_result cuMemHostUnregister(void *p)
{
	(void)p;
	return CG_SUCCESS;
}

EXPORT cg_result cuMemHostGetDevicePointer_v2(cg_deviceptr *device_ptr, void *p,
                                              unsigned int flags)
{
	(void)flags;
	*device_ptr = (uintptr_t)p;
	return CG_SUCCESS;
}

static void *anonymous(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Plain allocations keep their size in a header page before them. */
static void *plain_alloc(size_t bytes)
{
	char *p = anonymous(bytes + 4096);

	if (!p)
		return NULL;
	*(size_t *)p = bytes;
	return p + 4096;
}

static void plain_free(void *p)
{
	char *base = (char *)p - 4096;

	munmap(base, *(size_t *)base + 4096);
}

EXPORT cg_result cuMemHostAlloc(void **p, size_t bytes, unsigned int flags)
{
	(void)flags;
	*p = plain_alloc(bytes);
	return *p ? CG_SUCCESS : CG_ERROR_OUT_OF_MEMORY;
}

EXPORT cg_result cuMemFreeHost(void *p)
{
	plain_free(p);
	return CG_SUCCESS;
}

/* cuMemAlloc's allocations, which user kernels may reach as well (a
 * program's own buffers: cuda-saxpy run natively); lock held. */
#define MAX_DEVICE_ALLOCS 256
static struct {
	uintptr_t start;
	size_t bytes;
} device_allocs[MAX_DEVICE_ALLOCS];

static bool in_device_alloc(uintptr_t p, size_t bytes)
{
	for (unsigned i = 0; i < MAX_DEVICE_ALLOCS; i++)
		if (device_allocs[i].bytes && p >= device_allocs[i].start &&
		    p + bytes <= device_allocs[i].start + device_allocs[i].bytes)
			return true;
	return false;
}

EXPORT cg_result cuMemAlloc_v2(cg_deviceptr *ptr, size_t bytes)
{
	void *p;

	if (!charge(bytes))
		return CG_ERROR_OUT_OF_MEMORY;
	p = plain_alloc(bytes);
	if (!p) {
		uncharge(bytes);
		return CG_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < MAX_DEVICE_ALLOCS; i++) {
		if (!device_allocs[i].bytes) {
			device_allocs[i].start = (uintptr_t)p;
			device_allocs[i].bytes = bytes;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	*ptr = (uintptr_t)p;
	return CG_SUCCESS;
}

EXPORT cg_result cuMemAllocManaged(cg_deviceptr *ptr, size_t bytes, unsigned int flags)
{
	void *p = plain_alloc(bytes);

	(void)flags;
	*ptr = (uintptr_t)p;
	return p ? CG_SUCCESS : CG_ERROR_OUT_OF_MEMORY;
}

/* Hints about managed memory change nothing here: it is all host memory. */
EXPORT cg_result cuMemAdvise_v2(cg_deviceptr ptr, size_t bytes, cg_mem_advise advice,
                                struct cg_mem_location location)
{
	(void)advice;
	(void)location;
	return ptr && bytes ? CG_SUCCESS : CG_ERROR_INVALID_VALUE;
}

EXPORT cg_result cuMemPrefetchAsync_v2(cg_deviceptr ptr, size_t bytes,
                                       struct cg_mem_location location, unsigned int flags,
                                       cg_stream stream)
{
	(void)location;
	(void)stream;
	return ptr && bytes && !flags ? CG_SUCCESS : CG_ERROR_INVALID_VALUE;
}

EXPORT cg_result cuMemFree_v2(cg_deviceptr ptr)
{
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < MAX_DEVICE_ALLOCS; i++)
		if (device_allocs[i].bytes && device_allocs[i].start == ptr)
			device_allocs[i].bytes = 0;
	pthread_mutex_unlock(&lock);
	plain_free((void *)(uintptr_t)ptr);
	return CG_SUCCESS;
}

EXPORT cg_result cuMemcpy(cg_deviceptr dst, cg_deviceptr src, size_t bytes)
{
	memmove(HOST(dst), HOST(src), bytes);
	return CG_SUCCESS;
}

EXPORT cg_result cuMemcpyAsync(cg_deviceptr dst, cg_deviceptr src, size_t bytes, cg_stream stream)
{
	if (faulted())
		return sticky_error;
	stream_issue(stream, 0);
	return cuMemcpy(dst, src, bytes);
}

EXPORT cg_result cuMemcpyHtoD_v2(cg_deviceptr dst, const void *src, size_t bytes)
{
	memcpy(HOST(dst), src, bytes);
	return CG_SUCCESS;
}

EXPORT cg_result cuMemcpyDtoH_v2(void *dst, cg_deviceptr src, size_t bytes)
{
	memcpy(dst, HOST(src), bytes);
	return CG_SUCCESS;
}

EXPORT cg_result cuMemsetD8Async(cg_deviceptr dst, unsigned char value, size_t count,
                                 cg_stream stream)
{
	dst = translate(dst);
	if (!in_one_mapping(dst, count))
		return refuse("cuMemsetD8Async", "the range spans two allocations");
	stream_issue(stream, 0);
	memset((void *)(uintptr_t)dst, value, count);
	return CG_SUCCESS;
}

EXPORT cg_result cuMemsetD32Async(cg_deviceptr dst, unsigned int value, size_t count,
                                  cg_stream stream)
{
	uint32_t *p;
	size_t i;

	dst = translate(dst);
	p = (uint32_t *)(uintptr_t)dst;
	if (!in_one_mapping(dst, count * 4))
		return refuse("cuMemsetD32Async", "the range spans two allocations");
	stream_issue(stream, 0);
	for (i = 0; i < count; i++)
		p[i] = value;
	return CG_SUCCESS;
}

/* --------------------------------------------------- streams, events */

EXPORT cg_result cuStreamCreate(cg_stream *stream, unsigned int flags)
{
	struct fake_stream *fs = calloc(1, sizeof(*fs));

	(void)flags;
	if (fs)
		fs->done_at = calloc(stream_queue, sizeof(*fs->done_at));
	if (!fs || !fs->done_at) {
		free(fs);
		return CG_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_init(&fs->lock, NULL);
	*stream = (cg_stream)(void *)fs;
	return CG_SUCCESS;
}

/* Its work goes on after it (as the driver's): its effects are made. */
EXPORT cg_result cuStreamDestroy_v2(cg_stream stream)
{
	struct fake_stream *fs = (struct fake_stream *)(void *)stream;

	if (fs) {
		pthread_mutex_destroy(&fs->lock);
		free(fs->done_at);
		free(fs);
	}
	return CG_SUCCESS;
}

EXPORT cg_result cuStreamSynchronize(cg_stream stream)
{
	if (faulted())
		return sticky_error;
	sleep_until(stream_busy_until(stream));
	return CG_SUCCESS;
}

EXPORT cg_result cuStreamQuery(cg_stream stream)
{
	if (faulted())
		return sticky_error;
	return now_ns() >= stream_busy_until(stream) ? CG_SUCCESS : CG_ERROR_NOT_READY;
}

EXPORT cg_result cuStreamWriteValue64_v2(cg_stream stream, cg_deviceptr addr, uint64_t value,
                                         unsigned int flags)
{
	(void)flags;
	stream_issue(stream, 0);
	__atomic_store_n((uint64_t *)HOST(addr), value, __ATOMIC_RELEASE);
	return CG_SUCCESS;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

EXPORT cg_result cuEventCreate(cg_event *event, unsigned int flags)
{
	(void)flags;
	*event = calloc(1, sizeof(uint64_t));
	return *event ? CG_SUCCESS : CG_ERROR_OUT_OF_MEMORY;
}

EXPORT cg_result cuEventDestroy_v2(cg_event event)
{
	free(event);
	return CG_SUCCESS;
}

/* An event holds when it completes (its stream's clock). */
EXPORT cg_result cuEventRecord(cg_event event, cg_stream stream)
{
	__atomic_store_n((uint64_t *)(void *)event, stream_issue(stream, 0), __ATOMIC_RELEASE);
	return CG_SUCCESS;
}

EXPORT cg_result cuEventQuery(cg_event event)
{
	if (faulted())
		return sticky_error;
	return now_ns() >= __atomic_load_n((uint64_t *)(void *)event, __ATOMIC_ACQUIRE)
	               ? CG_SUCCESS
	               : CG_ERROR_NOT_READY;
}

EXPORT cg_result cuEventSynchronize(cg_event event)
{
	if (faulted())
		return sticky_error;
	sleep_until(__atomic_load_n((uint64_t *)(void *)event, __ATOMIC_ACQUIRE));
	return CG_SUCCESS;
}

EXPORT cg_result cuEventElapsedTime(float *ms, cg_event start, cg_event end)
{
	uint64_t a = *(uint64_t *)(void *)start, b = *(uint64_t *)(void *)end;

	*ms = b > a ? (float)((double)(b - a) / 1e6) : 0.0f;
	return CG_SUCCESS;
}

/* What <cuda.h> of CUDA >= 12.8 names cuEventElapsedTime (a program built
 * against it, such as the guest's cuda-saxpy run natively, links this). */
EXPORT cg_result cuEventElapsedTime_v2(float *ms, cg_event start, cg_event end)
{
	return cuEventElapsedTime(ms, start, end);
}

/* -------------------------------------------------------------- kernels */

static const char *const kernel_names[] = {
	"vgpu_fill", "vgpu_copy", "vgpu_stream", "vgpu_stencil",
	"vgpu_random_access", "vgpu_checksum", "vgpu_memset_pattern",
	"vgpu_semaphore_timestamp",
};

enum { K_FILL = 1, K_COPY, K_STREAM, K_STENCIL, K_RANDOM_ACCESS, K_CHECKSUM, K_MEMSET,
       K_TIMESTAMP };

/* A module a VM brought: its PTX and its variables' host storage. */
struct fake_module {
	struct ptx_module *ptx;
	uint8_t **storage; /* per variable */
	struct fake_function *functions;
};

struct fake_function {
	struct fake_module *module;
	uint32_t entry;
};

static int builtin_module;

static void user_module_free(struct fake_module *m)
{
	size_t i;

	for (i = 0; m->storage && i < ptx_module_var_count(m->ptx); i++)
		free(m->storage[i]);
	free(m->storage);
	free(m->functions);
	ptx_module_free(m->ptx);
	free(m);
}

EXPORT cg_result cuModuleLoadData(cg_module *module, const void *image)
{
	struct fake_module *m;
	struct ptx_error error;
	size_t i, vars;

	if (strstr(image, ".entry vgpu_fill")) {
		*module = (cg_module)(void *)&builtin_module;
		return CG_SUCCESS;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return CG_ERROR_OUT_OF_MEMORY;
	if (ptx_module_load(image, strlen(image), "module", &m->ptx, &error)) {
		fprintf(stderr, "fake libcuda: cuModuleLoadData: %s\n", error.message);
		free(m);
		return CG_ERROR_INVALID_PTX;
	}
	vars = ptx_module_var_count(m->ptx);
	m->storage = calloc(vars ? vars : 1, sizeof(*m->storage));
	m->functions = calloc(ptx_module_entry_count(m->ptx) + 1, sizeof(*m->functions));
	if (!m->storage || !m->functions) {
		user_module_free(m);
		return CG_ERROR_OUT_OF_MEMORY;
	}
	for (i = 0; i < vars; i++) {
		const struct ptx_var_info *v = ptx_module_var(m->ptx, i);

		m->storage[i] = aligned_alloc(16, (v->size + 15) / 16 * 16 + 16);
		if (!m->storage[i]) {
			user_module_free(m);
			return CG_ERROR_OUT_OF_MEMORY;
		}
		memcpy(m->storage[i], v->init, v->size);
	}
	*module = (cg_module)(void *)m;
	return CG_SUCCESS;
}

/* cuModuleLoad: the PTX image in a file (a user program's own kernels, run
 * natively against this stand-in). */
EXPORT cg_result cuModuleLoad(cg_module *module, const char *fname)
{
	FILE *f = fopen(fname, "rb");
	char *image = NULL;
	size_t len = 0, cap = 0, n;
	cg_result res;

	if (!f)
		return 301; /* CUDA_ERROR_FILE_NOT_FOUND */
	do {
		if (cap - len < 4096) {
			char *bigger = realloc(image, cap + 65536);

			if (!bigger) {
				free(image);
				fclose(f);
				return CG_ERROR_OUT_OF_MEMORY;
			}
			image = bigger;
			cap += 65536;
		}
		n = fread(image + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	image[len] = '\0';
	res = cuModuleLoadData(module, image);
	free(image);
	return res;
}

static bool is_builtin(cg_module module)
{
	return (void *)module == (void *)&builtin_module;
}

EXPORT cg_result cuModuleUnload(cg_module module)
{
	if (!is_builtin(module))
		user_module_free((struct fake_module *)(void *)module);
	return CG_SUCCESS;
}

EXPORT cg_result cuModuleGetFunction(cg_function *function, cg_module module, const char *name)
{
	uintptr_t i;
	int entry;

	if (!is_builtin(module)) {
		struct fake_module *m = (struct fake_module *)(void *)module;

		entry = ptx_module_find_entry(m->ptx, name);
		if (entry < 0)
			return CG_ERROR_INVALID_VALUE;
		m->functions[entry] = (struct fake_function){ .module = m, .entry = (uint32_t)entry };
		*function = (cg_function)(void *)&m->functions[entry];
		return CG_SUCCESS;
	}
	for (i = 0; i < sizeof(kernel_names) / sizeof(kernel_names[0]); i++) {
		if (!strcmp(name, kernel_names[i])) {
			*function = (cg_function)(i + 1);
			return CG_SUCCESS;
		}
	}
	return CG_ERROR_INVALID_VALUE;
}

EXPORT cg_result cuModuleGetGlobal_v2(cg_deviceptr *dptr, size_t *bytes, cg_module module,
                                      const char *name)
{
	struct fake_module *m = (struct fake_module *)(void *)module;
	size_t i;

	if (is_builtin(module))
		return CG_ERROR_INVALID_VALUE;
	for (i = 0; i < ptx_module_var_count(m->ptx); i++) {
		const struct ptx_var_info *v = ptx_module_var(m->ptx, i);

		if (!strcmp(v->name, name)) {
			if (dptr)
				*dptr = (uintptr_t)m->storage[i];
			if (bytes)
				*bytes = v->size;
			return CG_SUCCESS;
		}
	}
	return CG_ERROR_INVALID_VALUE;
}

/* ---------------------------------------------- user kernels on the CPU */

/* May a kernel reach [d, d + n) for access (PROT_READ / PROT_WRITE)? Its
 * host address in *host. Device memory only: mapped allocations (with
 * their access flags) and the module's variables. */
static bool reachable(const struct fake_module *m, uint64_t d, size_t n, int access,
                      void **host)
{
	uintptr_t h;
	bool ok = false;
	size_t i;
	int k;

	pthread_mutex_lock(&lock);
	h = translate_locked(d);
	k = mapping_of(h, n);
	if (k >= 0)
		ok = (mappings[k].prot & access) == access;
	else
		ok = in_device_alloc(h, n);
	pthread_mutex_unlock(&lock);
	for (i = 0; !ok && i < ptx_module_var_count(m->ptx); i++) {
		const struct ptx_var_info *v = ptx_module_var(m->ptx, i);
		uintptr_t start = (uintptr_t)m->storage[i];

		ok = h >= start && h + n <= start + v->size &&
		     (access == PROT_READ || v->space == PTX_VAR_GLOBAL);
	}
	*host = (void *)h;
	return ok;
}

static int kernel_read(void *ctx, uint64_t va, void *dst, size_t n)
{
	void *host;

	if (!reachable(ctx, va, n, PROT_READ, &host))
		return -1;
	memcpy(dst, host, n);
	return 0;
}

static int kernel_write(void *ctx, uint64_t va, const void *src, size_t n)
{
	void *host;

	if (!reachable(ctx, va, n, PROT_READ | PROT_WRITE, &host))
		return -1;
	memcpy(host, src, n);
	return 0;
}

static int kernel_atomic(void *ctx, uint64_t va, const struct ptx_atomic *op, uint64_t *old)
{
	void *host;

	if (!reachable(ctx, va, op->size, PROT_READ | PROT_WRITE, &host))
		return -1;
	if (op->size == 4) {
		uint32_t *word = host, seen = __atomic_load_n(word, __ATOMIC_RELAXED);

		while (!__atomic_compare_exchange_n(word, &seen,
		                                    (uint32_t)ptx_atomic_apply(op, seen), false,
		                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			;
		*old = seen;
	} else {
		uint64_t *word = host, seen = __atomic_load_n(word, __ATOMIC_RELAXED);

		while (!__atomic_compare_exchange_n(word, &seen, ptx_atomic_apply(op, seen), false,
		                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			;
		*old = seen;
	}
	return 0;
}

static const struct ptx_memory_ops kernel_memory = {
	.read = kernel_read, .write = kernel_write, .atomic = kernel_atomic,
};

static uint64_t now_ns(void);

static int past_deadline(void *ctx)
{
	return now_ns() >= *(const uint64_t *)ctx;
}

#define LAUNCH_PARAM_END ((void *)0x00)
#define LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)

/* A user kernel, run to the end before the call returns. */
static cg_result launch_user(struct fake_function *f, struct ptx_dim3 grid, struct ptx_dim3 block,
                             unsigned shared_bytes, void **params, void **extra)
{
	struct fake_module *m = f->module;
	const struct ptx_entry_info *entry = ptx_module_entry(m->ptx, f->entry);
	size_t vars = ptx_module_var_count(m->ptx), i;
	const char *watchdog = getenv("FAKE_CUDA_WATCHDOG_MS");
	uint64_t deadline = now_ns() +
	                    (watchdog && *watchdog ? strtoull(watchdog, NULL, 10) : 1000) * 1000000u;
	uint64_t *addresses = calloc(vars ? vars : 1, sizeof(*addresses));
	uint8_t *block_params = calloc(1, entry->param_bytes + 16);
	const void *param_block = block_params;
	size_t param_size = entry->param_bytes;
	struct ptx_launch launch;
	struct ptx_launch_result result;
	cg_result r = CG_SUCCESS;
	int err;

	if (!addresses || !block_params) {
		free(addresses);
		free(block_params);
		return CG_ERROR_OUT_OF_MEMORY;
	}
	for (i = 0; i < vars; i++)
		addresses[i] = (uintptr_t)m->storage[i];
	if (params) {
		for (i = 0; i < entry->param_count; i++)
			memcpy(block_params + entry->params[i].offset, params[i], entry->params[i].size);
	} else {
		param_size = SIZE_MAX;
		for (i = 0; extra && extra[i] != LAUNCH_PARAM_END; i += 2) {
			if (extra[i] == LAUNCH_PARAM_BUFFER_POINTER)
				param_block = extra[i + 1];
			else if (extra[i] == LAUNCH_PARAM_BUFFER_SIZE)
				param_size = *(const size_t *)extra[i + 1];
		}
		if (param_size != entry->param_bytes)
			r = CG_ERROR_INVALID_VALUE;
	}
	memset(&launch, 0, sizeof(launch));
	launch.module = m->ptx;
	launch.entry = f->entry;
	launch.grid = grid;
	launch.block = block;
	launch.dynamic_shared_bytes = shared_bytes;
	launch.params = param_block;
	launch.param_size = entry->param_bytes;
	launch.var_addresses = addresses;
	launch.var_count = vars;
	launch.mem = &kernel_memory;
	launch.mem_ctx = m;
	launch.host_threads = 1;
	launch.poll = past_deadline;
	launch.poll_ctx = &deadline;
	memset(&result, 0, sizeof(result));
	err = r == CG_SUCCESS ? ptx_launch(&launch, &result) : 0;
	free(addresses);
	free(block_params);
	if (r != CG_SUCCESS || !err)
		return r;
	switch (result.fault) {
	case PTX_FAULT_LAUNCH:
		return CG_ERROR_INVALID_VALUE; /* refused before it ran: not sticky */
	case PTX_FAULT_MEMORY:
		r = CG_ERROR_ILLEGAL_ADDRESS;
		break;
	case PTX_FAULT_MISALIGNED:
		r = CG_ERROR_MISALIGNED_ADDRESS;
		break;
	case PTX_FAULT_WATCHDOG:
		r = CG_ERROR_LAUNCH_TIMEOUT;
		break;
	case PTX_FAULT_STACK:
		r = CG_ERROR_HARDWARE_STACK_ERROR;
		break;
	case PTX_FAULT_TRAP:
		r = CG_ERROR_ASSERT;
		break;
	default:
		r = CG_ERROR_LAUNCH_FAILED;
		break;
	}
	fprintf(stderr, "fake libcuda: a kernel faulted (%d): %s\n", r, result.message);
	sticky_error = r;
	__atomic_store_n(&context_faulted, true, __ATOMIC_RELEASE);
	return r;
}

static uint64_t u64(void **params, unsigned i)
{
	return *(const unsigned long long *)params[i];
}

static uint32_t u32(void **params, unsigned i)
{
	return *(const unsigned int *)params[i];
}

static void *ptr(void **params, unsigned i)
{
	return HOST(u64(params, i));
}

/* The kernels of builtin_kernels.cu, with their parameter lists, on the CPU. */
EXPORT cg_result cuLaunchKernel(cg_function f, unsigned int grid_x, unsigned int grid_y,
                                unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                                unsigned int block_z, unsigned int shared_bytes,
                                cg_stream stream, void **params, void **extra)
{
	uint64_t *words, i, n, t;

	if (!faulted() && fault_requested())
		__atomic_store_n(&context_faulted, true, __ATOMIC_RELEASE);
	if (faulted())
		return sticky_error;
	/* its place in the stream (and its time, for STREAM's passes) */
	stream_issue(stream, (uintptr_t)f == K_STREAM ? stream_pass_ns * u32(params, 2) : 0);
	if ((uintptr_t)f > K_TIMESTAMP)
		return launch_user((struct fake_function *)(void *)f,
		                   (struct ptx_dim3){ grid_x, grid_y, grid_z },
		                   (struct ptx_dim3){ block_x, block_y, block_z }, shared_bytes,
		                   params, extra);
	(void)grid_x, (void)grid_y, (void)grid_z, (void)block_x, (void)block_y, (void)block_z;
	(void)shared_bytes, (void)extra;
	switch ((uintptr_t)f) {
	case K_FILL: /* dst, words, seed, first_word */
		words = ptr(params, 0);
		for (i = 0; i < u64(params, 1); i++)
			words[i] = vgpu_fill_word(u64(params, 2), (u64(params, 3) + i) * 8);
		return CG_SUCCESS;
	case K_TIMESTAMP: /* dst, value: the clock (CLOCK_MONOTONIC here) at dst + 8 */
		words = ptr(params, 0);
		__atomic_store_n(&words[1], now_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&words[0], u64(params, 1), __ATOMIC_RELEASE);
		return CG_SUCCESS;
	case K_COPY: /* dst, src, bytes */
		memmove(ptr(params, 0), ptr(params, 1), u64(params, 2));
		return CG_SUCCESS;
	case K_STREAM: /* buf, words, passes */
		vgpu_kernel_reference_stream(ptr(params, 0), u64(params, 1) * 8, u32(params, 2));
		return CG_SUCCESS;
	case K_STENCIL: /* in, out, width, height */
		vgpu_kernel_reference_stencil(ptr(params, 0), ptr(params, 1), u32(params, 2),
		                              u32(params, 3));
		return CG_SUCCESS;
	case K_RANDOM_ACCESS: /* table, words, updates, starts, per_thread, threads */
		words = ptr(params, 0);
		n = u64(params, 1);
		for (t = 0; t < u32(params, 5); t++) {
			uint64_t state = ((const uint64_t *)ptr(params, 3))[t];
			uint64_t first = t * u64(params, 4), last = first + u64(params, 4);

			if (last > u64(params, 2))
				last = u64(params, 2);
			for (i = first; i < last; i++) {
				uint64_t s = vgpu_xorshift64(&state);

				words[s % n] ^= s;
			}
		}
		return CG_SUCCESS;
	case K_CHECKSUM: /* src, words, result */
		*(uint64_t *)ptr(params, 2) = vgpu_kernel_reference_checksum(ptr(params, 0),
		                                                             u64(params, 1) * 8);
		return CG_SUCCESS;
	case K_MEMSET: { /* dst, bytes, pattern, phase */
		unsigned char *bytes = ptr(params, 0);

		for (i = 0; i < u64(params, 1); i++)
			bytes[i] = (unsigned char)(u32(params, 2) >> (8 * ((i + u32(params, 3)) % 4)));
		return CG_SUCCESS;
	}
	default:
		return CG_ERROR_INVALID_VALUE;
	}
}
