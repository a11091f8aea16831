#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Receive while the page pool's allocations fail.

Runs in the guest (run.sh exports NETIF, KSRC, LOCAL_V4, REMOTE_V4; the
peer is in netns ns-remote) on the debug kernel. TAP on stdout.

Upstream's drivers/net/hw/pp_alloc_fail.py makes page_pool_alloc_netmems()
fail under traffic through fail_function (a kprobe) and reads the driver's
rx-alloc-fail from the netdev family's queue stats. It wants 4000 packets
a second first, which this TCG guest does not carry on the debug kernel,
and one failure per 512 packets, which assumes one allocation per packet:
igb_rs reuses the other half of a receive page in place and allocates
about once per hundred packets. This suite runs its method on what the
driver does, and asks more of it. The faults come from fail_page_alloc,
limited by its stack filter (require-start/require-end,
CONFIG_FAULT_INJECTION_STACKTRACE_FILTER) to the page allocations the page
pool's slow path makes (__page_pool_alloc_netmems_slow: its bulk
allocation and the single page it falls back on), in any context: NAPI's
refill and the ring fill of open alike. No kprobe: the code is not
patched under traffic.

  1. a TCP stream from the peer arrives (bytes counted by the receiver);
  2. with the next 50 page-pool allocations failing, rx-alloc-fail grows
     and the stream goes on;
  3. with every one failing for 2 s from the first failure (the stream
     slows or stops as the ring empties), once they succeed again the
     stream must come back by itself within 10 s;
  4. with every one failing, the receive ring size changed (ethtool -G:
     the device down and up on rings the pools cannot fill): the change
     ends, and once allocations succeed the stream comes back by itself
     (within 30 s: the peer's retransmissions back off meanwhile); a
     driver whose open fails without buffers, or whose empty ring waits
     for a receive interrupt that never comes, stays deaf here;
  5. with every one failing, a devmem binding on the last queue is let go
     (its netlink socket closed): the queue must leave the binding's
     buffers for a ring the pools cannot fill yet (the core warns if the
     driver fails that restart, and the queue would stay on the binding's
     buffers), and receive the stream once allocations succeed (a flow
     rule steers it there);
  6. with a binding held and every page pool's creation failing
     (failslab, its stack filter on page_pool_create_percpu), the receive
     ring size changed: igb_rs's open fails on the new sizes and again on
     the old ones, which leaves the device up with no queue running; the
     binding then let go must not have the core warn (the driver says
     ENETDOWN, as for a device that is down), and down and up bring the
     device back;
  7. with the fault off, rx-alloc-fail stops growing and the stream flows.

The kernel log, kmemleak and DMA-API debugging are judged by the harness
after all suites (results.py); a page the driver lost on a failed refill
shows as the page pool's "stalled pool shutdown" when the ring goes.
"""

import os
import select
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

KSRC = os.environ['KSRC']
NETIF = os.environ['NETIF']
LOCAL_V4 = os.environ['LOCAL_V4']
sys.path.insert(0, os.path.join(KSRC, 'tools/net/ynl/pyynl'))
from lib import YnlFamily  # noqa: E402  pylint: disable=wrong-import-position,import-error

NETDEV_SPEC = os.path.join(KSRC, 'Documentation/netlink/specs/netdev.yaml')
FAIL = '/sys/kernel/debug/fail_page_alloc'
# The page pool's allocations of host pages (order 0: igb_rs's).
FUNC = '__page_pool_alloc_netmems_slow'
PORT = 5201
# The failures of case 2: a burst, then allocations succeed.
FEW = 50
# The attributes set, put back as they were at the end.
ATTRS = ('probability', 'interval', 'times', 'verbose', 'task-filter',
         'ignore-gfp-wait', 'ignore-gfp-highmem', 'min-order',
         'require-start', 'require-end', 'stacktrace-depth')
saved = {}


def read(name):
    with open(f'{FAIL}/{name}', encoding='ascii') as f:
        return f.read().strip()


def write(name, value):
    with open(f'{FAIL}/{name}', 'w', encoding='ascii') as f:
        f.write(f'{value}\n')


def func_range(name):
    """The addresses of function `name`: its own, up to the next symbol's
    (/proc/kallsyms, sorted)."""
    syms = []
    with open('/proc/kallsyms', encoding='ascii') as f:
        for line in f:
            addr, kind, sym = line.split()[:3]
            if kind in 'tT':
                syms.append((int(addr, 16), sym))
    syms.sort()
    for i, (addr, sym) in enumerate(syms):
        if sym == name:
            if addr == 0:
                raise RuntimeError('/proc/kallsyms hides addresses (kptr_restrict)')
            return addr, syms[i + 1][0]
    raise RuntimeError(f'no {name} in /proc/kallsyms')


def setup():
    for a in ATTRS:
        saved[a] = read(a)
    lo, hi = func_range(FUNC)
    write('probability', 0)
    write('require-start', lo)
    write('require-end', hi)
    write('stacktrace-depth', 32)
    write('task-filter', 'N')
    write('ignore-gfp-wait', 'N')
    write('ignore-gfp-highmem', 'N')
    write('min-order', 0)
    write('verbose', 0)
    write('interval', 1)


def inject(times=-1):
    """Fail every page-pool allocation, `times` times (-1: until off())."""
    write('times', times)
    write('probability', 100)


def off():
    write('probability', 0)
    write('times', 0)


def restore():
    off()
    for a in ATTRS:
        if a in saved:
            write(a, saved[a])


class Stream:
    """A TCP stream from the peer's namespace to LOCAL_V4: socat there
    sends zeroes, a thread here reads and counts them."""

    def __init__(self):
        self.received = 0
        self.lock = threading.Lock()
        self.lst = socket.create_server((LOCAL_V4, PORT), reuse_port=False)
        self.sender = subprocess.Popen(
            ['ip', 'netns', 'exec', 'ns-remote', 'socat', '-u', 'OPEN:/dev/zero',
             f'TCP:{LOCAL_V4}:{PORT}'], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.lst.settimeout(30)
        self.conn, self.peer = self.lst.accept()
        self.conn.settimeout(1)
        self.stop = False
        self.held = threading.Event()
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        while not self.stop:
            if self.held.is_set():
                time.sleep(0.05)
                continue
            try:
                n = len(self.conn.recv(1 << 16))
            except socket.timeout:
                continue
            except OSError:
                return
            if n == 0:
                return
            with self.lock:
                self.received += n

    def hold(self, secs):
        """Stops reading for `secs` seconds: the frames queue up on the
        socket with their pages, which the driver then cannot reuse in
        place and must allocate anew."""
        self.held.set()
        time.sleep(secs)
        self.held.clear()

    def bytes(self):
        with self.lock:
            return self.received

    def rate(self, secs):
        """Bytes received over the next `secs` seconds."""
        before = self.bytes()
        time.sleep(secs)
        return self.bytes() - before

    def close(self):
        self.stop = True
        self.sender.kill()
        self.sender.wait()
        self.thread.join(5)
        self.conn.close()
        self.lst.close()


class Suite:
    def __init__(self):
        self.n = 0
        self.failed = 0
        self.nl = YnlFamily(NETDEV_SPEC, schema='')
        with open(f'/sys/class/net/{NETIF}/ifindex', encoding='ascii') as f:
            self.ifindex = int(f.read())

    def stats(self):
        return self.nl.dump('qstats-get', {'ifindex': self.ifindex})[0]

    def case(self, name, fn):
        self.n += 1
        try:
            note = fn()
        except Exception as e:  # pylint: disable=broad-except
            self.failed += 1
            print(f'not ok {self.n} {name}')
            print(f'# {type(e).__name__}: {e}')
            return False
        print(f'ok {self.n} {name}')
        if note:
            print(f'# {note}')
        return True


class Failed(Exception):
    pass


def first_failure(s, stream, before, secs):
    """The queue stats once rx-alloc-fail grew past `before`'s, within
    `secs` seconds. The driver allocates only for a page it cannot reuse
    in place, and the pool gives pages back from its caches first: the
    receiver pauses now and then for 2 s, long enough for the socket to
    hold more pages (a thousand at this guest's pace) than the ring and
    the pool's caches have."""
    deadline = time.monotonic() + secs
    while True:
        stream.hold(2)
        now = s.stats()
        if now['rx-alloc-fail'] > before['rx-alloc-fail']:
            return now
        if time.monotonic() > deadline:
            raise Failed(f'rx-alloc-fail +0 in {secs} s over '
                         f'{now["rx-packets"] - before["rx-packets"]} packets')
        time.sleep(0.2)


def ring_size():
    r = subprocess.run(['ethtool', '-g', NETIF], capture_output=True, text=True, check=True)
    # The second "RX:" line is the current setting (the first, the maximum).
    rx = [ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith('RX:')]
    return int(rx[-1])


SLAB = '/sys/kernel/debug/failslab'
# The slab allocations under it fail in case 6: every ring's payload and
# header pools are made through it (igb_rs's open), and nothing else the
# case does makes one.
POOL_CREATE = 'page_pool_create_percpu'
# probability first: the fault is off before the rest changes.
SLAB_ATTRS = ('probability', 'interval', 'times', 'verbose', 'task-filter',
              'ignore-gfp-wait', 'require-start', 'require-end', 'stacktrace-depth')


class SlabFault:
    """failslab failing every allocation made under one function (its
    stack filter), until the block ends; the old settings put back."""

    def __init__(self, func):
        self.func = func
        self.saved = {}

    def __enter__(self):
        for a in SLAB_ATTRS:
            with open(f'{SLAB}/{a}', encoding='ascii') as f:
                self.saved[a] = f.read().strip()
        lo, hi = func_range(self.func)
        for a, v in (('probability', 0), ('require-start', lo), ('require-end', hi),
                     ('stacktrace-depth', 32), ('task-filter', 'N'),
                     ('ignore-gfp-wait', 'N'), ('verbose', 0), ('interval', 1),
                     ('times', -1), ('probability', 100)):
            with open(f'{SLAB}/{a}', 'w', encoding='ascii') as f:
                f.write(f'{v}\n')
        return self

    def __exit__(self, *exc):
        for a in SLAB_ATTRS:
            if a in self.saved:
                with open(f'{SLAB}/{a}', 'w', encoding='ascii') as f:
                    f.write(f'{self.saved[a]}\n')


def warnings_since(n):
    """The kernel log's WARNING lines after its first n lines."""
    lines = subprocess.run(['dmesg'], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    return [ln for ln in lines[n:] if 'WARNING:' in ln]


def log_lines():
    return len(subprocess.run(['dmesg'], capture_output=True, text=True,
                              check=True).stdout.splitlines())


def ethtool(*args):
    return subprocess.run(['ethtool', *args], capture_output=True, text=True,
                          check=True, timeout=120).stdout


class Holder:
    """races.py's binding holder: a udmabuf bound to rx queue `q` on a
    netlink socket of its own, let go when told."""

    def __init__(self, ifindex, q, pages):
        races = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'races.py')
        self.p = subprocess.Popen([sys.executable, races, '--hold', 'rx', str(ifindex),
                                   str(q), str(pages)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = self.line(120)
        if not line.startswith('bound '):
            self.end()
            raise Failed(f'bind-rx to queue {q}: {line or "no answer"}')
        self.bid = int(line.split()[1])

    def line(self, secs):
        r, _, _ = select.select([self.p.stdout], [], [], secs)
        return self.p.stdout.readline().strip() if r else ''

    def close(self):
        """Closes its netlink socket: the binding goes (the queue restarts
        without it) before the close returns."""
        self.p.stdin.write('close\n')
        self.p.stdin.flush()
        line = self.line(120)
        if line != 'closed':
            raise Failed(f'the holder did not close its socket: {line or "no answer"}')

    def end(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def main():
    print('TAP version 13')
    print('1..8')
    s = Suite()
    st = {}

    if not os.path.exists(f'{FAIL}/require-start'):
        print('Bail out! no fail_page_alloc stack filter in debugfs '
              '(CONFIG_FAIL_PAGE_ALLOC, CONFIG_FAULT_INJECTION_STACKTRACE_FILTER)')
        return 1

    def start():
        first = s.stats()
        if 'rx-alloc-fail' not in first:
            raise Failed(f'{NETIF} reports no rx-alloc-fail in its queue stats')
        st['stream'] = stream = Stream()
        moved = stream.rate(2)
        if moved == 0:
            raise Failed('no bytes in 2 s')
        return f'{moved} bytes in 2 s'

    def some_fail():
        stream = st['stream']
        s1, b1 = s.stats(), stream.bytes()
        inject(FEW)
        first_failure(s, stream, s1, 30)
        time.sleep(2)
        s2, b2 = s.stats(), stream.bytes()
        fails = s2['rx-alloc-fail'] - s1['rx-alloc-fail']
        pkts = s2['rx-packets'] - s1['rx-packets']
        deadline = time.monotonic() + 10
        while stream.rate(0.5) == 0:
            if time.monotonic() > deadline:
                raise Failed(f'rx-alloc-fail +{fails}; no bytes in the 10 s after')
        return f'{pkts} packets, rx-alloc-fail +{fails}, {b2 - b1} bytes'

    def comes_back(fails, why, secs=10):
        """Waits for the stream once allocations succeed again."""
        t0 = time.monotonic()
        while st['stream'].rate(0.5) == 0:
            if time.monotonic() - t0 > secs:
                raise Failed(f'rx-alloc-fail +{fails}; the stream did not come back '
                             f'within {secs} s of allocations succeeding again ({why})')
        return time.monotonic() - t0

    def dry():
        stream = st['stream']
        s1 = s.stats()
        inject()
        first_failure(s, stream, s1, 30)
        b1 = stream.bytes()
        time.sleep(1)
        b2 = stream.bytes()
        time.sleep(1)
        s2, b3 = s.stats(), stream.bytes()
        off()
        fails = s2['rx-alloc-fail'] - s1['rx-alloc-fail']
        back = comes_back(fails, 'rings in use')
        return (f'rx-alloc-fail +{fails} in 2 s, {b2 - b1} then {b3 - b2} bytes in its '
                f'two seconds; the stream flows again {back:.1f} s after')

    def ring_change():
        cur = ring_size()
        target = 512 if cur != 512 else 256
        s1 = s.stats()
        inject()
        try:
            r = subprocess.run(['ethtool', '-G', NETIF, 'rx', str(target)],
                               capture_output=True, text=True, check=False, timeout=120)
            s2 = s.stats()
        finally:
            off()
        now = ring_size()
        if r.returncode == 0 and now != target:
            raise Failed(f'ethtool -G rx {target} succeeded, the ring has {now}')
        if r.returncode != 0 and now != cur:
            raise Failed(f'ethtool -G rx {target} failed ({r.stderr.strip()}), '
                         f'the ring has {now}, not {cur}')
        fails = s2['rx-alloc-fail'] - s1['rx-alloc-fail']
        # The peer's retransmissions back off while nothing arrives (the
        # ring change takes seconds on this kernel): 30 s.
        back = comes_back(fails, f'after ethtool -G rx {target}', 30)
        how = 'done' if r.returncode == 0 else f'refused: {r.stderr.strip()}'
        if now != cur:
            subprocess.run(['ethtool', '-G', NETIF, 'rx', str(cur)], check=True)
            comes_back(0, f'after ethtool -G rx {cur}, without faults')
        return (f'rx {cur} -> {target} with every page-pool allocation failing: {how}; '
                f'the stream flows again {back:.1f} s after the fault is off')

    @contextmanager
    def bound_last_queue():
        """Header split on, the stream steered to queue 0 by a flow rule,
        and a udmabuf bound to the last queue by a holder; yields
        (holder, queue, steer), steer(q) moving the stream's rule to queue
        q. Everything undone on the way out."""
        q = len([d for d in os.listdir(f'/sys/class/net/{NETIF}/queues')
                 if d.startswith('rx-')]) - 1
        if q < 1:
            raise Failed(f'{NETIF} has one receive queue: nothing to bind but the stream\'s')
        rings = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rings.py')

        def set_split(on):
            subprocess.run([sys.executable, rings, NETIF, 'split', 'on' if on else 'off'],
                           check=True, timeout=120)

        split = 'tcp-data-split enabled' in subprocess.run(
            [sys.executable, rings, NETIF, 'get'], capture_output=True, text=True,
            check=True, timeout=120).stdout
        rule = []
        holder = None

        def steer(to):
            # The stream's whole four-tuple: a rule that leaves fields out
            # learns its flow from a SYN (igb_rs.rst, Flow steering), and
            # the stream is established.
            if rule:
                ethtool('-N', NETIF, 'delete', rule.pop())
            src, sport = st['stream'].peer
            out = ethtool('-N', NETIF, 'flow-type', 'tcp4', 'src-ip', src, 'dst-ip',
                          LOCAL_V4, 'src-port', str(sport), 'dst-port', str(PORT),
                          'action', str(to))
            rule.append(out.split()[-1])

        try:
            if not split:
                set_split(True)
            # Off the bound queue while bound: the socket reads host memory.
            steer(0)
            holder = Holder(s.ifindex, q, max(1024, 4 * ring_size()))
            yield holder, q, steer
        finally:
            if holder:
                holder.end()
            if rule:
                ethtool('-N', NETIF, 'delete', rule.pop())
            if not split:
                set_split(False)

    def still_bound(bid):
        """Where binding bid still shows: a queue, or a live page pool."""
        left = [f'queue {x["id"]}' for x in s.nl.dump('queue-get', {'ifindex': s.ifindex})
                if x.get('type') == 'rx' and x.get('dmabuf') == bid]
        left += [f'live page pool {p["id"]}'
                 for p in s.nl.dump('page-pool-get', {})
                 if p.get('ifindex') == s.ifindex and p.get('dmabuf') == bid and
                 'detach-time' not in p]
        return left

    def provider_let_go():
        """The core's uninstall of a memory provider restarts the queue on
        a ring of host pages; with every page-pool allocation failing that
        ring is empty, and it must start anyway."""
        with bound_last_queue() as (holder, q, steer):
            log0 = log_lines()
            s1 = s.stats()
            inject()
            try:
                holder.close()
                s2 = s.stats()
            finally:
                off()
            left = still_bound(holder.bid)
            if left:
                raise Failed(f'binding {holder.bid} let go with allocations failing, '
                             f'still on: {", ".join(left)}')
            warned = warnings_since(log0)
            if warned:
                raise Failed(f'the kernel warned: {warned[0]}')
            steer(q)
            fails = s2['rx-alloc-fail'] - s1['rx-alloc-fail']
            back = comes_back(fails, f'on queue {q}, after the binding went', 30)
        return (f'binding {holder.bid} on queue {q} let go with every page-pool allocation '
                f'failing; the stream flows on queue {q} {back:.1f} s after the fault is off')

    def reopen_fails():
        """igb_rs's ring size change closes the device and opens it on the
        new sizes, then on the old ones if that fails: with every page
        pool's creation failing both fail, and the device is left up with
        no queue running. The binding's uninstall then restarts a queue
        that is not there: the driver must say so as for a device that is
        down (the core warns at any other error). Down and up bring the
        device back."""
        with bound_last_queue() as (holder, q, _steer):
            cur = ring_size()
            target = 512 if cur != 512 else 256
            try:
                with SlabFault(POOL_CREATE):
                    r = subprocess.run(['ethtool', '-G', NETIF, 'rx', str(target)],
                                       capture_output=True, text=True, check=False,
                                       timeout=120)
                if r.returncode == 0:
                    raise Failed(f'ethtool -G rx {target} succeeded with every page pool '
                                 'creation failing')
                if ring_size() != cur:
                    raise Failed(f'ethtool -G rx {target} failed, the ring has '
                                 f'{ring_size()}, not {cur}')
                log0 = log_lines()
                holder.close()
                warned = warnings_since(log0)
                if warned:
                    raise Failed(f'the binding let go after the failed reopen: the kernel '
                                 f'warned: {warned[0]}')
                left = still_bound(holder.bid)
                if left:
                    raise Failed(f'binding {holder.bid} let go, still on: {", ".join(left)}')
            finally:
                # Before the way out turns header split off, which
                # restarts the queues: none runs until the device opens.
                subprocess.run(['ip', 'link', 'set', NETIF, 'down'], check=True)
                subprocess.run(['ip', 'link', 'set', NETIF, 'up'], check=True)
                # IPv6 addresses go with the link (keep_addr_on_down).
                subprocess.run(['ip', 'addr', 'add', f'{LOCAL_V4}/24', 'dev', NETIF],
                               capture_output=True, check=False)
                subprocess.run(['ip', 'addr', 'add', f'{os.environ["LOCAL_V6"]}/64', 'dev',
                                NETIF, 'nodad'], capture_output=True, check=False)
        # The peer's retransmissions backed off while the device was deaf.
        back = comes_back(0, 'after down and up', 60)
        return (f'ethtool -G rx {target} refused ({r.stderr.strip()}); binding {holder.bid} '
                f'let go without a warning; down and up: the stream flows {back:.1f} s after')

    def stopped():
        stream = st['stream']
        off()
        deadline = time.monotonic() + 10
        while stream.rate(0.5) == 0:
            if time.monotonic() > deadline:
                raise Failed('no bytes within 10 s of the fault off')
        s1 = s.stats()
        moved = stream.rate(2)
        s2 = s.stats()
        if s2['rx-alloc-fail'] != s1['rx-alloc-fail']:
            raise Failed(f'rx-alloc-fail grew by {s2["rx-alloc-fail"] - s1["rx-alloc-fail"]} '
                         'with the fault off')
        if moved == 0:
            raise Failed('no bytes in 2 s')
        return f'{moved} bytes in 2 s, rx-alloc-fail steady'

    def close():
        st.pop('stream').close()
        r = subprocess.run(['ping', '-c', '2', '-W', '3', os.environ['REMOTE_V4']],
                           capture_output=True, text=True, check=False)
        if r.returncode:
            raise Failed('the peer does not answer pings')
        return ''

    try:
        setup()
        if s.case('a TCP stream from the peer; rx-alloc-fail in the queue stats', start):
            s.case('50 allocations failing: rx-alloc-fail grows, the stream goes on',
                   some_fail)
            s.case('every allocation failing for 2 s, then none: the stream comes back '
                   'by itself', dry)
            s.case('the rx ring size changed while every allocation fails: the stream '
                   'comes back by itself once they succeed', ring_change)
            s.case('a devmem binding let go while every allocation fails: its queue '
                   'leaves it, and receives once they succeed', provider_let_go)
            s.case('a ring size change whose reopen fails twice, a binding held: the '
                   'binding then let go without a warning; down and up bring the '
                   'device back', reopen_fails)
            s.case('fault off: rx-alloc-fail steady, the stream flows', stopped)
            s.case('stream closed; the peer still answers', close)
    finally:
        restore()
        if 'stream' in st:
            st['stream'].close()
    print(f'# Totals: pass:{s.n - s.failed} fail:{s.failed}')
    return 1 if s.failed else 0


if __name__ == '__main__':
    sys.exit(main())
