// SPDX-License-Identifier: MIT
/*
 * test_hal_isolation.c - cudagpu's process isolation (vgpu/cudagpu.h,
 * "Isolation"): two VMs (address spaces) with channels and checksummed
 * data; one VM's GPU worker faults (its CUDA context gets an illegal
 * address) or is killed. Its channel reports the error, the other VM's
 * data stays intact and its work goes on, and the faulted VM gets a new
 * channel (in a new worker) that reads its data back intact. The same
 * for a worker that hangs. At the end no descriptor and no child process
 * is left over.
 *
 * The fault is the CPU stand-in driver's (tests/cudagpu/fake_libcuda.c,
 * FAKE_CUDA_FAULT_DIR): a stand-in for a user kernel that touches memory
 * its VM has not mapped, which guests cannot run yet. On a real GPU the
 * fault test is skipped (only the kill test runs). The whole group is
 * skipped unless the backend is cudagpu in the process mode.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hal_conformance.h"
#include "vgpu/cudagpu.h"

#define VM_BYTES (4 * MIB)

struct vm {
	struct tspace *sp;
	struct tmem *data;
	struct tchan *tc;
	uint64_t seed;
	uint8_t *expected;
};

static unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

/* Processes whose parent is this one (zombies included). */
static unsigned count_children(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	unsigned n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[512], *close_paren;
		long ppid = -1;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (close_paren = strrchr(buf, ')')) &&
		    sscanf(close_paren + 1, " %*c %ld", &ppid) == 1 && ppid == (long)getpid())
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

static bool process_mode(void)
{
	const char *isolation = getenv("VGPU_CUDA_ISOLATION");

	return cudagpu_is_cudagpu(suite.hal) && isolation && !strcmp(isolation, "process");
}

/* A VM: an address space, VRAM data filled by its channel with seed. */
static void vm_start(struct vm *vm, uint64_t seed)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	vm->sp = space_create();
	vm->data = mem_vram(vm->sp->as, DATA_VA, VM_BYTES, suite.vram_page, 0);
	vm->tc = chan_create(vm->sp, 0);
	vm->seed = seed;
	vm->expected = reference_fill(VM_BYTES, seed);
	assert_true(chan_run(vm->tc, words, vgpu_push_launch_fill(words, DATA_VA, VM_BYTES,
	                                                           seed)));
	expect_bytes(vm->sp->as, DATA_VA, vm->expected, VM_BYTES, "the VM's data");
	assert_true(cudagpu_worker_pid(vm->sp->as) > 0);
}

static void vm_stop(struct vm *vm)
{
	if (vm->tc)
		chan_destroy(vm->tc);
	mem_free(vm->data);
	space_destroy(vm->sp);
	free(vm->expected);
}

/* The VM's channel computes the checksum of its data: the expected one. */
static void vm_check_on_gpu(struct vm *vm)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	uint64_t result = 0, expected = vgpu_kernel_reference_checksum(vm->expected, VM_BYTES);

	assert_true(chan_run(vm->tc, words,
	                     vgpu_push_launch_checksum(words, DATA_VA, VM_BYTES,
	                                               DATA_VA + VM_BYTES - 8)));
	read_ok(vm->sp->as, DATA_VA + VM_BYTES - 8, &result, 8);
	/* the result overwrote the last word: make expected follow */
	memcpy(vm->expected + VM_BYTES - 8, &result, 8);
	if (result != expected)
		fail_msg("checksum on the GPU 0x%llx, expected 0x%llx", (unsigned long long)result,
		         (unsigned long long)expected);
}

/* More work for a VM: a fresh fill, checked. */
static void vm_refill(struct vm *vm, uint64_t seed)
{
	uint32_t words[VGPU_COMMAND_MAX_WORDS];

	free(vm->expected);
	vm->expected = reference_fill(VM_BYTES, seed);
	vm->seed = seed;
	assert_true(chan_run(vm->tc, words, vgpu_push_launch_fill(words, DATA_VA, VM_BYTES,
	                                                           seed)));
	expect_bytes(vm->sp->as, DATA_VA, vm->expected, VM_BYTES, "the VM's new data");
}

/* After its worker was lost: the VM's channel is in error, its data is
 * intact, a new channel runs in a new worker and sees the same data. */
static void vm_recover(struct vm *vm, int old_pid, unsigned error_mark)
{
	struct vgpu_hal_event error;

	assert_true(chan_wait_error(vm->tc, error_mark, &error));
	assert_int_equal(vgpu_hal_channel_state(vm->tc->channel, NULL), VGPU_CHANNEL_ERROR);
	expect_bytes(vm->sp->as, DATA_VA, vm->expected, VM_BYTES, "the lost VM's data");
	chan_destroy(vm->tc);
	vm->tc = chan_create(vm->sp, 0);
	assert_true(cudagpu_worker_pid(vm->sp->as) > 0);
	assert_int_not_equal(cudagpu_worker_pid(vm->sp->as), old_pid);
	vm_check_on_gpu(vm);
	vm_refill(vm, vm->seed + 100);
}

