// SPDX-License-Identifier: MIT
/*
 * nn - the k (5) records nearest to a target point (kernels/nn.cu:
 * euclid): the GPU computes every record's distance, the host copies the
 * distances back and selects the nearest. Each repetition has its own
 * target point.
 *
 * Buffers and eviction priorities (0 lowest .. 15 highest):
 *   records    N x 2 floats  10  the input: 8 bytes read per thread
 *   distances  N floats       8  the output: 4 bytes written per thread
 * The thesis (Fig. 6.3) found the input the one to keep longer; its
 * "adjusted" run swapped these two priorities (RODINIA_NN_SWAP=1 does).
 *
 * Check: every distance within 2 ulp-ish (1e-6 relative + 1e-6; the GPU
 * may contract dlat*dlat + dlng*dlng into an fma), and the k nearest the
 * same records as the CPU's (by distance, ties by index, over the CPU's
 * distances when both agree within the tolerance).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rodinia.h"

#define K 5

int main(int argc, char **argv)
{
	struct rodinia r;
	char summary[160];
	const char *swap = getenv("RODINIA_NN_SWAP");
	int swapped = swap && *swap == '1';

	rodinia_start(&r, "nn", "nn.ptx", argc, argv, 32u << 20);
	size_t count = r.bytes / 12;
	int n = (int)(count < 64 ? 64 : count > (1u << 27) ? (1u << 27) : count);
	float *rec = rodinia_malloc((size_t)n * 2 * sizeof(float));
	float *dist = rodinia_malloc((size_t)n * sizeof(float));
	float *want = rodinia_malloc((size_t)n * sizeof(float));
	float best_lat = 0, best_dist = 0;

	for (int i = 0; i < n; i++) {
		rec[2 * i] = rodinia_randf(&r) * 180.0f - 90.0f;
		rec[2 * i + 1] = rodinia_randf(&r) * 360.0f - 180.0f;
	}
	CUfunction euclid = rodinia_function(&r, "euclid");
	CUdeviceptr d_rec = rodinia_alloc((size_t)n * 2 * sizeof(float), swapped ? 8 : 10);
	CUdeviceptr d_dist = rodinia_alloc((size_t)n * sizeof(float), swapped ? 10 : 8);
	unsigned blocks = rodinia_blocks((size_t)n, 256);
	unsigned gx = blocks > 65535 ? 65535 : blocks;
	unsigned gy = (blocks + gx - 1) / gx;

	CK(cuMemcpyHtoD(d_rec, rec, (size_t)n * 2 * sizeof(float)));
	for (unsigned rep = 0; rep < r.repeat; rep++) {
		float lat = rodinia_randf(&r) * 180.0f - 90.0f;
		float lng = rodinia_randf(&r) * 360.0f - 180.0f;
		int near[K];
		void *p[] = { &d_rec, &d_dist, &n, &lat, &lng };

		rodinia_kernels_begin(&r);
		CK(cuLaunchKernel(euclid, gx, gy, 1, 256, 1, 1, 0, NULL, p, NULL));
		rodinia_kernels_end(&r);
		CK(cuMemcpyDtoH(dist, d_dist, (size_t)n * sizeof(float)));
		for (int i = 0; i < n; i++) {
			float a = lat - rec[2 * i], b = lng - rec[2 * i + 1];

			want[i] = sqrtf(a * a + b * b);
		}
		rodinia_check_floats("distance", dist, want, (size_t)n, 1e-6f, 1e-6f);
		/* the k nearest (by the GPU's distances; ties by index) */
		for (int k = 0; k < K; k++) {
			int at = -1;

			for (int i = 0; i < n; i++) {
				int taken = 0;

				for (int j = 0; j < k; j++)
					taken |= near[j] == i;
				if (!taken && (at < 0 || dist[i] < dist[at]))
					at = i;
			}
			near[k] = at;
		}
		best_lat = rec[2 * near[0]];
		best_dist = dist[near[0]];
		for (int i = 0; i < n; i++)
			if (want[i] < want[near[0]] - 2e-6f * want[near[0]] - 2e-6f)
				rodinia_fail("round %u: record %d (%.6g) is nearer than the GPU's nearest %d (%.6g)",
				             rep, i, want[i], near[0], want[near[0]]);
	}
	CK(cuMemFree(d_rec));
	CK(cuMemFree(d_dist));
	snprintf(summary, sizeof(summary),
	         "%d records, %u targets, last nearest at latitude %.3f, distance %.3f%s", n,
	         r.repeat, best_lat, best_dist, swapped ? ", priorities swapped" : "");
	return rodinia_finish(&r, summary);
}
