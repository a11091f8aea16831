# SPDX-License-Identifier: GPL-2.0
"""What the race and fault-injection suites (races.py, faults.py) count as
evidence, apart from the guest's I/O so that harness/tests checks it on the
host: whether two operations were in flight at once, how many such rounds a
race scenario needs, what the rmmod counts of the unload scenario must show,
and how a round with an injected fault ended.

A window is (start, end) in CLOCK_MONOTONIC nanoseconds (time.monotonic_ns()),
the one clock of every process in the guest: one process's window compares
with another's.
"""

import math
import re
import time

# A race round proves something only when both of its sides were in flight
# at once; a scenario needs at least MIN_OVERLAP_ROUNDS such rounds and at
# least MIN_OVERLAP_SHARE of the rounds it ran. The scenarios are arranged
# for overlap: scenario 1 starts its second side at most 100 ms after the
# first, while the unbind takes hundreds of ms on the debug kernel and the
# killed owner's socket release unbinds and restarts a queue; scenario 3
# closes while rings-set requests, each a restart of every queue, follow
# each other with only Python's turnaround between them; in scenario 4 each
# flip restarts queues or the device while three binders bind (a restart
# too, or a refusal) and close (an unbind, one more restart), and wait on
# the flip's locks meanwhile. Working as arranged, most rounds should
# overlap. A quarter leaves room for the rounds whose random lag
# misses (the 100 ms lags of scenario 1, a close landing between two
# requests) on a faster or a slower machine; a run whose sides no longer
# meet (one side waiting for the other in user space, a side that returns
# at once, a clock read in the wrong place) ends far below it. Three rounds
# at least, as one or two could be luck; the race scenarios run that many
# however slow the machine. A run planned with fewer rounds
# (RACES_ITERATIONS) needs each of them to overlap.
MIN_OVERLAP_ROUNDS = 3
MIN_OVERLAP_SHARE = 0.25


def overlap(a, b):
    """Windows a and b intersect: some instant is inside both (windows that
    only touch do not)."""
    return max(a[0], b[0]) < min(a[1], b[1])


def overlaps_any(windows, others):
    """Some window of `windows` intersects some window of `others`."""
    return any(overlap(a, b) for a in windows for b in others)


def overlap_needed(rounds, planned):
    """Overlapping rounds a scenario needs, having run `rounds` of the
    `planned` ones."""
    need = max(MIN_OVERLAP_ROUNDS, math.ceil(MIN_OVERLAP_SHARE * rounds))
    return min(planned, need)


def overlap_verdict(overlapping, rounds, planned, what='rounds'):
    """(the line to print, the problems) for `overlapping` of `rounds`
    rounds having had both sides in flight at once."""
    need = overlap_needed(rounds, planned)
    line = f'overlapping {what}: {overlapping} of {rounds} (at least {need} needed)'
    if overlapping >= need:
        return line, []
    return line, [f'only {overlapping} of {rounds} {what} had both sides in flight at once, '
                  f'at least {need} needed: the race was not shown to happen']


class TimedSocket:
    """A netlink socket that records each request's window: from right
    before its send() to right after the recvmsg() that brings the first
    answer back. The kernel handles a netlink request inside the sender's
    send(), so the window covers the request's handling whole; the
    message's encoding and the answer's decoding are outside it. Everything
    else passes through (YNL sends with send() and reads with recvmsg())."""

    def __init__(self, sock, spans=None):
        self._sock = sock
        self.spans = [] if spans is None else spans
        self._sent = None

    def send(self, data, flags=0):
        self._sent = time.monotonic_ns()
        return self._sock.send(data, flags)

    def recvmsg(self, *args):
        ret = self._sock.recvmsg(*args)
        if self._sent is not None:
            self.spans.append((self._sent, time.monotonic_ns()))
            self._sent = None
        return ret

    def __getattr__(self, name):
        return getattr(self._sock, name)


def unload_counts(held, after):
    """The rmmod results of the unload scenario, with the binding held and
    after it went (Counters of 'succeeded' and 'refused')."""
    return (f'rmmod with the binding held: {held["succeeded"]} succeeded, '
            f'{held["refused"]} refused; after it went: {after["succeeded"]} '
            f'succeeded, {after["refused"]} refused')


