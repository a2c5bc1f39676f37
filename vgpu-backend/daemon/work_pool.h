/* SPDX-License-Identifier: MIT */
/*
 * work_pool.h - vgpud's worker threads for what must wait off the event
 * loop: a tenant's attach, export and detach (they wait for the core and
 * for the tenant's acknowledgements), mdev statistics (the registry lock).
 *
 * A job's run() is called on a worker thread; its done() then on the event
 * loop's thread (posted back through an eventfd). Jobs run in parallel, in
 * no promised order: a caller that needs order (one connection's requests)
 * submits the next job from the previous one's done(). The pool starts a
 * thread when a job arrives and every thread is busy (up to
 * WORK_POOL_MAX_THREADS; beyond that jobs wait), so one job that waits long
 * never holds up another's; a thread stays for later jobs until
 * work_pool_destroy.
 *
 * Threads: work_pool_submit from any thread; work_pool_flush and
 * work_pool_destroy from the loop's thread while the loop does not run
 * (shutdown). Errors: submit fails only when no thread runs and none can
 * be started (-errno of pthread_create); the job was not taken then.
 */
#ifndef VGPUD_WORK_POOL_H
#define VGPUD_WORK_POOL_H

#include <systemd/sd-event.h>

#define WORK_POOL_MAX_THREADS 256

struct work_pool;

struct work_job {
	void (*run)(struct work_job *job);  /* worker thread */
	void (*done)(struct work_job *job); /* loop thread; may free the job */
	struct work_job *next;              /* the pool's */
};

/* A pool whose completions run on loop. 0 or a negative errno. */
int work_pool_create(sd_event *loop, struct work_pool **out);

/* Run job->run on a worker, then job->done on the loop. 0 or -errno. */
int work_pool_submit(struct work_pool *pool, struct work_job *job);

/* Shutdown: wait until every submitted job has run, then call the done()
 * of each on the calling thread (which must own the loop, not running). A
 * done() that submits again is waited for as well. */
void work_pool_flush(struct work_pool *pool);

/* Flush, stop and join the threads, free. */
void work_pool_destroy(struct work_pool *pool);

#endif /* VGPUD_WORK_POOL_H */
