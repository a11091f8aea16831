# SPDX-License-Identifier: GPL-2.0
"""Tests of modcycles.py, the check that a crate's modules import each
other in layers."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import modcycles  # noqa: E402


def crate(files):
    """A crate directory named c holding files {path: source}."""
    top = tempfile.mkdtemp()
    d = os.path.join(top, 'c')
    for path, src in files.items():
        p = os.path.join(d, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'w', encoding='utf-8') as f:
            f.write(src)
    return d


class ModCycles(unittest.TestCase):
    def test_a_module_and_one_that_imports_it_back_are_a_circle(self):
        d = crate({
            'c.rs': 'mod dev;\nmod queue;\n',
            'dev.rs': 'use crate::{\n    queue::Queue,\n    regs::*, //\n};\n',
            'queue.rs': 'use crate::dev::Dev;\n',
        })
        g = modcycles.graph(modcycles.modules(d))
        self.assertEqual(modcycles.circles(g), [['dev', 'queue', 'dev']])
        self.assertEqual(modcycles.main(['x', d]), 1)

    def test_layers_pass_and_the_root_is_left_out(self):
        d = crate({
            'c.rs': 'use crate::dev::Dev;\nconst N: usize = 4;\n',
            'dev.rs': 'use crate::{queue::Queue, N};\n',
            'queue.rs': 'use crate::hw::{self, Regs};\nfn f() { crate::N; }\n',
            'hw/mod.rs': 'mod reset;\n',
            'hw/reset.rs': 'use super::Regs;\n',
        })
        g = modcycles.graph(modcycles.modules(d))
        self.assertEqual(g, {'dev': {'queue'}, 'queue': {'hw'}, 'hw': set()})
        self.assertEqual(modcycles.layers(g), [['hw'], ['queue'], ['dev']])
        self.assertEqual(modcycles.main(['x', d]), 0)

    def test_a_submodule_s_imports_are_its_module_s(self):
        d = crate({
            'c.rs': '',
            'hw/mod.rs': 'mod stats;\n',
            'hw/stats.rs': 'fn f(n: &crate::dev::Dev) {}\n',
            'dev.rs': 'use crate::hw;\n',
        })
        self.assertEqual(modcycles.main(['x', d]), 1)

    def test_paths_in_comments_and_docs_are_not_imports(self):
        d = crate({
            'c.rs': '',
            'dev.rs': 'use crate::queue::Queue;\n',
            'queue.rs': '//! Run by [`crate::dev::Dev`].\n// crate::dev too\n',
        })
        self.assertEqual(modcycles.main(['x', d]), 0)


if __name__ == '__main__':
    unittest.main()
