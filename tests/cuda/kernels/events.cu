// SPDX-License-Identifier: MIT
// Work whose length the caller chooses: each thread runs iters steps of a
// 32-bit linear congruential generator from its index (program events
// times it with events; the bench uses it as a kernel-heavy program).
extern "C" __global__ void lcg_work(unsigned *out, int n, int iters)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	unsigned x = (unsigned)i;
	for (int k = 0; k < iters; k++)
		x = x * 1664525u + 1013904223u;
	out[i] = x;
}

// Nothing at all: the launch cost alone (the bench's cuda_launch_us).
extern "C" __global__ void empty(void)
{
}
