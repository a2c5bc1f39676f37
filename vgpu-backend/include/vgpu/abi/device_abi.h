/* SPDX-License-Identifier: MIT */
/*
 * device_abi.h - the vGPU device ABI, version 1.4.
 *
 * The one definition of what a guest sees of a vGPU: PCI identity, BAR
 * layout, registers, the mailbox and its messages, channel windows and
 * interrupts. Included verbatim by vgpud, the guest driver (vgpu.ko and the
 * guest runtime) and the host module (vgpu_mdev.ko); never copy it.
 * device_abi.md beside this file explains it in prose.
 *
 * Every multi-byte field is little-endian and fixed-width. Structures are
 * naturally aligned and have no implicit padding (checked below).
 */
#ifndef VGPU_DEVICE_ABI_H
#define VGPU_DEVICE_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                   */

#define VGPU_ABI_VERSION_MAJOR 1 /* incompatible changes */
#define VGPU_ABI_VERSION_MINOR 4 /* compatible additions */
/* 1.1: QUERY page_size_mask bit 2, 2 MiB VRAM pages (a GPU like cudagpu's;
 *      ALLOC then rounds to 2 MiB). A 1.0 guest refuses such a backend's
 *      QUERY; every other backend looks the same to it.
 * 1.2: VGPU_IRQ_DEVICE_LOST: the device interrupts when the backend goes
 *      away, so a guest fails its pending waits at once. A 1.1 guest never
 *      enables it (its VGPU_IRQ_ALL lacks the bit) and still notices
 *      VGPU_STATUS_BACKEND_GONE by reading STATUS.
 * 1.3: VGPU_FEATURE_MODULES: MODULE_LOAD and MODULE_UNLOAD requests (a
 *      guest's own GPU programs, PTX) and the LAUNCH_FUNCTION command
 *      (command format revision 2). A 1.2 guest never asks for the feature
 *      and sees nothing new.
 * 1.4: VGPU_FEATURE_SEMAPHORE_TIMESTAMP: SEMAPHORE_RELEASE's flag
 *      VGPU_SEMAPHORE_TIMESTAMP writes the GPU's nanosecond clock beside the
 *      value (command format revision 3), so a guest measures GPU time
 *      (cuEventElapsedTime). A 1.3 guest never sets the flag and sees
 *      nothing new. */
#define VGPU_ABI_VERSION ((VGPU_ABI_VERSION_MAJOR << 16) | VGPU_ABI_VERSION_MINOR)

/* Feature bits (VGPU_REG_FEATURES, HELLO). */
#define VGPU_FEATURE_MSIX (1u << 0)           /* interrupts via MSI-X vectors */
#define VGPU_FEATURE_PRIORITY_HINTS (1u << 1) /* ALLOC priority / SET_PRIORITY honoured */
#define VGPU_FEATURE_STATS (1u << 2)          /* STATS request */
#define VGPU_FEATURE_DOORBELL_KICK (1u << 3)  /* doorbell word writes wake the GPU early */
#define VGPU_FEATURE_MODULES (1u << 4)        /* 1.3: MODULE_LOAD/UNLOAD, LAUNCH_FUNCTION */
#define VGPU_FEATURE_SEMAPHORE_TIMESTAMP (1u << 5) /* 1.4: VGPU_SEMAPHORE_TIMESTAMP */

/* ------------------------------------------------------------------------ */
/* PCI identity                                                              */
/*
 * 1af4:10f0..10ff is the range Red Hat/QEMU set aside for experimental
 * devices used without registration (QEMU docs/specs/pci-ids). The virtio
 * driver ignores IDs above 0x107f, so it never claims this device. A product
 * leaving the lab must get an assigned ID.
 */
#define VGPU_PCI_VENDOR_ID 0x1af4
#define VGPU_PCI_DEVICE_ID 0x10f0
#define VGPU_PCI_SUBSYSTEM_VENDOR_ID 0x1af4
#define VGPU_PCI_SUBSYSTEM_ID 0x0001
#define VGPU_PCI_CLASS 0x030200 /* display controller, 3D controller */
#define VGPU_PCI_REVISION 0x01

