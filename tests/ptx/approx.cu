// nvcc-flags: -use_fast_math
// The .approx math instructions (checked within their documented error).
extern "C" __global__ void approx(const float *a, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = a[i];
	float *o = out + i * 7;
	o[0] = __sinf(x);
	o[1] = __cosf(x);
	o[2] = __log2f(fabsf(x) + 1.0f);
	o[3] = exp2f(x * 0.1f);
	o[4] = rsqrtf(fabsf(x) + 1.0f);
	o[5] = __fdividef(x, 3.0f);
	o[6] = sqrtf(fabsf(x));
}
