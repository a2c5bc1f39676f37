#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuda-lib-proc-names: every cu* function libcuda.so.1 exports resolves
through cuGetProcAddress_v2 by its base name (the name a program or
cuda-python asks for: "cuMemAlloc" for cuMemAlloc_v2) at CUDA 13000, and
an unknown name fails cleanly with CUDA_ERROR_NOT_FOUND and
CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND. NVIDIA's Python bindings resolve
every function they wrap this way.

Usage: proc_names.py <libcuda.so.1>   (needs nm; exit 77 without it)
"""
import ctypes
import re
import shutil
import subprocess
import sys

CUDA_ERROR_NOT_FOUND = 500


def main():
    lib_path = sys.argv[1]
    if not shutil.which('nm'):
        print('no nm on this machine: skipped')
        return 77
    out = subprocess.run(['nm', '-D', '--defined-only', lib_path], check=True,
                         capture_output=True, text=True).stdout
    names = sorted({line.split()[-1] for line in out.splitlines()
                    if re.search(r' T cu[A-Z]\w*$', line)})
    lib = ctypes.CDLL(lib_path)
    gpa = lib.cuGetProcAddress_v2
    gpa.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                    ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]
    gpa.restype = ctypes.c_int
    bad = []
    bases = sorted({re.sub(r'_v\d+$', '', n) for n in names})
    for base in bases:
        fn, status = ctypes.c_void_p(), ctypes.c_int(-1)
        res = gpa(base.encode(), ctypes.byref(fn), 13000, 0, ctypes.byref(status))
        if res != 0 or not fn.value or status.value != 0:
            bad.append('%s: CUresult %d, status %d' % (base, res, status.value))
    fn, status = ctypes.c_void_p(123), ctypes.c_int(-1)
    res = gpa(b'cuNoSuchFunction', ctypes.byref(fn), 13000, 0, ctypes.byref(status))
    if res != CUDA_ERROR_NOT_FOUND or fn.value or status.value != 1:
        bad.append('unknown name: CUresult %d, status %d' % (res, status.value))
    for b in bad:
        print('FAIL', b)
    print('cuda-lib-proc-names: %d exported symbols, %d base names, %d failures'
          % (len(names), len(bases), len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
