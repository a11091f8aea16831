#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge a test run: parse the TAP/KTAP each suite wrote and hold it to
the expectations file.

Usage: results.py EXPECTATIONS RESULTS_DIR [--static FILE] [--after FILE]
                  [--slow FILE] [--flaky-history FILE] [--kunit-suites FILE]
                  [--debug]
       results.py EXPECTATIONS RESULTS_DIR --tsv LABEL [--flaky-history FILE]
                  [--debug]
       results.py --retry-counts EXPECTATIONS SUITE OUTPUT

With --tsv, judges another boot's run (the C core's or the 4-vCPU
boot's) and prints one result line per suite, name suffixed with LABEL,
as --after takes them: pass, fail, or flaky (passed only on a retry),
which the run reading --after counts in its flaky total.

Every KUnit test case that runs must pass, and every suite of the
--kunit-suites file (harness/kunit-suites by default) must report. A
kselftest case must pass when the expectations file claims it ('pass'); a
SKIP of a claimed case is a failure. Unclaimed cases ('unclaimed REASON')
are reported and counted as skipped, unless their output shows a failure
the reason does not excuse (UNCLAIMED_UNLESS). A KUnit suite of no cases
fails. A suite whose TAP is incomplete (fewer results than its plan,
none, or a case whose own result line never came) fails.

A kselftest suite the guest ran twice (see suite_kselftest in guest/run.sh)
runs again when every claimed case that failed failed on a timeout and
the attempt was whole (retry_counts, which --retry-counts prints for the
guest); one killed is not run again. It is judged on its second
attempt, with the first attempt's failures listed; a claimed case that
failed in the first and passed in the second is flaky. --flaky-history
keeps the flaky cases of the last run: a case flaky in two runs in a row
fails.

A suite the guest killed (TEST_TIMEOUT) fails, whatever its cases say,
and so does one that exited non-zero with no case failed, or whose exit
status the guest did not record.
The kernel is judged too, from what the guest recorded of it (see
guest/run.sh, guest/kmsg.py), once any of it is there: each file missing
then fails its check. kernel-log: the whole log, from boot (its first
record is record 0) with no record lost, holds no report of a checker
(KERNEL_SPLAT_RE), no KUnit result that failed or skipped (a suite
run again when its module loads), and no record at level err or above
but those ERR_LEVEL_BENIGN_RE names and the fault-injection suite's,
each named with the suite it came during. A suite after which a taint bit is new, lockdep is off (debug_locks 0),
or a transmit queue of the NIC holds bytes that never complete
(bql_stuck), fails.
dma-api: no error counted, and DMA-API debugging still on, but for the
fault-injection suite turning it off. kmemleak: the scan ran, and found
no leak. page-pools: every page pool destroyed during the run had its
buffers back at its end. With --debug (the debug kernel), kasan: the log
shows KASAN on.

