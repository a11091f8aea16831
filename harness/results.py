#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge a test run: parse the TAP/KTAP each suite wrote and hold it to
the expectations file.

Usage: results.py EXPECTATIONS RESULTS_DIR [--static FILE] [--after FILE]
       results.py EXPECTATIONS RESULTS_DIR --tsv LABEL

With --tsv, judges a second run (the C core's) and prints one result line
per suite, name suffixed with LABEL, as --after takes them.

Every KUnit test case that runs must pass. A kselftest case must pass when
the expectations file claims it ('pass'); a SKIP of a claimed case is a
failure. Unclaimed cases ('unclaimed REASON') are reported and counted as
skipped. A suite whose TAP is incomplete (fewer results than its plan, or
none) fails.

Prints one line per suite and ends with 'N passed, M failed, K skipped';
exits 1 when anything failed.
"""

import os
import re
import sys

RESULT_RE = re.compile(
    r'^(?P<indent>\s*)(?P<ok>ok|not ok)\s+(?P<num>\d+)\s*(?:-\s*)?'
    r'(?P<name>[^#]*?)\s*(?:#\s*(?P<directive>\S+)\s*(?P<reason>.*))?$')
PLAN_RE = re.compile(r'^(?P<indent>\s*)1\.\.(?P<n>\d+)')
# What the kernel's checkers print when they find something. Every kernel
# "WARNING: " line is one: WARN(), and lockdep's reports (circular or
# SOFTIRQ-safe -> SOFTIRQ-unsafe lock order, inconsistent lock state,
# suspicious RCU usage, bad unlock balance), none of which say "CPU:" on
# their first line. DMA-API debugging prints its finding on a "DMA-API:"
# line (only its first one, as a WARN too), besides two lines at boot;
# the reference count trackers name a leaked netdev or netns reference on
# a "ref_tracker:" line. A stack overflow hits the guard page of a
# vmalloc'ed stack ("BUG: stack guard page was hit"), or, without
# CONFIG_VMAP_STACK, shows as "Thread overran stack" in the Oops it causes.
KERNEL_SPLAT_RE = re.compile(
    r'(WARNING: |cut here|BUG: |Oops|kernel BUG at|'
    r'UBSAN:|KASAN:|'
    r'general protection fault|Kernel panic|list_(add|del) corruption|'
    r'Thread overran stack|'
    r'refcount_t: |INFO: task .* blocked for more than|'
    r'DMA-API: (?!preallocated \d+ debug entries|debugging enabled by kernel config)|'
    r'ref_tracker: |unregister_netdevice: waiting for|rcu: INFO: .* detected stalls)')

# What a checker prints when an allocation of its own failed, which the
# fault-injection suite (faults) makes happen on purpose: DMA-API debugging
# turns itself off, the reference count tracker loses one entry. Not a
# finding of the code under test but coverage lost from then on, so the
# suite runs last (check.sh) and these lines are reported, not failed,
# when it ran.
CHECKER_GAVE_UP_RE = re.compile(
    r'(DMA-API: cacheline tracking ENOMEM, dma-debug disabled|'
    r'ref_tracker: memory allocation failure, unreliable refcount tracker)')

# What a failed case says when it failed only by running out of time:
# ksft's waits ("Waiting for port listen timed out") and commands ("...
# timed out after 20 seconds"), and iou-zcrx's server, which prints "test
# failed" only when its receive deadline passes (iou-zcrx.c: tstop, 20 s
# from the accept with patch 0033).
TIMEOUT_EVIDENCE = ('timed out', 'iou-zcrx: test failed')


class Case:
    def __init__(self, name, ok, directive, reason, depth):
        self.name = name
        self.ok = ok
        # An XFAIL says the test could not exercise what it checks: for a
        # claimed case, as bad as a SKIP.
        self.skip = (directive or '').upper() in ('SKIP', 'XFAIL')
        self.reason = reason or ''
        self.depth = depth
        self.children = []
        self.plan = None    # the subtest plan, for a case with subtests
        self.diag = []      # the lines logged since the previous result

    def status(self):
        if self.skip:
            return 'skip'
        return 'pass' if self.ok else 'fail'


def parse_tap(text):
    """Parse (K)TAP into (top-level cases, top-level plan).

    KTAP nests subtests by indentation ahead of their parent's result line;
    a top-level result with children is a suite and its leaves are the test
    cases.
    """
    cases = []
    plan = None
    pending = {}    # depth -> results seen at that depth, waiting for parent
    plans = {}      # depth -> the plan of the subtests being collected there
    diag = []
    for line in text.splitlines():
        line = line.rstrip()
        m = PLAN_RE.match(line)
        if m:
            depth = len(m.group('indent').expandtabs(4)) // 4
            if depth == 0:
                if plan is None:
                    plan = int(m.group('n'))
            else:
                plans[depth] = int(m.group('n'))
            continue
        m = RESULT_RE.match(line)
        if not m:
            text_line = line.strip().lstrip('#').strip()
            if text_line and not text_line.endswith('.speed: normal') \
                    and not text_line.startswith(('KTAP version', 'TAP version', 'Subtest:')):
                diag.append(text_line)
            continue
        depth = len(m.group('indent').expandtabs(4)) // 4
        case = Case(m.group('name').strip(), m.group('ok') == 'ok',
                    m.group('directive'), m.group('reason'), depth)
        case.children = pending.pop(depth + 1, [])
        case.plan = plans.pop(depth + 1, None)
        case.diag, diag = diag[-6:], []
        if depth == 0:
            cases.append(case)
        else:
            pending.setdefault(depth, []).append(case)
    return cases, plan


def leaves(case):
    if not case.children:
        return [case]
    out = []
    for c in case.children:
        out.extend(leaves(c))
    return out


def entries(path, fields):
    """(line number, up to `fields` words) of each line of an expectations
    file, comments and blank lines left out."""
    with open(path, encoding='utf-8') as f:
        for num, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if line:
                yield num, line.split(None, fields - 1)


def load_expectations(path):
    """Lines: SUITE CASE pass | SUITE CASE unclaimed REASON..."""
    exp = {}
    for num, parts in entries(path, 4):
        if len(parts) < 3 or parts[2] not in ('pass', 'unclaimed'):
            sys.exit(f'{path}:{num}: want "SUITE CASE pass|unclaimed REASON"')
        reason = parts[3] if len(parts) > 3 else ''
        if parts[2] == 'unclaimed' and not reason:
            sys.exit(f'{path}:{num}: an unclaimed case needs a reason')
        exp.setdefault(parts[0], {})[parts[1]] = (parts[2], reason)
    return exp


def load_slow(path, exp):
    """Lines: SUITE CASE REASON..., for claimed cases that may time out
    under the debug kernel (make check DEBUG=1): such a case still passes,
    and a failure of it that is not a timeout still fails."""
    for num, parts in entries(path, 3):
        if len(parts) < 3:
            sys.exit(f'{path}:{num}: want "SUITE CASE REASON"')
        if exp.get(parts[0], {}).get(parts[1], ('', ''))[0] != 'pass':
            sys.exit(f'{path}:{num}: {parts[0]} {parts[1]} is not claimed')
        exp[parts[0]][parts[1]] = ('slow', parts[2])


def short_name(name):
    # ksft_run names cases module.function, and variants of a case
    # module.function.variant: keep all but the module.
    return name.split('.', 1)[-1]


def judge_kunit(text):
    cases, _ = parse_tap(text)
    passed, failed, lines = 0, 0, []
    suites = 0
    for suite in cases:
        suites += 1
        # A suite lists its cases' results under a plan; fewer results than
        # the plan means cases did not run (KUnit still reports such a
        # suite 'ok' in debugfs when it never ran).
        if suite.plan is not None and len(suite.children) < suite.plan:
            failed += 1
            lines.append(f'    {suite.name}: {len(suite.children)} of '
                         f'{suite.plan} cases ran')
        elif not suite.children and suite.plan is None:
            failed += 1
            lines.append(f'    {suite.name}: no test case results')
        for leaf in leaves(suite) if suite.children else []:
            if leaf.status() == 'fail':
                failed += 1
                lines.append(f'    FAIL {suite.name}.{leaf.name}')
                lines.extend(f'        {d}' for d in leaf.diag)
            elif leaf.status() == 'skip':
                # A KUnit case we build skips only when it cannot run here:
                # that hides a real regression, so it counts as failed.
                failed += 1
                lines.append(f'    SKIP {suite.name}.{leaf.name}: {leaf.reason}')
            else:
                passed += 1
    if suites == 0:
        failed += 1
        lines.append('    no KUnit suite ran')
    return passed, failed, 0, lines, f'{suites} suites'


def judge_kselftest(suite, text, exp):
    cases, plan = parse_tap(text)
    claims = exp.get(suite, {})
    passed = failed = skipped = 0
    lines = []
    seen = set()
    for case in cases:
        name = short_name(case.name)
        seen.add(name)
        claim, reason = claims.get(name, claims.get('*', ('pass', '')))
        st = case.status()
        if claim == 'slow' and st == 'fail' and \
                any(t in d for d in case.diag for t in TIMEOUT_EVIDENCE):
            # Claimed, but allowed to time out under the debug kernel
            # (--slow): a timeout only, never another failure.
            skipped += 1
            lines.append(f'    SLOW {name}: timed out under the debug kernel, {reason}')
        elif claim == 'unclaimed':
            skipped += 1
            note = ' (now passes: claim it)' if st == 'pass' else ''
            lines.append(f'    {st.upper()} {name}: unclaimed, {reason}{note}')
        elif st == 'pass':
            passed += 1
        else:
            failed += 1
            why = f': {case.reason}' if case.reason else ''
            lines.append(f'    {st.upper()} {name}{why} (claimed)')
            if st == 'fail':
                lines.extend(f'        {d}' for d in case.diag)
    for name, (claim, _) in claims.items():
        if name != '*' and name not in seen:
            if claim == 'pass':
                failed += 1
            else:
                skipped += 1
            lines.append(f'    MISSING {name}: no result')
    if plan is None or len(cases) < plan:
        failed += 1
        lines.append(f'    incomplete: plan {plan}, {len(cases)} results')
    return passed, failed, skipped, lines, f'{len(cases)} cases'


def note_retry(base, r):
    """Say so when the guest ran a suite twice (see suite_kselftest)."""
    try:
        with open(base + '.attempt1', encoding='utf-8', errors='replace') as f:
            first, _ = parse_tap(f.read())
    except FileNotFoundError:
        return r
    failed = [short_name(c.name) for c in first if c.status() == 'fail']
    passed, nfail, skipped, lines, what = r
    lines = lines + [f'    RETRIED: attempt 1 failed {", ".join(failed)} '
                     '(port listen timeout, a port the peer still held, '
                     "or an iou-zcrx transfer past its deadline, the "
                     "server's or the test's for the client); "
                     'the counts are attempt 2']
    return passed, nfail, skipped, lines, f'{what}, retried once'


def note_leftover(base, r, own):
    """Say what the suite left configured on the NIC (see tidy_nic in
    run.sh), which the guest undid before the next suite. Our own suites
    must undo what they set: for them it is a failure."""
    left = []
    for path, when in ((base + '.attempt1.leftover', 'attempt 1 left'),
                       (base + '.leftover', 'left')):
        try:
            with open(path, encoding='utf-8', errors='replace') as f:
                what = [l.strip() for l in f if l.strip()]
        except FileNotFoundError:
            continue
        left.append(f'    LEFT: {when} {"; ".join(what)} (undone after it)')
    if not left:
        return r
    passed, failed, skipped, lines, what = r
    if own:
        failed += 1
    return passed, failed, skipped, lines + left, what


def judge_plain(text):
    """A TAP suite where every case must pass (net-env, demo, devmem-bind,
    faults, races, nic-*)."""
    cases, plan = parse_tap(text)
    passed = sum(1 for c in cases if c.status() == 'pass')
    bad = [c for c in cases if c.status() != 'pass']
    lines = [f'    {c.status().upper()} {c.name}' for c in bad]
    failed = len(bad)
    if plan is None or len(cases) < plan:
        failed += 1
        lines.append(f'    incomplete: plan {plan}, {len(cases)} results')
    return passed, failed, 0, lines, f'{len(cases)} cases'


def main():
    args = sys.argv[1:]
    static = after = label = None
    if '--tsv' in args:
        i = args.index('--tsv')
        label = args[i + 1]
        del args[i:i + 2]
    if '--static' in args:
        i = args.index('--static')
        static = args[i + 1]
        del args[i:i + 2]
    if '--after' in args:
        i = args.index('--after')
        after = args[i + 1]
        del args[i:i + 2]
    slow = None
    if '--slow' in args:
        i = args.index('--slow')
        slow = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    exp = load_expectations(args[0])
    if slow is not None:
        load_slow(slow, exp)
    res_dir = args[1]

    total = [0, 0, 0]
    out = []

    def report(name, p, f, s, lines, what):
        if label is not None:
            detail = '; '.join([what] + [l.strip() for l in lines])
            out.append(f"{name}{label}\t{'fail' if f else 'pass'}\t{detail}")
            return
        total[0] += p
        total[1] += f
        total[2] += s
        verdict = 'FAIL' if f else 'ok'
        out.append(f'{verdict:4} {name}: {p} passed, {f} failed, {s} skipped ({what})')
        out.extend(lines)

    def report_tsv(path):
        with open(path, encoding='utf-8') as f:
            for line in f:
                name, st, what = line.rstrip('\n').split('\t', 2)
                report(name, int(st == 'pass'), int(st != 'pass'), 0, [], what)

    if static:
        report_tsv(static)

    order = []
    order_file = os.path.join(res_dir, 'suites')
    if os.path.exists(order_file):
        with open(order_file, encoding='utf-8') as f:
            order = f.read().split()
    if os.path.exists(os.path.join(res_dir, 'setup.err')):
        report('vm-setup', 0, 1, 0, ['    the guest could not wire the topology'],
               'see console.log')
    for suite in order:
        base = os.path.join(res_dir, suite.replace('/', '_'))
        try:
            with open(base + '.tap', encoding='utf-8', errors='replace') as f:
                text = f.read()
        except FileNotFoundError:
            report(suite, 0, 1, 0, ['    no output: the VM did not run it'], '')
            continue
        try:
            with open(base + '.rc', encoding='utf-8') as f:
                rc = int(f.read().strip() or 0)
        except (FileNotFoundError, ValueError):
            rc = None
        if rc == 124:
            text += '\nnot ok 999 killed: ran past TEST_TIMEOUT\n'
        if suite == 'kunit':
            r = judge_kunit(text)
        elif suite in ('net-env', 'demo', 'devmem-bind', 'faults', 'races',
                       'nic-lifecycle', 'nic-hds', 'nic-filters', 'nic-jumbo', 'nic-rss',
                       'nic-ethtool', 'devmem-rx-check'):
            r = note_leftover(base, judge_plain(text), True)
        else:
            r = judge_kselftest(suite, text, exp)
            r = note_leftover(base, note_retry(base, r), False)
        report(suite, *r)

    # A WARN, BUG or sanitizer report anywhere in the run fails it, even
    # when every test passed.
    dmesg = os.path.join(res_dir, 'dmesg.txt')
    if os.path.exists(dmesg):
        with open(dmesg, encoding='utf-8', errors='replace') as f:
            bad = [l.rstrip() for l in f if KERNEL_SPLAT_RE.search(l)]
        gave_up = []
        if 'faults' in order:
            gave_up = [l for l in bad if CHECKER_GAVE_UP_RE.search(l)]
            bad = [l for l in bad if not CHECKER_GAVE_UP_RE.search(l)]
        report('kernel-log', int(not bad), int(bool(bad)), 0,
               [f'    {l}' for l in bad[:10]] +
               [f'    NOTE (an injected allocation failure): {l}' for l in gave_up[:4]],
               f'{len(bad)} warnings or bugs')

    # DMA-API debugging prints the first error it finds, and only counts
    # the ones after it: the count, not the log, says whether there were
    # more.
    dma = os.path.join(res_dir, 'dma-api-errors.txt')
    if os.path.exists(dma):
        with open(dma, encoding='utf-8', errors='replace') as f:
            text = f.read().strip()
        n = int(text) if text.isdigit() else -1
        report('dma-api', int(n == 0), int(n != 0), 0,
               [f'    error_count {text!r}: see DMA-API lines in dmesg.txt'] if n else [],
               f'{n} errors')

    leak = os.path.join(res_dir, 'kmemleak.txt')
    if os.path.exists(leak):
        with open(leak, encoding='utf-8', errors='replace') as f:
            n = sum(1 for l in f if l.startswith('unreferenced object'))
        report('kmemleak', int(n == 0), int(n != 0), 0,
               [f'    {n} leaked objects: {leak}'] if n else [], f'{n} objects')

    if after:
        report_tsv(after)

    print('\n'.join(out))
    if label is not None:
        return 0
    print(f'{total[0]} passed, {total[1]} failed, {total[2]} skipped')
    return 1 if total[1] else 0


if __name__ == '__main__':
    sys.exit(main())
