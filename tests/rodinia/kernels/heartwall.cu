// SPDX-License-Identifier: MIT
// heartwall (simplified): tracks `points` sample points of a heart wall
// through a video, one frame per launch, by template matching. Block p
// tracks point p: its template (a T x T patch cut from the first frame
// around the point's first position, in shared memory) is compared, as a
// sum of squared differences, against every displacement within
// +-radius of the point's last position in the current frame; the block
// reduces to the best displacement (smallest sum, then smallest index)
// and moves the point there. Positions stay inside the frame.
#define MAX_T 16
#define MAX_THREADS 1024

extern "C" __global__ void heartwall_track(const unsigned char *frame, int width, int height,
                                           const unsigned char *templates, int t, int radius,
                                           int *pos_x, int *pos_y, int *track, int frame_no,
                                           int points)
{
	__shared__ unsigned char tpl[MAX_T * MAX_T];
	__shared__ unsigned int best[MAX_THREADS];
	__shared__ int best_at[MAX_THREADS];
	int p = blockIdx.x, tid = threadIdx.x;
	int side = 2 * radius + 1;
	int half = t / 2;
	int px = pos_x[p], py = pos_y[p];
	unsigned int mine = 0xffffffffu;
	int mine_at = 0x7fffffff;

	for (int i = tid; i < t * t; i += blockDim.x)
		tpl[i] = templates[p * t * t + i];
	__syncthreads();
	for (int d = tid; d < side * side; d += blockDim.x) {
		int cx = px + d % side - radius, cy = py + d / side - radius;
		unsigned int ssd = 0;

		if (cx - half < 0 || cy - half < 0 || cx - half + t > width ||
		    cy - half + t > height)
			continue;
		for (int v = 0; v < t; v++)
			for (int u = 0; u < t; u++) {
				int diff = (int)frame[(cy - half + v) * width + cx - half + u] -
				           (int)tpl[v * t + u];

				ssd += (unsigned int)(diff * diff);
			}
		if (ssd < mine || (ssd == mine && d < mine_at)) {
			mine = ssd;
			mine_at = d;
		}
	}
	best[tid] = mine;
	best_at[tid] = mine_at;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s /= 2) {
		if (tid < s) {
			unsigned int o = best[tid + s];
			int oa = best_at[tid + s];

			if (o < best[tid] || (o == best[tid] && oa < best_at[tid])) {
				best[tid] = o;
				best_at[tid] = oa;
			}
		}
		__syncthreads();
	}
	if (tid == 0) {
		if (best_at[0] != 0x7fffffff) {
			px += best_at[0] % side - radius;
			py += best_at[0] / side - radius;
		}
		pos_x[p] = px;
		pos_y[p] = py;
		track[(frame_no * points + p) * 2] = px;
		track[(frame_no * points + p) * 2 + 1] = py;
	}
	(void)points;
}
