/* SPDX-License-Identifier: MIT */
/*
 * fake-vgpud-local.h - fake-vgpud's local-socket mode (fake-vgpud-local.c):
 * QEMU's vgpu-pci device served at socket path with descriptors no real
 * vgpud sends. Returns the program's exit status.
 */
#ifndef FAKE_VGPUD_LOCAL_H
#define FAKE_VGPUD_LOCAL_H

int fake_vgpud_local_main(const char *path);

#endif /* FAKE_VGPUD_LOCAL_H */
