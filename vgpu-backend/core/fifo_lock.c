// SPDX-License-Identifier: MIT
/* fifo_lock.c - ticket lock, see fifo_lock.h. */
#include <errno.h>

#include "fifo_lock.h"

int vgpu_fifo_lock_init(struct vgpu_fifo_lock *lock)
{
	if (pthread_mutex_init(&lock->mutex, NULL))
		return -ENOMEM;
	if (pthread_cond_init(&lock->cond, NULL)) {
		pthread_mutex_destroy(&lock->mutex);
		return -ENOMEM;
	}
	lock->next_ticket = 0;
	lock->now_serving = 0;
	lock->owned = false;
	return 0;
}

void vgpu_fifo_lock_fini(struct vgpu_fifo_lock *lock)
{
	pthread_cond_destroy(&lock->cond);
	pthread_mutex_destroy(&lock->mutex);
}

void vgpu_fifo_lock(struct vgpu_fifo_lock *lock)
{
	uint64_t ticket;

	pthread_mutex_lock(&lock->mutex);
	ticket = lock->next_ticket++;
	while (lock->now_serving != ticket)
		pthread_cond_wait(&lock->cond, &lock->mutex);
	lock->owner = pthread_self();
	lock->owned = true;
	pthread_mutex_unlock(&lock->mutex);
}

void vgpu_fifo_unlock(struct vgpu_fifo_lock *lock)
{
	pthread_mutex_lock(&lock->mutex);
	lock->owned = false;
	lock->now_serving++;
	pthread_cond_broadcast(&lock->cond);
	pthread_mutex_unlock(&lock->mutex);
}

bool vgpu_fifo_lock_held(struct vgpu_fifo_lock *lock)
{
	bool held;

	pthread_mutex_lock(&lock->mutex);
	held = lock->owned && pthread_equal(lock->owner, pthread_self());
	pthread_mutex_unlock(&lock->mutex);
	return held;
}
