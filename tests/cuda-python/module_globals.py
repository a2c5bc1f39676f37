#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuda-python: module globals. A __device__ scale set from the host
through cuModuleGetGlobal, a __device__ counter read back; the kernel
computes out[i] = in[i] * scale + i."""
import ctypes

from cp_common import (Args, HostArray, check, devptr, driver, finish, load, main,
                       compile_ptx, start)

SOURCE = r'''
__device__ int scale;
__device__ unsigned int calls;
extern "C" __global__ void affine(const int *in, int *out, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * scale + (int)i;
    if (i == 0)
        atomicAdd(&calls, 1u);
}
'''
N = 4099


def body():
    dev, _ = start()
    module, (kernel,) = load(compile_ptx(SOURCE, 'affine.cu'), 'affine')
    dscale, scale_bytes = check(driver.cuModuleGetGlobal(module, b'scale'))
    dcalls, calls_bytes = check(driver.cuModuleGetGlobal(module, b'calls'))
    ok = scale_bytes == 4 and calls_bytes == 4
    src = HostArray(ctypes.c_int32, [(i * 37) % 1001 - 500 for i in range(N)])
    out = HostArray(ctypes.c_int32, [0] * N)
    din = check(driver.cuMemAlloc(src.nbytes))
    dout = check(driver.cuMemAlloc(out.nbytes))
    check(driver.cuMemcpyHtoD(din, src.address, src.nbytes))
    check(driver.cuMemsetD32(dcalls, 0, 1))
    args = Args(devptr(din), devptr(dout), ctypes.c_uint32(N))
    for scale in (3, -7):
        value = ctypes.c_int32(scale)
        check(driver.cuMemcpyHtoD(dscale, ctypes.addressof(value), 4))
        check(driver.cuLaunchKernel(kernel, (N + 127) // 128, 1, 1, 128, 1, 1, 0, 0,
                                    args.address, 0))
        check(driver.cuMemcpyDtoH(out.address, dout, out.nbytes))
        ok = ok and out.tolist() == [x * scale + i for i, x in enumerate(src.tolist())]
    calls = ctypes.c_uint32(0)
    check(driver.cuMemcpyDtoH(ctypes.addressof(calls), dcalls, 4))
    ok = ok and calls.value == 2
    check(driver.cuMemFree(din))
    check(driver.cuMemFree(dout))
    check(driver.cuModuleUnload(module))
    finish(dev)
    return ok, sum(out.tolist())


if __name__ == '__main__':
    main('module_globals', body)
