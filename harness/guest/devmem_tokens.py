#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What a careless or hostile receiver can hand the devmem token uAPI.

Runs in the guest (run.sh exports NETIF, KSRC, LOCAL_V6, REMOTE_V6). A
udmabuf is bound to the last receive queue of the device under test, a
flow rule steers this suite's port there, and the peer (ns-remote) sends
flows of a known pattern. Each case calls SO_DEVMEM_DONTNEED or
recvmsg(MSG_SOCK_DEVMEM) the way a program may, with the values, ranges,
sizes and timing the system calls accept, and checks the answer against
upstream's code (net/core/sock.c sock_devmem_dontneed(), net/ipv4/tcp.c
tcp_recvmsg_dmabuf() and tcp_recvmsg_locked()):

- SO_DEVMEM_DONTNEED: EBADF on a socket that is not TCP; EINVAL for an
  optlen under an int, not a multiple of struct dmabuf_token or over 128
  of them; EFAULT for memory it cannot read; otherwise the number of
  tokens it freed, each index taken as u32 (a range wraps at U32_MAX),
  at most 1024 indices looked at per call, an index that holds no token
  skipped and left as it is: index 0, which the xarray
  (XA_FLAGS_ALLOC1) keeps busy, and the tokens a receive in progress has
  reserved (with the series' fix; before it, a range that reached index
  0 freed it for a receive to hand out, and one that reached a
  reservation leaked the frag's reference).
- recvmsg(): EFAULT for device memory received without MSG_SOCK_DEVMEM,
  ETOOSMALL (525, the kernel's own errno) when the control buffer cannot
  take a whole cmsg, EFAULT when it cannot be written; such a failed
  receive consumes nothing. A control buffer that faults after some
  cmsgs ends the receive there: the frags reported are received, the
  frag whose cmsg faulted is not (its token is taken back). A receive
  hands out one token per frag
  (MSG_PEEK too: a new token for the same bytes), the lowest free index
  first; a receive of 0 bytes returns 0 and hands out a token for an
  empty frag.

Every frag received is checked against the pattern where the cmsg says it
is in the udmabuf. The suite keeps its own account of the tokens it holds
and predicts each SO_DEVMEM_DONTNEED's answer from it. A case also fails
when the kernel became tainted while it ran (a WARN sets TAINT_WARN), and
the suite ends by checking that every page pool of the device that was
destroyed gives back all its buffers: a reference a token path lost keeps
its pool in flight for ever.

TAP on stdout.
"""

import ctypes
import errno
import fcntl
import mmap
import os
import socket
import struct
import subprocess
import sys
import threading
import time

KSRC = os.environ['KSRC']
NETIF = os.environ['NETIF']
LOCAL_V6 = os.environ['LOCAL_V6']
sys.path.insert(0, os.path.join(KSRC, 'tools/net/ynl/pyynl'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position,import-error
from lib import YnlFamily  # noqa: E402
import kmsg  # noqa: E402
import udmabuf  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What results.py fails the run for, looked for here in each case's window.
from results import KERNEL_SPLAT_RE  # noqa: E402

NETDEV_SPEC = os.path.join(KSRC, 'Documentation/netlink/specs/netdev.yaml')
ETHTOOL_SPEC = os.path.join(KSRC, 'Documentation/netlink/specs/ethtool.yaml')

# include/uapi/asm-generic/socket.h, include/linux/socket.h
SOL_SOCKET = 1
SO_DEVMEM_LINEAR = 78
SO_DEVMEM_DMABUF = 79
SO_DEVMEM_DONTNEED = 80
MSG_SOCK_DEVMEM = 0x2000000
# include/linux/errno.h: what put_cmsg_notrunc() returns, and user space
# gets, when no whole cmsg fits.
ETOOSMALL = 525
# net/core/sock.c
MAX_DONTNEED_TOKENS = 128
MAX_DONTNEED_FRAGS = 1024
# struct dmabuf_cmsg, struct dmabuf_token (include/uapi/linux/uio.h)
DMABUF_CMSG = struct.Struct('=QIIII')
TOKEN = struct.Struct('=II')
CMSG_HDR = struct.Struct('=Qii')
CMSG_SPACE = CMSG_HDR.size + DMABUF_CMSG.size
# DMA_BUF_IOCTL_SYNC, struct dma_buf_sync (include/uapi/linux/dma-buf.h)
DMA_BUF_IOCTL_SYNC = 0x40086200
DMA_BUF_SYNC_READ = 1
DMA_BUF_SYNC_END = 4
TAINT_WARN = 1 << 9

PORT = 5620
PAGES = 8192        # 32 MiB: the tokens held at once, the ring and a margin
PERIOD = 251        # the pattern: byte i of a flow is i % 251
PATTERN = bytes(i % PERIOD for i in range(PERIOD * 64))
# A flow of more frags than one call may free, and more than a 2-level
# xarray holds (64 * 64 entries): token walks cross a level of nodes.
BIG = 6 << 20
PLAN = 38           # the cases main() runs


class Iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]


class Msghdr(ctypes.Structure):
    _fields_ = [('name', ctypes.c_void_p), ('namelen', ctypes.c_uint32),
                ('iov', ctypes.POINTER(Iovec)), ('iovlen', ctypes.c_size_t),
                ('control', ctypes.c_void_p), ('controllen', ctypes.c_size_t),
                ('flags', ctypes.c_int)]


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.setsockopt.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int,
                            ctypes.c_void_p, ctypes.c_int]
LIBC.recvmsg.argtypes = [ctypes.c_int, ctypes.POINTER(Msghdr), ctypes.c_int]
LIBC.recvmsg.restype = ctypes.c_ssize_t
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
LIBC.mmap.restype = ctypes.c_void_p
LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
PAGE = mmap.PAGESIZE
# An address nothing is mapped at.
BAD_ADDR = 16


class Failed(Exception):
    pass


def errname(err):
    return errno.errorcode.get(err, 'ETOOSMALL' if err == ETOOSMALL else str(err))


def answer(ret, err):
    return str(ret) if ret >= 0 else f'-{errname(err)}'


def page_before_hole():
    """A page of anonymous memory whose next page is not mapped: munmap()
    the address returned, one page, when done."""
    two = LIBC.mmap(None, 2 * PAGE, mmap.PROT_READ | mmap.PROT_WRITE,
                    mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if two in (None, ctypes.c_void_p(-1).value):
        raise Failed('mmap failed')
    LIBC.munmap(two + PAGE, PAGE)
    return two


def dontneed_raw(fd, addr, optlen):
    """setsockopt(SO_DEVMEM_DONTNEED) of optlen bytes at addr: (return
    value, errno). Through libc, since Python's setsockopt() drops the
    count; the call releases the GIL, so two threads overlap in it."""
    ret = LIBC.setsockopt(fd, SOL_SOCKET, SO_DEVMEM_DONTNEED, addr, optlen)
    return ret, ctypes.get_errno() if ret < 0 else 0


def pack(ranges):
    return b''.join(TOKEN.pack(s & 0xffffffff, c & 0xffffffff) for s, c in ranges)


def dontneed(fd, ranges):
    buf = ctypes.create_string_buffer(pack(ranges), max(1, len(ranges) * TOKEN.size))
    return dontneed_raw(fd, ctypes.addressof(buf), len(ranges) * TOKEN.size)


def taint():
    with open('/proc/sys/kernel/tainted', encoding='ascii') as f:
        return int(f.read())


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout


# The peer's side of a flow: sends N bytes of the pattern, ends its half,
# then waits for the receiver to close (a reset is the receiver's choice).
SENDER = '''
import socket, sys
n = int(sys.argv[3])
pat = bytes(i % 251 for i in range(251 * 64))
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=120)
off = 0
while off < n:
    k = min(n - off, 65536)
    a = off % 251
    off += s.send(pat[a:a + k])
s.shutdown(socket.SHUT_WR)
try:
    while s.recv(65536):
        pass
except OSError:
    pass
'''


class Rig:
    """The device configured for the suite: header split, RSS on the other
    queues, this port's flows on the last queue, a udmabuf bound there
    (held by a netlink socket of its own), mapped to check the frags."""

    def __init__(self):
        self.ifindex = int(open(f'/sys/class/net/{NETIF}/ifindex', encoding='ascii').read())
        nq = len([q for q in os.listdir(f'/sys/class/net/{NETIF}/queues') if q.startswith('rx-')])
        if nq < 2:
            raise Failed(f'{NETIF} has {nq} receive queue(s); the bound one needs another beside it')
        self.queue = nq - 1
        self.eth = YnlFamily(ETHTOOL_SPEC, schema='')
        self.header = {'header': {'dev-name': NETIF}}
        self.split_was = self.eth.do('rings-get', self.header).get('tcp-data-split')
        self.rule = None
        self.nl = None
        self.buf = None
        self.map = None
        self.id = None
        self.pool_ids = set()
        self.eth.do('rings-set', {**self.header, 'tcp-data-split': 'enabled'})
        run('ethtool', '-X', NETIF, 'equal', str(self.queue))
        out = run('ethtool', '-N', NETIF, 'flow-type', 'tcp6', 'dst-ip', LOCAL_V6,
                  'dst-port', str(PORT), 'action', str(self.queue))
        self.rule = out.split()[-1]
        self.listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((LOCAL_V6, PORT))
        self.listener.listen(4)
        self.listener.settimeout(60)
        self.bind()

    def bind(self):
        self.buf = udmabuf.create(PAGES)
        self.map = mmap.mmap(self.buf, PAGES * PAGE, mmap.MAP_SHARED, mmap.PROT_READ)
        self.nl = YnlFamily(NETDEV_SPEC, schema='')
        rsp = self.nl.do('bind-rx', {'ifindex': self.ifindex, 'fd': self.buf,
                                     'queues': [{'id': self.queue, 'type': 'rx'}]})
        self.id = rsp['id']
        # The page pools that take the binding as their provider: the
        # suite ends by following each of them to its end.
        self.pool_ids |= {p['id'] for p in self.pools() if p.get('dmabuf') == self.id}
        if not self.pool_ids:
            raise Failed(f'no page pool shows dma-buf {self.id}')
        return self.id

    def unbind(self):
        """Closes the binding's netlink socket: the core unbinds the queue,
        which restarts without the provider."""
        self.nl.sock.close()
        self.nl = None

    def sync(self, flags):
        fcntl.ioctl(self.buf, DMA_BUF_IOCTL_SYNC, struct.pack('=Q', flags))

    def teardown(self):
        problems = []
        if self.nl is not None:
            self.unbind()
        if self.map is not None:
            self.map.close()
        if self.buf is not None:
            os.close(self.buf)
        self.listener.close()
        for cmd in ((['ethtool', '-N', NETIF, 'delete', self.rule] if self.rule else None),
                    ['ethtool', '-X', NETIF, 'default']):
            if cmd:
                try:
                    run(*cmd)
                except subprocess.CalledProcessError as e:
                    problems.append(f'{" ".join(cmd)}: {e.stderr.strip()}')
        if self.split_was != 'enabled':
            self.eth.do('rings-set', {**self.header, 'tcp-data-split': 'disabled'})
        return problems

    def pools(self):
        nl = YnlFamily(NETDEV_SPEC, schema='')
        try:
            return nl.dump('page-pool-get', {})
        finally:
            nl.sock.close()

    def pools_in_flight(self):
        """The destroyed pools of the device, and the binding's pools, that
        still hold buffers (a pool that is gone from the dump gave back
        all of them)."""
        return [p for p in self.pools()
                if (p['id'] in self.pool_ids or
                    (p.get('ifindex') == self.ifindex and 'detach-time' in p))
                and p.get('inflight', 0)]


class Flow:
    """One connection from the peer, received here; `held` maps each token
    this side holds to the frag it stands for."""

    def __init__(self, rig, nbytes):
        self.rig = rig
        self.nbytes = nbytes
        self.sender = subprocess.Popen(
            ['ip', 'netns', 'exec', 'ns-remote', sys.executable, '-c', SENDER,
             LOCAL_V6, str(PORT), str(nbytes)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            self.sock, _ = rig.listener.accept()
        except OSError:
            self.sender.kill()
            raise
        # Blocking, as a receiver's socket is (the listener's timeout made
        # it non-blocking), with a bound on a receive that never returns.
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack('=qq', 120, 0))
        self.fd = self.sock.fileno()
        self.offset = 0         # stream offset of the next byte
        self.eof = False
        self.held = {}          # token -> (dmabuf offset, size, stream offset)
        self.handed = 0         # tokens handed out on this flow

    def close(self):
        self.sock.close()
        try:
            self.sender.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.sender.kill()
            self.sender.communicate()

    def recvmsg(self, size, flags=MSG_SOCK_DEVMEM, control=CMSG_SPACE * 2048,
                iov_addr=None, control_addr=None):
        """One recvmsg(): (return value, errno, linear bytes, dmabuf cmsgs
        as (offset, size, token, id) tuples, msg_flags)."""
        data = ctypes.create_string_buffer(max(size, 1))
        ctl = ctypes.create_string_buffer(max(control, 1))
        iov = Iovec(ctypes.addressof(data) if iov_addr is None else iov_addr, size)
        msg = Msghdr(None, 0, ctypes.pointer(iov), 1,
                     (ctypes.addressof(ctl) if control else None)
                     if control_addr is None else control_addr, control, 0)
        ret = LIBC.recvmsg(self.fd, ctypes.byref(msg), flags)
        err = ctypes.get_errno() if ret < 0 else 0
        linear, frags = b'', []
        raw = b''
        if ret >= 0:
            # What the kernel wrote (msg_controllen is the length used).
            raw = (ctl.raw[:msg.controllen] if control_addr is None
                   else ctypes.string_at(control_addr, msg.controllen))
        pos = 0
        while pos + CMSG_HDR.size <= len(raw):
            length, level, kind = CMSG_HDR.unpack_from(raw, pos)
            if length < CMSG_HDR.size:
                break
            body = raw[pos + CMSG_HDR.size:pos + length]
            if level == SOL_SOCKET and kind == SO_DEVMEM_DMABUF:
                off, fsize, token, bid, cflags = DMABUF_CMSG.unpack(body)
                if cflags:
                    raise Failed(f'dmabuf cmsg of token {token}: flags {cflags:#x}, upstream 0')
                frags.append((off, fsize, token, bid))
            elif level == SOL_SOCKET and kind == SO_DEVMEM_LINEAR:
                _, fsize, _, _, _ = DMABUF_CMSG.unpack(body)
                frags.append((None, fsize, None, None))
            pos += (length + 7) & ~7
        if ret > 0:
            # The linear bytes are copied to the iov one after the other.
            linear = data.raw[:sum(f[1] for f in frags if f[0] is None)]
        return ret, err, linear, frags, msg.flags

    def check(self, ret, linear, frags, peek=False):
        """Checks a receive's frags against the pattern at this flow's
        offset, records their tokens, and moves the offset on (not for a
        peek). Raises Failed with what is wrong."""
        if sum(f[1] for f in frags) != ret:
            raise Failed(f'cmsgs cover {sum(f[1] for f in frags)} bytes, recvmsg returned {ret}')
        self.rig.sync(DMA_BUF_SYNC_READ)
        try:
            at, lin = self.offset, 0
            for off, size, token, bid in frags:
                a = at % PERIOD
                if off is None:
                    got = linear[lin:lin + size]
                    lin += size
                else:
                    if bid != self.rig.id:
                        raise Failed(f'frag of dma-buf {bid}, bound {self.rig.id}')
                    if token in self.held:
                        raise Failed(f'token {token} handed out while held')
                    got = self.rig.map[off:off + size]
                    self.held[token] = (off, size, at)
                    self.handed += 1
                if got != PATTERN[a:a + size]:
                    raise Failed(f'{size} bytes at stream offset {at} '
                                 f'(dma-buf offset {off}) differ from the pattern')
                at += size
        finally:
            self.rig.sync(DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ)
        if not peek:
            self.offset = at

    def receive(self, size=256 * 1024, limit=None):
        """Receives with MSG_SOCK_DEVMEM until EOF (or `limit` bytes),
        keeping every token."""
        while not self.eof and (limit is None or self.offset < limit):
            want = size if limit is None else min(size, limit - self.offset)
            ret, err, linear, frags, _ = self.recvmsg(want)
            if ret < 0:
                if err == errno.EINTR:
                    continue
                raise Failed(f'recvmsg at stream offset {self.offset}: {errname(err)}')
            if ret == 0:
                self.eof = True
                break
            self.check(ret, linear, frags)
        if limit is None and self.offset != self.nbytes:
            raise Failed(f'EOF after {self.offset} of {self.nbytes} bytes')

    def next_tokens(self, n):
        """The n tokens the next receive hands out: the lowest free
        indices from 1 (index 0 stays busy)."""
        out, t = [], 1
        while len(out) < n:
            if t not in self.held:
                out.append(t)
            t += 1
        return out

    def expect_free(self, ranges):
        """What sock_devmem_dontneed() frees of `ranges` given the tokens
        held: each index as u32, the first 1024 indices only, each token
        once. Drops them from `held`."""
        n = looked = 0
        for start, count in ranges:
            for j in range(count):
                looked += 1
                if looked > MAX_DONTNEED_FRAGS:
                    return n
                t = (start + j) & 0xffffffff
                if self.held.pop(t, None) is not None:
                    n += 1
        return n

    def give_back(self, ranges):
        """SO_DEVMEM_DONTNEED of `ranges`: fails unless it frees what the
        account predicts."""
        want = self.expect_free(ranges)
        ret, err = dontneed(self.fd, ranges)
        if ret != want:
            raise Failed(f'SO_DEVMEM_DONTNEED {ranges[:4]}{"..." if len(ranges) > 4 else ""}: '
                         f'{answer(ret, err)}, upstream frees {want}')
        return ret

    def give_back_all(self):
        """Gives back every token held, in calls at the kernel's limits."""
        toks = sorted(self.held)
        while toks:
            batch, toks = toks[:MAX_DONTNEED_FRAGS], toks[MAX_DONTNEED_FRAGS:]
            ranges = []
            for t in batch:
                if ranges and ranges[-1][0] + ranges[-1][1] == t:
                    ranges[-1][1] += 1
                else:
                    ranges.append([t, 1])
            while ranges:
                now, ranges = ranges[:MAX_DONTNEED_TOKENS], ranges[MAX_DONTNEED_TOKENS:]
                self.give_back([tuple(r) for r in now])


class KernelLog:
    """The kernel log records written since the last look (/dev/kmsg,
    from its end when opened) that results.py fails a run for."""

    def __init__(self):
        self.fd = os.open('/dev/kmsg', os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def since(self):
        return ['(kernel log records were lost: the log wrapped)' if line is None else line
                for line in kmsg.new_records(self.fd)
                if line is None or KERNEL_SPLAT_RE.search(line)]


class Suite:
    def __init__(self):
        self.n = 0
        self.failed = False
        self.rig = None
        self.flows = []
        self.log = KernelLog()

    def case(self, name, fn):
        self.n += 1
        before = taint()
        self.log.since()
        try:
            detail = fn()
            ok = True
        except (Failed, OSError, subprocess.SubprocessError, KeyError) as e:
            ok, detail = False, f'{type(e).__name__}: {e}' if not isinstance(e, Failed) else str(e)
        after = taint()
        said = self.log.since()
        if after & ~before or said:
            ok = False
            detail = '\n'.join([f'the kernel log while it ran: {line}' for line in said[:6]] +
                                ([f'the kernel became tainted ({before:#x} -> {after:#x})']
                                 if after & ~before else []) + ([detail] if detail else []))
        print(f'{"ok" if ok else "not ok"} {self.n} {name}')
        if detail:
            for line in str(detail).splitlines():
                print(f'# {line}')
        sys.stdout.flush()
        self.failed |= not ok
        return ok

    def flow(self, nbytes):
        f = Flow(self.rig, nbytes)
        self.flows.append(f)
        return f


def expect(got, want, what):
    if got != want:
        raise Failed(f'{what}: {answer(*got)}, upstream answers {answer(*want)}')


def cases_sockopt(s):
    """SO_DEVMEM_DONTNEED's checks before it looks at a token."""
    one = pack([(1, 1)])

    def on(kind, fn):
        sock = socket.socket(*kind)
        try:
            return fn(sock.fileno())
        finally:
            sock.close()

    def not_tcp():
        for kind, name in (((socket.AF_INET6, socket.SOCK_DGRAM), 'UDP'),
                           ((socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP), 'raw IPPROTO_TCP'),
                           ((socket.AF_UNIX, socket.SOCK_STREAM), 'AF_UNIX stream')):
            expect(on(kind, lambda fd: dontneed(fd, [(1, 1)])), (-1, errno.EBADF), name)
        # The order of the checks: sk_setsockopt() reads an int first
        # (EINVAL under 4 bytes, EFAULT when it cannot), then
        # sock_devmem_dontneed() refuses a socket that is not TCP before
        # it looks at the length or reads the tokens.
        udp = (socket.AF_INET6, socket.SOCK_DGRAM)
        buf = ctypes.create_string_buffer(pack([(1, 1)] * (MAX_DONTNEED_TOKENS + 1)))
        addr = ctypes.addressof(buf)
        for optval, optlen, want, what in (
                (addr, 3, errno.EINVAL, 'UDP, optlen 3'),
                (None, 8, errno.EFAULT, 'UDP, optval NULL'),
                (BAD_ADDR, 8, errno.EFAULT, 'UDP, optval unmapped'),
                (addr, 12, errno.EBADF, 'UDP, optlen 12'),
                (addr, MAX_DONTNEED_TOKENS * 8 + 8, errno.EBADF, 'UDP, 129 tokens')):
            expect(on(udp, lambda fd, a=optval, n=optlen: dontneed_raw(fd, a, n)),
                   (-1, want), what)
        return 'before the socket type: optlen 3 EINVAL, optval NULL or unmapped EFAULT'

    def lengths():
        tcp = (socket.AF_INET6, socket.SOCK_STREAM)
        buf = ctypes.create_string_buffer(pack([(1, 0)] * (MAX_DONTNEED_TOKENS + 1)))
        addr = ctypes.addressof(buf)
        for optlen, want in ((0, (-1, errno.EINVAL)), (3, (-1, errno.EINVAL)),
                             (4, (-1, errno.EINVAL)), (7, (-1, errno.EINVAL)),
                             (12, (-1, errno.EINVAL)), (-1, (-1, errno.EINVAL)),
                             (8, (0, 0)), (MAX_DONTNEED_TOKENS * 8, (0, 0)),
                             (MAX_DONTNEED_TOKENS * 8 + 8, (-1, errno.EINVAL)),
                             (1 << 30, (-1, errno.EINVAL))):
            expect(on(tcp, lambda fd, n=optlen: dontneed_raw(fd, addr, n)), want, f'optlen {optlen}')
        return 'optlen 0, 3, 4, 7, 12, -1, 129 tokens, 1 GiB: EINVAL; 1 and 128 tokens: 0'

    def faults():
        tcp = (socket.AF_INET6, socket.SOCK_STREAM)
        expect(on(tcp, lambda fd: dontneed_raw(fd, None, 8)), (-1, errno.EFAULT), 'optval NULL')
        expect(on(tcp, lambda fd: dontneed_raw(fd, BAD_ADDR, 8)), (-1, errno.EFAULT), 'optval unmapped')
        # The int sk_setsockopt() reads first is there, the rest is not.
        two = page_before_hole()
        try:
            ctypes.memmove(two + PAGE - 4, one, 4)
            expect(on(tcp, lambda fd: dontneed_raw(fd, two + PAGE - 4, 8)),
                   (-1, errno.EFAULT), 'a token across the end of a mapping')
            ctypes.memmove(two + PAGE - 8, one, 8)
            expect(on(tcp, lambda fd: dontneed_raw(fd, two + PAGE - 8, 8)), (0, 0),
                   'a token at the end of a mapping')
        finally:
            LIBC.munmap(two, PAGE)
        return 'optval NULL, unmapped, across the end of a mapping: EFAULT'

    def plain_tcp():
        # A TCP socket that never received device memory: nothing to free.
        tcp = (socket.AF_INET6, socket.SOCK_STREAM)
        expect(on(tcp, lambda fd: dontneed(fd, [(0, 1), (1, 1024)])), (0, 0), 'unconnected TCP')
        lst = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        lst.bind(('::1', 0))
        lst.listen(1)
        c = socket.create_connection(('::1', lst.getsockname()[1]))
        a, _ = lst.accept()
        try:
            c.sendall(b'x' * 4096)
            # Host memory received with MSG_SOCK_DEVMEM is copied as ever.
            got = a.recvmsg(4096, 4096, MSG_SOCK_DEVMEM | socket.MSG_WAITALL)
            if got[0] != b'x' * 4096 or got[1]:
                raise Failed(f'MSG_SOCK_DEVMEM over loopback: {len(got[0])} bytes, cmsgs {got[1]}')
            expect(dontneed(a.fileno(), [(0, 0xffffffff)]), (0, 0), 'connected TCP, no devmem')
            expect(dontneed(lst.fileno(), [(1, 1)]), (0, 0), 'listening TCP')
        finally:
            for x in (a, c, lst):
                x.close()
        return ''

    s.case('SO_DEVMEM_DONTNEED on UDP, raw and AF_UNIX sockets: EBADF', not_tcp)
    s.case('SO_DEVMEM_DONTNEED optlen under an int, not a multiple of a token, over 128 tokens: EINVAL', lengths)
    s.case('SO_DEVMEM_DONTNEED from memory it cannot read: EFAULT', faults)
    s.case('SO_DEVMEM_DONTNEED and MSG_SOCK_DEVMEM on TCP sockets without device memory', plain_tcp)


def cases_ranges(s):
    """Token values and ranges, on a flow holding more tokens than one call
    may free."""
    st = {}

    def receive():
        f = st['f'] = s.flow(BIG)
        f.receive()
        toks = sorted(f.held)
        if toks != list(range(1, len(toks) + 1)):
            raise Failed(f'tokens {toks[:8]}...: not 1 to {len(toks)}, lowest first')
        if len(toks) <= 64 * 64 + 64:
            raise Failed(f'{len(toks)} tokens: too few for a 3-level xarray')
        return f'{f.offset} bytes, {len(toks)} tokens held, every byte checked'

    def give(ranges, note=''):
        def fn():
            n = st['f'].give_back(ranges)
            return f'freed {n}{note}'
        return fn

    if not s.case('devmem flow of 6 MiB received, every token held', receive):
        return
    f = st['f']
    n = len(f.held)
    s.case('token 0 (the busy index 0 of the xarray): 0 freed', give([(0, 1)]))
    s.case('range 0xffffffff+2 (wraps to 0): 0 freed', give([(0xffffffff, 2)]))
    s.case('token_count 0: 0 freed', give([(0, 0), (5, 0), (0xffffffff, 0)]))
    s.case('tokens never handed out (past the last, 31-bit limit, U32_MAX): 0 freed',
           give([(n + 1, 100), (0x7fffffff, 1), (0x80000000, 1), (0xffffffff, 1)]))
    s.case('the same token twice in one call: freed once', give([(3, 1), (3, 1)]))
    s.case('overlapping ranges: each token once', give([(10, 5), (12, 5)]))
    s.case('tokens given back already: 0 freed', give([(3, 1), (10, 7)]))
    s.case('range 0+2 (busy index 0, then token 1)', give([(0, 2)]))
    s.case('range wrapping from 0xfffffff0 over 0 to token 15', give([(0xfffffff0, 0x20)]))
    s.case('128 ranges of 9 tokens: the 1024-index limit cuts the call',
           give([(20 + 9 * i, 9) for i in range(MAX_DONTNEED_TOKENS)]))
    s.case('range 1+0xffffffff: indices 1 to 1024 only', give([(1, 0xffffffff)]))
    s.case('the rest, in calls at the limits', lambda: f.give_back_all() or 'none held now')

    def after():
        if f.held:
            raise Failed(f'{len(f.held)} tokens still held')
        got = dontneed(f.fd, [(1, n)])
        expect(got, (0, 0), 'every token again')
        f.close()
        return ''
    s.case('nothing left to free; close', after)


def cases_recvmsg(s):
    """recvmsg(MSG_SOCK_DEVMEM) with what a program may pass."""
    st = {}

    def start():
        f = st['f'] = s.flow(512 * 1024)
        # Wait for data to be queued.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ret, err, _, _, _ = f.recvmsg(1, MSG_SOCK_DEVMEM | socket.MSG_PEEK | socket.MSG_DONTWAIT,
                                          control=0)
            if ret >= 0 or err != errno.EAGAIN:
                break
            time.sleep(0.05)
        return ''

    def consumed_nothing(f):
        """The next receive must start at the flow's offset."""
        ret, err, linear, frags, _ = f.recvmsg(8192)
        if ret <= 0:
            raise Failed(f'recvmsg after it: {answer(ret, err)}')
        f.check(ret, linear, frags)

    def no_flag():
        f = st['f']
        ret, err, _, _, _ = f.recvmsg(65536, flags=0)
        expect((ret, err), (-1, errno.EFAULT), 'without MSG_SOCK_DEVMEM')
        consumed_nothing(f)
        return ''

    def no_control():
        f = st['f']
        ret, err, _, _, _ = f.recvmsg(65536, control=0)
        expect((ret, err), (-1, ETOOSMALL), 'no control buffer')
        ret, err, _, _, _ = f.recvmsg(65536, control=CMSG_SPACE - 1)
        expect((ret, err), (-1, ETOOSMALL), f'control buffer of {CMSG_SPACE - 1} bytes')
        consumed_nothing(f)
        return ''

    def bad_control():
        f = st['f']
        ret, err, _, _, _ = f.recvmsg(65536, control=4096, control_addr=BAD_ADDR)
        expect((ret, err), (-1, errno.EFAULT), 'control buffer unmapped')
        consumed_nothing(f)
        return ''

    def control_ends():
        f = st['f']
        # A control buffer with room for four cmsgs whose second crosses
        # into a page that is not mapped: put_cmsg() faults there.
        two = page_before_hole()
        try:
            at = two + PAGE - CMSG_SPACE - 8
            ret, err, linear, frags, _ = f.recvmsg(65536, control=4 * CMSG_SPACE,
                                                   control_addr=at)
        finally:
            LIBC.munmap(two, PAGE)
        # Upstream: the frags whose cmsg was written are received (their
        # bytes returned), the one whose cmsg faulted is not: its token
        # is taken back and the next receive starts at it.
        if ret <= 0 or len(frags) != 1:
            raise Failed(f'room for one cmsg before the fault: {answer(ret, err)}, '
                         f'{len(frags)} cmsgs; upstream the first frag')
        f.check(ret, linear, frags)
        consumed_nothing(f)
        return f'{ret} bytes in the one cmsg before the fault; the next receive goes on from there'

    def one_cmsg():
        f = st['f']
        ret, err, linear, frags, flags = f.recvmsg(65536, control=CMSG_SPACE)
        if ret <= 0 or len(frags) != 1:
            raise Failed(f'room for one cmsg: {answer(ret, err)}, {len(frags)} cmsgs')
        if flags & socket.MSG_CTRUNC:
            raise Failed('MSG_CTRUNC set: put_cmsg_notrunc() does not truncate')
        f.check(ret, linear, frags)
        return f'{ret} bytes in one cmsg, msg_flags {flags:#x}'

    def peek():
        f = st['f']
        sets = []
        for _ in range(2):
            ret, err, linear, frags, _ = f.recvmsg(16384, MSG_SOCK_DEVMEM | socket.MSG_PEEK)
            if ret <= 0:
                raise Failed(f'MSG_PEEK: {answer(ret, err)}')
            f.check(ret, linear, frags, peek=True)
            sets.append({t for _, _, t, _ in frags if t is not None})
        if sets[0] & sets[1]:
            raise Failed(f'two peeks share tokens {sorted(sets[0] & sets[1])}')
        f.give_back([(t, 1) for t in sorted(sets[0] | sets[1])])
        consumed_nothing(f)
        return f'{len(sets[0])} and {len(sets[1])} tokens for the same bytes, all freed'

    def one_byte():
        f = st['f']
        mine = []
        # Holes among the tokens held: the receives fill them first.
        holes = sorted(f.held)[1:8:2]
        f.give_back([(t, 1) for t in holes])
        for _ in range(64):
            want = f.next_tokens(1)
            ret, err, linear, frags, _ = f.recvmsg(1)
            if ret != 1:
                raise Failed(f'1-byte receive: {answer(ret, err)}')
            before = set(f.held)
            f.check(ret, linear, frags)
            got = sorted(set(f.held) - before)
            if got != want:
                raise Failed(f'1-byte receive handed out token {got}, the lowest free is {want}')
            mine += got
        f.give_back([(t, 1) for t in mine])
        return f'64 tokens of 1 byte, lowest free first (holes {holes} refilled), all freed'

    def zero_index():
        f = st['f']
        if not f.held:
            raise Failed('no token held: the xarray has no node')
        f.give_back([(0, 1)])
        want = f.next_tokens(1)
        ret, err, linear, frags, _ = f.recvmsg(1)
        if ret != 1:
            raise Failed(f'1-byte receive: {answer(ret, err)}')
        f.check(ret, linear, frags)
        got = [t for _, _, t, _ in frags if t is not None]
        if got != want or 0 in got:
            raise Failed(f'after a range reached index 0 the receive handed out {got}, '
                         f'want {want} (index 0 stays busy)')
        f.give_back([(got[0], 1)])
        return f'token {got[0]} handed out, not 0, then freed'

    def zero_length():
        f = st['f']
        want = f.next_tokens(1)
        ret, err, _, frags, _ = f.recvmsg(0)
        if ret != 0 or len(frags) != 1 or frags[0][1] != 0 or frags[0][2] != want[0]:
            raise Failed(f'0-byte receive: {answer(ret, err)}, cmsgs {frags}; upstream 0 and '
                         f'one empty frag with token {want[0]}')
        f.held[frags[0][2]] = (frags[0][0], 0, f.offset)
        f.give_back([(frags[0][2], 1)])
        consumed_nothing(f)
        return f'0 returned, token {want[0]} for an empty frag, freed'

    def iov_null():
        f = st['f']
        ret, err, linear, frags, _ = f.recvmsg(16384, iov_addr=0)
        if ret < 0:
            # A linear part is copied to the iov: EFAULT, nothing consumed.
            expect((ret, err), (-1, errno.EFAULT), 'iov NULL')
            consumed_nothing(f)
            return 'a linear part: EFAULT'
        if any(off is None for off, _, _, _ in frags):
            raise Failed('bytes copied to a NULL iov')
        f.check(ret, linear, frags)
        return f'{ret} bytes of frags, which need no user memory'

    def trunc():
        f = st['f']
        ret, err, _, frags, _ = f.recvmsg(65536, MSG_SOCK_DEVMEM | socket.MSG_TRUNC)
        if ret <= 0 or frags:
            raise Failed(f'MSG_TRUNC: {answer(ret, err)}, {len(frags)} cmsgs')
        f.offset += ret
        return f'{ret} bytes dropped, no token'

    def other_flags():
        f = st['f']
        ret, err, _, _, _ = f.recvmsg(65536, MSG_SOCK_DEVMEM | socket.MSG_ERRQUEUE)
        expect((ret, err), (-1, errno.EAGAIN), 'MSG_ERRQUEUE')
        ret, err, _, _, _ = f.recvmsg(65536, MSG_SOCK_DEVMEM | socket.MSG_OOB)
        expect((ret, err), (-1, errno.EINVAL), 'MSG_OOB')
        consumed_nothing(f)
        return ''

    def rest_then_close():
        f = st['f']
        f.receive(size=24 * 1024)
        held = len(f.held)
        # The socket goes with its tokens: tcp_v4_destroy_sock() puts them.
        f.close()
        return f'{held} tokens held at close'

    if not s.case('devmem flow of 512 KiB for the receive cases', start):
        return
    s.case('recvmsg without MSG_SOCK_DEVMEM: EFAULT, nothing consumed', no_flag)
    s.case('recvmsg with no room for a cmsg: ETOOSMALL, nothing consumed', no_control)
    s.case('recvmsg with an unmapped control buffer: EFAULT, nothing consumed', bad_control)
    s.case('recvmsg with room for one cmsg: one frag', one_cmsg)
    s.case('recvmsg whose control buffer faults after the first cmsg: the first frag', control_ends)
    s.case('MSG_PEEK twice: new tokens for the same bytes', peek)
    s.case('1-byte receives: a token each, holes filled first', one_byte)
    s.case('index 0 given back: it stays busy, the next receive hands out another', zero_index)
    s.case('a receive of 0 bytes: 0, and a token for an empty frag', zero_length)
    s.case('recvmsg into a NULL iov', iov_null)
    s.case('MSG_TRUNC with MSG_SOCK_DEVMEM: dropped, no token', trunc)
    s.case('MSG_ERRQUEUE: EAGAIN; MSG_OOB: EINVAL', other_flags)
    s.case('the rest received, the socket closed with its tokens', rest_then_close)


def cases_timing(s):
    """Calls that overlap, and tokens that outlive their binding."""

    def two_threads():
        f = s.flow(1024 * 1024)
        f.receive()
        held = len(f.held)
        counts = [0, 0]
        calls = [0, 0]
        go = threading.Barrier(2)

        def worker(i):
            go.wait()
            while True:
                ret, err = dontneed(f.fd, [(1, MAX_DONTNEED_FRAGS)])
                calls[i] += 1
                if ret < 0:
                    counts[i] = -err
                    return
                counts[i] += ret
                if ret == 0:
                    return
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        f.held = {t: v for t, v in f.held.items() if t > MAX_DONTNEED_FRAGS}
        if min(counts) < 0 or sum(counts) != held - len(f.held):
            raise Failed(f'two threads freed {counts} of {held - len(f.held)}')
        f.give_back_all()
        f.close()
        return f'{held} tokens, freed {counts[0]} + {counts[1]} in {calls} calls'

    def guessing():
        # A second thread gives back tokens 1 to 1024 over and over while
        # the flow is received: it frees tokens this side holds, and must
        # leave alone those a receive has reserved and not handed out yet
        # (erasing one leaks its frag's reference: the page pool then
        # reports it in flight when the binding goes, which the kernel
        # log check fails).
        f = s.flow(BIG)
        stop = threading.Event()
        freed = [0, 0]

        def guess():
            while not stop.is_set():
                ret, _ = dontneed(f.fd, [(1, MAX_DONTNEED_FRAGS)])
                freed[1] += 1
                freed[0] += max(ret, 0)
        t = threading.Thread(target=guess)
        t.start()
        got = 0
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                ret, err, _, _, _ = f.recvmsg(65536)
                if ret == 0:
                    break
                if ret < 0:
                    raise Failed(f'recvmsg: {errname(err)}')
                got += ret
        finally:
            stop.set()
            t.join()
        if got != BIG:
            raise Failed(f'received {got} of {BIG} bytes')
        # What the thread left: every index it may not have reached.
        dontneed(f.fd, [(1, 0xffffffff)])
        dontneed(f.fd, [(MAX_DONTNEED_FRAGS + 1, 0xffffffff)])
        f.close()
        return f'the thread freed {freed[0]} frags in {freed[1]} calls'

    def unbound():
        # Tokens held when the binding goes: the queue restarts without
        # the provider, the frags stay user space's until it gives them
        # back (or closes the socket).
        f = s.flow(256 * 1024)
        f.receive()
        held = len(f.held)
        s.rig.unbind()
        time.sleep(1)
        f.give_back_all()
        f.close()
        return f'{held} tokens given back after the unbind'

    s.case('two threads give back the same tokens at once: each freed once', two_threads)
    s.case('a thread guessing tokens while the flow is received', guessing)
    s.case('tokens given back after the binding went away', unbound)


def main():
    print('TAP version 13')
    print(f'1..{PLAN}')
    s = Suite()

    def setup():
        s.rig = Rig()
        return f'{NETIF}: header split on, port {PORT} to queue {s.rig.queue}, ' \
               f'dma-buf {s.rig.id} of {PAGES} pages bound there'
    if s.case(f'configure {NETIF}: header split, flow rule, a udmabuf bound', setup):
        cases_sockopt(s)
        cases_ranges(s)
        cases_recvmsg(s)
        cases_timing(s)
    for f in s.flows:
        if f.sock.fileno() >= 0:
            f.close()

    def teardown():
        if s.rig is None:
            raise Failed('nothing configured')
        problems = s.rig.teardown()
        if problems:
            raise Failed('; '.join(problems))
        return ''

    def drained():
        if s.rig is None:
            raise Failed('nothing configured')
        for i in range(30):
            left = s.rig.pools_in_flight()
            if not left:
                return f'no destroyed page pool of {NETIF} holds a buffer (after {i} s)'
            time.sleep(1)
        raise Failed('destroyed pools still holding buffers after 30 s: ' +
                     ', '.join(f'pool {p["id"]} ({p["inflight"]} in flight)' for p in left))
    s.case('undo the configuration', teardown)
    s.case('every destroyed page pool of the device drains', drained)
    # The plan counts every case; a group that stopped early leaves the
    # TAP short, which fails the suite.
    return 1 if s.failed else 0


if __name__ == '__main__':
    sys.exit(main())
