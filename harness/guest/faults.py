#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Allocation failures on the devmem and igb_rs control paths, one at a time.

Runs in the guest of 'make check DEBUG=1' (run.sh exports NETIF, KSRC, the
addresses; the debug kernel has CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC and
CONFIG_FAULT_INJECTION_DEBUG_FS). TAP on stdout.

The method is fail-nth (Documentation/fault-injection/fault-injection.rst):
writing N to /proc/thread-self/fail-nth makes the N-th allocation this
thread makes from then on fail; reading it back says "0" once the fault was
injected, or what is left of N when the thread made fewer allocations. For
each operation the loop runs N = 1, 2, ...: every socket and fd the request
needs is made first (a netlink socket of its own each round, already bound,
so that its autobind is not counted), fail-nth is written right before the
one sendmsg() that carries the request (the kernel handles a netlink request
in the sender's context, inside that call) and read back and cleared right
after it, before the answer is read. "0" means allocation N failed: check
how the request ended and what it left, undo it, go on with N + 1. A value
left means the request ran to its end without an N-th allocation: every
allocation of its path has failed once, and that last round must succeed as
it does without faults. failslab and fail_page_alloc are set to fail
sleeping allocations too (ignore-gfp-wait N; and pages of any order,
highmem too), so that GFP_KERNEL ones count: with the defaults fail-nth
would reach only atomic ones. verbose 2 logs each injected fault
("FAULT_INJECTION: forcing a failure." and the attribute's values) with
its call trace, which says whose allocation failed; the old settings are
put back at the end. kmemleak's own metadata
allocations and KASAN's stack depot count too (kmemleak falls back on its
pool): many rounds end with the request succeeding, the fault absorbed.

A failed round must end in a clean error: a netlink error with an errno
(the errnos and extack messages seen are listed), or an errno from
sendmsg() itself (the request's skb could not be allocated). An errno from
recvmsg() means the answer was lost (the ack's skb): the request's outcome
is unknown, and only what it leaves is checked. The rounds with a fault are
counted by how they ended, a line per operation ("SITE: N rounds, E errors
from the request, A absorbed, S errors from sendmsg, L answers lost
(recvmsg), U without a clean end"; absorbed is the answer the request has
without a fault: success, or for split off its refusal). A loop that runs
to its end with no round ending in an error returned by the request (a
netlink error with an errno, other than split off's refusal) fails: none of
its faults reached an error path of the request's handling, only
allocations whose failure is absorbed, the request's skb (sendmsg) or the
answer's (recvmsg). That handling includes the netlink layers' own
allocations (genetlink's attribute buffer, ethtool's request info,
rtnetlink's attribute tables), which fail before the devmem core or igb_rs
runs: so a loop also fails when none of its errors from the request came
from an allocation of the code under test, a frame of the devmem core
(Rust or C), the bind handlers or igb_rs in the fault's call trace
(evidence.fault_inside()); but for split off, which the ethtool core
refuses before igb_rs is asked. The rounds that ended in an error from the
request are listed (N), and those of the code under test's, with the
errnos and extack messages, to say which paths failed. And a round
must leave nothing: no rx queue and no page pool showing a binding (but the
held one), the udmabuf detached and referenced by our fd alone (debugfs
dma_buf/bufinfo), the device's settings as they were, no IFF_UP after a
failed open. After each loop the device must pass traffic (ping the peer)
and the number of dma-bufs alive must be back to what it was. The kernel
log and kmemleak are judged by the harness after all suites (results.py).

The operations, a TAP case each:
  bind-rx      a udmabuf on rx queue 1, header split on (set first)
  bind-tx      a udmabuf for TX
  rings-set    rx and tx ring sizes changed with a binding held on queue 1
               (then set back without faults)
  channels-set one more combined channel with the binding held (then back)
  split off    tcp-data-split off with the binding held: refused, the fault
               loop runs over the refusal path
  split on     tcp-data-split on, no binding: every receive queue restarts
               on a new ring; a failure must leave it off (then set back
               off without faults)
  link up      ndo_open of igb_rs, as RTM_NEWLINK IFF_UP on a raw rtnetlink
               socket, from down (and down again between rounds)
Page pool creation has no request of its own: bind-rx restarts the queue on
a new ring whose payload pool takes the binding as memory provider,
rings-set and channels-set make new rings and pools for every queue (the
bound one's with the provider), split on makes one for every queue before
the first restarts, and ndo_open makes the pools of both queues:
each allocation of page_pool_create() and of the ring fill fails in turn in
those loops. The rings are at their smallest (RING_MIN descriptors) for the
whole suite, set without faults first and put back at the end: a restart
reaches the same allocation sites as with larger rings, in fewer rounds
(the fill makes one allocation per page or bulk of pages).
"""

import collections
import errno
import gc
import os
import socket
import struct
import subprocess
import sys
import time
import traceback
from contextlib import contextmanager

KSRC = os.environ['KSRC']
NETIF = os.environ['NETIF']
LOCAL_V4 = os.environ.get('LOCAL_V4', '192.0.2.1')
LOCAL_V6 = os.environ.get('LOCAL_V6', '2001:db8:1::1')
REMOTE_V4 = os.environ.get('REMOTE_V4', '192.0.2.2')

sys.path.insert(0, os.path.join(KSRC, 'tools/net/ynl/pyynl'))
# pylint: disable=wrong-import-position,import-error
from lib import YnlFamily, NlError  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evidence as E  # noqa: E402
import kmsg  # noqa: E402
import udmabuf  # noqa: E402

NETDEV_SPEC = os.path.join(KSRC, 'Documentation/netlink/specs/netdev.yaml')
ETHTOOL_SPEC = os.path.join(KSRC, 'Documentation/netlink/specs/ethtool.yaml')
FAIL_NTH = '/proc/thread-self/fail-nth'
DEBUGFS = '/sys/kernel/debug'
BUFINFO = os.path.join(DEBUGFS, 'dma_buf/bufinfo')

# fail-nth fails sleeping allocations only with these, and counts only the
# allocations its stack filter lets through (none set: every one); the old
# values are put back at the end.
FAULT_SETTINGS = [
    ('failslab/ignore-gfp-wait', 'N'),
    ('failslab/verbose', '2'),
    ('failslab/require-start', '0'),
    ('failslab/require-end', str((1 << 64) - 1)),
    ('fail_page_alloc/ignore-gfp-wait', 'N'),
    ('fail_page_alloc/ignore-gfp-highmem', 'N'),
    ('fail_page_alloc/min-order', '0'),
    ('fail_page_alloc/verbose', '2'),
    ('fail_page_alloc/require-start', '0'),
    ('fail_page_alloc/require-end', str((1 << 64) - 1)),
]

# Where a loop gives up: kmemleak doubles the count of slab allocations,
# and a link up runs the NETDEV_UP notifiers (addresses, routes, qdiscs).
MAX_NTH = 3000
# Rounds with problems before a loop stops: the state is broken by then.
MAX_BAD_ROUNDS = 5
SETTLE = 10             # seconds for deferred teardown (binding, pools)
ANSWER_TIMEOUT = 30     # seconds for the answer to a request
BIND_PAGES = 512        # more net_iovs than a queue's ring holds
RING_MIN = 64           # the fewest descriptors igb_rs takes for a ring
TX_PAGES = 64

SOL_NETLINK = 270
NETLINK_CAP_ACK, NETLINK_EXT_ACK, NETLINK_GET_STRICT_CHK = 10, 11, 12
NLMSG_ERROR = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_CAPPED, NLM_F_ACK_TLVS = 1, 4, 0x100, 0x200
NLMSGERR_ATTR_MSG = 1
RTM_NEWLINK = 16
IFF_UP = 1

SPLIT_REFUSED = ("can't disable tcp-data-split while device has memory "
                 'provider enabled')


def diag(line):
    print(f'# {line}', flush=True)


def errname(err):
    if err == errno.EOPNOTSUPP:
        return 'EOPNOTSUPP'     # errorcode says ENOTSUP, its alias
    return errno.errorcode.get(err, str(err))


def read(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read().strip()


def write(path, value):
    with open(path, 'w', encoding='ascii') as f:
        f.write(value)


@contextmanager
def fault_settings():
    """failslab and fail_page_alloc set to fail what fail-nth picks, even a
    sleeping allocation; the old values back on the way out."""
    old = []
    try:
        for rel, value in FAULT_SETTINGS:
            path = os.path.join(DEBUGFS, rel)
            old.append((path, read(path)))
            write(path, value)
        yield
    finally:
        for path, value in reversed(old):
            write(path, value)


class FailNth:
    """/proc/thread-self/fail-nth, opened once: the fault counter of this
    thread, the only one this program runs."""

    def __init__(self):
        self.fd = os.open(FAIL_NTH, os.O_RDWR)

    def disarm(self):
        os.write(self.fd, b'0')


class ArmedSocket:
    """A netlink socket whose next send() is the system call under test:
    fail-nth is written right before it, read back and cleared right after
    it, before the answer is read. Everything else passes through."""

    def __init__(self, sock, fail):
        self._sock = sock
        self._fail = fail
        self._nth = None
        self.sent = False
        self.left = None    # fail-nth after the call: 0 when injected

    def arm(self, n):
        self._nth = str(n).encode()

    def send(self, data, flags=0):
        nth, self._nth = self._nth, None
        if nth is None:
            return self._sock.send(data, flags)
        fd, send = self._fail.fd, self._sock.send
        os.write(fd, nth)
        try:
            ret = send(data, flags)
        finally:
            left = os.pread(fd, 32, 0)
            os.write(fd, b'0')
            self.left = int(left)
            self._sock.settimeout(ANSWER_TIMEOUT)
        self.sent = True
        return ret

    def __getattr__(self, name):
        return getattr(self._sock, name)


def nl_socket(proto):
    """A netlink socket as YnlFamily makes one, already bound: the autobind
    of a first send is not the request's."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
    for opt in (NETLINK_CAP_ACK, NETLINK_EXT_ACK, NETLINK_GET_STRICT_CHK):
        s.setsockopt(SOL_NETLINK, opt, 1)
    s.bind((0, 0))
    return s


class Attempt:
    """How round n of a loop ended: outcome 'ok', 'error' (err, the errno,
    from the netlink answer or from sendmsg), 'lost' (recvmsg failed: the
    answer was lost, the outcome is unknown) or 'bad' (no clean answer)."""

    def __init__(self, n):
        self.n = n
        self.outcome = None
        self.err = 0
        self.where = 'netlink'
        self.msg = None
        self.reply = None
        self.injected = False
        self.inside = False     # the failed allocation was the code under test's

    def key(self):
        where = '' if self.where == 'netlink' else f'{self.where} '
        return f'{where}{errname(self.err)}'

    def describe(self):
        if self.outcome == 'ok':
            return 'succeeded' + (f' {self.reply}' if self.reply else '')
        if self.outcome in ('error', 'lost'):
            msg = f' "{self.msg}"' if self.msg else ''
            return f'{self.key()}{msg}'
        return f'no clean error: {self.msg}'


def finish(a, sock):
    """Fills in whether the fault was injected, from the armed socket."""
    a.injected = sock.left == 0
    if sock.left is None and a.outcome != 'bad':
        a.outcome, a.msg = 'bad', 'the request was never sent'
    return a


def ynl_attempt(ynl, fail, n, op, attrs):
    """Round n: `op` through YNL on a new socket, allocation n failing.
    Returns the Attempt and the socket, still open (it holds a binding)."""
    sock = ArmedSocket(nl_socket(ynl.nlproto.proto_num), fail)
    ynl.sock = sock
    a = Attempt(n)
    sock.arm(n)
    try:
        a.reply = ynl.do(op, attrs)
        a.outcome = 'ok'
    except NlError as e:
        a.outcome, a.err = 'error', e.error
        a.msg = (e.nl_msg.extack or {}).get('msg')
    except TimeoutError:
        a.outcome, a.msg = 'bad', f'no answer in {ANSWER_TIMEOUT} s'
    except OSError as e:
        a.outcome = 'lost' if sock.sent else 'error'
        a.where = 'recvmsg' if sock.sent else 'sendmsg'
        a.err = e.errno or 0
    except Exception as e:  # pylint: disable=broad-except
        a.outcome, a.msg = 'bad', f'{type(e).__name__}: {e}'
    return finish(a, sock), sock


def setlink_msg(ifindex, up):
    """RTM_NEWLINK changing IFF_UP of ifindex: struct ifinfomsg, no
    attributes."""
    body = struct.pack('=BxHiII', socket.AF_UNSPEC, 0, ifindex,
                       IFF_UP if up else 0, IFF_UP)
    hdr = struct.pack('=IHHII', 16 + len(body), RTM_NEWLINK,
                      NLM_F_REQUEST | NLM_F_ACK, 1, 0)
    return hdr + body


def parse_ack(data):
    """(errno, extack message) of the NLMSG_ERROR in data: the error, the
    request echoed (its header alone when capped), the extack TLVs."""
    off = 0
    while off + 16 <= len(data):
        length, kind, flags, _, _ = struct.unpack_from('=IHHII', data, off)
        if kind == NLMSG_ERROR:
            err = -struct.unpack_from('=i', data, off + 16)[0]
            msg = None
            echoed = 16
            if not flags & NLM_F_CAPPED:
                echoed = struct.unpack_from('=I', data, off + 20)[0]
            tlv = off + 16 + 4 + ((echoed + 3) & ~3)
            while flags & NLM_F_ACK_TLVS and tlv + 4 <= off + length:
                alen, atype = struct.unpack_from('=HH', data, tlv)
                if alen < 4:
                    break
                if atype & 0x3fff == NLMSGERR_ATTR_MSG:
                    msg = data[tlv + 4:tlv + alen].split(b'\0')[0].decode()
                tlv += (alen + 3) & ~3
            return err, msg
        if length < 16:
            break
        off += (length + 3) & ~3
    raise ValueError(f'no NLMSG_ERROR in {data!r}')


def rtnl_attempt(fail, n, msg):
    """Round n: msg on a new NETLINK_ROUTE socket, allocation n failing."""
    sock = ArmedSocket(nl_socket(socket.NETLINK_ROUTE), fail)
    a = Attempt(n)
    sock.arm(n)
    try:
        sock.send(msg)
        a.err, a.msg = parse_ack(sock.recv(65536))
        a.outcome = 'error' if a.err else 'ok'
    except TimeoutError:
        a.outcome, a.msg = 'bad', f'no answer in {ANSWER_TIMEOUT} s'
    except OSError as e:
        a.outcome = 'lost' if sock.sent else 'error'
        a.where = 'recvmsg' if sock.sent else 'sendmsg'
        a.err = e.errno or 0
    except (ValueError, struct.error) as e:
        a.outcome, a.msg = 'bad', str(e)
    finally:
        sock.close()
    return finish(a, sock)


def settle(check, timeout=SETTLE):
    """check() until it finds no problem, for timeout seconds at most:
    a binding is freed, and a page pool released, after the request."""
    deadline = time.monotonic() + timeout
    while True:
        problems = check()
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(0.1)


def dmabufs():
    """The dma-bufs alive, from debugfs: {inode: (file references,
    attached devices)} and their number."""
    bufs, ino = {}, None
    total = None
    for line in read(BUFINFO).splitlines():
        f = line.split('\t')
        if len(f) >= 7 and f[0].isdigit() and f[3].isdigit() and f[5].isdigit():
            ino = int(f[5])
            bufs[ino] = (int(f[3]), 0)
        elif line.startswith('Total ') and line.endswith(' devices attached'):
            if ino is not None:
                bufs[ino] = (bufs[ino][0], int(line.split()[1]))
        elif line.startswith('Total ') and ' objects' in line:
            total = int(line.split()[1])
    return bufs, total


def buf_problems(ino):
    """Our udmabuf must be ours alone: no binding's reference, no device
    attached."""
    bufs, _ = dmabufs()
    if ino not in bufs:
        return [f'udmabuf (inode {ino}) not in {BUFINFO}']
    refs, attached = bufs[ino]
    problems = []
    if refs != 1:
        problems.append(f'udmabuf has {refs} file references, ours is 1')
    if attached:
        problems.append(f'udmabuf still attached to {attached} device(s)')
    return problems


def dmabuf_count_back(before):
    """The number of dma-bufs alive is what it was before the case."""
    if before is None:
        return [f'no "Total N objects" line in {BUFINFO}']

    def check():
        now = dmabufs()[1]
        return [] if now == before else [f'{now} dma-bufs alive, {before} before the case']
    return settle(check)


def netif_flags():
    return int(read(f'/sys/class/net/{NETIF}/flags'), 16)


def wait_carrier(timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if read(f'/sys/class/net/{NETIF}/carrier') == '1':
                return True
        except OSError:
            pass    # EINVAL while down
        time.sleep(0.1)
    return False


def passes_traffic():
    """Carrier, and the peer answers pings (a second try after 2 s, for a
    link still negotiating)."""
    if not wait_carrier():
        return [f'no carrier on {NETIF} 10 s after the loop']
    for attempt in (1, 2):
        p = subprocess.run(['ping', '-c', '2', '-W', '3', REMOTE_V4],
                           capture_output=True, text=True, check=False)
        if p.returncode == 0:
            if attempt == 2:
                diag('the first ping after the loop failed, the second passed')
            return []
        time.sleep(2)
    out = (p.stdout + p.stderr).strip().splitlines()
    return [f'ping {REMOTE_V4} fails after the loop: {out[-1] if out else p.returncode}']


class KernelLog:
    """The kernel log's records from the time it is made on (/dev/kmsg)."""

    def __init__(self):
        self.fd = os.open('/dev/kmsg', os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def new_lines(self):
        """The records written since the last call (None for those
        overwritten before they were read)."""
        return kmsg.new_records(self.fd)

    def close(self):
        os.close(self.fd)


class Loop:
    """The fail-nth loop of one operation, and what its rounds saw. refusal:
    the (errno, extack message) the request is refused with without a
    fault, for one that is refused."""

    def __init__(self, what, refusal=None, reaches=True):
        self.what = what
        self.refusal = refusal
        # Whether the request's handling reaches the code under test: one
        # the core refuses before it does is run for what the refusal
        # path leaves, and its faults cannot be the code under test's.
        self.reaches = reaches
        self.endings = collections.Counter()    # evidence.fault_ending()s
        self.request_ns = []    # the rounds that ended in an error from the request
        self.inside_ns = []     # those of them whose failed allocation was the code under test's
        # The kernel log from here on: each injected fault's call trace
        # (verbose 2) says whose allocation failed.
        self.log = KernelLog()
        self.errors = collections.Counter()
        self.extacks = collections.Counter()
        self.problems = []
        self.bad_rounds = 0
        self.rounds = 0
        self.final = None
        self.secs = 0.0

    def run(self, step):
        """step(n) runs round n and returns (Attempt, problems)."""
        t0 = time.monotonic()
        for n in range(1, MAX_NTH + 1):
            try:
                a, problems = step(n)
            except Exception as e:  # pylint: disable=broad-except
                # Undoing the round failed (the request was disarmed).
                self.problems.append(f'N={n}: the round broke off: '
                                     f'{type(e).__name__}: {e}')
                break
            self.rounds = n
            lines = self.log.new_lines()
            if None in lines:
                problems.append('kernel log records were overwritten before they were read: '
                                'whose allocation failed is unknown')
            a.inside = E.fault_inside(lines)
            if a.injected:
                self.count(a, problems)
            if problems:
                self.bad_rounds += 1
                self.problems += [f'N={n}: {a.describe()}: {p}' for p in problems]
            if not a.injected:
                self.final = a
                break
            if self.bad_rounds >= MAX_BAD_ROUNDS:
                self.problems.append(f'stopped at N={n}, after {self.bad_rounds} '
                                     'rounds with problems')
                break
            if n % 100 == 0:
                gc.collect()
                diag(f'{self.what}: N={n} after {time.monotonic() - t0:.0f} s')
        else:
            self.problems.append(f'allocation {MAX_NTH} still failed the request: '
                                 'raise MAX_NTH')
        self.secs = time.monotonic() - t0
        self.log.close()
        if self.final is not None and self.final.n == 1:
            self.problems.append('no allocation failed at N=1: fault injection '
                                 'did not reach the request')
        elif self.final is not None:
            # Run to its end: some fault must have made the request fail.
            self.problems += E.fault_problems(self.what, self.endings,
                                              len(self.inside_ns) if self.reaches else None)
        return self.final

    def count(self, a, problems):
        """A round where allocation n failed: how did the request end?"""
        ending = E.fault_ending(a.outcome, a.where, a.err, a.msg, self.refusal)
        self.endings[ending] += 1
        if ending == E.REQUEST:
            self.request_ns.append(a.n)
            if a.inside:
                self.inside_ns.append(a.n)
        if a.outcome in ('error', 'lost'):
            self.errors[a.key()] += 1
            if a.msg:
                self.extacks[a.msg] += 1
            if a.err <= 0:
                problems.append(f'an error without an errno ({a.err})')
        elif a.outcome != 'ok':
            problems.append('not a clean error')

    def summary(self):
        errs = ', '.join(f'{k} x{v}' for k, v in self.errors.most_common()) or 'none'
        # Where the errors from the request were: the first rounds fail the
        # netlink layers' allocations, before the code under test runs.
        lines = [f'{E.fault_summary(self.what, self.endings)}; {self.secs:.0f} s',
                 f'{self.what}: errors from the request at N='
                 f'{E.ranges(self.request_ns) or "none"}; errnos: {errs}',
                 f'{self.what}: of them, the failed allocation was the code under test\'s '
                 f'(its call trace) at N={E.ranges(self.inside_ns) or "none"}']
        ext = '; '.join(f'"{k}" x{v}' for k, v in self.extacks.most_common())
        lines.append(f'{self.what}: extack messages: {ext or "none"}')
        if self.final:
            lines.append(f'{self.what}: N={self.final.n}, no allocation failed: '
                         f'{self.final.describe()}')
        return lines


class Rig:
    """The device under test and the YNL families: observers, and the ones
    whose requests are armed (a new socket each round)."""

    def __init__(self, fail):
        self.fail = fail
        self.ifindex = int(read(f'/sys/class/net/{NETIF}/ifindex'))
        self.nd = YnlFamily(NETDEV_SPEC, schema='')
        self.eth = YnlFamily(ETHTOOL_SPEC, schema='')
        self.nd_op = YnlFamily(NETDEV_SPEC, schema='')
        self.eth_op = YnlFamily(ETHTOOL_SPEC, schema='')
        self.nd_hold = YnlFamily(NETDEV_SPEC, schema='')
        self.header = {'header': {'dev-name': NETIF}}

    def rings(self):
        return self.eth.do('rings-get', self.header)

    def set_rings(self, **attrs):
        self.eth.do('rings-set', {**self.header, **attrs})

    def split_on(self):
        return self.rings().get('tcp-data-split') == 'enabled'

    def set_split(self, on):
        if self.split_on() != on:
            self.set_rings(**{'tcp-data-split': 'enabled' if on else 'disabled'})

    def channels(self):
        return self.eth.do('channels-get', self.header)

    def bind_queue(self):
        """Queue 1, or 0 on a single channel."""
        return 1 if self.channels().get('combined-count', 1) >= 2 else 0

    def rx_queues(self):
        """{rx queue id: the binding it shows, or None}."""
        return {q['id']: q.get('dmabuf')
                for q in self.nd.dump('queue-get', {'ifindex': self.ifindex})
                if q.get('type') == 'rx'}

    def pools(self):
        return [p for p in self.nd.dump('page-pool-get', {})
                if p.get('ifindex') == self.ifindex]

    def live_pools(self):
        return {p['id'] for p in self.pools() if 'detach-time' not in p}

    def binding_problems(self, held=None, held_q=None):
        """No rx queue and no page pool shows a binding but `held`, which
        shows on queue held_q and on exactly one live pool."""
        problems = []
        for qid, b in sorted(self.rx_queues().items()):
            want = held if qid == held_q else None
            if b != want and b is None:
                problems.append(f'rx queue {qid} lost the held binding {held}')
            elif b != want:
                problems.append(f'rx queue {qid} shows dmabuf {b}')
        live = 0
        for p in self.pools():
            b = p.get('dmabuf')
            if b is None:
                continue
            if b != held:
                state = 'detached' if 'detach-time' in p else 'live'
                problems.append(f'{state} page pool {p["id"]} shows dmabuf {b}')
            elif 'detach-time' not in p:
                live += 1
        if held is not None and live != 1:
            problems.append(f'{live} live page pools show the held binding {held}')
        return problems

    def set_link(self, up):
        """IFF_UP on or off, without faults."""
        with nl_socket(socket.NETLINK_ROUTE) as s:
            s.settimeout(ANSWER_TIMEOUT)
            s.send(setlink_msg(self.ifindex, up))
            err, msg = parse_ack(s.recv(65536))
        if err:
            raise OSError(err, f'link {"up" if up else "down"}: {msg or os.strerror(err)}')

    @contextmanager
    def held_binding(self, pages, problems, queue=None):
        """Header split on and a udmabuf bound to `queue` (the bind queue
        by default), on a socket of its own; yields (binding id, queue).
        Closed, checked (into problems) and header split put back on the
        way out."""
        q = self.bind_queue() if queue is None else queue
        old_split = self.split_on()
        buf = udmabuf.create(pages)
        ino = os.fstat(buf).st_ino
        sock = None
        try:
            self.set_split(True)
            sock = nl_socket(self.nd_hold.nlproto.proto_num)
            self.nd_hold.sock = sock
            bid = self.nd_hold.do('bind-rx', {'ifindex': self.ifindex, 'fd': buf,
                                              'queues': [{'id': q, 'type': 'rx'}]})['id']
            before = settle(lambda: self.binding_problems(bid, q))
            if before:
                raise RuntimeError('the held binding, before any fault: ' + '; '.join(before))
            yield bid, q
        finally:
            if sock is not None:
                sock.close()
            after = settle(lambda: self.binding_problems() + buf_problems(ino))
            problems += [f'once the held binding was closed: {p}' for p in after]
            os.close(buf)
            self.set_split(old_split)


def expect_success(loop, problems):
    """The last round, where nothing failed, must do what the request does."""
    problems += loop.problems
    if loop.final is not None and loop.final.outcome != 'ok':
        problems.append(f'without a fault the request fails: {loop.final.describe()}')


def run_loop(name, step, problems):
    """The fault loop of `step`: its summary logged, its problems and a
    last round that must succeed into problems."""
    loop = Loop(name)
    loop.run(step)
    for line in loop.summary():
        diag(line)
    expect_success(loop, problems)


def case_bind_rx(rig, problems):
    """bind-rx of a udmabuf to queue 1, header split on."""
    q = rig.bind_queue()
    total = dmabufs()[1]
    old_split = rig.split_on()
    buf = udmabuf.create(BIND_PAGES)
    ino = os.fstat(buf).st_ino
    attrs = {'ifindex': rig.ifindex, 'fd': buf, 'queues': [{'id': q, 'type': 'rx'}]}

    def clean():
        return rig.binding_problems() + buf_problems(ino)

    def step(n):
        a, sock = ynl_attempt(rig.nd_op, rig.fail, n, 'bind-rx', attrs)
        found = []
        try:
            if a.outcome == 'ok':
                bid = (a.reply or {}).get('id')
                if not bid:
                    found.append('the reply has no binding id')
                else:
                    # Bound for real: the queue and one live pool (made
                    # with the provider) show it.
                    found += settle(lambda: rig.binding_problems(bid, q))
            elif a.outcome == 'error':
                found += [f'before the socket closed: {p}' for p in settle(clean)]
        finally:
            sock.close()
        found += [f'after the socket closed: {p}' for p in settle(clean)]
        return a, found

    try:
        rig.set_split(True)
        before = settle(clean)
        if before:
            problems += [f'before the loop: {p}' for p in before]
            return
        run_loop('bind-rx', step, problems)
    finally:
        os.close(buf)
        rig.set_split(old_split)
    problems += passes_traffic() + dmabuf_count_back(total)


def case_bind_tx(rig, problems):
    """bind-tx of a udmabuf."""
    total = dmabufs()[1]
    buf = udmabuf.create(TX_PAGES)
    ino = os.fstat(buf).st_ino
    attrs = {'ifindex': rig.ifindex, 'fd': buf}

    def clean():
        return rig.binding_problems() + buf_problems(ino)

    def step(n):
        a, sock = ynl_attempt(rig.nd_op, rig.fail, n, 'bind-tx', attrs)
        found = []
        try:
            if a.outcome == 'ok' and not (a.reply or {}).get('id'):
                found.append('the reply has no binding id')
            elif a.outcome == 'error':
                found += [f'before the socket closed: {p}' for p in settle(clean)]
        finally:
            sock.close()
        found += [f'after the socket closed: {p}' for p in settle(clean)]
        return a, found

    try:
        run_loop('bind-tx', step, problems)
    finally:
        os.close(buf)
    problems += passes_traffic() + dmabuf_count_back(total)


def held_pages(rig, rx):
    """Enough net_iovs for the bound queue's ring at any size the case
    sets, twice over (a ring is made before the old one goes, on a failed
    open's way back)."""
    return max(BIND_PAGES, 4 * max(rx, rig.rings().get('rx', 0)))


def case_rings(rig, problems):
    """rings-set rx and tx, a restart of every queue, with a binding held."""
    total = dmabufs()[1]
    r = rig.rings()
    cur = {k: r[k] for k in ('rx', 'tx')}
    target = {k: min(2 * v, r.get(f'{k}-max', 2 * v)) for k, v in cur.items()}
    attrs = {**rig.header, **target}
    try:
        with rig.held_binding(held_pages(rig, target['rx']), problems) as (bid, q):
            diag(f'rings-set: rx {cur["rx"]} -> {target["rx"]}, tx {cur["tx"]} -> '
                 f'{target["tx"]}, dmabuf {bid} held on rx queue {q}')

            def step(n):
                a, sock = ynl_attempt(rig.eth_op, rig.fail, n, 'rings-set', attrs)
                sock.close()
                found = []
                r = rig.rings()
                now = {k: r[k] for k in cur}
                if a.outcome == 'ok' and now != target:
                    found.append(f'rings {now}, not {target}')
                if a.outcome == 'error' and now != cur:
                    found.append(f'rings {now} after a failed request, not {cur}')
                if r.get('tcp-data-split') != 'enabled':
                    found.append(f'tcp-data-split {r.get("tcp-data-split")}')
                if now != cur:
                    rig.set_rings(**cur)
                found += settle(lambda: rig.binding_problems(bid, q))
                return a, found

            run_loop('rings-set', step, problems)
    finally:
        r = rig.rings()
        if {k: r[k] for k in cur} != cur:
            rig.set_rings(**cur)
    problems += passes_traffic() + dmabuf_count_back(total)


def case_channels(rig, problems):
    """channels-set combined, a device restart, with a binding held."""
    total = dmabufs()[1]
    ch = rig.channels()
    cur = ch['combined-count']
    target = cur + 1 if cur < ch.get('combined-max', cur) else cur - 1
    attrs = {**rig.header, 'combined-count': target}
    try:
        # On the highest queue both counts keep: 7.3's
        # ethtool_check_max_channel() refused the smaller count, although
        # it keeps that queue (a count compared as if it were an index;
        # fixed by the series' ethtool patch).
        keep = min(cur, target) - 1
        with rig.held_binding(BIND_PAGES, problems, queue=keep) as (bid, q):
            if target <= q:
                problems.append(f'{cur} channels, at most: no count keeps queue {q}')
                return
            diag(f'channels-set: combined {cur} -> {target}, dmabuf {bid} held on '
                 f'rx queue {q}')

            def step(n):
                a, sock = ynl_attempt(rig.eth_op, rig.fail, n, 'channels-set', attrs)
                sock.close()
                found = []
                now = rig.channels()['combined-count']
                nq = len(rig.rx_queues())
                if a.outcome == 'ok' and (now, nq) != (target, target):
                    found.append(f'{now} channels, {nq} rx queues, not {target}')
                if a.outcome == 'error' and (now, nq) != (cur, cur):
                    found.append(f'{now} channels, {nq} rx queues after a failed '
                                 f'request, not {cur}')
                if now != cur:
                    rig.eth.do('channels-set', {**rig.header, 'combined-count': cur})
                found += settle(lambda: rig.binding_problems(bid, q))
                return a, found

            run_loop('channels-set', step, problems)
    finally:
        if rig.channels()['combined-count'] != cur:
            rig.eth.do('channels-set', {**rig.header, 'combined-count': cur})
    problems += passes_traffic() + dmabuf_count_back(total)


def case_split_off(rig, problems):
    """tcp-data-split off with a binding held: refused, every allocation
    of the refusal path failing in turn."""
    total = dmabufs()[1]
    attrs = {**rig.header, 'tcp-data-split': 'disabled'}
    with rig.held_binding(BIND_PAGES, problems) as (bid, q):

        def step(n):
            a, sock = ynl_attempt(rig.eth_op, rig.fail, n, 'rings-set', attrs)
            sock.close()
            found = []
            if not rig.split_on():
                found.append('tcp-data-split went off under the binding')
                rig.set_split(True)
            found += settle(lambda: rig.binding_problems(bid, q))
            return a, found

        # The ethtool core refuses it (a memory provider on a queue)
        # before igb_rs is asked: no allocation of ours on this path.
        loop = Loop('split off', refusal=(errno.EINVAL, SPLIT_REFUSED), reaches=False)
        loop.run(step)
        for line in loop.summary():
            diag(line)
        problems += loop.problems
        final = loop.final
        if final is not None and (final.outcome, final.err, final.msg) != \
                ('error', errno.EINVAL, SPLIT_REFUSED):
            problems.append(f'without a fault: {final.describe()}, not '
                            f'EINVAL "{SPLIT_REFUSED}"')
    problems += passes_traffic() + dmabuf_count_back(total)


def case_split_on(rig, problems):
    """tcp-data-split on from off, no binding: each receive queue restarts
    on a new ring; a failed request leaves header split off."""
    total = dmabufs()[1]
    old = rig.split_on()
    attrs = {**rig.header, 'tcp-data-split': 'enabled'}
    try:
        rig.set_split(False)

        def step(n):
            a, sock = ynl_attempt(rig.eth_op, rig.fail, n, 'rings-set', attrs)
            sock.close()
            found = []
            on = rig.split_on()
            if a.outcome == 'ok' and not on:
                found.append('tcp-data-split off after a successful request')
            if a.outcome == 'error' and on:
                found.append('tcp-data-split on after a failed request')
            if on:
                rig.set_split(False)
            return a, found

        run_loop('split on', step, problems)
    finally:
        rig.set_split(old)
    problems += passes_traffic() + dmabuf_count_back(total)


def has_address(family, addr):
    p = subprocess.run(['ip', '-o', family, 'addr', 'show', 'dev', NETIF],
                       capture_output=True, text=True, check=False)
    return f' {addr}/' in p.stdout


def readdress():
    """A failed NETDEV_UP notifier may drop a kept IPv6 address (addrconf
    could not add its prefix route): the next suites need both."""
    for family, addr, extra in (('-4', f'{LOCAL_V4}/24', []),
                                ('-6', f'{LOCAL_V6}/64', ['nodad'])):
        if not has_address(family, addr.split('/', maxsplit=1)[0]):
            diag(f'link up: {addr} was gone from {NETIF}, added again')
            subprocess.run(['ip', family, 'addr', 'add', addr, 'dev', NETIF] + extra,
                           check=False)


def case_open(rig, problems):
    """ndo_open: RTM_NEWLINK IFF_UP from down, on a raw rtnetlink socket."""
    total = dmabufs()[1]
    up_msg = setlink_msg(rig.ifindex, True)
    try:
        rig.set_link(False)
        # Pools of a device that is down: none (those still draining are
        # detached, with a detach-time).
        base = rig.live_pools()

        def step(n):
            a = rtnl_attempt(rig.fail, n, up_msg)
            found = []
            up = bool(netif_flags() & IFF_UP)
            if a.outcome == 'error':
                if up:
                    found.append('IFF_UP set after a failed open')
                extra = rig.live_pools() - base
                if extra:
                    found.append(f'live page pools {sorted(extra)} of {NETIF} after '
                                 'a failed open')
            elif a.outcome == 'ok' and not up:
                found.append('IFF_UP not set after a successful open')
            if up and a.injected:
                rig.set_link(False)
            return a, found

        run_loop('link up', step, problems)
    finally:
        try:
            if not netif_flags() & IFF_UP:
                rig.set_link(True)
        except OSError as e:
            problems.append(f'the link does not come up again: {e}')
        readdress()
    problems += passes_traffic() + dmabuf_count_back(total)


CASES = [
    ('bind-rx: each allocation fails in turn, clean error, nothing left', case_bind_rx),
    ('bind-tx: each allocation fails in turn, clean error, nothing left', case_bind_tx),
    ('rings-set rx and tx with a binding held: each allocation fails in turn', case_rings),
    ('channels-set with a binding held: each allocation fails in turn', case_channels),
    ('tcp-data-split off with a binding held: refused, each allocation fails in turn',
     case_split_off),
    ('tcp-data-split on: each allocation fails in turn, a failure leaves it off',
     case_split_on),
    ('link up (ndo_open): each allocation fails in turn, clean error, nothing left',
     case_open),
]


def missing():
    """What the kernel lacks for this suite."""
    need = [(FAIL_NTH, 'CONFIG_FAULT_INJECTION'),
            (os.path.join(DEBUGFS, 'failslab'), 'CONFIG_FAILSLAB, ..._DEBUG_FS'),
            (os.path.join(DEBUGFS, 'fail_page_alloc'), 'CONFIG_FAIL_PAGE_ALLOC'),
            (BUFINFO, 'CONFIG_DEBUG_FS, CONFIG_DMA_SHARED_BUFFER')]
    return [f'{path} ({conf})' for path, conf in need if not os.path.exists(path)]


def main():
    print('TAP version 13', flush=True)
    lacks = missing()
    if lacks:
        # Only the debug kernel runs this suite, and it must have them.
        print('1..1')
        print(f'# no {"; no ".join(lacks)}')
        print('not ok 1 - the kernel lacks fault injection (or the dma-buf debugfs)')
        return 1
    print(f'1..{len(CASES)}', flush=True)
    # No collection (and munmap) in this thread between the write to
    # fail-nth and the request: collected between cases instead.
    gc.disable()
    failed = printed = 0
    try:
        with fault_settings():
            fail = FailNth()
            fail.disarm()
            rig = Rig(fail)
            r = rig.rings()
            sizes = {k: r[k] for k in ('rx', 'tx')}
            rig.set_rings(rx=RING_MIN, tx=RING_MIN)
            for n, (name, fn) in enumerate(CASES, 1):
                gc.collect()
                problems = []
                t0 = time.monotonic()
                try:
                    fn(rig, problems)
                except Exception:  # pylint: disable=broad-except
                    fail.disarm()
                    problems += traceback.format_exc().strip().splitlines()[-6:]
                for p in problems[:30]:
                    diag(p)
                diag(f'{time.monotonic() - t0:.0f} s')
                failed += bool(problems)
                printed = n
                print(f'{"not ok" if problems else "ok"} {n} - {name}', flush=True)
            try:
                rig.set_rings(**sizes)
            except (OSError, NlError) as e:
                diag(f'the ring sizes {sizes} could not be put back: {e}')
                failed += 1
    except Exception:  # pylint: disable=broad-except
        # The settings or the YNL families: no case can run (or the
        # settings could not be put back, after the last one).
        for line in traceback.format_exc().strip().splitlines()[-6:]:
            diag(line)
        for n, (name, _) in enumerate(CASES[printed:], printed + 1):
            print(f'not ok {n} - {name}', flush=True)
        return 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
