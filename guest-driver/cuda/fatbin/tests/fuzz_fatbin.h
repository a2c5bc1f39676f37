/* SPDX-License-Identifier: MIT */
/*
 * fuzz_fatbin.h - arbitrary bytes through vgpu_fatbin_ptx, its promises
 * checked: the bytes are copied to a buffer of exactly their size (so a
 * sanitizer sees any read past it), and the result must be 0 with a
 * non-empty NUL-terminated PTX of the returned length, or -EINVAL, -ENOENT
 * or -ENOMEM with NULL and a message. A broken promise aborts.
 *
 * Input that starts with the wrapper's magic is not run (returns -EINVAL):
 * a wrapper holds a pointer, which bytes from a fuzzer cannot safely be;
 * test_fatbin.c covers the wrapper.
 */
#ifndef FUZZ_FATBIN_H
#define FUZZ_FATBIN_H

#include <stddef.h>
#include <stdint.h>

/* Returns what vgpu_fatbin_ptx returned. */
int fuzz_fatbin_run(const uint8_t *data, size_t size);

#endif /* FUZZ_FATBIN_H */
