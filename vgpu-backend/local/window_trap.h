/* SPDX-License-Identifier: MIT */
/*
 * window_trap.h - make CPU accesses to a blocked channel window wait instead
 * of fail (the frontend half of the shadow swap, vgpu/abi/local_protocol.h).
 *
 * A device registers its BAR2 mapping and gets a trap slot. To block window
 * n the agent marks it blocked, then mprotect()s its pages to PROT_NONE; a
 * thread that touches them takes SIGSEGV, and the process-wide handler
 * installed here finds the slot and window and sleeps on a futex until the
 * agent has mapped the new pages and unblocked the window. The handler then
 * returns and the faulting instruction runs again, against the new pages.
 *
 * Faults outside every registered BAR2 range go to the SIGSEGV disposition
 * that was in place when the handler was (last) installed (a handler is called; the
 * default action is restored so the repeated fault terminates the process as
 * it would have). The handler only uses async-signal-safe operations
 * (atomics, the futex system call, sigaction).
 */
#ifndef VGPU_LOCAL_WINDOW_TRAP_H
#define VGPU_LOCAL_WINDOW_TRAP_H

#include <stddef.h>
#include <stdint.h>

/* Register [start, start+bytes) as a BAR2 mapping (installing the handler on
 * first use). Returns a slot number, or -ENOSPC when too many devices are
 * open in this process, or the negative errno of sigaction. */
int vgpu_window_trap_register(void *start, size_t bytes);

/* Make sure the waiting handler is the SIGSEGV disposition (installing it
 * again, chaining to what is there now, if something replaced it since).
 * The agent calls it before every block. 0 or the negative errno of
 * sigaction. */
int vgpu_window_trap_ensure_handler(void);

/* Forget a slot; every window must be unblocked. */
void vgpu_window_trap_unregister(int slot);

/* Mark window index of slot blocked: from now on a fault on it waits. Call
 * before removing access to the pages. */
void vgpu_window_trap_block(int slot, unsigned index);

/* The window's new pages are mapped: wake every thread waiting on it. */
void vgpu_window_trap_unblock(int slot, unsigned index);

/* Number of faults that waited for a swap, process-wide (tests). */
uint64_t vgpu_window_trap_waits(void);

#endif /* VGPU_LOCAL_WINDOW_TRAP_H */
