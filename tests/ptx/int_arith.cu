// Integer arithmetic in each width: add/sub/mul (lo, hi, wide), div and rem
// (with zero divisors), min/max, abs/neg, logic, shifts, bit counts,
// bit-field extract/insert, byte permute and funnel shifts.
#define NI 24
extern "C" __global__ void int32_ops(const int *a, const int *b, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int x = a[i], y = b[i];
	unsigned ux = x, uy = y;
	int *o = out + i * NI;
	o[0] = x + y;
	o[1] = x - y;
	o[2] = x * y;
	o[3] = __mulhi(x, y);
	o[4] = __umulhi(ux, uy);
	o[5] = x / y;
	o[6] = x % y;
	o[7] = ux / uy;
	o[8] = ux % uy;
	o[9] = min(x, y);
	o[10] = max(x, y);
	o[11] = min(ux, uy);
	o[12] = abs(x);
	o[13] = -x;
	o[14] = (x & y) ^ (~x | y);
	o[15] = x << (y & 31);
	o[16] = x >> (y & 31);
	o[17] = ux >> (uy & 31);
	o[18] = __popc(x) + (__clz(y) << 8);
	o[19] = __brev(x);
	o[20] = __byte_perm(x, y, uy & 0x7777);
	o[21] = __funnelshift_l(x, y, uy) ^ __funnelshift_rc(x, y, uy);
	o[22] = __ffs(x) | (__sad(x, y, 3) << 8);
	o[23] = (x >> 3) & 0x3ff;
}

extern "C" __global__ void int64_ops(const long long *a, const long long *b,
				     long long *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	long long x = a[i], y = b[i];
	unsigned long long ux = x, uy = y;
	long long *o = out + i * 12;
	o[0] = x + y;
	o[1] = x - y;
	o[2] = x * y;
	o[3] = __mul64hi(x, y);
	o[4] = __umul64hi(ux, uy);
	o[5] = x / y;
	o[6] = x % y;
	o[7] = ux / uy;
	o[8] = ux % uy;
	o[9] = (long long)(int)x * (long long)(int)y;  /* mul.wide.s32 */
	o[10] = __popcll(x) + (__clzll(y) << 8) + ((long long)__brevll(ux) << 16);
	o[11] = (x >> (y & 63)) ^ (long long)(ux >> (uy & 63)) ^ (x << (y & 63));
}

extern "C" __global__ void small_ints(const int *a, short *s, unsigned char *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	short v = (short)a[i];
	s[i] = (short)(v * 3 + (v >> 2));
	c[i] = (unsigned char)(a[i] + 7);
}
