#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Find import circles among the modules of a Rust crate of the tree.

usage: modcycles.py CRATE_DIR

CRATE_DIR holds the crate root, named after the directory (igb_rs/igb_rs.rs),
and its modules, one file each (x.rs) or a directory (x/mod.rs and its
submodules). A module depends on another when it names it through
`crate::` (a `use` or a path in code); a submodule's dependencies are its
top-level module's. The crate root, which declares every module and holds
the crate's constants, is left out.

Prints one line (the number of modules, and the layers from the bottom
when there is no circle) and exits 0; prints each circle and exits 1
otherwise.
"""

import os
import re
import sys


def modules(crate_dir):
    """{top-level module: source of its files} of the crate in crate_dir."""
    root = os.path.basename(os.path.normpath(crate_dir))
    mods = {}
    for dirpath, _, files in os.walk(crate_dir):
        for name in files:
            if not name.endswith('.rs'):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), crate_dir)
            top = rel.split(os.sep)[0]
            top = top[:-3] if top.endswith('.rs') else top
            if top == root:
                continue
            with open(os.path.join(dirpath, name), encoding='utf-8') as f:
                mods[top] = mods.get(top, '') + f.read()
    return mods


def strip_comments(src):
    """The source without // comments (doc comments included)."""
    return re.sub(r'//[^\n]*', '', src)


def names_after_crate(src):
    """The first segment of every `crate::` path of src, `use` groups
    included: `crate::{a, b::c}` gives a and b."""
    out = set()
    for m in re.finditer(r'\bcrate::', src):
        rest = src[m.end():]
        if rest.startswith('{'):
            depth, i = 0, 0
            for i, c in enumerate(rest):
                depth += {'{': 1, '}': -1}.get(c, 0)
                if depth == 0:
                    break
            group = rest[1:i]
            # the first segment of each item at the group's top level
            depth, item = 0, ''
            for c in group + ',':
                if c == ',' and depth == 0:
                    seg = re.match(r'\s*(\w+)', item)
                    if seg:
                        out.add(seg.group(1))
                    item = ''
                    continue
                depth += {'{': 1, '}': -1}.get(c, 0)
                item += c
        else:
            seg = re.match(r'(\w+)', rest)
            if seg:
                out.add(seg.group(1))
    return out


def graph(mods):
    """{module: modules it depends on}."""
    return {m: {d for d in names_after_crate(strip_comments(src))
                if d in mods and d != m}
            for m, src in mods.items()}


def circles(g):
    """Every circle a depth-first walk meets, each as a list of modules
    starting and ending with the same one."""
    state, stack, found = {}, [], []

    def walk(u):
        state[u] = 'open'
        stack.append(u)
        for v in sorted(g[u]):
            if state.get(v) == 'open':
                found.append(stack[stack.index(v):] + [v])
            elif v not in state:
                walk(v)
        stack.pop()
        state[u] = 'done'

    for u in sorted(g):
        if u not in state:
            walk(u)
    return found


def layers(g):
    """The modules by layer, the bottom (depending on none) first."""
    left, out = dict(g), []
    while left:
        layer = sorted(m for m, deps in left.items()
                       if not deps & set(left))
        out.append(layer)
        for m in layer:
            del left[m]
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    g = graph(modules(argv[1]))
    found = circles(g)
    if found:
        for c in found:
            print('import circle: ' + ' -> '.join(c))
        return 1
    print(f'{len(g)} modules, no import circle; layers from the bottom: '
          + ' | '.join(' '.join(layer) for layer in layers(g)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
