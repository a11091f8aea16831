# SPDX-License-Identifier: GPL-2.0
"""Tests for harness/results.py: how a run is judged."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, '..', 'results.py')

KUNIT_PASS = textwrap.dedent('''\
    KTAP version 1
    1..1
        KTAP version 1
        # Subtest: devmem_alloc
        # module: devmem
        1..2
        ok 1 exhaustion
        ok 2 alignment
    # devmem_alloc: pass:2 fail:0 skip:0 total:2
    ok 1 devmem_alloc
    ''')

# What KUnit prints for a failed KUNIT_EXPECT / kunit_assert!.
KUNIT_FAIL = textwrap.dedent('''\
    KTAP version 1
    1..1
        KTAP version 1
        # Subtest: devmem_alloc
        1..2
        ok 1 exhaustion
        # alignment: EXPECTATION FAILED at net/core/devmem_rs/alloc.rs:120
        Expected n == 4, but
            n == 3
        not ok 2 alignment
    not ok 1 devmem_alloc
    ''')

KUNIT_SKIP = KUNIT_PASS.replace('ok 2 alignment', 'ok 2 alignment # SKIP no iommu')

DEVMEM_SKIPS = textwrap.dedent('''\
    TAP version 13
    1..2
    ok 1 devmem.check_rx # SKIP Test requires devmem support
    ok 2 devmem.check_tx # SKIP Test requires devmem support
    # Totals: pass:0 fail:0 xfail:0 xpass:0 skip:2 error:0
    ''')


def judge(files, expectations, static=None, extra=None):
    with tempfile.TemporaryDirectory() as d:
        res = os.path.join(d, 'res')
        os.mkdir(res)
        with open(os.path.join(res, 'suites'), 'w') as f:
            f.write(' '.join(files))
        for name, text in (extra or {}).items():
            with open(os.path.join(res, name), 'w') as f:
                f.write(text)
        for suite, text in files.items():
            with open(os.path.join(res, suite.replace('/', '_') + '.tap'), 'w') as f:
                f.write(text)
        exp = os.path.join(d, 'exp')
        with open(exp, 'w') as f:
            f.write(expectations)
        args = [sys.executable, RESULTS, exp, res]
        if static is not None:
            st = os.path.join(d, 'static.tsv')
            with open(st, 'w') as f:
                f.write(static)
            args += ['--static', st]
        p = subprocess.run(args, capture_output=True, text=True, check=False)
        return p.returncode, p.stdout


class Judge(unittest.TestCase):
    def test_kunit_pass(self):
        rc, out = judge({'kunit': KUNIT_PASS}, '')
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.rstrip().endswith('2 passed, 0 failed, 0 skipped'), out)

    def test_kunit_failed_assertion_fails_the_run(self):
        rc, out = judge({'kunit': KUNIT_FAIL}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL devmem_alloc.alignment', out)
        self.assertIn('EXPECTATION FAILED at net/core/devmem_rs/alloc.rs:120', out)
        self.assertTrue(out.rstrip().endswith('1 passed, 1 failed, 0 skipped'), out)

    def test_kunit_skip_is_a_failure(self):
        rc, out = judge({'kunit': KUNIT_SKIP}, '')
        self.assertEqual(rc, 1, out)

    def test_kunit_suite_that_never_ran_is_a_failure(self):
        # What debugfs shows for a built-in suite when autorun is off.
        text = textwrap.dedent('''\
            KTAP version 1
            1..1
                KTAP version 1
                # Subtest: rust_kernel_fmt
                1..1
            ok 1 rust_kernel_fmt
            ''')
        rc, out = judge({'kunit': text}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('0 of 1 cases ran', out)

    def test_no_kunit_suite_is_a_failure(self):
        rc, _ = judge({'kunit': 'KTAP version 1\n1..0\n'}, '')
        self.assertEqual(rc, 1)

    def test_unclaimed_skip_counts_as_skipped(self):
        exp = ('s.py check_rx unclaimed no driver yet\n'
               's.py check_tx unclaimed no driver yet\n')
        rc, out = judge({'s.py': DEVMEM_SKIPS}, exp)
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.rstrip().endswith('0 passed, 0 failed, 2 skipped'), out)

    def test_skip_of_claimed_case_is_a_failure(self):
        exp = 's.py check_rx pass\ns.py check_tx unclaimed no driver yet\n'
        rc, out = judge({'s.py': DEVMEM_SKIPS}, exp)
        self.assertEqual(rc, 1, out)
        self.assertIn('SKIP check_rx: Test requires devmem support (claimed)', out)

    def test_xfail_of_claimed_case_is_a_failure(self):
        tap = ('TAP version 13\n1..1\n'
               'ok 1 r.reconfig_tx_stall # XFAIL could not build qdisc backlog\n')
        rc, out = judge({'r.py': tap}, 'r.py reconfig_tx_stall pass\n')
        self.assertEqual(rc, 1, out)
        self.assertIn('reconfig_tx_stall', out)

    def test_variants_are_told_apart(self):
        text = textwrap.dedent('''\
            TAP version 13
            1..2
            ok 1 iou-zcrx.test_zcrx.single
            not ok 2 iou-zcrx.test_zcrx.rss
            ''')
        exp = ('z.py test_zcrx.single pass\n'
               'z.py test_zcrx.rss unclaimed no RSS contexts\n')
        rc, out = judge({'z.py': text}, exp)
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.rstrip().endswith('1 passed, 0 failed, 1 skipped'), out)
        rc, out = judge({'z.py': text}, 'z.py test_zcrx.single pass\n')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL test_zcrx.rss (claimed)', out)

    def test_retry_is_reported(self):
        first = textwrap.dedent('''\
            TAP version 13
            1..2
            ok 1 devmem.check_rx
            # Exception| Exception: Waiting for port listen timed out
            not ok 2 devmem.check_rx_hds
            ''')
        second = first.replace('not ok 2', 'ok 2')
        rc, out = judge({'d.py': second}, '', extra={'d.py.attempt1': first})
        self.assertEqual(rc, 0, out)
        self.assertIn('2 cases, retried once', out)
        self.assertIn('RETRIED: attempt 1 failed check_rx_hds', out)
        rc, out = judge({'d.py': first}, '', extra={'d.py.attempt1': first})
        self.assertEqual(rc, 1, out)

    def test_leftover_is_reported(self):
        tap = 'TAP version 13\n1..1\nok 1 devmem.check_rx\n'
        left = 'flow steering rule 0: TCP over IPv6 Direct to queue 1\n'
        rc, out = judge({'d.py': tap}, '', extra={'d.py.leftover': left})
        self.assertEqual(rc, 0, out)
        self.assertIn('LEFT: left flow steering rule 0: TCP over IPv6', out)
        # Our own suites must undo what they set.
        rc, out = judge({'nic-rss': tap}, '', extra={'nic-rss.leftover': left})
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL nic-rss', out)

    def test_truncated_tap_is_a_failure(self):
        text = 'TAP version 13\n1..3\nok 1 t.a\n'
        rc, out = judge({'t.py': text}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('incomplete', out)

    def test_missing_suite_output_is_a_failure(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, 'suites'), 'w') as f:
                f.write('kunit')
            exp = os.path.join(d, 'exp')
            open(exp, 'w').close()
            p = subprocess.run([sys.executable, RESULTS, exp, d],
                               capture_output=True, text=True, check=False)
            self.assertEqual(p.returncode, 1, p.stdout)

    def test_static_failure_fails_the_run(self):
        rc, out = judge({}, '', static='rustfmt\tfail\t1 file\ncheckpatch\tpass\t2 patches\n')
        self.assertEqual(rc, 1, out)
        self.assertTrue(out.rstrip().endswith('1 passed, 1 failed, 0 skipped'), out)

    def test_kernel_warning_fails_the_run(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, 'suites'), 'w') as f:
                f.write('kunit')
            with open(os.path.join(d, 'kunit.tap'), 'w') as f:
                f.write(KUNIT_PASS)
            with open(os.path.join(d, 'dmesg.txt'), 'w') as f:
                f.write('[    3.1] ok\n[    3.2] WARNING: CPU: 1 PID: 42 at net/core/devmem.c:80 x\n')
            exp = os.path.join(d, 'exp')
            open(exp, 'w').close()
            p = subprocess.run([sys.executable, RESULTS, exp, d],
                               capture_output=True, text=True, check=False)
            self.assertEqual(p.returncode, 1, p.stdout)
            self.assertIn('FAIL kernel-log', p.stdout)
            self.assertIn('net/core/devmem.c:80', p.stdout)

    def test_checker_reports_fail_the_run(self):
        reports = [
            'WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected',
            'WARNING: possible circular locking dependency detected',
            'WARNING: suspicious RCU usage',
            'BUG: sleeping function called from invalid context at kernel/locking/mutex.c:580',
            'DMA-API: igb_rs 0000:00:0a.0: mapping sg segment longer than device claims '
            'to support [len=131072] [max=65536]',
            'ref_tracker: netdev@000000001c5b8a7c has 1/2 users at',
            'unregister_netdevice: waiting for eth0 to become free. Usage count = 2',
        ]
        quiet = ('[    0.5] DMA-API: preallocated 65536 debug entries\n'
                 '[    0.5] DMA-API: debugging enabled by kernel config\n')
        for line in reports:
            with self.subTest(line=line), tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, 'suites'), 'w') as f:
                    f.write('kunit')
                with open(os.path.join(d, 'kunit.tap'), 'w') as f:
                    f.write(KUNIT_PASS)
                with open(os.path.join(d, 'dmesg.txt'), 'w') as f:
                    f.write(quiet + f'[    9.1] {line}\n')
                exp = os.path.join(d, 'exp')
                open(exp, 'w').close()
                p = subprocess.run([sys.executable, RESULTS, exp, d],
                                   capture_output=True, text=True, check=False)
                self.assertEqual(p.returncode, 1, p.stdout)
                self.assertIn('1 warnings or bugs', p.stdout)

    def test_fault_injection_lines_do_not_fail_the_run(self):
        # What the faults suite makes the debug kernel print: fail_dump()
        # at verbose 1 (lib/fault-inject.c), and what callers print when an
        # allocation fails. The suite's own checks judge those paths.
        lines = [
            'FAULT_INJECTION: forcing a failure.',
            'name failslab, interval 1, probability 0, space 0, times 1',
            'name fail_page_alloc, interval 1, probability 0, space 0, times 0',
            'python3: vmalloc error: size 36864, failed to allocate pages, '
            'mode:0xdc0(GFP_KERNEL|__GFP_ZERO), nodemask=(null),cpuset=/,mems_allowed=0',
            'CPU: 0 UID: 0 PID: 512 Comm: python3 Not tainted 7.3.0 #1 PREEMPT(voluntary)',
            'SLUB: Unable to allocate memory on node -1, gfp=0xcc0(GFP_KERNEL)',
        ]
        dmesg = ''.join(f'[   42.{i}] {l}\n' for i, l in enumerate(lines))
        tap = 'TAP version 13\n1..1\nok 1 - bind-rx\n'
        rc, out = judge({'faults': tap}, '', extra={'dmesg.txt': dmesg})
        self.assertEqual(rc, 0, out)
        self.assertIn('ok   kernel-log: 1 passed', out)
        self.assertIn('ok   faults: 1 passed', out)

    def test_faults_is_judged_as_our_own_suite(self):
        # Every case must pass (no expectations), and what it leaves on
        # the NIC fails it.
        tap = 'TAP version 13\n1..2\nok 1 - bind-rx\nnot ok 2 - link up\n'
        rc, out = judge({'faults': tap}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL link up', out)
        tap = 'TAP version 13\n1..1\nok 1 - bind-rx\n'
        rc, out = judge({'faults': tap}, '',
                        extra={'faults.leftover': 'a user indirection table\n'})
        self.assertEqual(rc, 1, out)
        self.assertIn('LEFT: left a user indirection table', out)

    def test_races_is_judged_as_our_own_suite(self):
        # Every case must pass, a short plan (the suite died) fails, and
        # what it leaves on the NIC fails it.
        tap = ('TAP version 13\n1..4\n# unbind vs kill -9: 20 of 20 rounds in 95 s\n'
               'ok 1 - driver unbind racing kill -9 of the binding\'s owner, in a loop\n'
               'not ok 2 - rmmod igb_rs with a TX binding held, then the binding closed\n')
        rc, out = judge({'races': tap}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL rmmod igb_rs with a TX binding held', out)
        self.assertIn('incomplete: plan 4, 2 results', out)
        tap = 'TAP version 13\n1..1\nok 1 - socket close racing a queue restart\n'
        rc, out = judge({'races': tap}, '')
        self.assertEqual(rc, 0, out)
        self.assertIn('ok   races: 1 passed', out)
        rc, out = judge({'races': tap}, '',
                        extra={'races.leftover': 'a user indirection table\n'})
        self.assertEqual(rc, 1, out)

    def test_dma_api_error_count_fails_the_run(self):
        for count, rc in (('0', 0), ('3', 1)):
            with self.subTest(count=count), tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, 'suites'), 'w') as f:
                    f.write('kunit')
                with open(os.path.join(d, 'kunit.tap'), 'w') as f:
                    f.write(KUNIT_PASS)
                with open(os.path.join(d, 'dma-api-errors.txt'), 'w') as f:
                    f.write(count + '\n')
                exp = os.path.join(d, 'exp')
                open(exp, 'w').close()
                p = subprocess.run([sys.executable, RESULTS, exp, d],
                                   capture_output=True, text=True, check=False)
                self.assertEqual(p.returncode, rc, p.stdout)
                self.assertIn(f'dma-api: {1 - rc} passed, {rc} failed', p.stdout)

    def test_slow_case_may_only_time_out(self):
        timeout = textwrap.dedent('''\
            TAP version 13
            1..2
            # Exception| Exception: Waiting for port listen timed out
            not ok 1 devmem.check_rx
            # Exception| AssertionError: payload mismatch
            not ok 2 devmem.check_tx
            ''')
        with tempfile.TemporaryDirectory() as d:
            res = os.path.join(d, 'res')
            os.mkdir(res)
            with open(os.path.join(res, 'suites'), 'w') as f:
                f.write('drivers/net/hw/devmem.py')
            with open(os.path.join(res, 'drivers_net_hw_devmem.py.tap'), 'w') as f:
                f.write(timeout)
            exp = os.path.join(d, 'exp')
            with open(exp, 'w') as f:
                f.write('drivers/net/hw/devmem.py check_rx pass\n'
                        'drivers/net/hw/devmem.py check_tx pass\n')
            slow = os.path.join(d, 'slow')
            with open(slow, 'w') as f:
                f.write('drivers/net/hw/devmem.py check_rx the listener is slow\n'
                        'drivers/net/hw/devmem.py check_tx the sender is slow\n')
            p = subprocess.run([sys.executable, RESULTS, exp, res, '--slow', slow],
                               capture_output=True, text=True, check=False)
            # The timeout is excused; the other failure is not.
            self.assertEqual(p.returncode, 1, p.stdout)
            self.assertIn('SLOW check_rx: timed out under the debug kernel', p.stdout)
            self.assertIn('FAIL check_tx', p.stdout)
            self.assertIn('0 passed, 1 failed, 1 skipped', p.stdout)

    def test_checker_giving_up_under_fault_injection_is_a_note(self):
        gave_up = '[  99.1] DMA-API: cacheline tracking ENOMEM, dma-debug disabled\n'
        for suites, rc in (('kunit faults', 0), ('kunit', 1)):
            with self.subTest(suites=suites), tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, 'suites'), 'w') as f:
                    f.write(suites)
                with open(os.path.join(d, 'kunit.tap'), 'w') as f:
                    f.write(KUNIT_PASS)
                with open(os.path.join(d, 'faults.tap'), 'w') as f:
                    f.write('TAP version 13\n1..1\nok 1 - bind-rx\n')
                with open(os.path.join(d, 'dmesg.txt'), 'w') as f:
                    f.write(gave_up)
                exp = os.path.join(d, 'exp')
                open(exp, 'w').close()
                p = subprocess.run([sys.executable, RESULTS, exp, d],
                                   capture_output=True, text=True, check=False)
                self.assertEqual(p.returncode, rc, p.stdout)

    def test_bad_expectation_line_is_rejected(self):
        rc, _ = judge({}, 's.py check_rx maybe\n')
        self.assertNotEqual(rc, 0)



RUN_SH = os.path.join(HERE, '..', 'guest', 'run.sh')


def retry_counts(text):
    """What suite_kselftest's rule (in guest/run.sh) counts in a run's
    output: failed cases, and those that failed only on a timeout."""
    with open(RUN_SH, encoding='utf-8') as f:
        src = f.read()
    prog = src.split("read -r nfail ntimeout < <(awk '", 1)[1].split("' \"$out\")", 1)[0]
    out = subprocess.run(['awk', prog], input=text, capture_output=True, text=True,
                         check=True).stdout.split()
    return int(out[0]), int(out[1])


class GuestRetryRule(unittest.TestCase):
    def test_timeouts_are_retried_and_nothing_else(self):
        zcrx = textwrap.dedent('''\
            # Exception|   STDERR: /k/iou-zcrx: send(): 1407168
            # Exception|   STDERR: /k/iou-zcrx: test failed
            not ok 1 nk_qlease.test_iou_zcrx_large_buf
            ok 2 nk_qlease.test_attrs
            ''')
        self.assertEqual(retry_counts(zcrx), (1, 1))
        listen = '# Exception| Exception: Waiting for port listen timed out\nnot ok 1 d.x\n'
        self.assertEqual(retry_counts(listen), (1, 1))
        client = ("# Exception| subprocess.TimeoutExpired: Command '['ip', 'netns', 'exec', "
                  "'ns-remote', 'bash', '-c', '/k/iou-zcrx -c -h 2001:db8:2::2:2 -p 50239 "
                  "-l 12840']' timed out after 20 seconds\nnot ok 1 nk_qlease.test_iou_zcrx\n")
        self.assertEqual(retry_counts(client), (1, 1))
        # Another command's timeout is not one of them.
        server = client.replace('iou-zcrx -c', 'ncdevmem -s')
        self.assertEqual(retry_counts(server), (1, 0))
        # A real failure next to a timeout: not retried (counts differ).
        other = zcrx + '# Exception| AssertionError: 3 != 4\nnot ok 3 nk_qlease.test_destroy\n'
        self.assertEqual(retry_counts(other), (2, 1))

if __name__ == '__main__':
    unittest.main()
