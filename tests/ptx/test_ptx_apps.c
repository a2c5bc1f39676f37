// SPDX-License-Identifier: MIT
/*
 * test_ptx_apps.c - kernels as users write them (tests/ptx/apps.cu) through
 * the PTX executor on a flat memory, on one and on several host threads,
 * each result compared with C computing the same thing in the same order
 * (so float results must match bit for bit).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ptx_env.h"

#define D3(x, y, z) ((struct ptx_dim3){ (x), (y), (z) })

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static float rndf(void)
{
	return (float)(rnd64() % 20001) / 1000.0f - 10.0f;
}

static int setup(void **state)
{
	struct flat_env *env = malloc(sizeof(*env));
	flat_init(env, 128u << 20);
	struct ptx_error err;
	int rc = flat_load_file(env, "apps", &err);
	if (rc) {
		fprintf(stderr, "%s\n", err.message);
		return -1;
	}
	*state = env;
	return 0;
}

static int teardown(void **state)
{
	flat_fini(*state);
	free(*state);
	return 0;
}

static void run(struct flat_env *env, const char *entry, struct ptx_dim3 g,
		struct ptx_dim3 b, uint32_t dyn, const void *const *args)
{
	int rc = flat_run(env, entry, g, b, dyn, args);
	if (rc)
		fail_msg("%s: %d %s", entry, rc, env->result.message);
}

static void same_f32(const char *what, const float *got, const float *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&got[i], &want[i], 4))
			fail_msg("%s[%zu]: got %.9g want %.9g", what, i, got[i], want[i]);
}

static void test_vector_add_saxpy(void **state)
{
	struct flat_env *env = *state;
	for (unsigned threads = 1; threads <= 3; threads += 2) {
		env->host_threads = threads;
		enum { N = 10000 };
		float *a = malloc(4 * N), *b = malloc(4 * N), *w = malloc(4 * N);
		for (int i = 0; i < N; i++) {
			a[i] = rndf();
			b[i] = rndf();
		}
		uint64_t da = flat_copy_in(env, a, 4 * N), db = flat_copy_in(env, b, 4 * N);
		uint64_t dc = flat_alloc(env, 4 * N);
		int n = N;
		run(env, "vector_add", D3((N + 255) / 256, 1, 1), D3(256, 1, 1), 0,
		    (const void *[]){ &da, &db, &dc, &n });
		for (int i = 0; i < N; i++)
			w[i] = a[i] + b[i];
		same_f32("vector_add", flat_ptr(env, dc), w, N);
		float alpha = 1.75f;
		run(env, "saxpy", D3(8, 1, 1), D3(128, 1, 1), 0,
		    (const void *[]){ &n, &alpha, &da, &db });
		for (int i = 0; i < N; i++)
			w[i] = fmaf(alpha, a[i], b[i]);
		same_f32("saxpy", flat_ptr(env, db), w, N);
		assert_true(env->result.stats.global_load_bytes == 8ull * N);
		free(a);
		free(b);
		free(w);
	}
	env->host_threads = 1;
}

/* A grid run in pieces (first_block, block_count), as a caller that yields. */
static void test_grid_in_pieces(void **state)
{
	struct flat_env *env = *state;
	enum { N = 5000, B = 128 };
	float *a = malloc(4 * N), *b = malloc(4 * N), *w = malloc(4 * N);
	for (int i = 0; i < N; i++) {
		a[i] = rndf();
		b[i] = rndf();
		w[i] = a[i] + b[i];
	}
	uint64_t da = flat_copy_in(env, a, 4 * N), db = flat_copy_in(env, b, 4 * N);
	uint64_t dc = flat_alloc(env, 4 * N);
	int n = N;
	uint8_t params[28];
	memcpy(params, &da, 8);
	memcpy(params + 8, &db, 8);
	memcpy(params + 16, &dc, 8);
	memcpy(params + 24, &n, 4);
	struct ptx_launch L = {
		.module = env->module, .entry = (uint32_t)ptx_module_find_entry(env->module, "vector_add"),
		.grid = D3((N + B - 1) / B, 1, 1), .block = D3(B, 1, 1), .params = params,
		.param_size = 28, .var_addresses = env->vars,
		.var_count = ptx_module_var_count(env->module), .mem = &env->ops, .mem_ctx = env,
	};
	struct ptx_launch_result r;
	uint64_t blocks = (N + B - 1) / B, done = 0, total = 0;
	while (done < blocks) {
		L.first_block = done;
		L.block_count = blocks - done < 7 ? blocks - done : 7;
		assert_int_equal(ptx_launch(&L, &r), 0);
		total += r.stats.blocks;
		done += L.block_count;
	}
	assert_int_equal(total, blocks);
	same_f32("vector_add pieces", flat_ptr(env, dc), w, N);
	free(a);
	free(b);
	free(w);
}

