/* SPDX-License-Identifier: MIT */
/*
 * core_migrate.h - what live migration and save/restore need from the core:
 * a VM's buffers and their contents, its dirty pages, its channels stopped
 * at a consistent point, and on the destination the same buffers at the
 * same GPU addresses.
 *
 * Export (source). vgpu_core_vm_buffers lists the buffers; vgpu_core_buffer_read
 * copies a range of one out, wherever its chunks are (resident: through
 * the GPU's aperture; evicted: from its host buffer) while the VM runs.
 * With dirty tracking on (vgpu_core_vm_dirty_tracking, a HAL capability:
 * -ENOTSUP without it) vgpu_core_vm_test_and_clear_dirty says whether the
 * GPU wrote a range since it was last asked, so pre-copy sends again only
 * what changed. vgpu_core_vm_stop_channels suspends every channel of the
 * VM through its shadow and drains it: nothing of the VM runs on the GPU
 * until vgpu_core_vm_start_channels, relocations leave its channels alone
 * meanwhile, and the channels' guest state can be read
 * (vgpu_core_channel_guest_state) with the shadow pages.
 *
 * Import (destination). vgpu_core_import_buffer creates a buffer at the
 * source's GPU address with every chunk in host memory (within the host
 * budget: -ENOMEM otherwise) and lets the return pass bring the chunks to
 * VRAM; vgpu_core_buffer_write fills it. Channels created while the VM is
 * stopped start suspended: the importer writes their shadow pages, gives
 * them the source's position (vgpu_core_channel_set_guest_state) and
 * starts the VM.
 *
 * Locking: every call takes the allocation lock for its own duration
 * (vgpu_core_vm_stop_channels also while it waits for the drain, bounded
 * by the drain timeout); thread-safe like the rest of the core. Errors are
 * negative errno values with error (vgpu/error.h) filled.
 */
#ifndef VGPU_CORE_MIGRATE_H
#define VGPU_CORE_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/core.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_core_buffer_desc {
	uint64_t handle; /* the core's */
	uint64_t gpu_va;
	uint64_t bytes;
	uint32_t priority;
	uint32_t reserved;
};

/* Every buffer of vm, in creation order; *out is malloc'ed (free it, NULL
 * when count is 0). 0 or -ENOMEM. */
int vgpu_core_vm_buffers(struct vgpu_vm *vm, struct vgpu_core_buffer_desc **out, size_t *count,
                         struct vgpu_error *error);

/* Copy [offset, +bytes) of buffer handle out of / into the GPU memory it is
 * in now. -ENOENT (handle), -EINVAL (range), -EFAULT (HAL). */
int vgpu_core_buffer_read(struct vgpu_vm *vm, uint64_t handle, uint64_t offset, void *dst,
                      uint64_t bytes, struct vgpu_error *error);
int vgpu_core_buffer_write(struct vgpu_vm *vm, uint64_t handle, uint64_t offset, const void *src,
                       uint64_t bytes, struct vgpu_error *error);

/* Dirty pages of vm's address space (vgpu_hal_as_dirty_tracking). */
int vgpu_core_vm_dirty_tracking(struct vgpu_vm *vm, bool enable, struct vgpu_error *error);
int vgpu_core_vm_test_and_clear_dirty(struct vgpu_vm *vm, uint64_t gpu_va, uint64_t bytes,
                                      bool *dirty, struct vgpu_error *error);

/* Stop: suspend and drain every channel of vm (a channel that does not
 * drain within the drain timeout is killed, as in a relocation). Start:
 * resume them (timeout as the drain timeout). -EALREADY / -EINVAL when
 * already stopped / not stopped. */
int vgpu_core_vm_stop_channels(struct vgpu_vm *vm, struct vgpu_error *error);
int vgpu_core_vm_start_channels(struct vgpu_vm *vm, struct vgpu_error *error);
bool vgpu_core_vm_channels_stopped(struct vgpu_vm *vm);

/* A stopped channel's guest position (vgpu_shadow_get_guest_state). */
int vgpu_core_channel_guest_state(struct vgpu_core_channel *channel, uint32_t *guest_put,
                                  uint32_t *guest_get);
int vgpu_core_channel_set_guest_state(struct vgpu_core_channel *channel, uint32_t guest_put,
                                      uint32_t guest_get);

/* A buffer at exactly gpu_va (a multiple of the core's buffer alignment),
 * bytes (a multiple of the GPU's smallest page), every chunk in host
 * memory. -EINVAL, -EEXIST (range taken), -EDQUOT, -ENOMEM, -ENOSPC. */
int vgpu_core_import_buffer(struct vgpu_vm *vm, uint64_t gpu_va, uint64_t bytes,
                            unsigned priority, struct vgpu_buffer_info *out,
                            struct vgpu_error *error);

/*
 * Modules (vgpu/core.h's, the programs a VM loaded). vgpu_core_vm_modules
 * lists them with copies of their images and variable addresses (free with
 * vgpu_core_module_descs_free); their variables are in a buffer of the VM
 * (variables_handle, 0 without variables), which vgpu_core_vm_buffers
 * lists like any other. vgpu_core_module_restore loads such a module again
 * into an imported VM: under the same id (what the guest's LAUNCH_FUNCTION
 * names), its variables at the same addresses, in the imported buffer
 * variables_handle (this core's handle, holding the variables' contents;
 * nothing is initialized). The buffer goes with the module when it is
 * unloaded. -EINVAL (an image that does not parse here, variables that
 * differ or lie outside the buffer), -EEXIST (id taken), -ENOSPC, -ENOTSUP
 * (the GPU runs no programs, or cannot choose ids), -ENOMEM.
 */
struct vgpu_core_module_desc {
	uint32_t id;
	uint32_t variable_count;
	uint64_t variables_handle;
	uint64_t variables_va, variables_bytes;
	uint64_t *variable_va; /* variable_count addresses */
	void *image;
	size_t image_bytes;
};

int vgpu_core_vm_modules(struct vgpu_vm *vm, struct vgpu_core_module_desc **out, size_t *count,
                         struct vgpu_error *error);
void vgpu_core_module_descs_free(struct vgpu_core_module_desc *descs, size_t count);
int vgpu_core_module_restore(struct vgpu_vm *vm, const struct vgpu_core_module_desc *desc,
                             const char *name, struct vgpu_error *error);

#ifdef __cplusplus
}
#endif

#endif /* VGPU_CORE_MIGRATE_H */
