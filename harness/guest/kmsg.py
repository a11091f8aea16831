#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The guest's kernel log, whole, and what is read from it.

  kmsg.py record FILE   copies every record of /dev/kmsg to FILE as it is
                        written, from the oldest one the buffer holds, until
                        SIGTERM; then reads what is left and ends
  kmsg.py mark TEXT     writes TEXT to the kernel log and prints the sequence
                        number of the first record from then on
  kmsg.py dmesg FILE    prints the records FILE holds as dmesg does,
                        "[   12.345678] text", a line each

run.sh starts the recorder before anything else and stops it at the end:
the log buffer of a long run wraps (vm.sh makes it large, log_buf_len), and
a dump at the end holds only what the buffer still has. The recorder reads
as the kernel writes, so the buffer only has to hold what it has not read
yet. run.sh marks each suite's start with mark, and results.py names the
suite a report came during by its sequence number.

FILE holds the records as /dev/kmsg gives them (Documentation/ABI/testing/
dev-kmsg): "PRIO,SEQ,USEC,FLAGS[,...];TEXT", TEXT's control characters and
backslashes escaped as \\xNN (a record of several lines has them joined by
\\x0a), then the record's KEY=VALUE lines, each starting with a space. Lines
starting with '#' are the recorder's own: LOST_MARK when /dev/kmsg said
records were overwritten before they were read (EPIPE), END_MARK when it
stopped on SIGTERM after reading everything. results.py judges the log with
parse(): whether it starts at boot (the first record's sequence number is
0), whether records were lost (EPIPE, or a gap in the sequence numbers),
whether the recorder ran to its end.
"""

import os
import re
import select
import signal
import sys
import time

DEVICE = '/dev/kmsg'
LOST_MARK = '# lost:'
END_MARK = '# end:'
# One read() gets one record: its text (escaped, up to 4 bytes per byte of
# a 1024-byte record) and its KEY=VALUE lines fit.
READ_SIZE = 16384
# After SIGTERM, how long the recorder keeps reading a log that does not
# stop growing.
DRAIN_SECS = 30

HEADER_RE = re.compile(r'^(?P<prio>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;(?P<text>.*)$')
ESCAPE_RE = re.compile(rb'\\x([0-9a-fA-F]{2})')


class Record:
    def __init__(self, seq, usec, text, level=6):
        self.seq = seq
        self.usec = usec
        self.lines = text.split('\n')
        # The log level (0 emerg ... 3 err, 4 warning ... 7 debug).
        self.level = level

    def stamp(self):
        """The time as dmesg prints it: '[   12.345678]'."""
        return f'[{self.usec // 1000000:5d}.{self.usec % 1000000:06d}]'


class Log:
    """What a recorder's FILE holds: the records, in the order read, and
    what it said about them."""

    def __init__(self):
        self.records = []
        self.lost = []      # why records are missing, a sentence each
        self.ended = False  # the recorder stopped after reading everything

    def first_seq(self):
        return self.records[0].seq if self.records else None

    def last_seq(self):
        return self.records[-1].seq if self.records else None

    def lines(self):
        """(sequence number, dmesg line) for every line of every record."""
        for r in self.records:
            for line in r.lines:
                yield r.seq, f'{r.stamp()} {line}'


def unescape(text):
    """A record's text as the kernel printed it: \\xNN back to the byte."""
    raw = ESCAPE_RE.sub(lambda m: bytes([int(m.group(1), 16)]), text.encode('utf-8', 'replace'))
    return raw.decode('utf-8', 'replace').rstrip('\n')


