# SPDX-License-Identifier: GPL-2.0
"""Tests of what the guest's race and fault-injection suites count as
evidence (harness/guest/evidence.py), and of how races.py and faults.py use
it: overlapping windows, the overlap minimum, the rmmod verdict, how a
round with a fault ended. The suites themselves need the debug kernel in
the VM; faults.py and races.py are imported here with a stand-in for YNL's
lib (they load it from $KSRC) and nothing of the guest touched."""

import collections
import errno
import importlib
import os
import sys
import time
import types
import unittest

GUEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'guest')
sys.path.insert(0, GUEST)
import evidence as E  # noqa: E402  pylint: disable=wrong-import-position

MS = 1_000_000  # ns


def guest_modules():
    """faults and races, imported without the guest: KSRC and NETIF set to
    placeholders (read at import, used later), YNL's lib a stand-in."""
    if 'races' in sys.modules:
        return sys.modules['faults'], sys.modules['races']
    lib = types.ModuleType('lib')

    class NlError(Exception):
        pass

    lib.NlError = NlError
    lib.YnlFamily = object
    saved_env = {k: os.environ.get(k) for k in ('KSRC', 'NETIF')}
    saved_lib = sys.modules.get('lib')
    os.environ.setdefault('KSRC', '/nonexistent')
    os.environ.setdefault('NETIF', 'eth-test')
    sys.modules['lib'] = lib
    try:
        faults = importlib.import_module('faults')
        races = importlib.import_module('races')
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if saved_lib is None:
            sys.modules.pop('lib', None)
        else:
            sys.modules['lib'] = saved_lib
    return faults, races


class Overlap(unittest.TestCase):
    def test_intersecting_windows_overlap(self):
        self.assertTrue(E.overlap((0, 10), (5, 20)))
        self.assertTrue(E.overlap((5, 20), (0, 10)))

    def test_a_window_inside_another_overlaps(self):
        self.assertTrue(E.overlap((0, 100), (40, 60)))
        self.assertTrue(E.overlap((40, 60), (0, 100)))

    def test_disjoint_or_touching_windows_do_not(self):
        self.assertFalse(E.overlap((0, 10), (11, 20)))
        self.assertFalse(E.overlap((11, 20), (0, 10)))
        self.assertFalse(E.overlap((0, 10), (10, 20)))

    def test_any_of_several(self):
        flips = [(0, 10), (20, 30), (40, 50)]
        self.assertTrue(E.overlaps_any([(25, 26)], flips))
        self.assertFalse(E.overlaps_any([(10, 20)], flips))
        self.assertFalse(E.overlaps_any([(10, 20)], []))
        self.assertFalse(E.overlaps_any([], flips))

    def test_unbind_vs_kill_rounds(self):
        """Scenario 1's windows: the unbind's write, and kill() to the
        holder's exit."""
        # Unbind first, the kill 50 ms into a 900 ms unbind.
        self.assertTrue(E.overlap((0, 900 * MS), (50 * MS, 1000 * MS)))
        # Kill first: the holder's exit (its socket's release) still runs
        # when the unbind starts 10 ms later.
        self.assertTrue(E.overlap((10 * MS, 800 * MS), (0, 300 * MS)))
        # Kill first, the holder gone 40 ms before the unbind's write.
        self.assertFalse(E.overlap((100 * MS, 800 * MS), (0, 60 * MS)))

    def test_close_between_two_requests_does_not_overlap(self):
        """Scenario 3: a close in the turnaround between two rings-sets."""
        requests = [(0, 300 * MS), (302 * MS, 600 * MS)]
        self.assertFalse(E.overlaps_any([(300 * MS + 10, 301 * MS)], requests))
        self.assertTrue(E.overlaps_any([(299 * MS, 301 * MS)], requests))


