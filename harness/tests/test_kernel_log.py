# SPDX-License-Identifier: GPL-2.0
"""Tests of how a run's kernel is judged: the reports results.py finds in
the kernel log (KERNEL_SPLAT_RE, against the samples of data/splats.txt
and data/benign.txt), the guest's log recorder (guest/kmsg.py), and the
kernel-log, dma-api, kmemleak and kasan lines and a suite's taint,
lockdep and stuck transmit bytes, each shown to fail when what it checks went wrong."""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, '..')
GUEST = os.path.join(HARNESS, 'guest')
RESULTS = os.path.join(HARNESS, 'results.py')
sys.path.insert(0, HERE)
sys.path.insert(0, HARNESS)
sys.path.insert(0, GUEST)
# pylint: disable=wrong-import-position
import guest_run  # noqa: E402
import kmsg  # noqa: E402
from results import KERNEL_SPLAT_RE  # noqa: E402

TAP_OK = 'TAP version 13\n1..1\nok 1 - bind-rx\n'


def samples(name):
    """The blocks of data/NAME: (source, sample lines), the source its
    comment lines."""
    with open(os.path.join(HERE, 'data', name), encoding='utf-8') as f:
        blocks = f.read().split('\n\n')
    out = []
    for block in blocks:
        lines = [l for l in block.split('\n') if l]
        source = ' '.join(l.lstrip('# ') for l in lines if l.startswith('#'))
        text = [l for l in lines if not l.startswith('#')]
        if text:
            out.append((source, text))
    return out


def judge(suites, guest, extra=None, more=(), taps=None, listed=None):
    """Runs results.py on a results directory of a run of suites (each
    passing, or its TAP from taps), what the guest wrote of the kernel
    (guest: file -> text) and extra files; listed: the suites file, when
    it says other than suites (parity.sh's C core run)."""
    with tempfile.TemporaryDirectory() as d:
        res = os.path.join(d, 'res')
        os.mkdir(res)
        with open(os.path.join(res, 'suites'), 'w') as f:
            f.write(' '.join(suites if listed is None else listed))
        for s in suites:
            tap = (taps or {}).get(s, TAP_OK)
            with open(os.path.join(res, s.replace('/', '_') + '.tap'), 'w') as f:
                f.write(tap)
            # Its exit status, as run.sh records it: 1 when a case failed.
            with open(os.path.join(res, s.replace('/', '_') + '.rc'), 'w') as f:
                f.write('1\n' if 'not ok ' in tap else '0\n')
        for name, text in dict(guest, **(extra or {})).items():
            with open(os.path.join(res, name), 'w') as f:
                f.write(text)
        exp = os.path.join(d, 'exp')
        with open(exp, 'w') as f:
            f.write('t.py * unclaimed not this test\n')
        kunit = os.path.join(d, 'kunit-suites')
        open(kunit, 'w').close()
        p = subprocess.run([sys.executable, RESULTS, exp, res, '--kunit-suites', kunit]
                           + list(more), capture_output=True, text=True, check=False)
        return p.returncode, p.stdout


def line_of(out, name):
    """The result line of name in results.py's output, and the lines under
    it."""
    lines = out.split('\n')
    for i, l in enumerate(lines):
        if l[5:].startswith(f'{name}: ') or l.startswith(f'{name}\t'):
            j = i + 1
            while j < len(lines) and lines[j].startswith('    '):
                j += 1
            return '\n'.join(lines[i:j])
    return ''


