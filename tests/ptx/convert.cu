// Conversions between integer and float widths with rounding modes and
// saturation (NaN to 0, clamping).
extern "C" __global__ void cvt_f2i(const float *a, const double *d, int *oi,
				   long long *ol, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = a[i];
	double y = d[i];
	int *o = oi + i * 12;
	o[0] = __float2int_rn(x);
	o[1] = __float2int_rz(x);
	o[2] = __float2int_rd(x);
	o[3] = __float2int_ru(x);
	o[4] = (int)__float2uint_rn(x);
	o[5] = (int)__float2uint_rz(x);
	o[6] = __double2int_rn(y);
	o[7] = __double2int_rz(y);
	o[8] = (int)__double2uint_rd(y);
	o[9] = (int)(signed char)x;
	o[10] = (int)(unsigned short)x;
	o[11] = (int)(short)y;
	long long *p = ol + i * 4;
	p[0] = __float2ll_rn(x);
	p[1] = (long long)__float2ull_rz(x);
	p[2] = __double2ll_rd(y);
	p[3] = (long long)__double2ull_ru(y);
}

extern "C" __global__ void cvt_i2f(const int *a, const long long *b, float *of,
				   double *od, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int x = a[i];
	long long y = b[i];
	float *o = of + i * 12;
	o[0] = __int2float_rn(x);
	o[1] = __int2float_rz(x);
	o[2] = __int2float_rd(x);
	o[3] = __int2float_ru(x);
	o[4] = __uint2float_rn((unsigned)x);
	o[5] = __ll2float_rn(y);
	o[6] = __ll2float_rz(y);
	o[7] = __ull2float_ru((unsigned long long)y);
	o[8] = __double2float_rn((double)y * 1.000001);
	o[9] = __double2float_rz((double)y * 1.000001);
	o[10] = __double2float_rd((double)y * 1.000001);
	o[11] = __double2float_ru((double)y * 1.000001);
	double *q = od + i * 4;
	q[0] = __ll2double_rn(y);
	q[1] = __ll2double_rz(y);
	q[2] = __ull2double_rd((unsigned long long)y);
	q[3] = (double)x + (double)(float)x;
}