class OverlapMinimum(unittest.TestCase):
    def test_three_at_least(self):
        self.assertEqual(E.overlap_needed(5, 20), 3)
        self.assertEqual(E.overlap_needed(3, 20), 3)
        self.assertEqual(E.overlap_needed(1, 20), 3)

    def test_a_quarter_of_the_rounds_run(self):
        self.assertEqual(E.overlap_needed(12, 20), 3)
        self.assertEqual(E.overlap_needed(13, 20), 4)
        self.assertEqual(E.overlap_needed(20, 20), 5)
        self.assertEqual(E.overlap_needed(40, 40), 10)

    def test_no_more_than_planned(self):
        self.assertEqual(E.overlap_needed(2, 2), 2)
        self.assertEqual(E.overlap_needed(1, 1), 1)

    def test_verdict(self):
        line, problems = E.overlap_verdict(4, 5, 20)
        self.assertEqual(line, 'overlapping rounds: 4 of 5 (at least 3 needed)')
        self.assertEqual(problems, [])
        line, problems = E.overlap_verdict(2, 5, 20)
        self.assertEqual(line, 'overlapping rounds: 2 of 5 (at least 3 needed)')
        self.assertEqual(len(problems), 1)
        self.assertIn('only 2 of 5 rounds had both sides in flight', problems[0])
        _, problems = E.overlap_verdict(4, 20, 20)
        self.assertEqual(len(problems), 1)
        _, problems = E.overlap_verdict(5, 20, 20)
        self.assertEqual(problems, [])


class FakeSocket:
    """Records when send() ran; recvmsg() answers at once."""

    def __init__(self):
        self.sent_at = []
        self.timeout = None
        self.closed = False

    def send(self, data, flags=0):
        self.sent_at.append(time.monotonic_ns())
        return len(data)

    def recvmsg(self, *args):
        return b'ack', [], 0, None

    def settimeout(self, t):
        self.timeout = t

    def close(self):
        self.closed = True


class TimedSocketTest(unittest.TestCase):
    def test_send_to_answer(self):
        raw = FakeSocket()
        s = E.TimedSocket(raw)
        s.send(b'req', 0)
        s.recvmsg(1024, 4096, 0)
        self.assertEqual(len(s.spans), 1)
        start, end = s.spans[0]
        self.assertLessEqual(start, raw.sent_at[0])
        self.assertLessEqual(raw.sent_at[0], end)

    def test_one_window_per_request(self):
        """A dump's further recvmsg() calls, or one with no request sent,
        add none."""
        s = E.TimedSocket(FakeSocket())
        s.recvmsg(1024)
        self.assertEqual(s.spans, [])
        s.send(b'req')
        for _ in range(3):
            s.recvmsg(1024)
        s.send(b'req')
        s.recvmsg(1024)
        self.assertEqual(len(s.spans), 2)

    def test_shared_list_and_pass_through(self):
        spans = []
        raw = FakeSocket()
        s = E.TimedSocket(raw, spans)
        s.settimeout(7)
        s.send(b'req')
        s.recvmsg(1024)
        s.close()
        self.assertEqual(len(spans), 1)
        self.assertEqual(raw.timeout, 7)
        self.assertTrue(raw.closed)


class Unload(unittest.TestCase):
    def counters(self, held=(0, 0), after=(0, 0)):
        return (collections.Counter(succeeded=held[0], refused=held[1]),
                collections.Counter(succeeded=after[0], refused=after[1]))

    def test_counts_line(self):
        held, after = self.counters((3, 1), (2, 0))
        self.assertEqual(E.unload_counts(held, after),
                         'rmmod with the binding held: 3 succeeded, 1 refused; '
                         'after it went: 2 succeeded, 0 refused')

    def test_refused_while_held_then_unloaded_passes(self):
        held, after = self.counters((0, 4), (4, 0))
        self.assertEqual(E.unload_problems(held, after, 'igb_rs', '1'), [])

    def test_unloaded_while_held_and_after_passes(self):
        held, after = self.counters((4, 0), (1, 0))
        self.assertEqual(E.unload_problems(held, after, 'igb_rs', 'x'), [])

    def test_never_unloaded_names_the_refcount(self):
        """A module reference the binding leaks: refused with it held and
        after it went."""
        held, after = self.counters((0, 2), (0, 1))
        problems = E.unload_problems(held, after, 'igb_rs', '1')
        self.assertEqual(len(problems), 1)
        self.assertIn('never succeeded', problems[0])
        self.assertIn('/sys/module/igb_rs/refcnt 1', problems[0])

    def test_no_rmmod_after_the_binding_went(self):
        held, after = self.counters((3, 0), (0, 0))
        problems = E.unload_problems(held, after, 'igb_rs', 'not read')
        self.assertEqual(len(problems), 1)
        self.assertIn('after a binding went', problems[0])


