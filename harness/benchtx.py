#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The TX benchmark's lines, from the boots make bench alternates.

    benchtx.py CORE:TAP [CORE:TAP ...]

Each TAP is the bench-tx.tap of one boot (harness/guest/bench_tx.sh) of
the kernel with devmem core CORE ("rust" or "c"), in the order the boots
ran: c, rust, c, rust, ... The n-th boot of each core make a pair, and a
ratio between the cores is taken within a pair, round by round (round j
of the Rust core's boot against round j of the C core's), so that both
sides of every ratio ran as close in time as the boots allow. Prints,
every figure the median over the rounds of every boot with the lowest
and highest in brackets:

  devmem-tx-send: rust M [lo-hi] calls/s, c M [lo-hi] calls/s, ratio rust/c R [lo-hi] (N threads)
  devmem-tx-cpu: MODE rust M [lo-hi] ns/KiB, c M [lo-hi] ns/KiB, ratio rust/c R [lo-hi]; sink busy rust P%, c Q%; sent rust X [lo-hi] Mbit/s, c Y [lo-hi] Mbit/s (MTU U, N flows)
  devmem-tx-cpu-modes: rust core devmem/send R [lo-hi], devmem/zerocopy R [lo-hi] (MTU U, N flows)
  devmem-tx-cpu-boots: c R [lo-hi], rust R [lo-hi] (MTU U, N flows)

The boots line compares each core's kernel with itself: every later boot
of a core over the one before it, round by round, in all three modes. It
is how far two boots of one kernel differ on this machine, the yardstick
for the ratios between the cores (none without two boots of a core).

and the goals, each met only when every round (every pair's round, for
a ratio between the cores) meets it:

  goal: rust core at most c on devmem-tx-cpu (MTU U, N flows): met|NOT met (R ...); send and zerocopy, which never reach the core: LO-HI
  goal: rust core at least c on devmem-tx-send (N threads): met|NOT met (R ...); two boots of one kernel: LO-HI
  goal: devmem at most send on devmem-tx-cpu, rust core (MTU 9000, N flows): met|NOT met (R ...)

The send and zerocopy modes do not reach the devmem core: their ratio
rust/c is the two boots' difference alone, and says how far to trust the
devmem mode's; the cpu goal ends with their lowest and highest round.
The calls pass has no such mode: its goal ends with the lowest and
highest ratio of a core's later boot over its earlier one (none without
two boots of a core).
Exits 1 when a TAP has no round lines.

    benchtx.py --profile CORE:DIR CORE:DIR [--object CORE:OBJ ...]

