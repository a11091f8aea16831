#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that the compile_fail examples of our Rust code do not compile.

The kernel's doctests run as KUnit tests, which cannot hold an example that
must not compile, so upstream marks those `ignore,compile_fail` and nothing
checks them. This compiles each such example of this repository's Rust
files against the kernel crate of a build, with that build's flags, and
checks that it fails with the error code its fence names
(`ignore,compile_fail,E0133`) and with no other.

    compile_fail.py KBUILD_OUT KERNEL_TREE FILE...

Prints one tab-separated result line (`compile-fail`, pass or fail, a
summary) for make check's table, and the details of each failure to
stderr. Exit status 0 when every example fails as it says.
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile

FENCE = re.compile(r'^\s*///\s?```(\S*)\s*$')
CODE = re.compile(r'\bE\d{4}\b')


def examples(path):
    """(line, expected code, source) of each compile_fail example."""
    out = []
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        info = m.group(1).split(',')
        start = i + 1
        body = []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            text = re.sub(r'^\s*///\s?', '', lines[i])
            # Hidden lines are compiled too.
            if text == '#' or text.startswith('# '):
                text = text[2:]
            body.append(text)
            i += 1
        i += 1
        if 'compile_fail' in info:
            codes = [x for x in info if CODE.fullmatch(x)]
            out.append((start, codes[0] if codes else None, '\n'.join(body)))
    return out


def crate_command(build, tree):
    """The rustc command the build used for a crate that depends on the
    kernel crate (the devmem core), as an argument list, without its
    source, outputs and lints."""
    cmdfile = os.path.join(build, 'net/core/devmem_rs/.devmem_rs.o.cmd')
    with open(cmdfile, encoding='utf-8') as f:
        saved = next(l for l in f if l.startswith('savedcmd_'))
    cmd = saved.split(':=', 1)[1].split(';', 1)[0]
    args = []
    skip = False
    for a in shlex.split(cmd):
        if skip:
            skip = False
            continue
        if '=' in a and re.match(r'^[A-Z_]+=', a):
            continue                      # OBJTREE=..., RUST_MODFILE=...
        if a in ('clippy-driver', 'rustc'):
            args.append('rustc')
            continue
        if a == '--out-dir':
            skip = True
            continue
        if a.startswith('--emit') or a.startswith(tree) or a.endswith('.rs'):
            continue
        if re.match(r'^-[DW]', a):
            continue                      # lints: only errors that matter
        args.append(a)
    # The crates to link against: the build's, or (for a check before a
    # build) those of a type-check, in the same layout.
    libs = os.environ.get('COMPILE_FAIL_LIBS')
    if libs:
        args = [libs if a in ('./rust/', './rust') else a for a in args]
    return args


def check(build, tree, files):
    base = crate_command(build, tree)
    env = dict(os.environ, RUSTC_BOOTSTRAP='1')
    problems = []
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            for line, want, body in examples(path):
                n += 1
                where = f'{path}:{line}'
                if want is None:
                    problems.append(f'{where}: the fence names no error code '
                                    '(ignore,compile_fail,EXXXX)')
                    continue
                src = os.path.join(tmp, f'ex{n}.rs')
                with open(src, 'w', encoding='utf-8') as f:
                    f.write('#[allow(unused_imports)]\nuse kernel::prelude::*;\n'
                            '#[allow(dead_code, unused)]\nfn example() {\n'
                            f'{body}\n}}\n')
                p = subprocess.run(base + ['--crate-name', f'compile_fail_{n}',
                                           f'--emit=metadata={tmp}/ex{n}.rmeta', src],
                                   cwd=build, env=env, capture_output=True, text=True)
                got = sorted(set(re.findall(r'^error\[(E\d{4})\]', p.stderr, re.M)))
                other = [l for l in p.stderr.split('\n')
                         if l.startswith('error') and not l.startswith('error[')
                         and 'aborting due to' not in l
                         and 'For more information' not in l]
                if p.returncode == 0:
                    problems.append(f'{where}: compiles, but must fail with {want}')
                elif got != [want] or other:
                    first = (other or [''])[0]
                    problems.append(f'{where}: fails with {", ".join(got) or "no code"}'
                                    f'{" (" + first + ")" if first else ""}, not only {want}')
    return n, problems


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    build, tree, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    n, problems = check(build, tree, files)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f'compile-fail\tfail\t{len(problems)} of {n} examples: '
              + '; '.join(problems))
        return 1
    print(f'compile-fail\tpass\t{n} examples fail to compile, each with its error code')
    return 0


if __name__ == '__main__':
    sys.exit(main())