class Samples(unittest.TestCase):
    def test_each_block_is_one_sample_with_its_source(self):
        for name in ('splats.txt', 'benign.txt'):
            for source, text in samples(name):
                with self.subTest(file=name, sample=text):
                    self.assertEqual(len(text), 1)
                    self.assertRegex(source, r'\S\.(c|h|rs|sh|py)\b|virtme-ng')

    def test_every_report_is_caught(self):
        found = samples('splats.txt')
        self.assertGreater(len(found), 60)
        for source, (text,) in found:
            with self.subTest(sample=text, source=source):
                self.assertRegex(text, KERNEL_SPLAT_RE)

    def test_no_benign_line_is_caught(self):
        found = samples('benign.txt')
        self.assertGreater(len(found), 25)
        for source, (text,) in found:
            with self.subTest(sample=text, source=source):
                self.assertNotRegex(text, KERNEL_SPLAT_RE)

    def test_reports_in_the_log_fail_the_run_named_by_suite(self):
        # The same, through the recorder's file: each report a line of
        # kernel-log's failure, with the suite it came during.
        reports = [t for _, (t,) in samples('splats.txt')]
        benign = [t for _, (t,) in samples('benign.txt')]
        g = guest_run.Guest()
        g.suite('net-env', benign)
        g.suite('nic-lifecycle', reports)
        rc, out = judge(['net-env', 'nic-lifecycle'], g.files())
        self.assertEqual(rc, 1, out)
        self.assertIn(f'FAIL kernel-log: 0 passed, 1 failed, 0 skipped ({len(reports)} '
                      'warnings or bugs', out)
        self.assertIn('during nic-lifecycle: [', line_of(out, 'kernel-log'))
        self.assertNotIn('during net-env', out)
        g = guest_run.Guest()
        g.suite('net-env', benign)
        rc, out = judge(['net-env'], g.files())
        self.assertEqual(rc, 0, out)


# Records as /dev/kmsg gives them (Documentation/ABI/testing/dev-kmsg):
# KEY=VALUE lines, a record of several lines (ref_tracker's, its stack
# joined by \x0a), an escaped backslash and UTF-8.
RECORDED = textwrap.dedent(r'''
    5,0,0,-;Linux version 7.3.4 (root@devmem) #1 SMP PREEMPT_DYNAMIC
    6,1,1534,-;pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)
     SUBSYSTEM=acpi
     DEVICE=+acpi:PNP0A03:00
    3,2,12345678,-;ref_tracker: netdev@00000000a1b2c3d4 has 1/2 users at\x0a     netdev_hold+0x5c/0x70\x0a     igb_rs_open+0x2f/0x90 [igb_rs]
    6,3,12400000,-;ACPI Warning: \x5c_SB.PCI0._OSC: wait 50 \xc2\xb5s
    12,4,99000001,-;harness: start net-env
    ''').lstrip()


class Recorder(unittest.TestCase):
    def test_records_read_as_dmesg_prints_them(self):
        log = kmsg.parse(RECORDED + '# end: stopped on SIGTERM\n')
        self.assertEqual([r.seq for r in log.records], [0, 1, 2, 3, 4])
        self.assertEqual((log.first_seq(), log.last_seq(), log.lost, log.ended),
                         (0, 4, [], True))
        self.assertEqual(kmsg.dmesg(RECORDED), textwrap.dedent('''\
            [    0.000000] Linux version 7.3.4 (root@devmem) #1 SMP PREEMPT_DYNAMIC
            [    0.001534] pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)
            [   12.345678] ref_tracker: netdev@00000000a1b2c3d4 has 1/2 users at
            [   12.345678]      netdev_hold+0x5c/0x70
            [   12.345678]      igb_rs_open+0x2f/0x90 [igb_rs]
            [   12.400000] ACPI Warning: \\_SB.PCI0._OSC: wait 50 \u00b5s
            [   99.000001] harness: start net-env
            '''))
        # Each line of a record with its sequence number.
        self.assertEqual([s for s, _ in log.lines()], [0, 1, 2, 2, 2, 3, 4])

    def test_what_is_missing_is_said(self):
        log = kmsg.parse(RECORDED)
        self.assertFalse(log.ended)
        gap = RECORDED.replace('6,3,', '6,6,').replace('12,4,', '12,7,')
        self.assertEqual(kmsg.parse(gap).lost, ['records 3 to 5 are missing'])
        one = RECORDED.replace('6,3,', '6,4,').replace('12,4,', '12,5,')
        self.assertEqual(kmsg.parse(one).lost, ['record 3 is missing'])
        epipe = RECORDED + '# lost: /dev/kmsg said EPIPE\n6,9,99000002,-;x\n'
        self.assertEqual(kmsg.parse(epipe).lost,
                         ['/dev/kmsg said EPIPE', 'records 5 to 8 are missing'])
        # The recorder killed while writing: a line cut short is left out.
        self.assertEqual(kmsg.parse(RECORDED + '6,5,99').last_seq(), 4)

    def test_recorder_copies_until_sigterm_then_ends(self):
        with tempfile.TemporaryDirectory() as d:
            dev = os.path.join(d, 'kmsg')
            out = os.path.join(d, 'kmsg.txt')
            with open(dev, 'w') as f:
                f.write(RECORDED)
            code = (f'import sys; sys.path.insert(0, {GUEST!r}); import kmsg; '
                    f'kmsg.DEVICE = {dev!r}; sys.exit(kmsg.record({out!r}))')
            p = subprocess.Popen([sys.executable, '-c', code])
            try:
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    if os.path.exists(out) and os.path.getsize(out) >= len(RECORDED):
                        break
                    time.sleep(0.05)
                p.send_signal(signal.SIGTERM)
                self.assertEqual(p.wait(20), 0)
            finally:
                p.kill()
            with open(out, encoding='utf-8') as f:
                text = f.read()
            self.assertTrue(text.startswith(RECORDED), text)
            self.assertTrue(kmsg.parse(text).ended, text)


