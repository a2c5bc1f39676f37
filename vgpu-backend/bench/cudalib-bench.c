// SPDX-License-Identifier: MIT
/*
 * cudalib-bench - what the guest CUDA driver API (guest-driver/cuda,
 * libcuda.so.1) costs over the project's own paths, on simgpu, in one run
 * (issue 23, "Tests and figures"; figures, not pass/fail):
 *
 *  cuda_launch_us       one empty kernel (PTX) through cuLaunchKernel +
 *                       cuCtxSynchronize on a tenant of a vgpud this
 *                       program starts, against the same round trip of a
 *                       tiny built-in kernel (FILL of 256 bytes) through
 *                       the runtime (vgpu_push_launch, submit, wait) on a
 *                       second tenant of the same vgpud: microseconds per
 *                       launch each (cuda_launch_us, builtin_launch_us) and
 *                       their ratio per round (cuda_launch_over_builtin);
 *                       and, to tell what the library adds from what a
 *                       user's kernel costs the GPU, the same empty PTX
 *                       kernel loaded and launched through the runtime
 *                       (vgpu_module_load, LAUNCH_FUNCTION) on that second
 *                       tenant (function_launch_us, cuda_launch_over_function).
 *  cuda_program_overhead
 *                       a kernel-heavy program (tiled SGEMM of
 *                       tests/cuda/kernels/matmul.ptx, launched again and
 *                       again) through the library on the vgpud tenant,
 *                       against the same PTX, buffers, copies and launches
 *                       through the runtime on an in-process simgpu with
 *                       the same configuration, the module parsed and bound
 *                       through the HAL (no vgpud, no library). The figure
 *                       is the in-process time over the library's time per
 *                       round (1.0: no overhead; goal >= 0.95), beside both
 *                       times (cuda_program_ms, hal_program_ms).
 *
 * The library is the one the build made, loaded with dlopen as the CUDA
 * runtime loads NVIDIA's (--libcuda PATH; its tenant is named by
 * VGPU_VM_NAME and reaches vgpud through VGPUD_SOCKET, which this program
 * sets). The sides of a figure run interleaved within each round (A B B A,
 * or A B C C B A, the order rotating between rounds), so a shared machine's load
 * hits them alike; each figure is the median over rounds with min..max.
 *
 * Every SGEMM result is compared with a CPU reference (exact: the inputs
 * are small integers, every partial sum is exact in float); a wrong result
 * or a failing call ends the run (exit 1): figures from wrong results are
 * worthless. Exit 77 when the library cannot be loaded (the reason is
 * printed). --json FILE writes the figures (bench-common.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-common.h"
#include "cuda.h"
#include "vgpu/abi/commands.h"
#include "vgpu/simgpu.h"
#include "vgpu_guest.h"
#include "vgpu_guest_local.h"
#include "vgpu_guest_simgpu.h"

#ifndef VGPUD_PATH
#define VGPUD_PATH "vgpud"
#endif
#ifndef LIBCUDA_PATH
#define LIBCUDA_PATH "libcuda.so.1"
#endif
#ifndef CUDA_KERNELS_DIR
#define CUDA_KERNELS_DIR "tests/cuda/kernels"
#endif

#define VRAM "256M"
#define VRAM_BYTES (256ull << 20)
#define IDLE_SLEEP_US 1000u
#define MAX_ROUNDS 64
#define FILL_BYTES 256u
#define WAIT_MS 60000

/* An empty kernel, as nvcc writes `extern "C" __global__ void empty() {}`. */
static const char empty_ptx[] = ".version 9.0\n"
                                ".target sm_75\n"
                                ".address_size 64\n"
                                "\n"
                                ".visible .entry empty()\n"
                                "{\n"
                                "\tret;\n"
                                "}\n";

static pid_t daemon_pid; /* vgpud, while it runs: die() ends it */

static void stop_daemon(void)
{
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
		daemon_pid = 0;
	}
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "cudalib-bench: %s: %s\n", what, why);
	stop_daemon();
	exit(1);
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* ------------------------------------------------------------------------ */
/* The library, through dlopen                                              */