Prints one line per suite, then 'failed: N (...)' when any failed,
'flaky: N suites (...)', and ends with
'N passed, M failed, K skipped'; exits 1 when anything failed.
"""

import fnmatch
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'guest'))
# The format of the guest's kernel log recorder (kmsg.txt).
import kmsg  # noqa: E402  pylint: disable=wrong-import-position

RESULT_RE = re.compile(
    r'^(?P<indent>\s*)(?P<ok>ok|not ok)\s+(?P<num>\d+)\s*(?:-\s*)?'
    r'(?P<name>[^#]*?)\s*(?:#\s*(?P<directive>\S+)\s*(?P<reason>.*))?$')
PLAN_RE = re.compile(r'^(?P<indent>\s*)1\.\.(?P<n>\d+)')
# What the kernel's checkers print when they find something, searched for
# in each line of a log record's text, its time left out (races.py and
# devmem_tokens.py search the first line of each record as /dev/kmsg gives
# it, to name the case it came during). The 7.3 texts,
# with the source that prints them (harness/tests/data/splats.txt has a
# sample of each, harness/tests/test_kernel_log.py tests them):
# - "WARNING: ": every WARN() (kernel/panic.c __warn, after a "cut here"
#   line), and lockdep's reports (kernel/locking/lockdep.c: circular or
#   SOFTIRQ-safe -> SOFTIRQ-unsafe lock order, inconsistent lock state,
#   recursive locking, suspicious RCU usage, bad unlock balance, ...).
# - "BUG: ": the scheduler's (scheduling while atomic, sleeping function
#   called from invalid context), KASAN's and KFENCE's reports, the soft
#   lockup detector's, a page fault or NULL dereference in the kernel, the
#   guard page of a vmalloc'ed stack ("BUG: stack guard page was hit"), a
#   workqueue lockup, lockdep running out of room (then it turns itself
#   off, saying so, as it does on a non-static lock key).
# - SLUB's debug checks (mm/slub.c): a banner of '=', "BUG CACHE (Not
#   tainted): Object already free" (or Freepointer corrupt, Padding
#   overwritten, ...), "[Redzone overwritten]" / "[Poison overwritten]"
#   lines, and the FIX line of what it repaired.
# - An oops ("Oops: "), BUG() ("kernel BUG at"), a general protection
#   fault, a panic, UBSAN and KASAN lines, refcount_t's saturation and
#   underflow warnings, DEBUG_LIST's corruption reports, a stack overrun
#   without CONFIG_VMAP_STACK ("Thread overran stack").
# - The hung task detector ("INFO: task NAME:PID blocked for more than",
#   or "blocked in I/O wait"), the hard lockup detector (kernel/watchdog.c,
#   "watchdog: CPU1: Watchdog detected hard LOCKUP on cpu 1"), RCU's stall
#   reports ("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
#   "self-detected stall", "detected expedited stalls", and Tasks RCU's
#   "INFO: rcu_tasks detected stalls on tasks:").
# - The networking stack's own: a transmit queue that timed out
#   (net/sched/sch_generic.c, "NETDEV WATCHDOG: CPU: 1: transmit queue 0
#   timed out 5000 ms", no WARN), a page pool whose pages never came back
#   (net/core/page_pool.c, "page_pool_release_retry() stalled pool
#   shutdown"), a device whose references are never put ("unregister_
#   netdevice: waiting for"), and the reference count trackers naming the
#   holder of a leaked netdev or netns reference ("ref_tracker: ").
# - The Rust NAPI abstraction's (rust/kernel/net/napi/poll.rs): a driver
#   that completed more transmitted bytes than were in flight ("NAPI poll
#   completed N bytes, M in flight", no WARN), but on the device of the
#   KUnit suite that does so on purpose (faux device rust_net_napi_rx).
# - DMA-API debugging's finding on a "DMA-API:" line (its first one only,
#   as a WARN too); two of its lines at boot are not findings.
# - An allocation that failed without __GFP_NOWARN (mm/page_alloc.c
#   warn_alloc, "python3: page allocation failure: order:4, mode:...", at
#   level warning): the page pool's and the provider's own allocations
#   do not warn, so one that does is a caller not ready for the failure.
KERNEL_SPLAT_RE = re.compile(
    r'(WARNING: |cut here|BUG: |Oops|kernel BUG at|'
    r'^BUG \S+ \((?:Not tainted|Tainted: [^)]*)\): |^={30,}$|'
    r'^\[[A-Za-z ]+ overwritten\] |^FIX \S+: |'
    r'UBSAN:|KASAN:|'
    r'general protection fault|Kernel panic|list_(add|del) corruption|list_add double add|'
    r'Thread overran stack|'
    r'refcount_t: |INFO: task .* blocked.* for more than \d+ seconds|'
    r'Watchdog detected hard LOCKUP|INFO: \S+ (?:self-)?detected (?:expedited )?stall|'
    r'INFO: trying to register non-static key|turning off the locking correctness validator|'
    r'NETDEV WATCHDOG: |stalled pool shutdown|'
    r'^(?!faux_driver rust_net_napi_rx )\S.*: NAPI poll completed \d+ bytes, \d+ in flight|'
    r'DMA-API: (?!preallocated \d+ debug entries|debugging enabled by kernel config)|'
    r'ref_tracker: |unregister_netdevice: waiting for|page allocation failure: order:)')

# A KUnit case's result in the log (KTAP, as KUnit prints it while it
# runs): failed, or skipped. The kunit suite judges the boot's run from
# debugfs; a suite that runs again when its module loads (igb_rs's, in
# nic-lifecycle) is judged only here.
KTAP_BAD_RE = re.compile(r'^\s*(?:not ok \d+|ok \d+ .*#\s*SKIP)')

# A record at level err or above (KERN_ERR, CRIT, ALERT, EMERG) that no
# checker printed: a driver's or the kernel's own report of a failure,
# which KERNEL_SPLAT_RE does not name (igb_rs's "transmit queue N hung
# (...): reset", "reset failed", "the device was reset (DRSTA)"; "irq N:
# nobody cared"; the OOM killer's "Out of memory: Killed process"). A
# finding, but for these, which every boot prints and which report
# nothing wrong: the kernel crate's doctest of pr_emerg!() .. pr_err!(),
# and 9p's complaint about virtme-ng's mount options. In the
# fault-injection suite (faults) the kernel's errors are its answers to
# the failures injected (kobject_add_internal failed ... -12), and are
# left to the checkers.
ERR_LEVEL_BENIGN_RE = re.compile(
    r"^(?:rust_doctests_kernel: hello there|9p: Bad value for 'source')$")

# What a checker prints when an allocation of its own failed, which the
# fault-injection suite (faults) makes happen on purpose: DMA-API debugging
# turns itself off (its cacheline tracking, or its pool of entries, out of
# memory), the reference count tracker loses one entry. Not a finding of
# the code under test but coverage lost from then on, so the suite runs
# last (check.sh) and these lines are reported, not failed, when it ran.
CHECKER_GAVE_UP_RE = re.compile(
    r'(DMA-API: cacheline tracking ENOMEM, dma-debug disabled|'
    r'DMA-API: debugging out of memory - disabling|'
    r'ref_tracker: memory allocation failure, unreliable refcount tracker)')

# What a failed case says when it failed only by running out of time:
# ksft's waits ("Waiting for port listen timed out") and commands ("...
# timed out after 20 seconds"). iou-zcrx's server saying "test failed" is
# not one: its deadline (iou-zcrx.c: tstop, with the series' stall
# patch) passes only after 20 s without data, a stall however slow the
# machine.
TIMEOUT_EVIDENCE = ('timed out',)

# A timeout alone does not show a slow case: a listener that failed to
# bind and is still alive, or a receive that stalled, time out the same
# way (ksft's wait_port_listen does not check that the listener lives,
# and a stalled ncdevmem or iou-zcrx server prints nothing more). So a
# case listed in --slow is excused only when its output also carries the
# harness's evidence that it was making progress when its time ran out: a
# line starting with this, saying what advanced and how recently (e.g.
# "harness-progress: 1441792 of 2097152 bytes received, the last 40 ms
# before the deadline"). The upstream tests print none of it.
PROGRESS_EVIDENCE = 'harness-progress: '


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
        self.log = []       # the lines logged since the previous result
        self.diag = []      # the last of them, to show
        # Whether the output ended inside the case, before its result
        # line (parse_tap made it up, failed).
        self.unclosed = False

    def status(self):
        if self.skip:
            return 'skip'
        return 'pass' if self.ok else 'fail'


# The line a KTAP parent prints ahead of its subtests, at their depth.
SUBTEST_RE = re.compile(r'^(?P<indent>\s*)#\s*Subtest:\s*(?P<name>\S.*)$')
UNCLOSED = 'no result line of its own: the output ends inside it'


def parse_tap(text):
    """Parse (K)TAP into (top-level cases, top-level plan).

    KTAP nests subtests by indentation ahead of their parent's result line;
    a top-level result with children is a suite and its leaves are the test
    cases. A parent whose result line never comes (a crash, a hang, a
    killed run: the output ends inside it) still holds the results it got:
    it is a failed case, named by its '# Subtest:' line, marked unclosed.
    """
    cases = []
    plan = None
    pending = {}    # depth -> results seen at that depth, waiting for parent
    plans = {}      # depth -> the plan of the subtests being collected there
    subtests = {}   # depth -> the name of the parent of the subtests there
    diag = []

    def add(case):
        if case.depth == 0:
            cases.append(case)
        else:
            pending.setdefault(case.depth, []).append(case)

    def close_open(depth, log):
        """Makes the parents still open deeper than `depth` (their result
        line never came) cases of their own, innermost first, each holding
        what its subtests reported; the innermost gets `log`."""
        for d in range(max([d for d in list(pending) + list(subtests) if d > depth],
                           default=depth), depth, -1):
            children = pending.pop(d, [])
            name = subtests.pop(d, None)
            if not children and name is None:
                continue
            case = Case(name or '(unnamed)', False, None, UNCLOSED, d - 1)
            case.children = children
            case.plan = plans.pop(d, None)
            case.unclosed = True
            case.log, log = log, []
            case.diag = case.log[-6:]
            add(case)

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
            m = SUBTEST_RE.match(line)
            if m:
                subtests[len(m.group('indent').expandtabs(4)) // 4] = m.group('name').strip()
            text_line = line.strip().lstrip('#').strip()
            if text_line and not text_line.endswith('.speed: normal') \
                    and not text_line.startswith(('KTAP version', 'TAP version', 'Subtest:')):
                diag.append(text_line)
            continue
        depth = len(m.group('indent').expandtabs(4)) // 4
        close_open(depth + 1, [])
        case = Case(m.group('name').strip(), m.group('ok') == 'ok',
                    m.group('directive'), m.group('reason'), depth)
        case.children = pending.pop(depth + 1, [])
        case.plan = plans.pop(depth + 1, None)
        subtests.pop(depth + 1, None)
        case.log, diag = diag, []
        case.diag = case.log[-6:]
        add(case)
    close_open(0, diag)
    return cases, plan


def unclosed(case):
    """The cases under `case`, itself included, whose result line never
    came."""
    out = [case] if case.unclosed else []
    for c in case.children:
        out.extend(unclosed(c))
    return out


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
    a timeout of it is excused (SLOW) only with the evidence of progress
    (PROGRESS_EVIDENCE), and any other failure of it, or no result, still
    fails."""
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


