// SPDX-License-Identifier: MIT
/*
 * heartwall (simplified) - tracks POINTS (51: the original's 20 inner and
 * 31 outer wall points) through FRAMES (8) frames of a synthetic video by
 * template matching (kernels/heartwall.cu: heartwall_track, one block per
 * point, one launch per frame). The original's image processing (its
 * ellipse fitting, convolutions and several template sizes) is reduced
 * to one 11 x 11 template per point and a sum of squared differences
 * over a +-6 pixel search window; the structure (a large per-point
 * kernel, every frame copied to the GPU before its launch: DMA-bound, as
 * the thesis found) is the original's. The video is a random texture
 * moving by a known offset per frame.
 *
 * Buffers and eviction priorities (0 lowest .. 15 highest):
 *   frame      width x height bytes  13  copied in per frame, read ~T^2
 *                                        times per pixel of the windows
 *   templates  POINTS x T x T bytes  15  small, read by every thread
 *   pos_x/y    POINTS ints           15  the points' positions
 *   track      FRAMES x POINTS x 2   10  written once per point and frame
 *
 * Check: every position of every frame equals the CPU's, exactly (integer
 * sums); and the points moved with the texture.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rodinia.h"

#define POINTS 51
#define FRAMES 8
#define T 11
#define RADIUS 6
#define THREADS 256

static unsigned char texel(int x, int y)
{
	uint32_t h = (uint32_t)x * 0x9E3779B1u ^ (uint32_t)y * 0x85EBCA77u;

	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	h ^= h >> 12;
	return (unsigned char)(h >> 24);
}

/* frame f: the texture shifted by (2f, f) */
static void make_frame(unsigned char *img, int w, int h, int f)
{
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			img[y * w + x] = texel(x - 2 * f, y - f);
}

static void cpu_track(const unsigned char *frame, int w, int h, const unsigned char *tpl,
                      int *px, int *py)
{
	int side = 2 * RADIUS + 1, half = T / 2;
	unsigned int best = 0xffffffffu;
	int best_at = -1;

	for (int d = 0; d < side * side; d++) {
		int cx = *px + d % side - RADIUS, cy = *py + d / side - RADIUS;
		unsigned int ssd = 0;

		if (cx - half < 0 || cy - half < 0 || cx - half + T > w || cy - half + T > h)
			continue;
		for (int v = 0; v < T; v++)
			for (int u = 0; u < T; u++) {
				int diff = (int)frame[(cy - half + v) * w + cx - half + u] - (int)tpl[v * T + u];

				ssd += (unsigned int)(diff * diff);
			}
		if (ssd < best) {
			best = ssd;
			best_at = d;
		}
	}
	if (best_at >= 0) {
		*px += best_at % side - RADIUS;
		*py += best_at / side - RADIUS;
	}
}

int main(int argc, char **argv)
{
	struct rodinia r;
	char summary[160];

	rodinia_start(&r, "heartwall", "heartwall.ptx", argc, argv, 1u << 20);
	int side = (int)sqrt((double)r.bytes);
	side = side < 64 ? 64 : side > 32768 ? 32768 : side;
	int w = side, h = side, t = T, radius = RADIUS, points = POINTS;
	size_t fbytes = (size_t)w * h;
	unsigned char *frames = rodinia_malloc(fbytes * FRAMES);
	unsigned char *tpl = rodinia_malloc(POINTS * T * T);
	int x0[POINTS], y0[POINTS], px[POINTS], py[POINTS];
	int *track = rodinia_malloc(FRAMES * POINTS * 2 * sizeof(int));

	for (int f = 0; f < FRAMES; f++)
		make_frame(frames + f * fbytes, w, h, f);
	/* points on an ellipse around the centre, templates from frame 0 */
	for (int p = 0; p < POINTS; p++) {
		double a = 2 * M_PI * p / POINTS;

		x0[p] = w / 2 + (int)(0.3 * w * cos(a));
		y0[p] = h / 2 + (int)(0.3 * h * sin(a));
		for (int v = 0; v < T; v++)
			for (int u = 0; u < T; u++)
				tpl[(p * T + v) * T + u] = frames[(y0[p] - T / 2 + v) * w + x0[p] - T / 2 + u];
	}
	CUfunction fn = rodinia_function(&r, "heartwall_track");
	CUdeviceptr d_frame = rodinia_alloc(fbytes, 13);
	CUdeviceptr d_tpl = rodinia_alloc(POINTS * T * T, 15);
	CUdeviceptr d_x = rodinia_alloc(POINTS * sizeof(int), 15);
	CUdeviceptr d_y = rodinia_alloc(POINTS * sizeof(int), 15);
	CUdeviceptr d_track = rodinia_alloc(FRAMES * POINTS * 2 * sizeof(int), 10);

	CK(cuMemcpyHtoD(d_tpl, tpl, POINTS * T * T));
	for (unsigned rep = 0; rep < r.repeat; rep++) {
		CK(cuMemcpyHtoD(d_x, x0, sizeof(x0)));
		CK(cuMemcpyHtoD(d_y, y0, sizeof(y0)));
		for (int f = 1; f < FRAMES; f++) {
			void *p[] = { &d_frame, &w, &h, &d_tpl, &t, &radius, &d_x, &d_y, &d_track, &f,
			              &points };

			CK(cuMemcpyHtoD(d_frame, frames + f * fbytes, fbytes));
			rodinia_kernels_begin(&r);
			CK(cuLaunchKernel(fn, POINTS, 1, 1, THREADS, 1, 1, 0, NULL, p, NULL));
			rodinia_kernels_end(&r);
		}
		CK(cuMemcpyDtoH(track, d_track, FRAMES * POINTS * 2 * sizeof(int)));
	}
	memcpy(px, x0, sizeof(px));
	memcpy(py, y0, sizeof(py));
	for (int f = 1; f < FRAMES; f++)
		for (int p = 0; p < POINTS; p++) {
			int *got = &track[(f * POINTS + p) * 2];

			cpu_track(frames + f * fbytes, w, h, tpl + p * T * T, &px[p], &py[p]);
			if (got[0] != px[p] || got[1] != py[p])
				rodinia_fail("frame %d point %d at (%d, %d), expected (%d, %d)", f, p,
				             got[0], got[1], px[p], py[p]);
			if (px[p] != x0[p] + 2 * f || py[p] != y0[p] + f)
				rodinia_fail("frame %d point %d at (%d, %d): lost the texture's motion to (%d, %d)",
				             f, p, px[p], py[p], x0[p] + 2 * f, y0[p] + f);
		}
	CK(cuMemFree(d_frame));
	CK(cuMemFree(d_tpl));
	CK(cuMemFree(d_x));
	CK(cuMemFree(d_y));
	CK(cuMemFree(d_track));
	snprintf(summary, sizeof(summary), "%d x %d frames, %d points, %d frames, %u runs exact",
	         w, h, POINTS, FRAMES, r.repeat);
	return rodinia_finish(&r, summary);
}
