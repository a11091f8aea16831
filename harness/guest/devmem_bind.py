#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Bad-input scenarios for netdev bind-rx / bind-tx, through the YNL cli.

Runs in the guest (run.sh exports NETIF and KSRC, the kernel tree). Each
scenario sends one request with upstream's YNL Python library
(tools/net/ynl/pyynl, the library behind cli.py; the unprivileged cases run
cli.py itself under setpriv) and checks what the kernel answered: the
errno, the extack message and the attribute it blamed or found missing, as
the C core (net/core/netdev-genl.c) defines them. The error line, as cli.py
prints it, is logged for every case, so the outputs of two kernels (C core,
Rust core) can be compared line by line.

The device under test is the 82576 under igb_rs, which has the queue API
and takes memory providers on its page pools: a bind succeeds there, and
the cases around a bound queue (binding it again, turning header split
off, closing the socket) run against it. A netdevsim device, which has the
queue API but no DMA device, reaches the handlers' queue-list checks.

TAP on stdout.
"""

import ast
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

KSRC = os.environ['KSRC']
NETIF = os.environ['NETIF']


def stage_cli():
    """Copies the cli and the netdev spec where an unprivileged user can
    read them (the kernel tree may sit in root's home). Returns their
    paths."""
    d = tempfile.mkdtemp(prefix='devmem-bind-')
    os.chmod(d, 0o755)
    shutil.copytree(os.path.join(KSRC, 'tools/net/ynl/pyynl'),
                    os.path.join(d, 'pyynl'))
    shutil.copy(os.path.join(KSRC, 'Documentation/netlink/specs/netdev.yaml'), d)
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755)
    return os.path.join(d, 'pyynl/cli.py'), os.path.join(d, 'netdev.yaml')


CLI, SPEC = stage_cli()
NOT_DMABUF = os.open('/dev/null', os.O_RDONLY)
sys.path.insert(0, os.path.dirname(CLI))
# pylint: disable=wrong-import-position,import-error
from lib import YnlFamily, NlError  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import udmabuf as udmabuf_lib  # noqa: E402
PAGE_SIZE = udmabuf_lib.PAGE_SIZE
NO_DEV = 1 << 20    # an ifindex nothing has


def ifindex(name):
    with open(f'/sys/class/net/{name}/ifindex', encoding='ascii') as f:
        return int(f.read())


def udmabuf(pages):
    """A dma-buf of `pages` pages from /dev/udmabuf; returns its fd."""
    return udmabuf_lib.create(pages)


def without_dma_addr(text):
    """A DMA address differs from boot to boot."""
    return re.sub(r'addr=0x[0-9a-f]+', 'addr=0x<dma>', text)


def misaligned_msg(length, niov_size):
    """The C core's message for a misaligned segment, as user space gets it:
    NL_SET_ERR_MSG_FMT keeps 79 characters (of a 64-bit %pad address)."""
    full = (f'dmabuf sg entry (addr=0x{0:016x}, len={length}) '
            f'not aligned to niov size {niov_size}')
    return without_dma_addr(full[:79])


def set_split(dev, on):
    """Sets tcp-data-split on `dev` through the ethtool netlink family."""
    ynl = YnlFamily(os.path.join(KSRC, 'Documentation/netlink/specs/ethtool.yaml'),
                    schema='')
    try:
        ynl.do('rings-set', {'header': {'dev-name': dev},
                             'tcp-data-split': 'enabled' if on else 'disabled'})
    finally:
        ynl.sock.close()


def closed_fd():
    """A file descriptor number that is not open, and that nothing this
    process opens later will get (fds are handed out lowest first)."""
    fd = 999
    try:
        os.fstat(fd)
    except OSError:
        return fd
    raise RuntimeError(f'fd {fd} is open')


def queues(*ids):
    return [{'id': i, 'type': 'rx'} for i in ids]


class Bound:
    """A binding of queue 0 of the device under test, held by a netlink
    socket of its own; its steps are cases that return (status, line)."""

    PAGES = 512     # more net_iovs than the queue's ring holds

    def __init__(self, dut):
        self.dut = dut
        self.ynl = None
        self.buf = None
        self.id = None

    def queue_dmabuf(self, ynl, qid):
        q = ynl.do('queue-get', {'ifindex': self.dut, 'id': qid, 'type': 'rx'})
        return q.get('dmabuf')

    def provider_pools(self, ynl):
        return [p for p in ynl.dump('page-pool-get', {})
                if p.get('ifindex') == self.dut and p.get('dmabuf') == self.id]

    def bind(self):
        """Header split on, then bind queue 0: the reply's id must show on
        the queue and on exactly one page pool, and not on queue 1."""
        set_split(NETIF, True)
        self.buf = udmabuf(self.PAGES)
        self.ynl = YnlFamily(SPEC, schema='')
        try:
            rsp = self.ynl.do('bind-rx', {'ifindex': self.dut, 'fd': self.buf,
                                          'queues': queues(0)})
        except NlError as e:
            return 1, str(e)
        self.id = rsp.get('id')
        problems = []
        if not self.id:
            problems.append(f'reply {rsp}')
        if self.queue_dmabuf(self.ynl, 0) != self.id:
            problems.append('queue 0 does not show the binding')
        if self.queue_dmabuf(self.ynl, 1) is not None:
            problems.append('queue 1 shows a binding')
        npools = len(self.provider_pools(self.ynl))
        if npools != 1:
            problems.append(f'{npools} page pools show the binding')
        return (1, '; '.join(problems)) if problems else (0, 'ok')

    def split_off(self):
        """Header split cannot go off under a provider."""
        try:
            set_split(NETIF, False)
        except NlError as e:
            return 1, str(e)
        return 0, 'ok'

    def bind_tx(self):
        """A TX binding of a udmabuf: the reply carries its id."""
        buf = udmabuf(16)
        ynl = YnlFamily(SPEC, schema='')
        try:
            rsp = ynl.do('bind-tx', {'ifindex': self.dut, 'fd': buf})
        except NlError as e:
            return 1, str(e)
        finally:
            ynl.sock.close()
            os.close(buf)
        return (0, 'ok') if rsp.get('id') else (1, f'reply {rsp}')

    def close(self):
        """Closing the socket unbinds: the queue restarts without the
        provider, and header split may go off again."""
        self.ynl.sock.close()
        os.close(self.buf)
        ynl = YnlFamily(SPEC, schema='')
        try:
            if self.queue_dmabuf(ynl, 0) is not None:
                return 1, 'queue 0 still bound after close'
            set_split(NETIF, False)
        except NlError as e:
            return 1, str(e)
        finally:
            ynl.sock.close()
        return 0, 'ok'


# Runs a command as nobody, without capabilities.
UNPRIVILEGED = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
                '--inh-caps=-all', '--bounding-set=-all']


def run_ynl(op, attrs):
    """Sends one request on a socket of its own, as cli.py --do does.
    Returns (exit status as cli.py's, the line cli.py would print last)."""
    # schema='': as --schema '' in run_cli.
    ynl = YnlFamily(SPEC, schema='')
    try:
        ynl.do(op, attrs)
    except NlError as e:
        return 1, str(e)
    finally:
        ynl.sock.close()
    return 0, 'ok'


def run_cli(op, attrs, unprivileged=False):
    """Returns (exit status, the cli's last output line)."""
    # --schema '': the spec is the tree's own, validating it against its
    # schema under TCG costs seconds per request and tests nothing here.
    prefix = UNPRIVILEGED if unprivileged else []
    p = subprocess.run(prefix + [sys.executable, CLI, '--spec', SPEC,
                                 '--schema', '', '--do', op,
                                 '--json', json.dumps(attrs)],
                       capture_output=True, text=True, timeout=60, check=False)
    out = (p.stdout + p.stderr).strip().splitlines()
    return p.returncode, out[-1] if out else ''


def parse_line(line):
    """Splits the cli's error line (NlError's format) into the message,
    the error string and the rest of the extack, a dict."""
    prefix = 'Netlink error: '
    if not line.startswith(prefix):
        return None
    rest = line[len(prefix):]
    extack = {}
    brace = rest.find(' {')
    if brace >= 0:
        extack = ast.literal_eval(rest[brace + 1:])
        rest = rest[:brace]
    msg, _, err = rest.rpartition(': ')
    return msg or None, err, extack


def expect(err, msg=None, **extack):
    """What the kernel answers: errno, extack message, extack attributes.
    The cli adds the spec's doc string of a missing attribute; it is left
    out of the comparison."""
    return msg, os.strerror(err), extack


# A request that succeeds.
EXPECT_OK = 'ok'


def u32_range(lo):
    return {'min-value': lo, 'max-value': 0xffffffff, 'type': 'u32'}


NSIM_ID = 7
QUEUE_ID, QUEUE_TYPE = 1, 3     # NETDEV_A_QUEUE_ID, NETDEV_A_QUEUE_TYPE


def netdevsim(nqueues):
    """A netdevsim device with nqueues queues; returns its ifindex."""
    devdir = f'/sys/bus/netdevsim/devices/netdevsim{NSIM_ID}/net'
    if not os.path.isdir(devdir):
        with open('/sys/bus/netdevsim/new_device', 'w', encoding='ascii') as f:
            f.write(f'{NSIM_ID} 1 {nqueues}')
    name = os.listdir(devdir)[0]
    return ifindex(name)


ONE_PAGE = PAGES_16 = None


def scenarios():
    global ONE_PAGE, PAGES_16  # pylint: disable=global-statement
    ONE_PAGE, PAGES_16 = udmabuf(1), udmabuf(16)
    dut = ifindex(NETIF)
    lo = ifindex('lo')
    nsim = netdevsim(4)
    bound = Bound(dut)
    big = 3 * PAGE_SIZE     # a multiple of PAGE_SIZE, not a power of two
    return [
        # Required attributes, checked first, in this order.
        ('bind-rx without ifindex', 'bind-rx',
         {'fd': 0, 'queues': queues(0)},
         expect(errno.EINVAL, **{'miss-type': 'ifindex'})),
        ('bind-rx without fd', 'bind-rx',
         {'ifindex': dut, 'queues': queues(0)},
         expect(errno.EINVAL, **{'miss-type': 'fd'})),
        ('bind-rx without queues', 'bind-rx',
         {'ifindex': dut, 'fd': 0},
         expect(errno.EINVAL, **{'miss-type': 'queues'})),
        ('bind-tx without fd', 'bind-tx',
         {'ifindex': dut},
         expect(errno.EINVAL, **{'miss-type': 'fd'})),
        # Policy checks, made by the netlink core before the handler.
        ('bind-rx with ifindex 0', 'bind-rx',
         {'ifindex': 0, 'fd': 0, 'queues': queues(0)},
         expect(errno.ERANGE, 'integer out of range',
                **{'bad-attr': '.ifindex', 'policy': u32_range(1)})),
        ('bind-rx with rx-page-size below PAGE_SIZE', 'bind-rx',
         {'ifindex': dut, 'fd': 0, 'queues': queues(0),
          'rx-page-size': PAGE_SIZE // 2},
         expect(errno.ERANGE, 'integer out of range',
                **{'bad-attr': '.rx-page-size',
                   'policy': u32_range(PAGE_SIZE)})),
        # The handler's own checks.
        ('bind-rx with rx-page-size not a power of 2', 'bind-rx',
         {'ifindex': dut, 'fd': 0, 'queues': queues(0), 'rx-page-size': big},
         expect(errno.EINVAL, 'rx-page-size must be a power of 2',
                     **{'bad-attr': '.rx-page-size'})),
        ('bind-rx on a device that does not exist', 'bind-rx',
         {'ifindex': NO_DEV, 'fd': 0, 'queues': queues(0)},
         expect(errno.ENODEV)),
        ('bind-rx on loopback', 'bind-rx',
         {'ifindex': lo, 'fd': 0, 'queues': queues(0)},
         expect(errno.EOPNOTSUPP, **{'bad-attr': '.ifindex'})),
        # The device under test has the queue API and a DMA device: the
        # dma-buf is imported, mapped and carved before any queue changes.
        ('bind-rx with an fd that is not a dma-buf', 'bind-rx',
         {'ifindex': dut, 'fd': NOT_DMABUF, 'queues': queues(0)},
         expect(errno.EINVAL)),
        ('bind-rx with a closed fd', 'bind-rx',
         {'ifindex': dut, 'fd': closed_fd(), 'queues': queues(0)},
         expect(errno.EBADF)),
        ('bind-rx with segments not aligned to rx-page-size', 'bind-rx',
         {'ifindex': dut, 'fd': ONE_PAGE, 'queues': queues(0),
          'rx-page-size': 4 * PAGE_SIZE},
         expect(errno.EINVAL, misaligned_msg(PAGE_SIZE, 4 * PAGE_SIZE))),
        ('bind-rx with tcp-data-split off', 'bind-rx',
         {'ifindex': dut, 'fd': PAGES_16, 'queues': queues(0)},
         expect(errno.EINVAL, 'tcp-data-split is disabled')),
        # With header split on, the queue restarts with the provider.
        ('bind-rx on queue 0', bound.bind, None, EXPECT_OK),
        ('bind-rx on a queue already bound', 'bind-rx',
         {'ifindex': dut, 'fd': PAGES_16, 'queues': queues(0)},
         expect(errno.EEXIST,
                'designated queue already memory provider bound')),
        ('tcp-data-split off while bound', bound.split_off, None,
         expect(errno.EINVAL, "can't disable tcp-data-split while device "
                              'has memory provider enabled')),
        ('close the socket while bound', bound.close, None, EXPECT_OK),
        ('bind-tx on a device that does not exist', 'bind-tx',
         {'ifindex': NO_DEV, 'fd': 0},
         expect(errno.ENODEV)),
        ('bind-tx on a device without netmem TX', 'bind-tx',
         {'ifindex': lo, 'fd': 0},
         expect(errno.EOPNOTSUPP, 'Driver does not support netmem TX')),
        # igb_rs sends net_iov frags: bind-tx goes on to the dma-buf.
        ('bind-tx with an fd that is not a dma-buf', 'bind-tx',
         {'ifindex': dut, 'fd': NOT_DMABUF},
         expect(errno.EINVAL)),
        ('bind-tx with a closed fd', 'bind-tx',
         {'ifindex': dut, 'fd': closed_fd()},
         expect(errno.EBADF)),
        ('bind-tx on the 82576', bound.bind_tx, None, EXPECT_OK),
        # A device with the queue API: the queue list is read and checked,
        # in order, before the dma-buf. For an attribute missing in a nest
        # the cli prints the type's number and the nest's offset in the
        # request: nlmsghdr 16 + genlmsghdr 4 + ifindex 8 + fd 8 = 36.
        ('bind-rx with an empty queue entry', 'bind-rx',
         {'ifindex': nsim, 'fd': 0, 'queues': [{}]},
         expect(errno.EINVAL, **{'miss-type': QUEUE_ID, 'miss-nest': 36})),
        ('bind-rx with a queue without type', 'bind-rx',
         {'ifindex': nsim, 'fd': 0, 'queues': [{'id': 0}]},
         expect(errno.EINVAL, **{'miss-type': QUEUE_TYPE, 'miss-nest': 36})),
        ('bind-rx with a TX queue', 'bind-rx',
         {'ifindex': nsim, 'fd': 0,
          'queues': queues(0) + [{'id': 1, 'type': 'tx'}]},
         expect(errno.EINVAL, **{'bad-attr': '.queues.type'})),
        ('bind-rx with a queue index out of range', 'bind-rx',
         {'ifindex': nsim, 'fd': 0, 'queues': queues(0, 4)},
         expect(errno.EINVAL, **{'bad-attr': '.queues.id'})),
        ('bind-rx on a device without a DMA device', 'bind-rx',
         {'ifindex': nsim, 'fd': 0, 'queues': queues(2, 3, 2)},
         expect(errno.EOPNOTSUPP, "Device doesn't support DMA")),
        ('bind-tx on a device with the queue API, without netmem TX',
         'bind-tx', {'ifindex': nsim, 'fd': 0},
         expect(errno.EOPNOTSUPP, 'Driver does not support netmem TX')),
        # bind-rx needs CAP_NET_ADMIN; bind-tx is unprivileged by design
        # and goes on to the dma-buf (the cli's fd 0 is not one).
        ('bind-rx without CAP_NET_ADMIN', 'bind-rx-unprivileged',
         {'ifindex': dut, 'fd': 0, 'queues': queues(0)},
         expect(errno.EPERM)),
        ('bind-tx without CAP_NET_ADMIN', 'bind-tx-unprivileged',
         {'ifindex': dut, 'fd': 0},
         expect(errno.EINVAL)),
    ]


def main():
    cases = scenarios()
    print('TAP version 13')
    print(f'1..{len(cases)}')
    failed = 0
    for n, (name, op, attrs, want) in enumerate(cases, 1):
        unprivileged = False
        if not callable(op):
            unprivileged = op.endswith('-unprivileged')
            op = op.removesuffix('-unprivileged')
        try:
            if callable(op):
                rc, got = op()
            elif unprivileged:
                rc, got = run_cli(op, attrs, unprivileged)
            else:
                rc, got = run_ynl(op, attrs)
        except subprocess.TimeoutExpired:
            rc, got = -1, 'timed out'
        got = without_dma_addr(got)
        print(f'# {name}: {got}')
        parsed = parse_line(got)
        if parsed:
            parsed[2].pop('miss-type-doc', None)
        if want == EXPECT_OK and rc == 0 and got == EXPECT_OK:
            print(f'ok {n} {name}')
        elif rc == 1 and parsed == want:
            print(f'ok {n} {name}')
        else:
            failed += 1
            print(f'# expected: {want}')
            print(f'not ok {n} {name}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
