// Kernels for ptx-bench (vgpu-backend/bench): a compute-bound loop of
// straight-line integer and float arithmetic, and a memory-bound triad.
extern "C" __global__ void compute_bound(float *out, int iters)
{
	float a = threadIdx.x * 0.5f, b = 1.0001f, c = 0.5f, d = 0.25f;
	unsigned x = threadIdx.x, y = 7;
#pragma unroll 8
	for (int k = 0; k < iters; k++) {
		a = a * b + c;
		c = c * b - d;
		d = d * 0.999f + a;
		x = x * 1664525u + 1013904223u;
		y ^= x >> 7;
		y += x << 3;
	}
	out[blockIdx.x * blockDim.x + threadIdx.x] = a + c + d + (float)(x ^ y);
}

extern "C" __global__ void memory_bound(const float *a, const float *b, float *c,
				       float s, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += blockDim.x * gridDim.x)
		c[i] = a[i] + s * b[i];
}