class FaultEnding(unittest.TestCase):
    def test_endings(self):
        self.assertEqual(E.fault_ending('ok', 'netlink', 0), E.ABSORBED)
        self.assertEqual(E.fault_ending('error', 'netlink', errno.ENOMEM), E.REQUEST)
        self.assertEqual(E.fault_ending('error', 'sendmsg', errno.ENOBUFS), E.SENDMSG)
        self.assertEqual(E.fault_ending('lost', 'recvmsg', errno.ENOBUFS), E.RECVMSG)
        self.assertEqual(E.fault_ending('bad', 'netlink', 0, 'no answer'), E.UNCLEAN)
        self.assertEqual(E.fault_ending('error', 'netlink', 0), E.UNCLEAN)

    def test_a_refused_request(self):
        refusal = (errno.EINVAL, 'refused')
        self.assertEqual(E.fault_ending('error', 'netlink', errno.EINVAL, 'refused', refusal),
                         E.ABSORBED)
        self.assertEqual(E.fault_ending('error', 'netlink', errno.ENOMEM, None, refusal),
                         E.REQUEST)
        self.assertEqual(E.fault_ending('error', 'netlink', errno.EINVAL, 'other', refusal),
                         E.REQUEST)

    def test_summary_and_verdict(self):
        endings = collections.Counter({E.REQUEST: 2, E.ABSORBED: 5, E.SENDMSG: 1})
        self.assertEqual(E.fault_summary('bind-rx', endings),
                         'bind-rx: 8 rounds, 2 errors from the request, 5 absorbed, '
                         '1 errors from sendmsg, 0 answers lost (recvmsg), 0 without '
                         'a clean end')
        self.assertEqual(E.fault_problems('bind-rx', endings), [])
        endings[E.REQUEST] = 0
        problems = E.fault_problems('bind-rx', endings)
        self.assertEqual(len(problems), 1)
        self.assertIn('never reached an error path', problems[0])


class Ranges(unittest.TestCase):
    def test_ranges(self):
        self.assertEqual(E.ranges([]), '')
        self.assertEqual(E.ranges([7]), '7')
        self.assertEqual(E.ranges([40, 2, 3, 4, 5, 77, 41]), '2-5, 40-41, 77')


# Call traces of an injected fault as the debug kernel logs them (fault
# injection's verbose 2, then dump_stack()), frames only: a kmalloc of the
# Rust core's bind, and one of genetlink's before the handler runs.
INSIDE = ['dump_stack_lvl+0x6e/0xa0', 'should_fail_ex+0x2d5/0x300',
          'should_failslab+0xb1/0xe0', '__kmalloc_noprof+0xa8/0x4c0',
          '_RNvMs_NtCs2x1Np781m4X_9devmem_rs7bindingNtB4_7Binding3new+0x1f3/0x8a0',
          'netdev_nl_bind_rx_doit+0x5e2/0xe30', 'genl_family_rcv_msg_doit+0x1e5/0x2a0']
OUTSIDE = ['dump_stack_lvl+0x6e/0xa0', 'should_fail_ex+0x2d5/0x300',
           'should_failslab+0xb1/0xe0', '__kmalloc_noprof+0xa8/0x4c0',
           'genl_family_rcv_msg_attrs_parse+0x82/0x1e0', 'genl_rcv_msg+0x36b/0x5b0']


