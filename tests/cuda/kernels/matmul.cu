// SPDX-License-Identifier: MIT
// C = A * B for n x n row-major matrices, in 16 x 16 tiles staged through
// shared memory.
#define TILE 16

extern "C" __global__ void matmul_tiled(const float *A, const float *B, float *C, int n)
{
	__shared__ float As[TILE][TILE];
	__shared__ float Bs[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y;
	int col = blockIdx.x * TILE + threadIdx.x;
	float sum = 0.0f;

	for (int t = 0; t < n; t += TILE) {
		int ac = t + threadIdx.x, br = t + threadIdx.y;

		As[threadIdx.y][threadIdx.x] = row < n && ac < n ? A[row * n + ac] : 0.0f;
		Bs[threadIdx.y][threadIdx.x] = br < n && col < n ? B[br * n + col] : 0.0f;
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
		__syncthreads();
	}
	if (row < n && col < n)
		C[row * n + col] = sum;
}
