/* SPDX-License-Identifier: MIT */
/*
 * share_limits.h - fair shares of the GPU-wide resources that tenants
 * take one at a time: channels (the GPU's, all VMs together) and profile
 * instances. Without them one user's VMs could take every channel, or
 * every instance of a profile, and an honest tenant's CHANNEL_CREATE or
 * ATTACH would fail.
 *
 * For a VM owned by a user other than root (vgpu_attach_params.owner_uid;
 * mdev VMs belong to root, which only operators create):
 *  - channels: the user's VMs together hold at most max_channels_per_uid
 *    ([socket]; default 16) channels, and the last channels_reserved
 *    (default 8) of the GPU's free channels go only to a user holding no
 *    channel: however many channels others hold, and however many VMs
 *    they attach, a tenant arriving can open one (as long as fewer than
 *    channels_reserved users without channels compete);
 *  - instances: the user holds at most max_instances_per_uid (0 = no
 *    per-user limit) instances of one profile, and the last free instance
 *    of a profile of two or more goes only to a user holding none of it.
 * A refusal is VGPU_STATUS_LIMIT for CHANNEL_CREATE and an ATTACH error
 * that names the limit. Thread-safe.
 */
#ifndef VGPUD_SHARE_LIMITS_H
#define VGPUD_SHARE_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "vgpu/error.h"

struct vgpud;
struct vgpud_device;

/*
 * Admit one more channel of dev and, when admitted, run create(arg) (which
 * makes the channel and counts it in dev->channels) with the admission
 * held, so that two VMs never both take the last channel. The status of
 * create, or -ENOSPC (error says which limit).
 */
int vgpud_share_channel(struct vgpud *d, struct vgpud_device *dev, int (*create)(void *arg),
                        void *arg, struct vgpu_error *error);

/* How many instances of profile VMs of uid hold now (the registry's). */
uint32_t vgpud_share_instances_held(struct vgpud *d, uint32_t uid, const char *profile);

#endif /* VGPUD_SHARE_LIMITS_H */
