#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The full test suite, in order: static checks, the kernel build (with
# the compile-fail examples and the stack frames), the kselftest build,
# the main VM boot (the topology check, every KUnit suite, the project's
# suites and the upstream kselftests), the 4-vCPU boot (WIDE_SUITES), then
# the C core's kernel (parity.sh). Prints one line per suite and ends with
# 'N passed, M failed, K skipped'; exits non-zero on any failure.

set -euo pipefail
. "$(dirname "$0")/lib.sh"
started=$(date +%s) commit=$(run_commit)

# Whether the user chose the suites (DEBUG=1 adds to the default set only).
suites_chosen=${CHECK_SUITES:+yes}
# Whether this is the whole run, whose summary results/ keeps: not when the
# user chose the suites of either boot (CHECK_SUITES, WIDE_SUITES) or
# whether the C core runs (CHECK_PARITY).
whole=yes
[ -z "${CHECK_SUITES:-}${WIDE_SUITES+set}${CHECK_PARITY+set}" ] || whole=
CHECK_SUITES=${CHECK_SUITES:-"net-env kunit devmem-bind drivers/net/hw/devmem.py drivers/net/hw/nk_devmem.py devmem-rx-check devmem-tokens
	drivers/net/hw/iou-zcrx.py nic-hds nic-jumbo nic-filters nic-rss nic-lifecycle
	nic-ethtool drivers/net/ping.py drivers/net/hds.py drivers/net/queues.py drivers/net/stats.py
	drivers/net/napi_id.py drivers/net/napi_threaded.py drivers/net/so_txtime.py
	drivers/net/hw/rss_api.py drivers/net/hw/userns_devmem.py drivers/net/hw/tso.py
	drivers/net/ring_reconfig.py drivers/net/hw/nk_netns.py drivers/net/hw/nk_qlease.py"}
# The suites that need more CPUs than the main boot's 2, and those that
# time their traffic, in a boot of their own with 4 vCPUs after the main
# one, so that the main one keeps the 2 the benchmarks and the rest are
# sized for: irq.py moves each queue's interrupt to a CPU of its own and to
# mask 5 (CPUs 0 and 2), which a 2-CPU guest refuses (EOVERFLOW);
# toeplitz.py's RPS cases need two CPUs no queue interrupt uses; gro.py,
# csum.py and ntuple.py count frames against fixed waits. WIDE_SUITES=""
# skips the boot; a user's CHECK_SUITES runs it only when WIDE_SUITES is
# given too.
# The debug kernel runs irq.py only: its packet rate is far below what the
# others count on.
if [ -n "$suites_chosen" ]; then
	WIDE_SUITES=${WIDE_SUITES:-}
elif [ "${DEBUG:-0}" = 1 ]; then
	WIDE_SUITES=${WIDE_SUITES-"drivers/net/hw/irq.py"}
else
	WIDE_SUITES=${WIDE_SUITES-"drivers/net/hw/irq.py drivers/net/hw/toeplitz.py drivers/net/hw/csum.py
		drivers/net/hw/ntuple.py drivers/net/gro.py"}
fi
# One boot runs them all (results/check.txt's vm-boot line says how long);
# the timeout only stops a hung guest. The wide boot
# has a timeout of its own, about five times what it takes (7 minutes, 4
# on the debug kernel), so that a guest hung in its boot fails the run
# within the hour rather than at the main boot's timeout.
vm_timeout=2100
wide_timeout=2100
out=$CACHE_DIR/check
# DEBUG=1: the same suites on the debug kernel (config/debug.config: KASAN,
# the refcount trackers, fault injection, ...), built in a directory of its
# own so that neither build undoes the other. It runs several times slower:
# the VM and each test get more time, and the C core's second kernel is
# left out unless CHECK_PARITY=1 asks for it. The default set gets the
# fault-injection suite, which needs this kernel (fail-nth, failslab), and
# the race suite, whose findings only this kernel's checkers report (KASAN,
# the refcount trackers, the hung-task detector).
if [ "${DEBUG:-0}" = 1 ]; then
	export KBUILD_OUT=$CACHE_DIR/build-debug
	export FRAGMENTS="$HARNESS_DIR/config/vm.config $HARNESS_DIR/config/devmem.config $HARNESS_DIR/config/debug.config"
	export TEST_TIMEOUT=${TEST_TIMEOUT:-900}
	# Upstream's Python tests wait a fixed time (5 s for a listener, 20 s
	# for a command) sized for kernels without these checkers: stretched
	# here, each stretch reported in the case's output.
	export SLOW_WAITS=${SLOW_WAITS:-6}
	CHECK_PARITY=${CHECK_PARITY:-0}
	# A whole run's boot takes close to two hours of TCG; the timeout
	# only stops a hung guest, each suite has its own.
	vm_timeout=10800
	wide_timeout=1200
	out=$CACHE_DIR/check-debug
	# nic-rx-alloc-fail: the page pool's allocations failing under
	# traffic (fail_page_alloc's stack filter). faults last: it makes the
	# checkers' own allocations fail too, which turns DMA-API debugging
	# off for whatever runs after it.
	[ -n "$suites_chosen" ] || CHECK_SUITES="$CHECK_SUITES nic-rx-alloc-fail races faults"
fi
export VM_TIMEOUT=${VM_TIMEOUT:-$vm_timeout}
vmres=$out/vm
mkdir -p "$out"
static=$out/static.tsv
: >"$static"

step() { # name command...
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	info "$name"
	set +e
	"$@"
	rc=$?
	set -e
	printf '%s\t%s\t%s\n' "$name" "$([ $rc -eq 0 ] && echo pass || echo fail)" \
		"$(($(date +%s) - t0)) s" >>"$static"
	return $rc
}

"$HARNESS_DIR/static.sh" >>"$static" || printf 'static\tfail\tstatic.sh failed\n' >>"$static"

vm_ok=yes
step kernel-build "$HARNESS_DIR/kernel.sh" || vm_ok=no
# Runs a check that prints its own result line (NAME, pass or fail,
# detail), in a subshell. One that prints no result line, or exits
# non-zero without a failed one, crashed: it gets a failed line, so that
# a check cannot vanish from the table.
checker() { # name command...
	local name=$1 res rc got why=
	shift
	res=$(mktemp)
	set +e
	("$@") >"$res"
	rc=$?
	set -e
	cat "$res" >>"$static"
	got=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$res")
	rm -f "$res"
	if [ -z "$got" ]; then
		why="no result line (exit status $rc): it crashed; its messages are above"
	elif [ $rc -ne 0 ] && [[ $got != *fail* ]]; then
		why="exit status $rc after a pass line: it crashed; its messages are above"
	fi
	[ -z "$why" ] || printf '%s\tfail\t%s\n' "$name" "$why" >>"$static"
	return 0
}
# The examples that must not compile (and their twins, which must),
# against the kernel crate just built.
compile_fail_examples() {
	local rs
	mapfile -t rs < <(git -C "$TOP_DIR" ls-files '*.rs')
	cd "$TOP_DIR" && python3 "$HARNESS_DIR/compile_fail.py" "$KBUILD_OUT" "$KERNEL_TREE" "${rs[@]}"
}
if [ $vm_ok = yes ]; then
	checker compile-fail compile_fail_examples
	# Rust gets no -Wframe-larger-than: its frames, against the limit.
	checker stack-frames python3 "$HARNESS_DIR/stack_frames.py" "$KBUILD_OUT"
fi
[ $vm_ok = yes ] && { step kselftest-build "$HARNESS_DIR/kselftest.sh" || vm_ok=no; }

if [ $vm_ok = yes ]; then
	# shellcheck disable=SC2086
	step vm-boot "$HARNESS_DIR/vm.sh" "$vmres" $CHECK_SUITES || true
else
	rm -rf "$vmres"
	mkdir -p "$vmres"
	echo "$CHECK_SUITES" >"$vmres/suites"
fi

# The same bad-input scenarios on a kernel with the C core, compared case
# by case, and the devmem data path under it (CHECK_PARITY=0 skips the
# second kernel).
c_suites() {
	local s
	for s in $CHECK_SUITES; do
		case $s in
		drivers/net/hw/devmem.py | drivers/net/hw/nk_devmem.py | devmem-rx-check | devmem-tokens) echo "$s" ;;
		esac
	done
	return 0
}
after=$out/after.tsv
: >"$after"
if [ $vm_ok = yes ] && [ -n "$WIDE_SUITES" ]; then
	t0=$(date +%s)
	boot=pass
	# shellcheck disable=SC2086 # one word per suite
	VM_CPUS=4 VM_TIMEOUT=${WIDE_VM_TIMEOUT:-$wide_timeout} "$HARNESS_DIR/vm.sh" "$out/vm-wide" $WIDE_SUITES >&2 ||
		boot=fail
	printf 'vm-boot (4 vCPUs)\t%s\t%s s\n' "$boot" "$(($(date +%s) - t0))" >>"$after"
	debug=()
	[ "${DEBUG:-0}" = 1 ] && debug=(--debug)
	python3 "$HARNESS_DIR/results.py" "$HARNESS_DIR/expectations" "$out/vm-wide" \
		--tsv ' (4 vCPUs)' "${debug[@]}" --flaky-history "$out/flaky-wide.txt" >>"$after" ||
		printf 'results (4 vCPUs)\tfail\tresults.py failed\n' >>"$after"
fi
if [ $vm_ok = yes ] && [ "${CHECK_PARITY:-1}" = 1 ] && [[ " $CHECK_SUITES " == *" devmem-bind "* ]]; then
	info "parity (C core)"
	# shellcheck disable=SC2046 # one word per suite
	"$HARNESS_DIR/parity.sh" "$vmres" $(c_suites) >>"$after" || printf 'parity\tfail\tparity.sh failed\n' >>"$after"
fi

echo
slow=()
[ "${DEBUG:-0}" = 1 ] && slow=(--slow "$HARNESS_DIR/expectations.debug")
# The debug kernel's run must show its own checkers on (KASAN).
debug=()
[ "${DEBUG:-0}" = 1 ] && debug=(--debug)
# The cases that passed only on a retry, kept from one run to the next
# beside the VM's results (which each boot starts afresh), per kernel:
# DEBUG=1 has its own in check-debug. One that does so twice in a row
# fails.
lines=$out/results.txt
set +e
python3 "$HARNESS_DIR/results.py" "$HARNESS_DIR/expectations" "$vmres" --static "$static" --after "$after" "${slow[@]}" "${debug[@]}" \
	--flaky-history "$out/flaky.txt" | tee "$lines"
rc=${PIPESTATUS[0]}
set -e

# The summary of the whole run, replaced by each: results/check.txt
# (results/check-debug.txt for DEBUG=1), which the README points at. A
# run of chosen suites or boots is not the whole run: it leaves the file
# alone.
if [ "$whole" = yes ]; then
	summary=$TOP_DIR/results/check.txt title=
	if [ "${DEBUG:-0}" = 1 ]; then
		summary=$TOP_DIR/results/check-debug.txt title=" DEBUG=1"
	fi
	write_summary "$summary" "make check$title" "$started" "$commit" "$lines"
	info "summary in ${summary#"$TOP_DIR"/}"
fi
exit "$rc"