/* ------------------------------------------------------------------------ */
/* BARs                                                                      */
/*
 * BAR0: 4 KiB of registers, trapped by the host (every access is relayed to
 *       vgpud). Nothing on the submission path lives here.
 * BAR2: device memory the guest maps: the mailbox at offset 0, then one
 *       window per channel. Never trapped.
 */
#define VGPU_BAR0_INDEX 0
#define VGPU_BAR0_SIZE 0x1000u
#define VGPU_BAR2_INDEX 2

#define VGPU_PAGE_SIZE 4096u

/* BAR0 register offsets (all 32-bit). */
#define VGPU_REG_MAGIC 0x000           /* RO: VGPU_MAGIC */
#define VGPU_REG_ABI_VERSION 0x004     /* RO: VGPU_ABI_VERSION */
#define VGPU_REG_FEATURES 0x008        /* RO: VGPU_FEATURE_* offered */
#define VGPU_REG_STATUS 0x00c          /* RO: VGPU_STATUS_* */
#define VGPU_REG_MAILBOX_DOORBELL 0x010 /* WO: any value: new requests queued */
#define VGPU_REG_IRQ_STATUS 0x014      /* RO: VGPU_IRQ_* pending */
#define VGPU_REG_IRQ_ACK 0x018         /* WO: write 1 to clear a VGPU_IRQ_* bit */
#define VGPU_REG_IRQ_MASK 0x01c        /* RW: 1 = interrupt source enabled;
                                          VGPU_IRQ_ALL after attach */
#define VGPU_REG_BAR2_SIZE_LO 0x020    /* RO: size of BAR2 */
#define VGPU_REG_BAR2_SIZE_HI 0x024
#define VGPU_REG_MAX_CHANNELS 0x028    /* RO: channel windows in BAR2 */
#define VGPU_REG_CHANNEL_STRIDE 0x02c  /* RO: bytes between channel windows */
#define VGPU_REG_FENCE_CHANNELS 0x030  /* RC: bit n = channel n raised a fence interrupt */
#define VGPU_REG_ERROR_CHANNELS 0x034  /* RC: bit n = channel n was killed */

#define VGPU_MAGIC 0x55504756u /* "VGPU" */

#define VGPU_STATUS_READY (1u << 0)        /* backend attached, mailbox usable */
#define VGPU_STATUS_BACKEND_GONE (1u << 1) /* vgpud went away: the device is lost,
                                              requests fail, fences never pass */

#define VGPU_IRQ_MAILBOX (1u << 0)       /* responses available */
#define VGPU_IRQ_FENCE (1u << 1)         /* a SEMAPHORE_RELEASE with interrupt ran */
#define VGPU_IRQ_CHANNEL_ERROR (1u << 2) /* a channel was killed */
#define VGPU_IRQ_DEVICE_LOST (1u << 3)   /* 1.2: STATUS became BACKEND_GONE: every
                                            pending request and fence is lost;
                                            raised by the host (the backend is
                                            gone), on the error vector */
#define VGPU_IRQ_ALL (VGPU_IRQ_MAILBOX | VGPU_IRQ_FENCE | VGPU_IRQ_CHANNEL_ERROR | \
		      VGPU_IRQ_DEVICE_LOST)

/* MSI-X vectors when VGPU_FEATURE_MSIX (else one INTx/MSI for all). */
#define VGPU_MSIX_VECTOR_MAILBOX 0
#define VGPU_MSIX_VECTOR_FENCE 1
#define VGPU_MSIX_VECTOR_ERROR 2
#define VGPU_MSIX_VECTORS 3

/* ------------------------------------------------------------------------ */
/* BAR2 layout                                                               */

#define VGPU_MAILBOX_OFFSET 0x0u
#define VGPU_MAILBOX_SIZE 0x10000u /* 64 KiB */
#define VGPU_CHANNEL_WINDOW_BASE 0x10000u
#define VGPU_CHANNEL_WINDOW_STRIDE 0x40000u /* 256 KiB per channel */
#define VGPU_MAX_CHANNELS 16u
#define VGPU_BAR2_SIZE (VGPU_CHANNEL_WINDOW_BASE + VGPU_MAX_CHANNELS * VGPU_CHANNEL_WINDOW_STRIDE)

