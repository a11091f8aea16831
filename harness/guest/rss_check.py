#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks that received TCP flows are spread over the NIC's receive queues.

Runs in the guest: an echo server in netns ns-remote (REMOTE_V4), and from
the host side 32 connections, each from its own port, each receiving data.
The interrupt counts of the vectors of every receive queue in use on
NETIF (/proc/interrupts; vectors of queues out of use after ethtool -L
are left out) must all grow. Exits 0 if they do, 1 otherwise, printing
the counts.
"""

import os
import socket
import subprocess
import sys
import time

PORT = 5001


def queue_irqs(prefixes, nqueues):
    counts = {}
    with open('/proc/interrupts', encoding='ascii') as f:
        for line in f:
            name = line.split()[-1]
            idx = name.rsplit('-', 1)[-1]
            if name.startswith(prefixes) and idx.isdigit() and int(idx) < nqueues:
                fields = line.split()[1:]
                counts[name] = sum(int(x) for x in fields if x.isdigit())
    return counts


def main():
    netif = os.environ['NETIF']
    remote = os.environ['REMOTE_V4']
    drv = os.path.basename(os.path.realpath(f'/sys/class/net/{netif}/device/driver'))
    # igb_rs names its queue vectors <driver>-rxtx-<n>; the C igb
    # <netdev>-TxRx-<n>, or <netdev>-rx-<n> for receive-only vectors.
    prefixes = (f'{drv}-rxtx-', f'{netif}-TxRx-', f'{netif}-rx-')
    nqueues = len([q for q in os.listdir(f'/sys/class/net/{netif}/queues')
                   if q.startswith('rx-')])
    before = queue_irqs(prefixes, nqueues)
    if len(before) < 2:
        print(f'# {drv}: fewer than two queue vectors: {before}')
        with open('/proc/interrupts', encoding='ascii') as f:
            print(''.join(f'# {l}' for l in f if 'MSI' in l), end='')
        return 1
    server = subprocess.Popen(['ip', 'netns', 'exec', 'ns-remote', 'socat',
                               f'TCP-LISTEN:{PORT},fork,reuseaddr', 'EXEC:cat'])
    try:
        # socat starts slowly under TCG, the more so on the debug kernel:
        # wait until it listens, a minute at most.
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection((remote, PORT), timeout=5).close()
                break
            except ConnectionRefusedError:
                if server.poll() is not None or time.monotonic() > deadline:
                    print(f'# socat did not listen on port {PORT} within 60 s')
                    return 1
                time.sleep(0.1)
        for _ in range(32):
            with socket.create_connection((remote, PORT), timeout=5) as s:
                s.sendall(b'x' * 2000)
                got = 0
                while got < 2000:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    got += len(chunk)
    finally:
        server.terminate()
        server.wait()
    after = queue_irqs(prefixes, nqueues)
    print(f'# interrupts before {before}, after {after}')
    return 0 if all(after[k] > before[k] for k in before) else 1


if __name__ == '__main__':
    sys.exit(main())
