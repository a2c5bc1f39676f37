// Double precision with every rounding mode.
extern "C" __global__ void f64_ops(const double *a, const double *b, const double *c,
				   double *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	double x = a[i], y = b[i], z = c[i];
	double *o = out + i * 20;
	o[0] = __dadd_rn(x, y);
	o[1] = __dadd_rz(x, y);
	o[2] = __dadd_rd(x, y);
	o[3] = __dadd_ru(x, y);
	o[4] = __dmul_rn(x, y);
	o[5] = __dmul_rz(x, y);
	o[6] = __dmul_rd(x, y);
	o[7] = __dmul_ru(x, y);
	o[8] = __ddiv_rn(x, y);
	o[9] = __ddiv_rz(x, y);
	o[10] = __ddiv_rd(x, y);
	o[11] = __ddiv_ru(x, y);
	o[12] = __fma_rn(x, y, z);
	o[13] = __fma_rz(x, y, z);
	o[14] = __fma_rd(x, y, z);
	o[15] = __fma_ru(x, y, z);
	o[16] = __dsqrt_rn(fabs(x));
	o[17] = __drcp_rn(y);
	o[18] = fmin(x, y) + fmax(y, z);
	o[19] = -fabs(z);
}