static void test_reduce(void **state)
{
	struct flat_env *env = *state;
	enum { N = 100000, B = 256 };
	int32_t *in = malloc(4 * N);
	for (int i = 0; i < N; i++)
		in[i] = (int32_t)(rnd64() % 1000) - 500;
	uint64_t din = flat_copy_in(env, in, 4 * N);
	int blocks = (N + 2 * B - 1) / (2 * B);
	uint64_t dout = flat_alloc(env, 4 * (uint64_t)blocks);
	int n = N;
	env->host_threads = 2;
	run(env, "reduce_sum", D3((uint32_t)blocks, 1, 1), D3(B, 1, 1), B * 4,
	    (const void *[]){ &din, &dout, &n });
	env->host_threads = 1;
	const int32_t *o = flat_ptr(env, dout);
	for (int blk = 0; blk < blocks; blk++) {
		int32_t s = 0;
		for (int i = blk * 2 * B; i < (blk + 1) * 2 * B && i < N; i++)
			s += in[i];
		assert_int_equal(o[blk], s);
	}
	assert_true(env->result.stats.barriers > 0);
	assert_true(env->result.stats.thread_instructions_by_class[PTX_CLASS_WARP] > 0);
	free(in);
}

static void test_sgemm(void **state)
{
	struct flat_env *env = *state;
	enum { M = 50, N = 40, K = 70 };
	float A[M * K], B[K * N], C[M * N];
	for (int i = 0; i < M * K; i++)
		A[i] = rndf();
	for (int i = 0; i < K * N; i++)
		B[i] = rndf();
	uint64_t dA = flat_copy_in(env, A, sizeof(A)), dB = flat_copy_in(env, B, sizeof(B));
	uint64_t dC = flat_alloc(env, sizeof(C));
	int m = M, n = N, k = K;
	run(env, "sgemm_tiled", D3((N + 15) / 16, (M + 15) / 16, 1), D3(16, 16, 1), 0,
	    (const void *[]){ &dA, &dB, &dC, &m, &n, &k });
	for (int r = 0; r < M; r++)
		for (int c = 0; c < N; c++) {
			float acc = 0.0f;
			for (int t = 0; t < (K + 15) / 16 * 16; t++)
				acc = t < K ? fmaf(A[r * K + t], B[t * N + c], acc) : fmaf(0.0f, 0.0f, acc);
			C[r * N + c] = acc;
		}
	same_f32("sgemm", flat_ptr(env, dC), C, M * N);
}