static struct {
	void *handle;
	__typeof__(cuInit) *Init;
	__typeof__(cuDeviceGet) *DeviceGet;
	__typeof__(cuDevicePrimaryCtxRetain) *PrimaryCtxRetain;
	__typeof__(cuDevicePrimaryCtxRelease_v2) *PrimaryCtxRelease;
	__typeof__(cuCtxSetCurrent) *CtxSetCurrent;
	__typeof__(cuCtxSynchronize) *CtxSynchronize;
	__typeof__(cuModuleLoadData) *ModuleLoadData;
	__typeof__(cuModuleUnload) *ModuleUnload;
	__typeof__(cuModuleGetFunction) *ModuleGetFunction;
	__typeof__(cuMemAlloc_v2) *MemAlloc;
	__typeof__(cuMemFree_v2) *MemFree;
	__typeof__(cuMemcpyHtoD_v2) *MemcpyHtoD;
	__typeof__(cuMemcpyDtoH_v2) *MemcpyDtoH;
	__typeof__(cuLaunchKernel) *LaunchKernel;
	__typeof__(cuGetErrorName) *GetErrorName;
} cu;

static int load_library(const char *path)
{
	cu.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!cu.handle) {
		fprintf(stderr, "cudalib-bench: SKIP: cannot load %s: %s\n", path, dlerror());
		return -1;
	}
#define SYM(field, name)                                                                   \
	do {                                                                                \
		*(void **)&cu.field = dlsym(cu.handle, name);                               \
		if (!cu.field) {                                                            \
			fprintf(stderr, "cudalib-bench: SKIP: %s lacks %s\n", path, name); \
			return -1;                                                          \
		}                                                                           \
	} while (0)
	SYM(Init, "cuInit");
	SYM(DeviceGet, "cuDeviceGet");
	SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	SYM(CtxSetCurrent, "cuCtxSetCurrent");
	SYM(CtxSynchronize, "cuCtxSynchronize");
	SYM(ModuleLoadData, "cuModuleLoadData");
	SYM(ModuleUnload, "cuModuleUnload");
	SYM(ModuleGetFunction, "cuModuleGetFunction");
	SYM(MemAlloc, "cuMemAlloc_v2");
	SYM(MemFree, "cuMemFree_v2");
	SYM(MemcpyHtoD, "cuMemcpyHtoD_v2");
	SYM(MemcpyDtoH, "cuMemcpyDtoH_v2");
	SYM(LaunchKernel, "cuLaunchKernel");
	SYM(GetErrorName, "cuGetErrorName");
#undef SYM
	return 0;
}

static void ck(CUresult r, const char *call)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return;
	if (cu.GetErrorName(r, &name) != CUDA_SUCCESS || !name)
		name = "an unknown CUresult";
	die(call, name);
}
#define CK(call) ck((call), #call)

/* ------------------------------------------------------------------------ */
/* vgpud as a subprocess                                                    */

struct bench_vgpud {
	char dir[64];
	char socket[128];
};

static void vgpud_start(struct bench_vgpud *d, const char *binary)
{
	char control[128], log[128], config[128], idle[16];
	int i, fd;

	snprintf(d->dir, sizeof(d->dir), "/tmp/cudalib-bench.XXXXXX");
	if (!mkdtemp(d->dir))
		die("mkdtemp", strerror(errno));
	snprintf(d->socket, sizeof(d->socket), "%s/vgpud.sock", d->dir);
	snprintf(control, sizeof(control), "%s/control.sock", d->dir);
	snprintf(log, sizeof(log), "%s/vgpud.log", d->dir);
	snprintf(config, sizeof(config), "%s/vgpud.conf", d->dir);
	snprintf(idle, sizeof(idle), "%u", IDLE_SLEEP_US);
	fd = open(config, O_WRONLY | O_CREAT | O_TRUNC, 0644); /* built-in profiles */
	if (fd < 0)
		die(config, strerror(errno));
	close(fd);
	daemon_pid = fork();
	if (daemon_pid < 0)
		die("fork", strerror(errno));
	if (daemon_pid == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		execl(binary, binary, "--config", config, "--gpu", "simgpu", "--vram", VRAM,
		      "--allowed-profiles", "*", "--socket", d->socket, "--control-socket",
		      control, "--pfifo-idle-sleep-max-us", idle, "--log-level", "warn",
		      (char *)NULL);
		dprintf(2, "cannot run %s: %s\n", binary, strerror(errno));
		_exit(127);
	}
	for (i = 0; i < 200; i++) {
		struct sockaddr_un addr = { .sun_family = AF_UNIX };
		int ok;

		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		memcpy(addr.sun_path, d->socket, strlen(d->socket) + 1);
		ok = fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
		if (fd >= 0)
			close(fd);
		if (ok)
			return;
		if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid) {
			daemon_pid = 0;
			die("vgpud exited at start; see", log);
		}
		usleep(50000);
	}
	die("vgpud did not open its socket; see", log);
}

