// Predicates and divergent control flow: per-lane branches, nested ifs,
// loops with different trip counts, early exits, selects.
extern "C" __global__ void diverge(const int *a, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int x = a[i], r = 0;
	if (x & 1) {
		r = x * 3;
		if (x & 2)
			r += 5;
		else
			r -= 7;
	} else {
		for (int k = 0; k < (x & 15); k++)
			r += k * x;
	}
	int s = 0;
	while (x > 1 && s < 200) {   /* Collatz steps, lane-dependent */
		x = (x & 1) ? 3 * x + 1 : x / 2;
		s++;
	}
	out[i] = r + (s << 16) + ((r > 100) ? 1 : 2);
}

extern "C" __global__ void early_exit(int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i % 3 == 0)
		return;
	if (i >= n)
		return;
	out[i] = i * 2;
}
