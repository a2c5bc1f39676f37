/* SPDX-License-Identifier: MIT */
/*
 * harness.h - the daemon tests' fixtures: an in-process vgpud on sockets in
 * a fresh temporary directory, and "tenants" that act as a VM's guest
 * driver through the local transport's client library (vgpu/local_device.h)
 * with a minimal mailbox client of their own, so the tests do not depend on
 * the guest-side code.
 */
#ifndef TESTS_DAEMON_HARNESS_H
#define TESTS_DAEMON_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "vgpu/abi/device_abi.h"
#include "vgpu/local_device.h"

#include "config.h"
#include "daemon.h"

struct harness {
	char dir[64];
	struct vgpud_config config; /* edit between harness_config and harness_start */
	struct vgpud *d;
};

/* A small GPU (64 MiB VRAM, 1 MiB chunks, 10 ms return pass), sockets in a
 * new temporary directory, profiles "small" (weight 1, cap 32M, 4 max),
 * "big" (weight 2, no cap, any number) and "one" (max 1 instance). */
void harness_config(struct harness *h);
/* Create and start vgpud; asserts on failure. */
void harness_start(struct harness *h);
/* Stop and destroy vgpud, remove the directory. */
void harness_stop(struct harness *h);
/* cmocka fixtures: *state = a harness of harness_config, started; stopped. */
int harness_setup(void **state);
int harness_teardown(void **state);

/* Wait (up to timeout_ms) until vgpud has exactly vms VMs attached. */
bool harness_wait_vms(struct harness *h, unsigned vms, int timeout_ms);

/* One control request (a JSON line) through vgpud's control socket; the
 * parsed response (json_object_put it). Asserts on any failure. */
struct json_object *harness_control(struct harness *h, const char *request);

struct tenant {
	struct vgpu_local_device *dev;
	uint8_t *bar2;
	uint32_t req_head;  /* our copy of what we published */
	uint32_t resp_tail;
	uint32_t seq;
	struct vgpu_error error; /* why tenant_open failed */
};

/* Attach t; on failure t->error says why. */
int tenant_open(struct harness *h, struct tenant *t, const char *name, const char *profile);
void tenant_close(struct tenant *t);

struct vgpu_mailbox_header *tenant_header(struct tenant *t);

/* Queue one request slot as given (no kick); returns its seq. */
uint32_t tenant_put(struct tenant *t, const struct vgpu_request *request);
/* Queue a well-formed request. */
uint32_t tenant_put_op(struct tenant *t, uint16_t opcode, const void *payload, uint16_t size);
void tenant_kick(struct tenant *t);
/* Wait for n responses (in order) into out[0..n). 0, or -ETIMEDOUT. */
int tenant_wait(struct tenant *t, unsigned n, struct vgpu_response *out, int timeout_ms);

/* One request, one response: the response's status, or -errno. */
int tenant_call(struct tenant *t, uint16_t opcode, const void *payload, uint16_t size,
                struct vgpu_response *response);
int tenant_hello(struct tenant *t);
int tenant_alloc(struct tenant *t, uint64_t bytes, uint32_t priority, uint32_t *handle,
                 uint64_t *gpu_va);
int tenant_free(struct tenant *t, uint32_t handle);
int tenant_channel_create(struct tenant *t, uint32_t entries,
                          struct vgpu_channel_create_response *out);
int tenant_stats(struct tenant *t, struct vgpu_stats_response *out);
/* MODULE_LOAD of the image at image_va into a reply table at table_va;
 * out is the response's payload (zeroed when it carries none). */
int tenant_module_load(struct tenant *t, uint64_t image_va, uint64_t image_bytes,
                       uint64_t table_va, uint32_t table_bytes,
                       struct vgpu_module_load_response *out);
int tenant_module_unload(struct tenant *t, uint32_t module);

/* The whole file at path (not NUL-terminated), its size in *bytes; asserts
 * it can be read. The caller frees it. */
char *harness_read_file(const char *path, size_t *bytes);

/* harness_start, then two tenants: a = "alpha" (profile small) holding
 * 8 MiB, b = "beta" (profile big) holding 40 + 24 MiB, more than the VRAM
 * left, so some of the VMs' chunks are evicted. Asserts on failure. */
void harness_start_two_tenants(struct harness *h, struct tenant *a, struct tenant *b);
/* Close whichever of a and b is still open, then harness_stop. */
void harness_stop_two_tenants(struct harness *h, struct tenant *a, struct tenant *b);

/* Descriptors open in this process. */
int count_open_fds(void);

/* VGPU_SEED or time-based; printed. */
uint64_t test_seed(void);

#endif /* TESTS_DAEMON_HARNESS_H */
