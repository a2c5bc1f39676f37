# SPDX-License-Identifier: MIT
"""What the cuda-python programs of tests/cuda-python share.

Each program uses NVIDIA's Python bindings (cuda.bindings.driver and
cuda.bindings.nvrtc) the way a user writes them: compile CUDA C++ with
NVRTC for compute_75, load the PTX with cuModuleLoadData, launch, copy
back, compare with a CPU reference (NumPy when it imports, else plain
Python lists). Whichever libcuda.so.1 the process loads runs them: the
project's (LD_LIBRARY_PATH=build/plain/guest-driver/cuda and
VGPUD_SOCKET=...) or NVIDIA's, the reference.

The last line a program prints is
    RESULT {"program": ..., "ok": true/false, "checksum": ..., "seconds": ...}
(run.sh compares the checksums and times of both runs). Exit: 0 ok,
1 a wrong result or a failed call, 77 cuda.bindings does not import.
"""
import ctypes
import json
import sys
import time

try:
    from cuda.bindings import driver, nvrtc
except ImportError as e:  # pragma: no cover - depends on the machine
    print('cuda.bindings does not import (%s): skipped' % e)
    sys.exit(77)

try:
    import numpy as np
except ImportError:  # pure Python lists then
    np = None


class CudaError(RuntimeError):
    pass


def check(result):
    """The bindings return (err, values...): raise on an error, return the
    values (one value alone, several as a tuple, none as None)."""
    err, rest = result[0], result[1:]
    if isinstance(err, driver.CUresult) and err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        raise CudaError('CUDA error %s' % (name.decode() if name else int(err)))
    if isinstance(err, nvrtc.nvrtcResult) and err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, text = nvrtc.nvrtcGetErrorString(err)
        raise CudaError('NVRTC error %s' % (text.decode() if text else int(err)))
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def start():
    """cuInit, device 0, its primary context made current."""
    check(driver.cuInit(0))
    dev = check(driver.cuDeviceGet(0))
    name = check(driver.cuDeviceGetName(128, dev))
    ctx = check(driver.cuDevicePrimaryCtxRetain(dev))
    check(driver.cuCtxSetCurrent(ctx))
    print('device: %s' % name.split(b'\0')[0].decode())
    return dev, ctx


def finish(dev):
    check(driver.cuCtxSynchronize())
    check(driver.cuDevicePrimaryCtxRelease(dev))


def compile_ptx(source, name, options=()):
    """CUDA C++ -> PTX bytes with NVRTC (compute_75, no FMA contraction)."""
    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []))
    opts = [b'--gpu-architecture=compute_75', b'--fmad=false'] + [o.encode() for o in options]
    err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    log_size = check(nvrtc.nvrtcGetProgramLogSize(prog))
    if log_size > 1:
        log = b' ' * log_size
        check(nvrtc.nvrtcGetProgramLog(prog, log))
        print(log.decode(errors='replace'))
    check(err)
    size = check(nvrtc.nvrtcGetPTXSize(prog))
    ptx = b' ' * size
    check(nvrtc.nvrtcGetPTX(prog, ptx))
    check(nvrtc.nvrtcDestroyProgram(prog))
    return ptx


def load(ptx, *functions):
    module = check(driver.cuModuleLoadData(ptx))
    return module, [check(driver.cuModuleGetFunction(module, f.encode())) for f in functions]


class Args:
    """A kernelParams array built with ctypes (no NumPy needed): each
    argument a ctypes value, the array of their addresses."""

    def __init__(self, *values):
        self.values = list(values)
        self.ptrs = (ctypes.c_void_p * len(values))(
            *[ctypes.addressof(v) for v in self.values])

    @property
    def address(self):
        return ctypes.addressof(self.ptrs)


def devptr(d):
    return ctypes.c_uint64(int(d))


class HostArray:
    """A host array of n elements of ctype: NumPy when present, else a
    ctypes array (both give an address for the copies)."""

    def __init__(self, ctype, values):
        values = list(values)
        self.n = len(values)
        self.ctype = ctype
        self.nbytes = self.n * ctypes.sizeof(ctype)
        if np is not None:
            dtype = {ctypes.c_float: np.float32, ctypes.c_uint32: np.uint32,
                     ctypes.c_int32: np.int32}[ctype]
            self.data = np.array(values, dtype=dtype)
            self.address = self.data.ctypes.data
        else:
            self.data = (ctype * self.n)(*values)
            self.address = ctypes.addressof(self.data)

    def tolist(self):
        return [v.item() if hasattr(v, 'item') else v for v in self.data]


def f32(x):
    """x rounded to float32 (the CPU reference computes in float)."""
    return ctypes.c_float(x).value


def report(program, ok, checksum, seconds):
    print('RESULT ' + json.dumps({'program': program, 'ok': bool(ok),
                                  'checksum': checksum, 'seconds': round(seconds, 6)}))
    return 0 if ok else 1


def main(program, body):
    """Run body() -> (ok, checksum), timed; exit with the program's status."""
    t0 = time.monotonic()
    try:
        ok, checksum = body()
    except CudaError as e:
        print('%s: %s' % (program, e))
        ok, checksum = False, None
    sys.exit(report(program, ok, checksum, time.monotonic() - t0))
