#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuda-python: two streams, each copying its half in, squaring it and
copying it out asynchronously, one waiting on the other's event; timing
events around the work. Compared with the CPU exactly (uint32 squares,
modulo 2^32)."""
import ctypes

from cp_common import (Args, HostArray, check, devptr, driver, finish, load, main,
                       compile_ptx, start)

SOURCE = r'''
extern "C" __global__ void square(unsigned int *v, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = v[i] * v[i];
}
'''
HALF = 50000


def body():
    dev, _ = start()
    module, (kernel,) = load(compile_ptx(SOURCE, 'square.cu'), 'square')
    host = [HostArray(ctypes.c_uint32, [(k * HALF + i) * 2654435761 % (1 << 32)
                                        for i in range(HALF)]) for k in range(2)]
    outs = [HostArray(ctypes.c_uint32, [0] * HALF) for _ in range(2)]
    dev_bufs = [check(driver.cuMemAlloc(h.nbytes)) for h in host]
    streams = [check(driver.cuStreamCreate(driver.CUstream_flags.CU_STREAM_NON_BLOCKING))
               for _ in range(2)]
    t0, t1, handoff = (check(driver.cuEventCreate(0)) for _ in range(3))
    check(driver.cuEventRecord(t0, streams[0]))
    keep = []
    for k in range(2):
        s = streams[k]
        if k == 1:
            check(driver.cuStreamWaitEvent(s, handoff, 0))
        check(driver.cuMemcpyHtoDAsync(dev_bufs[k], host[k].address, host[k].nbytes, s))
        args = Args(devptr(dev_bufs[k]), ctypes.c_uint32(HALF))
        keep.append(args)
        check(driver.cuLaunchKernel(kernel, (HALF + 255) // 256, 1, 1, 256, 1, 1, 0, s,
                                    args.address, 0))
        check(driver.cuMemcpyDtoHAsync(outs[k].address, dev_bufs[k], outs[k].nbytes, s))
        if k == 0:
            check(driver.cuEventRecord(handoff, s))
    check(driver.cuEventRecord(t1, streams[1]))
    for s in streams:
        check(driver.cuStreamSynchronize(s))
    check(driver.cuEventSynchronize(t1))
    ms = check(driver.cuEventElapsedTime(t0, t1))
    print('elapsed %.3f ms' % ms)
    ok = ms >= 0
    for k in range(2):
        ok = ok and outs[k].tolist() == [v * v % (1 << 32) for v in host[k].tolist()]
    for e in (t0, t1, handoff):
        check(driver.cuEventDestroy(e))
    for s in streams:
        check(driver.cuStreamDestroy(s))
    for d in dev_bufs:
        check(driver.cuMemFree(d))
    check(driver.cuModuleUnload(module))
    finish(dev)
    return ok, sum(outs[0].tolist()) + sum(outs[1].tolist())


if __name__ == '__main__':
    main('streams_events', body)
