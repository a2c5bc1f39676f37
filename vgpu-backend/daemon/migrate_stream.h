/* SPDX-License-Identifier: MIT */
/*
 * migrate_stream.h - the migration stream: one VM's vGPU state as a
 * sequence of records, written by an export (live migration, save) and
 * read by an import (on another vgpud, restore).
 *
 * Record: struct migrate_record_header, then header.length payload bytes.
 * The header carries MIGRATE_MAGIC, the record type and the version of
 * that type's payload layout, its length (at most MIGRATE_RECORD_MAX) and
 * a CRC-32 (IEEE) of the payload. A reader rejects a record with a bad
 * magic, an unknown type, a version it does not know, a length out of
 * bounds for its type or a checksum mismatch, and a stream that ends
 * without MIGRATE_REC_END: the import fails and leaves nothing behind.
 *
 * Order: BEGIN first; then any number of BUFFER and DATA records (pre-copy
 * sends a range again when the GPU wrote it after it was sent: the last
 * DATA for a range wins); then, from the stop-and-copy, CHANNEL records,
 * MODULE records, DEVICE, HANDLES, and END. A loaded module goes as one or
 * more MODULE records in a row, its image in pieces in order; it names its
 * variables' buffer (announced by a BUFFER before, owned by the module, not
 * in HANDLES). A BUFFER names a buffer by the source's core
 * handle; HANDLES maps the guest's handles to those; a buffer the HANDLES
 * record does not name was freed on the source meanwhile.
 *
 * Fields are little-endian (vgpud runs on little-endian hosts only).
 * The stream version is MIGRATE_STREAM_VERSION; additive record types get
 * a new type number, changed layouts a new record version.
 */
#ifndef VGPUD_MIGRATE_STREAM_H
#define VGPUD_MIGRATE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIGRATE_MAGIC 0x524d4756u /* "VGMR" */
#define MIGRATE_STREAM_VERSION 1u
#define MIGRATE_DATA_MAX (1u << 20) /* bytes of buffer contents per DATA record */
#define MIGRATE_RECORD_MAX (MIGRATE_DATA_MAX + 4096u)
#define MIGRATE_NAME_MAX 64u

enum migrate_record_type {
	MIGRATE_REC_BEGIN = 1,    /* struct migrate_begin */
	MIGRATE_REC_BUFFER = 2,   /* struct migrate_buffer */
	MIGRATE_REC_DATA = 3,     /* struct migrate_data + bytes */
	MIGRATE_REC_CHANNEL = 4,  /* struct migrate_channel + control + GPFIFO + host area */
	MIGRATE_REC_DEVICE = 5,   /* struct migrate_device + the mailbox memory */
	MIGRATE_REC_HANDLES = 6,  /* struct migrate_handles + count x migrate_handle */
	MIGRATE_REC_MODULE = 7,   /* struct migrate_module + addresses + a piece of the image */
	MIGRATE_REC_END = 15,     /* struct migrate_end */
};

struct migrate_record_header {
	uint32_t magic;
	uint16_t type;
	uint16_t version; /* of the payload layout: 1 */
	uint32_t length;
	uint32_t crc32;   /* of the payload */
};

struct migrate_begin {
	uint32_t stream_version;
	uint32_t owner_uid;
	char vm_name[MIGRATE_NAME_MAX];
	char profile[MIGRATE_NAME_MAX];
	char scheduler[16];
	uint32_t weight;
	uint32_t weight_overridden;
	uint64_t cap_bytes;
	uint64_t chunk_bytes;
	uint64_t va_window_base;
	uint64_t vram_bytes; /* the source GPU's, informational */
};

struct migrate_buffer {
	uint64_t handle; /* the source core's */
	uint64_t gpu_va;
	uint64_t bytes;
	uint32_t priority;
	uint32_t reserved;
};

struct migrate_data {
	uint64_t handle; /* the source core's */
	uint64_t offset;
	uint64_t bytes;  /* <= MIGRATE_DATA_MAX, follows */
};

struct migrate_channel {
	uint32_t index;
	uint32_t gpfifo_entries;
	uint32_t guest_put;
	uint32_t guest_get;
	uint32_t control_bytes;
	uint32_t gpfifo_bytes;
	uint32_t host_bytes; /* notifier + pushbuffer */
	uint32_t reserved;
};

struct migrate_device {
	uint32_t irq_status;
	uint32_t irq_mask;
	uint32_t fence_channels;
	uint32_t error_channels;
	uint32_t features;
	uint32_t hello_done;
	uint32_t mailbox_bytes; /* VGPU_MAILBOX_SIZE, follows */
	uint32_t req_tail;      /* vgpud's mailbox server: next request to serve */
	uint32_t resp_head;     /* and next response slot */
	uint32_t reserved;
};

/* One piece of a loaded module (the programs of vgpu/core.h). The first
 * piece (image_offset 0) carries variable_count variable addresses (8
 * bytes each) before its image bytes; later pieces only image bytes. */
#define MIGRATE_MODULE_VARIABLES_MAX 32768u
struct migrate_module {
	uint32_t id;               /* as the guest knows it (LAUNCH_FUNCTION) */
	uint32_t variable_count;
	uint64_t variables_handle; /* the source core's buffer; 0: no variables */
	uint64_t variables_va;
	uint64_t variables_bytes;
	uint64_t image_bytes;      /* the whole image */
	uint64_t image_offset;     /* of this piece */
	uint64_t piece_bytes;      /* image bytes in this record */
};

struct migrate_handle {
	uint32_t guest;
	uint32_t reserved;
	uint64_t core; /* the source core's buffer handle */
};

struct migrate_handles {
	uint32_t count;
	uint32_t reserved;
};

struct migrate_end {
	uint64_t records; /* before this one */
	uint64_t reserved;
};

/* CRC-32 (IEEE 802.3), as zlib's crc32(0, data, len). */
uint32_t migrate_crc32(const void *data, size_t len);

/* A writer or reader over a file descriptor (blocking I/O). */
struct migrate_stream {
	int fd;
	uint64_t bytes;   /* written or read so far */
	uint64_t records;
	int error;        /* first I/O error, sticky */
};

void migrate_stream_init(struct migrate_stream *s, int fd);

/* Write one record: header, then the parts (payload = head + tail). 0 or
 * the (sticky) negative errno. */
int migrate_write(struct migrate_stream *s, uint16_t type, const void *head, size_t head_len,
                  const void *tail, size_t tail_len);

/* Read one record into buf (capacity MIGRATE_RECORD_MAX): *type, *length.
 * 0; -EPIPE at a clean end of file before a header; -EPROTO for a
 * malformed record (why says what); another negative errno. */
int migrate_read(struct migrate_stream *s, void *buf, uint16_t *type, uint32_t *length,
                 const char **why);

#endif /* VGPUD_MIGRATE_STREAM_H */
