# SPDX-License-Identifier: GPL-2.0
"""udmabuf for the guest-side tools: a dma-buf of host pages, from a memfd
(/dev/udmabuf's UDMABUF_CREATE)."""

import ctypes
import fcntl
import os
import struct

PAGE_SIZE = os.sysconf('SC_PAGE_SIZE')
# UDMABUF_CREATE = _IOW('u', 0x42, struct udmabuf_create), 24 bytes:
# u32 memfd, u32 flags, u64 offset, u64 size.
UDMABUF_CREATE = 0x40187542


def create(pages):
    """A dma-buf of `pages` pages; returns its fd."""
    memfd = os.memfd_create('devmem-rs', os.MFD_ALLOW_SEALING)
    os.ftruncate(memfd, pages * PAGE_SIZE)
    fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    dev = os.open('/dev/udmabuf', os.O_RDWR)
    try:
        arg = struct.pack('=IIQQ', memfd, 0, 0, pages * PAGE_SIZE)
        # The ioctl returns the new fd (fcntl.ioctl would return the
        # argument buffer instead).
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(arg, len(arg))
        fd = libc.ioctl(dev, ctypes.c_ulong(UDMABUF_CREATE), buf)
        if fd < 0:
            raise OSError(ctypes.get_errno(), 'UDMABUF_CREATE')
        return fd
    finally:
        os.close(dev)
        os.close(memfd)
