/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ptx.h - the PTX fuzz harness: arbitrary bytes as a PTX module; a
 * module that loads has each of its first entries launched on a small flat
 * memory with a tight instruction budget, call depth and stack. Whatever the
 * bytes, loading and running must neither crash nor hang. Single-threaded.
 */
#ifndef FUZZ_PTX_H
#define FUZZ_PTX_H

#include <stddef.h>
#include <stdint.h>

/* Returns the number of entries launched (for the regression test). */
int fuzz_ptx_run(const uint8_t *data, size_t size);

#endif