def load_kunit_suites(path):
    """Lines: SUITE, the name of a KUnit suite that must report."""
    names = []
    for num, parts in entries(path, 2):
        if len(parts) != 1:
            sys.exit(f'{path}:{num}: want one KUnit suite name a line')
        names.append(parts[0])
    return names


def judge_kunit(text, required=None, listed_in='harness/kunit-suites'):
    """Every case that ran must pass; every suite in `required` must have
    reported (one that is not listed there is noted)."""
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
        elif not suite.children:
            # No plan, or a plan of none ('1..0'): a suite of ours has
            # cases, so one that reports none ran none of them.
            failed += 1
            lines.append(f'    {suite.name}: no test case results')
        elif suite.status() == 'skip':
            failed += 1
            lines.append(f'    SKIP {suite.name}: the whole suite skipped: {suite.reason}')
        # A suite or case cut off before its result line: what ran of it
        # is judged below, and it fails.
        for c in unclosed(suite):
            failed += 1
            lines.append(f'    FAIL {c.name}: {UNCLOSED} '
                         f'({len(leaves(c)) if c.children else 0} case results)')
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
    if required is not None:
        ran = {suite.name for suite in cases}
        for name in required:
            if name not in ran:
                failed += 1
                lines.append(f'    MISSING KUnit suite {name}: it did not report')
        lines.extend(f'    NOTE: KUnit suite {name} ran but is not in {listed_in}'
                     for name in sorted(ran - set(required)))
    return passed, failed, 0, lines, f'{suites} suites'


def claim_of(claims, name):
    """A case's claim: its own line, else the first line whose name is a
    pattern (fnmatch: test.hw_*) that matches it, else the suite's '*'."""
    if name in claims:
        return claims[name]
    for pattern, claim in claims.items():
        if pattern != '*' and is_pattern(pattern) and fnmatch.fnmatchcase(name, pattern):
            return claim
    return claims.get('*', ('pass', ''))


def is_pattern(name):
    return any(c in name for c in '*?[')


# Unclaimed cases whose reason excuses one way of failing only: one that
# fails another way fails. (suite, case pattern, what its output must not
# show, why.) toeplitz.py's TCP cases are unclaimed for the emulator's
# pace, too few frames in the tool's 4 s; a frame its receiver found
# hashed or steered wrong it counts as fail=N.
UNCLAIMED_UNLESS = (
    ('drivers/net/hw/toeplitz.py', 'test.*tcp_ipv*',
     re.compile(r'count: pass=\d+ nohash=\d+ fail=[1-9]'),
     'the receiver found frames with a wrong hash or on a wrong CPU, which the '
     "emulator's pace does not excuse"),
)


def unexcused(suite, name, case):
    """Why an unclaimed case's failure is not the one its reason excuses
    (UNCLAIMED_UNLESS), or None."""
    for s, pattern, shows, why in UNCLAIMED_UNLESS:
        if s == suite and fnmatch.fnmatchcase(name, pattern):
            hit = next((l for l in case.log + case.diag if shows.search(l)), None)
            if hit is not None:
                return f'{why}: {hit.strip()}'
    return None


