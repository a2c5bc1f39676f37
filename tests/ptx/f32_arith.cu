// Single precision with every rounding mode, fma, division, sqrt, rcp,
// min/max, abs/neg/copysign, and comparisons that see NaN.
#define NF 28
extern "C" __global__ void f32_ops(const float *a, const float *b, const float *c,
				   float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = a[i], y = b[i], z = c[i];
	float *o = out + i * NF;
	o[0] = __fadd_rn(x, y);
	o[1] = __fadd_rz(x, y);
	o[2] = __fadd_rd(x, y);
	o[3] = __fadd_ru(x, y);
	o[4] = __fmul_rn(x, y);
	o[5] = __fmul_rz(x, y);
	o[6] = __fmul_rd(x, y);
	o[7] = __fmul_ru(x, y);
	o[8] = __fdiv_rn(x, y);
	o[9] = __fdiv_rz(x, y);
	o[10] = __fdiv_rd(x, y);
	o[11] = __fdiv_ru(x, y);
	o[12] = __fmaf_rn(x, y, z);
	o[13] = __fmaf_rz(x, y, z);
	o[14] = __fmaf_rd(x, y, z);
	o[15] = __fmaf_ru(x, y, z);
	o[16] = __fsqrt_rn(fabsf(x));
	o[17] = __fsqrt_rz(fabsf(x));
	o[18] = __frcp_rn(y);
	o[19] = __frcp_ru(y);
	o[20] = fminf(x, y);
	o[21] = fmaxf(x, z);
	o[22] = fabsf(z);
	o[23] = -y;
	o[24] = copysignf(x, y);
	o[25] = __fsub_rn(x, z);
	o[26] = __fsub_ru(x, z);
	o[27] = (x < y) + 2 * (x != y) + 4 * (x >= z) + 8 * !(x <= y) + 16 * isnan(x) +
		32 * isinf(y);
}

extern "C" __global__ void f32_default(const float *a, const float *b, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = a[i] / b[i] + sqrtf(fabsf(a[i]));
}