/*
 * One channel window, offsets relative to its start
 * (VGPU_CHANNEL_WINDOW_BASE + index * VGPU_CHANNEL_WINDOW_STRIDE):
 *
 *   control page  GP_PUT / GP_GET / doorbell word (GPU format), shadowed
 *                 by the backend while the channel is suspended
 *   GPFIFO ring   entries in the GPU's format, shadowed likewise
 *   notifier      a page the GPU may write (semaphores, checksums) and the
 *                 guest reads; never shadowed
 *   pushbuffer    guest-written command memory the GPU reads; never shadowed
 *
 * The notifier and pushbuffer areas are also mapped into the VM's GPU
 * address space; CHANNEL_CREATE returns their GPU virtual addresses. Exact
 * offsets and sizes come from CHANNEL_CREATE's response, so they can grow
 * within the stride without an ABI break.
 */

/* ------------------------------------------------------------------------ */
/* Mailbox                                                                   */
/*
 * Two rings of fixed 64-byte slots in BAR2 at VGPU_MAILBOX_OFFSET: requests
 * (guest produces, backend consumes) and responses (backend produces, guest
 * consumes). Indices count slots modulo 2^32; slot = index % entries. A ring
 * is empty when head == tail and full when head - tail == entries.
 * Protocol: the guest writes request slots, then req_head (release order),
 * then any value to VGPU_REG_MAILBOX_DOORBELL. The backend answers every
 * request exactly once, in order, with the request's seq, and raises
 * VGPU_IRQ_MAILBOX. A guest that overruns the response ring loses nothing:
 * the backend stops consuming requests until response slots free up; it
 * looks again at the next doorbell, so a guest that consumed responses while
 * requests were still queued rings the doorbell again.
 *
 * The backend keeps its own copies of req_tail and resp_head (what it
 * writes here only informs the guest, and it rewrites them at every
 * doorbell, so a guest that scribbled over them can resynchronise) and
 * never trusts what it reads: a req_head more than `entries` ahead of
 * req_tail, or a resp_tail that claims more than `entries` responses
 * outstanding, is ignored (nothing is consumed) until the guest writes sane
 * values. One doorbell serves a
 * bounded number of requests; the backend continues by itself while more
 * are queued.
 */
#define VGPU_MAILBOX_ENTRIES 256u
#define VGPU_MAILBOX_SLOT_SIZE 64u
#define VGPU_MAILBOX_PAYLOAD_SIZE 48u

struct vgpu_mailbox_header {
	uint32_t req_head;  /* written by the guest */
	uint32_t req_tail;  /* written by the backend */
	uint32_t resp_head; /* written by the backend */
	uint32_t resp_tail; /* written by the guest */
	uint32_t entries;   /* VGPU_MAILBOX_ENTRIES, set by the backend */
	uint32_t reserved[11];
};

#define VGPU_MAILBOX_REQ_RING_OFFSET 0x1000u
#define VGPU_MAILBOX_RESP_RING_OFFSET (VGPU_MAILBOX_REQ_RING_OFFSET + \
				       VGPU_MAILBOX_ENTRIES * VGPU_MAILBOX_SLOT_SIZE)

enum vgpu_opcode {
	VGPU_OP_HELLO = 1,
	VGPU_OP_QUERY = 2,
	VGPU_OP_ALLOC = 3,
	VGPU_OP_FREE = 4,
	VGPU_OP_CHANNEL_CREATE = 5,
	VGPU_OP_CHANNEL_DESTROY = 6,
	VGPU_OP_SET_PRIORITY = 7,
	VGPU_OP_STATS = 8,
	VGPU_OP_MODULE_LOAD = 9,    /* 1.3, VGPU_FEATURE_MODULES */
	VGPU_OP_MODULE_UNLOAD = 10, /* 1.3, VGPU_FEATURE_MODULES */
};

