# SPDX-License-Identifier: GPL-2.0
"""Tests of benchtx.py, which makes the TX benchmark's lines and goals
out of the boots make bench alternates."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import benchtx  # noqa: E402
import coreprof  # noqa: E402


def tap(lines):
    fd, path = tempfile.mkstemp(suffix='.tap')
    with os.fdopen(fd, 'w') as f:
        f.write('TAP version 13\n# a diagnostic line\n' + ''.join(l + '\n' for l in lines))
    return path


def run(args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = benchtx.main(['benchtx.py'] + args)
    return rc, out.getvalue().splitlines()


def boot(devmem, send=1000, zerocopy=900, calls=(5000, 5200)):
    """A boot's rounds: two of each cpu case at MTU 9000, 1 flow."""
    lines = [f'tx-round: calls 4 {c}' for c in calls]
    for ns in devmem:
        lines += [f'tx-round: cpu send 9000 1 {send} 40 900',
                  f'tx-round: cpu zerocopy 9000 1 {zerocopy} 40 900',
                  f'tx-round: cpu devmem 9000 1 {ns} 40 900']
    return tap(lines)


class BenchTx(unittest.TestCase):
    def test_ratios_pair_each_core_s_boots_round_by_round(self):
        rc, out = run(['c:' + boot([800, 800]), 'rust:' + boot([400, 1200]),
                       'c:' + boot([800, 800]), 'rust:' + boot([400, 400])])
        self.assertEqual(rc, 0)
        self.assertIn('devmem-tx-cpu: devmem rust 400 [400-1200] ns/KiB, c 800 [800-800] ns/KiB, '
                      'ratio rust/c 0.50 [0.50-1.50]; sink busy rust 40%, c 40%; sent rust 900 [900-900] Mbit/s, c 900 [900-900] Mbit/s (MTU 9000, 1 flow)', out)
        self.assertIn('devmem-tx-cpu: send rust 1000 [1000-1000] ns/KiB, c 1000 [1000-1000] ns/KiB, '
                      'ratio rust/c 1.00 [1.00-1.00]; sink busy rust 40%, c 40%; sent rust 900 [900-900] Mbit/s, c 900 [900-900] Mbit/s (MTU 9000, 1 flow)', out)
        self.assertIn('devmem-tx-send: rust 5100 [5000-5200] calls/s, c 5100 [5000-5200] calls/s, '
                      'ratio rust/c 1.00 [1.00-1.00] (4 threads)', out)

    def test_each_core_s_boots_are_compared_with_each_other(self):
        # Later boot over earlier, round by round, in every mode: the C
        # core's devmem rounds 1.0 and 1.5, its send and zerocopy 1.0;
        # the Rust core's devmem 0.5 and 1.0.
        rc, out = run(['c:' + boot([800, 800]), 'rust:' + boot([800, 800]),
                       'c:' + boot([800, 1200]), 'rust:' + boot([400, 800])])
        self.assertEqual(rc, 0)
        self.assertIn('devmem-tx-cpu-boots: c 1.00 [1.00-1.50], rust 1.00 [0.50-1.00] '
                      '(MTU 9000, 1 flow)', out)
        # One boot of a core: no yardstick, no line.
        _, out = run(['c:' + boot([800, 800]), 'rust:' + boot([800, 800])])
        self.assertFalse([l for l in out if l.startswith('devmem-tx-cpu-boots:')])

    def test_a_goal_is_met_only_when_every_round_meets_it(self):
        _, out = run(['c:' + boot([800, 800]), 'rust:' + boot([400, 1200])])
        self.assertIn('goal: rust core at most c on devmem-tx-cpu (MTU 9000, 1 flow): NOT met (0.50 1.50); '
                      'send and zerocopy, which never reach the core: 1.00-1.00', out)
        self.assertIn('goal: devmem at most send on devmem-tx-cpu, rust core (MTU 9000, 1 flow): NOT met '
                      '(0.40 1.20)', out)
        _, out = run(['c:' + boot([800, 800]), 'rust:' + boot([400, 700])])
        self.assertIn('goal: rust core at most c on devmem-tx-cpu (MTU 9000, 1 flow): met (0.50 0.88); '
                      'send and zerocopy, which never reach the core: 1.00-1.00', out)
        self.assertIn('goal: devmem at most send on devmem-tx-cpu, rust core (MTU 9000, 1 flow): met '
                      '(0.40 0.70)', out)
        self.assertIn('goal: rust core at least c on devmem-tx-send (4 threads): met (1.00 1.00)', out)
        # Two boots of each core: the calls goal names their spread, the
        # C core's later boot 1.10 and 1.00 of its earlier one.
        _, out = run(['c:' + boot([800]), 'rust:' + boot([800]),
                      'c:' + boot([800], calls=(5500, 5200)), 'rust:' + boot([800])])
        self.assertIn('goal: rust core at least c on devmem-tx-send (4 threads): NOT met '
                      '(1.00 1.00 0.91 1.00); two boots of one kernel: 1.00-1.10', out)

    def test_the_cpu_goal_names_the_spread_of_the_modes_the_core_never_sees(self):
        # send and zerocopy rust/c, round by round over both pairs: 1.10,
        # 0.90 (pair 1), 0.80, 1.20 (pair 2); devmem's rounds beside them.
        rc, out = run(['c:' + boot([800, 800], send=1000, zerocopy=1000),
                       'rust:' + boot([880, 880], send=1100, zerocopy=900),
                       'c:' + boot([800, 800], send=1000, zerocopy=1000),
                       'rust:' + boot([840, 840], send=800, zerocopy=1200)])
        self.assertEqual(rc, 0)
        self.assertIn('goal: rust core at most c on devmem-tx-cpu (MTU 9000, 1 flow): NOT met '
                      '(1.10 1.10 1.05 1.05); send and zerocopy, which never reach the core: 0.80-1.20', out)

    def test_a_round_without_a_figure_keeps_its_place_and_fails_its_goal(self):
        # Round 1 of the Rust boot fell short of the offered load (n/a):
        # round 2 still meets round 2, and the goal sees the gap.
        rust = boot(['n/a', 600])
        _, out = run(['c:' + boot([800, 1200]), 'rust:' + rust])
        self.assertIn('goal: rust core at most c on devmem-tx-cpu (MTU 9000, 1 flow): NOT met (n/a 0.50); '
                      'send and zerocopy, which never reach the core: 1.00-1.00', out)
        self.assertIn('devmem-tx-cpu: devmem rust 600 [600-600] ns/KiB, c 1000 [800-1200] ns/KiB, '
                      'ratio rust/c 0.50 [0.50-0.50]; sink busy rust 40%, c 40%; sent rust 900 [900-900] Mbit/s, c 900 [900-900] Mbit/s (MTU 9000, 1 flow)', out)

    def test_a_boot_without_rounds_or_a_core_fails(self):
        self.assertEqual(run(['c:' + boot([800]), 'rust:' + tap(['# nothing'])])[0], 1)
        self.assertEqual(run(['rust:' + boot([800])])[0], 2)
        self.assertEqual(run(['gcc:' + boot([800])])[0], 2)


