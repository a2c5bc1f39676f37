#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuda-python: a shared-memory block sum with a global atomic (uint32,
modulo 2^32), compared with the CPU's sum exactly."""
import ctypes
import random

from cp_common import (Args, HostArray, check, devptr, driver, finish, load, main,
                       compile_ptx, start)

SOURCE = r'''
#define BLOCK 256
extern "C" __global__ void sum(const unsigned int *in, unsigned int *total, unsigned int n)
{
    __shared__ unsigned int s[BLOCK];
    unsigned int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(total, s[0]);
}
'''
N = 1000003


def body():
    dev, _ = start()
    module, (kernel,) = load(compile_ptx(SOURCE, 'sum.cu'), 'sum')
    rnd = random.Random(2)
    data = HostArray(ctypes.c_uint32, [rnd.getrandbits(32) for _ in range(N)])
    total = HostArray(ctypes.c_uint32, [0])
    din = check(driver.cuMemAlloc(data.nbytes))
    dtotal = check(driver.cuMemAlloc(4))
    check(driver.cuMemcpyHtoD(din, data.address, data.nbytes))
    check(driver.cuMemsetD32(dtotal, 0, 1))
    args = Args(devptr(din), devptr(dtotal), ctypes.c_uint32(N))
    check(driver.cuLaunchKernel(kernel, (N + 255) // 256, 1, 1, 256, 1, 1, 0, 0,
                                args.address, 0))
    check(driver.cuMemcpyDtoH(total.address, dtotal, 4))
    got = total.tolist()[0]
    want = sum(data.tolist()) % (1 << 32)
    check(driver.cuMemFree(din))
    check(driver.cuMemFree(dtotal))
    check(driver.cuModuleUnload(module))
    finish(dev)
    return got == want, got


if __name__ == '__main__':
    main('reduction', body)
