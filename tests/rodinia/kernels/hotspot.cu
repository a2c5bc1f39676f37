// SPDX-License-Identifier: MIT
// hotspot: transient heat on a chip, an explicit 5-point stencil over a
// rows x cols grid of temperatures driven by a power map. A launch
// advances `steps` time steps (the pyramid): each 16 x 16 block loads a
// tile with a halo of `height` cells into shared memory and iterates in
// it, the valid region shrinking by one cell per step, and writes the
// inner (16 - 2 * height)^2 cells. A neighbour outside the chip is the
// cell itself (insulated edges).
#define BLOCK 16

struct hotspot_coeff {
	float step_div_cap; // time step / heat capacity
	float rx_1, ry_1, rz_1; // 1 / thermal resistances
	float ambient;
};

extern "C" __global__ void calculate_temp(int steps, const float *power, const float *src,
                                          float *dst, int cols, int rows, int height,
                                          hotspot_coeff k)
{
	__shared__ float temp[BLOCK][BLOCK];
	__shared__ float pwr[BLOCK][BLOCK];
	__shared__ float next[BLOCK][BLOCK];
	int inner = BLOCK - 2 * height;
	int tx = threadIdx.x, ty = threadIdx.y;
	// the tile's first cell on the grid (may lie outside it)
	int x0 = inner * blockIdx.x - height;
	int y0 = inner * blockIdx.y - height;
	int x = x0 + tx, y = y0 + ty;
	bool on_grid = x >= 0 && x < cols && y >= 0 && y < rows;

	if (on_grid) {
		temp[ty][tx] = src[y * cols + x];
		pwr[ty][tx] = power[y * cols + x];
	}
	__syncthreads();

	// the part of the tile on the grid
	int vx0 = x0 < 0 ? -x0 : 0;
	int vy0 = y0 < 0 ? -y0 : 0;
	int vx1 = x0 + BLOCK > cols ? BLOCK - 1 - (x0 + BLOCK - cols) : BLOCK - 1;
	int vy1 = y0 + BLOCK > rows ? BLOCK - 1 - (y0 + BLOCK - rows) : BLOCK - 1;
	int w = tx - 1 < vx0 ? vx0 : tx - 1;
	int e = tx + 1 > vx1 ? vx1 : tx + 1;
	int n = ty - 1 < vy0 ? vy0 : ty - 1;
	int s = ty + 1 > vy1 ? vy1 : ty + 1;
	bool computed = false;

	for (int i = 0; i < steps; i++) {
		computed = false;
		if (tx >= i + 1 && tx <= BLOCK - i - 2 && ty >= i + 1 && ty <= BLOCK - i - 2 &&
		    on_grid) {
			float t = temp[ty][tx];

			computed = true;
			next[ty][tx] = t + k.step_div_cap *
				(pwr[ty][tx] + (temp[s][tx] + temp[n][tx] - 2.0f * t) * k.ry_1 +
				 (temp[ty][e] + temp[ty][w] - 2.0f * t) * k.rx_1 +
				 (k.ambient - t) * k.rz_1);
		}
		__syncthreads();
		if (i == steps - 1)
			break;
		if (computed)
			temp[ty][tx] = next[ty][tx];
		__syncthreads();
	}
	if (computed && tx >= height && tx < BLOCK - height && ty >= height && ty < BLOCK - height)
		dst[y * cols + x] = next[ty][tx];
}
