# SPDX-License-Identifier: GPL-2.0
"""hangdump.py against a monitor that answers as QEMU's does."""

import contextlib
import io
import os
import socket
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import hangdump  # noqa: E402

SYSTEM_MAP = """\
ffffffff81000000 T _stext
ffffffff81100000 T csd_lock_wait
ffffffff81100080 T smp_call_function_many_cond
ffffffff81100400 t text_poke_sync
ffffffff81200000 T default_idle
ffffffff81300000 T _etext
ffffffff82000000 D some_data
"""


def cpu(n, rip, rsp, hlt):
    return (f'CPU#{n}\r\n'
            'RAX=0000000000000000 RBX=0000000000000000 RCX=0000000000000000 '
            'RDX=0000000000000000\r\n'
            f'RSI=0000000000000000 RDI=0000000000000000 RBP=0000000000000000 '
            f'RSP={rsp:016x}\r\n'
            f'RIP={rip:016x} RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 '
            f'HLT={hlt}\r\n'
            'ES =0000 0000000000000000 ffffffff 00c00000\r\n')


class FakeMonitor(threading.Thread):
    """One client; answers 'info registers -a', 'cpu N', 'x' and 'quit'."""

    def __init__(self, path, spin_rips, unreadable=False):
        super().__init__(daemon=True)
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(1)
        self.spin_rips = spin_rips
        self.unreadable = unreadable
        self.asked = []

    def run(self):
        conn, _ = self.srv.accept()
        conn.sendall(b'QEMU 10.0.2 monitor - type \'help\' for more information\r\n(qemu) ')
        buf = b''
        sample = 0
        while True:
            data = conn.recv(4096)
            if not data:
                break
            buf += data
            while b'\n' in buf:
                line, buf = buf.split(b'\n', 1)
                cmd = line.decode()
                self.asked.append(cmd)
                out = cmd + '\r\n'
                if cmd == 'info registers -a':
                    rip = self.spin_rips[sample % len(self.spin_rips)]
                    sample += 1
                    out += ('\r\n' + cpu(0, rip, 0xffffc90000003e20, 0)
                            + '\r\n' + cpu(1, 0xffffffff81200010, 0xffffc90000013e80, 1))
                elif cmd.startswith('x /64gx') and self.unreadable:
                    out += 'Cannot access memory\r\n'
                elif cmd.startswith('x /64gx'):
                    out += ('ffffc90000003e20: 0x0000000000000010 0xffffffff811000a0\r\n'
                            'ffffc90000003e30: 0xffffffff82000008 0xffffffff81100410\r\n'
                            'ffffc90000004000: Cannot access memory\r\n')
                elif cmd == 'quit':
                    conn.close()
                    return
                conn.sendall(out.encode() + b'(qemu) ')


class HangDumpTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.sock = os.path.join(self.dir.name, 'monitor.sock')
        self.map = os.path.join(self.dir.name, 'System.map')
        with open(self.map, 'w') as f:
            f.write(SYSTEM_MAP)

    def tearDown(self):
        self.dir.cleanup()

    def run_dump(self, *extra):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = hangdump.main(['hangdump.py', self.sock, self.map, *extra])
        self.assertEqual(rc, 0)
        return out.getvalue()

    def test_spinning_and_halted(self):
        mon = FakeMonitor(self.sock, [0xffffffff81100010, 0xffffffff81100020])
        mon.start()
        out = self.run_dump('--quit')
        mon.join(5)
        self.assertIn('vCPU 0: not halted, at csd_lock_wait+0x10, csd_lock_wait+0x20', out)
        self.assertIn('vCPU 1: halted (HLT), at default_idle+0x10', out)
        # The stack scan: text addresses only, innermost first.
        lines = out.splitlines()
        i = lines.index('    text addresses on its stack, innermost first:')
        callers = []
        for line in lines[i + 1:]:
            if not line.startswith('      '):
                break
            callers.append(line.strip())
        self.assertEqual(callers,
                         ['smp_call_function_many_cond+0x20', 'text_poke_sync+0x10'])
        # The stack was read on the spinning vCPU, then QEMU was stopped.
        self.assertIn('cpu 0', mon.asked)
        self.assertEqual(mon.asked[-1], 'quit')

    def test_unreadable_stack(self):
        mon = FakeMonitor(self.sock, [0xffffffff81100010], unreadable=True)
        mon.start()
        out = self.run_dump('--quit')
        mon.join(5)
        self.assertIn('      (stack unreadable: Cannot access memory)\n', out)

    def test_no_monitor_no_output(self):
        self.assertEqual(self.run_dump(), '')


if __name__ == '__main__':
    unittest.main()
