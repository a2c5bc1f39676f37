// Kernels as users write them.
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(int n, float alpha, const float *x, float *y)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += blockDim.x * gridDim.x)
		y[i] = alpha * x[i] + y[i];
}

/* Block sum: shared-memory tree down to a warp, then shuffles. */
extern "C" __global__ void reduce_sum(const int *in, int *out, int n)
{
	extern __shared__ int s[];
	int t = threadIdx.x;
	int i = blockIdx.x * blockDim.x * 2 + t;
	int v = 0;
	if (i < n)
		v = in[i];
	if (i + blockDim.x < n)
		v += in[i + blockDim.x];
	s[t] = v;
	__syncthreads();
	for (unsigned k = blockDim.x / 2; k >= 32; k >>= 1) {
		if (t < k)
			s[t] = v = v + s[t + k];
		__syncthreads();
	}
	if (t < 32) {
		for (int off = 16; off > 0; off >>= 1)
			v += __shfl_down_sync(0xffffffff, v, off);
		if (t == 0)
			out[blockIdx.x] = v;
	}
}

#define TILE 16
extern "C" __global__ void sgemm_tiled(const float *A, const float *B, float *C,
				       int M, int N, int K)
{
	__shared__ float As[TILE][TILE];
	__shared__ float Bs[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y;
	int col = blockIdx.x * TILE + threadIdx.x;
	float acc = 0.0f;
	for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
		int ak = t * TILE + threadIdx.x, bk = t * TILE + threadIdx.y;
		As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
		Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
		__syncthreads();
	}
	if (row < M && col < N)
		C[row * N + col] = acc;
}

extern "C" __global__ void stencil2d(const float *in, float *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= w || y >= h)
		return;
	if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
		out[y * w + x] = in[y * w + x];
		return;
	}
	out[y * w + x] = 0.5f * in[y * w + x] +
		0.125f * (in[y * w + x - 1] + in[y * w + x + 1] +
			  in[(y - 1) * w + x] + in[(y + 1) * w + x]);
}

extern "C" __global__ void histogram(const unsigned char *data, unsigned *bins, int n)
{
	__shared__ unsigned local[256];
	for (int k = threadIdx.x; k < 256; k += blockDim.x)
		local[k] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += blockDim.x * gridDim.x)
		atomicAdd(&local[data[i]], 1u);
	__syncthreads();
	for (int k = threadIdx.x; k < 256; k += blockDim.x)
		atomicAdd(&bins[k], local[k]);
}

/* One BFS level over a CSR graph; the host loops until *changed == 0. */
extern "C" __global__ void bfs_level(const int *row, const int *col, int *dist,
				     int level, int *changed, int n)
{
	int v = blockIdx.x * blockDim.x + threadIdx.x;
	if (v >= n || dist[v] != level)
		return;
	for (int e = row[v]; e < row[v + 1]; e++) {
		int u = col[e];
		if (dist[u] < 0) {
			dist[u] = level + 1;
			*changed = 1;
		}
	}
}

/* Needleman-Wunsch: one anti-diagonal of the score matrix per launch. */
extern "C" __global__ void nw_diagonal(int *score, const int *sim, int dim,
				       int diag, int penalty)
{
	int k = blockIdx.x * blockDim.x + threadIdx.x;
	int i = diag < dim ? diag - k : dim - 1 - k;
	int j = diag < dim ? k : diag - dim + 1 + k;
	if (i < 1 || j < 1 || i >= dim || j >= dim)
		return;
	int up = score[(i - 1) * dim + j] - penalty;
	int left = score[i * dim + j - 1] - penalty;
	int d = score[(i - 1) * dim + j - 1] + sim[i * dim + j];
	score[i * dim + j] = max(d, max(up, left));
}

/* Inclusive scan within a block (Hillis-Steele in shared memory). */
extern "C" __global__ void scan_block(const int *in, int *out, int n)
{
	__shared__ int buf[2][256];
	int t = threadIdx.x;
	int i = blockIdx.x * blockDim.x + t;
	int p = 0;
	buf[0][t] = i < n ? in[i] : 0;
	__syncthreads();
	for (int off = 1; off < blockDim.x; off <<= 1) {
		int v = buf[p][t];
		if (t >= off)
			v += buf[p][t - off];
		buf[1 - p][t] = v;
		p = 1 - p;
		__syncthreads();
	}
	if (i < n)
		out[i] = buf[p][t];
}

extern "C" __global__ void daxpy_dot(int n, double alpha, const double *x,
				     double *y, double *dot)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		y[i] = alpha * x[i] + y[i];
		dot[i] = x[i] * y[i];
	}
}

__device__ __noinline__ float weight(const float *w, int k)
{
	return w[k] * w[k] + 1.0f;
}

extern "C" __global__ void local_call(const float *in, float *out, int n)
{
	float w[12];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	for (int k = 0; k < 12; k++)
		w[k] = in[(i + k) % n];
	float s = 0.0f;
	for (int k = 0; k < 12; k += 1 + (i & 1))
		s += weight(w, (k * 5 + i) % 12);
	out[i] = s;
}
