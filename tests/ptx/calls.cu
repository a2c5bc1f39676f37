// Device function calls that stay calls: parameters and return values in
// .param space, a recursive function, a struct returned by value.
struct pair {
	int a;
	float b;
};

__device__ __noinline__ int fib(int k)
{
	return k < 2 ? k : fib(k - 1) + fib(k - 2);
}

__device__ __noinline__ struct pair make(int x, float y)
{
	struct pair p = {x * 2, y + 0.5f};
	return p;
}

__device__ __noinline__ long long mix(long long a, int b, double c)
{
	return a * b + (long long)c;
}

extern "C" __global__ void calls(const int *in, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int k = in[i];
	struct pair p = make(k, (float)k);
	long long m = mix(k, 3, 2.5);
	out[i * 3] = fib(k & 15);
	out[i * 3 + 1] = p.a + (int)p.b;
	out[i * 3 + 2] = (int)m;
}

__device__ __noinline__ int depth(int k)
{
	volatile int pad[4];
	pad[0] = k;
	return k <= 0 ? pad[0] : depth(k - 1) + 1;
}

extern "C" __global__ void recurse(int *out, int k)
{
	out[threadIdx.x] = depth(k);
}
