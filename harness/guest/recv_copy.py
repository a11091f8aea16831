#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The baseline of the devmem-rx benchmark: receive one TCP connection
with plain recv() straight into a udmabuf mapped in memory, the copy that
devmem TCP avoids, until the peer closes it.

Usage: recv_copy.py ADDR PORT MIB

ADDR and PORT are where to listen; MIB is the size of the udmabuf, which
the data fills round and round. Prints the bytes received."""

import mmap
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import udmabuf  # noqa: E402  pylint: disable=wrong-import-position

CHUNK = 256 * 1024


def main():
    addr, port, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    size = mib * 1024 * 1024
    fd = udmabuf.create(size // udmabuf.PAGE_SIZE)
    mem = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    view = memoryview(mem)
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as lsn:
        lsn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsn.bind((addr, port))
        lsn.listen(1)
        conn, _ = lsn.accept()
        total = off = 0
        with conn:
            while True:
                n = conn.recv_into(view[off:off + CHUNK])
                if n == 0:
                    break
                total += n
                off += n
                if off + CHUNK > size:
                    off = 0
    view.release()
    mem.close()
    os.close(fd)
    print(total)


if __name__ == '__main__':
    main()
