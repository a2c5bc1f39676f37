#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuda-python: vector add (float32) compiled with NVRTC, run through
whichever libcuda.so.1 is loaded, compared with the CPU bit for bit."""
import ctypes
import random

from cp_common import (Args, HostArray, check, devptr, driver, f32, finish, load, main,
                       compile_ptx, start)

SOURCE = r'''
extern "C" __global__ void vadd(const float *a, const float *b, float *c, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
'''
N = 1 << 16


def body():
    dev, _ = start()
    module, (vadd,) = load(compile_ptx(SOURCE, 'vadd.cu'), 'vadd')
    rnd = random.Random(1)
    a = HostArray(ctypes.c_float, [f32(rnd.uniform(-1e3, 1e3)) for _ in range(N)])
    b = HostArray(ctypes.c_float, [f32(rnd.uniform(-1e3, 1e3)) for _ in range(N)])
    c = HostArray(ctypes.c_float, [0.0] * N)
    da, db, dc = (check(driver.cuMemAlloc(a.nbytes)) for _ in range(3))
    check(driver.cuMemcpyHtoD(da, a.address, a.nbytes))
    check(driver.cuMemcpyHtoD(db, b.address, b.nbytes))
    args = Args(devptr(da), devptr(db), devptr(dc), ctypes.c_uint32(N))
    check(driver.cuLaunchKernel(vadd, (N + 255) // 256, 1, 1, 256, 1, 1, 0, 0,
                                args.address, 0))
    check(driver.cuMemcpyDtoH(c.address, dc, c.nbytes))
    got = c.tolist()
    want = [f32(x + y) for x, y in zip(a.tolist(), b.tolist())]
    ok = got == want
    for d in (da, db, dc):
        check(driver.cuMemFree(d))
    check(driver.cuModuleUnload(module))
    finish(dev)
    return ok, round(sum(got), 3)


if __name__ == '__main__':
    main('vector_add', body)
