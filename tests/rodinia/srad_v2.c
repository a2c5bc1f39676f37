// SPDX-License-Identifier: MIT
/*
 * srad_v2 - speckle-reducing anisotropic diffusion, the two-kernel
 * version (kernels/srad_v2.cu: srad_cuda_1, srad_cuda_2 on 16 x 16
 * shared-memory tiles). Each repetition runs NITER (2) iterations; in
 * each the host computes q0^2 from a region of interest of its copy of
 * the image, copies the image to the GPU, runs both kernels and copies
 * it back, as the original does.
 *
 * Buffers and eviction priorities (0 lowest .. 15 highest), six of the
 * image's size:
 *   J              14  read by both kernels (with halos), written by one
 *   C              12  written by the first, read with halos by the second
 *   dN, dS, dW, dE  9  written by the first, read by the second
 *
 * Check: the final image against the CPU within 1e-4 relative + 1e-5
 * (the GPU contracts multiply-adds into fma).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rodinia.h"

#define BS 16
#define NITER 2
#define LAMBDA 0.5f

static float roi_q0sqr(const float *j, int cols, int r1, int r2, int c1, int c2)
{
	float sum = 0, sum2 = 0;
	int size = (r2 - r1 + 1) * (c2 - c1 + 1);

	for (int y = r1; y <= r2; y++)
		for (int x = c1; x <= c2; x++) {
			float v = j[y * cols + x];

			sum += v;
			sum2 += v * v;
		}
	float mean = sum / (float)size;
	float var = sum2 / (float)size - mean * mean;

	return var / (mean * mean);
}

static void cpu_iteration(float *j, int rows, int cols, float q0sqr, float *c, float *dn,
                          float *ds, float *dw, float *de)
{
	for (int y = 0; y < rows; y++)
		for (int x = 0; x < cols; x++) {
			int at = y * cols + x;
			float jc = j[at];
			float n = j[(y > 0 ? y - 1 : y) * cols + x] - jc;
			float s = j[(y < rows - 1 ? y + 1 : y) * cols + x] - jc;
			float w = j[y * cols + (x > 0 ? x - 1 : x)] - jc;
			float e = j[y * cols + (x < cols - 1 ? x + 1 : x)] - jc;
			float g2 = (n * n + s * s + w * w + e * e) / (jc * jc);
			float l = (n + s + w + e) / jc;
			float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
			float den = 1.0f + 0.25f * l;
			float qsqr = num / (den * den);

			den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
			float cc = 1.0f / (1.0f + den);
			c[at] = cc < 0.0f ? 0.0f : cc > 1.0f ? 1.0f : cc;
			dn[at] = n;
			ds[at] = s;
			dw[at] = w;
			de[at] = e;
		}
	for (int y = 0; y < rows; y++)
		for (int x = 0; x < cols; x++) {
			int at = y * cols + x;
			float cs = c[(y < rows - 1 ? y + 1 : y) * cols + x];
			float ce = c[y * cols + (x < cols - 1 ? x + 1 : x)];
			float d = c[at] * dn[at] + cs * ds[at] + c[at] * dw[at] + ce * de[at];

			j[at] = j[at] + 0.25f * LAMBDA * d;
		}
}

int main(int argc, char **argv)
{
	struct rodinia r;
	char summary[160];

	rodinia_start(&r, "srad_v2", "srad_v2.ptx", argc, argv, 24u << 20);
	int side = (int)sqrt((double)r.bytes / (6 * sizeof(float))) / BS * BS;
	side = side < BS ? BS : side > 16384 ? 16384 : side;
	int rows = side, cols = side + (side / 4 / BS) * BS;
	size_t n = (size_t)rows * cols, bytes = n * sizeof(float);
	float *image = rodinia_malloc(bytes), *j = rodinia_malloc(bytes), *want = rodinia_malloc(bytes);
	float *tmp[5];
	/* the region of interest: the top-left quarter */
	int r2 = rows / 2 - 1, c2 = cols / 2 - 1;

	for (size_t i = 0; i < n; i++)
		image[i] = expf((float)(50 + rodinia_rand(&r) % 150) / 255.0f);
	CUfunction f1 = rodinia_function(&r, "srad_cuda_1");
	CUfunction f2 = rodinia_function(&r, "srad_cuda_2");
	CUdeviceptr d_j = rodinia_alloc(bytes, 14), d_c = rodinia_alloc(bytes, 12);
	CUdeviceptr d_e = rodinia_alloc(bytes, 9), d_w = rodinia_alloc(bytes, 9);
	CUdeviceptr d_n = rodinia_alloc(bytes, 9), d_s = rodinia_alloc(bytes, 9);
	float lambda = LAMBDA;

	for (unsigned rep = 0; rep < r.repeat; rep++) {
		memcpy(j, image, bytes);
		for (int it = 0; it < NITER; it++) {
			float q0sqr = roi_q0sqr(j, cols, 0, r2, 0, c2);
			void *p1[] = { &d_e, &d_w, &d_n, &d_s, &d_j, &d_c, &cols, &rows, &q0sqr };
			void *p2[] = { &d_e, &d_w, &d_n, &d_s, &d_j, &d_c, &cols, &rows, &lambda };

			CK(cuMemcpyHtoD(d_j, j, bytes));
			rodinia_kernels_begin(&r);
			CK(cuLaunchKernel(f1, (unsigned)(cols / BS), (unsigned)(rows / BS), 1, BS, BS,
			                  1, 0, NULL, p1, NULL));
			CK(cuLaunchKernel(f2, (unsigned)(cols / BS), (unsigned)(rows / BS), 1, BS, BS,
			                  1, 0, NULL, p2, NULL));
			rodinia_kernels_end(&r);
			CK(cuMemcpyDtoH(j, d_j, bytes));
		}
	}
	for (int i = 0; i < 5; i++)
		tmp[i] = rodinia_malloc(bytes);
	memcpy(want, image, bytes);
	for (int it = 0; it < NITER; it++)
		cpu_iteration(want, rows, cols, roi_q0sqr(want, cols, 0, r2, 0, c2), tmp[0], tmp[1],
		              tmp[2], tmp[3], tmp[4]);
	rodinia_check_floats("image", j, want, n, 1e-4f, 1e-5f);
	CK(cuMemFree(d_j));
	CK(cuMemFree(d_c));
	CK(cuMemFree(d_e));
	CK(cuMemFree(d_w));
	CK(cuMemFree(d_n));
	CK(cuMemFree(d_s));
	snprintf(summary, sizeof(summary), "%d x %d image, %d iterations, %u runs within 1e-4",
	         rows, cols, NITER, r.repeat);
	return rodinia_finish(&r, summary);
}
