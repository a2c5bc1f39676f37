// printf (its output is dropped by the executor) and assert (a failing
// assertion stops the launch with its text, file and line).
#include <cassert>
#include <cstdio>

extern "C" __global__ void checked_square(int *out, int n)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	assert(t < n);
	if (t % 16 == 0)
		printf("thread %d squares %d\n", t, t * t);
	out[t] = t * t;
}
