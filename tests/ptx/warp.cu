// Warp-level primitives: shuffles (idx, up, down, xor, with widths),
// votes (all, any, ballot), activemask in divergent code, syncwarp.
extern "C" __global__ void warp_ops(const int *a, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int lane = threadIdx.x & 31;
	int x = i < n ? a[i] : 0;
	int *o = out + i * 10;
	int v0 = __shfl_sync(0xffffffff, x, (lane * 7) & 31);
	int v1 = __shfl_up_sync(0xffffffff, x, 3);
	int v2 = __shfl_down_sync(0xffffffff, x, 5);
	int v3 = __shfl_xor_sync(0xffffffff, x, 9);
	int v4 = __shfl_sync(0xffffffff, x, 2, 8);
	int v5 = __shfl_down_sync(0xffffffff, x, 1, 16);
	unsigned b = __ballot_sync(0xffffffff, x & 1);
	int all = __all_sync(0xffffffff, x >= 0);
	int any = __any_sync(0xffffffff, x > 1000);
	unsigned am = 0;
	if (x & 2)
		am = __activemask();
	__syncwarp();
	if (i < n) {
		o[0] = v0; o[1] = v1; o[2] = v2; o[3] = v3; o[4] = v4; o[5] = v5;
		o[6] = (int)b; o[7] = all; o[8] = any; o[9] = (int)am;
	}
}