def fault_report(frames):
    return (['FAULT_INJECTION: forcing a failure.',
             'name failslab, interval 1, probability 0, space 0, times 1',
             'CPU: 1 UID: 0 PID: 812 Comm: python3 Not tainted 7.3.4 #1 PREEMPT(voluntary)',
             'Hardware name: QEMU Standard PC (i440FX + PIIX, 1996)', 'Call Trace:', ' <TASK>']
            + [f' {f}' for f in frames] + [' </TASK>'])


class FaultTrace(unittest.TestCase):
    def test_frames(self):
        self.assertEqual(E.fault_frames(fault_report(INSIDE) + ['unrelated']), [INSIDE])
        self.assertEqual(E.fault_frames(['no fault here']), [])

    def test_inside(self):
        self.assertTrue(E.fault_inside(fault_report(INSIDE)))
        self.assertFalse(E.fault_inside(fault_report(OUTSIDE)))
        self.assertTrue(E.fault_inside(fault_report(OUTSIDE) + fault_report(INSIDE)))
        for frame in ('igb_rs_ring_alloc+0x10/0x20 [igb_rs]', 'net_devmem_bind_dmabuf+0x1/0x2',
                      'mp_dmabuf_devmem_init+0x1/0x2', 'netdev_nl_bind_tx_doit+0x1/0x2'):
            self.assertTrue(E.fault_inside(fault_report(OUTSIDE[:4] + [frame])), frame)
        # A frame of the code under test before the fault report is not its.
        self.assertFalse(E.fault_inside([' igb_rs_poll+0x1/0x2 [igb_rs]']
                                        + fault_report(OUTSIDE)))


class FaultLoop(unittest.TestCase):
    """faults.Loop over made-up rounds: the first `len(endings)` with a
    fault injected, then one without."""

    def run_loop(self, endings, refusal=None, final=('ok', 0, None), traces=None):
        """traces: the call trace of each round's fault (a frame list, or
        None for a round that logs none); by default each is the code
        under test's."""
        faults, _ = guest_modules()
        if traces is None:
            traces = [INSIDE] * len(endings)
        rounds = iter(traces + [None])

        class Log:
            def new_lines(self):
                frames = next(rounds, None)
                if frames is None:
                    return []
                return fault_report(frames)

            def close(self):
                pass

        def step(n):
            a = faults.Attempt(n)
            if n <= len(endings):
                a.outcome, a.where, a.err, a.msg = endings[n - 1]
                a.injected = True
            else:
                a.outcome, a.err, a.msg = final
            return a, []

        saved = faults.KernelLog
        faults.KernelLog = Log
        try:
            loop = faults.Loop('op', refusal)
            loop.run(step)
        finally:
            faults.KernelLog = saved
        return loop

    def test_errors_only_outside_the_code_under_test_fail(self):
        # The netlink layers' allocations failed the request; none of the
        # code under test's did.
        loop = self.run_loop([('error', 'netlink', errno.ENOMEM, None)] * 2,
                             traces=[OUTSIDE, OUTSIDE])
        self.assertEqual(len(loop.problems), 1)
        self.assertIn('came from an allocation outside the code under test', loop.problems[0])
        loop = self.run_loop([('error', 'netlink', errno.ENOMEM, None)] * 2,
                             traces=[OUTSIDE, INSIDE])
        self.assertEqual(loop.problems, [])
        self.assertEqual(loop.summary()[2], "op: of them, the failed allocation was the code "
                                            "under test's (its call trace) at N=2")

    def test_an_error_from_the_request_passes(self):
        loop = self.run_loop([('ok', 'netlink', 0, None),
                              ('error', 'netlink', errno.ENOMEM, 'Failed'),
                              ('error', 'sendmsg', errno.ENOBUFS, None)])
        self.assertEqual(loop.problems, [])
        lines = loop.summary()
        self.assertTrue(lines[0].startswith(
            'op: 3 rounds, 1 errors from the request, 1 absorbed, 1 errors from sendmsg, '
            '0 answers lost (recvmsg), 0 without a clean end; '))
        self.assertEqual(lines[1], 'op: errors from the request at N=2; errnos: ENOMEM x1, '
                                   'sendmsg ENOBUFS x1')

    def test_only_absorbed_and_socket_errors_fail(self):
        loop = self.run_loop([('ok', 'netlink', 0, None),
                              ('error', 'sendmsg', errno.ENOBUFS, None),
                              ('lost', 'recvmsg', errno.ENOBUFS, None)])
        self.assertEqual(len(loop.problems), 1)
        self.assertIn('none of 3 rounds with a fault ended in an error returned by the '
                      'request', loop.problems[0])

    def test_a_refusal_is_not_an_error_path(self):
        refusal = (errno.EINVAL, 'refused')
        loop = self.run_loop([('error', 'netlink', errno.EINVAL, 'refused')] * 3,
                             refusal, final=('error', errno.EINVAL, 'refused'))
        self.assertEqual(len(loop.problems), 1)
        self.assertIn('never reached an error path', loop.problems[0])
        loop = self.run_loop([('error', 'netlink', errno.EINVAL, 'refused'),
                              ('error', 'netlink', errno.ENOMEM, None)],
                             refusal, final=('error', errno.EINVAL, 'refused'))
        self.assertEqual(loop.problems, [])
        self.assertTrue(loop.summary()[0].startswith(
            'op: 2 rounds, 1 errors from the request, 1 absorbed, '))

    def test_no_fault_at_all_is_said_once(self):
        loop = self.run_loop([])
        self.assertEqual(len(loop.problems), 1)
        self.assertIn('no allocation failed at N=1', loop.problems[0])