static void test_worker_fault_isolated(void **state)
{
	char dir[] = "/tmp/vgpu-fault-XXXXXX", path[128];
	uint32_t words[VGPU_COMMAND_MAX_WORDS];
	unsigned fds0, mark;
	struct vm a = { 0 }, b = { 0 };
	int pid_a, pid_b, fd;

	(void)state;
	if (!process_mode())
		skip();
	if (!getenv("VGPU_CUDA_LIBRARY"))
		skip(); /* a context fault on demand needs the stand-in driver */
	fds0 = count_fds();
	assert_non_null(mkdtemp(dir));
	setenv("FAKE_CUDA_FAULT_DIR", dir, 1); /* inherited by the workers */
	vm_start(&a, 11);
	vm_start(&b, 22);
	pid_a = cudagpu_worker_pid(a.sp->as);
	pid_b = cudagpu_worker_pid(b.sp->as);
	assert_int_not_equal(pid_a, pid_b);

	/* VM A's next kernel faults its context */
	snprintf(path, sizeof(path), "%s/fault-%d", dir, pid_a);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	mark = event_mark();
	chan_push(a.tc, words, vgpu_push_launch_fill(words, DATA_VA, VM_BYTES, 99));
	vgpu_hal_channel_kick(a.tc->channel);

	/* B never notices: same worker, its data, its work */
	expect_bytes(b.sp->as, DATA_VA, b.expected, VM_BYTES, "the other VM's data");
	vm_check_on_gpu(&b);
	vm_refill(&b, 23);
	assert_int_equal(cudagpu_worker_pid(b.sp->as), pid_b);

	vm_recover(&a, pid_a, mark);
	assert_int_equal(vgpu_hal_channel_state(b.tc->channel, NULL), VGPU_CHANNEL_OK);
	vm_check_on_gpu(&b);
	assert_int_equal(cudagpu_worker_pid(b.sp->as), pid_b);

	unlink(path);
	rmdir(dir);
	unsetenv("FAKE_CUDA_FAULT_DIR");
	vm_stop(&a);
	vm_stop(&b);
	assert_int_equal(count_children(), 0);
	assert_int_equal(count_fds(), fds0);
}

static void test_worker_killed(void **state)
{
	struct vm a = { 0 }, b = { 0 };
	unsigned fds0, mark;
	int pid_a, pid_b;

	(void)state;
	if (!process_mode())
		skip();
	fds0 = count_fds();
	vm_start(&a, 31);
	vm_start(&b, 32);
	pid_a = cudagpu_worker_pid(a.sp->as);
	pid_b = cudagpu_worker_pid(b.sp->as);
	mark = event_mark();
	assert_int_equal(kill(pid_a, SIGKILL), 0);
	vm_recover(&a, pid_a, mark);
	assert_int_equal(vgpu_hal_channel_state(b.tc->channel, NULL), VGPU_CHANNEL_OK);
	expect_bytes(b.sp->as, DATA_VA, b.expected, VM_BYTES, "the other VM's data");
	vm_check_on_gpu(&b);
	assert_int_equal(cudagpu_worker_pid(b.sp->as), pid_b);
	vm_stop(&a);
	vm_stop(&b);
	assert_int_equal(count_children(), 0);
	assert_int_equal(count_fds(), fds0);
}

/* A worker that stops answering (SIGSTOP) is taken as hung once its
 * heartbeat has stood still for worker_timeout_ms: killed, as above. Only
 * where the timeout is short (VGPU_CUDA_WORKER_TIMEOUT_MS <= 2000). */
static void test_worker_hung(void **state)
{
	const char *timeout = getenv("VGPU_CUDA_WORKER_TIMEOUT_MS");
	struct vgpu_hal_event error;
	struct vm a = { 0 }, b = { 0 };
	unsigned fds0, mark;
	int pid_a, pid_b;

	(void)state;
	if (!process_mode() || !timeout || atoi(timeout) <= 0 || atoi(timeout) > 2000)
		skip();
	fds0 = count_fds();
	vm_start(&a, 41);
	vm_start(&b, 42);
	pid_a = cudagpu_worker_pid(a.sp->as);
	pid_b = cudagpu_worker_pid(b.sp->as);
	mark = event_mark();
	assert_int_equal(kill(pid_a, SIGSTOP), 0);
	/* B goes on while A hangs */
	vm_refill(&b, 43);
	assert_true(chan_wait_error(a.tc, mark, &error));
	assert_int_equal(error.cause, VGPU_FAULT_TIMEOUT);
	vm_recover(&a, pid_a, mark);
	vm_check_on_gpu(&b);
	assert_int_equal(cudagpu_worker_pid(b.sp->as), pid_b);
	vm_stop(&a);
	vm_stop(&b);
	assert_int_equal(count_children(), 0);
	assert_int_equal(count_fds(), fds0);
}

static const struct CMUnitTest isolation_tests[] = {
	HAL_TEST(test_worker_fault_isolated),
	HAL_TEST(test_worker_killed),
	HAL_TEST(test_worker_hung),
};

const struct hal_test_group hal_isolation_group = {
	"hal-isolation", isolation_tests, sizeof(isolation_tests) / sizeof(isolation_tests[0]),
};
