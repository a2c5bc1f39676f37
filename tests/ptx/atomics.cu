// Atomics on global and shared memory: add (int, unsigned long long,
// float, double), min/max, exch, cas, and/or/xor, inc/dec, and red.
extern "C" __global__ void atomics(int *gi, unsigned *gu, unsigned long long *gl,
				   float *gf, double *gd, int *old, int n)
{
	__shared__ int sh[4];
	__shared__ float shf;
	__shared__ int shm;
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (threadIdx.x < 4)
		sh[threadIdx.x] = 0;
	if (threadIdx.x == 0) {
		shf = 0.0f;
		shm = 0;
	}
	__syncthreads();
	if (i < n) {
		atomicAdd(&gi[0], i);
		atomicMin(&gi[1], 1000 - i);
		atomicMax(&gi[2], i * 7 % 101);
		atomicAnd(&gi[3], ~(1 << (i & 31)));
		atomicOr(&gi[4], 1 << (i & 31));
		atomicXor(&gi[5], i * 2654435761u);
		atomicInc(&gu[0], 17);
		atomicDec(&gu[1], 13);
		atomicMax(&gu[2], (unsigned)i * 40503u);
		atomicAdd(&gl[0], (unsigned long long)i << 33);
		atomicAdd(&gf[0], 0.5f);
		atomicAdd(&gd[0], 0.25);
		old[i] = atomicCAS(&gi[6], i, i + 1) == i;  /* a chain: 0,1,2,... */
		atomicExch(&gi[7], 42);
		atomicAdd(&sh[i & 3], i);
		atomicMax(&shm, i);
		atomicAdd(&shf, 1.0f);
	}
	__syncthreads();
	if (threadIdx.x < 4)
		atomicAdd(&gi[8 + threadIdx.x], sh[threadIdx.x]);
	if (threadIdx.x == 0) {
		atomicAdd(&gf[1], shf);
		atomicMax(&gi[12], shm);
	}
}
