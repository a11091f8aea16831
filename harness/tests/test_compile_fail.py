#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of compile_fail.py's reading of examples (the compiling needs a
kernel build; make check runs that)."""

import os
import subprocess
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


class Twin(unittest.TestCase):
    """The twin: the example without its misuse, which must compile."""

    def test_misuse_lines_go_and_twin_lines_come_in_place(self):
        [(_, code, body)] = Examples.read(self, '''\
            /// ```ignore,compile_fail,E0133
            /// use kernel::sync::percpu_ref::{PercpuRef, Release};
            ///
            /// fn kill_twice<T: Release>(count: &PercpuRef<T>) {
            ///     count.kill(); // misuse
            ///     count.kill();    //misuse
            /// #   // twin: // SAFETY: the initial reference, once.
            /// #   // twin: unsafe { count.kill() };
            /// }
            /// ```
            ''')
        self.assertEqual(code, 'E0133')
        # The example keeps every line: the twin lines are comments there.
        self.assertIn('    count.kill(); // misuse', body.split('\n'))
        self.assertIn('  // twin: unsafe { count.kill() };', body.split('\n'))
        self.assertEqual(compile_fail.twin(body).split('\n'),
                         ['use kernel::sync::percpu_ref::{PercpuRef, Release};', '',
                          'fn kill_twice<T: Release>(count: &PercpuRef<T>) {',
                          '  // SAFETY: the initial reference, once.',
                          '  unsafe { count.kill() };',
                          '}'])

    def test_a_changed_signature(self):
        body = ('fn attach(buf: &DmaBuf, dev: &Device) -> Result<Attachment> { // misuse\n'
                '// twin: fn attach(buf: &DmaBuf, dev: &Device<Bound>) -> Result<Attachment> {\n'
                '    Attachment::new(buf, dev)\n'
                '}')
        self.assertEqual(compile_fail.twin(body).split('\n'),
                         ['fn attach(buf: &DmaBuf, dev: &Device<Bound>) -> Result<Attachment> {',
                          '    Attachment::new(buf, dev)', '}'])

    def test_no_misuse_marked_is_no_twin(self):
        # Without a marked misuse there is nothing to tell the error from a
        # typo; a twin line alone does not make one, nor does the word in
        # a comment.
        self.assertIsNone(compile_fail.twin('let a = 1;\n// twin: let b = 2;'))
        self.assertIsNone(compile_fail.twin('// the misuse is below\nf();'))
        self.assertIsNone(compile_fail.twin('f(); // not a misuse here'))

    def test_every_example_of_the_tree_has_a_twin(self):
        # What make check compiles: each compile_fail example of our Rust
        # files marks its misuse, and its twin differs from it only there.
        top = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
        files = subprocess.run(['git', '-C', top, 'ls-files', '*.rs'], capture_output=True,
                               text=True, check=True).stdout.split()
        n = 0
        for path in files:
            for line, code, body in compile_fail.examples(os.path.join(top, path)):
                n += 1
                with self.subTest(example=f'{path}:{line}'):
                    self.assertIsNotNone(code, 'the fence names no error code')
                    pair = compile_fail.twin(body)
                    self.assertIsNotNone(pair, 'no line is marked // misuse')
                    self.assertNotIn('misuse', pair)
                    self.assertNotIn('twin:', pair)
        self.assertGreater(n, 0)


def checker(script):
    """Runs check.sh's checker function on `script` (shell): the lines it
    leaves in the static table."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, '..', 'check.sh'), encoding='utf-8') as f:
        src = f.read()
    fn = 'checker() {' + src.split('\nchecker() {', 1)[1].split('\n}\n', 1)[0] + '\n}\n'
    with tempfile.TemporaryDirectory() as d:
        static = os.path.join(d, 'static.tsv')
        subprocess.run(['bash', '-c', f'set -euo pipefail\nstatic={static}\n{fn}{script}'],
                       check=True, capture_output=True, text=True)
        with open(static, encoding='utf-8') as f:
            return f.read().split('\n')[:-1]


class CheckerLine(unittest.TestCase):
    """check.sh runs compile_fail.py and stack_frames.py through `checker`:
    a crash must leave a failed line, not none."""

    def test_result_lines_pass_through(self):
        self.assertEqual(checker("checker x printf 'x\\tpass\\t3 examples\\n'"),
                         ['x\tpass\t3 examples'])
        self.assertEqual(checker("checker x sh -c 'printf \"x\\tfail\\tbad\\n\"; exit 1'"),
                         ['x\tfail\tbad'])

    def test_a_crash_is_a_failure(self):
        lines = checker("checker x python3 -c 'raise ValueError(1)'")
        self.assertEqual(len(lines), 1)
        self.assertTrue(lines[0].startswith('x\tfail\tno result line (exit status 1)'), lines)
        lines = checker("checker x sh -c 'printf \"x\\tpass\\tok\\n\"; exit 2'")
        self.assertEqual(lines[0], 'x\tpass\tok')
        self.assertTrue(lines[1].startswith('x\tfail\texit status 2 after a pass line'), lines)

    def test_compile_fail_crash_prints_its_own_failed_line(self):
        here = os.path.dirname(os.path.abspath(__file__))
        p = subprocess.run([sys.executable, os.path.join(here, '..', 'compile_fail.py'),
                            '/nonexistent', '/nonexistent', 'x.rs'],
                           capture_output=True, text=True, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertTrue(p.stdout.startswith('compile-fail\tfail\tcompile_fail.py crashed: '
                                            'FileNotFoundError'), p.stdout)


if __name__ == '__main__':
    unittest.main()