def judge_kselftest(suite, text, exp):
    cases, plan = parse_tap(text)
    claims = exp.get(suite, {})
    passed = failed = skipped = 0
    lines = []
    seen = set()
    for case in cases:
        name = short_name(case.name)
        seen.add(name)
        claim, reason = claim_of(claims, name)
        st = case.status()
        timed_out = st == 'fail' and \
            any(t in d for d in case.diag for t in TIMEOUT_EVIDENCE)
        progress = [d for d in case.log if d.startswith(PROGRESS_EVIDENCE)]
        if claim == 'slow' and timed_out and progress:
            # Claimed, but allowed to time out under the debug kernel
            # (--slow): a timeout only, never another failure, and only
            # with the evidence that it was still progressing.
            skipped += 1
            lines.append(f'    SLOW {name}: timed out under the debug kernel, '
                         f'{reason}; {progress[-1]}')
        elif claim == 'unclaimed' and unexcused(suite, name, case):
            failed += 1
            lines.append(f'    FAIL {name}: unclaimed, {reason}; but '
                         f'{unexcused(suite, name, case)}')
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
            if claim == 'slow' and timed_out:
                lines.append('        listed as slow, but a timeout is excused only with '
                             f'the evidence of progress ({PROGRESS_EVIDENCE.strip()}), '
                             'and the output has none: a listener that never came up '
                             'or a stalled receive time out the same way')
            if st == 'fail':
                lines.extend(f'        {d}' for d in case.diag)
    for name, (claim, _) in claims.items():
        if not is_pattern(name) and name not in seen:
            if claim in ('pass', 'slow'):
                failed += 1
            else:
                skipped += 1
            lines.append(f'    MISSING {name}: no result')
    if plan is None or len(cases) < plan:
        failed += 1
        lines.append(f'    incomplete: plan {plan}, {len(cases)} results')
    return passed, failed, skipped, lines, f'{len(cases)} cases'


# socat's bind failure on the peer: 'E bind(5, {AF=10 [2001:...:0002]:54185},
# 28): Address already in use'.
BIND_IN_USE = re.compile(r'E bind\(\d+, \{AF=\d+ \S*:(\d+)\}, \d+\): Address already in use')


def peer_holders(path):
    """The peer's TCP sockets when a failed run ended (guest/run.sh,
    `ss -Htan` in ns-remote): local port -> ['STATE local -> peer', ...];
    None when there is no such file."""
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
    except FileNotFoundError:
        return None
    held = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or ':' not in parts[3]:
            continue
        port = parts[3].rsplit(':', 1)[1]
        if port.isdigit():
            held.setdefault(int(port), []).append(f'{parts[0]} {parts[3]} -> {parts[4]}')
    return held


def with_holders(lines, held):
    """lines, each socat bind failure followed by what held its port on
    the peer (held: peer_holders)."""
    out = []
    for line in lines:
        out.append(line)
        for m in BIND_IN_USE.finditer(line):
            if held is None:
                what = 'unknown (no socket list)'
            else:
                what = '; '.join(held.get(int(m.group(1)), ())) or 'nothing when the run ended'
            out.append(f'        the peer held port {m.group(1)} in: {what}')
    return out


def note_peer_ports(base, r):
    """A kselftest run's failures (r), each socat bind failure followed by
    what held its port on the peer when the run ended (guest/run.sh's
    $name.peer-sockets)."""
    passed, failed, skipped, lines, what = r
    if not any(BIND_IN_USE.search(l) for l in lines):
        return r
    return passed, failed, skipped, with_holders(lines, peer_holders(base + '.peer-sockets')), what


def note_retry(base, r, suite, text, exp, before, flaky):
    """Report the first attempt when the guest ran a suite twice (see
    suite_kselftest in guest/run.sh): the counts are the second attempt's
    (`text`), and the first attempt's failures are listed with their
    lines. A claimed case that failed in attempt 1 and passed in attempt 2
    is flaky: it goes in flaky[suite]. One that was flaky in the previous
    run too (before[suite]) fails: a retry excuses a case once, not run
    after run."""
    try:
        with open(base + '.attempt1', encoding='utf-8', errors='replace') as f:
            first, first_plan = parse_tap(f.read())
    except FileNotFoundError:
        return r
    passed, nfail, skipped, lines, what = r
    failed1 = [c for c in first if c.status() == 'fail']
    # The guest retries only a whole first attempt (retry_counts): one cut
    # short was killed or hung, which no retry excuses.
    if first_plan is None or len(first) < first_plan:
        nfail += 1
        lines = lines + [f'    FAIL attempt 1: cut short (plan {first_plan}, {len(first)} '
                         'results): killed or hung, which a retry does not excuse']
    lines = lines + [f'    RETRIED: attempt 1 failed '
                     f'{", ".join(short_name(c.name) for c in failed1) or "nothing"} '
                     '(port listen timeout, '
                     "or an iou-zcrx client past the test's deadline for it); "
                     'the counts are attempt 2']
    held = peer_holders(base + '.attempt1.peer-sockets')
    for c in failed1:
        lines.append(f'    attempt 1: FAIL {short_name(c.name)}')
        lines.extend(with_holders([f'        {d}' for d in c.diag], held))
    second = {short_name(c.name): c.status() for c in parse_tap(text)[0]}
    claims = exp.get(suite, {})
    for c in failed1:
        name = short_name(c.name)
        claim = claim_of(claims, name)[0]
        if claim == 'unclaimed' or second.get(name) != 'pass' \
                or name in flaky.get(suite, []):
            continue
        flaky.setdefault(suite, []).append(name)
        if name in before.get(suite, ()):
            passed -= 1
            nfail += 1
            lines.append(f'    FAIL {name}: flaky twice in a row (failed in attempt 1 '
                         'and passed on the retry, in this run and in the previous '
                         'one): fix it, do not retry it')
        else:
            lines.append(f'    FLAKY {name}: failed in attempt 1, passed in attempt 2 '
                         '(flaky in the next run too, it fails)')
    return passed, nfail, skipped, lines, f'{what}, retried once'


# What makes a failure of a case a timeout the guest retries the suite
# for (see suite_kselftest in guest/run.sh).
RETRY_CAUSES = re.compile(
    r'Exception: Waiting for port listen timed out'
    r'|TimeoutExpired: Command .*iou-zcrx -c ')


def retry_counts(suite, text, exp):
    """The claimed cases of a kselftest run that failed, and how many of
    them failed on a timeout (RETRY_CAUSES in the lines since the result
    before): the guest runs the suite again when the two are equal and
    not 0. A case prints its exception before its result line, and may
    print more than one cause: cases count, not lines.
    Unclaimed cases, which fail for what the device or QEMU cannot do,
    count neither way. A run cut short (no plan, or fewer results than
    it) is not retried: a case that never printed its result cannot be
    told from a hang; it counts as a failure on no timeout."""
    claims = exp.get(suite, {})
    nfail = ntimeout = 0
    cause = False
    plan, results = None, 0
    for line in text.splitlines():
        p = re.match(r'1\.\.([0-9]+)', line)
        if p and plan is None:
            plan = int(p.group(1))
        m = re.match(r'(not )?ok [0-9]+ (\S+)', line)
        if m:
            results += 1
            if m.group(1) and claim_of(claims, short_name(m.group(2)))[0] != 'unclaimed':
                nfail += 1
                ntimeout += cause
            cause = False
        elif RETRY_CAUSES.search(line):
            cause = True
    if plan is None or results < plan:
        nfail += 1
    return nfail, ntimeout


