#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What a devmem core's own code runs, from a profiled run's raw counts.

    coreprof.py rx RUST_DIR C_DIR --object CORE:OBJ [--object CORE:OBJ ...]

A whole-path instruction profile is mostly the driver's, TCP's and the
page pool's, which both cores share and whose counts vary from boot to
boot with batching and lock contention by more than the core's own share
of the path. The core's own code is counted here alone:

  - the functions of each OBJ given for the core: its own object
    (net/core/devmem.o for C, net/core/devmem_rs/devmem_rs.o for Rust)
    and the library objects either core's allocator runs
    (lib/genalloc.o, lib/bitmap.o, lib/find_bit.o) and, where Rust calls
    the C helpers rather than inlining them, rust/helpers/helpers.o:
    passed for both cores alike, so that a call from elsewhere into them
    (the driver's) counts on both sides;
  - the page pool's helpers a provider calls for each buffer it hands
    out or takes back (PROVIDER_HELPERS): C calls one pair, Rust the
    other;
  - the kernel crate's memory-provider abstraction, which the Rust core
    runs on and C has in its object's own code (PROVIDER_MODULES:
    rust/kernel/net/page_pool/provider.rs and netmem.rs; a generic of
    theirs is instantiated in the core's object, a plain function is
    not). Counted on both sides: on the C core only a driver's calls
    into them would run, and igb_rs makes none on receive.

rx: RUST_DIR and C_DIR are the results directories of make bench
PROFILE=1's profiled receive boots (~/.cache/devmem-rs/bench-profile,
whose Rust core ran bench-profile, and bench-profile-c, whose C core ran
bench-profile-devmem), the devmem run's receiver's counts in
hostcpu/devmem.counts, .kallsyms and .run. Prints

  devmem-rx-profile-core: devmem rust core N insns/KiB, c core M insns/KiB, ratio rust/c R: FUNC r/c insns/call, ...
  goal: rust core at most c on devmem-rx-profile-core: met|NOT met (R)

