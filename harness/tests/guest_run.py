# SPDX-License-Identifier: GPL-2.0
"""What a guest run writes about the kernel beside the suites' TAP
(guest/run.sh), for the tests of results.py: the kernel log as the
recorder saves it (kmsg.txt, guest/kmsg.py), kernel-state.txt, kmemleak's
and DMA-API debugging's files. A new Guest is a run where nothing went
wrong so far; what went wrong is put in through its attributes and
methods, and files() gives the files."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'guest'))
import kmsg  # noqa: E402  pylint: disable=wrong-import-position


def escape(text):
    """A record's text as /dev/kmsg gives it: control characters, bytes
    past ASCII and backslashes as \\xNN."""
    return re.sub(r'[\x00-\x1f\x7f-\xff\\]', lambda m: f'\\x{ord(m.group()):02x}',
                  text.encode().decode('latin-1'))


class Guest:
    def __init__(self, tainted=0, debug_locks=1, dma_disabled='N', dma_errors=0, boot=()):
        """The kernel's state at the start of run.sh, the log records
        boot written before it."""
        self.records = []   # the lines of kmsg.txt
        self.states = []    # the lines of kernel-state.txt
        self.seq = 0
        self.usec = 0
        # The kernel's state as kernel_state() in guest/run.sh reads it
        # (None: not there, as debug_locks without lockdep).
        self.tainted = tainted
        self.debug_locks = debug_locks
        self.dma_disabled = dma_disabled
        self.dma_errors = dma_errors
        # The NIC's transmit queues whose bytes in flight did not drain
        # (bql_stuck), read at a suite's end and at the last.
        self.bql_stuck = None
        # Whether the recorder stopped at the end, reading what was left.
        self.ended = True
        self.extra = {'kmemleak.txt': '', 'kmemleak-scan.txt': 'ok\n',
                      'dma-api-errors.txt': '0\n',
                      'page-pools.txt': 'ok: every destroyed page pool has its buffers '
                                        'back (dump 1, begun 0 s after the last suite, '
                                        '5 s long)\n'}
        self.log('Linux version 7.3.4 (root@devmem) (gcc 14.2.0) #1 SMP PREEMPT_DYNAMIC', 5)
        self.log('DMA-API: preallocated 65536 debug entries')
        self.log('DMA-API: debugging enabled by kernel config')
        self.log('kmemleak: Kernel memory leak detector initialized (mem pool available: 15901)')
        for line in boot:
            self.log(line)
        self.state('boot', '-')

    def log(self, text, prio=6):
        """A record the kernel writes; returns its sequence number."""
        seq = self.seq
        self.records.append(f'{prio},{seq},{self.usec},-;{escape(text)}')
        self.seq += 1
        self.usec += 1234
        return seq

    def lose(self, n):
        """n records are overwritten before the recorder reads them, and
        /dev/kmsg says so (EPIPE)."""
        self.records.append('# lost: /dev/kmsg said EPIPE: records were overwritten '
                            'before they were read')
        self.seq += n

    def state(self, when, suite):
        fields = [when, suite]
        if when != 'end':
            fields.append(f'seq={self.log(f"harness: {when} {suite}", 12)}')
        for key in ('tainted', 'debug_locks', 'dma_disabled', 'dma_errors'):
            if getattr(self, key) is not None:
                fields.append(f'{key}={getattr(self, key)}')
        if when in ('end', 'final'):
            fields.append('bql_queues=4')
            if self.bql_stuck:
                fields.append(f'bql_stuck={self.bql_stuck}')
        self.states.append(' '.join(fields))

    def suite(self, name, log=(), **after):
        """Suite name runs, the kernel writing the records log; then the
        attributes in after are what the kernel's state is at its end."""
        self.state('start', name)
        for line in log:
            self.log(line)
        for key, value in after.items():
            setattr(self, key, value)
        self.state('end', name)

    def files(self, final=True):
        """The files of the run (results directory name -> text); final:
        the run got to its end checks."""
        if final:
            self.state('final', '-')
        text = ''.join(f'{r}\n' for r in self.records)
        if self.ended:
            text += '# end: stopped on SIGTERM, the log read to its end\n'
        return dict(self.extra, **{'kmsg.txt': text, 'dmesg.txt': kmsg.dmesg(text),
                                   'kernel-state.txt': ''.join(f'{s}\n' for s in self.states)})


def clean(suites, log=()):
    """The files of a run of suites where nothing went wrong, the records
    log written during the first suite."""
    g = Guest()
    for i, s in enumerate(suites):
        g.suite(s, log if i == 0 else ())
    return g.files()
