// Every state space: global, shared (static and dynamic), local arrays,
// const variables, kernel parameters (a struct by value), vector loads and
// stores, and generic pointers to shared and local memory.
struct params {
	int scale;
	float bias;
	double d;
};

__constant__ int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
__device__ int counter_base = 100;

__device__ __noinline__ int sum_generic(const int *p, int n)
{
	int s = 0;
	for (int k = 0; k < n; k++)
		s += p[k];
	return s;
}

extern "C" __global__ void spaces(const float4 *in, float4 *out, int2 *iout,
				  struct params pr, int n)
{
	__shared__ int tile[64];
	extern __shared__ float dyn[];
	int local[16];
	int t = threadIdx.x;
	int i = blockIdx.x * blockDim.x + t;
	tile[t] = i * pr.scale;
	dyn[t] = (float)t + pr.bias;
	for (int k = 0; k < 16; k++)
		local[k] = (i + k) * table[k & 7];
	__syncthreads();
	if (i >= n)
		return;
	float4 v = in[i];
	v.x += dyn[(t + 1) % blockDim.x];
	v.y *= 2.0f;
	v.z = (float)pr.d;
	v.w = (float)tile[(t + 3) % blockDim.x];
	out[i] = v;
	int lsum = sum_generic(local + (i & 3), 8);
	int ssum = sum_generic(tile, 4);
	iout[i] = make_int2(lsum + counter_base, ssum);
}
