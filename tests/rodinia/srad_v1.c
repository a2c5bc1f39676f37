// SPDX-License-Identifier: MIT
/*
 * srad_v1 - speckle-reducing anisotropic diffusion of a rows x cols image
 * (kernels/srad_v1.cu). Each repetition copies the image in, extracts it
 * (exp), runs NITER (2) diffusion iterations (prepare; reduce passes
 * until one sum is left; the host reads the image's sum and sum of
 * squares and derives q0^2; srad; srad2), compresses it (log) and copies
 * it back.
 *
 * Buffers and eviction priorities (0 lowest .. 15 highest): eight of the
 * image's size, as the thesis saw (Fig. 4.4(i)), and four small index
 * arrays.
 *   image              14  read by every kernel, 5 reads per pixel in srad
 *   c                  11  written by srad, read 3x per pixel by srad2
 *   dN, dS, dW, dE      8  written once and read once per iteration
 *   sums, sums2         6  the reduction's scratch
 *   iN, iS, jW, jE     13  rows or columns ints: read by every thread
 *
 * Check: the final image against the CPU within 1e-3 relative + 1e-2 (on
 * values 0..255): the GPU's expf and logf are not the C library's, and
 * the reduction adds in another order.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rodinia.h"

#define NITER 2
#define LAMBDA 0.5f
#define REDUCE_BLOCK 512

static float q0_of(double sum, double sum2, size_t n)
{
	float mean = (float)(sum / (double)n);
	float var = (float)(sum2 / (double)n) - mean * mean;

	return var / (mean * mean);
}

static void cpu_srad(float *img, int rows, int cols, const int *in, const int *is,
                     const int *jw, const int *je, float *dn, float *ds, float *dw, float *de,
                     float *c)
{
	size_t n = (size_t)rows * cols;

	for (size_t i = 0; i < n; i++)
		img[i] = expf(img[i] / 255.0f);
	for (int it = 0; it < NITER; it++) {
		double sum = 0, sum2 = 0;

		for (size_t i = 0; i < n; i++) {
			sum += img[i];
			sum2 += (double)(img[i] * img[i]);
		}
		float q0sqr = q0_of(sum, sum2, n);

		for (int col = 0; col < cols; col++)
			for (int row = 0; row < rows; row++) {
				size_t i = (size_t)col * rows + row;
				float jc = img[i];
				float nn = img[(size_t)col * rows + in[row]] - jc;
				float s = img[(size_t)col * rows + is[row]] - jc;
				float w = img[(size_t)jw[col] * rows + row] - jc;
				float e = img[(size_t)je[col] * rows + row] - jc;
				float g2 = (nn * nn + s * s + w * w + e * e) / (jc * jc);
				float l = (nn + s + w + e) / jc;
				float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
				float den = 1.0f + 0.25f * l;
				float qsqr = num / (den * den);

				den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
				float cc = 1.0f / (1.0f + den);
				c[i] = cc < 0.0f ? 0.0f : cc > 1.0f ? 1.0f : cc;
				dn[i] = nn;
				ds[i] = s;
				dw[i] = w;
				de[i] = e;
			}
		for (int col = 0; col < cols; col++)
			for (int row = 0; row < rows; row++) {
				size_t i = (size_t)col * rows + row;
				float d = c[i] * dn[i] + c[(size_t)col * rows + is[row]] * ds[i] +
				          c[i] * dw[i] + c[(size_t)je[col] * rows + row] * de[i];

				img[i] = img[i] + 0.25f * LAMBDA * d;
			}
	}
	for (size_t i = 0; i < n; i++)
		img[i] = logf(img[i]) * 255.0f;
}

int main(int argc, char **argv)
{
	struct rodinia r;
	char summary[160];

	rodinia_start(&r, "srad_v1", "srad_v1.ptx", argc, argv, 16u << 20);
	int side = (int)sqrt((double)r.bytes / (8 * sizeof(float)));
	side = side < 16 ? 16 : side > 16384 ? 16384 : side;
	int rows = side, cols = side + side / 8; /* not square: catches a swapped index */
	int n = rows * cols;
	size_t bytes = (size_t)n * sizeof(float);
	float *image = rodinia_malloc(bytes), *got = rodinia_malloc(bytes), *want = rodinia_malloc(bytes);
	int *in = rodinia_malloc((size_t)rows * sizeof(int)), *is = rodinia_malloc((size_t)rows * sizeof(int));
	int *jw = rodinia_malloc((size_t)cols * sizeof(int)), *je = rodinia_malloc((size_t)cols * sizeof(int));
	float *tmp[5];

	for (int i = 0; i < n; i++)
		image[i] = 50.0f + (float)(rodinia_rand(&r) % 150);
	for (int i = 0; i < rows; i++) {
		in[i] = i > 0 ? i - 1 : 0;
		is[i] = i < rows - 1 ? i + 1 : rows - 1;
	}
	for (int j = 0; j < cols; j++) {
		jw[j] = j > 0 ? j - 1 : 0;
		je[j] = j < cols - 1 ? j + 1 : cols - 1;
	}
	CUfunction f_extract = rodinia_function(&r, "extract");
	CUfunction f_prepare = rodinia_function(&r, "prepare");
	CUfunction f_reduce = rodinia_function(&r, "reduce");
	CUfunction f_srad = rodinia_function(&r, "srad");
	CUfunction f_srad2 = rodinia_function(&r, "srad2");
	CUfunction f_compress = rodinia_function(&r, "compress");
	CUdeviceptr d_img = rodinia_alloc(bytes, 14);
	CUdeviceptr d_c = rodinia_alloc(bytes, 11);
	CUdeviceptr d_dn = rodinia_alloc(bytes, 8), d_ds = rodinia_alloc(bytes, 8);
	CUdeviceptr d_dw = rodinia_alloc(bytes, 8), d_de = rodinia_alloc(bytes, 8);
	CUdeviceptr d_sums = rodinia_alloc(bytes, 6), d_sums2 = rodinia_alloc(bytes, 6);
	CUdeviceptr d_in = rodinia_alloc((size_t)rows * sizeof(int), 13);
	CUdeviceptr d_is = rodinia_alloc((size_t)rows * sizeof(int), 13);
	CUdeviceptr d_jw = rodinia_alloc((size_t)cols * sizeof(int), 13);
	CUdeviceptr d_je = rodinia_alloc((size_t)cols * sizeof(int), 13);
	unsigned grid = rodinia_blocks((size_t)n, 256);
	float lambda = LAMBDA;

	CK(cuMemcpyHtoD(d_in, in, (size_t)rows * sizeof(int)));
	CK(cuMemcpyHtoD(d_is, is, (size_t)rows * sizeof(int)));
	CK(cuMemcpyHtoD(d_jw, jw, (size_t)cols * sizeof(int)));
	CK(cuMemcpyHtoD(d_je, je, (size_t)cols * sizeof(int)));
	for (unsigned rep = 0; rep < r.repeat; rep++) {
		void *pn[] = { &d_img, &n };

		CK(cuMemcpyHtoD(d_img, image, bytes));
		rodinia_kernels_begin(&r);
		CK(cuLaunchKernel(f_extract, grid, 1, 1, 256, 1, 1, 0, NULL, pn, NULL));
		rodinia_kernels_end(&r);
		for (int it = 0; it < NITER; it++) {
			void *pp[] = { &d_img, &d_sums, &d_sums2, &n };
			float sum, sum2;

			rodinia_kernels_begin(&r);
			CK(cuLaunchKernel(f_prepare, grid, 1, 1, 256, 1, 1, 0, NULL, pp, NULL));
			for (long count = n, mul = 1; count > 1 || mul == 1;
			     count = (count + REDUCE_BLOCK - 1) / REDUCE_BLOCK, mul *= REDUCE_BLOCK) {
				void *pr[] = { &d_sums, &d_sums2, &count, &mul };

				CK(cuLaunchKernel(f_reduce, rodinia_blocks((size_t)count, REDUCE_BLOCK), 1,
				                  1, REDUCE_BLOCK, 1, 1, 0, NULL, pr, NULL));
			}
			rodinia_kernels_end(&r);
			CK(cuMemcpyDtoH(&sum, d_sums, sizeof(float)));
			CK(cuMemcpyDtoH(&sum2, d_sums2, sizeof(float)));
			float q0sqr = q0_of(sum, sum2, (size_t)n);
			void *ps[] = { &rows, &cols, &d_in, &d_is, &d_jw, &d_je, &d_dn, &d_ds,
			               &d_dw, &d_de, &q0sqr, &d_c, &d_img };
			void *ps2[] = { &lambda, &rows, &cols, &d_is, &d_je, &d_dn, &d_ds, &d_dw,
			                &d_de, &d_c, &d_img };

			rodinia_kernels_begin(&r);
			CK(cuLaunchKernel(f_srad, grid, 1, 1, 256, 1, 1, 0, NULL, ps, NULL));
			CK(cuLaunchKernel(f_srad2, grid, 1, 1, 256, 1, 1, 0, NULL, ps2, NULL));
			rodinia_kernels_end(&r);
		}
		rodinia_kernels_begin(&r);
		CK(cuLaunchKernel(f_compress, grid, 1, 1, 256, 1, 1, 0, NULL, pn, NULL));
		rodinia_kernels_end(&r);
		CK(cuMemcpyDtoH(got, d_img, bytes));
	}
	for (int i = 0; i < 5; i++)
		tmp[i] = rodinia_malloc(bytes);
	memcpy(want, image, bytes);
	cpu_srad(want, rows, cols, in, is, jw, je, tmp[0], tmp[1], tmp[2], tmp[3], tmp[4]);
	rodinia_check_floats("image", got, want, (size_t)n, 1e-3f, 1e-2f);
	CUdeviceptr all[] = { d_img, d_c, d_dn, d_ds, d_dw, d_de, d_sums, d_sums2,
	                      d_in, d_is, d_jw, d_je };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		CK(cuMemFree(all[i]));
	snprintf(summary, sizeof(summary), "%d x %d image, %d iterations, %u runs within 1e-3",
	         rows, cols, NITER, r.repeat);
	return rodinia_finish(&r, summary);
}
