// SPDX-License-Identifier: MIT
// srad_v1: speckle-reducing anisotropic diffusion of an image of rows x
// cols pixels, stored column by column (pixel (r, c) at c * rows + r),
// one thread per pixel. Per iteration: prepare and reduce give the
// image's sum and sum of squares (the host derives q0^2 from them), srad
// computes the four directional derivatives and the diffusion
// coefficient, srad2 applies the divergence. extract and compress move
// the image into and out of the exponential domain.
#define REDUCE_BLOCK 512

extern "C" __global__ void extract(float *img, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		img[i] = expf(img[i] / 255.0f);
}

extern "C" __global__ void prepare(const float *img, float *sums, float *sums2, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		sums[i] = img[i];
		sums2[i] = img[i] * img[i];
	}
}

// One reduction pass: block b adds the `count` values sums[(b * 512 + t) *
// mul] (t < 512) into sums[b * 512 * mul]; the host launches passes with
// mul = 1, 512, 512^2, ... until one value is left.
extern "C" __global__ void reduce(float *sums, float *sums2, long count, long mul)
{
	__shared__ float s[REDUCE_BLOCK];
	__shared__ float s2[REDUCE_BLOCK];
	long slot = (long)blockIdx.x * REDUCE_BLOCK + threadIdx.x;
	int t = threadIdx.x;

	s[t] = slot < count ? sums[slot * mul] : 0.0f;
	s2[t] = slot < count ? sums2[slot * mul] : 0.0f;
	__syncthreads();
	for (int half = REDUCE_BLOCK / 2; half > 0; half /= 2) {
		if (t < half) {
			s[t] += s[t + half];
			s2[t] += s2[t + half];
		}
		__syncthreads();
	}
	if (t == 0) {
		sums[(long)blockIdx.x * REDUCE_BLOCK * mul] = s[0];
		sums2[(long)blockIdx.x * REDUCE_BLOCK * mul] = s2[0];
	}
}

// The neighbours' rows and columns come from index arrays (north, south,
// west, east; clamped at the border), as in the original.
extern "C" __global__ void srad(int rows, int cols, const int *in, const int *is, const int *jw,
                                const int *je, float *dn, float *ds, float *dw, float *de,
                                float q0sqr, float *c, const float *img)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= rows * cols)
		return;
	int row = i % rows, col = i / rows;
	float jc = img[i];
	float n = img[col * rows + in[row]] - jc;
	float s = img[col * rows + is[row]] - jc;
	float w = img[jw[col] * rows + row] - jc;
	float e = img[je[col] * rows + row] - jc;
	float g2 = (n * n + s * s + w * w + e * e) / (jc * jc);
	float l = (n + s + w + e) / jc;
	float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
	float den = 1.0f + 0.25f * l;
	float qsqr = num / (den * den);
	float cc;

	den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
	cc = 1.0f / (1.0f + den);
	cc = cc < 0.0f ? 0.0f : cc > 1.0f ? 1.0f : cc;
	dn[i] = n;
	ds[i] = s;
	dw[i] = w;
	de[i] = e;
	c[i] = cc;
}

extern "C" __global__ void srad2(float lambda, int rows, int cols, const int *is, const int *je,
                                 const float *dn, const float *ds, const float *dw,
                                 const float *de, const float *c, float *img)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= rows * cols)
		return;
	int row = i % rows, col = i / rows;
	float cn = c[i];
	float cs = c[col * rows + is[row]];
	float cw = c[i];
	float ce = c[je[col] * rows + row];
	float d = cn * dn[i] + cs * ds[i] + cw * dw[i] + ce * de[i];

	img[i] = img[i] + 0.25f * lambda * d;
}

extern "C" __global__ void compress(float *img, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		img[i] = logf(img[i]) * 255.0f;
}
