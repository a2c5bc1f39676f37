// SPDX-License-Identifier: MIT
// saxpy: y = a*x + y over a grid-stride loop (programs saxpy and
// launch_forms; launch_forms loads it from the PTX-only fatbin).
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += blockDim.x * gridDim.x)
		y[i] = a * x[i] + y[i];
}
