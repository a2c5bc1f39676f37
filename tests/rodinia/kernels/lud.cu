// SPDX-License-Identifier: MIT
// lud: LU decomposition in place (no pivoting, unit lower triangle) of an
// n x n row-major matrix, n a multiple of 16, in 16 x 16 tiles. Step
// `offset` (0, 16, 32, ...) factors the diagonal tile, then the tiles of
// its row and column against it, then updates every tile right of and
// below them.
#define BS 16

// The diagonal tile at (offset, offset): one block of 16 threads.
extern "C" __global__ void lud_diagonal(float *m, int n, int offset)
{
	__shared__ float t[BS][BS];
	int tx = threadIdx.x;
	float *base = m + offset * n + offset;

	for (int i = 0; i < BS; i++)
		t[i][tx] = base[i * n + tx];
	__syncthreads();
	for (int i = 0; i < BS - 1; i++) {
		if (tx > i) {
			for (int j = 0; j < i; j++)
				t[tx][i] -= t[tx][j] * t[j][i];
			t[tx][i] /= t[i][i];
		}
		__syncthreads();
		if (tx > i) {
			for (int j = 0; j < i + 1; j++)
				t[i + 1][tx] -= t[i + 1][j] * t[j][tx];
		}
		__syncthreads();
	}
	for (int i = 1; i < BS; i++)
		base[i * n + tx] = t[i][tx];
}

// The perimeter: block b (of the tiles right of / below the diagonal
// one) solves the row tile (offset, offset + 16 (b + 1)) with threads
// 0..15 (forward substitution with L of the diagonal tile) and the column
// tile (offset + 16 (b + 1), offset) with threads 16..31 (with its U).
extern "C" __global__ void lud_perimeter(float *m, int n, int offset)
{
	__shared__ float dia[BS][BS];
	__shared__ float row[BS][BS];
	__shared__ float col[BS][BS];
	int tx = threadIdx.x, b = blockIdx.x;
	float *diag = m + offset * n + offset;
	float *rtile = diag + BS * (b + 1);
	float *ctile = diag + BS * (b + 1) * n;

	if (tx < BS) {
		for (int i = 0; i < BS / 2; i++)
			dia[i][tx] = diag[i * n + tx];
		for (int i = 0; i < BS; i++)
			row[i][tx] = rtile[i * n + tx];
	} else {
		int c = tx - BS;

		for (int i = BS / 2; i < BS; i++)
			dia[i][c] = diag[i * n + c];
		for (int i = 0; i < BS; i++)
			col[i][c] = ctile[i * n + c];
	}
	__syncthreads();
	if (tx < BS) {
		// row tile column tx: L(dia) x = row
		for (int i = 1; i < BS; i++)
			for (int j = 0; j < i; j++)
				row[i][tx] -= dia[i][j] * row[j][tx];
	} else {
		// column tile row c: x U(dia) = col
		int c = tx - BS;

		for (int i = 0; i < BS; i++) {
			for (int j = 0; j < i; j++)
				col[c][i] -= col[c][j] * dia[j][i];
			col[c][i] /= dia[i][i];
		}
	}
	__syncthreads();
	if (tx < BS) {
		for (int i = 1; i < BS; i++)
			rtile[i * n + tx] = row[i][tx];
	} else {
		int c = tx - BS;

		for (int i = 0; i < BS; i++)
			ctile[i * n + c] = col[i][c];
	}
}

// The trailing matrix: tile (bx, by) beyond the perimeter loses the
// product of its column tile's L part and its row tile's U part.
extern "C" __global__ void lud_internal(float *m, int n, int offset)
{
	__shared__ float l[BS][BS];
	__shared__ float u[BS][BS];
	int tx = threadIdx.x, ty = threadIdx.y;
	int r = offset + BS * (blockIdx.y + 1) + ty;
	int c = offset + BS * (blockIdx.x + 1) + tx;
	float sum = 0.0f;

	l[ty][tx] = m[r * n + offset + tx];
	u[ty][tx] = m[(offset + ty) * n + c];
	__syncthreads();
	for (int k = 0; k < BS; k++)
		sum += l[ty][k] * u[k][tx];
	m[r * n + c] -= sum;
}
