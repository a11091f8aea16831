#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compares the devmem-bind runs of the C core and the Rust core.

Usage: parity.py C_TAP RUST_TAP

Each run logs, per case, '# <case>: <what the kernel answered>' (errno,
extack message and attributes, as the YNL cli prints them). Prints two
result lines for results.py: whether the C core passes the scenarios (they
are written from its code, so this checks the scenarios), and whether the
Rust core answered every case exactly as the C core did.
"""

import sys


def answers(path):
    """The per-case answer lines and the TAP verdicts of a run."""
    got, verdicts = {}, {}
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None, None
    for line in lines:
        if line.startswith('# ') and ': ' in line and not line.startswith('# expected'):
            name, _, answer = line[2:].partition(': ')
            got[name] = answer
        elif line.startswith('ok ') or line.startswith('not ok '):
            ok = line.startswith('ok ')
            name = line.split(' ', 3 if not ok else 2)[-1]
            verdicts[name] = ok
    return got, verdicts


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    c, c_ok = answers(sys.argv[1])
    rust, _ = answers(sys.argv[2])
    if c is None:
        print('devmem-bind (C core)\tfail\tno output: the VM did not run it')
    else:
        bad = sorted(n for n, ok in c_ok.items() if not ok)
        if bad or not c_ok:
            print(f'devmem-bind (C core)\tfail\t{len(bad)} of {len(c_ok)} cases fail: '
                  + '; '.join(bad))
        else:
            print(f'devmem-bind (C core)\tpass\t{len(c_ok)} cases')
    if c is None or rust is None:
        print('parity\tfail\tmissing a run to compare')
        return 0
    diff = []
    for name in sorted(set(c) | set(rust)):
        if c.get(name) != rust.get(name):
            diff.append(f'{name}: C said {c.get(name)!r}, Rust said {rust.get(name)!r}')
    if diff or not c:
        print(f'parity\tfail\t{len(diff)} of {len(set(c) | set(rust))} cases differ: '
              + ' | '.join(diff))
    else:
        print(f'parity\tpass\t{len(c)} cases, same errno, extack message and attributes')
    return 0


if __name__ == '__main__':
    sys.exit(main())