/* Response status codes. */
enum vgpu_status {
	VGPU_STATUS_OK = 0,
	VGPU_STATUS_INVALID = 1,     /* malformed request: bad length, reserved bits, range */
	VGPU_STATUS_UNSUPPORTED = 2, /* unknown opcode or feature not offered */
	VGPU_STATUS_NO_MEMORY = 3,   /* cap reached or host budget exhausted */
	VGPU_STATUS_NOT_FOUND = 4,   /* handle or channel does not exist for this VM */
	VGPU_STATUS_LIMIT = 5,       /* too many buffers/channels */
	VGPU_STATUS_VERSION = 6,     /* HELLO: major version not supported */
	VGPU_STATUS_NOT_READY = 7,   /* request before a successful HELLO */
	VGPU_STATUS_INTERNAL = 8,    /* backend failure; the VM's state is unchanged */
	VGPU_STATUS_BUSY = 9,        /* transient (e.g. another VM's channels did not
	                                drain in time): nothing changed, retry later */
};

struct vgpu_request {
	uint16_t opcode;       /* enum vgpu_opcode */
	uint16_t payload_size; /* bytes of payload used, <= VGPU_MAILBOX_PAYLOAD_SIZE */
	uint32_t seq;          /* echoed in the response */
	uint64_t reserved;     /* must be 0 */
	uint8_t payload[VGPU_MAILBOX_PAYLOAD_SIZE];
};

struct vgpu_response {
	uint16_t opcode;       /* the request's opcode */
	uint16_t payload_size;
	uint32_t seq;          /* the request's seq */
	uint32_t status;       /* enum vgpu_status */
	uint32_t reserved;
	uint8_t payload[VGPU_MAILBOX_PAYLOAD_SIZE];
};

/* HELLO: version and feature negotiation; must be the first request. */
struct vgpu_hello_request {
	uint32_t abi_version;    /* the guest's VGPU_ABI_VERSION */
	uint32_t guest_features; /* VGPU_FEATURE_* the guest wants */
};
struct vgpu_hello_response {
	uint32_t abi_version; /* the backend's */
	uint32_t features;    /* negotiated: offered & wanted */
	uint32_t max_channels;
	uint32_t reserved;
};

/* QUERY: this VM's view of GPU memory. */
struct vgpu_query_response {
	uint64_t vram_share_bytes; /* current fair share of VRAM */
	uint64_t cap_bytes;        /* most bytes it may hold; 0 = unlimited */
	uint64_t chunk_bytes;      /* accounting/eviction granularity */
	uint64_t vram_total_bytes; /* the physical GPU's allocatable VRAM */
	uint32_t page_size_mask;   /* GPU pages of VRAM: bit 0: 4 KiB, bit 1: 64 KiB,
	                              bit 2: 2 MiB (then ALLOC rounds to 2 MiB) */
	uint32_t reserved;
};

#define VGPU_PRIORITY_MIN 0
#define VGPU_PRIORITY_DEFAULT 7
#define VGPU_PRIORITY_MAX 15

#define VGPU_ALLOC_FLAGS_ALL 0u /* no flags defined in 1.0; others are INVALID */
#define VGPU_ALLOC_MAX_BYTES (1ull << 40) /* larger ALLOC sizes are INVALID */

/* ALLOC: GPU memory in the VM's address space. */
struct vgpu_alloc_request {
	uint64_t bytes;    /* > 0; rounded up to 4 KiB */
	uint32_t priority; /* 0..15, hint for eviction (higher = keep longer) */
	uint32_t flags;    /* VGPU_ALLOC_FLAGS_ALL */
};
struct vgpu_alloc_response {
	uint64_t gpu_va;
	uint64_t bytes; /* as allocated */
	uint32_t handle;
	uint32_t reserved;
};

/* FREE, SET_PRIORITY */
struct vgpu_free_request {
	uint32_t handle;
	uint32_t reserved;
};
struct vgpu_set_priority_request {
	uint32_t handle;
	uint32_t priority;
};