def load_flaky(path):
    """The flaky cases a run recorded (save_flaky): suite -> set of cases.
    Nothing when there is no such file (the first run)."""
    out = {}
    try:
        with open(path, encoding='utf-8') as f:
            for line in f:
                if line.startswith('#') or '\t' not in line:
                    continue
                suite, case = line.rstrip('\n').split('\t', 1)
                out.setdefault(suite, set()).add(case)
    except FileNotFoundError:
        pass
    return out


def save_flaky(path, before, now, ran):
    """Record the flaky cases of this run (now: suite -> cases) for the
    next one. A suite that did not run this time keeps what it had."""
    keep = {s: set(c) for s, c in before.items() if s not in ran}
    for s, c in now.items():
        keep[s] = set(c)
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write('# The cases that passed only on a retry in the last run of their\n'
                '# suite (results.py --flaky-history): SUITE<TAB>CASE.\n')
        for s in sorted(keep):
            for c in sorted(keep[s]):
                f.write(f'{s}\t{c}\n')
    os.replace(tmp, path)


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


NOT_OK_RE = re.compile(r'^\s*not ok \d+', re.M)


def note_exit(r, rc, text):
    """A suite's exit status. One the guest killed fails, whatever its TAP
    says and whatever the expectations claim of its cases: what it did not
    get to is unknown. Its exit status says so: timeout's, after TERM (124)
    or the KILL that follows it (-k, 137; the OOM killer's KILL too). A
    suite exits non-zero when a case of its failed (ksft_exit: 1), claimed
    or not; one that exits non-zero with no case failed (`text`, its TAP)
    failed outside its cases: its setup or teardown, an exception after
    its last result. It fails too, and so does one whose status the guest
    did not record (rc None)."""
    passed, failed, skipped, lines, what = r
    if rc is None:
        return passed, failed + 1, skipped, lines + [
            '    NO EXIT STATUS: the guest recorded none (no .rc file)'], what
    if rc in (124, 137):
        how = 'SIGTERM' if rc == 124 else 'SIGKILL'
        return passed, failed + 1, skipped, lines + [
            f'    KILLED: ran past TEST_TIMEOUT (exit {rc}, {how})'], what
    if rc != 0 and not NOT_OK_RE.search(text):
        return passed, failed + 1, skipped, lines + [
            f'    EXIT {rc}: no case failed, yet the suite exited {rc}: it failed '
            'outside its cases (setup, teardown, an error after its last result); '
            'its output says where'], what
    return r


# The taint bits (include/linux/panic.h), by number: the letter the kernel
# shows for each (kernel/panic.c, taint_flags) and what sets it.
TAINTS = (
    'P (a proprietary module)', 'F (a forced module load)', 'S (a CPU out of spec)',
    'R (a forced module unload)', 'M (a machine check)', 'B (a bad page, or slab corruption)',
    'U (set from user space)', 'D (an oops: the kernel died)', 'A (an ACPI table overridden)',
    'W (a WARN)', 'C (a staging driver)', 'I (a firmware workaround)',
    'O (an out-of-tree module)', 'E (an unsigned module)', 'L (a soft lockup)',
    'K (a live patch)', 'X (an auxiliary taint)', 'T (a randstruct mismatch)',
    'N (test code ran)', 'J (fwctl used)')
# N: a KUnit suite that runs sets it (igb_rs's run each time the module
# loads), and so does loading a test module: what the run is for, not a
# finding.
TAINT_TEST = 18
# What DMA-API debugging's debugfs "disabled" reads when it is off (a
# bool: Y or N).
OFF = ('Y', 'y', '1')
# The line kasan_init_generic() prints at boot (mm/kasan/generic.c): KASAN
# checks from then on.
KASAN_ON = 'KernelAddressSanitizer initialized'
# What kmemleak prints when it turns itself off (mm/kmemleak.c,
# kmemleak_disable(), after an error of its own).
KMEMLEAK_OFF = 'kmemleak: Kernel memory leak detector disabled'
# The time dmesg puts ahead of a line.
LOG_TIME_RE = re.compile(r'^\[\s*\d+\.\d+\] ?')


def taints(mask):
    return ', '.join(TAINTS[i] if i < len(TAINTS) else f'bit {i}'
                     for i in range(mask.bit_length()) if mask >> i & 1)


def number(fields, key):
    try:
        return int(fields[key])
    except (KeyError, ValueError):
        return None


def load_kernel_state(path):
    """The lines of kernel-state.txt (kernel_state in guest/run.sh), in
    order: (when, suite, {key: value}); None without the file."""
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
    except FileNotFoundError:
        return None
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out.append((parts[0], parts[1],
                        dict(p.split('=', 1) for p in parts[2:] if '=' in p)))
    return out


def stretch(a, b):
    """The name of what ran between two points kernel-state.txt records:
    a suite's name from its start to its end."""
    if a[0] == 'start' and b[0] == 'end' and a[1] == b[1]:
        return a[1]
    if a[0] == 'boot':
        return 'setup (before the first suite)'
    if b[0] == 'final':
        return 'the checks after the last suite'
    if a[0] == 'end' and b[0] == 'start':
        return f'between {a[1]} and {b[1]}'
    return f'between {a[0]} {a[1]} and {b[0]} {b[1]}'


