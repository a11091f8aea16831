# SPDX-License-Identifier: GPL-2.0
"""Tests of guest/slowwait/sitecustomize.py, the debug kernel's stretch of
upstream's fixed waits: each is run in a Python of its own started as
run.sh starts a kselftest (PYTHONPATH, HARNESS_SLOW_WAITS), against a
stand-in of the tests' library with upstream's signatures."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

SLOWWAIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                        'guest', 'slowwait')

# net/lib/py/utils.py's two waits, as upstream has them (their
# signatures are what slowwait binds to), reduced to what they wait for.
UTILS = '''
import socket, subprocess, time

def wait_port_listen(port, proto="tcp", ns=None, host=None, sleep=0.005, deadline=5):
    end = time.monotonic() + deadline
    while True:
        s = socket.socket()
        try:
            s.connect(("127.0.0.1", port))
            return
        except OSError:
            pass
        finally:
            s.close()
        if time.monotonic() > end:
            raise Exception("Waiting for port listen timed out")
        time.sleep(sleep)

class cmd:
    def __init__(self, comm, shell=None, fail=True, expect_fail=False, ns=None,
                 background=False, host=None, timeout=20, ksft_ready=None,
                 ksft_wait=None):
        self.proc = subprocess.Popen(comm, shell=True, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        if not background:
            self.process(terminate=False, fail=fail, expect_fail=expect_fail,
                         timeout=timeout)

    def process(self, terminate=True, fail=None, expect_fail=False, timeout=20):
        if terminate:
            self.proc.terminate()
        self.proc.wait(timeout=timeout)
'''


class SlowWaitTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()  # pylint: disable=consider-using-with
        pkg = os.path.join(self.tmp.name, 'net', 'lib', 'py')
        os.makedirs(pkg)
        for d in ('net', 'net/lib', 'net/lib/py'):
            with open(os.path.join(self.tmp.name, d, '__init__.py'), 'w',
                      encoding='utf-8'):
                pass
        with open(os.path.join(pkg, 'utils.py'), 'w', encoding='utf-8') as f:
            f.write(UTILS)

    def tearDown(self):
        self.tmp.cleanup()

    def run_test(self, body, factor='3'):
        env = dict(os.environ, PYTHONPATH=SLOWWAIT, HARNESS_SLOW_WAITS=factor)
        script = 'from net.lib.py import utils\n' + textwrap.dedent(body)
        r = subprocess.run([sys.executable, '-c', script], cwd=self.tmp.name,
                           env=env, capture_output=True, text=True, timeout=60,
                           check=False)
        return r.returncode, r.stdout + r.stderr

    def free_port(self):
        import socket  # pylint: disable=import-outside-toplevel
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            return s.getsockname()[1]

    def test_no_listener_no_progress(self):
        # Nothing of the test runs: the stretched wait times out, and
        # without the evidence results.py needs to excuse it.
        port = self.free_port()
        rc, out = self.run_test(f'utils.wait_port_listen({port}, deadline=0.2)')
        self.assertNotEqual(rc, 0)
        self.assertIn('Waiting for port listen timed out', out)
        self.assertNotIn('harness-progress: ', out)
        self.assertIn('no process of the test was working', out)

    def wait_beside(self, command, deadline):
        """A wait for a port nobody listens on, while the test runs
        `command` in the background (killed after): (exit code, output)."""
        return self.run_test(f'''
            c = utils.cmd({command!r}, background=True)
            try:
                utils.wait_port_listen({self.free_port()}, deadline={deadline})
            finally:
                c.proc.kill()
        ''')

    def test_idle_listener_no_progress(self):
        # A process of the test lives on but does nothing (a listener
        # blocked, or one that failed to bind and waits): no progress.
        rc, out = self.wait_beside('exec sleep 30', 0.3)
        self.assertNotEqual(rc, 0)
        self.assertNotIn('harness-progress: ', out)

    def test_busy_process_is_progress(self):
        rc, out = self.wait_beside("exec python3 -c 'while True: pass'", 0.5)
        self.assertNotEqual(rc, 0)
        self.assertIn('harness-progress: port', out)
        self.assertIn('python3 (pid', out)

    def test_late_listener_passes_and_says_so(self):
        # A listener that comes up after the test's own deadline, within
        # the stretch: the wait returns, and the case's output says by how
        # much it overran.
        port = self.free_port()
        rc, out = self.run_test(f'''
            import socket, threading, time
            def listen():
                time.sleep(0.6)
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", {port}))
                s.listen()
                time.sleep(5)
            threading.Thread(target=listen, daemon=True).start()
            utils.wait_port_listen({port}, deadline=0.3)
            print("listened")
        ''', factor='6')
        self.assertEqual(rc, 0, out)
        self.assertIn('listened', out)
        self.assertIn("past the test's 0.3 s", out)

    def test_command_timeout_stretched_once(self):
        # cmd() hands its timeout to process(): stretched there, once.
        rc, out = self.run_test('utils.cmd("sleep 0.5", timeout=0.2)')
        self.assertEqual(rc, 0, out)
        rc, out = self.run_test('utils.cmd("sleep 1", timeout=0.2)')
        self.assertNotEqual(rc, 0)
        self.assertIn('TimeoutExpired', out)

    def test_off_without_factor(self):
        rc, out = self.run_test('utils.cmd("sleep 0.5", timeout=0.2)', factor='1')
        self.assertNotEqual(rc, 0)
        self.assertIn('TimeoutExpired', out)


if __name__ == '__main__':
    unittest.main()
