#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Say where a hung guest is, before its VM is stopped.

    hangdump.py MONITOR_SOCKET SYSTEM_MAP [--after SECONDS] [--quit]

Waits SECONDS (vm.sh's VM_TIMEOUT), then asks QEMU's human monitor (the
unix socket vm.sh gives QEMU) for every vCPU's registers, five times a
fifth of a second apart, and prints for each vCPU whether it is halted and
the functions its instruction pointer was in: a vCPU spinning in a loop
shows the loop, one waiting for an interrupt shows HLT. For each vCPU
that is not halted it then reads 64 words of its stack and prints those
that point into the kernel's text, innermost first: the kernel has no
frame pointers here, so this is a scan, not an unwinder's trace, but the
callers are among them. --quit then stops QEMU.

Prints nothing and exits 0 when the socket is gone before the wait ends
(the VM finished).
"""

import bisect
import re
import socket
import sys
import time

PROMPT = b'(qemu) '


class Monitor:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.read_to_prompt()

    def read_to_prompt(self):
        buf = b''
        while not buf.endswith(PROMPT):
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError('monitor closed')
            buf += chunk
        return buf[:-len(PROMPT)].decode(errors='replace').replace('\r\n', '\n')

    def cmd(self, line):
        self.sock.sendall(line.encode() + b'\n')
        out = self.read_to_prompt()
        # The monitor echoes the command line, with terminal escapes.
        return out.split('\n', 1)[1] if '\n' in out else ''


class Symbols:
    def __init__(self, path):
        self.addrs, self.names = [], []
        self.text = (0, 0)
        lo = hi = None
        try:
            with open(path) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) < 3:
                        continue
                    addr = int(parts[0], 16)
                    if parts[1] in 'tTwW':
                        self.addrs.append(addr)
                        self.names.append(parts[2])
                    if parts[2] == '_stext':
                        lo = addr
                    elif parts[2] == '_etext':
                        hi = addr
        except OSError:
            pass
        order = sorted(range(len(self.addrs)), key=self.addrs.__getitem__)
        self.addrs = [self.addrs[i] for i in order]
        self.names = [self.names[i] for i in order]
        if lo is not None and hi is not None:
            self.text = (lo, hi)

    def in_text(self, addr):
        return self.text[0] <= addr < self.text[1]

    def name(self, addr):
        if not self.in_text(addr):
            if addr >= 0xffffffffa0000000:
                return f'{addr:#x} (a module)'
            return f'{addr:#x}'
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return f'{addr:#x}'
        return f'{self.names[i]}+{addr - self.addrs[i]:#x}'


CPU = re.compile(r'^CPU#(\d+)', re.M)
REG = re.compile(r'\b([RE]IP|[RE]SP)=([0-9a-f]+)')
HLT = re.compile(r'\bHLT=(\d)')
CPL = re.compile(r'\bCPL=(\d)')


def registers(mon):
    """cpu -> (rip, rsp, halted, cpl) from one 'info registers -a'."""
    out = mon.cmd('info registers -a')
    cpus = {}
    parts = CPU.split(out)
    for i in range(1, len(parts) - 1, 2):
        # EIP and ESP outside long mode.
        regs = {k.replace('E', 'R', 1): v for k, v in REG.findall(parts[i + 1])}
        hlt = HLT.search(parts[i + 1])
        cpl = CPL.search(parts[i + 1])
        if 'RIP' in regs:
            cpus[int(parts[i])] = (int(regs['RIP'], 16), int(regs.get('RSP', '0'), 16),
                                   bool(hlt and hlt.group(1) == '1'),
                                   int(cpl.group(1)) if cpl else -1)
    return cpus


def stack_words(mon, cpu, rsp):
    mon.cmd(f'cpu {cpu}')
    out = mon.cmd(f'x /64gx {rsp:#x}')
    words = []
    for line in out.splitlines():
        head, _, rest = line.partition(':')
        try:
            int(head, 16)
            words += [int(w, 16) for w in rest.split()]
        except ValueError:
            # The monitor's own message, 'Cannot access memory' where the
            # words run past the top of the stack into its guard page.
            if not words:
                raise ValueError(line.strip()) from None
            break
    return words


def dump(mon, syms):
    samples = []
    for _ in range(5):
        samples.append(registers(mon))
        time.sleep(0.2)
    print(f'guest state at the timeout ({len(samples[-1])} vCPUs, '
          '5 samples 0.2 s apart):')
    for cpu in sorted(samples[-1]):
        seen = [s[cpu] for s in samples if cpu in s]
        if all(h for _, _, h, _ in seen):
            print(f'  vCPU {cpu}: halted (HLT), at {syms.name(seen[-1][0])}')
            continue
        where = []
        for rip, _, _, cpl in seen:
            w = syms.name(rip) if cpl == 0 else f'user space {rip:#x}'
            if w not in where:
                where.append(w)
        print(f'  vCPU {cpu}: not halted, at ' + ', '.join(where))
        rip, rsp, _, cpl = seen[-1]
        if cpl != 0:
            continue
        try:
            callers = [syms.name(w) for w in stack_words(mon, cpu, rsp)
                       if syms.in_text(w)]
        except (OSError, ValueError, EOFError) as e:
            callers = [f'(stack unreadable: {e})']
        if callers:
            print('    text addresses on its stack, innermost first:')
            for c in callers[:16]:
                print(f'      {c}')


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, smap = argv[1], argv[2]
    after = float(argv[argv.index('--after') + 1]) if '--after' in argv else 0
    time.sleep(after)
    try:
        mon = Monitor(path)
    except OSError:
        return 0
    try:
        dump(mon, Symbols(smap))
    except (OSError, EOFError) as e:
        print(f'guest state at the timeout: the monitor failed ({e})')
    if '--quit' in argv:
        try:
            mon.sock.sendall(b'quit\n')
        except OSError:
            pass
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
