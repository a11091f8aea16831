# SPDX-License-Identifier: GPL-2.0
"""Tests for harness/results.py: how a run is judged."""

import os
import re
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest_run  # noqa: E402  pylint: disable=wrong-import-position
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


def kunit_list(d, names=('devmem_alloc',)):
    """The arguments naming a KUnit suite list of `names`, written in d."""
    path = os.path.join(d, 'kunit-suites')
    with open(path, 'w') as f:
        f.write('# the suites of the test KTAP\n' + ''.join(f'{n}\n' for n in names))
    return ['--kunit-suites', path]


def judge(files, expectations, static=None, extra=None, more=(),
          kunit_suites=('devmem_alloc',), guest=None):
    """Runs results.py on a results directory holding `files` (suite ->
    TAP), what the guest wrote of the kernel (`guest`, file -> text; by
    default that of a run of the suites where nothing went wrong, see
    guest_run.py) and `extra` (file -> text), with `more` arguments."""
    if guest is None:
        guest = guest_run.clean(files) if files else {}
    with tempfile.TemporaryDirectory() as d:
        res = os.path.join(d, 'res')
        os.mkdir(res)
        with open(os.path.join(res, 'suites'), 'w') as f:
            f.write(' '.join(files))
        # Each suite's exit status as the guest records it (run.sh): 1
        # when a case failed (ksft_exit), else 0; `extra` may say other.
        for suite, text in files.items():
            with open(os.path.join(res, suite.replace('/', '_') + '.rc'), 'w') as f:
                f.write('1\n' if re.search(r'^\s*not ok ', text, re.M) else '0\n')
        for name, text in dict(guest, **(extra or {})).items():
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
        args += kunit_list(d, kunit_suites) + list(more)
        p = subprocess.run(args, capture_output=True, text=True, check=False)
        return p.returncode, p.stdout


# A kselftest run whose one failure is a listen timeout: what run.sh retries.
LISTEN_TIMEOUT_ATTEMPT = textwrap.dedent('''\
    TAP version 13
    1..2
    ok 1 devmem.check_rx
    # Exception| Exception: Waiting for port listen timed out
    not ok 2 devmem.check_rx_hds
    ''')

