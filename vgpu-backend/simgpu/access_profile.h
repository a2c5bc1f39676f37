/* SPDX-License-Identifier: MIT */
/*
 * access_profile.h - a debug interface: per-page read and write counts of
 * an address space's kernels (the GPUswap thesis's access profiles, its
 * Fig. 4.4), written to a file when the address space is destroyed.
 *
 * Off unless the environment variable SIMGPU_ACCESS_PROFILE names a
 * directory when the address space is created. Then every memory
 * transaction the compute engine charges as it translates it (a PTX
 * thread's load, store or atomic, a built-in kernel's fill; not semaphore
 * polls, copy-engine copies or CPU aperture accesses) adds one to its 4 KiB
 * page's read or write count (an atomic adds one to each; a transaction
 * that crosses a page counts on the page it starts on, the next span on
 * the next), kept by GPU virtual address, so a chunk that is
 * evicted or returned keeps its counts. When the address space is destroyed
 * and counted anything, the counts go to DIR/as-PID-N.tsv (N: the process's
 * address spaces in creation order):
 *
 *   # simgpu access profile: 4 KiB pages, compute-engine transactions
 *   # busy_ns compute=C copy=K      (its modeled time, vgpu_hal_as_counters)
 *   page_va reads writes            (one line per page touched, by VA)
 *
 * A sparse list of 2 MiB regions, each 512 pairs of counters; not
 * thread-safe: the address space's lock guards it. Out of memory: the
 * transactions that cannot be recorded are counted in a "# lost N" line.
 */
#ifndef SIMGPU_ACCESS_PROFILE_H
#define SIMGPU_ACCESS_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct access_profile_region;

struct access_profile {
	bool enabled;
	char *path; /* where the counts go; NULL when off */
	struct access_profile_region **regions; /* sorted by key */
	size_t count, capacity;
	struct access_profile_region *last; /* the last one hit */
	uint64_t lost;
};

/* Off, or on when $SIMGPU_ACCESS_PROFILE is set. */
void access_profile_init(struct access_profile *ap);
/* Count one transaction on va's page: reads and/or writes. */
void access_profile_count(struct access_profile *ap, uint64_t va, bool read, bool write);
/* Write the file (when on and anything was counted, with the address
 * space's modeled busy time) and free everything. */
void access_profile_fini(struct access_profile *ap, uint64_t busy_compute_ns,
                         uint64_t busy_copy_ns);

#endif /* SIMGPU_ACCESS_PROFILE_H */
