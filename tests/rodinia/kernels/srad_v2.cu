// SPDX-License-Identifier: MIT
// srad_v2: speckle-reducing anisotropic diffusion of a rows x cols image
// (row-major, both multiples of 16) in two kernels per iteration, 16 x 16
// blocks working on shared-memory tiles. The host computes q0^2 from a
// region of interest between iterations. A neighbour outside the image
// is the pixel itself.
#define BS 16

// Derivatives (north, south, west, east) and the diffusion coefficient.
// The block's tile and a one-pixel halo come through shared memory.
extern "C" __global__ void srad_cuda_1(float *e_c, float *w_c, float *n_c, float *s_c,
                                       const float *j, float *c, int cols, int rows,
                                       float q0sqr)
{
	__shared__ float t[BS + 2][BS + 2];
	int tx = threadIdx.x, ty = threadIdx.y;
	int x = blockIdx.x * BS + tx, y = blockIdx.y * BS + ty;
	int at = y * cols + x;

	t[ty + 1][tx + 1] = j[at];
	if (ty == 0)
		t[0][tx + 1] = j[(y > 0 ? y - 1 : y) * cols + x];
	if (ty == BS - 1)
		t[BS + 1][tx + 1] = j[(y < rows - 1 ? y + 1 : y) * cols + x];
	if (tx == 0)
		t[ty + 1][0] = j[y * cols + (x > 0 ? x - 1 : x)];
	if (tx == BS - 1)
		t[ty + 1][BS + 1] = j[y * cols + (x < cols - 1 ? x + 1 : x)];
	__syncthreads();

	float jc = t[ty + 1][tx + 1];
	float n = t[ty][tx + 1] - jc;
	float s = t[ty + 2][tx + 1] - jc;
	float w = t[ty + 1][tx] - jc;
	float e = t[ty + 1][tx + 2] - jc;
	float g2 = (n * n + s * s + w * w + e * e) / (jc * jc);
	float l = (n + s + w + e) / jc;
	float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
	float den = 1.0f + 0.25f * l;
	float qsqr = num / (den * den);
	float cc;

	den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
	cc = 1.0f / (1.0f + den);
	cc = cc < 0.0f ? 0.0f : cc > 1.0f ? 1.0f : cc;
	n_c[at] = n;
	s_c[at] = s;
	w_c[at] = w;
	e_c[at] = e;
	c[at] = cc;
}

// The divergence: the coefficients of the pixel, its south and its east
// neighbour (a shared tile with a halo on those two sides).
extern "C" __global__ void srad_cuda_2(const float *e_c, const float *w_c, const float *n_c,
                                       const float *s_c, float *j, const float *c, int cols,
                                       int rows, float lambda)
{
	__shared__ float t[BS + 1][BS + 1];
	int tx = threadIdx.x, ty = threadIdx.y;
	int x = blockIdx.x * BS + tx, y = blockIdx.y * BS + ty;
	int at = y * cols + x;

	t[ty][tx] = c[at];
	if (ty == BS - 1)
		t[BS][tx] = c[(y < rows - 1 ? y + 1 : y) * cols + x];
	if (tx == BS - 1)
		t[ty][BS] = c[y * cols + (x < cols - 1 ? x + 1 : x)];
	__syncthreads();

	float cn = t[ty][tx];
	float cs = t[ty + 1][tx];
	float cw = t[ty][tx];
	float ce = t[ty][tx + 1];
	float d = cn * n_c[at] + cs * s_c[at] + cw * w_c[at] + ce * e_c[at];

	j[at] = j[at] + 0.25f * lambda * d;
}
