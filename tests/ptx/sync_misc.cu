// Block-wide predicate reductions (__syncthreads_count/_and/_or, which
// nvcc emits as inline-asm blocks redeclaring %p1), warp reductions
// (__reduce_*_sync), half-precision conversions and 24-bit multiplies.
#include <cuda_fp16.h>

extern "C" __global__ void block_votes(const int *a, int *out)
{
	int t = threadIdx.x;
	int x = a[blockIdx.x * blockDim.x + t];
	int c = __syncthreads_count(x & 1);
	int all = __syncthreads_and(x >= 0);
	int any = __syncthreads_or(x > 900);
	int *o = out + (blockIdx.x * blockDim.x + t) * 3;
	o[0] = c;
	o[1] = all;
	o[2] = any;
}

extern "C" __global__ void warp_reduce(const int *a, int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int x = a[i];
	unsigned u = (unsigned)x;
	int *o = out + i * 6;
	o[0] = __reduce_add_sync(0xffffffff, x);
	o[1] = __reduce_min_sync(0xffffffff, x);
	o[2] = (int)__reduce_max_sync(0xffffffff, u);
	o[3] = (int)__reduce_and_sync(0xffffffff, u | 0x100);
	o[4] = (int)__reduce_or_sync(0xffffffff, u & 0xf0f);
	o[5] = (int)__reduce_xor_sync(0xffffffff, u);
}

extern "C" __global__ void halves(const float *f, const double *d, unsigned short *h,
				  float *back, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	__half a = __float2half_rn(f[i]);
	__half b = __float2half_rz(f[i]);
	__half c = __float2half_rd(f[i]);
	__half e = __float2half_ru(f[i]);
	__half g = __double2half(d[i]);
	h[i * 5] = __half_as_ushort(a);
	h[i * 5 + 1] = __half_as_ushort(b);
	h[i * 5 + 2] = __half_as_ushort(c);
	h[i * 5 + 3] = __half_as_ushort(e);
	h[i * 5 + 4] = __half_as_ushort(g);
	back[i] = __half2float(a) + __half2float(g);
}
