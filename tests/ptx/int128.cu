// 128-bit integers: nvcc splits them with the carry flag (add.cc, addc.cc,
// sub.cc, subc.cc) and 64-bit high/low multiplies.
extern "C" __global__ void int128_ops(const unsigned __int128 *a,
				      const unsigned __int128 *b,
				      unsigned __int128 *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	unsigned __int128 x = a[i], y = b[i];
	out[i * 4] = x + y;
	out[i * 4 + 1] = x - y;
	out[i * 4 + 2] = x * y;
	out[i * 4 + 3] = (x >> 7) ^ (y << 9);
}
