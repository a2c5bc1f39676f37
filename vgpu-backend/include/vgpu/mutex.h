/* SPDX-License-Identifier: MIT */
/*
 * mutex.h - a pthread mutex that knows its owner in debug builds, so that
 * a function which must be called with it held can say so in code rather
 * than in a comment:
 *
 *	static void publish_locked(struct thing *t)
 *	{
 *		vgpu_mutex_assert_held(&t->lock);
 *		...
 *
 * Debug builds (NDEBUG not defined: the plain and sanitizer builds) record
 * the owning thread on every lock and clear it on unlock; the assertion
 * aborts when the calling thread is not the owner. Release builds
 * (-DNDEBUG) keep only the pthread mutex: the wrappers are the pthread
 * calls, the assertion is nothing. The owner fields are atomics, so a
 * wrong assertion from a thread that does not hold the lock is a clean
 * failure, not a data race. Not recursive; the host side's userspace
 * counterpart of the kernel's lockdep_assert_held().
 */
#ifndef VGPU_MUTEX_H
#define VGPU_MUTEX_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

struct vgpu_mutex {
	pthread_mutex_t mutex;
#ifndef NDEBUG
	_Atomic(pthread_t) owner; /* meaningful while owned */
	atomic_bool owned;
#endif
};

static inline void vgpu_mutex_init(struct vgpu_mutex *m)
{
	pthread_mutex_init(&m->mutex, NULL);
#ifndef NDEBUG
	atomic_init(&m->owned, false);
#endif
}

static inline void vgpu_mutex_destroy(struct vgpu_mutex *m)
{
	pthread_mutex_destroy(&m->mutex);
}

static inline void vgpu_mutex_lock(struct vgpu_mutex *m)
{
	pthread_mutex_lock(&m->mutex);
#ifndef NDEBUG
	atomic_store(&m->owner, pthread_self());
	atomic_store(&m->owned, true);
#endif
}

static inline void vgpu_mutex_unlock(struct vgpu_mutex *m)
{
#ifndef NDEBUG
	atomic_store(&m->owned, false);
#endif
	pthread_mutex_unlock(&m->mutex);
}

/* For pthread_cond_wait and friends: the owner is the caller again once
 * they return, which they only do with the mutex held. */
static inline int vgpu_mutex_cond_wait(struct vgpu_mutex *m, pthread_cond_t *cond)
{
	int err;

#ifndef NDEBUG
	atomic_store(&m->owned, false);
#endif
	err = pthread_cond_wait(cond, &m->mutex);
#ifndef NDEBUG
	atomic_store(&m->owner, pthread_self());
	atomic_store(&m->owned, true);
#endif
	return err;
}

static inline int vgpu_mutex_cond_timedwait(struct vgpu_mutex *m, pthread_cond_t *cond,
                                            const struct timespec *deadline)
{
	int err;

#ifndef NDEBUG
	atomic_store(&m->owned, false);
#endif
	err = pthread_cond_timedwait(cond, &m->mutex, deadline);
#ifndef NDEBUG
	atomic_store(&m->owner, pthread_self());
	atomic_store(&m->owned, true);
#endif
	return err;
}

#ifndef NDEBUG
/* True when the calling thread holds m (debug builds only). */
static inline bool vgpu_mutex_held(struct vgpu_mutex *m)
{
	return atomic_load(&m->owned) && pthread_equal(atomic_load(&m->owner), pthread_self());
}
#define vgpu_mutex_assert_held(m) assert(vgpu_mutex_held(m))
#else
#define vgpu_mutex_assert_held(m) ((void)(m))
#endif

#endif /* VGPU_MUTEX_H */