def unload_problems(held, after, module, refcnt):
    """An rmmod after a binding went must succeed once at least: the
    binding must not keep the module. refcnt is what
    /sys/module/<module>/refcnt said at the last refusal."""
    if not held['succeeded'] and not after['succeeded']:
        return [f'rmmod {module} never succeeded ({held["refused"]} refused with a binding '
                f'held, {after["refused"]} after it went): /sys/module/{module}/refcnt '
                f'{refcnt}']
    if not after['succeeded']:
        return [f'no rmmod {module} after a binding went succeeded ({after["refused"]} '
                f'refused): /sys/module/{module}/refcnt {refcnt}']
    return []


# How a round with an injected fault ended.
REQUEST = 'request'     # a netlink error with an errno: the request's handling failed
SENDMSG = 'sendmsg'     # sendmsg() failed: the request's skb was not allocated
RECVMSG = 'recvmsg'     # recvmsg() failed: the answer was lost, the outcome unknown
ABSORBED = 'absorbed'   # the answer it has without a fault: the fault was absorbed
UNCLEAN = 'unclean'     # no answer, no errno


def fault_ending(outcome, where, err, msg=None, refusal=None):
    """How a round with a fault injected ended, from its Attempt's outcome
    ('ok', 'error', 'lost', 'bad'), where the error came from ('netlink',
    'sendmsg', 'recvmsg'), its errno and extack message. refusal is the
    (errno, message) the request is refused with without a fault, for a
    request that is refused: that answer is the fault absorbed."""
    if outcome == 'ok':
        return ABSORBED
    if outcome not in ('error', 'lost') or err <= 0:
        return UNCLEAN
    if outcome == 'lost' or where == 'recvmsg':
        return RECVMSG
    if where == 'sendmsg':
        return SENDMSG
    if refusal is not None and (err, msg) == tuple(refusal):
        return ABSORBED
    return REQUEST


def fault_summary(site, endings):
    """The line of a fault loop's counts (a Counter of fault_ending()s)."""
    return (f'{site}: {sum(endings.values())} rounds, {endings[REQUEST]} errors from the '
            f'request, {endings[ABSORBED]} absorbed, {endings[SENDMSG]} errors from sendmsg, '
            f'{endings[RECVMSG]} answers lost (recvmsg), {endings[UNCLEAN]} without a clean '
            'end')


def ranges(ns):
    """Sorted round numbers as '2-5, 40, 77'."""
    out = []
    for n in sorted(ns):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return ', '.join(str(a) if a == b else f'{a}-{b}' for a, b in out)


# A frame of the code under test in a call trace: the Rust core (its
# crate's symbols, mangled, carry 9devmem_rs), the C core, the bind
# handlers of either, igb_rs (a module: its frames end in [igb_rs]).
CODE_UNDER_TEST_RE = re.compile(
    r'devmem_rs|\bnet_devmem_|\bmp_dmabuf_devmem_|\bnetdev_nl_bind_(?:rx|tx)_doit\b|'
    r'\[igb_rs\]')
FAULT_LINE = 'FAULT_INJECTION: forcing a failure.'


def fault_frames(lines):
    """The call trace of each injected fault in `lines` (kernel log lines,
    fault injection's verbose 2: its report, then dump_stack()'s), a list
    of frame lines each."""
    traces, cur, in_trace = [], None, False
    for line in lines:
        if line is None:
            continue
        if FAULT_LINE in line:
            cur, in_trace = [], False
            traces.append(cur)
        elif cur is not None and line.strip() == 'Call Trace:':
            in_trace = True
        elif cur is not None and in_trace:
            if line.strip() == '</TASK>':
                cur, in_trace = None, False
            elif line.strip() != '<TASK>':
                cur.append(line.strip())
    return traces


def fault_inside(lines):
    """Whether an injected fault in `lines` failed an allocation made by
    the code under test: a frame of its call trace is (CODE_UNDER_TEST_RE),
    not only the netlink, ethtool or rtnetlink layers in front of it."""
    return any(CODE_UNDER_TEST_RE.search(f) for t in fault_frames(lines) for f in t)


def fault_problems(site, endings, inside=None):
    """A fault loop shows an error path of the code under test only when a
    round whose failed allocation was made by it (its call trace, `inside`:
    how many rounds ended in an error from the request with it) ended in
    an error the request returned."""
    if not endings[REQUEST]:
        return [f'{site}: none of {sum(endings.values())} rounds with a fault ended in an '
                'error returned by the request (a netlink error with an errno): the faults '
                'never reached an error path of the code under test']
    if inside == 0:
        return [f'{site}: each of the {endings[REQUEST]} errors from the request came from '
                'an allocation outside the code under test (no frame of devmem_rs, the C '
                'core, the bind handlers or igb_rs in its call trace): its own error paths '
                'were never reached']
    return []