def parse(text):
    """The Log a recorder's FILE holds. A line that is neither a record, a
    KEY=VALUE line nor the recorder's own (the last one, when the recorder
    was killed while writing it) is left out."""
    log = Log()
    prev = None
    for line in text.split('\n'):
        if line.startswith(' ') or not line:
            continue
        if line.startswith(LOST_MARK):
            log.lost.append(line[len(LOST_MARK):].strip())
            continue
        if line.startswith(END_MARK):
            log.ended = True
            continue
        m = HEADER_RE.match(line)
        if not m:
            continue
        seq = int(m.group('seq'))
        if prev is not None and seq != prev + 1:
            if seq == prev + 2:
                log.lost.append(f'record {prev + 1} is missing')
            elif seq > prev + 2:
                log.lost.append(f'records {prev + 1} to {seq - 1} are missing')
            else:
                log.lost.append(f'record {seq} follows record {prev}')
        prev = seq
        log.records.append(Record(seq, int(m.group('usec')), unescape(m.group('text')),
                                  int(m.group('prio')) & 7))
    return log


def new_records(fd):
    """The lines of the records /dev/kmsg, open at fd with O_NONBLOCK, has
    that fd has not read yet, unescaped; None in place of records that were
    overwritten before they were read. A suite opens /dev/kmsg, seeks to its
    end, and calls this after each case: what the case made the kernel
    say."""
    out = []
    while True:
        try:
            rec = os.read(fd, READ_SIZE)
        except BlockingIOError:
            break
        except BrokenPipeError:
            out.append(None)
            continue
        if not rec:
            break
        m = HEADER_RE.match(rec.decode('utf-8', 'replace').split('\n', 1)[0])
        if m:
            out.extend(unescape(m.group('text')).split('\n'))
    return out


def dmesg(text):
    """The records of a recorder's FILE, as dmesg prints them."""
    return ''.join(f'{line}\n' for _, line in parse(text).lines())


def record(path):
    """Copies /dev/kmsg to path until SIGTERM (see the module's doc)."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(time.monotonic()))
    # The OOM killer takes another process: the log is the run's evidence.
    try:
        with open('/proc/self/oom_score_adj', 'w', encoding='ascii') as f:
            f.write('-1000')
    except OSError:
        pass
    fd = os.open(DEVICE, os.O_RDONLY | os.O_NONBLOCK)
    with open(path, 'wb') as out:
        while True:
            # A SIGTERM seen before this read pass: the pass reads every
            # record written before it was sent, then the recorder ends.
            stopping = bool(stop)
            while True:
                if stopping and time.monotonic() - stop[0] > DRAIN_SECS:
                    out.write(f'{LOST_MARK} stopped {DRAIN_SECS} s after SIGTERM '
                              'with the log still growing\n'.encode())
                    out.flush()
                    return 0
                try:
                    rec = os.read(fd, READ_SIZE)
                except BlockingIOError:
                    break
                except BrokenPipeError:
                    out.write(f'{LOST_MARK} /dev/kmsg said EPIPE: records were '
                              'overwritten before they were read\n'.encode())
                    continue
                except InterruptedError:
                    continue
                if not rec:
                    break
                out.write(rec if rec.endswith(b'\n') else rec + b'\n')
            if stopping:
                out.write(f'{END_MARK} stopped on SIGTERM, the log read to its end\n'.encode())
                out.flush()
                return 0
            out.flush()
            try:
                select.select([fd], [], [], 0.5)
            except InterruptedError:
                pass


def mark(text, timeout=10):
    """Writes text to the kernel log; returns the sequence number of the
    first record written from then on (text's own, or one the kernel wrote
    just before it)."""
    fd = os.open(DEVICE, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, text.encode() + b'\n')
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                rec = os.read(fd, READ_SIZE)
            except (BlockingIOError, BrokenPipeError, InterruptedError):
                select.select([fd], [], [], 0.1)
                continue
            m = HEADER_RE.match(rec.decode('utf-8', 'replace').split('\n', 1)[0])
            if m:
                return int(m.group('seq'))
        return None
    finally:
        os.close(fd)


def main(argv):
    if len(argv) != 3 or argv[1] not in ('record', 'mark', 'dmesg'):
        sys.exit(__doc__)
    if argv[1] == 'record':
        return record(argv[2])
    if argv[1] == 'mark':
        seq = mark(argv[2])
        if seq is None:
            return 1
        print(seq)
        return 0
    with open(argv[2], encoding='utf-8', errors='replace') as f:
        sys.stdout.write(dmesg(f.read()))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