class KernelRun:
    """What the guest recorded of the kernel (guest/run.sh): its log, read
    from kmsg.txt (guest/kmsg.py's), or from dmesg.txt when there is none;
    and its state at each suite's start and end, kernel-state.txt."""

    def __init__(self, res_dir):
        self.states = load_kernel_state(os.path.join(res_dir, 'kernel-state.txt'))
        # The log's copy for a human (and for the C core's run's reader).
        self.dmesg = os.path.exists(os.path.join(res_dir, 'dmesg.txt'))
        self.log = None     # kmsg.Log
        self.lines = None   # (record's sequence number or None, dmesg line)
        try:
            with open(os.path.join(res_dir, 'kmsg.txt'), encoding='utf-8',
                      errors='replace') as f:
                self.log = kmsg.parse(f.read())
            self.lines = list(self.log.lines())
        except FileNotFoundError:
            try:
                with open(os.path.join(res_dir, 'dmesg.txt'), encoding='utf-8',
                          errors='replace') as f:
                    self.lines = [(None, l.rstrip('\n')) for l in f]
            except FileNotFoundError:
                pass
        # Where each stretch of the log begins: (sequence number, name).
        self.marks = []
        for when, suite, fields in self.states or []:
            seq = number(fields, 'seq')
            name = {'boot': 'setup (before the first suite)', 'start': suite,
                    'final': 'the checks after the last suite'}.get(when)
            if seq is not None and name is not None:
                self.marks.append((seq, name))

    def during(self, seq):
        """What ran when record seq was written; None when that is not
        known."""
        if seq is None or self.states is None:
            return None
        name = 'boot'
        for start, n in self.marks:
            if seq >= start:
                name = n
        return name

    def final_seq(self):
        for when, _, fields in self.states or []:
            if when == 'final':
                return number(fields, 'seq')
        return None

    def recorded(self, suite):
        """Whether the kernel's state was recorded at suite's start and
        end."""
        whens = {w for w, s, _ in self.states or [] if s == suite}
        return {'start', 'end'} <= whens

    def findings(self):
        """What changed in the kernel's state over each stretch of the run,
        {stretch: [lines]}: a taint bit that is new (but N), lockdep
        turning itself off, bytes stuck in a transmit queue's byte queue
        limits."""
        out = {}
        s = self.states or []
        stuck = None
        for a, b in zip(s, s[1:]):
            found = []
            ta, tb = number(a[2], 'tainted'), number(b[2], 'tainted')
            if ta is not None and tb is not None and tb & ~ta & ~(1 << TAINT_TEST):
                found.append(f'TAINTED: {taints(tb & ~ta & ~(1 << TAINT_TEST))} '
                             f'(tainted {ta} -> {tb})')
            if a[2].get('debug_locks') == '1' and b[2].get('debug_locks') == '0':
                found.append('LOCKDEP OFF: debug_locks 1 -> 0: lockdep turned itself off '
                             '(after a report of its own, a taint, or a limit it hit) and '
                             'checked nothing from then on')
            # Named once, after the stretch that left them: a later suite
            # runs on the stuck queue, and its own findings say what that did.
            if b[2].get('bql_stuck') not in (None, stuck):
                found.append(f'BQL STUCK: {b[2]["bql_stuck"]} (queue:bytes): bytes '
                             'byte queue limits count as sent were not completed 5 s '
                             'after the traffic ended; a queue they fill never sends '
                             'again')
            if 'bql_queues' in b[2]:
                stuck = b[2].get('bql_stuck')
            if found:
                out.setdefault(stretch(a, b), []).extend(found)
        return out


def note_kernel_state(r, found):
    """A suite after which the kernel was tainted, lockdep off or a queue's
    bytes stuck, fails
    (KernelRun.findings: found, the lines for this suite)."""
    if not found:
        return r
    passed, failed, skipped, lines, what = r
    return passed, failed + len(found), skipped, lines + [f'    {l}' for l in found], what


def judge_kernel_log(run, rest, faults_ran):
    """The kernel log: whole, and without a checker's report. rest: what
    changed in the kernel's state outside the suites judged (setup, the
    checks at the end, a suite not in the list)."""
    fails = []
    log = run.log
    if not run.dmesg:
        fails.append('no dmesg.txt: the guest did not save the log at its end')
    if log is None:
        fails.append("no kmsg.txt: the guest's log recorder did not run"
                     + ('; dmesg.txt holds what the buffer still had at the end'
                        if run.lines is not None else ''))
    else:
        first, last, final = log.first_seq(), log.last_seq(), run.final_seq()
        if first is None:
            fails.append('kmsg.txt holds no record')
        elif first != 0:
            fails.append(f'the log starts at record {first}, not at boot: records 0 to '
                         f'{first - 1} were overwritten before the recorder read them')
        if log.lost:
            fails.append(f'records lost: {"; ".join(log.lost[:3])}')
        if not log.ended:
            fails.append('the recorder did not stop at the end of the run (killed, or '
                         'the guest stopped): the log may be cut short')
        if None not in (last, final) and last < final:
            fails.append(f'the log ends at record {last}, before the mark of the '
                         f'end of the run (record {final})')
    if run.states is None:
        fails.append('no kernel-state.txt: taint, lockdep and DMA-API debugging '
                     'were not recorded')
    else:
        boot = [f for w, _, f in run.states if w == 'boot']
        if not boot:
            fails.append('kernel-state.txt has no boot line')
        else:
            t = number(boot[0], 'tainted')
            if t is not None and t & ~(1 << TAINT_TEST):
                fails.append(f'tainted before the first suite: {taints(t & ~(1 << TAINT_TEST))}')
            if boot[0].get('debug_locks') == '0':
                fails.append('lockdep was off before the first suite (debug_locks 0)')
        ends = [f for w, _, f in run.states if w == 'end']
        # GUEST_NET=0 (check-series's boots) wires no NIC: there are no
        # queues to read, and no suite but kunit's can mean anything.
        if boot and boot[0].get('net') == 'unwired':
            wired = sorted({s for w, s, _ in run.states if w == 'start' and s != 'kunit'})
            if wired:
                fails.append(f"kernel-state.txt: {', '.join(wired)} ran with no network "
                             'wired (GUEST_NET=0), which only the kunit suite can')
        elif ends and not any('bql_queues' in f for f in ends):
            fails.append("kernel-state.txt: the NIC's transmit queues were read at no "
                         "suite's end: bytes stuck in them went unseen")
        fails.extend(f'kernel-state.txt: no taint recorded at {w} {s}'
                     for w, s, f in run.states if number(f, 'tainted') is None)
        fails.extend(f'kernel-state.txt: no log mark at {w} {s}: the reports after it '
                     'are named after what ran before'
                     for w, s, f in run.states if w != 'end' and number(f, 'seq') is None)
    for name, found in rest.items():
        fails.extend(f'{name}: {l}' for l in found)
    bad, gave_up = [], []
    for seq, line in run.lines or []:
        text = LOG_TIME_RE.sub('', line, count=1)
        if not KERNEL_SPLAT_RE.search(text) and not KTAP_BAD_RE.search(text):
            continue
        where = run.during(seq)
        shown = f'during {where}: {line}' if where else line
        (gave_up if faults_ran and CHECKER_GAVE_UP_RE.search(text) else bad).append(shown)
    for rec in log.records if log is not None else []:
        text = rec.lines[0]
        if rec.level > 3 or KERNEL_SPLAT_RE.search(text) or KTAP_BAD_RE.search(text) \
                or ERR_LEVEL_BENIGN_RE.search(text):
            continue
        where = run.during(rec.seq)
        if where == 'faults' or (faults_ran and CHECKER_GAVE_UP_RE.search(text)):
            continue
        shown = f'{rec.stamp()} {text} (level {rec.level})'
        bad.append(f'during {where}: {shown}' if where else shown)
    lines = [f'    {l}' for l in fails + bad[:10]]
    if len(bad) > 10:
        lines.append(f'    and {len(bad) - 10} more (dmesg.txt)')
    lines += [f'    NOTE (an injected allocation failure): {l}' for l in gave_up[:4]]
    what = f'{len(bad)} warnings or bugs'
    if log is not None:
        what += f' in {len(log.records)} records'
    ok = not (fails or bad)
    return int(ok), int(not ok), 0, lines, what


