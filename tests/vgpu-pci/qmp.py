#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""qmp.py SOCKET JSON - send one QMP command to the QEMU listening on the
unix socket SOCKET (after qmp_capabilities) and print its reply as one
JSON line; events in between are skipped. 20 s timeout per read.
Used by migrate.sh and migrate-bench.sh."""
import json
import socket
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: qmp.py SOCKET JSON")
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(sys.argv[1])
    f = s.makefile("rw")
    f.readline()  # the greeting

    def cmd(c):
        f.write(c + "\n")
        f.flush()
        while True:
            r = json.loads(f.readline())
            if "return" in r or "error" in r:
                return r

    cmd('{"execute":"qmp_capabilities"}')
    print(json.dumps(cmd(sys.argv[2])))


main()
