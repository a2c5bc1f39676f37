/* SPDX-License-Identifier: MIT */
/*
 * fuzz_responses.h - the guest-side protocol code against a hostile device.
 *
 * fuzz_guest_responses() drives a fixed sequence of requests (HELLO, QUERY,
 * ALLOC, CHANNEL_CREATE, SET_PRIORITY, STATS, FREE, CHANNEL_DESTROY,
 * MODULE_LOAD, MODULE_UNLOAD, raw)
 * against the fake device, with every response, and sometimes the ring
 * indices, replaced by bytes from the input. It aborts if the protocol code
 * returns anything but 0 or one of its documented errors, or returns 0 with
 * a decoded response that breaks a promise of vgpu_proto.h (alignment,
 * ranges, areas inside the channel window, features asked for, a module
 * table inside the room given, ...) or fails with anything but zeroes
 * (MODULE_LOAD: but a believable room on -ENOSPC).
 *
 * Used by the libFuzzer target (fuzz_target_responses.c, -Dfuzz=true) and by
 * a seeded regression test in the 'guest' suite.
 */
#ifndef VGPU_TESTS_FUZZ_RESPONSES_H
#define VGPU_TESTS_FUZZ_RESPONSES_H

#include <stddef.h>
#include <stdint.h>

int fuzz_guest_responses(const uint8_t *data, size_t size);

#endif /* VGPU_TESTS_FUZZ_RESPONSES_H */
