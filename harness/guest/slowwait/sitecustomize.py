# SPDX-License-Identifier: GPL-2.0
"""Upstream's fixed waits, stretched for the debug kernel.

Under `make check DEBUG=1` (KASAN, lockdep and kmemleak, under TCG) the
steps the Python kselftests wait for take several times longer than on
the kernels their waits were sized for. run.sh then puts this directory
on PYTHONPATH with HARNESS_SLOW_WAITS=F, and Python loads this file
before the test: it multiplies by F the waits of the tests' library
(net/lib/py/utils.py): wait_port_listen()'s deadline and a command's
timeout. The tests themselves run unchanged.

A longer wait is no excuse of its own. A wait that ends past the test's
own time says so in the case's output, and one that times out even so
prints the evidence results.py needs to call the case slow rather than
broken ("harness-progress: ", expectations.debug) only when the test's
processes were working through the wait: alive and using CPU. A listener
that died, or lives on blocked, gives no such line, and its timeout
fails the run.
"""

import importlib.abc
import importlib.machinery
import inspect
import os
import sys
import time

FACTOR = float(os.environ.get('HARNESS_SLOW_WAITS') or 1)
CLK_TCK = os.sysconf('SC_CLK_TCK')
# Busy for at least this share of the wait: working, not waiting.
BUSY_SHARE = 0.25


def pr(msg):
    print(f'# {msg}', flush=True)


def processes():
    """{pid: (ppid, comm, cpu seconds)} of every process."""
    procs = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index('(') + 1:stat.rindex(')')]
        fields = stat[stat.rindex(')') + 2:].split()
        # state ppid ... utime (14th field, 12th here) stime
        procs[int(pid)] = (int(fields[1]), comm,
                           (int(fields[11]) + int(fields[12])) / CLK_TCK)
    return procs


def descendants():
    """{pid: (comm, cpu seconds)} of this test's processes, itself left
    out: the commands it started and theirs."""
    procs = processes()
    mine, todo = {}, [os.getpid()]
    while todo:
        parent = todo.pop()
        for pid, (ppid, comm, cpu) in procs.items():
            if ppid == parent and pid not in mine:
                mine[pid] = (comm, cpu)
                todo.append(pid)
    return mine


def cpu_since(before, after):
    """CPU seconds the processes alive in `after` used since `before`."""
    used = {}
    for pid, (comm, cpu) in after.items():
        used[pid] = (comm, cpu - before.get(pid, (comm, 0.0))[1])
    return used


def patch_utils(utils):
    wait_port_listen = utils.wait_port_listen
    params = inspect.signature(wait_port_listen)

    def slow_wait_port_listen(*args, **kwargs):
        bound = params.bind(*args, **kwargs)
        bound.apply_defaults()
        deadline = bound.arguments['deadline']
        bound.arguments['deadline'] = deadline * FACTOR
        port = bound.arguments['port']
        start, before = time.monotonic(), descendants()
        try:
            wait_port_listen(*bound.args, **bound.kwargs)
        except Exception:
            took = time.monotonic() - start
            used = cpu_since(before, descendants())
            busy = {pid: u for pid, u in used.items() if u[1] >= BUSY_SHARE * took}
            names = ', '.join(f'{c} (pid {p}, {s:.1f} s of CPU)'
                              for p, (c, s) in sorted(busy.items()))
            if busy:
                pr(f'harness-progress: port {port} not listening after '
                   f'{took:.1f} s (the test allows {deadline} s); the '
                   f'test\'s processes were working: {names}')
            else:
                pr(f'harness: port {port} not listening after {took:.1f} s '
                   f'and no process of the test was working')
            raise
        took = time.monotonic() - start
        if took > deadline:
            pr(f'harness: port {port} listening after {took:.1f} s, past '
               f'the test\'s {deadline} s (x{FACTOR:g} under the debug '
               f'kernel)')

    utils.wait_port_listen = slow_wait_port_listen

    # Every wait for a command goes through process(): a foreground
    # command's timeout (cmd() passes its own on), a background one's
    # at its exit.
    process = utils.cmd.process
    process_params = inspect.signature(process)

    def slow_process(*args, **kwargs):
        bound = process_params.bind(*args, **kwargs)
        bound.apply_defaults()
        bound.arguments['timeout'] *= FACTOR
        return process(*bound.args, **bound.kwargs)

    utils.cmd.process = slow_process


class SlowWaits(importlib.abc.MetaPathFinder):
    """Patches the tests' library (net.lib.py.utils) as it is imported,
    before any test module takes its names."""

    def find_spec(self, fullname, path, target=None):
        if not fullname.endswith('lib.py.utils'):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            if hasattr(module, 'wait_port_listen') and hasattr(module, 'cmd'):
                patch_utils(module)

        spec.loader.exec_module = exec_and_patch
        return spec


if FACTOR > 1:
    sys.meta_path.insert(0, SlowWaits())
