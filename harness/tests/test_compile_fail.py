#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of compile_fail.py's reading of examples (the compiling needs a
kernel build; make check runs that)."""

import os
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import compile_fail  # noqa: E402  pylint: disable=wrong-import-position


class Examples(unittest.TestCase):
    def read(self, text):
        with tempfile.NamedTemporaryFile('w', suffix='.rs', delete=False) as f:
            f.write(textwrap.dedent(text))
        try:
            return compile_fail.examples(f.name)
        finally:
            os.unlink(f.name)

    def test_only_compile_fail_blocks_with_their_code(self):
        found = self.read('''\
            /// Runs:
            ///
            /// ```
            /// let a = 1;
            /// ```
            ///
            /// Must not compile:
            ///
            /// ```ignore,compile_fail,E0133
            /// # use kernel::sync::percpu_ref::PercpuRef;
            /// fn f(c: &PercpuRef<T>) {
            ///     c.put();
            /// }
            /// ```
            pub fn x() {}
            /// ```compile_fail
            /// bad
            /// ```
            ''')
        self.assertEqual(len(found), 2)
        line, code, body = found[0]
        self.assertEqual((line, code), (9, 'E0133'))
        # Hidden lines are compiled; the doc prefix is gone.
        self.assertEqual(body.split('\n'),
                         ['use kernel::sync::percpu_ref::PercpuRef;',
                          'fn f(c: &PercpuRef<T>) {', '    c.put();', '}'])
        self.assertEqual(found[1][1], None)


if __name__ == '__main__':
    unittest.main()
