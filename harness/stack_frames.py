#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The stack frames of the Rust objects, against the kernel's frame limit.

Usage: stack_frames.py BUILD_DIR

C code gets -Wframe-larger-than=CONFIG_FRAME_WARN from the kernel's build;
rustc has no such warning, so this does it for the Rust objects of the
build (the kernel crate, the devmem core, igb_rs and its KUnit cases): the
stack each function reserves (`sub $N, %rsp` in its prologue, which leaves
out the few saved registers) must stay within CONFIG_FRAME_WARN. A kernel
stack is 16 KiB on x86_64; a KUnit case of igb_rs reserving 8 KiB, calling
a helper reserving 6.5 KiB, overran it and, without CONFIG_VMAP_STACK,
wrote over the memory after the stack unnoticed.

Prints one line for make check's results (name, pass or fail, detail),
a failed one when it crashes, and lists the functions over the limit on
stderr.
"""

import os
import re
import subprocess
import sys
import traceback

OBJECTS = (
    'rust/kernel.o',
    'net/core/devmem_rs/devmem_rs.o',
    'drivers/net/ethernet/intel/igb_rs/igb_rs.ko',
)

FUNC = re.compile(r'^[0-9a-f]+ <(.*)>:$')
# llvm-objdump prints the immediate in hex (LLVM 19) or decimal (14).
SUB_RSP = re.compile(r'\bsubq?\s+\$(0x[0-9a-f]+|[0-9]+),\s*%rsp')


def frame_limit(build):
    """CONFIG_FRAME_WARN of the build's configuration (0 when unset)."""
    with open(os.path.join(build, '.config'), encoding='utf-8') as f:
        for line in f:
            if line.startswith('CONFIG_FRAME_WARN='):
                return int(line.split('=', 1)[1])
    return 0


def frames(path):
    """(bytes, symbol) for every function of the object at path that
    reserves stack."""
    out = subprocess.run(['llvm-objdump', '-d', '--no-show-raw-insn', path],
                         capture_output=True, text=True, check=True).stdout
    fn, found, seen = None, [], set()
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            fn = m.group(1)
            continue
        m = SUB_RSP.search(line)
        if m and fn and fn not in seen:
            seen.add(fn)
            found.append((int(m.group(1), 0), fn))
    return found


def demangle(names):
    p = subprocess.run(['llvm-cxxfilt'], input='\n'.join(names), capture_output=True,
                       text=True, check=False)
    out = p.stdout.rstrip('\n').split('\n')
    return out if p.returncode == 0 and len(out) == len(names) else names


def judge(build):
    """Prints the result line; returns the exit status."""
    limit = frame_limit(build)
    if limit <= 0:
        print('stack-frames\tfail\tCONFIG_FRAME_WARN is not set in the build')
        return 1
    objs = [o for o in OBJECTS if os.path.exists(os.path.join(build, o))]
    if len(objs) != len(OBJECTS):
        missing = sorted(set(OBJECTS) - set(objs))
        print(f'stack-frames\tfail\tnot built: {", ".join(missing)}')
        return 1
    all_frames = []
    for o in objs:
        all_frames += [(n, fn, o) for n, fn in frames(os.path.join(build, o))]
    if not all_frames:
        print(f'stack-frames\tfail\tno function reserving stack found in {", ".join(objs)}')
        return 1
    over = sorted((f for f in all_frames if f[0] > limit), reverse=True)
    big = max(all_frames)
    names = demangle([fn for _, fn, _ in over] + [big[1]])
    for (n, _, o), name in zip(over, names):
        print(f'{n} bytes: {name} ({o})', file=sys.stderr)
    if over:
        worst = ', '.join(f'{name} {n}' for (n, _, _), name in zip(over[:3], names))
        print(f'stack-frames\tfail\t{len(over)} Rust functions reserve more than '
              f'CONFIG_FRAME_WARN ({limit} bytes): {worst}')
        return 1
    print(f'stack-frames\tpass\t{len(all_frames)} Rust functions reserve stack, the most '
          f'{big[0]} bytes ({names[-1]}), within CONFIG_FRAME_WARN ({limit})')
    return 0


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        return judge(sys.argv[1])
    except Exception as e:  # pylint: disable=broad-exception-caught
        # A crash (no llvm-objdump, an unreadable object) must fail the
        # check, not drop its line.
        traceback.print_exc()
        what = ' '.join(str(e).split())
        print(f'stack-frames\tfail\tstack_frames.py crashed: {type(e).__name__}: {what}')
        return 1


if __name__ == '__main__':
    sys.exit(main())
