// SPDX-License-Identifier: MIT
/* work_pool.c - worker threads for what waits off the loop, see work_pool.h. */
#include "work_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"

struct work_pool {
	sd_event_source *done_source;
	int done_fd; /* eventfd: a job ran */
	pthread_mutex_t lock;
	pthread_cond_t wake;    /* workers: a job, or stopping */
	pthread_cond_t settled; /* flush: nothing waits or runs */
	bool stopping;
	unsigned idle, running, waiting;
	struct work_job *todo, **todo_tail;
	struct work_job *done, **done_tail;
	unsigned threads;
	pthread_t thread[WORK_POOL_MAX_THREADS];
};

static void *worker_main(void *arg)
{
	struct work_pool *pool = arg;
	const uint64_t one = 1;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct work_job *job = pool->todo;

		if (!job) {
			if (pool->stopping)
				break;
			pool->idle++;
			pthread_cond_wait(&pool->wake, &pool->lock);
			pool->idle--;
			continue;
		}
		pool->todo = job->next;
		if (!pool->todo)
			pool->todo_tail = &pool->todo;
		pool->waiting--;
		pool->running++;
		pthread_mutex_unlock(&pool->lock);
		job->run(job);
		pthread_mutex_lock(&pool->lock);
		job->next = NULL;
		*pool->done_tail = job;
		pool->done_tail = &job->next;
		pool->running--;
		pthread_cond_broadcast(&pool->settled);
		/* a full counter wakes the loop all the same */
		(void)!write(pool->done_fd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* The jobs that ran, taken off the pool (lock held). */
static struct work_job *take_done_locked(struct work_pool *pool)
{
	struct work_job *list = pool->done;

	pool->done = NULL;
	pool->done_tail = &pool->done;
	return list;
}

static void call_done(struct work_job *list)
{
	while (list) {
		struct work_job *next = list->next;

		list->done(list); /* may free it */
		list = next;
	}
}

static int on_done(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
	struct work_pool *pool = userdata;
	struct work_job *list;
	uint64_t count;

	(void)source, (void)revents;
	(void)!read(fd, &count, sizeof(count));
	pthread_mutex_lock(&pool->lock);
	list = take_done_locked(pool);
	pthread_mutex_unlock(&pool->lock);
	call_done(list);
	return 0;
}

int work_pool_create(sd_event *loop, struct work_pool **out)
{
	struct work_pool *pool = calloc(1, sizeof(*pool));
	int err;

	if (!pool)
		return -ENOMEM;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->wake, NULL);
	pthread_cond_init(&pool->settled, NULL);
	pool->todo_tail = &pool->todo;
	pool->done_tail = &pool->done;
	pool->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pool->done_fd < 0) {
		err = -errno;
		work_pool_destroy(pool);
		return err;
	}
	err = sd_event_add_io(loop, &pool->done_source, pool->done_fd, EPOLLIN, on_done, pool);
	if (err < 0) {
		work_pool_destroy(pool);
		return err;
	}
	*out = pool;
	return 0;
}

int work_pool_submit(struct work_pool *pool, struct work_job *job)
{
	int err = 0;

	pthread_mutex_lock(&pool->lock);
	/* No idle thread left to take this job: one more thread. */
	if (pool->waiting >= pool->idle && pool->threads < WORK_POOL_MAX_THREADS) {
		err = pthread_create(&pool->thread[pool->threads], NULL, worker_main, pool);
		if (!err)
			pool->threads++;
		else if (pool->threads)
			log_warn("cannot start another worker thread (%s); the job waits for a "
			         "busy one", strerror(err));
	}
	if (err && !pool->threads) {
		pthread_mutex_unlock(&pool->lock);
		return -err;
	}
	job->next = NULL;
	*pool->todo_tail = job;
	pool->todo_tail = &job->next;
	pool->waiting++;
	pthread_cond_signal(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

void work_pool_flush(struct work_pool *pool)
{
	for (;;) {
		struct work_job *list;

		pthread_mutex_lock(&pool->lock);
		while (pool->todo || pool->running)
			pthread_cond_wait(&pool->settled, &pool->lock);
		list = take_done_locked(pool);
		pthread_mutex_unlock(&pool->lock);
		if (!list)
			return;
		call_done(list);
	}
}

void work_pool_destroy(struct work_pool *pool)
{
	if (!pool)
		return;
	work_pool_flush(pool);
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i < pool->threads; i++)
		pthread_join(pool->thread[i], NULL);
	sd_event_source_disable_unref(pool->done_source);
	if (pool->done_fd >= 0)
		close(pool->done_fd);
	pthread_cond_destroy(&pool->settled);
	pthread_cond_destroy(&pool->wake);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}
