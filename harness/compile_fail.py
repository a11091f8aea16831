#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that the compile_fail examples of our Rust code do not compile,
and that they fail for their misuse and for nothing else.

The kernel's doctests run as KUnit tests, which cannot hold an example that
must not compile, so upstream marks those `ignore,compile_fail` and nothing
checks them. This compiles each such example of this repository's Rust
files against the kernel crate of a build, with that build's flags, and
checks that it fails with the error code its fence names
(`ignore,compile_fail,E0133`) and with no other.

An error code alone does not show that the error is the misuse: a typo in
a method name fails with E0599 too. So each example marks its misuse, and
its twin, the same code without the misuse, must compile with no error:

- a line ending in `// misuse` is the misuse (one or more lines); the twin
  leaves it out;
- a comment line `// twin: CODE` (usually hidden, `# // twin: CODE`) is a
  comment in the example and CODE in the twin, where it stands: what the
  correct use puts in place of the misuse.

    /// ```ignore,compile_fail,E0133
    /// fn unbalanced<T: Release>(count: &PercpuRef<T>) {
    ///     count.put(); // misuse
    /// #   // twin: unsafe { count.put() };
    /// }
    /// ```

An example with no `// misuse` line fails the check.

    compile_fail.py KBUILD_OUT KERNEL_TREE FILE...

Prints one tab-separated result line (`compile-fail`, pass or fail, a
summary) for make check's table, and the details of each failure to
stderr; a crash of its own prints a failed line too. Exit status 0 when
every example fails as it says and every twin compiles.
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile
import traceback

FENCE = re.compile(r'^\s*///\s?```(\S*)\s*$')
CODE = re.compile(r'\bE\d{4}\b')
# The markers of the twin (see above).
MISUSE = re.compile(r'//\s*misuse\s*$')
TWIN = re.compile(r'^(\s*)//\s*twin:\s?(.*)$')


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


def twin(body):
    """The twin of an example's source: its `// misuse` lines left out,
    its `// twin: CODE` comments turned into CODE, in place and with their
    indentation. None when no line is marked `// misuse`."""
    out, marked = [], False
    for line in body.split('\n'):
        if MISUSE.search(line):
            marked = True
            continue
        m = TWIN.match(line)
        out.append(m.group(1) + m.group(2) if m else line)
    return '\n'.join(out) if marked else None


def wrap(body):
    """A crate of one function holding the example's code."""
    return ('#[allow(unused_imports)]\nuse kernel::prelude::*;\n'
            '#[allow(dead_code, unused)]\nfn example() {\n'
            f'{body}\n}}\n')


def errors(stderr):
    """The error codes rustc reported, and its error lines without one."""
    got = sorted(set(re.findall(r'^error\[(E\d{4})\]', stderr, re.M)))
    other = [l for l in stderr.split('\n')
             if l.startswith('error') and not l.startswith('error[')
             and 'aborting due to' not in l
             and 'For more information' not in l]
    return got, other


def check(build, tree, files):
    base = crate_command(build, tree)
    env = dict(os.environ, RUSTC_BOOTSTRAP='1')
    problems = []
    n = 0

    def compile_crate(tmp, name, text):
        src = os.path.join(tmp, f'{name}.rs')
        with open(src, 'w', encoding='utf-8') as f:
            f.write(wrap(text))
        return subprocess.run(base + ['--crate-name', name,
                                      f'--emit=metadata={tmp}/{name}.rmeta', src],
                              cwd=build, env=env, capture_output=True, text=True,
                              check=False)

    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            for line, want, body in examples(path):
                n += 1
                where = f'{path}:{line}'
                if want is None:
                    problems.append(f'{where}: the fence names no error code '
                                    '(ignore,compile_fail,EXXXX)')
                    continue
                p = compile_crate(tmp, f'compile_fail_{n}', body)
                got, other = errors(p.stderr)
                if p.returncode == 0:
                    problems.append(f'{where}: compiles, but must fail with {want}')
                elif got != [want] or other:
                    first = (other or [''])[0]
                    problems.append(f'{where}: fails with {", ".join(got) or "no code"}'
                                    f'{" (" + first + ")" if first else ""}, not only {want}')
                pair = twin(body)
                if pair is None:
                    problems.append(f'{where}: no line is marked `// misuse`, so there '
                                    'is no twin to show the error is the misuse')
                    continue
                p = compile_crate(tmp, f'compile_pass_{n}', pair)
                if p.returncode != 0:
                    first = next((l for l in p.stderr.split('\n') if l.startswith('error')),
                                 f'rustc exited with {p.returncode}')
                    problems.append(f'{where}: its twin (without the `// misuse` lines) '
                                    f'does not compile: {first}')
    return n, problems


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    build, tree, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    try:
        n, problems = check(build, tree, files)
    except Exception as e:  # pylint: disable=broad-exception-caught
        # A crash must fail the check, not drop its line.
        traceback.print_exc()
        what = ' '.join(str(e).split())
        print(f'compile-fail\tfail\tcompile_fail.py crashed: {type(e).__name__}: {what}')
        return 1
    if n == 0:
        print('compile-fail\tfail\tno compile_fail example found in '
              f'{len(files)} files')
        return 1
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f'compile-fail\tfail\t{len(problems)} problems in {n} examples: '
              + '; '.join(problems))
        return 1
    print(f'compile-fail\tpass\t{n} examples fail to compile, each with its error '
          'code, and their twins without the misuse compile')
    return 0


if __name__ == '__main__':
    sys.exit(main())
