// nvcc-flags: -ftz=true
// Single precision with subnormals flushed (.ftz) and saturation.
extern "C" __global__ void f32_ftz(const float *a, const float *b, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = a[i], y = b[i];
	float *o = out + i * 6;
	o[0] = __fadd_rn(x, y);
	o[1] = __fmul_rn(x, y);
	o[2] = __fmaf_rn(x, y, x);
	o[3] = __saturatef(__fadd_rn(x, y));
	o[4] = fminf(x, y);
	o[5] = __fdiv_rn(x, y);
}