class KernelLog(unittest.TestCase):
    def test_clean_run_passes(self):
        rc, out = judge(['net-env', 'kunit'], guest_run.clean(['net-env', 'kunit']),
                        taps={'kunit': 'KTAP version 1\n1..1\n    1..1\n    ok 1 c\nok 1 s\n'})
        self.assertEqual(rc, 0, out)
        for name in ('kernel-log', 'dma-api', 'kmemleak'):
            self.assertIn(f'ok   {name}: 1 passed', out)

    def fails(self, guest, why, name='kernel-log', suites=('net-env',), **kw):
        """results.py fails name's line, saying why."""
        rc, out = judge(list(suites), guest, **kw)
        self.assertEqual(rc, 1, out)
        self.assertIn(f'FAIL {name}', line_of(out, name), out)
        self.assertIn(why, line_of(out, name))
        return out

    def test_log_that_does_not_start_at_boot_fails(self):
        g = guest_run.Guest()
        g.suite('net-env')
        files = g.files()
        # The recorder came after the first two records were overwritten.
        files['kmsg.txt'] = files['kmsg.txt'].split('\n', 2)[2]
        self.fails(files, 'the log starts at record 2, not at boot: records 0 to 1 were '
                   'overwritten before the recorder read them')

    def test_lost_records_fail(self):
        g = guest_run.Guest()
        g.suite('net-env')
        g.lose(3)
        g.suite('nic-hds')
        self.fails(g.files(), 'records lost: /dev/kmsg said EPIPE: records were '
                   'overwritten before they were read; records 6 to 8 are missing',
                   suites=('net-env', 'nic-hds'))
        # A gap alone says the same.
        g = guest_run.Guest()
        g.suite('net-env')
        del g.records[2]
        self.fails(g.files(), 'records lost: record 2 is missing')

    def test_recorder_that_did_not_end_fails(self):
        g = guest_run.Guest()
        g.suite('net-env')
        g.ended = False
        self.fails(g.files(), 'the recorder did not stop at the end of the run')
        # Or one that stopped early, the file cut before the last mark.
        g = guest_run.Guest()
        g.suite('net-env')
        files = g.files()
        lines = files['kmsg.txt'].split('\n')
        files['kmsg.txt'] = '\n'.join(lines[:-3] + lines[-2:])
        self.fails(files, 'the log ends at record 5, before the mark of the end of the '
                   'run (record 6)')

    def test_missing_log_fails(self):
        g = guest_run.Guest()
        g.suite('net-env')
        files = g.files()
        del files['dmesg.txt']
        self.fails(files, 'no dmesg.txt: the guest did not save the log at its end')
        del files['kmsg.txt']
        self.fails(files, "no kmsg.txt: the guest's log recorder did not run")
        # dmesg.txt alone: not shown whole, and still read for reports.
        g = guest_run.Guest()
        g.suite('net-env', ['WARNING: at igb_rs_poll+0x1a4/0x3c0 [igb_rs], CPU#0: x/1'])
        files = g.files()
        del files['kmsg.txt']
        out = self.fails(files, "no kmsg.txt: the guest's log recorder did not run; "
                         'dmesg.txt holds what the buffer still had at the end')
        self.assertIn('] WARNING: at igb_rs_poll', line_of(out, 'kernel-log'))

    def test_missing_kernel_state_fails(self):
        files = guest_run.clean(['net-env'])
        del files['kernel-state.txt']
        self.fails(files, 'no kernel-state.txt')
        # A suite whose state was not recorded (the guest died in it).
        g = guest_run.Guest()
        g.suite('net-env')
        g.state('start', 'nic-hds')
        out = self.fails(g.files(final=False), 'KERNEL STATE: not recorded at its start and end',
                         suites=('net-env', 'nic-hds'), name='nic-hds')
        self.assertIn('ok   net-env', out)

    def test_missing_log_mark_fails(self):
        g = guest_run.Guest()
        g.suite('net-env')
        g.states[-2] = g.states[-2].replace(' seq=5', '')
        self.fails(g.files(), 'kernel-state.txt: no log mark at start net-env')

    def test_report_is_named_by_the_stretch_it_came_during(self):
        # Before run.sh's first mark: boot; after it, setup.
        g = guest_run.Guest(boot=['WARNING: at boot_thing+0x1/0x2, CPU#0: swapper/0/1'])
        g.log('BUG: scheduling while atomic: ip/40/0x00000002')
        g.suite('net-env')
        out = self.fails(g.files(), 'during boot: [    0.004936] WARNING: at boot_thing')
        self.assertIn('during setup (before the first suite): [', out)
        self.assertIn('BUG: scheduling while atomic: ip/40', out)


    def test_error_records_fail_the_run(self):
        # What a driver or the kernel reports at level err or above and no
        # checker prints: igb_rs's watchdog, the spurious-IRQ detector, the
        # OOM killer.
        for text, prio in (('igb_rs 0000:00:0a.0: transmit queue 0 hung (head 0x1a0, '
                            'tail 0x1c0): reset', 3),
                           ('irq 27: nobody cared (try booting with the "irqpoll" option)', 3),
                           ('Disabling IRQ #27', 0),
                           ('Out of memory: Killed process 312 (python3) total-vm:1kB', 3)):
            with self.subTest(text=text):
                g = guest_run.Guest()
                g.state('start', 'net-env')
                g.log(text, prio)
                g.state('end', 'net-env')
                self.fails(g.files(), f'during net-env: [')
                self.assertIn(f'{text} (level {prio})', self.fails(g.files(), text))
        # The same text at level warning is no finding; nor are the lines
        # every boot prints at level err, nor errors in the injection suite.
        g = guest_run.Guest(boot=["9p: Bad value for 'source'"])
        g.state('start', 'net-env')
        g.log('igb_rs 0000:00:0a.0: transmit queue 0 hung (head 0x1a0, tail 0x1c0): reset', 4)
        g.log('rust_doctests_kernel: hello there', 0)
        g.state('end', 'net-env')
        g.state('start', 'faults')
        g.log('kobject: kobject_add_internal failed for rx-2 (error: -12 parent: queues)', 3)
        g.state('end', 'faults')
        rc, out = judge(['net-env', 'faults'], g.files())
        self.assertEqual(rc, 0, out)

    def test_kunit_results_in_the_log_are_judged(self):
        # igb_rs's suites run again each time the module loads, after the
        # kunit suite read debugfs: their results are only in the log.
        for line in ('    not ok 1 igb_rs_hw_model', '        ok 3 tx_hang # SKIP no device'):
            with self.subTest(line=line):
                g = guest_run.Guest()
                g.suite('nic-lifecycle', ['    ok 1 igb_rs_hash', line])
                self.fails(g.files(), line.strip(), suites=('nic-lifecycle',))


