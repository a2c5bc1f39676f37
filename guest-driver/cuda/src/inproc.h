/* SPDX-License-Identifier: MIT */
/*
 * inproc.h - the in-process GPU of the test/benchmark variant of the
 * library (inproc/libcuda.so.1, built with VGPU_CUDA_HAVE_SIMGPU): with
 * $VGPU_BACKEND=simgpu, cuInit opens a private simgpu in this process
 * through the guest runtime's simgpu backend instead of a vGPU, so that
 * the same program binary runs without vgpud (the baseline of the
 * overhead figures). The library users get never contains it.
 */
#ifndef VGPU_CUDA_INPROC_H
#define VGPU_CUDA_INPROC_H

#include <stddef.h>

#include "vgpu_guest.h"

/*
 * Open the in-process simgpu: $VGPU_SIMGPU_VRAM bytes of VRAM (K/M/G
 * suffixes; default simgpu's 1 GiB), otherwise simgpu's defaults, as
 * vgpud configures it; no cap. 0, or a negative errno with the reason in
 * why. Called once, under cu_g.lock.
 */
int cu_open_inproc(struct vgpu_guest_device **out, char *why, size_t why_len);

#endif /* VGPU_CUDA_INPROC_H */
