// SPDX-License-Identifier: MIT
/*
 * hotspot - transient temperature of a square chip, a rows x cols grid
 * of cells heated by a power map (kernels/hotspot.cu: calculate_temp,
 * the pyramid stencil: each launch advances PYRAMID (2) time steps on
 * 16 x 16 tiles in shared memory). Each repetition starts from the same
 * temperatures and runs STEPS (8) time steps, swapping source and
 * destination buffers.
 *
 * Buffers and eviction priorities (0 lowest .. 15 highest):
 *   temp_a  rows x cols floats  12  source and destination in turn
 *   temp_b  rows x cols floats  12
 *   power   rows x cols floats   8  read once per launch
 *
 * Check: the final temperatures against the CPU's step-by-step stencil
 * within 1e-5 relative + 1e-4 (kelvin around 320; the GPU may contract
 * the stencil's multiply-adds into fma).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rodinia.h"

#define BLOCK 16
#define PYRAMID 2
#define STEPS 8

struct coeff {
	float step_div_cap, rx_1, ry_1, rz_1, ambient;
};

static void cpu_steps(const float *power, float *t, float *tmp, int rows, int cols,
                      const struct coeff *k)
{
	for (int s = 0; s < STEPS; s++) {
		for (int y = 0; y < rows; y++)
			for (int x = 0; x < cols; x++) {
				float c = t[y * cols + x];
				float n = t[(y > 0 ? y - 1 : y) * cols + x];
				float so = t[(y < rows - 1 ? y + 1 : y) * cols + x];
				float w = t[y * cols + (x > 0 ? x - 1 : x)];
				float e = t[y * cols + (x < cols - 1 ? x + 1 : x)];

				tmp[y * cols + x] = c + k->step_div_cap *
					(power[y * cols + x] + (so + n - 2.0f * c) * k->ry_1 +
					 (e + w - 2.0f * c) * k->rx_1 + (k->ambient - c) * k->rz_1);
			}
		memcpy(t, tmp, (size_t)rows * cols * sizeof(float));
	}
}

int main(int argc, char **argv)
{
	struct rodinia r;
	char summary[160];

	rodinia_start(&r, "hotspot", "hotspot.ptx", argc, argv, 3u << 20);
	int side = (int)sqrt((double)r.bytes / (3 * sizeof(float)));
	side = side < BLOCK ? BLOCK : side > 16384 ? 16384 : side;
	int rows = side, cols = side, height = PYRAMID;
	size_t cells = (size_t)rows * cols, bytes = cells * sizeof(float);
	float *power = rodinia_malloc(bytes), *temp = rodinia_malloc(bytes);
	float *got = rodinia_malloc(bytes), *want = rodinia_malloc(bytes), *tmp = rodinia_malloc(bytes);
	/* the original's chip: 0.016 m square, 0.5 mm thick */
	float grid_h = 0.016f / (float)rows, grid_w = 0.016f / (float)cols, t_chip = 0.0005f;
	float cap = 0.5f * 1.75e6f * t_chip * grid_w * grid_h;
	float rx = grid_w / (2.0f * 100.0f * t_chip * grid_h);
	float ry = grid_h / (2.0f * 100.0f * t_chip * grid_w);
	float rz = t_chip / (100.0f * grid_h * grid_w);
	float max_slope = 3.0e6f / (0.5f * t_chip * 1.75e6f);
	float step = 0.001f / max_slope;
	struct coeff k = { step / cap, 1.0f / rx, 1.0f / ry, 1.0f / rz, 80.0f };

	for (size_t i = 0; i < cells; i++) {
		temp[i] = 320.0f + rodinia_randf(&r) * 20.0f;
		power[i] = rodinia_randf(&r) * 0.001f;
	}
	CUfunction fn = rodinia_function(&r, "calculate_temp");
	CUdeviceptr d_temp[2] = { rodinia_alloc(bytes, 12), rodinia_alloc(bytes, 12) };
	CUdeviceptr d_power = rodinia_alloc(bytes, 8);
	int inner = BLOCK - 2 * PYRAMID;
	unsigned gx = rodinia_blocks((size_t)cols, (unsigned)inner);
	unsigned gy = rodinia_blocks((size_t)rows, (unsigned)inner);
	int src = 0;

	CK(cuMemcpyHtoD(d_power, power, bytes));
	for (unsigned rep = 0; rep < r.repeat; rep++) {
		CK(cuMemcpyHtoD(d_temp[0], temp, bytes));
		src = 0;
		rodinia_kernels_begin(&r);
		for (int t = 0; t < STEPS; t += PYRAMID) {
			int steps = STEPS - t < PYRAMID ? STEPS - t : PYRAMID;
			void *p[] = { &steps, &d_power, &d_temp[src], &d_temp[1 - src], &cols, &rows,
			              &height, &k };

			CK(cuLaunchKernel(fn, gx, gy, 1, BLOCK, BLOCK, 1, 0, NULL, p, NULL));
			src = 1 - src;
		}
		rodinia_kernels_end(&r);
		CK(cuMemcpyDtoH(got, d_temp[src], bytes));
	}
	memcpy(want, temp, bytes);
	cpu_steps(power, want, tmp, rows, cols, &k);
	rodinia_check_floats("temperature", got, want, cells, 1e-5f, 1e-4f);
	CK(cuMemFree(d_temp[0]));
	CK(cuMemFree(d_temp[1]));
	CK(cuMemFree(d_power));
	snprintf(summary, sizeof(summary), "%d x %d cells, %d steps, %u runs within 1e-5", rows,
	         cols, STEPS, r.repeat);
	return rodinia_finish(&r, summary);
}