class KernelState(unittest.TestCase):
    def test_new_taint_fails_the_suite_it_came_during(self):
        g = guest_run.Guest()
        g.suite('net-env')
        g.suite('nic-lifecycle', tainted=1 << 9)
        g.suite('nic-hds')
        rc, out = judge(['net-env', 'nic-lifecycle', 'nic-hds'], g.files())
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL nic-lifecycle', out)
        self.assertIn('TAINTED: W (a WARN) (tainted 0 -> 512)', line_of(out, 'nic-lifecycle'))
        self.assertIn('ok   nic-hds', out)
        self.assertIn('ok   kernel-log', out)
        # A second bit after another suite: that suite's.
        g = guest_run.Guest(tainted=1 << 9)
        g.suite('nic-hds', tainted=(1 << 9) | (1 << 5))
        rc, out = judge(['nic-hds'], g.files())
        self.assertEqual(rc, 1, out)
        self.assertIn('TAINTED: B (a bad page, or slab corruption)', line_of(out, 'nic-hds'))

    def test_test_taint_is_no_finding(self):
        g = guest_run.Guest()
        g.suite('kunit', tainted=1 << 18)
        rc, out = judge(['kunit'], g.files(),
                        taps={'kunit': 'KTAP version 1\n1..1\n    1..1\n    ok 1 c\nok 1 s\n'})
        self.assertEqual(rc, 0, out)

    def test_taint_outside_the_suites_fails_the_kernel_log(self):
        g = guest_run.Guest()
        g.tainted = 1 << 7
        g.suite('net-env')
        rc, out = judge(['net-env'], g.files())
        self.assertEqual(rc, 1, out)
        self.assertIn('setup (before the first suite): TAINTED: D (an oops: the kernel died)',
                      line_of(out, 'kernel-log'))
        g = guest_run.Guest(tainted=1 << 12)
        g.suite('net-env')
        rc, out = judge(['net-env'], g.files())
        self.assertIn('tainted before the first suite: O (an out-of-tree module)',
                      line_of(out, 'kernel-log'))
        # A suite the list leaves out (parity.sh's C core run judges
        # devmem-bind apart): its taint still fails, in kernel-log.
        g = guest_run.Guest()
        g.suite('devmem-bind', tainted=1 << 9)
        g.suite('drivers/net/hw/devmem.py')
        rc, out = judge(['devmem-bind', 'drivers/net/hw/devmem.py'], g.files(),
                        listed=['drivers/net/hw/devmem.py'], more=['--tsv', ' (C core)'])
        self.assertEqual(rc, 0, out)
        self.assertIn('kernel-log (C core)\tfail\t0 warnings or bugs in 8 records; '
                      'devmem-bind: TAINTED: W (a WARN)', out)
        self.assertIn('drivers/net/hw/devmem.py (C core)\tpass', out)

    def test_lockdep_off_after_a_suite_fails_it(self):
        for suite in ('races', 'faults'):
            with self.subTest(suite=suite):
                g = guest_run.Guest()
                g.suite('net-env')
                g.suite(suite, debug_locks=0)
                rc, out = judge(['net-env', suite], g.files())
                self.assertEqual(rc, 1, out)
                self.assertIn(f'FAIL {suite}', out)
                self.assertIn('LOCKDEP OFF: debug_locks 1 -> 0', line_of(out, suite))
                self.assertIn('ok   net-env', out)
        g = guest_run.Guest(debug_locks=0)
        g.suite('net-env')
        rc, out = judge(['net-env'], g.files())
        self.assertEqual(rc, 1, out)
        self.assertIn('lockdep was off before the first suite', line_of(out, 'kernel-log'))
        # A kernel without lockdep records nothing of it.
        g = guest_run.Guest(debug_locks=None)
        g.suite('net-env')
        rc, out = judge(['net-env'], g.files())
        self.assertEqual(rc, 0, out)

    def test_bytes_stuck_in_a_queue_fail_the_suite_that_left_them(self):
        g = guest_run.Guest()
        g.suite('net-env')
        g.suite('nic-lifecycle', bql_stuck='tx-0:588')
        g.suite('devmem-bind')
        rc, out = judge(['net-env', 'nic-lifecycle', 'devmem-bind'], g.files())
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL nic-lifecycle', out)
        self.assertIn('BQL STUCK: tx-0:588', line_of(out, 'nic-lifecycle'))
        # Named once: the next suite ran on the stuck queue, and fails
        # for what it did itself only.
        self.assertIn('ok   devmem-bind', out)
        self.assertIn('ok   net-env', out)
        # More stuck later is named again.
        g = guest_run.Guest()
        g.suite('net-env', bql_stuck='tx-1:66')
        g.suite('devmem-bind', bql_stuck='tx-1:132')
        rc, out = judge(['net-env', 'devmem-bind'], g.files())
        self.assertEqual(rc, 1, out)
        self.assertIn('BQL STUCK: tx-1:132', line_of(out, 'devmem-bind'))
        # A run that read no queue (no NIC found) saw nothing.
        g = guest_run.Guest()
        g.suite('net-env')
        files = g.files()
        files['kernel-state.txt'] = files['kernel-state.txt'].replace(' bql_queues=4', '')
        rc, out = judge(['net-env'], files)
        self.assertEqual(rc, 1, out)
        self.assertIn('were read at no suite', line_of(out, 'kernel-log'))

    def test_unwired_boot_runs_kunit_alone(self):
        # check-series's boot (GUEST_NET=0): no NIC, no queues to read.
        kunit = {'kunit': 'KTAP version 1\n1..1\n    1..1\n    ok 1 c\nok 1 s\n'}
        for suites, rc_want in ((['kunit'], 0), (['kunit', 'net-env'], 1)):
            g = guest_run.Guest()
            g.states[0] += ' net=unwired'
            for s in suites:
                g.suite(s)
            files = g.files()
            files['kernel-state.txt'] = files['kernel-state.txt'].replace(' bql_queues=4', '')
            rc, out = judge(suites, files, taps=kunit)
            self.assertEqual(rc, rc_want, out)
            if rc_want:
                self.assertIn('net-env ran with no network wired', line_of(out, 'kernel-log'))

    def test_killed_suite_fails_whatever_its_claims(self):
        for rc_killed in (124, 137):
            for suite, tap in (('t.py', 'TAP version 13\n1..2\nok 1 t.a\n'),
                               ('t.py', 'TAP version 13\n1..1\nok 1 t.a\n'),
                               ('net-env', 'TAP version 13\n1..1\nok 1 carrier\n')):
                with self.subTest(rc=rc_killed, suite=suite, tap=tap):
                    rc, out = judge([suite], guest_run.clean([suite]), taps={suite: tap},
                                    extra={suite + '.rc': f'{rc_killed}\n'})
                    self.assertEqual(rc, 1, out)
                    self.assertIn(f'FAIL {suite}', out)
                    self.assertIn(f'KILLED: ran past TEST_TIMEOUT (exit {rc_killed}',
                                  line_of(out, suite))
        # Not killed: the unclaimed cases are skips.
        rc, out = judge(['t.py'], guest_run.clean(['t.py']),
                        taps={'t.py': 'TAP version 13\n1..1\nnot ok 1 t.a\n'},
                        extra={'t.py.rc': '1\n'})
        self.assertEqual(rc, 0, out)


