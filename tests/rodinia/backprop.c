// SPDX-License-Identifier: MIT
/*
 * backprop - one training step of a two-layer perceptron per repetition
 * (kernels/backprop.cu): IN input units, 16 hidden units, one output. The
 * GPU runs the input-to-hidden forward pass (bpnn_layerforward, per-block
 * partial sums) and the input weights' update (bpnn_adjust_weights); the
 * host adds the partial sums, applies the sigmoid and does the small
 * hidden-to-output layer and the error terms, as the original does. The
 * weights travel to the GPU and back every step.
 *
 * Buffers and eviction priorities (0 lowest .. 15 highest):
 *   weights   (IN+1) x 17 floats  12  read by both kernels, written by one
 *   old       (IN+1) x 17 floats   9  the momentum: read and written once
 *   input     IN+1 floats         10  read by both kernels (16x per value)
 *   partial   IN/16 x 16 floats   14  small, written every step
 *   delta     17 floats           15  read by every thread of the update
 * Two large buffers, the weights accessed twice as often as the momentum:
 * the profile the thesis found (Fig. 4.4).
 *
 * Check: the first step's per-block partial sums exactly (inputs and
 * weights are multiples of 1/256 below 1, so every product and each
 * block's 16-term sum are exact in any order); the final weights and momentum within 1e-4
 * relative + 1e-6 (the GPU contracts a*b+c into fma).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rodinia.h"

#define HID 16
#define WIDTH (HID + 1)
#define ETA 0.3f
#define MOMENTUM 0.3f

static float squash(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

struct net {
	int in;
	float *input, *w, *old; /* (in + 1), (in + 1) * WIDTH */
	float hw[WIDTH], hold[WIDTH]; /* hidden -> output weights, momentum */
	float hidden[WIDTH], delta[WIDTH];
	float target;
};

/* The host's part after the forward sums: hidden layer, output, errors,
 * the hidden-to-output update. sums[j] (j = 1..HID) are the input sums. */
static void host_step(struct net *n, const float *sums)
{
	float out = 0.0f, out_delta;

	n->hidden[0] = 1.0f;
	for (int j = 1; j <= HID; j++)
		n->hidden[j] = squash(sums[j] + n->w[j]); /* bias row 0 */
	for (int j = 0; j <= HID; j++)
		out += n->hw[j] * n->hidden[j];
	out = squash(out);
	out_delta = out * (1.0f - out) * (n->target - out);
	for (int j = 0; j <= HID; j++) {
		n->delta[j] = n->hidden[j] * (1.0f - n->hidden[j]) * n->hw[j] * out_delta;
		float dw = ETA * out_delta * n->hidden[j] + MOMENTUM * n->hold[j];

		n->hw[j] += dw;
		n->hold[j] = dw;
	}
}

/* The forward sums as the GPU forms them: per block of 16 inputs
 * (partial[b * HID + j - 1]), then the blocks in order. */
static void cpu_forward(const struct net *n, float *partial, float *sums)
{
	int blocks = n->in / HID;

	for (int j = 1; j <= HID; j++) {
		sums[j] = 0.0f;
		for (int b = 0; b < blocks; b++) {
			float s = 0.0f;

			for (int i = b * HID + 1; i <= (b + 1) * HID; i++)
				s += n->w[i * WIDTH + j] * n->input[i];
			partial[b * HID + j - 1] = s;
			sums[j] += s;
		}
	}
}

static void cpu_adjust(struct net *n)
{
	for (int i = 1; i <= n->in; i++)
		for (int j = 1; j <= HID; j++) {
			float dw = ETA * n->delta[j] * n->input[i] + MOMENTUM * n->old[i * WIDTH + j];

			n->w[i * WIDTH + j] += dw;
			n->old[i * WIDTH + j] = dw;
		}
	for (int j = 1; j <= HID; j++) {
		float db = ETA * n->delta[j] + MOMENTUM * n->old[j];

		n->w[j] += db;
		n->old[j] = db;
	}
}

static void net_init(struct rodinia *r, struct net *n, int in)
{
	memset(n, 0, sizeof(*n));
	n->in = in;
	n->input = rodinia_malloc((size_t)(in + 1) * sizeof(float));
	n->w = rodinia_malloc((size_t)(in + 1) * WIDTH * sizeof(float));
	n->old = rodinia_malloc((size_t)(in + 1) * WIDTH * sizeof(float));
	n->input[0] = 1.0f;
	for (int i = 1; i <= in; i++)
		n->input[i] = (float)(rodinia_rand(r) % 256) / 256.0f;
	for (int i = 0; i < (in + 1) * WIDTH; i++)
		n->w[i] = (float)(rodinia_rand(r) % 256) / 256.0f;
	for (int j = 0; j <= HID; j++)
		n->hw[j] = (float)(rodinia_rand(r) % 256) / 256.0f - 0.5f;
	n->target = 0.1f;
}

