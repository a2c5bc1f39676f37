// SPDX-License-Identifier: MIT
// backprop: one training step of a two-layer perceptron (IN inputs, 16
// hidden units, the bias as unit 0 of each layer). The weights are a
// (IN + 1) x 17 row-major matrix: w[i * 17 + j] joins input i to hidden j.
// Blocks of 16 x 16 threads own 16 input rows; thread (tx, ty) is hidden
// unit tx + 1 and input row 16 * by + ty + 1.
#define HID 16
#define WIDTH (HID + 1)
#define ETA 0.3f
#define MOMENTUM 0.3f

// Forward pass, input to hidden layer: each block multiplies its 16 input
// values with their weights in shared memory and sums the 16 rows by a
// tree reduction; partial[by * HID + tx] is the block's sum for hidden
// unit tx + 1 (the host adds the blocks' sums and applies the sigmoid).
extern "C" __global__ void bpnn_layerforward(const float *input, float *partial,
                                             const float *weights, int in)
{
	__shared__ float node[HID];
	__shared__ float prod[HID][HID];
	int tx = threadIdx.x, ty = threadIdx.y, by = blockIdx.y;
	int row = HID * by + ty + 1;

	if (tx == 0)
		node[ty] = input[row];
	__syncthreads();
	prod[ty][tx] = weights[row * WIDTH + tx + 1] * node[ty];
	__syncthreads();
	for (int step = 1; step < HID; step *= 2) {
		if (ty % (2 * step) == 0)
			prod[ty][tx] += prod[ty + step][tx];
		__syncthreads();
	}
	if (ty == 0)
		partial[by * HID + tx] = prod[0][tx];
	(void)in;
}

// Weight update, hidden deltas back onto the input weights with momentum:
// dw = ETA * delta[j] * input[i] + MOMENTUM * old[i][j]; w += dw; old = dw.
// The first block's first row also updates the bias row (input 0 = 1).
extern "C" __global__ void bpnn_adjust_weights(const float *delta, const float *input,
                                               float *weights, float *old)
{
	int tx = threadIdx.x, ty = threadIdx.y, by = blockIdx.y;
	int row = HID * by + ty + 1;
	int col = tx + 1;
	int at = row * WIDTH + col;
	float dw = ETA * delta[col] * input[row] + MOMENTUM * old[at];

	weights[at] += dw;
	old[at] = dw;
	__syncthreads();
	if (by == 0 && ty == 0) {
		float db = ETA * delta[col] + MOMENTUM * old[col];

		weights[col] += db;
		old[col] = db;
	}
}