class Judge(unittest.TestCase):
    def test_kunit_pass(self):
        rc, out = judge({'kunit': KUNIT_PASS}, '')
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.rstrip().endswith('6 passed, 0 failed, 0 skipped'), out)

    def test_kunit_failed_assertion_fails_the_run(self):
        rc, out = judge({'kunit': KUNIT_FAIL}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL devmem_alloc.alignment', out)
        self.assertIn('EXPECTATION FAILED at net/core/devmem_rs/alloc.rs:120', out)
        self.assertTrue(out.rstrip().endswith('5 passed, 1 failed, 0 skipped'), out)

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

    def test_listed_kunit_suite_that_did_not_report_fails(self):
        rc, out = judge({'kunit': KUNIT_PASS}, '', kunit_suites=('devmem_alloc', 'igb_rs_ring'))
        self.assertEqual(rc, 1, out)
        self.assertIn('MISSING KUnit suite igb_rs_ring', out)
        self.assertTrue(out.rstrip().endswith('6 passed, 1 failed, 0 skipped'), out)

    def test_unlisted_kunit_suite_is_a_note(self):
        rc, out = judge({'kunit': KUNIT_PASS}, '', kunit_suites=())
        self.assertEqual(rc, 0, out)
        self.assertIn('NOTE: KUnit suite devmem_alloc ran but is not in ', out)

    def test_kunit_suite_cut_off_before_its_result_fails(self):
        # The guest died, or the suite hung, after two cases: no closing
        # line, and the cases that reported are still judged.
        cut = KUNIT_PASS.split('# devmem_alloc: pass')[0]
        rc, out = judge({'kunit': cut}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL devmem_alloc: no result line of its own: the output ends '
                      'inside it (2 case results)', out)
        self.assertTrue(out.rstrip().endswith('6 passed, 1 failed, 0 skipped'), out)
        # The same for a parameterised case inside a suite that closed.
        nested = KUNIT_PASS.replace('    ok 2 alignment\n', textwrap.indent(
            '# Subtest: alignment\nok 1 4 bytes\n', '        '))
        rc, out = judge({'kunit': nested}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL alignment: no result line of its own', out)
        self.assertTrue(out.rstrip().endswith('6 passed, 1 failed, 0 skipped'), out)

    def test_kselftest_case_cut_off_before_its_result_fails(self):
        tap = 'TAP version 13\n1..1\n    ok 1 sub.a\n'
        rc, out = judge({'t.py': tap}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL (unnamed): no result line of its own', out)
        rc, out = judge({'net-env': tap}, '')
        self.assertEqual(rc, 1, out)

    def test_kunit_suites_lists_the_suites_of_the_tree(self):
        # Every #[kunit_tests(NAME)] of our Rust files is listed, or named
        # in a comment saying why not (a suite of another configuration).
        top = os.path.join(HERE, '..', '..')
        with open(os.path.join(HERE, '..', 'kunit-suites'), encoding='utf-8') as f:
            listed = f.read()
        files = subprocess.run(['git', '-C', top, 'ls-files', '*.rs'], capture_output=True,
                               text=True, check=True).stdout.split()
        for path in files:
            with open(os.path.join(top, path), encoding='utf-8') as f:
                for name in re.findall(r'kunit_tests\((\w+)\)', f.read()):
                    with self.subTest(suite=name):
                        self.assertRegex(listed, rf'\b{name}\b')

    def test_unclaimed_skip_counts_as_skipped(self):
        exp = ('s.py check_rx unclaimed no driver yet\n'
               's.py check_tx unclaimed no driver yet\n')
        rc, out = judge({'s.py': DEVMEM_SKIPS}, exp)
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.rstrip().endswith('4 passed, 0 failed, 2 skipped'), out)

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
        self.assertTrue(out.rstrip().endswith('5 passed, 0 failed, 1 skipped'), out)
        rc, out = judge({'z.py': text}, 'z.py test_zcrx.single pass\n')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL test_zcrx.rss (claimed)', out)

    def test_pattern_claims(self):
        # A pattern line claims the cases it matches; a case's own line
        # comes before any pattern, and a pattern is never MISSING.
        text = textwrap.dedent('''\
            TAP version 13
            1..4
            ok 1 gro.test.sw_ipv4_data_same
            ok 2 gro.test.hw_ipv4_data_same # XFAIL Device does not support rx-gro-hw
            ok 3 gro.test.hw_ipv6_data_same # XFAIL Device does not support rx-gro-hw
            not ok 4 gro.test.sw_ipv4_large_max
            ''')
        exp = ('g.py * pass\n'
               'g.py test.hw_* unclaimed no hardware GRO\n'
               'g.py test.lro_* unclaimed no LRO\n'
               'g.py test.sw_*_large_* unclaimed TCG splits the batch\n')
        rc, out = judge({'g.py': text}, exp)
        self.assertEqual(rc, 0, out)
        self.assertNotIn('MISSING', out)
        self.assertIn('SKIP test.hw_ipv4_data_same: unclaimed, no hardware GRO', out)
        # Without the pattern, the XFAILs are skips of claimed cases.
        rc, out = judge({'g.py': text}, 'g.py * pass\ng.py test.sw_*_large_* unclaimed x\n')
        self.assertEqual(rc, 1, out)
        self.assertIn('test.hw_ipv6_data_same', out)
        # A case's own line wins over the pattern that matches it.
        rc, out = judge({'g.py': text}, exp + 'g.py test.sw_ipv4_large_max pass\n')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL test.sw_ipv4_large_max (claimed)', out)

    def test_retry_is_reported(self):
        first = LISTEN_TIMEOUT_ATTEMPT
        second = first.replace('not ok 2', 'ok 2')
        rc, out = judge({'d.py': second}, '', extra={'d.py.attempt1': first})
        self.assertEqual(rc, 0, out)
        self.assertIn('2 cases, retried once', out)
        self.assertIn('RETRIED: attempt 1 failed check_rx_hds', out)
        # The first attempt's failure, with its lines.
        self.assertIn('attempt 1: FAIL check_rx_hds\n'
                      '        Exception| Exception: Waiting for port listen timed out', out)
        self.assertIn('FLAKY check_rx_hds: failed in attempt 1, passed in attempt 2', out)
        lines = out.rstrip().split('\n')
        self.assertEqual(lines[-2:], ['flaky: 1 suites (d.py)', '6 passed, 0 failed, 0 skipped'])
        self.assertNotIn('failed: ', out)
        rc, out = judge({'d.py': first}, '', extra={'d.py.attempt1': first})
        self.assertEqual(rc, 1, out)
        self.assertNotIn('FLAKY', out)
        # What failed, again where the tail of a log shows it.
        self.assertIn('failed: 1 (d.py): their lines above say why\nflaky: 0 suites\n', out)

    def test_a_retry_after_a_first_attempt_cut_short_fails(self):
        # Attempt 1 printed one of its two results, then was killed or hung.
        first = LISTEN_TIMEOUT_ATTEMPT.replace('1..2\nok 1 devmem.check_rx\n', '1..3\n')
        second = LISTEN_TIMEOUT_ATTEMPT.replace('not ok 2', 'ok 2')
        rc, out = judge({'d.py': second}, '', extra={'d.py.attempt1': first})
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL attempt 1: cut short (plan 3, 1 results)', out)

    def test_exit_status_without_a_failed_case_fails(self):
        tap = 'TAP version 13\n1..1\nok 1 t.a\n'
        for suite in ('t.py', 'nic-filters'):
            with self.subTest(suite=suite):
                # An exception after the last result: exit 1, every case ok.
                rc, out = judge({suite: tap + 'Traceback (most recent call last):\n'}, '',
                                extra={suite + '.rc': '1\n'})
                self.assertEqual(rc, 1, out)
                self.assertIn('EXIT 1: no case failed, yet the suite exited 1', out)
        # A failed case explains the status.
        rc, out = judge({'t.py': 'TAP version 13\n1..1\nnot ok 1 t.a\n'},
                        't.py * unclaimed not here\n', extra={'t.py.rc': '1\n'})
        self.assertEqual(rc, 0, out)
        self.assertNotIn('EXIT', out)

    def test_missing_exit_status_fails(self):
        # No .rc file, or one the guest began and never wrote.
        for rc_file in (None, ''):
            with self.subTest(rc_file=rc_file), tempfile.TemporaryDirectory() as d:
                res = os.path.join(d, 'res')
                os.mkdir(res)
                for name, text in guest_run.clean(['t.py']).items():
                    with open(os.path.join(res, name), 'w') as f:
                        f.write(text)
                with open(os.path.join(res, 'suites'), 'w') as f:
                    f.write('t.py')
                with open(os.path.join(res, 't.py.tap'), 'w') as f:
                    f.write('TAP version 13\n1..1\nok 1 t.a\n')
                if rc_file is not None:
                    with open(os.path.join(res, 't.py.rc'), 'w') as f:
                        f.write(rc_file)
                exp = os.path.join(d, 'exp')
                open(exp, 'w').close()
                p = subprocess.run([sys.executable, RESULTS, exp, res] + kunit_list(d, ()),
                                   capture_output=True, text=True, check=False)
                self.assertEqual(p.returncode, 1, p.stdout)
                self.assertIn('NO EXIT STATUS: the guest recorded none', p.stdout)

    def test_kunit_suite_of_no_cases_fails(self):
        # A plan of none, and the suite's line a SKIP: it ran nothing.
        empty = textwrap.dedent('''\
            KTAP version 1
            1..1
                KTAP version 1
                # Subtest: devmem_alloc
                1..0
            ok 1 devmem_alloc # SKIP no cases
            ''')
        rc, out = judge({'kunit': empty}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('devmem_alloc: no test case results', out)
        # Its cases ran, but the suite's own line says it skipped.
        rc, out = judge({'kunit': KUNIT_PASS.replace('ok 1 devmem_alloc',
                                                     'ok 1 devmem_alloc # SKIP no device')}, '')
        self.assertEqual(rc, 1, out)
        self.assertIn('SKIP devmem_alloc: the whole suite skipped: no device', out)

    def test_an_unclaimed_case_failing_another_way_fails(self):
        # toeplitz.py's TCP cases are unclaimed for too few frames in 4 s;
        # a frame hashed wrong is no such failure.
        exp = ('drivers/net/hw/toeplitz.py * pass\n'
               'drivers/net/hw/toeplitz.py test.*tcp_ipv* unclaimed the pace\n')
        tap = textwrap.dedent('''\
            TAP version 13
            1..1
            # Exception|   STDERR: RSS indirection table size: 128
            # Exception|           count: pass=3 nohash=0 fail=0
            not ok 1 toeplitz.test.tcp_ipv4
            ''')
        rc, out = judge({'drivers/net/hw/toeplitz.py': tap}, exp)
        self.assertEqual(rc, 0, out)
        self.assertIn('FAIL test.tcp_ipv4: unclaimed, the pace', out)
        rc, out = judge({'drivers/net/hw/toeplitz.py': tap.replace('fail=0', 'fail=2')}, exp)
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL test.tcp_ipv4: unclaimed, the pace; but the receiver found frames '
                      'with a wrong hash', out)

    def test_a_port_the_peer_held_is_named(self):
        failed = ('TAP version 13\n1..2\nok 1 devmem.check_rx\n'
                  '# Exception|   STDERR: 2026/12/05 22:04:56 socat[2034] E bind(5, {AF=10 '
                  '[2001:0db8:0001:0000:0000:0000:0000:0002]:58741}, 28): '
                  'Address already in use\n'
                  'not ok 2 devmem.check_rx_hds\n')
        # Not a cause to run the suite again: devmem_lib draws a port the
        # peer holds no socket on (patch 0045).
        self.assertEqual(retry_counts(failed), (1, 0))
        sockets = ('TIME-WAIT 0 0 [2001:db8:1::2]:58741 [2001:db8:1::1]:58741\n'
                   'ESTAB 0 0 [2001:db8:1::2]:40000 [2001:db8:1::1]:5201\n')
        rc, out = judge({'d.py': failed}, '', extra={'d.py.peer-sockets': sockets})
        self.assertEqual(rc, 1, out)
        self.assertIn('Address already in use\n'
                      '        the peer held port 58741 in: TIME-WAIT '
                      '[2001:db8:1::2]:58741 -> [2001:db8:1::1]:58741\n', out)
        self.assertNotIn('40000', out)
        rc, out = judge({'d.py': failed}, '', extra={'d.py.peer-sockets': sockets[58:]})
        self.assertIn('the peer held port 58741 in: nothing when the run ended', out)
        rc, out = judge({'d.py': failed}, '')
        self.assertIn('the peer held port 58741 in: unknown (no socket list)', out)
        # In an attempt the guest retried for another case's timeout, from
        # the sockets of that attempt.
        first = failed.replace('ok 1 devmem.check_rx',
                               '# Exception| Exception: Waiting for port listen timed out\n'
                               'not ok 1 devmem.check_rx')
        self.assertEqual(retry_counts(first), (2, 1))
        second = 'TAP version 13\n1..2\nok 1 devmem.check_rx\nok 2 devmem.check_rx_hds\n'
        rc, out = judge({'d.py': second}, '', extra={'d.py.attempt1': first,
                                                   'd.py.attempt1.peer-sockets': sockets})
        self.assertEqual(rc, 0, out)
        self.assertIn('        the peer held port 58741 in: TIME-WAIT', out)

    def test_a_second_run_s_flaky_suites_count_in_the_total(self):
        first = LISTEN_TIMEOUT_ATTEMPT
        second = first.replace('not ok 2', 'ok 2')
        with tempfile.TemporaryDirectory() as d:
            history = os.path.join(d, 'flaky-c.txt')
            # The C core's run (--tsv): the retried suite says flaky.
            rc, out = judge({'d.py': second}, '', extra={'d.py.attempt1': first},
                            more=['--tsv', ' (C core)', '--flaky-history', history])
            self.assertEqual(rc, 0, out)
            row = [l for l in out.split('\n') if l.startswith('d.py (C core)\t')]
            self.assertEqual(len(row), 1, out)
            self.assertTrue(row[0].startswith('d.py (C core)\tflaky\t'), row)
            with open(history, encoding='utf-8') as f:
                self.assertIn('d.py\tcheck_rx_hds', f.read())
            # The main run counts it, and passes it.
            after = os.path.join(d, 'after.tsv')
            with open(after, 'w', encoding='utf-8') as f:
                f.write(row[0] + '\n')
            rc, out = judge({'e.py': 'TAP version 13\n1..1\nok 1 e.x\n'}, '',
                            more=['--after', after])
            self.assertEqual(rc, 0, out)
            lines = out.rstrip().split('\n')
            self.assertEqual(lines[-2], 'flaky: 1 suites (d.py (C core))')
            # Flaky again in the C core's next run: a failure there.
            rc, out = judge({'d.py': second}, '', extra={'d.py.attempt1': first},
                            more=['--tsv', ' (C core)', '--flaky-history', history])
            self.assertIn('d.py (C core)\tfail\t', out)
            self.assertIn('flaky twice in a row', out)

    def test_flaky_twice_in_a_row_fails(self):
        first = LISTEN_TIMEOUT_ATTEMPT
        second = first.replace('not ok 2', 'ok 2')
        retried = {'files': {'d.py': second}, 'extra': {'d.py.attempt1': first}}
        green = {'files': {'d.py': second}}
        with tempfile.TemporaryDirectory() as d:
            history = ['--flaky-history', os.path.join(d, 'flaky.txt')]

            def run(files, extra=None, exp=''):
                return judge(files, exp, extra=extra, more=history)

            # The first run has no history: flaky, reported, passed.
            rc, out = run(**retried)
            self.assertEqual(rc, 0, out)
            self.assertIn('FLAKY check_rx_hds', out)
            # A run of other suites keeps d.py's record.
            rc, out = run({'e.py': 'TAP version 13\n1..1\nok 1 e.x\n'})
            self.assertEqual(rc, 0, out)
            # Flaky again in d.py's next run: a failure.
            rc, out = run(**retried)
            self.assertEqual(rc, 1, out)
            self.assertIn('FAIL check_rx_hds: flaky twice in a row', out)
            self.assertIn('fix it, do not retry it', out)
            lines = out.rstrip().split('\n')
            self.assertEqual(lines[-2:], ['flaky: 1 suites (d.py)',
                                          '5 passed, 1 failed, 0 skipped'])
            # A run without a retry clears it; flaky after that is once.
            rc, out = run(**green)
            self.assertEqual(rc, 0, out)
            rc, out = run(**retried)
            self.assertEqual(rc, 0, out)
            # An unclaimed case is not flaky: its failure never counts.
            for _ in range(2):
                rc, out = run(exp='d.py check_rx_hds unclaimed no HDS\n', **retried)
                self.assertEqual(rc, 0, out)
                self.assertIn('flaky: 0 suites\n', out)

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
        g = guest_run.Guest()
        g.suite('kunit', ['ok', 'WARNING: net/core/devmem.c:80 at net_devmem_bind+0x4c/0x90, '
                          'CPU#1: python3/42'], tainted=512)
        rc, out = judge({'kunit': KUNIT_PASS}, '', guest=g.files())
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL kernel-log', out)
        # Named with the suite it came during.
        self.assertIn('during kunit: [    0.008638] WARNING: net/core/devmem.c:80', out)
        self.assertIn('TAINTED: W (a WARN) (tainted 0 -> 512)', out)

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
        for line in reports:
            with self.subTest(line=line):
                rc, out = judge({'kunit': KUNIT_PASS}, '',
                                guest=guest_run.clean(['kunit'], [line]))
                self.assertEqual(rc, 1, out)
                self.assertIn('1 warnings or bugs', out)
                self.assertIn('during kunit: [', out)

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
        tap = 'TAP version 13\n1..1\nok 1 - bind-rx\n'
        rc, out = judge({'faults': tap}, '', guest=guest_run.clean(['faults'], lines))
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
            with self.subTest(count=count):
                g = guest_run.Guest()
                g.suite('kunit', dma_errors=int(count))
                files = g.files()
                files['dma-api-errors.txt'] = count + '\n'
                out_rc, out = judge({'kunit': KUNIT_PASS}, '', guest=files)
                self.assertEqual(out_rc, rc, out)
                self.assertIn(f'dma-api: {1 - rc} passed, {rc} failed', out)
        # Which suite the errors came during.
        self.assertIn('3 errors during kunit', out)

    def slow_judge(self, tap):
        """Judges devmem.py's TAP on the debug kernel, check_rx and
        check_tx listed as slow."""
        with tempfile.TemporaryDirectory() as d:
            slow = os.path.join(d, 'slow')
            with open(slow, 'w') as f:
                f.write('drivers/net/hw/devmem.py check_rx the listener is slow\n'
                        'drivers/net/hw/devmem.py check_tx the sender is slow\n')
            return judge({'drivers/net/hw/devmem.py': tap},
                         'drivers/net/hw/devmem.py check_rx pass\n'
                         'drivers/net/hw/devmem.py check_tx pass\n',
                         more=['--slow', slow])

    def test_slow_case_may_only_time_out(self):
        timeout = textwrap.dedent('''\
            TAP version 13
            1..2
            # harness-progress: ncdevmem's bind-rx mapped 9000 of 16000 pages, the last 30 ms ago
            # Exception| Traceback (most recent call last):
            # Exception|   File "devmem.py", line 20, in check_rx
            # Exception|   File "utils.py", line 356, in wait_port_listen
            # Exception| Exception: Waiting for port listen timed out
            not ok 1 devmem.check_rx
            # harness-progress: the peer's socat sent 12 bytes
            # Exception| AssertionError: payload mismatch
            not ok 2 devmem.check_tx
            ''')
        rc, out = self.slow_judge(timeout)
        # The timeout with evidence of progress is excused; the other
        # failure is not.
        self.assertEqual(rc, 1, out)
        self.assertIn('SLOW check_rx: timed out under the debug kernel, the listener is '
                      "slow; harness-progress: ncdevmem's bind-rx mapped", out)
        self.assertIn('FAIL check_tx', out)
        self.assertIn('0 passed, 1 failed, 1 skipped', out)

    def test_slow_case_timing_out_without_evidence_fails(self):
        # A listener that never came up and one still binding print the
        # same: without the harness's evidence of progress, a failure.
        timeout = textwrap.dedent('''\
            TAP version 13
            1..2
            # Exception| Exception: Waiting for port listen timed out
            not ok 1 devmem.check_rx
            # Exception| subprocess.TimeoutExpired: Command 'ncdevmem' timed out after 20 seconds
            # Exception| harness-progress: not the harness's line, but the test's
            not ok 2 devmem.check_tx
            ''')
        rc, out = self.slow_judge(timeout)
        self.assertEqual(rc, 1, out)
        self.assertNotIn('SLOW', out)
        self.assertIn('FAIL check_rx (claimed)', out)
        self.assertIn('listed as slow, but a timeout is excused only with the evidence '
                      'of progress', out)
        self.assertIn('FAIL check_tx (claimed)', out)
        self.assertTrue(out.rstrip().endswith('4 passed, 2 failed, 0 skipped'), out)

    def test_slow_case_passes_and_must_report(self):
        tap = 'TAP version 13\n1..1\nok 1 devmem.check_rx\n'
        rc, out = self.slow_judge(tap)
        # check_tx, listed as slow, has no result: a failure.
        self.assertEqual(rc, 1, out)
        self.assertIn('MISSING check_tx: no result', out)
        self.assertTrue(out.rstrip().endswith('5 passed, 1 failed, 0 skipped'), out)

    def test_checker_giving_up_under_fault_injection_is_a_note(self):
        # DMA-API debugging's own allocation failed, injected: it says so
        # and turns itself off. A note when it came during faults, a
        # failure otherwise.
        gave_up = 'DMA-API: cacheline tracking ENOMEM, dma-debug disabled'
        for suites, rc in ((['kunit', 'faults'], 0), (['kunit'], 1)):
            with self.subTest(suites=suites):
                g = guest_run.Guest()
                if 'faults' in suites:
                    g.suite('kunit')
                    g.suite('faults', [gave_up], dma_disabled='Y')
                else:
                    g.suite('kunit', [gave_up], dma_disabled='Y')
                files = {s: KUNIT_PASS if s == 'kunit' else
                         'TAP version 13\n1..1\nok 1 - bind-rx\n' for s in suites}
                out_rc, out = judge(files, '', guest=g.files())
                self.assertEqual(out_rc, rc, out)
                if rc == 0:
                    self.assertIn('NOTE (an injected allocation failure): during faults: [', out)
                    self.assertIn('NOTE: DMA-API debugging turned itself off during faults', out)
                else:
                    self.assertIn('during kunit: [', out)
                    self.assertIn('DMA-API debugging turned itself off during kunit', out)

    def test_bad_expectation_line_is_rejected(self):
        rc, _ = judge({}, 's.py check_rx maybe\n')
        self.assertNotEqual(rc, 0)



RUN_SH = os.path.join(HERE, '..', 'guest', 'run.sh')

# The claims retry_counts reads: d.py's cases are claimed, but for one.
RETRY_EXP = 'nk_qlease.py * pass\nnk_qlease.py test_rss unclaimed no RSS contexts\n'


def whole(text):
    """A ksft run's output of the case results in text: its plan first."""
    n = len(re.findall(r'^(?:not )?ok \d+', text, re.M))
    return f'TAP version 13\n1..{n}\n{text}'


def retry_counts(text, suite='nk_qlease.py', plan=True):
    """What suite_kselftest (in guest/run.sh) retries on, as the guest
    gets it from results.py --retry-counts: failed claimed cases, and
    those of them that failed only on a timeout. The run is whole (its
    plan as many as the results in text) unless plan is False."""
    if plan:
        text = whole(text)
    with tempfile.TemporaryDirectory() as d:
        exp = os.path.join(d, 'expectations')
        out = os.path.join(d, 'out')
        with open(exp, 'w', encoding='utf-8') as f:
            f.write(RETRY_EXP)
        with open(out, 'w', encoding='utf-8') as f:
            f.write(text)
        res = subprocess.run([sys.executable, RESULTS, '--retry-counts', exp, suite, out],
                             capture_output=True, text=True, check=True)
    nfail, ntimeout = res.stdout.split()
    return int(nfail), int(ntimeout)


class GuestRetryRule(unittest.TestCase):
    def test_run_sh_asks_results_py(self):
        with open(RUN_SH, encoding='utf-8') as f:
            src = f.read()
        self.assertIn('results.py" --retry-counts', src)
        self.assertIn('[ "$nfail" -eq "$ntimeout" ]', src)

    def test_timeouts_are_retried_and_nothing_else(self):
        # iou-zcrx's server gives up only after 20 s without data: a
        # stall, not a timeout to retry.
        zcrx = textwrap.dedent('''\
            # Exception|   STDERR: /k/iou-zcrx: send(): 1407168
            # Exception|   STDERR: /k/iou-zcrx: test failed
            not ok 1 nk_qlease.test_iou_zcrx_large_buf
            ok 2 nk_qlease.test_attrs
            ''')
        self.assertEqual(retry_counts(zcrx), (1, 0))
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
        other = client + '# Exception| AssertionError: 3 != 4\nnot ok 3 nk_qlease.test_destroy\n'
        self.assertEqual(retry_counts(other), (2, 1))

    def test_unclaimed_failures_do_not_stop_a_retry(self):
        # iou-zcrx.py in a DEBUG=1 run: its client past the test's
        # deadline, next to the RSS-context cases the 82576 cannot run,
        # which fail every time.
        zcrx = textwrap.dedent('''\
            # Exception| subprocess.TimeoutExpired: Command '['bash', '-c', '/k/iou-zcrx -c -h ::1 -p 1 -l 12840']' timed out after 20 seconds
            not ok 1 nk_qlease.test_iou_zcrx
            # Exception|   STDERR: Cannot set RX flow hash configuration: Operation not supported
            not ok 2 nk_qlease.test_rss
            ''')
        self.assertEqual(retry_counts(zcrx), (1, 1))
        # Without a timeout, an unclaimed failure alone retries nothing.
        self.assertEqual(retry_counts(zcrx.split('not ok 1', 1)[0].replace(
            'timed out', 'other') + 'not ok 2 nk_qlease.test_rss\n'), (0, 0))

    def test_a_run_cut_short_is_not_retried(self):
        # Killed (or hung) after its first result, on a listen timeout: the
        # cases that never printed theirs may have hung, which no retry
        # excuses. Counted as a failure on no timeout.
        listen = '# Exception| Exception: Waiting for port listen timed out\nnot ok 1 d.x\n'
        self.assertEqual(retry_counts('TAP version 13\n1..3\n' + listen, plan=False), (2, 1))
        self.assertEqual(retry_counts(listen, plan=False), (2, 1))
        with open(RUN_SH, encoding='utf-8') as f:
            src = f.read()
        self.assertIn('[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]', src)

if __name__ == '__main__':
    unittest.main()
