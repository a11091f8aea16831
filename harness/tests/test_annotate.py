#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of harness/annotate.py: a function of an object, instruction by
instruction, with the runs a profiled run's counts give each."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
ANNOTATE = os.path.join(HARNESS, 'annotate.py')
sys.path.insert(0, HARNESS)
import annotate  # noqa: E402  pylint: disable=wrong-import-position

SOURCE = '''
int other(int x) { return x * 3 + 1; }
int sum(const int *p, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += p[i] ^ i;
	return s;
}
'''
BASE = 0xffffffffa0001000


class AttributeTest(unittest.TestCase):
    """Block counts, spread over the instructions of their blocks."""

    INSNS = [(0x10, 'a'), (0x12, 'b'), (0x15, 'c'), (0x19, 'd'), (0x1c, 'e')]

    def test_blocks_count_from_their_first_instruction(self):
        counts = [
            # Two instructions from the start, 8 runs on vCPU 1.
            '%x 2 5 8' % BASE,
            # Three from the third, 4 runs on vCPU 1.
            '%x 3 0 4' % (BASE + 5),
            # Outside the function: not counted.
            '%x 4 9 9' % (BASE + 0x20),
            '%x 4 9 9' % (BASE - 2),
        ]
        runs = annotate.attribute(self.INSNS, 0x10, 0x20, BASE, counts, 1, 2.0)
        self.assertEqual(runs, [4.0, 4.0, 2.0, 2.0, 2.0])

    def test_other_cpus_and_unrun_blocks_count_nothing(self):
        counts = ['%x 5 7 0' % BASE]
        runs = annotate.attribute(self.INSNS, 0x10, 0x20, BASE, counts, 1, 1.0)
        self.assertEqual(runs, [0.0] * 5)

    def test_a_block_ends_with_the_function(self):
        counts = ['%x 9 1 0' % (BASE + 9)]
        runs = annotate.attribute(self.INSNS, 0x10, 0x20, BASE, counts, 0, 1.0)
        self.assertEqual(runs, [0.0, 0.0, 0.0, 1.0, 1.0])


def tool(name):
    """The newest of make setup's LLVM tools named name."""
    for n in (name + '-22', name + '-19', name):
        if shutil.which(n):
            return n
    raise RuntimeError(name + ' is missing: make setup installs it')


class AnnotateTest(unittest.TestCase):
    """annotate.py on an object clang built, with counts of two runs."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        src = os.path.join(self.dir, 'f.c')
        with open(src, 'w') as f:
            f.write(SOURCE)
        self.obj = os.path.join(self.dir, 'f.o')
        subprocess.run([tool('clang'), '-O1', '-c', '-o', self.obj, src], check=True)
        self.insns = annotate.disassemble(self.obj, 'sum')
        name, self.start, self.size = annotate.symbol(self.obj, 'sum')
        self.assertEqual(name, 'sum')

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_file(self, label, base, vcpu, nbytes, counts):
        with open(os.path.join(self.dir, label + '.kallsyms'), 'w') as f:
            f.write('%x t other\n%x t sum\n' % (base - 0x40, base))
        with open(os.path.join(self.dir, label + '.run'), 'w') as f:
            f.write('%d %d\n' % (vcpu, nbytes))
        with open(os.path.join(self.dir, label + '.counts'), 'w') as f:
            f.write(''.join(line + '\n' for line in counts))

    def test_two_runs_give_their_mean(self):
        self.assertGreater(len(self.insns), 4)
        third = self.insns[2][0] - self.start
        # Run 1: vCPU 0, 4 KiB; the whole function once, its third
        # instruction on 10 times more.
        self.run_file('a.1', BASE, 0, 4096, [
            '%x %d 4 0' % (BASE, len(self.insns)),
            '%x 1 40 0' % (BASE + third),
        ])
        # Run 2: vCPU 1, 2 KiB, loaded elsewhere; the first two
        # instructions twice.
        self.run_file('a.2', BASE + 0x1000, 1, 2048, [
            '%x 2 9 2' % (BASE + 0x1000),
        ])
        out = subprocess.run(
            [sys.executable, ANNOTATE, self.dir, 'a.1', self.obj, 'sum', 'a.2'],
            capture_output=True, text=True, check=True).stdout.splitlines()
        self.assertIn('sum (%s): ' % self.obj, out[0])
        lines = out[1:]
        self.assertEqual(len(lines), len(self.insns))
        # Per KiB, the mean of the runs: (4 / 4 + 2 / 2) / 2 for the
        # first two, (4 / 4 + 40 / 4) / 2 for the third, 1 / 2 after.
        want = [1.0, 1.0, 5.5] + [0.5] * (len(self.insns) - 3)
        got = [float(line[:8]) for line in lines]
        self.assertEqual(got, want)
        self.assertIn('%.1f instructions per KiB (a.1, a.2)' % sum(want), out[0])

    def test_a_module_s_copy_of_a_function_is_its_own(self):
        # A kernel crate function inlined into a module: a copy in the
        # image and one in the module, under the same name.
        path = os.path.join(self.dir, 'k.kallsyms')
        with open(path, 'w') as f:
            f.write('ffffffff81000000 t sum\n'
                    'ffffffffa0002000 t sum\t[igb_rs]\n'
                    'ffffffffa0003000 t sum\t[other]\n')
        self.assertEqual(annotate.module_of('/b/drivers/igb_rs.ko'), '[igb_rs]')
        self.assertEqual(annotate.module_of('/b/net-thing.ko'), '[net_thing]')
        self.assertIsNone(annotate.module_of('/b/vmlinux'))
        self.assertEqual(annotate.runtime_address(path, 'sum'), 0xffffffff81000000)
        self.assertEqual(annotate.runtime_address(path, 'sum', '[igb_rs]'),
                         0xffffffffa0002000)
        with self.assertRaises(SystemExit):
            annotate.runtime_address(path, 'sum', '[igb]')

    def test_a_part_of_a_name_must_name_one_function(self):
        with self.assertRaises(SystemExit):
            annotate.symbol(self.obj, 'nothing')


if __name__ == '__main__':
    unittest.main()
