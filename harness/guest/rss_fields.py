#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The RSS hash fields of the NIC (ethtool rx-flow-hash), as TAP.

Runs in the guest (run.sh exports NETIF, LOCAL_V4, REMOTE_V4 and KSRC).
Reads and sets the fields through the ethtool netlink family (YNL, for
the error's extack) and through ethtool's ioctl, and checks what the
device does with them: the peer in ns-remote sends UDP datagrams from 32
source ports, and the per-queue counters (netdev qstats) show which
receive queues they reached. Also checks that a flow steering rule and
non-default hash fields exclude each other, that the channel count
cannot drop below a queue the indirection table uses, and that each
frame records the receive queue it came in on: a socket's packets leave
by the transmit queue XPS maps to that receive queue (xps_rxqs).

  rss_fields.py                          run the checks
  rss_fields.py send DST PORT N          send N datagrams (in ns-remote)
  rss_fields.py tcp DST PORT N BYTES     send BYTES on each of N
                                         connections, one after the other
"""

import errno
import os
import socket
import subprocess
import sys
import threading
import time

KSRC = os.environ.get('KSRC', '')
sys.path.insert(0, os.path.join(KSRC, 'tools/net/ynl/pyynl'))
# pylint: disable=wrong-import-position,import-error
from lib import YnlFamily, NlError  # noqa: E402

SPECS = os.path.join(KSRC, 'Documentation/netlink/specs')
ADDRS = {'ip-src', 'ip-dst'}
ADDRS_PORTS = ADDRS | {'l4-b-0-1', 'l4-b-2-3'}
UDP_PORT = 9
DATAGRAMS = 32
TCP_PORT = 5201
FLOWS = 8


def send(dst, port, count):
    """Sends `count` datagrams to dst:port, each from a port of its own."""
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b'rss-fields', (dst, port))
        s.close()
        time.sleep(0.01)


def tcp_send(dst, port, flows, nbytes):
    """Sends `nbytes` on each of `flows` connections to dst:port, each
    connection with a port and hash of its own, waiting for the peer to
    close each."""
    for _ in range(flows):
        with socket.create_connection((dst, port), timeout=30) as c:
            c.sendall(bytes(nbytes))
            c.shutdown(socket.SHUT_WR)
            while c.recv(4096):
                pass


def tcp_sink(lsock, flows):
    """Accepts `flows` connections on `lsock` in turn and reads each to
    its end."""
    for _ in range(flows):
        c, _ = lsock.accept()
        with c:
            c.settimeout(30)
            while c.recv(65536):
                pass


def ethtool(*args):
    return subprocess.run(['ethtool', *args], capture_output=True, text=True,
                          check=False)


class Rig:
    def __init__(self):
        self.netif = os.environ['NETIF']
        with open(f'/sys/class/net/{self.netif}/ifindex', encoding='ascii') as f:
            self.ifindex = int(f.read())
        self.eth = YnlFamily(os.path.join(SPECS, 'ethtool.yaml'), schema='')
        self.nd = YnlFamily(os.path.join(SPECS, 'netdev.yaml'), schema='')
        self.n = 0
        self.failed = False

    def check(self, desc, ok, detail=''):
        self.n += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} {desc}")
        if not ok:
            self.failed = True
            for line in str(detail).splitlines()[-5:]:
                print(f'# {line}')

    def hdr(self):
        return {'header': {'dev-index': self.ifindex}}

    def fields(self):
        return self.eth.do('rss-get', self.hdr())['flow-hash']

    def set_fields(self, flows):
        """rss-set of the flow hash; returns the NlError, if any."""
        try:
            self.eth.do('rss-set', self.hdr() | {'flow-hash': flows})
        except NlError as e:
            return e
        return None

    def packets(self, kind):
        """Per queue of `kind` ('rx' or 'tx'), its packets so far."""
        stats = self.nd.dump('qstats-get', {'ifindex': self.ifindex,
                                            'scope': 'queue'})
        return {s['queue-id']: s.get(f'{kind}-packets', 0) for s in stats
                if s['queue-type'] == kind}

    def rx_packets(self):
        return self.packets('rx')

    def udp_spread(self):
        """Per receive queue, how many more frames arrived while the peer
        sent DATAGRAMS datagrams from as many source ports."""
        before = self.rx_packets()
        subprocess.run(['ip', 'netns', 'exec', 'ns-remote', sys.executable,
                        os.path.abspath(__file__), 'send',
                        os.environ['LOCAL_V4'], str(UDP_PORT), str(DATAGRAMS)],
                       check=True)
        time.sleep(0.5)
        after = self.rx_packets()
        return {q: after[q] - before.get(q, 0) for q in after}


def expect_err(e, code, msg):
    """Whether NlError `e` carries errno `code` and extack `msg`."""
    if e is None:
        return False
    return e.nl_msg.error == -code and msg in str(e.nl_msg.extack.get('msg', ''))


def xps_rxqs(netif, maps):
    """Sets each transmit queue's xps_rxqs, a hex mask of receive queues;
    returns the error of the first that fails, if one does."""
    for q, mask in maps.items():
        try:
            with open(f'/sys/class/net/{netif}/queues/tx-{q}/xps_rxqs', 'w',
                      encoding='ascii') as f:
                f.write(f'{mask:x}')
        except OSError as e:
            return e
    return None


def rx_queue_xps(r):
    """TCP flows steered to receive queue 1, with XPS crossing the queues
    (transmit queue 0 for the sockets of receive queue 1, and 1 for 0):
    the receiver's ACKs leave by transmit queue 0 only if each frame
    records its receive queue (skb_record_rx_queue), which the socket
    learns. Without it, each of the FLOWS connections' ACKs leave by the
    queue its hash picks: all on queue 0 by chance once in 2^FLOWS."""
    desc = (f'{FLOWS} TCP flows on receive queue 1, xps_rxqs crossed: '
            'their ACKs leave by transmit queue 0')
    rule = ethtool('-N', r.netif, 'flow-type', 'tcp4', 'dst-port',
                   str(TCP_PORT), 'action', '1', 'loc', '0')
    if rule.returncode != 0:
        r.check(desc, False, f'ethtool -N: {rule.stderr}')
        return
    try:
        err = xps_rxqs(r.netif, {0: 0b10, 1: 0b01})
        if err:
            r.check(desc, False, f'xps_rxqs: {err}')
            return
        with socket.create_server((os.environ['LOCAL_V4'], TCP_PORT)) as lsock:
            lsock.settimeout(60)
            before = r.packets('tx'), r.rx_packets()
            t = threading.Thread(target=tcp_sink, args=(lsock, FLOWS),
                                 daemon=True)
            t.start()
            sent = subprocess.run(['ip', 'netns', 'exec', 'ns-remote',
                                   sys.executable, os.path.abspath(__file__),
                                   'tcp', os.environ['LOCAL_V4'],
                                   str(TCP_PORT), str(FLOWS),
                                   str(1024 * 1024)],
                                  capture_output=True, text=True, check=False)
            t.join(60)
            time.sleep(0.5)
            after = r.packets('tx'), r.rx_packets()
    finally:
        ethtool('-N', r.netif, 'delete', '0')
        xps_rxqs(r.netif, {0: 0, 1: 0})
    tx = {q: after[0][q] - before[0].get(q, 0) for q in after[0]}
    rx = {q: after[1][q] - before[1].get(q, 0) for q in after[1]}
    print(f'# packets by queue: received {rx}, sent {tx}')
    r.check(desc, sent.returncode == 0 and rx.get(1, 0) >= 100
            and tx.get(0, 0) >= 100 and tx.get(1, 0) * 10 < tx.get(0, 0),
            sent.stderr)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == 'send':
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == 'tcp':
        tcp_send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                 int(sys.argv[5]))
        return 0

    r = Rig()
    print('TAP version 13')
    print('1..18')
    nqueues = len(r.rx_packets())

    f = r.fields()
    r.check('default: tcp4 and tcp6 by addresses and ports',
            f['tcp4'] == ADDRS_PORTS and f['tcp6'] == ADDRS_PORTS, f)
    r.check('default: UDP and other IP frames not hashed',
            all(f[t] == set() for t in ('udp4', 'udp6', 'ip4', 'ip6')), f)

    d = r.udp_spread()
    r.check(f'unhashed UDP from {DATAGRAMS} ports: all to queue 0',
            d.get(0, 0) >= DATAGRAMS and all(d[q] == 0 for q in d if q), d)

    out = ethtool('-N', r.netif, 'rx-flow-hash', 'udp4', 'sdfn')
    f = r.fields()
    r.check('ethtool -N rx-flow-hash udp4 sdfn: netlink reads it back',
            out.returncode == 0 and f['udp4'] == ADDRS_PORTS
            and f['tcp4'] == ADDRS_PORTS and f['ip4'] == set(),
            out.stderr + str(f))
    out = ethtool('-n', r.netif, 'rx-flow-hash', 'udp4')
    r.check('ethtool -n rx-flow-hash udp4 lists the four fields',
            all(x in out.stdout for x in ('IP SA', 'IP DA', 'L4 bytes 0 & 1',
                                          'L4 bytes 2 & 3')), out.stdout)
    d = r.udp_spread()
    r.check(f'UDP by ports from {DATAGRAMS} ports: every queue reached',
            len(d) == nqueues and all(d[q] > 0 for q in d), d)

    e = r.set_fields({'udp4': ADDRS})
    d = r.udp_spread()
    r.check(f'UDP by addresses: the {DATAGRAMS} datagrams on one queue',
            e is None and sum(1 for q in d if d[q] >= DATAGRAMS) == 1
            and sum(d.values()) < 2 * DATAGRAMS, f'{e} {d}')

    e = r.set_fields({'udp4': set()})
    r.check('udp4 back to unhashed', e is None and r.fields()['udp4'] == set(), e)

    e = r.set_fields({'tcp4': ADDRS})
    f = r.fields()
    r.check('tcp4 by addresses hashes all IPv4 by addresses (one switch)',
            e is None and f['tcp4'] == ADDRS and f['udp4'] == ADDRS
            and f['ip4'] == ADDRS and f['udp6'] == set(), f'{e} {f}')
    e = r.set_fields({'tcp4': ADDRS_PORTS})
    f = r.fields()
    r.check('tcp4 by ports again: UDP and the rest unhashed again',
            e is None and f['tcp4'] == ADDRS_PORTS and f['udp4'] == set()
            and f['ip4'] == set(), f'{e} {f}')

    e = r.set_fields({'tcp4': {'ip-src'}})
    r.check('tcp4 by the source address alone: EINVAL, with the reason',
            expect_err(e, errno.EINVAL, 'the 82576 hashes by both addresses')
            and r.fields()['tcp4'] == ADDRS_PORTS, e)
    e = r.set_fields({'ip6': ADDRS_PORTS})
    r.check('ip6 by ports: EINVAL', expect_err(e, errno.EINVAL, '82576'), e)

    out = ethtool('-N', r.netif, 'flow-type', 'tcp4', 'dst-port', '5201',
                  'action', '1', 'loc', '0')
    e = r.set_fields({'udp4': ADDRS_PORTS})
    r.check('a rule steers through RSS: the hash fields stay (EBUSY)',
            out.returncode == 0 and expect_err(e, errno.EBUSY,
                                               'flow steering rules use the RSS table')
            and r.fields()['udp4'] == set(), f'{out.stderr} {e}')
    ethtool('-N', r.netif, 'delete', '0')

    e = r.set_fields({'udp4': ADDRS_PORTS})
    out = ethtool('-N', r.netif, 'flow-type', 'tcp4', 'dst-port', '5201',
                  'action', '1', 'loc', '0')
    r.check('UDP hashed: a rule that needs RSS is refused (EBUSY)',
            e is None and out.returncode != 0 and 'busy' in out.stderr.lower(),
            out.stderr)
    e = r.set_fields({'udp4': set()})
    out = ethtool('-N', r.netif, 'flow-type', 'tcp4', 'dst-port', '5201',
                  'action', '1', 'loc', '0')
    dl = ethtool('-N', r.netif, 'delete', '0')
    r.check('default hash again: the rule goes in', e is None and
            out.returncode == 0 and dl.returncode == 0, out.stderr + dl.stderr)

    out = ethtool('-X', r.netif, 'weight', '0', '1')
    low = ethtool('-L', r.netif, 'combined', '1')
    r.check('indirection table on queue 1 only: ethtool -L combined 1 refused',
            out.returncode == 0 and low.returncode != 0
            and 'indirection table' in low.stderr, out.stderr + low.stderr)
    out = ethtool('-X', r.netif, 'default')
    ch = ethtool('-l', r.netif).stdout
    r.check('ethtool -X default: the queue count unchanged',
            out.returncode == 0 and len(r.rx_packets()) == nqueues, ch)

    rx_queue_xps(r)

    r.eth.sock.close()
    r.nd.sock.close()
    return 1 if r.failed else 0


if __name__ == '__main__':
    sys.exit(main())