class RaceBudget(unittest.TestCase):
    def test_least_rounds_past_the_time(self):
        _, races = guest_modules()
        b = races.Budget(20, secs=0, least=3)
        ran = 0
        while b.more():
            b.done += 1
            ran += 1
        self.assertEqual(ran, 3)

    def test_least_no_more_than_planned(self):
        _, races = guest_modules()
        b = races.Budget(2, secs=0, least=3)
        while b.more():
            b.done += 1
        self.assertEqual(b.done, 2)

    def test_time_bound_without_least(self):
        _, races = guest_modules()
        self.assertFalse(races.Budget(20, secs=0).more())
        b = races.Budget(4, secs=60)
        while b.more():
            b.done += 1
        self.assertEqual(b.done, 4)


class InFlight(unittest.TestCase):
    """races.in_flight: a flip's request windows."""

    def rig(self):
        return types.SimpleNamespace(eth=types.SimpleNamespace(
            sock=E.TimedSocket(FakeSocket())))

    def test_the_requests_windows(self):
        _, races = guest_modules()
        rig = self.rig()
        rig.eth.sock.send(b'get')
        rig.eth.sock.recvmsg(1024)
        spans = []
        with races.in_flight(rig, spans):
            time.sleep(0.002)
            t1 = time.monotonic_ns()
            rig.eth.sock.send(b'set')
            rig.eth.sock.recvmsg(1024)
            t2 = time.monotonic_ns()
            time.sleep(0.002)
        self.assertEqual(spans, rig.eth.sock.spans[1:])
        self.assertEqual(len(spans), 1)
        start, end = spans[0]
        self.assertTrue(t1 <= start <= end <= t2)

    def test_the_block_without_requests_on_the_socket(self):
        _, races = guest_modules()
        rig = self.rig()
        spans = []
        t0 = time.monotonic_ns()
        with self.assertRaises(OSError):
            with races.in_flight(rig, spans):
                raise OSError(errno.EBUSY, 'link down')
        self.assertEqual(len(spans), 1)
        self.assertLessEqual(t0, spans[0][0])


if __name__ == '__main__':
    unittest.main()
