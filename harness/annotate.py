#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""One function of a profiled receive run, instruction by instruction.

    annotate.py HOSTCPU LABEL OBJECT FUNCTION [LABEL...]

HOSTCPU is a profile boot's results directory's hostcpu/ (make bench
PROFILE=1, or vm.sh's bench-profile-drivers suite, which profiles the two
drivers alone), where each profiled run LABEL (a receive mode, or
"igb_rs.1", "igb.2", ...) left its instruction counter's counts
(LABEL.counts, harness/insncount.c's: VADDR INSNS EXECS_VCPU0 ..., a
line per translated block), the kernel's addresses (LABEL.kallsyms) and
"VCPU BYTES" (LABEL.run). OBJECT is the object FUNCTION is in (vmlinux,
or a module's .ko) of the kernel the boot ran, FUNCTION a symbol, or a
part of one that names one function of OBJECT.

Prints FUNCTION's disassembly (llvm-objdump, with relocations: a call in
a module names its callee), each instruction with the times the
receiver's CPU ran it per KiB received (the mean over the LABELs), and
the total, which is the function's line in LABEL.per. The hot lines are
where a driver's cycles go: bounds checks, moves, calls that were meant
to be inlined.
"""

import bisect
import os
import re
import shutil
import subprocess
import sys


def objdump():
    for name in ("llvm-objdump-22", "llvm-objdump-19", "llvm-objdump"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("annotate.py: no llvm-objdump")


def symbol(obj, part):
    """(name, address, size) of the one function symbol of obj whose
    name is part or contains it."""
    out = subprocess.run(
        [objdump().replace("objdump", "nm"), "-S", "--defined-only", obj],
        capture_output=True, text=True, check=True,
    ).stdout
    found = []
    for line in out.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tTwW" and part in p[3]:
            found.append((p[3], int(p[0], 16), int(p[1], 16)))
    exact = [f for f in found if f[0] == part]
    if exact:
        return exact[0]
    if len(found) != 1:
        sys.exit("annotate.py: %d symbols of %s match %s%s" % (
            len(found), obj, part,
            "".join("\n  " + f[0] for f in found[:20])))
    return found[0]


def module_of(obj):
    """The module name kallsyms gives the symbols of obj, a module's .ko
    ("[igb_rs]"), or None for the kernel image."""
    base = os.path.basename(obj)
    if not base.endswith(".ko"):
        return None
    return "[%s]" % base[:-3].replace("-", "_")


def runtime_address(kallsyms, name, module=None):
    """Where name of module (None: the kernel image's) is in kallsyms. A
    function the kernel crate inlines into its callers may be in both a
    module and the image, under the same name."""
    with open(kallsyms) as f:
        for line in f:
            p = line.split()
            if len(p) < 3 or p[2] != name:
                continue
            if (p[3] if len(p) > 3 else None) == module:
                return int(p[0], 16)
    sys.exit("annotate.py: %s%s is not in %s" % (
        name, " " + module if module else "", kallsyms))


def disassemble(obj, name):
    """[(address, text)] of function name's instructions, with the
    relocations' lines folded into the instruction before them."""
    out = subprocess.run(
        [objdump(), "-d", "-r", "--no-show-raw-insn",
         "--disassemble-symbols=" + name, obj],
        capture_output=True, text=True, check=True,
    ).stdout
    insns = []
    for line in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(.*)$", line)
        if not m:
            continue
        text = m.group(2).strip()
        if re.match(r"R_X86_64_\w+", text) and insns:
            insns[-1] = (insns[-1][0], insns[-1][1] + "    ; " + text)
            continue
        insns.append((int(m.group(1), 16), text))
    return insns


def attribute(insns, start, size, base, counts, vcpu, kib):
    """The times each of a function's instructions ran per KiB: insns
    are its [(address, text)] in the object, where it starts at start
    (size bytes long), and at base in the running kernel; counts the
    lines of a counts file, vcpu the CPU whose runs count, kib the KiB
    received. A block's runs go to its instructions, from its first on."""
    addrs = [a for a, _ in insns]
    runs = [0.0] * len(insns)
    for line in counts:
        p = line.split()
        vaddr = int(p[0], 16)
        if not base <= vaddr < base + size:
            continue
        execs = int(p[2 + vcpu])
        if not execs:
            continue
        k = bisect.bisect_left(addrs, vaddr - base + start)
        for j in range(k, min(k + int(p[1]), len(insns))):
            runs[j] += execs / kib
    return runs


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    hostcpu, label, obj, part = sys.argv[1:5]
    labels = [label] + sys.argv[5:]
    name, start, size = symbol(obj, part)
    insns = disassemble(obj, name)
    runs = [0.0] * len(insns)
    for lab in labels:
        base = runtime_address("%s/%s.kallsyms" % (hostcpu, lab), name,
                               module_of(obj))
        with open("%s/%s.run" % (hostcpu, lab)) as f:
            vcpu, nbytes = (int(x) for x in f.read().split())
        # The mean over the runs.
        kib = nbytes / 1024 * len(labels)
        with open("%s/%s.counts" % (hostcpu, lab)) as f:
            got = attribute(insns, start, size, base, f, vcpu, kib)
        runs = [a + b for a, b in zip(runs, got)]
    total = sum(runs)
    print("%s (%s): %.1f instructions per KiB (%s)" % (
        name, obj, total, ", ".join(labels)))
    for (addr, text), n in zip(insns, runs):
        print("%8s %6x  %s" % ("%.2f" % n if n else "", addr - start, text))


if __name__ == "__main__":
    main()