static void vgpud_stop(struct bench_vgpud *d)
{
	char command[128];

	kill(daemon_pid, SIGTERM);
	waitpid(daemon_pid, NULL, 0);
	daemon_pid = 0;
	snprintf(command, sizeof(command), "rm -rf '%s'", d->dir);
	if (system(command) != 0)
		fprintf(stderr, "cudalib-bench: could not remove %s\n", d->dir);
}

/* ------------------------------------------------------------------------ */
/* The SGEMM program: inputs, reference, both sides                         */

struct sgemm {
	int n;          /* n x n matrices */
	int launches;   /* per program run */
	size_t bytes;   /* of one matrix */
	float *a, *b, *c, *want;
};

static void sgemm_init(struct sgemm *s, int n, int launches)
{
	s->n = n;
	s->launches = launches;
	s->bytes = (size_t)n * (size_t)n * sizeof(float);
	s->a = malloc(s->bytes);
	s->b = malloc(s->bytes);
	s->c = malloc(s->bytes);
	s->want = calloc(1, s->bytes);
	if (!s->a || !s->b || !s->c || !s->want)
		die("host memory", strerror(ENOMEM));
	/* small integers: every product and partial sum is exact in float */
	for (int i = 0; i < n * n; i++) {
		s->a[i] = (float)((i * 7 + 3) % 9) - 4.0f;
		s->b[i] = (float)((i * 5 + 1) % 7) - 3.0f;
	}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < n; k++)
			for (int j = 0; j < n; j++)
				s->want[i * n + j] += s->a[i * n + k] * s->b[k * n + j];
}

static void sgemm_check(const struct sgemm *s, const char *side)
{
	for (int i = 0; i < s->n * s->n; i++)
		if (s->c[i] != s->want[i]) {
			char what[160];

			snprintf(what, sizeof(what), "C[%d] = %g, expected %g", i, (double)s->c[i],
			         (double)s->want[i]);
			die(side, what);
		}
}

static char *read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *text;
	long size;

	if (!f)
		die(path, strerror(errno));
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0)
		die(path, strerror(errno));
	rewind(f);
	text = malloc((size_t)size + 1);
	if (!text || fread(text, 1, (size_t)size, f) != (size_t)size)
		die(path, "cannot read it");
	fclose(f);
	text[size] = '\0';
	*len = (size_t)size;
	return text;
}

/* The library's side: one context, the modules loaded once. */
struct lib_side {
	CUdevice dev;
	CUcontext ctx;
	CUmodule empty_mod, sgemm_mod;
	CUfunction empty, sgemm;
};

static void lib_open(struct lib_side *l, const char *sgemm_ptx)
{
	CK(cu.Init(0));
	CK(cu.DeviceGet(&l->dev, 0));
	CK(cu.PrimaryCtxRetain(&l->ctx, l->dev));
	CK(cu.CtxSetCurrent(l->ctx));
	CK(cu.ModuleLoadData(&l->empty_mod, empty_ptx));
	CK(cu.ModuleGetFunction(&l->empty, l->empty_mod, "empty"));
	CK(cu.ModuleLoadData(&l->sgemm_mod, sgemm_ptx));
	CK(cu.ModuleGetFunction(&l->sgemm, l->sgemm_mod, "matmul_tiled"));
}

static void lib_close(struct lib_side *l)
{
	CK(cu.ModuleUnload(l->empty_mod));
	CK(cu.ModuleUnload(l->sgemm_mod));
	CK(cu.PrimaryCtxRelease(l->dev));
}