static void test_stencil(void **state)
{
	struct flat_env *env = *state;
	enum { W = 70, H = 45 };
	float in[W * H], out[W * H];
	for (int i = 0; i < W * H; i++)
		in[i] = rndf();
	uint64_t din = flat_copy_in(env, in, sizeof(in)), dout = flat_alloc(env, sizeof(out));
	int w = W, h = H;
	env->host_threads = 4;
	run(env, "stencil2d", D3((W + 15) / 16, (H + 7) / 8, 1), D3(16, 8, 1), 0,
	    (const void *[]){ &din, &dout, &w, &h });
	env->host_threads = 1;
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			int i = y * W + x;
			if (x == 0 || y == 0 || x == W - 1 || y == H - 1) {
				out[i] = in[i];
				continue;
			}
			float s = ((in[i - 1] + in[i + 1]) + in[i - W]) + in[i + W];
			out[i] = fmaf(in[i], 0.5f, s * 0.125f);
		}
	same_f32("stencil2d", flat_ptr(env, dout), out, W * H);
}

static void test_histogram(void **state)
{
	struct flat_env *env = *state;
	enum { N = 100000 };
	uint8_t *data = malloc(N);
	uint32_t want[256] = { 0 };
	for (int i = 0; i < N; i++) {
		data[i] = (uint8_t)(rnd64() % 7 == 0 ? 42 : rnd64());
		want[data[i]]++;
	}
	uint64_t dd = flat_copy_in(env, data, N), db = flat_alloc(env, 4 * 256);
	int n = N;
	env->host_threads = 3;
	run(env, "histogram", D3(16, 1, 1), D3(256, 1, 1), 0, (const void *[]){ &dd, &db, &n });
	env->host_threads = 1;
	assert_memory_equal(flat_ptr(env, db), want, sizeof(want));
	free(data);
}

static void test_bfs(void **state)
{
	struct flat_env *env = *state;
	enum { V = 2000, DEG = 4 };
	int32_t *row = malloc(4 * (V + 1)), *col = malloc(4 * V * DEG), *dist = malloc(4 * V);
	for (int v = 0; v <= V; v++)
		row[v] = v * DEG;
	for (int e = 0; e < V * DEG; e++)
		col[e] = (int32_t)(rnd64() % V);
	for (int v = 0; v < V; v++)
		dist[v] = -1;
	dist[0] = 0;
	uint64_t drow = flat_copy_in(env, row, 4 * (V + 1)), dcol = flat_copy_in(env, col, 4 * V * DEG);
	uint64_t ddist = flat_copy_in(env, dist, 4 * V), dchg = flat_alloc(env, 4);
	int n = V;
	for (int level = 0; level < V; level++) {
		*(int32_t *)flat_ptr(env, dchg) = 0;
		run(env, "bfs_level", D3((V + 127) / 128, 1, 1), D3(128, 1, 1), 0,
		    (const void *[]){ &drow, &dcol, &ddist, &level, &dchg, &n });
		if (!*(int32_t *)flat_ptr(env, dchg))
			break;
	}
	/* reference: queue BFS */
	int32_t *q = malloc(4 * V);
	int head = 0, tail = 0;
	q[tail++] = 0;
	while (head < tail) {
		int v = q[head++];
		for (int e = row[v]; e < row[v + 1]; e++)
			if (dist[col[e]] < 0) {
				dist[col[e]] = dist[v] + 1;
				q[tail++] = col[e];
			}
	}
	assert_memory_equal(flat_ptr(env, ddist), dist, 4 * V);
	free(q);
	free(row);
	free(col);
	free(dist);
}

static void test_nw(void **state)
{
	struct flat_env *env = *state;
	enum { DIM = 64, PEN = 2 };
	int32_t score[DIM * DIM], sim[DIM * DIM];
	for (int i = 0; i < DIM * DIM; i++) {
		sim[i] = (int32_t)(rnd64() % 11) - 5;
		score[i] = 0;
	}
	for (int i = 0; i < DIM; i++) {
		score[i * DIM] = -i * PEN;
		score[i] = -i * PEN;
	}
	uint64_t dscore = flat_copy_in(env, score, sizeof(score)), dsim = flat_copy_in(env, sim, sizeof(sim));
	int dim = DIM, pen = PEN;
	for (int diag = 1; diag <= 2 * DIM - 2; diag++)
		run(env, "nw_diagonal", D3(2, 1, 1), D3(32, 1, 1), 0,
		    (const void *[]){ &dscore, &dsim, &dim, &diag, &pen });
	for (int i = 1; i < DIM; i++)
		for (int j = 1; j < DIM; j++) {
			int up = score[(i - 1) * DIM + j] - PEN, left = score[i * DIM + j - 1] - PEN;
			int d = score[(i - 1) * DIM + j - 1] + sim[i * DIM + j];
			int m = d > up ? d : up;
			score[i * DIM + j] = m > left ? m : left;
		}
	assert_memory_equal(flat_ptr(env, dscore), score, sizeof(score));
}

