#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Teardown races around devmem bindings on igb_rs, driven hard but boundedly.

Runs in the guest of 'make check DEBUG=1' (run.sh exports NETIF, KSRC, the
addresses; the peer is in netns ns-remote). TAP on stdout. The debug kernel
does the detecting (KASAN, lockdep, DMA-API debugging, kmemleak, the netdev
reference trackers, the hung-task detector; results.py judges the kernel
log, the DMA-API error count and kmemleak after all suites). This suite's
job is to make the races happen, many times, and to check what each leaves:
no queue of the 82576 and no page pool (of any device: an unregistered
device's pools move to loopback) showing a binding, the number of dma-bufs
alive (debugfs dma_buf/bufinfo) back to what it was when the suite began
once its own fds are closed, igb_rs bound to the 82576 again with its
addresses, carrier, and `ping -c 2 -W 3 $REMOTE_V4` passing.

Each scenario is one TAP case, bounded: ITERATIONS rounds or SECS seconds,
whichever comes first (RACES_ITERATIONS, RACES_SECS override them), but
three rounds at least in scenarios 1, 3 and 4 and each variant of
scenario 2 once; a diagnostic line says how many ran. Random delays come
from one seed, printed first (RACES_SEED repeats a run's choices). Every
kernel operation has a time limit: one that does not return (an unbind,
an rmmod, a killed process that is never reaped, a netlink request with
no answer) is a hang. The suite then writes 'w' to /proc/sysrq-trigger
(the blocked tasks' stacks go to the kernel log), fails the case and runs
no further one: the stuck thread holds locks everything else needs.
Unbinds, binds, rmmod and modprobe run in processes of their own, so that
one stuck in the kernel does not hold this one; a netlink request is
handled inside the sender's system call, beyond a socket's time limit, so
a watchdog thread completes the TAP output when a case runs far past its
budget.

A race round shows something only if its two sides were in flight at
once: each round of scenarios 1, 3 and 4 records the window of each
side's operation in CLOCK_MONOTONIC time, one clock for every process
here, and counts as overlapping when the windows intersect. The windows
are the operations' own: the write to the unbind file, timed by the
process that makes it; kill() up to the killed owner's exit, seen on a
pidfd (the exit releases its netlink socket before it shows); close() of
a socket that holds a binding; a netlink request from its send to the
recvmsg of its answer (the kernel handles it inside the send). A
diagnostic line per scenario says "overlapping rounds: K of N (at least
M needed)", and the case fails below M, which is three and a quarter of
the rounds run (evidence.py says why).

1. unbind vs kill -9. A child process binds a udmabuf to rx queue 1
   (header split on) and sleeps; the parent writes the 82576's PCI address
   to igb_rs's unbind file and SIGKILLs the child at nearly the same time,
   which one first alternating, the other after a random lag of up to 1,
   10 or 100 ms. Two teardowns of one RX binding meet: the driver's remove
   (unregister_netdevice: ndo_stop destroys the queue's page pools, then
   the memory provider's uninstall detaches the binding from the queue and
   unmaps its dma-buf from the departing device) and the owner's death
   (the netlink socket's release: netdev_nl_sock_priv_destroy unbinds each
   binding of the socket under the device's instance lock, if the device
   is still there). Upstream, priv_destroy once took netdev_lock() on a
   net_device that unregistration had already freed (0afc44d8cdf6, "net:
   devmem: fix kernel panic when netlink socket close after module
   unload"); 7.3's C code has the uninstall of the last bound queue clear
   binding->dev under a binding lock that priv_destroy takes, and
   priv_destroy hold a netdev reference across the unbind. Our core
   reimplements that teardown (net/core/devmem_rs/sock.rs, binding.rs).
   Then igb_rs is bound again and the end state is checked, every round.

2. module unload with a TX binding held, then close. A child holds a
   bind-tx binding; `rmmod igb_rs` unregisters and frees the net_device and
   unbinds the PCI device's driver, with the binding alive: the netdev
   netlink socket pins neither the module nor the device (rmmod may
   succeed, or fail cleanly while the binding is held; both are counted).
   The binding keeps a dma-buf attachment and mapping to the PCI device
   (DMA-API debugging checks a driver's mappings when it goes) and a
   pointer to the freed net_device, which its close must not follow: C's
   priv_destroy does netdev_hold() on a TX binding's binding->dev, which no
   uninstall clears (a TX binding is on no queue; see
   Documentation/networking/devmem_rs.rst); scenario (e) of 0afc44d8cdf6 is the RX form.
   The binding goes by a socket close with the process alive or by SIGKILL,
   before or after `modprobe igb_rs` brings a new net_device up on the same
   PCI device (four variants, in turn). The module must be gone after a
   successful rmmod and load again as nic-lifecycle loads it. Once the
   binding is gone nothing of it may keep the module: in a round where
   rmmod was refused with the binding held (it then goes right away),
   and in each round until one such rmmod has succeeded (the first,
   normally), igb_rs is unloaded again after the binding went, once its
   reference count is 0 or SETTLE s have passed. That rmmod must succeed,
   and the scenario fails without one such success, naming
   /sys/module/igb_rs/refcnt. A diagnostic line counts the rmmods that
   succeeded and were refused, with the binding held and after it went.

3. socket close racing a queue restart. A binding of rx queue 1 is held
   on a netlink socket of this process; a thread flips the rx ring size
   (rings-set through YNL, ethtool -G's request) in a loop, each flip a
   restart of every queue: new rings and page pools (the bound queue's
   with the binding as provider), then the old ones stopped and destroyed
   while their net_iovs still point into the binding. The main thread
   closes the socket at a random point (within two restarts' time), which
   unbinds: the provider is cleared from the queue, the queue restarted
   without it, the owner's reference dropped; the binding goes when the
   last pool lets go of it. A close between a pool's creation and its
   provider's install, or a binding freed under a pool, is what the
   checkers see. Repeated with a fresh binding each round; the udmabuf
   must end with our reference alone and nothing attached.

4. several sockets binding and closing on different queues while the
   device is reconfigured, with traffic. After `ethtool -L combined 4`,
   BINDERS threads each bind a udmabuf to a random queue 0..3 on a socket
   of their own, hold it a random while and close it, in a loop, while the
   main thread flips combined 2/4 (ethtool refuses to drop a queue a
   provider holds: the check against the queues' memory providers runs
   under the same instance lock bind-rx takes), the rx ring size (every
   queue restarts with its provider), header split off (refused while any
   provider is installed) and on, and the link down and up (ndo_stop
   destroys every pool, ndo_open makes them again with the providers).
   Meanwhile TCP flows from ns-remote land in bound queues' net_iovs,
   which the receiving sockets cannot read (EFAULT) and hold until they
   close, so pools outlive their bindings' owners, plus a ping flood.
   Binds may fail while a queue is gone, taken or header split is off:
   the errnos are counted; only an unexpected errno class or no answer is
   a failure.

After each scenario the NIC is put back as the suite found it (the combined
channel count and ring sizes it had, header split off, link up with both
addresses), since later suites need it.

Usage (besides the suite itself, which takes no argument):
  races.py --hold rx|tx IFINDEX QUEUE PAGES   a binding holder (child)
  races.py --sink PORT                        TCP sink (local)
  races.py --source HOST PORT FLOWS SECS      TCP source (in ns-remote)
"""

import collections
import errno
import os
import random
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from contextlib import contextmanager

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# faults.py puts $KSRC/tools/net/ynl/pyynl on the path: YnlFamily, NlError.
import faults as F  # noqa: E402  pylint: disable=wrong-import-position
import evidence as E  # noqa: E402  pylint: disable=wrong-import-position
import kmsg  # noqa: E402  pylint: disable=wrong-import-position
import udmabuf  # noqa: E402  pylint: disable=wrong-import-position
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What results.py fails the run for, found here in the scenario's window.
from results import KERNEL_SPLAT_RE  # noqa: E402  pylint: disable=wrong-import-position

SELF = os.path.abspath(__file__)
DMA_ERRORS = os.path.join(F.DEBUGFS, 'dma-api/error_count')
NETIF = F.NETIF
DRIVER = 'igb_rs'

ITERATIONS = int(os.environ.get('RACES_ITERATIONS') or 20)
SECS = float(os.environ.get('RACES_SECS') or 120)
UNLOAD_ITERATIONS = 8   # rmmod and modprobe are slow: 2 rounds of each variant
FLIPS = 40              # reconfigurations in scenario 4 (or SECS)
BINDERS = 3
QUEUES = 4              # the combined channel count of scenario 4

ANSWER_TIMEOUT = 60     # a netlink request without an answer: a hang
STUCK = 120             # an unbind, bind, rmmod, modprobe that does not return
EXIT_TIMEOUT = 30       # a SIGKILLed process not reaped by then is stuck
HOLDER_TIMEOUT = 120    # a holder's start (Python, the spec) and bind
SETTLE = 30             # pools let go of their bindings lazily (1 s retries)
NETIF_TIMEOUT = 30      # the netdev back after a bind or modprobe
HOLD_MAX = 0.1          # how long a binder holds a binding, at most
LAGS = (0.001, 0.01, 0.1)
TX_PAGES = F.TX_PAGES

TRAFFIC_PORT = 5603
FLOWS = 8
CHUNK = 8192            # bytes per flow per period: ~3 MB/s in all
PERIOD = 0.02

# Bind errors scenario 4 expects: the queue is past the channel count
# (EINVAL from the queue list, ERANGE from the core), taken by another
# binder (EEXIST), header split is off (EINVAL), the device is going
# (ENODEV, ENETDOWN) or busy (EBUSY). ENOMEM and the rest are failures.
EXPECTED_BIND = {errno.EINVAL, errno.ERANGE, errno.EEXIST, errno.EBUSY,
                 errno.ENODEV, errno.ENETDOWN}
EXPECTED_FLIP = {
    'channels': {errno.EINVAL, errno.EBUSY},    # a provider on a queue to go
    'rings': {errno.EINVAL, errno.EBUSY},
    'split off': {errno.EINVAL},                # refused under a provider
    'split on': set(),
    'link': set(),
}

diag = F.diag
errname = F.errname
WEDGED = None   # why no further case runs


class Wedged(Exception):
    """A kernel operation did not return in its time."""


class HolderError(Exception):
    """A binding holder did not do what it was asked."""


def wedge(reason):
    """Records the hang and asks the kernel for the blocked tasks' stacks."""
    global WEDGED  # pylint: disable=global-statement
    if WEDGED is None:
        WEDGED = str(reason)
        try:
            F.write('/proc/sysrq-trigger', 'w')
            diag('hang: sysrq-w wrote the blocked tasks to the kernel log (dmesg.txt)')
        except OSError as e:
            diag(f'hang: sysrq-w: {e}')


def run(cmd, timeout=STUCK):
    """(exit status, output) of cmd; Wedged when it does not end in time
    (subprocess.run would wait for ever for a process stuck in the
    kernel)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        try:
            p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        raise Wedged(f'`{" ".join(cmd)}` did not return in {timeout} s') from None
    return p.returncode, out.strip()


def wait_for(cond, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(step)


def nl_error(e):
    """'ERRNO "extack message"' of an NlError."""
    msg = (e.nl_msg.extack or {}).get('msg')
    return errname(e.error) + (f' "{msg}"' if msg else '')


def counts(counter):
    return ', '.join(f'{k} x{v}' for k, v in sorted(counter.items())) or 'none'


class Budget:
    """At most n rounds, and no new one after secs seconds once `least`
    have run (a scenario that counts overlapping rounds needs a few, on a
    slow machine too)."""

    def __init__(self, n, secs=SECS, least=0):
        self.n = n
        self.least = min(least, n)
        self.t0 = time.monotonic()
        self.deadline = self.t0 + secs
        self.done = 0

    def more(self):
        return self.done < self.n and (self.done < self.least
                                       or time.monotonic() < self.deadline)

    def __str__(self):
        return f'{self.done} of {self.n} rounds in {time.monotonic() - self.t0:.0f} s'


def dma_errors():
    try:
        return int(F.read(DMA_ERRORS))
    except (OSError, ValueError):
        return None


class KernelLog:
    """What the kernel's checkers said while a scenario ran: the kernel log
    records written since (/dev/kmsg, from its end) that results.py would
    fail the run for, and the growth of the DMA-API error count (which
    prints its first error only). The run fails on them anyway; this
    says which scenario it was."""

    def __init__(self):
        self.dma = dma_errors()
        try:
            self.fd = os.open('/dev/kmsg', os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError:
            self.fd = None

    def findings(self):
        found = []
        lost = False
        if self.fd is not None:
            for line in kmsg.new_records(self.fd):
                if line is None:
                    lost = True     # overwritten before we read them
                elif KERNEL_SPLAT_RE.search(line):
                    found.append(line)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        problems = [f'kernel log: {line}' for line in found[:10]]
        if len(found) > 10:
            problems.append(f'kernel log: {len(found) - 10} more such lines (dmesg.txt)')
        if found and lost:
            problems.append('kernel log: records were lost (the log wrapped)')
        now = dma_errors()
        if None not in (self.dma, now) and now > self.dma:
            problems.append(f'DMA-API error count {self.dma} -> {now} (the first error\'s '
                            'lines are in dmesg.txt)')
        return problems


class RaceRig(F.Rig):
    """faults.py's rig (YNL families on the device under test), with time
    limits on its sockets, the device's PCI function, and what a device
    that comes and goes needs: a fresh ifindex, the driver bound again."""

    def __init__(self):
        super().__init__(None)
        for fam in (self.nd, self.eth, self.nd_op, self.eth_op, self.nd_hold):
            fam.sock.settimeout(ANSWER_TIMEOUT)
        self.pci = os.path.basename(os.path.realpath(f'/sys/class/net/{NETIF}/device'))

    def refresh(self):
        self.ifindex = int(F.read(f'/sys/class/net/{NETIF}/ifindex'))

    def driver(self):
        link = f'/sys/bus/pci/devices/{self.pci}/driver'
        return os.path.basename(os.path.realpath(link)) if os.path.exists(link) else None

    def netif_back(self):
        return os.path.isdir(f'/sys/bus/pci/devices/{self.pci}/net/{NETIF}')

    def netifs(self):
        try:
            return os.listdir(f'/sys/bus/pci/devices/{self.pci}/net')
        except OSError:
            return []

    def sysfs(self, what):
        """Writes the PCI address to igb_rs's bind or unbind file, from a
        process of its own (one stuck in the kernel is left behind, and
        this one can still end): 'ok' or what failed."""
        rc, out = run(['sh', '-c', 'echo "$1" >"$2"', 'sh', self.pci,
                       f'/sys/bus/pci/drivers/{DRIVER}/{what}'])
        return 'ok' if rc == 0 else (out.splitlines()[-1] if out else f'exit {rc}')

    def set_channels(self, n):
        self.eth.do('channels-set', {**self.header, 'combined-count': n})

    def leftovers(self):
        """Every queue of the device and every page pool that shows a
        binding (once a device is gone its pools show on loopback)."""
        problems = []
        if os.path.isdir(f'/sys/class/net/{NETIF}'):
            self.refresh()
            for q in self.nd.dump('queue-get', {'ifindex': self.ifindex}):
                if 'dmabuf' in q:
                    problems.append(f'{q.get("type")} queue {q.get("id")} shows '
                                    f'dmabuf {q["dmabuf"]}')
        for p in self.nd.dump('page-pool-get', {}):
            if 'dmabuf' in p:
                state = 'detached' if 'detach-time' in p else 'live'
                problems.append(f'{state} page pool {p.get("id")} (ifindex '
                                f'{p.get("ifindex", "none")}, {p.get("inflight", "?")} '
                                f'in flight) shows dmabuf {p["dmabuf"]}')
        return problems


def addresses():
    """Both addresses on NETIF (a new netdev has none; a failed
    NETDEV_UP may drop the IPv6 one)."""
    problems = []
    for fam, addr, extra in (('-4', f'{F.LOCAL_V4}/24', []),
                             ('-6', f'{F.LOCAL_V6}/64', ['nodad'])):
        _, shown = run(['ip', '-o', fam, 'addr', 'show', 'dev', NETIF], 30)
        if f' {addr.split("/", maxsplit=1)[0]}/' in shown:
            continue
        rc, out = run(['ip', fam, 'addr', 'add', addr, 'dev', NETIF] + extra, 30)
        if rc:
            problems.append(f'ip addr add {addr}: {out}')
    return problems


def nic_up(rig):
    """igb_rs loaded and bound to the 82576, NETIF back with its addresses,
    up, with carrier. What is wrong, if anything."""
    if not os.path.isdir(f'/sys/bus/pci/drivers/{DRIVER}'):
        rc, out = run(['modprobe', DRIVER])
        if rc:
            return [f'modprobe {DRIVER}: exit {rc}: {out}']
    if rig.driver() is None:
        res = rig.sysfs('bind')
        if res != 'ok':
            return [f'binding {rig.pci} to {DRIVER}: {res}']
    if rig.driver() != DRIVER:
        return [f'{rig.pci} is bound to {rig.driver()}, not {DRIVER}']
    if not wait_for(rig.netif_back, NETIF_TIMEOUT):
        return [f'{NETIF} not back {NETIF_TIMEOUT} s after {DRIVER} bound '
                f'(the 82576 has {rig.netifs() or "no netdev"})']
    rig.refresh()
    problems = addresses()
    if not F.netif_flags() & F.IFF_UP:
        try:
            rig.set_link(True)
        except TimeoutError as e:
            raise Wedged(f'link up: no answer: {e}') from e
        except OSError as e:
            problems.append(f'link up: {e}')
    if not F.wait_carrier():
        problems.append(f'no carrier on {NETIF} 10 s after link up')
    return problems


def dmabufs_back(base):
    """The number of dma-bufs alive is what it was when the suite began."""
    def check():
        now = F.dmabufs()[1]
        return [] if now == base else [f'{now} dma-bufs alive, {base} when the suite began']
    return F.settle(check, SETTLE)


def end_state(rig, base):
    """After a round or a scenario, with its fds closed: the device back,
    no binding shown anywhere, the dma-bufs back, traffic."""
    problems = nic_up(rig)
    if problems:
        return problems
    problems += F.settle(rig.leftovers, SETTLE)
    problems += dmabufs_back(base)
    problems += F.passes_traffic()
    return problems


def ring_pair(rig):
    """The rx ring size now and the one to flip to."""
    r = rig.rings()
    a = r['rx']
    b = min(512 if a != 512 else 256, r.get('rx-max', 512))
    return a, b


def pages_for(rx_sizes):
    """Net_iovs for a bound queue's ring at any size the scenario sets,
    twice over (a restart makes the new ring before the old one goes)."""
    return max(F.BIND_PAGES, 4 * max(rx_sizes))


def restore(rig, start):
    """The NIC as the suite found it: channels, ring sizes, header split
    off, link up with its addresses."""
    problems = nic_up(rig)
    if not rig.netif_back():
        return problems
    steps = [
        ('channels', lambda: rig.channels()['combined-count'] != start['combined'],
         lambda: rig.set_channels(start['combined'])),
        ('rings', lambda: (rig.rings()['rx'], rig.rings()['tx']) != (start['rx'], start['tx']),
         lambda: rig.set_rings(rx=start['rx'], tx=start['tx'])),
        ('header split off', rig.split_on, lambda: rig.set_split(False)),
    ]
    for what, differs, fix in steps:
        try:
            if differs():
                fix()
        except F.NlError as e:
            problems.append(f'restoring {what}: {nl_error(e)}')
        except TimeoutError as e:
            raise Wedged(f'restoring {what}: no answer in {ANSWER_TIMEOUT} s') from e
    if not F.wait_carrier():
        problems.append(f'no carrier on {NETIF} after restoring its settings')
    return problems


class Holder:
    """A child process (this script, --hold) holding a binding on a netlink
    socket of its own: 'bound ID' once bound; on stdin, 'close' closes the
    socket ('closed'), 'exit' or EOF ends it."""

    def __init__(self, kind, ifindex, queue, pages):
        self.p = subprocess.Popen([sys.executable, SELF, '--hold', kind, str(ifindex),
                                   str(queue), str(pages)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        self.buf = b''
        self.lines = []

    def _tail(self):
        return f' (it said: {" | ".join(self.lines[-6:])})' if self.lines else ''

    def expect(self, prefix, timeout, hang=None):
        """The rest of the holder's next line starting with prefix. A line
        starting with 'error ' or the holder's end is a HolderError; no
        such line in time is a HolderError too, or Wedged if hang names
        what did not return."""
        deadline = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while True:
            while b'\n' in self.buf:
                raw, self.buf = self.buf.split(b'\n', 1)
                line = raw.decode(errors='replace')
                if line.startswith(prefix):
                    return line[len(prefix):].strip()
                self.lines.append(line)
                if line.startswith('error '):
                    raise HolderError(f'holder: {line[6:]}{self._tail()}')
            left = deadline - time.monotonic()
            if left <= 0:
                if hang:
                    raise Wedged(f'{hang} did not return in {timeout} s{self._tail()}')
                raise HolderError(f'no "{prefix.strip()}" from the holder in {timeout} s'
                                  f'{self._tail()}')
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                if self.buf:
                    self.lines.append(self.buf.decode(errors='replace'))
                    self.buf = b''
                rc = self.reap(5)
                raise HolderError(f'the holder ended ({rc}) before "{prefix.strip()}"'
                                  f'{self._tail()}')
            self.buf += chunk

    def bound(self):
        """The binding's id, once the holder has bound it."""
        return int(self.expect('bound ', HOLDER_TIMEOUT, hang="the holder's start and bind"))

    def close_socket(self):
        """The binding's socket closed by its owner, which lives on."""
        try:
            self.p.stdin.write(b'close\n')
            self.p.stdin.flush()
        except BrokenPipeError as e:
            raise HolderError(f'the holder is gone{self._tail()}') from e
        self.expect('closed', STUCK, hang="the holder's socket close")

    def kill(self):
        """SIGKILL, unless it was reaped already (its pid may be another's
        by then)."""
        try:
            self.p.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass

    def reap(self, timeout):
        """The exit status, or None if it did not end in time."""
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def killed(self):
        """SIGKILL and reap; Wedged if the process stays (in the kernel)."""
        self.kill()
        rc = self.reap(EXIT_TIMEOUT)
        if rc is None:
            raise Wedged(f'the SIGKILLed holder (pid {self.p.pid}) was not reaped in '
                         f'{EXIT_TIMEOUT} s')
        return rc

    def exit(self):
        """Asks it to end (EOF on stdin); the exit status."""
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        rc = self.reap(EXIT_TIMEOUT)
        if rc is None:
            raise Wedged(f'the holder (pid {self.p.pid}) did not exit in {EXIT_TIMEOUT} s')
        return rc

    def cleanup(self):
        if self.p.poll() is None:
            self.kill()
            self.reap(EXIT_TIMEOUT)
        for f in (self.p.stdin, self.p.stdout):
            try:
                f.close()
            except (OSError, ValueError):
                pass


def hold_main(kind, ifindex, queue, pages):
    """The holder: a udmabuf bound (rx: to queue; tx) on a netlink socket
    of its own; waits for commands on stdin."""
    buf = udmabuf.create(pages)
    ynl = F.YnlFamily(F.NETDEV_SPEC, schema='')
    ynl.sock.settimeout(ANSWER_TIMEOUT)
    attrs = {'ifindex': ifindex, 'fd': buf}
    if kind == 'rx':
        attrs['queues'] = [{'id': queue, 'type': 'rx'}]
    try:
        bid = ynl.do(f'bind-{kind}', attrs)['id']
    except F.NlError as e:
        print(f'error bind-{kind}: {nl_error(e)}', flush=True)
        return 1
    print(f'bound {bid}', flush=True)
    for line in sys.stdin:
        if line.strip() == 'close':
            ynl.sock.close()
            print('closed', flush=True)
        elif line.strip() == 'exit':
            break
    return 0


def race_unbind_kill(rig, holder, first, lag):
    """The unbind (from a forked process, which waits on a pipe) and the
    holder's SIGKILL (from here), `first` right away and the other lag
    seconds later. Returns (unbind result, the unbind's window, the kill's
    window, the holder's exit status); a window is (start, end) in
    CLOCK_MONOTONIC ns. The unbind's is taken by the unbinder around its
    write to the unbind file; the kill's runs from the kill() to the
    holder's exit, seen here on a pidfd: the exit releases the holder's
    files first (its netlink socket's release, which unbinds the binding,
    runs then), and this process waits on nothing else meanwhile. An
    unbind that does not return is left behind in its process: this one
    can still report and end."""
    path = f'/sys/bus/pci/drivers/{DRIVER}/unbind'
    exited = os.pidfd_open(holder.p.pid)
    go_r, go_w = os.pipe()
    res_r, res_w = os.pipe()
    pid = os.fork()
    if pid == 0:    # the unbinder
        try:
            os.close(go_w)
            os.close(res_r)
            os.read(go_r, 1)
            if first == 'kill':
                time.sleep(lag)
            t0 = time.monotonic_ns()
            try:
                F.write(path, rig.pci)
                res = 'ok'
            except OSError as e:
                res = errname(e.errno)
            os.write(res_w, f'{res} {t0} {time.monotonic_ns()}'.encode())
        finally:
            os._exit(0)  # pylint: disable=protected-access
    os.close(go_r)
    os.close(res_w)
    try:
        t_go = time.monotonic()
        os.write(go_w, b'g')
        if first == 'unbind':
            time.sleep(lag)
        k0 = time.monotonic_ns()
        holder.kill()
        # The unbind returns in STUCK s; the holder's exit follows it in
        # EXIT_TIMEOUT s (its socket's release may wait for the unbind).
        seen = {}
        unbind_end = None
        while len(seen) < 2:
            if res_r not in seen:
                left = t_go + STUCK - time.monotonic()
            else:
                left = unbind_end + EXIT_TIMEOUT - time.monotonic()
            wait = [fd for fd in (res_r, exited) if fd not in seen]
            ready, _, _ = select.select(wait, [], [], max(left, 0))
            now = time.monotonic_ns()
            if not ready:
                if res_r not in seen:
                    raise Wedged(f'the unbind of {rig.pci} did not return in {STUCK} s')
                raise Wedged(f'the SIGKILLed holder was not reaped in {EXIT_TIMEOUT} s')
            for fd in ready:
                seen[fd] = now
                if fd == res_r:
                    unbind_end = time.monotonic()
        res, u0, u1 = os.read(res_r, 128).decode().split()
        wait_for(lambda: os.waitpid(pid, os.WNOHANG)[0] == pid, 10)
        rc = holder.reap(EXIT_TIMEOUT)
        if rc is None:
            raise Wedged(f'the SIGKILLed holder was not reaped in {EXIT_TIMEOUT} s')
    finally:
        os.close(exited)
        os.close(go_w)
        os.close(res_r)
    return res, (int(u0), int(u1)), (k0, seen[exited]), rc


def case_unbind_kill(ctx, problems):
    """1. driver unbind racing kill -9 of the binding's owner, in a loop."""
    rig = ctx.rig
    budget = Budget(ITERATIONS, least=E.MIN_OVERLAP_ROUNDS)
    orders = collections.Counter()
    overlapped = collections.Counter()
    unbinds = collections.Counter()
    slowest = 0.0
    while budget.more():
        i = budget.done
        pre = nic_up(rig)
        if pre:
            problems += [f'round {i + 1}, before: {p}' for p in pre]
            break
        rig.set_split(True)
        q = rig.bind_queue()
        holder = Holder('rx', rig.ifindex, q, F.held_pages(rig, 0))
        try:
            bid = holder.bound()
            shown = rig.rx_queues().get(q)
            if shown != bid:
                problems.append(f'round {i + 1}: rx queue {q} shows dmabuf {shown}, '
                                f'not the holder\'s {bid}')
                break
            first = 'unbind' if i % 2 == 0 else 'kill'
            lag = random.uniform(0, LAGS[(i // 2) % len(LAGS)])
            res, unbind, kill, rc = race_unbind_kill(rig, holder, first, lag)
        finally:
            holder.cleanup()
        budget.done += 1
        orders[f'{first} first'] += 1
        overlapped[f'{first} first'] += E.overlap(unbind, kill)
        unbinds[res] += 1
        slowest = max(slowest, (unbind[1] - unbind[0]) / 1e9)
        found = []
        if res != 'ok':
            found.append(f'the unbind failed: {res}')
        if rc != -signal.SIGKILL:
            found.append(f'the holder ended with {rc}, not killed by SIGKILL')
        found += end_state(rig, ctx.base)
        if found:
            problems += [f'round {i + 1} ({first} first, the other {lag * 1000:.1f} ms '
                         f'later): {p}' for p in found]
            break
    diag(f'unbind vs kill -9: {budget}; {counts(orders)}; unbind {counts(unbinds)}, '
         f'slowest {slowest:.2f} s')
    if not budget.done:
        problems.append('no round ran')
        return
    # A round overlaps when the unbind's write was in flight while the
    # killed holder had not exited yet (its socket's release not done).
    line, short = E.overlap_verdict(sum(overlapped.values()), budget.done, budget.n)
    diag(f'unbind vs kill -9: {line}; ' + ', '.join(
        f'{k} {overlapped[k]} of {v}' for k, v in sorted(orders.items())))
    problems += short


def release(holder, how):
    """The binding goes: its socket closed by its living owner, then the
    owner exits ('close'), or the owner SIGKILLed ('kill')."""
    if how == 'close':
        holder.close_socket()
        rc = holder.exit()
    else:
        rc = holder.killed()
    want = 0 if how == 'close' else -signal.SIGKILL
    return [] if rc == want else [f'the holder ended with {rc}, not {want}']


def refcnt():
    """/sys/module/igb_rs/refcnt, or why it cannot be read."""
    try:
        return F.read(f'/sys/module/{DRIVER}/refcnt')
    except OSError as e:
        return f'unreadable ({errname(e.errno)})'


def unload(rig, found, results, refusals):
    """rmmod igb_rs, counted in results ('succeeded', 'refused'), what rmmod
    said in refusals; what it left wrong into found. None once unloaded,
    else the module's reference count at the refusal."""
    rc, out = run(['rmmod', DRIVER])
    if rc == 0:
        results['succeeded'] += 1
        if os.path.exists(f'/sys/module/{DRIVER}'):
            found.append(f'rmmod succeeded, /sys/module/{DRIVER} is still there')
        if os.path.exists(f'/sys/class/net/{NETIF}'):
            found.append(f'rmmod succeeded, {NETIF} is still there')
        return None
    count = refcnt()
    results['refused'] += 1
    refusals[out.splitlines()[-1] if out else f'exit {rc}'] += 1
    if rig.driver() != DRIVER or not rig.netif_back():
        found.append(f'rmmod failed ({out}) and took {NETIF} or the driver with it')
    return count


def load(found):
    """igb_rs loaded again if it is gone, as nic-lifecycle loads it
    (virtme-ng serves the build directory's modules under /lib/modules)."""
    if not os.path.isdir(f'/sys/bus/pci/drivers/{DRIVER}'):
        rc, out = run(['modprobe', DRIVER])
        if rc:
            found.append(f'modprobe {DRIVER}: exit {rc}: {out}')


def case_unload_tx(ctx, problems):
    """2. rmmod igb_rs with a TX binding held, then the binding closed."""
    rig = ctx.rig
    if not os.path.exists(f'/sys/module/{DRIVER}/refcnt'):
        problems.append(f'{DRIVER} is built in: no module to unload')
        return
    variants = [('close', 'before modprobe'), ('kill', 'before modprobe'),
                ('close', 'after modprobe'), ('kill', 'after modprobe')]
    # Each variant once, however slow the rounds.
    budget = Budget(UNLOAD_ITERATIONS, least=len(variants))
    held = collections.Counter()        # rmmod with the binding held
    after = collections.Counter()       # rmmod once the binding went
    refusals = collections.Counter()
    last_refcnt = 'not read (no rmmod refused)'
    for_each = collections.Counter()
    while budget.more():
        i = budget.done
        how, when = variants[i % len(variants)]
        pre = nic_up(rig)
        if pre:
            problems += [f'round {i + 1}, before: {p}' for p in pre]
            break
        found = []
        released = False
        holder = Holder('tx', rig.ifindex, 0, TX_PAGES)
        try:
            holder.bound()
            refused = unload(rig, found, held, refusals)
            if refused is not None:
                last_refcnt = refused
            # Refused, the module is still in: the binding goes now, and
            # the rmmod after it must succeed.
            if when == 'before modprobe' or refused is not None:
                found += release(holder, how)
                released = True
            load(found)
            found += nic_up(rig)
            if not released:
                found += release(holder, how)
        finally:
            holder.cleanup()
        # Once the binding is gone nothing of it may keep the module in:
        # rmmod again where it was refused with the binding held, and
        # until one such rmmod has succeeded in this run. The binding's
        # last references may go after its owner (deferred frees): the
        # module's count may drop a moment later.
        if not found and (refused is not None or not after['succeeded']):
            wait_for(lambda: refcnt() == '0', SETTLE)
            again = unload(rig, found, after, refusals)
            if again is not None:
                last_refcnt = again
                found.append(f'rmmod refused after the binding went: /sys/module/{DRIVER}/'
                             f'refcnt {again}')
            load(found)
            found += nic_up(rig)
        budget.done += 1
        for_each[f'{how} {when}'] += 1
        if not found:
            found += end_state(rig, ctx.base)
        if found:
            problems += [f'round {i + 1} ({how} {when}): {p}' for p in found]
            break
    diag(f'rmmod with a TX binding: {budget}; {counts(for_each)}')
    diag(f'rmmod with a TX binding: {E.unload_counts(held, after)}; refusals: '
         f'{counts(refusals)}')
    if not budget.done:
        problems.append('no round ran')
        return
    problems += E.unload_problems(held, after, DRIVER, last_refcnt)


class Flipper(threading.Thread):
    """Flips the rx ring size between a and b (rings-set, a restart of
    every queue), from `now`, until stopped. fam's socket is an
    evidence.TimedSocket: spans gets each request's window."""

    def __init__(self, fam, header, sizes, now):
        super().__init__(daemon=True)
        self.fam, self.header, self.sizes, self.now = fam, header, sizes, now
        self.spans = fam.sock.spans = []
        self.stop = threading.Event()
        self.results = collections.Counter()
        self.errors = []
        self.hung = None

    def run(self):
        while not self.stop.is_set():
            size = self.sizes[1] if self.now == self.sizes[0] else self.sizes[0]
            try:
                self.fam.do('rings-set', {**self.header, 'rx': size})
                self.now = size
                self.results['ok'] += 1
            except F.NlError as e:
                self.results[errname(e.error)] += 1
                self.errors.append(f'rings-set rx {size}: {nl_error(e)}')
                if len(self.errors) >= 5:
                    return
            except TimeoutError:
                self.hung = f'rings-set rx {size}: no answer in {ANSWER_TIMEOUT} s'
                return
            except Exception as e:  # pylint: disable=broad-except
                self.errors.append(f'rings-set rx {size}: {type(e).__name__}: {e}')
                return


def start_ping(secs):
    """A ping from the peer, every 20 ms, for secs at most."""
    return subprocess.Popen(['ip', 'netns', 'exec', 'ns-remote', 'ping', '-q', '-i', '0.02',
                             '-w', str(int(secs)), F.LOCAL_V4],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stop_proc(p, name):
    """SIGTERM (SIGINT for ping, which then prints its statistics), then
    SIGKILL; its summary line."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT if 'ping' in name else signal.SIGTERM)
    try:
        out, _ = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        try:
            out, _ = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            return f'{name}: did not end'
    lines = [line for line in (out or '').strip().splitlines() if line.strip()]
    stats = [line for line in lines if 'packets transmitted' in line]
    return f'{name}: {(stats or lines or ["no output"])[-1]}'


def case_close_restart(ctx, problems):
    """3. the binding's socket closed while a queue restart runs."""
    rig = ctx.rig
    rig.set_split(True)
    q = rig.bind_queue()
    a, b = ring_pair(rig)
    if a == b:
        problems.append(f'no second rx ring size to flip to from {a}')
        return
    buf = udmabuf.create(pages_for((a, b)))
    ino = os.fstat(buf).st_ino
    fam = F.YnlFamily(F.ETHTOOL_SPEC, schema='')
    fam.sock.settimeout(ANSWER_TIMEOUT)
    fam.sock = E.TimedSocket(fam.sock)
    pinger = start_ping(SECS + 60)
    budget = Budget(ITERATIONS, least=E.MIN_OVERLAP_ROUNDS)
    flips = collections.Counter()
    closes = []
    overlapping = 0
    sock = flipper = None
    try:
        t0 = time.monotonic()
        rig.set_rings(rx=b)
        rig.set_rings(rx=a)
        restart = min(max((time.monotonic() - t0) / 2, 0.01), 5.0)
        diag(f'close vs restart: rx {a} <-> {b}, a restart takes {restart * 1000:.0f} ms, '
             f'binding rx queue {q}')
        while budget.more():
            i = budget.done
            sock = F.nl_socket(rig.nd_hold.nlproto.proto_num)
            sock.settimeout(ANSWER_TIMEOUT)
            rig.nd_hold.sock = sock
            try:
                bid = rig.nd_hold.do('bind-rx', {'ifindex': rig.ifindex, 'fd': buf,
                                                 'queues': [{'id': q, 'type': 'rx'}]})['id']
            except F.NlError as e:
                problems.append(f'round {i + 1}: bind-rx: {nl_error(e)}')
                break
            except TimeoutError as e:
                raise Wedged(f'round {i + 1}: bind-rx: no answer') from e
            flipper = Flipper(fam, rig.header, (a, b), rig.rings()['rx'])
            flipper.start()
            time.sleep(random.uniform(0, 2 * restart))
            t0 = time.monotonic_ns()
            sock.close()
            close = (t0, time.monotonic_ns())
            closes.append((close[1] - close[0]) / 1e9)
            sock = None
            # Let the flips go on over the deferred teardown.
            time.sleep(random.uniform(0, restart))
            flipper.stop.set()
            flipper.join(ANSWER_TIMEOUT + 10)
            if flipper.is_alive() or flipper.hung:
                raise Wedged(flipper.hung or f'a rings-set did not return in {ANSWER_TIMEOUT} s')
            flips.update(flipper.results)
            # Overlapping: the close (the socket's release, which unbinds
            # and restarts the queue) ran while a rings-set was between
            # its send and its ack.
            overlapping += E.overlaps_any([close], flipper.spans)
            budget.done += 1
            found = list(flipper.errors[:5])
            flipper = None
            found += F.settle(lambda: rig.leftovers() + F.buf_problems(ino), SETTLE)
            r = rig.rings()
            if r.get('tcp-data-split') != 'enabled':
                found.append(f'tcp-data-split {r.get("tcp-data-split")} after the close')
            if r['rx'] not in (a, b):
                found.append(f'rx ring {r["rx"]}, neither {a} nor {b}')
            if found:
                problems += [f'round {i + 1} (dmabuf {bid}): {p}' for p in found]
                break
    finally:
        if flipper is not None:
            flipper.stop.set()
            flipper.join(ANSWER_TIMEOUT + 10)
        if sock is not None:
            sock.close()
        os.close(buf)
        fam.close()
        ping = stop_proc(pinger, 'ping from the peer')
    slow = max(closes) if closes else 0
    diag(f'close vs restart: {budget}; rings-set {counts(flips)}; the slowest close took '
         f'{slow * 1000:.0f} ms; {ping}')
    if not budget.done:
        problems.append('no round ran')
        return
    line, short = E.overlap_verdict(overlapping, budget.done, budget.n)
    diag(f'close vs restart: {line}')
    problems += short


class Traffic:
    """TCP flows from the peer to a sink here (this script, --source in
    ns-remote, --sink here) and a ping flood from the peer."""

    def __init__(self, secs):
        self.secs = int(secs)
        self.procs = []

    def start(self):
        sink = subprocess.Popen([sys.executable, SELF, '--sink', str(TRAFFIC_PORT)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.procs.append(('sink', sink))
        ready, _, _ = select.select([sink.stdout], [], [], 60)
        line = sink.stdout.readline() if ready else ''
        if not line.startswith('listening'):
            raise RuntimeError(f'the TCP sink did not start: {line.strip() or "no output"}')
        self.procs.append(('source', subprocess.Popen(
            ['ip', 'netns', 'exec', 'ns-remote', sys.executable, SELF, '--source', F.LOCAL_V4,
             str(TRAFFIC_PORT), str(FLOWS), str(self.secs)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        self.procs.append(('ping flood', subprocess.Popen(
            ['ip', 'netns', 'exec', 'ns-remote', 'ping', '-q', '-i', '0.005', '-w',
             str(self.secs), F.LOCAL_V4],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))

    def stop(self):
        """Stops the sources first, then the sink; their summaries."""
        return [stop_proc(p, name) for name, p in reversed(self.procs)]


class Binder(threading.Thread):
    """Binds its udmabuf to a random queue on a socket of its own, holds
    it a random while, closes the socket; again, until stopped. spans gets
    the window of each bind-rx (send to ack) and of each close of a socket
    that holds a binding (the close unbinds)."""

    def __init__(self, k, rig, pages, seed):
        super().__init__(daemon=True, name=f'binder-{k}')
        self.rig = rig
        self.ynl = F.YnlFamily(F.NETDEV_SPEC, schema='')
        self.ynl.sock.close()
        self.buf = udmabuf.create(pages)
        self.rng = random.Random(seed + k)
        self.stop = threading.Event()
        self.results = collections.Counter()
        self.unexpected = []
        self.hung = None
        self.spans = []

    def run(self):
        while not self.stop.is_set():
            q = self.rng.randrange(QUEUES)
            sock = E.TimedSocket(F.nl_socket(self.ynl.nlproto.proto_num), self.spans)
            sock.settimeout(ANSWER_TIMEOUT)
            self.ynl.sock = sock
            bound = False
            try:
                self.ynl.do('bind-rx', {'ifindex': self.rig.ifindex, 'fd': self.buf,
                                        'queues': [{'id': q, 'type': 'rx'}]})
                bound = True
                self.results['bound'] += 1
                self.stop.wait(self.rng.uniform(0, HOLD_MAX))
            except F.NlError as e:
                self.results[errname(e.error)] += 1
                if e.error not in EXPECTED_BIND:
                    self.unexpected.append(f'bind-rx queue {q}: {nl_error(e)}')
            except TimeoutError:
                self.hung = f'{self.name}: bind-rx queue {q}: no answer in {ANSWER_TIMEOUT} s'
                return
            except Exception as e:  # pylint: disable=broad-except
                self.unexpected.append(f'bind-rx queue {q}: {type(e).__name__}: {e}')
                return
            finally:
                t0 = time.monotonic_ns()
                sock.close()
                if bound:
                    self.spans.append((t0, time.monotonic_ns()))
            if len(self.unexpected) >= 5:
                return
            # A refusal is quick: a pause keeps the binders from starving
            # the reconfigurations.
            self.stop.wait(self.rng.uniform(0, 0.02))

    def close(self):
        os.close(self.buf)


@contextmanager
def in_flight(rig, spans):
    """The windows of the requests made inside, into spans: those taken on
    rig.eth's socket (an evidence.TimedSocket while scenario 4 runs), or
    the block's whole when it made none there: a link change, on a raw
    rtnetlink socket of its own (a socket made, a send and a recv, no
    encoding to leave out)."""
    mark = len(rig.eth.sock.spans)
    t0 = time.monotonic_ns()
    try:
        yield
    finally:
        spans.extend(rig.eth.sock.spans[mark:] or [(t0, time.monotonic_ns())])


def flip(rig, op, rng, sizes, spans):
    """One reconfiguration of scenario 4; returns its result's name. The
    windows of its requests that change the device go into spans."""
    if op == 'channels':
        n = 2 if rig.channels()['combined-count'] == QUEUES else QUEUES
        with in_flight(rig, spans):
            rig.set_channels(n)
        return f'to {n}'
    if op == 'rings':
        rx = sizes[1] if rig.rings()['rx'] == sizes[0] else sizes[0]
        with in_flight(rig, spans):
            rig.set_rings(rx=rx)
        return f'rx {rx}'
    if op == 'link':
        with in_flight(rig, spans):
            rig.set_link(False)
        time.sleep(rng.uniform(0, 0.3))
        with in_flight(rig, spans):
            rig.set_link(True)
        return 'down/up'
    # header split off: refused while any queue has a provider
    try:
        with in_flight(rig, spans):
            rig.set_rings(**{'tcp-data-split': 'disabled'})
    except F.NlError as e:
        if e.error in EXPECTED_FLIP['split off']:
            return f'off refused ({errname(e.error)})'
        e.op = 'split off'
        raise
    time.sleep(rng.uniform(0, 0.1))
    try:
        with in_flight(rig, spans):
            rig.set_rings(**{'tcp-data-split': 'enabled'})
    except F.NlError as e:
        e.op = 'split on'
        raise
    return 'off, on again'


def case_binds_reconfig(ctx, problems):
    """4. binders on queues 0..3 while channels, rings, header split and
    the link flip, with traffic."""
    rig = ctx.rig
    ch = rig.channels()
    if ch.get('combined-max', 0) < QUEUES:
        problems.append(f'combined-max {ch.get("combined-max")}: fewer than {QUEUES} channels')
        return
    rig.set_channels(QUEUES)
    if not F.wait_carrier():
        problems.append(f'no carrier after ethtool -L combined {QUEUES}')
        return
    rig.set_split(True)
    a, b = ring_pair(rig)
    rng = random.Random(ctx.seed)
    binders = []
    traffic = Traffic(SECS + 60)
    budget = Budget(FLIPS, least=E.MIN_OVERLAP_ROUNDS)
    results = collections.Counter()
    flip_spans = []     # each flip's request windows
    plain = rig.eth.sock
    try:
        rig.eth.sock = E.TimedSocket(plain)
        for k in range(BINDERS):
            binders.append(Binder(k, rig, pages_for((a, b)), ctx.seed))
        traffic.start()
        time.sleep(1)
        for bd in binders:
            bd.start()
        ops = ['channels'] * 3 + ['rings'] * 3 + ['link'] * 2 + ['split']
        while budget.more():
            op = rng.choice(ops)
            flip_spans.append([])
            try:
                what = flip(rig, op, rng, (a, b), flip_spans[-1])
                results[f'{op} {what}'] += 1
            except F.NlError as e:
                name = getattr(e, 'op', op)
                results[f'{name} {errname(e.error)}'] += 1
                if e.error not in EXPECTED_FLIP.get(name, set()):
                    problems.append(f'flip {budget.done + 1}, {name}: {nl_error(e)}')
            except TimeoutError as e:
                raise Wedged(f'flip {budget.done + 1}, {op}: no answer in '
                             f'{ANSWER_TIMEOUT} s') from e
            except OSError as e:
                # rtnetlink's answer to a link change
                results[f'{op} {errname(e.errno)}'] += 1
                problems.append(f'flip {budget.done + 1}, {op}: {e}')
            budget.done += 1
            hung = [bd.hung for bd in binders if bd.hung]
            if hung:
                raise Wedged(hung[0])
            if len(problems) >= 5:
                break
            time.sleep(rng.uniform(0, 0.2))
    finally:
        rig.eth.sock = plain
        for bd in binders:
            bd.stop.set()
        stuck = []
        for bd in binders:
            if bd.is_alive() or bd.ident:
                bd.join(ANSWER_TIMEOUT + 10)
            if bd.is_alive():
                stuck.append(f'{bd.name} did not stop in {ANSWER_TIMEOUT + 10} s')
        for line in traffic.stop():
            diag(f'binds vs reconfiguration: {line}')
        for bd in binders:
            bd.close()
            bd.ynl.sock.close()
        if stuck:
            raise Wedged('; '.join(stuck))
    diag(f'binds vs reconfiguration: {budget} (flips); {counts(results)}')
    total = collections.Counter()
    for bd in binders:
        total.update(bd.results)
        problems += [f'{bd.name}: {u}' for u in bd.unexpected]
        if bd.hung:
            problems.append(bd.hung)
    diag(f'binds vs reconfiguration: {BINDERS} binders on queues 0..{QUEUES - 1}: '
         f'{counts(total)}')
    if not total['bound']:
        problems.append('no bind succeeded: the binders never held a queue')
    if not flip_spans:
        return
    # A flip overlaps when one of its requests was in flight while a
    # binder's bind-rx, or its close of a socket holding a binding, was.
    binds = [w for bd in binders for w in bd.spans]
    line, short = E.overlap_verdict(sum(E.overlaps_any(fs, binds) for fs in flip_spans),
                                    len(flip_spans), budget.n)
    diag(f'binds vs reconfiguration: {line} (flips with a bind-rx or an unbinding '
         'close in flight)')
    problems += short


def sink_main(port):
    """Accepts TCP connections on port and reads them; a connection whose
    read fails (EFAULT: devmem payloads a normal socket cannot read) is
    closed. A summary line on SIGTERM."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('', port))
    ls.listen(64)
    ls.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ)
    received = 0
    ends = collections.Counter()
    print('listening', flush=True)
    try:
        while True:
            for key, _ in sel.select(1.0):
                s = key.fileobj
                if s is ls:
                    try:
                        conn, _ = ls.accept()
                    except OSError:
                        continue
                    conn.setblocking(False)
                    sel.register(conn, selectors.EVENT_READ)
                    continue
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                except OSError as e:
                    data, end = None, errname(e.errno or 0)
                else:
                    end = None if data else 'EOF'
                if data:
                    received += len(data)
                    continue
                ends[end] += 1
                sel.unregister(s)
                s.close()
    finally:
        print(f'sink: {received} bytes read; connections ended by {counts(ends)}', flush=True)


def source_main(host, port, flows, secs):
    """flows TCP connections to host:port, CHUNK bytes each every PERIOD
    (non-blocking: a full buffer skips a turn), reconnecting any that
    fails, for secs seconds or until SIGTERM."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    conns = [None] * flows
    payload = b'\0' * CHUNK
    sent = connects = full = 0
    errors = collections.Counter()
    end = time.monotonic() + secs
    try:
        while time.monotonic() < end:
            t0 = time.monotonic()
            for i in range(flows):
                s = conns[i]
                try:
                    if s is None:
                        s = socket.create_connection((host, port), timeout=0.5)
                        s.setblocking(False)
                        conns[i] = s
                        connects += 1
                    sent += s.send(payload)
                except BlockingIOError:
                    full += 1
                except OSError as e:
                    errors[errname(e.errno) if e.errno else type(e).__name__] += 1
                    if s is not None:
                        s.close()
                    conns[i] = None
            time.sleep(max(0.0, PERIOD - (time.monotonic() - t0)))
    finally:
        print(f'source: {sent} bytes sent over {connects} connections, {full} turns '
              f'with a full buffer; errors {counts(errors)}', flush=True)


def helper_main(args):
    mode = args[0]
    if mode == '--hold':
        return hold_main(args[1], int(args[2]), int(args[3]), int(args[4]))
    if mode == '--sink':
        return sink_main(int(args[1]))
    if mode == '--source':
        return source_main(args[1], int(args[2]), int(args[3]), float(args[4]))
    sys.exit(__doc__)


CASES = [
    ('driver unbind racing kill -9 of the binding\'s owner, in a loop', case_unbind_kill),
    ('rmmod igb_rs with a TX binding held, then the binding closed', case_unload_tx),
    ('socket close racing a queue restart (rings-set), fresh bindings', case_close_restart),
    ('binds and closes on queues 0..3 while channels, rings, header split and link '
     'flip, with traffic', case_binds_reconfig),
]


class Ctx:  # pylint: disable=too-few-public-methods
    def __init__(self, rig, start, base, seed):
        self.rig, self.start, self.base, self.seed = rig, start, base, seed


class Tap:
    """The TAP results printed so far; the watchdog prints the rest."""

    lock = threading.Lock()
    printed = 0

    @classmethod
    def result(cls, n, problems):
        with cls.lock:
            for p in problems[:30]:
                diag(p)
            print(f'{"not ok" if problems else "ok"} {n} - {CASES[n - 1][0]}', flush=True)
            cls.printed = n

    @classmethod
    def rest_failed(cls, why):
        """Every case not printed yet, failed (with the lock held)."""
        if why:
            diag(why)
        for n, (name, _) in enumerate(CASES[cls.printed:], cls.printed + 1):
            print(f'not ok {n} - {name}', flush=True)
        cls.printed = len(CASES)


class Watchdog(threading.Thread):
    """Ends the suite when a step runs past its deadline: a netlink request
    is handled in the sender's system call, and one whose handler blocks
    in the kernel is beyond a socket time limit. The TAP is completed,
    the blocked tasks dumped; a thread blocked in the kernel still keeps
    the process (and the guest's run.sh) from ending until the VM's time
    limit."""

    def __init__(self):
        super().__init__(daemon=True, name='watchdog')
        self.deadline = None
        self.what = None

    def arm(self, secs, what):
        self.deadline = time.monotonic() + secs
        self.what = what

    def run(self):
        while True:
            time.sleep(5)
            deadline = self.deadline
            if deadline is None or time.monotonic() < deadline:
                continue
            with Tap.lock:
                why = f'watchdog: {self.what} ran past its deadline: stuck in the kernel?'
                wedge(why)
                Tap.rest_failed(why)
                sys.stdout.flush()
                os._exit(1)  # pylint: disable=protected-access


def missing():
    """What the guest lacks for this suite."""
    need = [(F.BUFINFO, 'CONFIG_DEBUG_FS, CONFIG_DMA_SHARED_BUFFER'),
            ('/dev/udmabuf', 'CONFIG_UDMABUF'),
            (f'/sys/class/net/{NETIF}', f'the device under test {NETIF}')]
    lacks = [f'{path} ({what})' for path, what in need if not os.path.exists(path)]
    drv = os.path.basename(os.path.realpath(f'/sys/class/net/{NETIF}/device/driver'))
    if not lacks and drv != DRIVER:
        lacks.append(f'{NETIF} is bound to {drv}: the suite is {DRIVER}\'s')
    return lacks


def run_case(ctx, fn):
    """The scenario, then what it left (its fds are closed by then), then
    the NIC put back as the next scenario and the next suites need it;
    what the kernel's checkers said meanwhile."""
    log = KernelLog()
    problems = []
    try:
        fn(ctx, problems)
    except Wedged as e:
        wedge(e)
        return problems + [f'hang: {e}'] + log.findings()
    except HolderError as e:
        problems.append(str(e))
    except Exception:  # pylint: disable=broad-except
        problems += traceback.format_exc().strip().splitlines()[-6:]
    try:
        found = nic_up(ctx.rig)
        if not found:
            found += F.settle(ctx.rig.leftovers, SETTLE)
            found += dmabufs_back(ctx.base)
        found += restore(ctx.rig, ctx.start)
        found += F.passes_traffic()
        problems += [f'after the scenario: {p}' for p in found]
    except Wedged as e:
        wedge(e)
        problems.append(f'hang after the scenario: {e}')
    except Exception:  # pylint: disable=broad-except
        problems += traceback.format_exc().strip().splitlines()[-6:]
    return problems + log.findings()


def main():
    if len(sys.argv) > 1:
        return helper_main(sys.argv[1:])
    print('TAP version 13', flush=True)
    lacks = missing()
    if lacks:
        print('1..1')
        print(f'# no {"; no ".join(lacks)}')
        print('not ok 1 - the guest lacks what the race suite needs')
        return 1
    print(f'1..{len(CASES)}', flush=True)
    seed = int(os.environ.get('RACES_SEED') or time.time_ns() % (1 << 32))
    random.seed(seed)
    diag(f'seed {seed} (RACES_SEED={seed} repeats the random choices)')
    dog = Watchdog()
    dog.arm(600, 'the setup')
    dog.start()
    failed = 0
    try:
        rig = RaceRig()
        r, ch = rig.rings(), rig.channels()
        start = {'rx': r['rx'], 'tx': r['tx'], 'combined': ch['combined-count']}
        base = F.dmabufs()[1]
        if base is None:
            raise RuntimeError(f'no "Total N objects" line in {F.BUFINFO}')
        diag(f'{NETIF} at {rig.pci}: {start["combined"]} channels, rx {start["rx"]}, '
             f'tx {start["tx"]}, tcp-data-split {r.get("tcp-data-split")}; '
             f'{base} dma-bufs alive')
        for p in rig.leftovers():
            diag(f'before the suite: {p}')
        ctx = Ctx(rig, start, base, seed)
        for n, (name, fn) in enumerate(CASES, 1):
            t0 = time.monotonic()
            if WEDGED:
                problems = [f'not run: the kernel hung earlier ({WEDGED})']
            else:
                # Rounds end by SECS; a step that hangs is caught after
                # STUCK or ANSWER_TIMEOUT; the rest is settling and
                # putting the NIC back.
                dog.arm(SECS + 900, f'case {n} ({name})')
                problems = run_case(ctx, fn)
            diag(f'{name}: {time.monotonic() - t0:.0f} s')
            failed += bool(problems)
            Tap.result(n, problems)
    except Exception:  # pylint: disable=broad-except
        # The YNL families or the device's state: no case can run.
        with Tap.lock:
            for line in traceback.format_exc().strip().splitlines()[-6:]:
                diag(line)
            Tap.rest_failed(None)
        return 1
    finally:
        dog.deadline = None
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
