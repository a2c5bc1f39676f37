// sample.cu - the kernels of the committed sample fatbins (regenerate.sh).
__device__ int hits;

extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		y[i] = a * x[i] + y[i];
		atomicAdd(&hits, 1);
	}
}

extern "C" __global__ void fill(unsigned *out, unsigned value, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += gridDim.x * blockDim.x)
		out[i] = value ^ (unsigned)i;
}