The transmit profile (make bench PROFILE=1): DIR is the results directory
of a boot of core CORE that ran bench-tx-profile (bench_tx.sh's profile
pass, QEMU counting the guest's instructions), with its tx-profile: lines
in bench-tx-profile.tap and every function's instructions per KiB in
hostcpu/tx.MODE.MTU.per. Instruction counts do not drift with the host:
one boot of each core. Prints, for each MTU,

  devmem-tx-profile: MODE rust core N insns/KiB, c core M insns/KiB, ratio rust/c R (MTU U, 1 flow)
  devmem-tx-profile-funcs: devmem N insns/KiB: FUNC P%, ... (MTU U, CORE core)
  devmem-tx-profile-extra: devmem rust core over c core +N insns/KiB (MTU U): FUNC +n, ...; FUNC -n, ...
  devmem-tx-profile-core: devmem rust core N insns/KiB, c core M insns/KiB, ratio rust/c R (MTU U): FUNC r/c insns/call, ...
  goal: rust core at most c on devmem-tx-profile-core (MTU U): met|NOT met (R)

the extra line naming the functions that ran more instructions per KiB
under the Rust core, most first, then those that ran fewer.

The whole path is mostly TCP's, which both cores share and whose count
varies between boots (acks, coalescing, window): the send and zerocopy
modes, which never reach the core, differ between the two boots by as
much as the devmem mode does. The core line counts the code that differs:
the core's own code (harness/coreprof.py: the functions of the OBJ given
for each core, its object and the allocator library, and the provider
helpers), from the devmem run's raw counts (hostcpu/tx.devmem.MTU.counts,
.kallsyms, .run), with each function's instructions per call on each
core (calls: the runs of its first block). The goal judges it; without
OBJ for both cores there is no core line and the goal judges the whole
path.
"""

import math
import os
import statistics
import subprocess
import sys
from collections import defaultdict

import coreprof


def parse(path):
    """{("calls", threads): [rate, ...], ("cpu", mode, mtu, flows): [(ns, busy, mbps), ...]}

    A cpu round without a figure (n/a: no host reading, or the run fell
    short of the offered load) keeps its place, as NaN, so that round j
    of one boot still meets round j of the other."""
    rounds = defaultdict(list)
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) < 2 or w[0] != "tx-round:":
                continue
            if w[1] == "calls" and len(w) == 4:
                rounds[("calls", int(w[2]))].append(float(w[3]))
            elif w[1] == "cpu" and len(w) == 8:
                ns, busy, mbps = (float(x) if x != "n/a" else float("nan") for x in w[5:8])
                rounds[("cpu", w[2], int(w[3]), int(w[4]))].append((ns, busy, mbps))
    return rounds


def fmt(v, ratio=False):
    if math.isnan(v):
        return "n/a"
    return f"{v:.2f}" if ratio else f"{v:.0f}"


def spread(vals, ratio=False):
    """M [lo-hi] over vals (NaN left out), n/a without any."""
    vals = [v for v in vals if not math.isnan(v)]
    if not vals:
        return "n/a"
    return f"{fmt(statistics.median(vals), ratio)} [{fmt(min(vals), ratio)}-{fmt(max(vals), ratio)}]"


def pair_ratios(rust_boots, c_boots, key, value):
    """Round by round within each pair of boots: value(rust) / value(c),
    NaN for a round that lacks either (which no goal accepts)."""
    out = []
    for r, c in zip(rust_boots, c_boots):
        for a, b in zip(r.get(key, []), c.get(key, [])):
            a, b = value(a), value(b)
            out.append(a / b if a > 0 and b > 0 else float("nan"))
    return out


def boot_ratios(boots, keys, value=lambda v: v[0]):
    """Round by round, each boot of a core over the one before it, in
    every case of keys."""
    out = []
    for earlier, later in zip(boots, boots[1:]):
        for key in keys:
            for a, b in zip(later.get(key, []), earlier.get(key, [])):
                a, b = value(a), value(b)
                out.append(a / b if a > 0 and b > 0 else float("nan"))
    return out


def goal(text, ratios, ok, control=None):
    """control: (what, ratios) that no difference between the cores can
    move, printed after the rounds as their lowest and highest."""
    if not ratios:
        return f"goal: {text}: NOT met (no rounds)"
    verdict = "met" if all(ok(r) for r in ratios) else "NOT met"
    line = f"goal: {text}: {verdict} ({' '.join(fmt(r, True) for r in ratios)})"
    if control:
        what, vals = control
        vals = [v for v in vals if not math.isnan(v)]
        if vals:
            line += f"; {what}: {fmt(min(vals), True)}-{fmt(max(vals), True)}"
    return line


def plural(n, one, many):
    return f"{n} {one if n == 1 else many}"


def parse_profile(tap):
    """{(mode, mtu): (insns, rest of the line)} from tx-profile: lines."""
    out = {}
    with open(tap, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split(maxsplit=5)
            if len(w) == 6 and w[0] == "tx-profile:":
                out[(w[1], int(w[2]))] = (float(w[3]), w[5].strip())
    return out


def load_per(path):
    """{function: instructions per KiB} of a .per file."""
    per = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            name, _, n = line.rstrip("\n").rpartition("\t")
            if name:
                per[name] = per.get(name, 0.0) + float(n)
    return per


def profile_main(args):
    parsed = coreprof.parse_objects(args)
    if parsed is None:
        print("benchtx.py: --object CORE:OBJ", file=sys.stderr)
        return 2
    args, objs = parsed
    dirs = {}
    for arg in args:
        core, _, path = arg.partition(":")
        if core not in ("rust", "c") or not path or core in dirs:
            print(f"benchtx.py: bad argument {arg!r}: CORE:DIR, one of each core", file=sys.stderr)
            return 2
        dirs[core] = path
    if len(dirs) != 2:
        print("benchtx.py --profile: needs a boot of each core", file=sys.stderr)
        return 2
    prof = {core: parse_profile(os.path.join(d, "bench-tx-profile.tap")) for core, d in dirs.items()}
    for core, p in prof.items():
        if not p:
            print(f"benchtx.py: no tx-profile lines in {dirs[core]}/bench-tx-profile.tap",
                  file=sys.stderr)
            return 1
    funcs = {}
    if all(objs.values()):
        try:
            funcs = coreprof.functions_of(objs)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"benchtx.py: the core's functions: {e}", file=sys.stderr)
            return 1
    lines, goals = [], []
    for mtu in sorted({k[1] for p in prof.values() for k in p}):
        where = f"MTU {mtu}, 1 flow"
        for mode in ("send", "zerocopy", "devmem"):
            r, c = prof["rust"].get((mode, mtu)), prof["c"].get((mode, mtu))
            if not r or not c:
                continue
            ratio = r[0] / c[0] if c[0] > 0 else float("nan")
            lines.append(f"devmem-tx-profile: {mode} rust core {r[0]:.0f} insns/KiB, "
                         f"c core {c[0]:.0f} insns/KiB, ratio rust/c {ratio:.2f} ({where})")
            if mode != "devmem":
                continue
            for core, v in (("rust", r), ("c", c)):
                lines.append(f"devmem-tx-profile-funcs: devmem {v[0]:.0f} insns/KiB: {v[1]} "
                             f"(MTU {mtu}, {core} core)")
            pers = {}
            for core, d in dirs.items():
                path = os.path.join(d, "hostcpu", f"tx.devmem.{mtu}.per")
                pers[core] = load_per(path) if os.path.exists(path) else None
            if pers["rust"] is not None and pers["c"] is not None:
                names = set(pers["rust"]) | set(pers["c"])
                diff = {n: pers["rust"].get(n, 0.0) - pers["c"].get(n, 0.0) for n in names}
                more = sorted((kv for kv in diff.items() if kv[1] >= 0.5), key=lambda kv: -kv[1])
                less = sorted((kv for kv in diff.items() if kv[1] <= -0.5), key=lambda kv: kv[1])
                part = ", ".join(f"{n} {d:+.1f}" for n, d in more[:12])
                part_less = ", ".join(f"{n} {d:+.1f}" for n, d in less[:8])
                lines.append(f"devmem-tx-profile-extra: devmem rust core over c core "
                             f"{sum(diff.values()):+.0f} insns/KiB (MTU {mtu}): {part or '-'}; "
                             f"{part_less or '-'}")
            if not funcs:
                goals.append(goal(f"rust core at most c on devmem-tx-profile (MTU {mtu})",
                                  [ratio], lambda x: x <= 1.0))
                continue
            run = f"devmem.{mtu}"
            try:
                cp = {core: coreprof.core_profile(os.path.join(d, "hostcpu", "tx." + run),
                                                  funcs[core])
                      for core, d in dirs.items()}
            except (OSError, ValueError) as e:
                print(f"benchtx.py: the core's profile, MTU {mtu}: {e}", file=sys.stderr)
                return 1
            if not cp["rust"] or not cp["c"]:
                print(f"benchtx.py: no instructions in the core's functions, MTU {mtu}",
                      file=sys.stderr)
                return 1
            line, core_ratio = coreprof.core_line("devmem-tx-profile-core", f"MTU {mtu}", cp)
            lines.append(line)
            goals.append(goal(f"rust core at most c on devmem-tx-profile-core (MTU {mtu})",
                              [core_ratio], lambda x: x <= 1.0))
    print("\n".join(lines + goals))
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--profile":
        return profile_main(argv[2:])
    boots = {"rust": [], "c": []}
    for arg in argv[1:]:
        core, _, path = arg.partition(":")
        if core not in boots or not path:
            print(f"benchtx.py: bad argument {arg!r}: CORE:TAP, CORE rust or c", file=sys.stderr)
            return 2
        rounds = parse(path)
        if not rounds:
            print(f"benchtx.py: no tx-round lines in {path}", file=sys.stderr)
            return 1
        boots[core].append(rounds)
    if not boots["rust"] or not boots["c"]:
        print("benchtx.py: needs boots of both cores", file=sys.stderr)
        return 2

    def all_of(core, key, value=lambda v: v):
        return [value(v) for b in boots[core] for v in b.get(key, [])]

    keys = {k for core in boots.values() for b in core for k in b}
    lines, goals = [], []
    calls = sorted(k for k in keys if k[0] == "calls")
    # The many-thread line first, as before the single thread's.
    for key in sorted(calls, key=lambda k: -k[1]):
        n = key[1]
        ratios = pair_ratios(boots["rust"], boots["c"], key, lambda v: v)
        unit = plural(n, "thread", "threads")
        lines.append(f"devmem-tx-send: rust {spread(all_of('rust', key))} calls/s, "
                     f"c {spread(all_of('c', key))} calls/s, "
                     f"ratio rust/c {spread(ratios, True)} ({unit})")
        same = [r for core in boots for r in boot_ratios(boots[core], [key], lambda v: v)]
        goals.append(goal(f"rust core at least c on devmem-tx-send ({unit})",
                          ratios, lambda r: r >= 1.0, ("two boots of one kernel", same)))
    cpu = {k for k in keys if k[0] == "cpu"}
    cases = sorted({(k[2], k[3]) for k in cpu})
    modes = ["send", "zerocopy", "devmem"]
    for mtu, flows in cases:
        where = f"MTU {mtu}, {plural(flows, 'flow', 'flows')}"
        # The same boots' rust/c in the modes that never reach the core:
        # what the devmem mode's rounds would spread over with cores alike.
        control = []
        for mode in modes:
            key = ("cpu", mode, mtu, flows)
            if key not in cpu:
                continue
            ratios = pair_ratios(boots["rust"], boots["c"], key, lambda v: v[0])
            if mode != "devmem":
                control += ratios
            busy = {core: statistics.median([b for b in all_of(core, key, lambda v: v[1])
                                             if not math.isnan(b)] or [float("nan")])
                    for core in boots}
            sent = {core: spread(all_of(core, key, lambda v: v[2])) for core in boots}
            lines.append(f"devmem-tx-cpu: {mode} rust {spread(all_of('rust', key, lambda v: v[0]))} ns/KiB, "
                         f"c {spread(all_of('c', key, lambda v: v[0]))} ns/KiB, "
                         f"ratio rust/c {spread(ratios, True)}; "
                         f"sink busy rust {busy['rust']:.0f}%, c {busy['c']:.0f}%; "
                         f"sent rust {sent['rust']} Mbit/s, c {sent['c']} Mbit/s ({where})")
            if mode == "devmem":
                goals.append(goal(f"rust core at most c on devmem-tx-cpu ({where})",
                                  ratios, lambda r: r <= 1.0,
                                  ("send and zerocopy, which never reach the core", control)))
        # devmem against the host-memory modes on the Rust core, round by
        # round within each boot.
        parts = []
        for other in ("send", "zerocopy"):
            ratios = []
            for b in boots["rust"]:
                for d, o in zip(b.get(("cpu", "devmem", mtu, flows), []),
                                b.get(("cpu", other, mtu, flows), [])):
                    ok = d[0] > 0 and o[0] > 0
                    ratios.append(d[0] / o[0] if ok else float("nan"))
            parts.append(f"devmem/{other} {spread(ratios, True)}")
            if other == "send" and mtu == 9000:
                goals.append(goal(f"devmem at most send on devmem-tx-cpu, rust core ({where})",
                                  ratios, lambda r: r <= 1.0))
        lines.append(f"devmem-tx-cpu-modes: rust core {', '.join(parts)} ({where})")
        same = [("cpu", mode, mtu, flows) for mode in modes]
        if all(len(boots[core]) > 1 for core in boots):
            lines.append(f"devmem-tx-cpu-boots: "
                         f"c {spread(boot_ratios(boots['c'], same), True)}, "
                         f"rust {spread(boot_ratios(boots['rust'], same), True)} ({where})")
    print("\n".join(lines + goals))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
