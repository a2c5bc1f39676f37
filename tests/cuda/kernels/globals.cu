// SPDX-License-Identifier: MIT
// Module variables: coefficients in constant memory, a lookup table and a
// counter in global memory, all set and read by the host through
// cuModuleGetGlobal (program globals).
__constant__ float coeffs[4];
__device__ int table[256];
__device__ unsigned long long counter;

// y = c0 + c1 x + c2 x^2 + c3 x^3 (Horner) + table[i % 256]; counts the
// elements it wrote.
extern "C" __global__ void poly_table(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float v = x[i];
	y[i] = ((coeffs[3] * v + coeffs[2]) * v + coeffs[1]) * v + coeffs[0] +
	       (float)table[i & 255];
	atomicAdd(&counter, 1ull);
}