def judge_kasan(run):
    """The debug kernel's log shows KASAN on."""
    on = [LOG_TIME_RE.sub('', l, count=1) for _, l in run.lines or [] if KASAN_ON in l]
    if on:
        return 1, 0, 0, [], on[0]
    return 0, 1, 0, [f'    no "{KASAN_ON}" in the kernel log: KASAN is off in this kernel, '
                     'or the log does not start at boot'], 'KASAN not shown on'


def judge_dma_api(res_dir, run):
    """DMA-API debugging: no error counted, and on from boot to the end,
    but for the fault-injection suite turning it off (its own allocation
    failing: CHECKER_GAVE_UP_RE). It prints the first error it finds, and
    only counts the ones after it: the count, not the log, says whether
    there were more."""
    fails, notes = [], []
    try:
        with open(os.path.join(res_dir, 'dma-api-errors.txt'), encoding='utf-8',
                  errors='replace') as f:
            text = f.read().strip()
    except FileNotFoundError:
        text = None
        fails.append('no dma-api-errors.txt: DMA-API debugging not shown on '
                     '(no /sys/kernel/debug/dma-api)')
    n = None
    if text is not None:
        n = int(text) if text.isdigit() else -1
        if n:
            fails.append(f'error_count {text!r}: see DMA-API lines in dmesg.txt')
    s = run.states or []
    seen = [f['dma_disabled'] for _, _, f in s if 'dma_disabled' in f]
    if not seen:
        fails.append('DMA-API debugging on or off not recorded (kernel-state.txt)')
    elif seen[0] in OFF:
        fails.append('DMA-API debugging was off before the first suite')
    for i, (a, b) in enumerate(zip(s, s[1:])):
        ea, eb = number(a[2], 'dma_errors'), number(b[2], 'dma_errors')
        if None not in (ea, eb) and eb > ea:
            notes.append(f'{eb - ea} errors during {stretch(a, b)}')
        if a[2].get('dma_disabled') in OFF or b[2].get('dma_disabled') not in OFF:
            continue
        name = stretch(a, b)
        after = [x[1] for x in s[i + 2:] if x[0] == 'start']
        if name == 'faults':
            notes.append('NOTE: DMA-API debugging turned itself off during faults (an '
                         'allocation of its own failed, injected): the suites after it '
                         f'({", ".join(after) or "none"}) ran without it')
        else:
            fails.append(f'DMA-API debugging turned itself off during {name}: nothing '
                         'after it was checked')
    ok = not fails
    return (int(ok), int(not ok), 0, [f'    {l}' for l in fails + notes],
            f'{n} errors' if n is not None else 'no error count')


def judge_kmemleak(res_dir, run):
    """kmemleak: on to the end (the scan ran), and no leak found."""
    fails = []
    n = None
    path = os.path.join(res_dir, 'kmemleak.txt')
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            n = sum(1 for l in f if l.startswith('unreferenced object'))
    except FileNotFoundError:
        fails.append('no kmemleak.txt: kmemleak not shown on (no /sys/kernel/debug/kmemleak)')
    try:
        with open(os.path.join(res_dir, 'kmemleak-scan.txt'), encoding='utf-8',
                  errors='replace') as f:
            scan = f.read().strip()
        if scan != 'ok':
            fails.append(f'the scan {scan}: kmemleak is off, and lists nothing')
    except FileNotFoundError:
        fails.append("no kmemleak-scan.txt: the scan's outcome was not recorded")
    for seq, line in run.lines or []:
        if KMEMLEAK_OFF in line:
            where = run.during(seq)
            fails.append(f'kmemleak turned itself off{f" during {where}" if where else ""}: '
                         f'{line}')
    if n:
        fails.append(f'{n} leaked objects: {path}')
    ok = not fails
    return (int(ok), int(not ok), 0, [f'    {l}' for l in fails],
            f'{n} objects' if n is not None else 'no list')