def profile_boot(insns, per):
    """A bench-tx-profile boot's results directory: tx-profile: lines for
    MTU 9000 (insns: {mode: n}) and the devmem run's .per file (per:
    {function: n})."""
    d = tempfile.mkdtemp()
    os.mkdir(os.path.join(d, 'hostcpu'))
    with open(os.path.join(d, 'bench-tx-profile.tap'), 'w', encoding='utf-8') as f:
        f.write('# a diagnostic line\n')
        for mode, n in insns.items():
            f.write(f'tx-profile: {mode} 9000 {n} 3: tcp_sendmsg_locked 20.0%, f 1.0%\n')
    with open(os.path.join(d, 'hostcpu', 'tx.devmem.9000.per'), 'w', encoding='utf-8') as f:
        for name, n in sorted(per.items(), key=lambda kv: -kv[1]):
            f.write(f'{name}\t{n}\n')
    return d


class BenchTxProfile(unittest.TestCase):
    def test_cores_compared_mode_by_mode_and_function_by_function(self):
        c = profile_boot({'send': 1000, 'zerocopy': 900, 'devmem': 800},
                         {'tcp_sendmsg_locked': 300, 'net_devmem_get_niov_at': 40, 'same': 10})
        rust = profile_boot({'send': 1000, 'zerocopy': 900, 'devmem': 880},
                            {'tcp_sendmsg_locked': 300, '<Binding as Tx>::niov_at': 130, 'same': 10})
        rc, out = run(['--profile', 'c:' + c, 'rust:' + rust])
        self.assertEqual(rc, 0)
        self.assertIn('devmem-tx-profile: send rust core 1000 insns/KiB, c core 1000 insns/KiB, '
                      'ratio rust/c 1.00 (MTU 9000, 1 flow)', out)
        self.assertIn('devmem-tx-profile: devmem rust core 880 insns/KiB, c core 800 insns/KiB, '
                      'ratio rust/c 1.10 (MTU 9000, 1 flow)', out)
        self.assertIn('devmem-tx-profile-funcs: devmem 880 insns/KiB: tcp_sendmsg_locked 20.0%, f 1.0% '
                      '(MTU 9000, rust core)', out)
        self.assertIn('devmem-tx-profile-extra: devmem rust core over c core +90 insns/KiB (MTU 9000): '
                      '<Binding as Tx>::niov_at +130.0; net_devmem_get_niov_at -40.0', out)
        self.assertIn('goal: rust core at most c on devmem-tx-profile (MTU 9000): NOT met (1.10)', out)

    def test_the_core_line_counts_the_core_s_functions_alone(self):
        # The object's functions: 'get' (entered at its first block) and
        # 'dup', a name the kernel has twice: the copy between the
        # object's other functions is the object's.
        def raw(d, get_insns):
            hc = os.path.join(d, 'hostcpu')
            with open(os.path.join(hc, 'tx.devmem.9000.kallsyms'), 'w', encoding='utf-8') as f:
                f.write('ffffffff81000000 T tcp_sendmsg_locked\n'
                        'ffffffff81001000 T get\n'
                        'ffffffff81001100 t dup\n'
                        'ffffffff81001200 T last\n'
                        'ffffffff81002000 T after\n'
                        'ffffffff81009000 t dup\n')
            with open(os.path.join(hc, 'tx.devmem.9000.run'), 'w', encoding='utf-8') as f:
                f.write('1 2048\n')
            with open(os.path.join(hc, 'tx.devmem.9000.counts'), 'w', encoding='utf-8') as f:
                # VADDR INSNS RUNS_VCPU0 RUNS_VCPU1: the sender is vCPU 1.
                f.write(f'ffffffff81000000 50 0 10\n'
                        f'ffffffff81001000 {get_insns} 0 4\n'
                        f'ffffffff81001010 2 0 2\n'
                        f'ffffffff81001100 3 7 2\n'
                        f'ffffffff81001200 1 0 2\n'
                        f'ffffffff81002000 9 0 2\n'
                        f'ffffffff81009000 100 0 2\n')
        c = profile_boot({'devmem': 800}, {'f': 1})
        rust = profile_boot({'devmem': 800}, {'f': 1})
        raw(c, 5)
        raw(rust, 4)
        real = coreprof.object_functions
        coreprof.object_functions = lambda obj: {'get', 'dup', 'last'}
        try:
            rc, out = run(['--profile', 'c:' + c, 'rust:' + rust,
                           '--object', 'c:devmem.o', '--object', 'rust:devmem_rs.o'])
        finally:
            coreprof.object_functions = real
        self.assertEqual(rc, 0)
        # Per KiB (2 KiB sent): c (5*4 + 2*2 + 3*2 + 1*2) / 2 = 16,
        # rust (4*4 + 4 + 6 + 2) / 2 = 14; 'get' 6 and 5 instructions
        # a call.
        self.assertIn('devmem-tx-profile-core: devmem rust core 14.0 insns/KiB, c core 16.0 '
                      'insns/KiB, ratio rust/c 0.88 (MTU 9000): get 5.0/6.0, dup 3.0/3.0, '
                      'last 1.0/1.0 rust/c insns/call', out)
        self.assertIn('goal: rust core at most c on devmem-tx-profile-core (MTU 9000): met (0.88)', out)
        self.assertFalse([l for l in out if 'on devmem-tx-profile (' in l])

    def test_a_profile_needs_both_cores_and_their_lines(self):
        c = profile_boot({'devmem': 800}, {'f': 1})
        self.assertEqual(run(['--profile', 'c:' + c])[0], 2)
        self.assertEqual(run(['--profile', 'c:' + c, 'c:' + c])[0], 2)
        empty = tempfile.mkdtemp()
        with open(os.path.join(empty, 'bench-tx-profile.tap'), 'w', encoding='utf-8') as f:
            f.write('# nothing\n')
        self.assertEqual(run(['--profile', 'c:' + c, 'rust:' + empty])[0], 1)


if __name__ == '__main__':
    unittest.main()