class Checkers(unittest.TestCase):
    def test_kmemleak_must_scan_and_find_nothing(self):
        files = guest_run.clean(['net-env'])
        cases = [
            ({'kmemleak-scan.txt': 'failed: echo: write error: Operation not permitted\n'},
             'the scan failed: echo: write error: Operation not permitted: kmemleak is off'),
            ({'kmemleak.txt': 'unreferenced object 0xffff888004a3c000 (size 64):\n'},
             '1 leaked objects'),
        ]
        for change, why in cases:
            with self.subTest(why=why):
                self.fails(dict(files, **change), why, 'kmemleak')
        for name, why in (('kmemleak.txt', 'no kmemleak.txt: kmemleak not shown on'),
                          ('kmemleak-scan.txt', "no kmemleak-scan.txt: the scan's outcome")):
            with self.subTest(missing=name):
                self.fails({k: v for k, v in files.items() if k != name}, why, 'kmemleak')
        g = guest_run.Guest()
        g.suite('net-env', ['kmemleak: Kernel memory leak detector disabled'])
        self.fails(g.files(), 'kmemleak turned itself off during net-env: [', 'kmemleak')

    def test_destroyed_page_pools_must_have_their_buffers_back(self):
        g = guest_run.Guest()
        g.suite('net-env')
        files = g.files()
        rc, out = judge(['net-env'], files)
        self.assertEqual(rc, 0, out)
        self.assertIn('ok   page-pools: 1 passed', out)
        for text, why in (('left: pool 7 (ifindex 2, 3 in flight, dma-buf 5)\n',
                           'still hold buffers 60 s after the last suite: pool 7 (ifindex 2, '
                           '3 in flight, dma-buf 5)'),
                          ('not checked: the page-pool-get dump failed: ENOENT\n',
                           'not checked: the page-pool-get dump failed'),
                          (None, 'no page-pools.txt: the pools were not checked')):
            with self.subTest(text=text):
                f = dict(files)
                if text is None:
                    del f['page-pools.txt']
                else:
                    f['page-pools.txt'] = text
                rc, out = judge(['net-env'], f)
                self.assertEqual(rc, 1, out)
                self.assertIn('FAIL page-pools', out)
                self.assertIn(why, line_of(out, 'page-pools'))

    def test_dma_api_must_stay_on_until_faults(self):
        # Off before faults, or with no faults: a failure, named.
        g = guest_run.Guest()
        g.suite('nic-hds', dma_disabled='Y')
        g.suite('faults')
        self.fails(g.files(), 'DMA-API debugging turned itself off during nic-hds: nothing '
                   'after it was checked', 'dma-api', suites=('nic-hds', 'faults'))
        g = guest_run.Guest(dma_disabled='Y')
        g.suite('nic-hds')
        self.fails(g.files(), 'DMA-API debugging was off before the first suite', 'dma-api',
                   suites=('nic-hds',))
        # During faults: a note, and what ran after it said.
        g = guest_run.Guest()
        g.suite('nic-hds')
        g.suite('faults', dma_disabled='Y')
        g.suite('races')
        rc, out = judge(['nic-hds', 'faults', 'races'], g.files())
        self.assertEqual(rc, 0, out)
        self.assertIn('NOTE: DMA-API debugging turned itself off during faults (an '
                      'allocation of its own failed, injected): the suites after it '
                      '(races) ran without it', line_of(out, 'dma-api'))
        # Not recorded, or no error count: a failure.
        g = guest_run.Guest(dma_disabled=None)
        g.suite('nic-hds')
        self.fails(g.files(), 'DMA-API debugging on or off not recorded', 'dma-api',
                   suites=('nic-hds',))
        files = guest_run.clean(['nic-hds'])
        del files['dma-api-errors.txt']
        self.fails(files, 'no dma-api-errors.txt', 'dma-api', suites=('nic-hds',))

    def test_dma_api_errors_are_named_by_suite(self):
        g = guest_run.Guest()
        g.suite('nic-hds')
        g.suite('nic-lifecycle', dma_errors=2)
        files = dict(g.files(), **{'dma-api-errors.txt': '2\n'})
        out = self.fails(files, "error_count '2'", 'dma-api', suites=('nic-hds', 'nic-lifecycle'))
        self.assertIn('2 errors during nic-lifecycle', line_of(out, 'dma-api'))

    def test_debug_kernel_shows_kasan_on(self):
        g = guest_run.Guest()
        g.suite('net-env')
        self.fails(g.files(), 'no "KernelAddressSanitizer initialized" in the kernel log',
                   'kasan', more=['--debug'])
        g = guest_run.Guest(boot=['KernelAddressSanitizer initialized (generic)'])
        g.suite('net-env')
        rc, out = judge(['net-env'], g.files(), more=['--debug'])
        self.assertEqual(rc, 0, out)
        self.assertIn('ok   kasan: 1 passed, 0 failed, 0 skipped (KernelAddressSanitizer '
                      'initialized (generic))', out)
        # Without --debug, no such line.
        rc, out = judge(['net-env'], guest_run.clean(['net-env']))
        self.assertNotIn('kasan', out)

    fails = KernelLog.fails


if __name__ == '__main__':
    unittest.main()