/* CHANNEL_CREATE: a channel window becomes live. gpfifo_entries is 0 (the
 * default) or a power of two in [2, VGPU_CHANNEL_GPFIFO_ENTRIES_MAX], so
 * that control page, ring, notifier and a pushbuffer fit in the stride. */
#define VGPU_CHANNEL_GPFIFO_ENTRIES_DEFAULT 512u
#define VGPU_CHANNEL_GPFIFO_ENTRIES_MAX 4096u

struct vgpu_channel_create_request {
	uint32_t gpfifo_entries; /* power of two, 0 = default */
	uint32_t reserved;
};
struct vgpu_channel_create_response {
	uint32_t index;           /* window index in BAR2 */
	uint32_t gpfifo_entries;
	uint32_t control_offset;  /* within the window */
	uint32_t gpfifo_offset;
	uint32_t notifier_offset;
	uint32_t pushbuf_offset;
	uint32_t pushbuf_bytes;
	uint32_t notifier_bytes;
	uint64_t notifier_gpu_va;
	uint64_t pushbuf_gpu_va;
};

struct vgpu_channel_destroy_request {
	uint32_t index;
	uint32_t reserved;
};

/* STATS: this VM's memory shares. */
struct vgpu_stats_response {
	uint64_t allocated_bytes;
	uint64_t resident_bytes;
	uint64_t evicted_bytes;
	uint64_t fair_share_bytes;
	uint32_t evictions;
	uint32_t returns;
	uint64_t reserved;
};

/*
 * MODULE_LOAD (1.3): load a GPU program into this VM. The image (PTX text:
 * a guest extracts the PTX of a fatbin itself) is in the VM's own GPU
 * memory, in a buffer it allocated and filled: the request carries no bulk
 * data, so every door (mdev, vgpu-pci, the local socket) passes it as it is.
 * The backend reads and checks the image, places the module's variables in
 * a buffer of the VM's own (accounted and evictable like any other), and
 * writes a struct vgpu_module_table at table_va, in the VM's memory too.
 * Status: OK; INVALID for a malformed image, PTX the GPU cannot run or a
 * bad range (the table's message says why, with the line, when table_bytes
 * holds at least its header); LIMIT when table_bytes is too small (the
 * response's table_bytes says how much is needed; nothing was loaded);
 * NO_MEMORY when the variables do not fit the VM's cap; UNSUPPORTED when the
 * GPU runs no user programs (the table's message says why).
 */
#define VGPU_MODULE_IMAGE_MAX_BYTES (64u << 20)
#define VGPU_MODULE_TABLE_MAX_BYTES (16u << 20)
#define VGPU_MODULE_MESSAGE_BYTES 256u
#define VGPU_MODULE_TABLE_MAGIC 0x4c444f4du /* "MODL" */

struct vgpu_module_load_request {
	uint64_t image_va;    /* in the VM's GPU memory */
	uint64_t image_bytes; /* 1..VGPU_MODULE_IMAGE_MAX_BYTES */
	uint64_t table_va;    /* where the backend writes the table */
	uint32_t table_bytes; /* room at table_va, <= VGPU_MODULE_TABLE_MAX_BYTES */
	uint32_t flags;       /* 0 */
};
struct vgpu_module_load_response {
	uint32_t module;          /* handle for LAUNCH_FUNCTION and MODULE_UNLOAD */
	uint32_t function_count;
	uint32_t variable_count;
	uint32_t table_bytes;     /* the table's size (LIMIT: the size needed) */
	uint64_t variables_va;    /* the buffer holding the module's variables */
	uint64_t variables_bytes; /* 0: none */
};

/* The table MODULE_LOAD writes: this header, then the arrays and strings
 * at the offsets it gives (from the table's start). */
