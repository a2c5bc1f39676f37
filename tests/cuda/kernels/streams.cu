// SPDX-License-Identifier: MIT
// d[i] = d[i] * mul + add (integers in floats: exact), one launch per
// piece of the data on its own stream (program streams).
extern "C" __global__ void scale_add(float *d, int n, float mul, float add)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = d[i] * mul + add;
}