each function's instructions per call (calls: the runs of its first
block) on each core, the largest first. Exits 1 when either core's
functions ran no instructions: a run that never reached the core
compares nothing, or when an object's functions are not in a kernel.
"""

import bisect
import os
import shutil
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "guest"))
import insns  # noqa: E402

# net/core/page_pool.c's functions that only a memory provider calls (C's
# devmem.c the first pair, page_pool_set_pp_info out of line in no other
# caller; Rust's core and io_uring zcrx the second).
PROVIDER_HELPERS = frozenset({
    "page_pool_set_pp_info", "page_pool_clear_pp_info",
    "net_mp_niov_set_page_pool", "net_mp_niov_clear_page_pool",
})
PROVIDER_MODULES = (("kernel", "net", "page_pool", "provider"), ("kernel", "net", "netmem"))


def helper(name):
    """Whether the function named name is counted wherever it is: one of
    PROVIDER_HELPERS, or a Rust function of one of PROVIDER_MODULES."""
    if name in PROVIDER_HELPERS:
        return True
    if not name.startswith("_R"):
        return False
    path = tuple(n for _, n in insns.idents(name))
    return any(path[:len(m)] == m for m in PROVIDER_MODULES)


def object_functions(obj):
    """The names of the functions an object file defines."""
    nm = shutil.which("llvm-nm") or shutil.which("nm")
    if not nm:
        raise OSError("no llvm-nm or nm on PATH")
    out = subprocess.run([nm, "--defined-only", obj], check=True, capture_output=True,
                         text=True).stdout
    return {p[2] for p in (line.split() for line in out.splitlines())
            if len(p) >= 3 and p[1] in "tTwW"}


def object_range(syms, seen, funcs):
    """[lo, hi) of an object's text in the kernel, an object's text being
    linked in one piece: from its first to past its last name that the
    kernel has once, widened over the neighbours whose names are the
    object's too (a static function whose name the kernel has twice, at
    the object's edge). None when none of its names is in the kernel
    once."""
    anchors = [k for k, (_, name) in enumerate(syms) if name in funcs and seen[name] == 1]
    if not anchors:
        return None
    first, last = anchors[0], anchors[-1] + 1
    while first > 0 and syms[first - 1][1] in funcs:
        first -= 1
    while last < len(syms) and syms[last][1] in funcs:
        last += 1
    return syms[first][0], syms[last][0] if last < len(syms) else float("inf")


def core_profile(base, objects, helpers=helper):
    """{name: (insns per KiB, calls per KiB)} of the core's functions in
    the run whose raw counts are base.counts, base.kallsyms, base.run.

    objects: (object, the names it defines) for each of the core's
    objects; ValueError when none of an object's names is in the kernel
    once (an object of another build, or one the kernel does not link). A name may be in the kernel more than once (a static
    function, a generic instantiated in several crates): the copy that is
    an object's is the one inside the object's range. helpers(name):
    whether a function is counted wherever it is."""
    syms = insns.load_syms(base + ".kallsyms")
    seen = defaultdict(int)
    for _, name in syms:
        seen[name] += 1
    ranges = []
    for obj, funcs in objects:
        r = object_range(syms, seen, funcs)
        if not r:
            raise ValueError(f"no function of {obj} is in {base}.kallsyms once")
        ranges.append((r[0], r[1], funcs))
    addrs = [a for a, _ in syms]
    with open(base + ".run", encoding="utf-8") as f:
        vcpu, nbytes = (int(x) for x in f.read().split())
    kib = nbytes / 1024
    out = defaultdict(lambda: [0, 0])
    with open(base + ".counts", encoding="utf-8") as f:
        for line in f:
            p = line.split()
            runs = int(p[2 + vcpu])
            if not runs:
                continue
            vaddr = int(p[0], 16)
            k = bisect.bisect_right(addrs, vaddr) - 1
            if k < 0:
                continue
            name = syms[k][1]
            if not helpers(name) and not any(lo <= vaddr < hi and name in funcs
                                               for lo, hi, funcs in ranges):
                continue
            v = out[insns.demangle(name)]
            v[0] += int(p[1]) * runs
            if vaddr == syms[k][0]:
                v[1] += runs
    return {name: (n / kib, calls / kib) for name, (n, calls) in out.items()}


def core_line(label, where, prof):
    """A core line: "LABEL: devmem rust core ..." and the ratio rust/c,
    from each core's core_profile; where ("MTU 9000" or "") follows the
    ratio in brackets."""
    tot = {core: sum(v[0] for v in p.values()) for core, p in prof.items()}
    ratio = tot["rust"] / tot["c"] if tot["c"] > 0 else float("nan")

    def per_call(v):
        return f"{v[0] / v[1]:.1f}" if v and v[1] > 0 else "-"

    names = sorted(set(prof["rust"]) | set(prof["c"]),
                   key=lambda n: (-(prof["rust"].get(n, (0, 0))[0] + prof["c"].get(n, (0, 0))[0]),
                                  n))
    funcs = ", ".join(f"{n} {per_call(prof['rust'].get(n))}/{per_call(prof['c'].get(n))}"
                      for n in names[:8])
    at = f" ({where})" if where else ""
    return (f"{label}: devmem rust core {tot['rust']:.1f} insns/KiB, "
            f"c core {tot['c']:.1f} insns/KiB, ratio rust/c {ratio:.2f}{at}: "
            f"{funcs or '-'} rust/c insns/call"), ratio


def parse_objects(args):
    """(the arguments without --object CORE:OBJ, {core: [OBJ, ...]}), or
    None on a malformed --object."""
    objs = {"rust": [], "c": []}
    rest = []
    args = list(args)
    while args:
        a = args.pop(0)
        if a != "--object":
            rest.append(a)
            continue
        core, _, obj = (args.pop(0) if args else "").partition(":")
        if core not in objs or not obj:
            return None
        objs[core].append(obj)
    return rest, objs


def functions_of(objs):
    """{core: [(object, its names)]} for parse_objects' objects."""
    return {core: [(o, object_functions(o)) for o in paths] for core, paths in objs.items()}


def rx_main(args):
    parsed = parse_objects(args)
    if parsed is None or len(parsed[0]) != 2 or not all(parsed[1].values()):
        print("usage: coreprof.py rx RUST_DIR C_DIR --object CORE:OBJ ... (each core)",
              file=sys.stderr)
        return 2
    (rust_dir, c_dir), objs = parsed
    try:
        funcs = functions_of(objs)
        prof = {core: core_profile(os.path.join(d, "hostcpu", "devmem"), funcs[core])
                for core, d in (("rust", rust_dir), ("c", c_dir))}
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"coreprof.py: the core's profile: {e}", file=sys.stderr)
        return 1
    for core, p in prof.items():
        if not p:
            print(f"coreprof.py: no instructions in the {core} core's functions", file=sys.stderr)
            return 1
    line, ratio = core_line("devmem-rx-profile-core", "", prof)
    verdict = "met" if ratio <= 1.0 else "NOT met"
    print(line)
    print(f"goal: rust core at most c on devmem-rx-profile-core: {verdict} ({ratio:.2f})")
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "rx":
        return rx_main(argv[2:])
    print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
