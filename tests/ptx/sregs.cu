// Special registers in a 3-D grid of 3-D blocks.
extern "C" __global__ void sregs(unsigned *out)
{
	unsigned bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	unsigned nt = blockDim.x * blockDim.y * blockDim.z;
	unsigned *o = out + (bid * nt + tid) * 8;
	unsigned lane, warp;
	asm("mov.u32 %0, %%laneid;" : "=r"(lane));
	asm("mov.u32 %0, %%warpid;" : "=r"(warp));
	o[0] = threadIdx.x | threadIdx.y << 8 | threadIdx.z << 16;
	o[1] = blockDim.x | blockDim.y << 8 | blockDim.z << 16;
	o[2] = blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16;
	o[3] = gridDim.x | gridDim.y << 8 | gridDim.z << 16;
	o[4] = lane;
	o[5] = warp;
	o[6] = clock() != 0xdeadbeef;
	o[7] = tid;
}
