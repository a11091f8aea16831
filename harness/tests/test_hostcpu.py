#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of hostcpu.sh, the host's reading of a VM's vCPU threads for the
benchmarks, against a stand-in for QEMU: a process named as QEMU names
itself, with threads named as QEMU names its vCPU threads
(-name debug-threads=on), one of which burns CPU when told to."""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HOSTCPU = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'hostcpu.sh')

# The stand-in: "burn S" on stdin makes vCPU 0's thread spin until it has
# run S seconds on a CPU (its own thread time, so that a busy host makes
# it last longer, not count less), then "done" on stdout; vCPU 1's thread
# only sleeps.
FAKE_QEMU = textwrap.dedent('''\
    import ctypes, sys, threading, time
    libc = ctypes.CDLL(None)
    def name(n):
        libc.prctl(15, n.encode(), 0, 0, 0)  # PR_SET_NAME
    name('qemu-system-x86')
    work = threading.Event()
    secs = [0.0]
    def vcpu0():
        name('CPU 0/TCG')
        while True:
            work.wait()
            work.clear()
            end = time.thread_time() + secs[0]
            while time.thread_time() < end:
                pass
            print('done', flush=True)
    def vcpu1():
        name('CPU 1/TCG')
        while True:
            time.sleep(3600)
    for f in (vcpu0, vcpu1):
        threading.Thread(target=f, daemon=True).start()
    print('ready', flush=True)
    for line in sys.stdin:
        secs[0] = float(line.split()[1])
        work.set()
''')


class HostCpu(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.fake = subprocess.Popen([sys.executable, '-c', FAKE_QEMU], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.assertEqual(self.fake.stdout.readline().strip(), 'ready')
        # The watcher looks for QEMU below the given process: this one.
        self.watcher = subprocess.Popen(['bash', HOSTCPU, self.dir, str(os.getpid())],
                                        start_new_session=True,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # It creates both files before it follows the requests.
        deadline = time.monotonic() + 10
        while not (os.path.exists(self.ack_path()) and os.path.exists(self.req_path())):
            self.assertLess(time.monotonic(), deadline, 'hostcpu.sh made no files')
            time.sleep(0.01)

    def tearDown(self):
        os.killpg(self.watcher.pid, signal.SIGTERM)
        self.watcher.wait()
        self.fake.kill()
        self.fake.wait()
        self.fake.stdin.close()
        self.fake.stdout.close()
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        os.rmdir(self.dir)

    def req_path(self):
        return os.path.join(self.dir, 'req')

    def ack_path(self):
        return os.path.join(self.dir, 'ack')

    def ask(self, verb, key):
        """Sends a request as the guest does and returns its answer line."""
        with open(self.req_path(), 'a', encoding='ascii') as f:
            f.write(f'{verb} {key}\n')
        deadline = time.monotonic() + 10
        while True:
            with open(self.ack_path(), encoding='ascii') as f:
                for line in f:
                    if line.startswith(f'{key} {verb}') or line.startswith(f'{key} error'):
                        return line.split()
            self.assertLess(time.monotonic(), deadline, f'no answer to "{verb} {key}"')
            time.sleep(0.01)

    def burn(self, secs):
        self.fake.stdin.write(f'burn {secs}\n')
        self.fake.stdin.flush()
        self.assertEqual(self.fake.stdout.readline().strip(), 'done')

    def test_the_busy_vcpu_is_counted_and_the_idle_one_is_not(self):
        self.assertEqual(self.ask('begin', 'run1'), ['run1', 'begin'])
        self.burn(0.3)
        answer = self.ask('end', 'run1')
        self.assertEqual(answer[:2], ['run1', 'end'])
        wall, vcpus, other = int(answer[2]), [int(v) for v in answer[3].split(',')], int(answer[4])
        self.assertEqual(len(vcpus), 2, answer)
        self.assertGreaterEqual(wall, 300_000_000, answer)
        # On-CPU time of a thread that ran 0.3 s: all of it, whatever
        # else the host runs.
        self.assertGreaterEqual(vcpus[0], 290_000_000, answer)
        self.assertLessEqual(vcpus[0], wall, answer)
        # Asleep throughout.
        self.assertLess(vcpus[1], 10_000_000, answer)
        # The main thread waits on its stdin.
        self.assertLess(other, 100_000_000, answer)

    def test_each_key_is_answered_for_itself(self):
        self.ask('begin', 'a1')
        self.ask('begin', 'a2')
        self.burn(0.1)
        first = self.ask('end', 'a1')
        self.burn(0.1)
        second = self.ask('end', 'a2')
        # a2 spans both burns, a1 only the first.
        self.assertGreater(int(second[3].split(',')[0]), int(first[3].split(',')[0]))

    def test_an_end_without_a_begin_is_an_error(self):
        self.assertEqual(self.ask('end', 'lost'), ['lost', 'error', 'no', 'begin'])


if __name__ == '__main__':
    unittest.main()