def judge_page_pools(res_dir):
    """page-pools: every page pool of the guest's own devices destroyed
    during the run had its buffers back at its end (guest/run.sh,
    pools_left): a reference lost keeps the pool, and its memory, for
    ever."""
    try:
        with open(os.path.join(res_dir, 'page-pools.txt'), encoding='utf-8',
                  errors='replace') as f:
            text = f.read().strip()
    except FileNotFoundError:
        return 0, 1, 0, ['    no page-pools.txt: the pools were not checked'], 'not checked'
    if text.startswith('ok'):
        return 1, 0, 0, [], text[len('ok: '):] or 'ok'
    if text.startswith('left: '):
        return 0, 1, 0, [f'    destroyed pools that still hold buffers 60 s after the last '
                         f'suite: {text[len("left: "):]}'], 'buffers not given back'
    return 0, 1, 0, [f'    {text or "page-pools.txt is empty"}'], 'not checked'


def main():
    args = sys.argv[1:]
    if args[:1] == ['--retry-counts']:
        if len(args) != 4:
            sys.exit(__doc__)
        with open(args[3], encoding='utf-8', errors='replace') as f:
            nfail, ntimeout = retry_counts(args[2], f.read(), load_expectations(args[1]))
        print(nfail, ntimeout)
        return 0
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
    history = None
    if '--flaky-history' in args:
        i = args.index('--flaky-history')
        history = args[i + 1]
        del args[i:i + 2]
    kunit_list = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'kunit-suites')
    if '--kunit-suites' in args:
        i = args.index('--kunit-suites')
        kunit_list = args[i + 1]
        del args[i:i + 2]
    debug = '--debug' in args
    if debug:
        args.remove('--debug')
    if len(args) != 2:
        sys.exit(__doc__)
    exp = load_expectations(args[0])
    if slow is not None:
        load_slow(slow, exp)
    required = load_kunit_suites(kunit_list)
    listed_in = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(kunit_list))),
                             os.path.basename(kunit_list))
    # The flaky cases of the previous run, and of this one (note_retry).
    before = load_flaky(history) if history is not None else {}
    flaky = {}
    res_dir = args[1]

    total = [0, 0, 0]
    out = []
    failed = []

    def report(name, p, f, s, lines, what):
        if label is not None:
            # A suite that passed only on a retry says so, for the run that
            # takes these lines to count it in its flaky total.
            st = 'fail' if f else 'flaky' if name in flaky else 'pass'
            detail = '; '.join([what] + [l.strip() for l in lines])
            out.append(f"{name}{label}\t{st}\t{detail}")
            return
        total[0] += p
        total[1] += f
        total[2] += s
        verdict = 'FAIL' if f else 'ok'
        if f:
            failed.append(name)
        out.append(f'{verdict:4} {name}: {p} passed, {f} failed, {s} skipped ({what})')
        out.extend(lines)

    def report_tsv(path):
        with open(path, encoding='utf-8') as f:
            for line in f:
                name, st, what = line.rstrip('\n').split('\t', 2)
                if st == 'flaky':
                    # Another run's suite that passed only on a retry
                    # (--tsv): counted here, its cases in that run's
                    # history.
                    flaky.setdefault(name, set())
                    st = 'pass'
                report(name, int(st == 'pass'), int(st != 'pass'), 0, [], what)

    if static:
        report_tsv(static)

    order = []
    order_file = os.path.join(res_dir, 'suites')
    if os.path.exists(order_file):
        with open(order_file, encoding='utf-8') as f:
            order = f.read().split()
    # What the guest recorded of the kernel. Once anything the guest
    # writes is there, it ran, and each check of the kernel needs its file:
    # one missing fails.
    run = KernelRun(res_dir)
    guest_ran = run.states is not None or run.lines is not None or any(
        os.path.exists(os.path.join(res_dir, n))
        for n in ['kmemleak.txt', 'kmemleak-scan.txt', 'dma-api-errors.txt', 'page-pools.txt']
        + [s.replace('/', '_') + '.tap' for s in order])
    found = run.findings()
    faults_ran = 'faults' in order or any(s == 'faults' for _, s, _ in run.states or [])
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
                rc = int(f.read().strip())
        except (FileNotFoundError, ValueError):
            # None, an empty file or a part of a number: not recorded.
            rc = None
        if suite == 'kunit':
            r = judge_kunit(text, required, listed_in)
        elif suite in ('net-env', 'demo', 'devmem-bind', 'faults', 'races',
                       'nic-lifecycle', 'nic-hds', 'nic-filters', 'nic-jumbo', 'nic-rss',
                       'nic-ethtool', 'nic-rx-alloc-fail', 'devmem-rx-check', 'devmem-tokens'):
            r = note_leftover(base, judge_plain(text), True)
        else:
            r = note_peer_ports(base, judge_kselftest(suite, text, exp))
            r = note_retry(base, r, suite, text, exp, before, flaky)
            r = note_leftover(base, r, False)
        r = note_exit(r, rc, text)
        state = found.pop(suite, [])
        if run.states is not None and not run.recorded(suite):
            state.append('KERNEL STATE: not recorded at its start and end (kernel-state.txt)')
        r = note_kernel_state(r, state)
        report(suite, *r)

    # A WARN, BUG or sanitizer report anywhere in the run fails it, even
    # when every test passed, and so does a checker that was not on to
    # find one.
    if guest_ran:
        report('kernel-log', *judge_kernel_log(run, found, faults_ran))
        if debug:
            report('kasan', *judge_kasan(run))
        report('dma-api', *judge_dma_api(res_dir, run))
        report('kmemleak', *judge_kmemleak(res_dir, run))
        report('page-pools', *judge_page_pools(res_dir))

    if after:
        report_tsv(after)

    print('\n'.join(out))
    if history is not None:
        ran = [s for s in order
               if os.path.exists(os.path.join(res_dir, s.replace('/', '_') + '.tap'))]
        save_flaky(history, before, {s: c for s, c in flaky.items() if s in ran}, ran)
    if label is not None:
        return 0
    # Again at the end, where a log's tail shows it: the suites that
    # failed, whose lines above say why.
    if failed:
        print(f'failed: {len(failed)} ({", ".join(failed)}): their lines above say why')
    print(f'flaky: {len(flaky)} suites'
          + (f' ({", ".join(sorted(flaky))})' if flaky else ''))
    print(f'{total[0]} passed, {total[1]} failed, {total[2]} skipped')
    return 1 if total[1] else 0


if __name__ == '__main__':
    sys.exit(main())