static void test_scan(void **state)
{
	struct flat_env *env = *state;
	enum { N = 1000, B = 256 };
	int32_t in[N], want[N];
	for (int i = 0; i < N; i++)
		in[i] = (int32_t)(rnd64() % 100);
	uint64_t din = flat_copy_in(env, in, sizeof(in)), dout = flat_alloc(env, sizeof(want));
	int n = N;
	run(env, "scan_block", D3((N + B - 1) / B, 1, 1), D3(B, 1, 1), 0,
	    (const void *[]){ &din, &dout, &n });
	for (int i = 0; i < N; i++)
		want[i] = (i % B ? want[i - 1] : 0) + in[i];
	assert_memory_equal(flat_ptr(env, dout), want, sizeof(want));
}

static void test_double(void **state)
{
	struct flat_env *env = *state;
	enum { N = 3000 };
	double *x = malloc(8 * N), *y = malloc(8 * N), *dot = malloc(8 * N);
	for (int i = 0; i < N; i++) {
		x[i] = (double)rnd64() / 3e18 - 2.0;
		y[i] = (double)rnd64() / 7e18;
	}
	uint64_t dx = flat_copy_in(env, x, 8 * N), dy = flat_copy_in(env, y, 8 * N);
	uint64_t ddot = flat_alloc(env, 8 * N);
	int n = N;
	double alpha = -0.3;
	run(env, "daxpy_dot", D3((N + 127) / 128, 1, 1), D3(128, 1, 1), 0,
	    (const void *[]){ &n, &alpha, &dx, &dy, &ddot });
	for (int i = 0; i < N; i++) {
		y[i] = fma(alpha, x[i], y[i]);
		dot[i] = x[i] * y[i];
	}
	assert_memory_equal(flat_ptr(env, dy), y, 8 * N);
	assert_memory_equal(flat_ptr(env, ddot), dot, 8 * N);
	free(x);
	free(y);
	free(dot);
}

static void test_local_call(void **state)
{
	struct flat_env *env = *state;
	enum { N = 500 };
	float in[N], want[N];
	for (int i = 0; i < N; i++)
		in[i] = rndf();
	uint64_t din = flat_copy_in(env, in, sizeof(in)), dout = flat_alloc(env, sizeof(want));
	int n = N;
	run(env, "local_call", D3((N + 63) / 64, 1, 1), D3(64, 1, 1), 0,
	    (const void *[]){ &din, &dout, &n });
	for (int i = 0; i < N; i++) {
		float w[12], s = 0.0f;
		for (int k = 0; k < 12; k++)
			w[k] = in[(i + k) % N];
		for (int k = 0; k < 12; k += 1 + (i & 1)) {
			float v = w[(k * 5 + i) % 12];
			s = s + fmaf(v, v, 1.0f);
		}
		want[i] = s;
	}
	same_f32("local_call", flat_ptr(env, dout), want, N);
	assert_true(env->result.stats.local_store_bytes > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_vector_add_saxpy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grid_in_pieces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reduce, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sgemm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stencil, setup, teardown),
		cmocka_unit_test_setup_teardown(test_histogram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bfs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nw, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_double, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_call, setup, teardown),
	};
	return cmocka_run_group_tests_name("ptx-apps", tests, NULL, NULL);
}
