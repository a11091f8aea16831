#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A profile of one CPU from the instruction counter's counts.

    insns.py COUNTS KALLSYMS VCPU BYTES OUT

COUNTS is a file harness/insncount.c wrote (VADDR INSNS EXECS_VCPU0 ...,
one line per translated block), KALLSYMS a copy of /proc/kallsyms read
as root. Each block's instructions times the runs of vCPU VCPU are
summed per function (the block's start address names it; blocks in user
space count as "[user]"), per KiB of BYTES received. Writes "FUNCTION<tab>N"
lines to OUT, most first (N in instructions per KiB), and prints

    INSNS BLOCKS

the instructions and translated blocks per KiB in all.

Rust functions are named from their mangled symbols (v0): the type and
method, "<Type as Trait>::method" for a trait's.
"""

import bisect
import re
import sys

USER_END = 0xFFFF800000000000


def idents(sym):
    """The identifiers of a v0 symbol's paths, in order, with whether each
    is a crate's root: (is_crate, name) pairs. Tags, disambiguators
    (s<base62>_) and back references (B<base62>_) carry no names."""
    s, out, i, tag = sym[2:], [], 0, ""
    while i < len(s):
        c = s[i]
        if c.isdigit():
            m = re.match(r"(\d+)_?", s[i:])
            n = int(m.group(1))
            i += len(m.group(0))
            if n:
                out.append((tag == "C", s[i : i + n]))
            i += n
            tag = ""
        elif c in "sB":
            # Up to and with the base-62 number's "_".
            j = s.find("_", i)
            i = len(s) if j < 0 else j + 1
        else:
            tag = c
            i += 1
    return out


def demangle(sym):
    """A short name for a Rust v0 symbol; other names as they are."""
    if not sym.startswith("_R"):
        return sym
    ids = idents(sym)
    names = [n for _, n in ids]
    roots = [k for k, (c, _) in enumerate(ids) if c]
    if len(ids) < 2 or not roots:
        return sym
    if sym.startswith("_RNvX"):
        # A trait's method: the type's path, then the trait's.
        if len(roots) >= 2 and roots[1] >= 1 and len(ids) - roots[1] >= 3:
            return "<%s as %s>::%s" % (names[roots[1] - 1], names[-2], names[-1])
    if sym.startswith("_RI"):
        # A generic function: its path, then its arguments' (each from a
        # crate's root).
        end = roots[1] if len(roots) >= 2 else len(ids)
        return "%s<%s>" % ("::".join(names[max(0, end - 2) : end]), names[-1])
    if sym.startswith("_RNC"):
        return "%s::{closure}" % "::".join(names[-2:])
    return "::".join(names[-2:])


def load_syms(path):
    syms = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[1] in "tTwW":
                syms.append((int(p[0], 16), p[2]))
    syms.sort()
    return syms


def main():
    counts, kallsyms, vcpu, nbytes, out = sys.argv[1:6]
    vcpu, kib = int(vcpu), int(nbytes) / 1024
    syms = load_syms(kallsyms)
    addrs = [a for a, _ in syms]
    per = {}
    insns = blocks = 0
    with open(counts) as f:
        for line in f:
            p = line.split()
            runs = int(p[2 + vcpu])
            if not runs:
                continue
            vaddr, n = int(p[0], 16), int(p[1])
            if vaddr < USER_END:
                name = "[user]"
            else:
                k = bisect.bisect_right(addrs, vaddr) - 1
                name = demangle(syms[k][1]) if k >= 0 else hex(vaddr)
            per[name] = per.get(name, 0) + n * runs
            insns += n * runs
            blocks += runs
    with open(out, "w") as f:
        for name, n in sorted(per.items(), key=lambda kv: -kv[1]):
            print("%s\t%.1f" % (name, n / kib), file=f)
    print("%.0f %.0f" % (insns / kib, blocks / kib))


if __name__ == "__main__":
    main()
