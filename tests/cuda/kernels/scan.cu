// SPDX-License-Identifier: MIT
// Inclusive prefix sum in two kernels: scan_blocks scans each block's
// blockDim.x elements in shared memory (Hillis-Steele, dynamic shared
// memory of 2*blockDim.x words) and writes each block's total; add_offsets
// adds the scanned totals of the blocks before it. The host applies them
// level by level.
extern "C" __global__ void scan_blocks(const int *in, int *out, int *block_sums, int n)
{
	extern __shared__ int buf[];
	int t = threadIdx.x;
	int i = blockIdx.x * blockDim.x + t;
	int pin = 1, pout = 0; // the values start in half 0

	buf[t] = i < n ? in[i] : 0;
	__syncthreads();
	for (int off = 1; off < blockDim.x; off <<= 1) {
		pout = 1 - pout;
		pin = 1 - pout;
		int v = buf[pin * blockDim.x + t];
		if (t >= off)
			v += buf[pin * blockDim.x + t - off];
		buf[pout * blockDim.x + t] = v;
		__syncthreads();
	}
	if (i < n)
		out[i] = buf[pout * blockDim.x + t];
	if (t == blockDim.x - 1)
		block_sums[blockIdx.x] = buf[pout * blockDim.x + t];
}

extern "C" __global__ void add_offsets(int *out, const int *scanned_sums, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (blockIdx.x > 0 && i < n)
		out[i] += scanned_sums[blockIdx.x - 1];
}
