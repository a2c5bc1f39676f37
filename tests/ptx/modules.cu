// Kernels the module path's tests load through the HAL, the core and vgpud
// (module load, variables, launches, faults): each small, each checked on
// the CPU by its test.
__device__ unsigned bias = 7;
__constant__ unsigned scale = 3;
__device__ unsigned long long launches;

extern "C" __global__ void vadd_u32(const unsigned *a, const unsigned *b, unsigned *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

/* p[i] = p[i] * scale + bias: reads both module variables. */
extern "C" __global__ void scale_bias(unsigned *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = p[i] * scale + bias;
	if (i == 0)
		atomicAdd(&launches, 1ull);
}

/* Spins until *flag is nonzero: a function that never ends by itself. */
extern "C" __global__ void spin(const volatile int *flag)
{
	while (*flag == 0)
		;
}

/* Stores v at any address the caller names. */
extern "C" __global__ void poke(unsigned *address, unsigned v)
{
	*address = v;
}

/* A sum over the whole buffer with atomics: every word is read once. */
extern "C" __global__ void sum_u32(const unsigned *p, unsigned long long n,
                                   unsigned long long *sum)
{
	unsigned long long local = 0;
	for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)blockDim.x * gridDim.x)
		local += p[i];
	atomicAdd(sum, local);
}