struct vgpu_module_table {
	uint32_t magic;            /* VGPU_MODULE_TABLE_MAGIC */
	uint32_t bytes;            /* the whole table */
	uint32_t function_count;
	uint32_t param_count;      /* of all functions */
	uint32_t variable_count;
	uint32_t functions_offset; /* struct vgpu_module_function[function_count] */
	uint32_t params_offset;    /* struct vgpu_module_param[param_count] */
	uint32_t variables_offset; /* struct vgpu_module_variable[variable_count] */
	uint32_t strings_offset;   /* NUL-terminated names */
	uint32_t strings_bytes;
	uint32_t reserved[6];
	char message[VGPU_MODULE_MESSAGE_BYTES]; /* why a load failed; "" */
};

/* A kernel (PTX .entry) of the module; its index is LAUNCH_FUNCTION's
 * function argument. */
struct vgpu_module_function {
	uint32_t name_offset;         /* into the strings */
	uint32_t param_count;
	uint32_t first_param;         /* index of its first parameter */
	uint32_t param_bytes;         /* the parameter block's size */
	uint32_t static_shared_bytes; /* .shared memory the module declares */
	uint32_t local_bytes;         /* per thread */
	uint32_t max_threads_per_block;
	uint32_t reserved;
};

struct vgpu_module_param {
	uint32_t offset; /* in the parameter block */
	uint32_t size;
	uint32_t align;
	uint32_t reserved;
};

#define VGPU_MODULE_VARIABLE_GLOBAL 1u /* .global */
#define VGPU_MODULE_VARIABLE_CONST 2u  /* .const */

/* A module-scope variable, placed in the VM's memory by the backend. */
struct vgpu_module_variable {
	uint32_t name_offset;
	uint32_t space;  /* VGPU_MODULE_VARIABLE_* */
	uint64_t gpu_va; /* where it is */
	uint64_t bytes;
};

/* MODULE_UNLOAD (1.3): the module's handle is gone, its variables' buffer
 * freed. Launches of it already queued fault (VGPU_FAULT_BAD_KERNEL_ARGS). */
struct vgpu_module_unload_request {
	uint32_t module;
	uint32_t reserved;
};

/* ------------------------------------------------------------------------ */
/* Layout checks                                                             */

#ifndef __cplusplus
#define VGPU_ABI_ASSERT(cond, what) _Static_assert(cond, what)
VGPU_ABI_ASSERT(sizeof(struct vgpu_mailbox_header) == 64, "mailbox header is 64 bytes");
VGPU_ABI_ASSERT(sizeof(struct vgpu_request) == VGPU_MAILBOX_SLOT_SIZE, "request slot");
VGPU_ABI_ASSERT(sizeof(struct vgpu_response) == VGPU_MAILBOX_SLOT_SIZE, "response slot");
VGPU_ABI_ASSERT(sizeof(struct vgpu_query_response) <= VGPU_MAILBOX_PAYLOAD_SIZE, "query");
VGPU_ABI_ASSERT(sizeof(struct vgpu_channel_create_response) <= VGPU_MAILBOX_PAYLOAD_SIZE,
		"channel create");
VGPU_ABI_ASSERT(sizeof(struct vgpu_stats_response) <= VGPU_MAILBOX_PAYLOAD_SIZE, "stats");
VGPU_ABI_ASSERT(sizeof(struct vgpu_module_load_request) <= VGPU_MAILBOX_PAYLOAD_SIZE,
		"module load");
VGPU_ABI_ASSERT(sizeof(struct vgpu_module_load_response) <= VGPU_MAILBOX_PAYLOAD_SIZE,
		"module load response");
VGPU_ABI_ASSERT(sizeof(struct vgpu_module_table) == 320, "module table header");
VGPU_ABI_ASSERT(sizeof(struct vgpu_module_function) == 32, "module function");
VGPU_ABI_ASSERT(sizeof(struct vgpu_module_param) == 16, "module parameter");
VGPU_ABI_ASSERT(sizeof(struct vgpu_module_variable) == 24, "module variable");
VGPU_ABI_ASSERT(VGPU_MAILBOX_RESP_RING_OFFSET + VGPU_MAILBOX_ENTRIES * VGPU_MAILBOX_SLOT_SIZE <=
			VGPU_MAILBOX_SIZE,
		"mailbox rings fit");
#endif

#endif /* VGPU_DEVICE_ABI_H */