static double lib_launches(struct lib_side *l, int count)
{
	double start = now_us();

	for (int i = 0; i < count; i++) {
		CK(cu.LaunchKernel(l->empty, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
		CK(cu.CtxSynchronize());
	}
	return (now_us() - start) / count;
}

/* One run of the program through the library: its time in ms. */
static double lib_program(struct lib_side *l, struct sgemm *s)
{
	CUdeviceptr da, db, dc;
	unsigned grid = (unsigned)(s->n + 15) / 16;
	double start = now_us();

	CK(cu.MemAlloc(&da, s->bytes));
	CK(cu.MemAlloc(&db, s->bytes));
	CK(cu.MemAlloc(&dc, s->bytes));
	CK(cu.MemcpyHtoD(da, s->a, s->bytes));
	CK(cu.MemcpyHtoD(db, s->b, s->bytes));
	void *params[] = { &da, &db, &dc, &s->n };
	for (int i = 0; i < s->launches; i++)
		CK(cu.LaunchKernel(l->sgemm, grid, grid, 1, 16, 16, 1, 0, NULL, params, NULL));
	CK(cu.CtxSynchronize());
	memset(s->c, 0, s->bytes);
	CK(cu.MemcpyDtoH(s->c, dc, s->bytes));
	CK(cu.MemFree(da));
	CK(cu.MemFree(db));
	CK(cu.MemFree(dc));
	start = (now_us() - start) / 1e3;
	sgemm_check(s, "SGEMM through libcuda");
	return start;
}

/* The runtime's side: a device (local tenant or in-process simgpu) and a
 * channel. */
struct rt_side {
	const char *name;
	struct vgpu_guest_device *dev;
	struct vgpu_channel *ch;
	struct vgpu_guest_buffer fill;
	struct vgpu_guest_module *empty; /* the empty kernel, loaded by the runtime */
	uint32_t module_id;   /* in-process: the SGEMM module bound in the AS */
	uint32_t function;    /* its index */
	const struct vgpu_hal_module_function *info;
};

static void rt_check(struct rt_side *r, int rc, const char *what)
{
	char why[320];

	if (rc == 0)
		return;
	snprintf(why, sizeof(why), "%s (%s)", strerror(-rc), vgpu_device_last_error(r->dev));
	die(what, why);
}

static void rt_channel(struct rt_side *r)
{
	rt_check(r, vgpu_channel_create(r->dev, 0, &r->ch), "channel_create");
}

static double rt_launches(struct rt_side *r, int count)
{
	uint32_t *words;
	uint64_t fence;
	double start = now_us();

	for (int i = 0; i < count; i++) {
		rt_check(r, vgpu_channel_begin(r->ch, VGPU_COMMAND_MAX_WORDS, &words), "begin");
		rt_check(r,
		         vgpu_channel_submit(r->ch,
		                             vgpu_push_launch_fill(words, r->fill.gpu_va, FILL_BYTES,
		                                                   (uint64_t)i + 1),
		                             0, &fence),
		         "submit");
		rt_check(r, vgpu_channel_wait(r->ch, fence, WAIT_MS), "wait");
	}
	return (now_us() - start) / count;
}

/* The empty kernel launched through the runtime (LAUNCH_FUNCTION): the
 * library's launch without the library. */
static double rt_function_launches(struct rt_side *r, int count)
{
	struct vgpu_launch_dims dims = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
	uint32_t *words;
	uint64_t fence;
	double start = now_us();

	for (int i = 0; i < count; i++) {
		rt_check(r, vgpu_channel_begin(r->ch, vgpu_launch_function_words(0), &words),
		         "begin");
		rt_check(r,
		         vgpu_channel_submit(r->ch,
		                             vgpu_push_launch_function(words, r->empty->handle,
		                                                       r->empty->functions[0].index,
		                                                       &dims, NULL, 0),
		                             0, &fence),
		         "submit");
		rt_check(r, vgpu_channel_wait(r->ch, fence, WAIT_MS), "wait");
	}
	return (now_us() - start) / count;
}

/* The SGEMM module parsed and bound through the HAL of an in-process
 * simgpu device. */
static void hal_module(struct rt_side *r, const char *ptx, size_t len)
{
	struct vgpu_hal *hal = vgpu_guest_simgpu_hal(r->dev);
	struct vgpu_hal_as *as = vgpu_guest_simgpu_as(r->dev);
	struct vgpu_hal_module *module;
	struct vgpu_hal_module_info info;
	struct vgpu_error error = VGPU_ERROR_INIT;

	if (!hal || !as)
		die("in-process simgpu", "no HAL address space");
	if (vgpu_hal_module_parse(hal, ptx, len, "matmul.ptx", &module, &error))
		die("matmul.ptx through the HAL", vgpu_error_msg(&error));
	vgpu_hal_module_info(module, &info);
	if (info.variable_count)
		die("matmul.ptx", "has module variables (this benchmark places none)");
	r->function = UINT32_MAX;
	for (uint32_t i = 0; i < info.function_count; i++)
		if (!strcmp(info.functions[i].name, "matmul_tiled")) {
			r->function = i;
			r->info = &info.functions[i];
		}
	if (r->function == UINT32_MAX || r->info->param_count != 4)
		die("matmul.ptx", "no matmul_tiled(A, B, C, n)");
	if (vgpu_hal_module_bind(as, module, NULL, &r->module_id))
		die("matmul.ptx", "module_bind failed");
}

/* One run of the program through the runtime on the in-process simgpu. */
static double hal_program(struct rt_side *r, struct sgemm *s)
{
	const struct vgpu_hal_module_function *f = r->info;
	struct vgpu_guest_buffer a, b, c;
	uint32_t grid = (uint32_t)(s->n + 15) / 16, *words, n = (uint32_t)s->n;
	struct vgpu_launch_dims dims = { { grid, grid, 1 }, { 16, 16, 1 }, 0 };
	uint8_t params[VGPU_LAUNCH_FUNCTION_MAX_PARAM_BYTES];
	uint64_t fence = 0;
	double start = now_us();

	rt_check(r, vgpu_buffer_alloc(r->dev, s->bytes, VGPU_PRIORITY_DEFAULT, &a), "alloc A");
	rt_check(r, vgpu_buffer_alloc(r->dev, s->bytes, VGPU_PRIORITY_DEFAULT, &b), "alloc B");
	rt_check(r, vgpu_buffer_alloc(r->dev, s->bytes, VGPU_PRIORITY_DEFAULT, &c), "alloc C");
	rt_check(r, vgpu_channel_upload(r->ch, a.gpu_va, s->a, s->bytes, NULL), "upload A");
	rt_check(r, vgpu_channel_upload(r->ch, b.gpu_va, s->b, s->bytes, NULL), "upload B");
	memset(params, 0, sizeof(params));
	memcpy(params + f->params[0].offset, &a.gpu_va, 8);
	memcpy(params + f->params[1].offset, &b.gpu_va, 8);
	memcpy(params + f->params[2].offset, &c.gpu_va, 8);
	memcpy(params + f->params[3].offset, &n, 4);
	for (int i = 0; i < s->launches; i++) {
		rt_check(r, vgpu_channel_begin(r->ch, vgpu_launch_function_words(f->param_bytes),
		                               &words),
		         "begin");
		rt_check(r,
		         vgpu_channel_submit(r->ch,
		                             vgpu_push_launch_function(words, r->module_id,
		                                                       r->function, &dims, params,
		                                                       f->param_bytes),
		                             0, &fence),
		         "submit");
	}
	rt_check(r, vgpu_channel_wait(r->ch, fence, WAIT_MS), "wait");
	memset(s->c, 0, s->bytes);
	rt_check(r, vgpu_channel_download(r->ch, s->c, c.gpu_va, s->bytes), "download C");
	rt_check(r, vgpu_buffer_free(r->dev, &a), "free A");
	rt_check(r, vgpu_buffer_free(r->dev, &b), "free B");
	rt_check(r, vgpu_buffer_free(r->dev, &c), "free C");
	start = (now_us() - start) / 1e3;
	sgemm_check(s, "SGEMM through the HAL in-process");
	return start;
}

/* ------------------------------------------------------------------------ */

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: cudalib-bench [--rounds N] [--launches N] [--size N] [--kernels N]\n"
	        "                     [--libcuda PATH] [--vgpud PATH] [--json FILE]\n"
	        "The guest libcuda.so.1 on a vgpud tenant against the runtime's own paths:\n"
	        "launch latency (empty kernel vs. a built-in kernel) and a kernel-heavy\n"
	        "program (SGEMM) against the same PTX through the HAL in-process.\n"
	        "  --rounds N    rounds of each figure (default 21, at most %d)\n"
	        "  --launches N  launches per side per round (default 100)\n"
	        "  --size N      SGEMM matrices N x N (default 96)\n"
	        "  --kernels N   SGEMM launches per program run (default 4)\n"
	        "  --libcuda P   the library (default %s)\n"
	        "  --vgpud P     the daemon (default %s)\n"
	        "  --json FILE   write the figures as a JSON object\n",
	        MAX_ROUNDS, LIBCUDA_PATH, VGPUD_PATH);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "launches", required_argument, NULL, 'l' },
		{ "size", required_argument, NULL, 's' },
		{ "kernels", required_argument, NULL, 'k' },
		{ "libcuda", required_argument, NULL, 'L' },
		{ "vgpud", required_argument, NULL, 'v' },
		{ "json", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *libcuda = LIBCUDA_PATH, *vgpud = VGPUD_PATH, *json_path = NULL;
	int rounds = 21, launches = 100, size = 96, kernels = 4, opt;
	double lib_us[MAX_ROUNDS], builtin_us[MAX_ROUNDS], launch_ratio[MAX_ROUNDS];
	double function_us[MAX_ROUNDS], function_ratio[MAX_ROUNDS];
	double lib_ms[MAX_ROUNDS], hal_ms[MAX_ROUNDS], program_ratio[MAX_ROUNDS];
	struct bench_vgpud d;
	struct lib_side lib;
	struct rt_side builtin = { .name = "built-in" }, hal = { .name = "in-process" };
	struct simgpu_config sc;
	struct vgpu_guest_simgpu_config hc = { 0 };
	struct vgpu_local_device_config lc = { 0 };
	struct sgemm s;
	char why[256], *sgemm_ptx;
	size_t sgemm_len;
	struct json_object *json = NULL;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'r': rounds = atoi(optarg); break;
		case 'l': launches = atoi(optarg); break;
		case 's': size = atoi(optarg); break;
		case 'k': kernels = atoi(optarg); break;
		case 'L': libcuda = optarg; break;
		case 'v': vgpud = optarg; break;
		case 'j': json_path = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || rounds < 1 || rounds > MAX_ROUNDS || launches < 4 || size < 16 ||
	    size > 1024 || kernels < 1) {
		usage(stderr);
		return 2;
	}
	if (load_library(libcuda))
		return 77;
	sgemm_ptx = read_text(CUDA_KERNELS_DIR "/matmul.ptx", &sgemm_len);
	sgemm_init(&s, size, kernels);

	vgpud_start(&d, vgpud);
	/* the library's tenant: as a user runs a program */
	setenv("VGPUD_SOCKET", d.socket, 1);
	setenv("VGPU_VM_NAME", "bench-libcuda", 1);
	lib_open(&lib, sgemm_ptx);
	/* the runtime's tenant of the same vgpud */
	lc.socket_path = d.socket;
	lc.vm_name = "bench-builtin";
	if (vgpu_device_open_local(&lc, 0, &builtin.dev, why, sizeof(why)))
		die("attaching the built-in tenant", why);
	rt_channel(&builtin);
	rt_check(&builtin, vgpu_buffer_alloc(builtin.dev, 4096, VGPU_PRIORITY_DEFAULT, &builtin.fill),
	         "alloc");
	rt_check(&builtin,
	         vgpu_module_load(builtin.dev, builtin.ch, empty_ptx, sizeof(empty_ptx), &builtin.empty),
	         "loading the empty kernel through the runtime");
	if (builtin.empty->function_count != 1)
		die("the empty kernel", "the module does not hold one function");
	/* the in-process GPU: simgpu as vgpud configures it */
	simgpu_config_defaults(&sc);
	sc.vram_bytes = VRAM_BYTES;
	sc.pfifo_idle_sleep_max_us = IDLE_SLEEP_US;
	hc.simgpu = &sc;
	if (vgpu_device_open_simgpu(&hc, &hal.dev, why, sizeof(why)))
		die("in-process simgpu", why);
	rt_channel(&hal);
	hal_module(&hal, sgemm_ptx, sgemm_len);

	/* warm-up: both paths once (first-touch, thread start-up) */
	lib_launches(&lib, 4);
	rt_launches(&builtin, 4);
	rt_function_launches(&builtin, 4);
	lib_program(&lib, &s);
	hal_program(&hal, &s);

	printf("cudalib-bench: %d rounds; launch latency: %d launches per side per round\n",
	       rounds, launches);
	for (int r = 0; r < rounds; r++) {
		double l = 0, b = 0, f = 0;
		int half = launches / 2;

		/* A B C C B A; the sides rotate from round to round */
		for (int pass = 0; pass < 2; pass++) {
			int count = pass ? launches - half : half;

			for (int k = 0; k < 3; k++) {
				int side = (pass ? 2 - k : k) + r;

				switch (side % 3) {
				case 0: l += lib_launches(&lib, count) * count; break;
				case 1: b += rt_launches(&builtin, count) * count; break;
				default: f += rt_function_launches(&builtin, count) * count; break;
				}
			}
		}
		lib_us[r] = l / launches;
		builtin_us[r] = b / launches;
		function_us[r] = f / launches;
		launch_ratio[r] = lib_us[r] / builtin_us[r];
		function_ratio[r] = lib_us[r] / function_us[r];
	}
	printf("cudalib-bench: program: SGEMM %dx%d, %d launches per run, one run per side per "
	       "round\n",
	       size, size, kernels);
	for (int r = 0; r < rounds; r++) {
		if (r % 2 == 0) {
			lib_ms[r] = lib_program(&lib, &s);
			hal_ms[r] = hal_program(&hal, &s);
		} else {
			hal_ms[r] = hal_program(&hal, &s);
			lib_ms[r] = lib_program(&lib, &s);
		}
		program_ratio[r] = hal_ms[r] / lib_ms[r];
	}

	struct spread sl = spread_of(lib_us, rounds), sb = spread_of(builtin_us, rounds);
	struct spread slr = spread_of(launch_ratio, rounds);
	struct spread sf = spread_of(function_us, rounds), sfr = spread_of(function_ratio, rounds);
	struct spread spl = spread_of(lib_ms, rounds), sph = spread_of(hal_ms, rounds);
	struct spread spr = spread_of(program_ratio, rounds);

	printf("  cuda_launch_us              %s   empty kernel, cuLaunchKernel + "
	       "cuCtxSynchronize\n",
	       SPREAD("%.1f", sl));
	printf("  builtin_launch_us           %s   FILL %u B, push + submit + wait\n",
	       SPREAD("%.1f", sb), FILL_BYTES);
	printf("  cuda_launch_over_builtin    %s\n", SPREAD("%.3f", slr));
	printf("  function_launch_us          %s   the empty kernel through the runtime, "
	       "no library\n",
	       SPREAD("%.1f", sf));
	printf("  cuda_launch_over_function   %s   what the library adds\n", SPREAD("%.3f", sfr));
	printf("  cuda_program_ms             %s   through libcuda and vgpud\n",
	       SPREAD("%.1f", spl));
	printf("  hal_program_ms              %s   the same PTX through the HAL in-process\n",
	       SPREAD("%.1f", sph));
	printf("  cuda_program_overhead       %s   in-process time / library time; goal >= "
	       "0.95: %s\n",
	       SPREAD("%.3f", spr), spr.median >= 0.95 ? "met" : "MISSED");

	if (json_path) {
		json = json_object_new_object();
		json_spread(json, "cuda_launch_us", sl);
		json_spread(json, "builtin_launch_us", sb);
		json_spread(json, "cuda_launch_over_builtin", slr);
		json_spread(json, "function_launch_us", sf);
		json_spread(json, "cuda_launch_over_function", sfr);
		json_spread(json, "cuda_program_ms", spl);
		json_spread(json, "hal_program_ms", sph);
		json_spread(json, "cuda_program_overhead", spr);
		json_object_object_add(json, "cuda_program_overhead_goal",
		                       json_object_new_double(0.95));
		json_object_object_add(json, "cuda_program_sgemm_n", json_object_new_int(size));
		json_object_object_add(json, "cuda_program_kernels", json_object_new_int(kernels));
		json_object_object_add(json, "cuda_bench_rounds", json_object_new_int(rounds));
		if (json_object_to_file_ext(json_path, json, JSON_C_TO_STRING_PRETTY))
			die(json_path, "cannot write it");
		json_object_put(json);
	}

	lib_close(&lib);
	rt_check(&builtin, vgpu_module_unload(builtin.dev, builtin.empty), "module_unload");
	vgpu_buffer_free(builtin.dev, &builtin.fill);
	vgpu_channel_destroy(builtin.ch);
	vgpu_device_close(builtin.dev);
	vgpu_channel_destroy(hal.ch);
	vgpu_device_close(hal.dev);
	vgpud_stop(&d);
	/* the library stays loaded, as the CUDA runtime leaves libcuda: its
	 * device lives until the process ends */
	free(sgemm_ptx);
	free(s.a);
	free(s.b);
	free(s.c);
	free(s.want);
	return 0;
}