static void net_copy(struct net *dst, const struct net *src)
{
	size_t wb = (size_t)(src->in + 1) * WIDTH * sizeof(float);
	float *input = dst->input, *w = dst->w, *old = dst->old;

	*dst = *src;
	dst->input = input;
	dst->w = w;
	dst->old = old;
	memcpy(dst->input, src->input, (size_t)(src->in + 1) * sizeof(float));
	memcpy(dst->w, src->w, wb);
	memcpy(dst->old, src->old, wb);
}

int main(int argc, char **argv)
{
	struct rodinia r;
	struct net gpu, cpu;
	char summary[160];

	rodinia_start(&r, "backprop", "backprop.ptx", argc, argv, 32u << 20);
	size_t units = r.bytes / (2 * WIDTH * sizeof(float));
	int in = (int)(units / HID * HID > (1u << 26) ? (1u << 26) : units / HID * HID);

	if (in < HID)
		in = HID;
	int blocks = in / HID;
	size_t wbytes = (size_t)(in + 1) * WIDTH * sizeof(float);
	CUfunction forward = rodinia_function(&r, "bpnn_layerforward");
	CUfunction adjust = rodinia_function(&r, "bpnn_adjust_weights");

	net_init(&r, &gpu, in);
	cpu.input = rodinia_malloc((size_t)(in + 1) * sizeof(float));
	cpu.w = rodinia_malloc(wbytes);
	cpu.old = rodinia_malloc(wbytes);
	net_copy(&cpu, &gpu);

	float *partial = rodinia_malloc((size_t)blocks * HID * sizeof(float));
	float *want_partial = rodinia_malloc((size_t)blocks * HID * sizeof(float));
	float sums[WIDTH], want[WIDTH];
	CUdeviceptr d_w = rodinia_alloc(wbytes, 12);
	CUdeviceptr d_old = rodinia_alloc(wbytes, 9);
	CUdeviceptr d_input = rodinia_alloc((size_t)(in + 1) * sizeof(float), 10);
	CUdeviceptr d_partial = rodinia_alloc((size_t)blocks * HID * sizeof(float), 14);
	CUdeviceptr d_delta = rodinia_alloc(WIDTH * sizeof(float), 15);

	for (unsigned rep = 0; rep < r.repeat; rep++) {
		CK(cuMemcpyHtoD(d_input, gpu.input, (size_t)(in + 1) * sizeof(float)));
		CK(cuMemcpyHtoD(d_w, gpu.w, wbytes));
		void *fp[] = { &d_input, &d_partial, &d_w, &in };
		rodinia_kernels_begin(&r);
		CK(cuLaunchKernel(forward, 1, (unsigned)blocks, 1, HID, HID, 1, 0, NULL, fp, NULL));
		rodinia_kernels_end(&r);
		CK(cuMemcpyDtoH(partial, d_partial, (size_t)blocks * HID * sizeof(float)));
		for (int j = 1; j <= HID; j++) {
			sums[j] = 0.0f;
			for (int b = 0; b < blocks; b++)
				sums[j] += partial[b * HID + j - 1];
		}
		if (rep == 0) {
			/* exact: dyadic inputs and weights, each block's 16
			 * products and their sum exact in any order */
			cpu_forward(&cpu, want_partial, want);
			for (int i = 0; i < blocks * HID; i++)
				if (partial[i] != want_partial[i])
					rodinia_fail("step 0: block %d's sum for hidden unit %d is %.9g, expected %.9g",
					             i / HID, i % HID + 1, partial[i], want_partial[i]);
		}
		host_step(&gpu, sums);
		CK(cuMemcpyHtoD(d_delta, gpu.delta, WIDTH * sizeof(float)));
		CK(cuMemcpyHtoD(d_old, gpu.old, wbytes));
		void *ap[] = { &d_delta, &d_input, &d_w, &d_old };
		rodinia_kernels_begin(&r);
		CK(cuLaunchKernel(adjust, 1, (unsigned)blocks, 1, HID, HID, 1, 0, NULL, ap, NULL));
		rodinia_kernels_end(&r);
		CK(cuMemcpyDtoH(gpu.w, d_w, wbytes));
		CK(cuMemcpyDtoH(gpu.old, d_old, wbytes));
	}
	/* the same steps on the CPU */
	for (unsigned rep = 0; rep < r.repeat; rep++) {
		cpu_forward(&cpu, want_partial, sums);
		host_step(&cpu, sums);
		cpu_adjust(&cpu);
	}
	rodinia_check_floats("weights", gpu.w, cpu.w, (size_t)(in + 1) * WIDTH, 1e-4f, 1e-6f);
	rodinia_check_floats("momentum", gpu.old, cpu.old, (size_t)(in + 1) * WIDTH, 1e-4f, 1e-6f);

	CK(cuMemFree(d_w));
	CK(cuMemFree(d_old));
	CK(cuMemFree(d_input));
	CK(cuMemFree(d_partial));
	CK(cuMemFree(d_delta));
	snprintf(summary, sizeof(summary), "%d inputs x %d hidden, %u steps, weights within 1e-4",
	         in, HID, r.repeat);
	return rodinia_finish(&r, summary);
}
