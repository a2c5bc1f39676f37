// SPDX-License-Identifier: MIT
// One Jacobi step of a 5-point stencil on a w x h grid with fixed
// borders: out = (n + s + e + w) / 4 inside, out = in on the border.
extern "C" __global__ void jacobi5(const float *in, float *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x >= w || y >= h)
		return;
	int i = y * w + x;
	if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
		out[i] = in[i];
	else
		out[i] = 0.25f * (in[i - w] + in[i + w] + in[i - 1] + in[i + 1]);
}
