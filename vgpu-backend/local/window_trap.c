// SPDX-License-Identifier: MIT
/* window_trap.c - waiting SIGSEGV handler for blocked windows, see window_trap.h. */
#include "window_trap.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vgpu/abi/device_abi.h"

#define TRAP_SLOTS 256

struct trap_slot {
	_Atomic uintptr_t start; /* 0: free */
	_Atomic uintptr_t end;
	_Atomic uint32_t blocked[VGPU_MAX_CHANNELS];
	_Atomic uint32_t generation[VGPU_MAX_CHANNELS]; /* unblocks so far */
};

static struct trap_slot slots[TRAP_SLOTS];
static atomic_bool slot_taken[TRAP_SLOTS];
static struct sigaction previous_action;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t fault_waits;
/* The last fault this thread let retry without waiting: if the same
 * access faults again with no swap in between, it is not a swap. */
static __thread uintptr_t retried_address;
static __thread uint32_t retried_generation;
static __thread bool retried;

static void futex_wait(_Atomic uint32_t *word, uint32_t expected)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void chain_to_previous(int sig, siginfo_t *info, void *context)
{
	struct sigaction dfl;

	if (previous_action.sa_flags & SA_SIGINFO) {
		if (previous_action.sa_sigaction) {
			previous_action.sa_sigaction(sig, info, context);
			return;
		}
	} else if (previous_action.sa_handler != SIG_DFL &&
	           previous_action.sa_handler != SIG_IGN) {
		previous_action.sa_handler(sig);
		return;
	}
	/* Default disposition: restore it; the access faults again on return
	 * and the process ends the way it would have without us. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
}

static struct trap_slot *slot_for(uintptr_t address)
{
	unsigned i;

	for (i = 0; i < TRAP_SLOTS; i++) {
		uintptr_t start = atomic_load_explicit(&slots[i].start, memory_order_acquire);

		if (start && address >= start &&
		    address < atomic_load_explicit(&slots[i].end, memory_order_acquire))
			return &slots[i];
	}
	return NULL;
}

static void on_segv(int sig, siginfo_t *info, void *context)
{
	int saved_errno = errno;
	uintptr_t address = (uintptr_t)info->si_addr;
	struct trap_slot *slot = info->si_code > 0 ? slot_for(address) : NULL;

	if (slot) {
		uintptr_t offset = address - atomic_load(&slot->start);
		uintptr_t index = VGPU_MAX_CHANNELS;

		if (offset >= VGPU_CHANNEL_WINDOW_BASE)
			index = (offset - VGPU_CHANNEL_WINDOW_BASE) / VGPU_CHANNEL_WINDOW_STRIDE;
		if (index < VGPU_MAX_CHANNELS) {
			uint32_t generation;

			if (atomic_load(&slot->blocked[index])) {
				atomic_fetch_add(&fault_waits, 1);
				while (atomic_load(&slot->blocked[index]))
					futex_wait(&slot->blocked[index], 1);
				retried = false;
				errno = saved_errno;
				return; /* retry the access against the new pages */
			}
			/* Unblocked between the fault and now: retry, unless this
			 * very access already faulted since the last swap. */
			generation = atomic_load(&slot->generation[index]);
			if (!retried || retried_address != address ||
			    retried_generation != generation) {
				retried = true;
				retried_address = address;
				retried_generation = generation;
				errno = saved_errno;
				return;
			}
		}
		retried = false;
	}
	chain_to_previous(sig, info, context);
	errno = saved_errno;
}

int vgpu_window_trap_ensure_handler(void)
{
	struct sigaction current, action;
	int err = 0;

	pthread_mutex_lock(&install_lock);
	if (sigaction(SIGSEGV, NULL, &current) < 0) {
		err = -errno;
	} else if (!(current.sa_flags & SA_SIGINFO) || current.sa_sigaction != on_segv) {
		/* First use, or someone (a test framework, a runtime) replaced
		 * the disposition since: chain to whatever is there now. */
		memset(&action, 0, sizeof(action));
		action.sa_sigaction = on_segv;
		action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		sigemptyset(&action.sa_mask);
		previous_action = current;
		if (sigaction(SIGSEGV, &action, NULL) < 0)
			err = -errno;
	}
	pthread_mutex_unlock(&install_lock);
	return err;
}

int vgpu_window_trap_register(void *start, size_t bytes)
{
	unsigned i, w;
	int err = vgpu_window_trap_ensure_handler();

	if (err)
		return err;
	for (i = 0; i < TRAP_SLOTS; i++) {
		bool expected = false;

		if (!atomic_compare_exchange_strong(&slot_taken[i], &expected, true))
			continue;
		for (w = 0; w < VGPU_MAX_CHANNELS; w++)
			atomic_store(&slots[i].blocked[w], 0);
		atomic_store_explicit(&slots[i].end, (uintptr_t)start + bytes, memory_order_release);
		atomic_store_explicit(&slots[i].start, (uintptr_t)start, memory_order_release);
		return (int)i;
	}
	return -ENOSPC;
}

void vgpu_window_trap_unregister(int slot)
{
	unsigned w;

	if (slot < 0 || slot >= TRAP_SLOTS)
		return;
	atomic_store(&slots[slot].start, 0);
	atomic_store(&slots[slot].end, 0);
	for (w = 0; w < VGPU_MAX_CHANNELS; w++)
		vgpu_window_trap_unblock(slot, w);
	atomic_store(&slot_taken[slot], false);
}

void vgpu_window_trap_block(int slot, unsigned index)
{
	if (slot >= 0 && slot < TRAP_SLOTS && index < VGPU_MAX_CHANNELS)
		atomic_store(&slots[slot].blocked[index], 1);
}

void vgpu_window_trap_unblock(int slot, unsigned index)
{
	if (slot < 0 || slot >= TRAP_SLOTS || index >= VGPU_MAX_CHANNELS)
		return;
	atomic_fetch_add(&slots[slot].generation[index], 1);
	atomic_store(&slots[slot].blocked[index], 0);
	futex_wake_all(&slots[slot].blocked[index]);
}

uint64_t vgpu_window_trap_waits(void)
{
	return atomic_load(&fault_waits);
}
