// SPDX-License-Identifier: MIT
// Sum of n 32-bit words: each block reduces its 2*blockDim.x elements in
// shared memory (a tree, dynamic shared memory of blockDim.x words), then
// adds its partial sum to the total with one 64-bit atomic.
extern "C" __global__ void reduce_sum(const unsigned *in, unsigned long long *total, int n)
{
	extern __shared__ unsigned long long part[];
	unsigned t = threadIdx.x;
	long long i = (long long)blockIdx.x * blockDim.x * 2 + t;
	unsigned long long v = 0;

	if (i < n)
		v = in[i];
	if (i + blockDim.x < n)
		v += in[i + blockDim.x];
	part[t] = v;
	__syncthreads();
	for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
		if (t < k)
			part[t] += part[t + k];
		__syncthreads();
	}
	if (t == 0)
		atomicAdd(total, part[0]);
}
