#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The full test suite, in order: static checks, the kernel build, the
# kselftest build, then one VM boot running the topology check, every KUnit
# suite and the upstream kselftests. Prints one line per suite and ends with
# 'N passed, M failed, K skipped'; exits non-zero on any failure.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Whether the user chose the suites (DEBUG=1 adds to the default set only).
suites_chosen=${CHECK_SUITES:+yes}
CHECK_SUITES=${CHECK_SUITES:-"net-env kunit devmem-bind drivers/net/hw/devmem.py drivers/net/hw/nk_devmem.py devmem-rx-check
	drivers/net/hw/iou-zcrx.py nic-hds nic-jumbo nic-filters nic-rss nic-lifecycle
	nic-ethtool drivers/net/ping.py drivers/net/hds.py drivers/net/queues.py drivers/net/stats.py
	drivers/net/napi_id.py drivers/net/napi_threaded.py drivers/net/hw/irq.py
	drivers/net/hw/rss_api.py drivers/net/hw/userns_devmem.py drivers/net/hw/tso.py
	drivers/net/ring_reconfig.py drivers/net/hw/nk_netns.py drivers/net/hw/nk_qlease.py"}
# One boot runs them all: about 13 minutes of TCG on an idle machine, 18 on
# a slower CI machine; the timeout only stops a hung guest.
vm_timeout=2100
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
	CHECK_PARITY=${CHECK_PARITY:-0}
	vm_timeout=7200
	out=$CACHE_DIR/check-debug
	# faults last: it makes the checkers' own allocations fail too, which
	# turns DMA-API debugging off for whatever runs after it.
	[ -n "$suites_chosen" ] || CHECK_SUITES="$CHECK_SUITES races faults"
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
# The examples that must not compile, against the kernel crate just built.
if [ $vm_ok = yes ]; then
	mapfile -t rs < <(git -C "$TOP_DIR" ls-files '*.rs')
	(cd "$TOP_DIR" && python3 "$HARNESS_DIR/compile_fail.py" "$KBUILD_OUT" "$KERNEL_TREE" \
		"${rs[@]}") >>"$static" || true
	# Rust gets no -Wframe-larger-than: its frames, against the limit.
	python3 "$HARNESS_DIR/stack_frames.py" "$KBUILD_OUT" >>"$static" || true
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
		drivers/net/hw/devmem.py | drivers/net/hw/nk_devmem.py | devmem-rx-check) echo "$s" ;;
		esac
	done
	return 0
}
after=$out/after.tsv
: >"$after"
if [ $vm_ok = yes ] && [ "${CHECK_PARITY:-1}" = 1 ] && [[ " $CHECK_SUITES " == *" devmem-bind "* ]]; then
	info "parity (C core)"
	# shellcheck disable=SC2046 # one word per suite
	"$HARNESS_DIR/parity.sh" "$vmres" $(c_suites) >>"$after" || printf 'parity\tfail\tparity.sh failed\n' >>"$after"
fi

echo
slow=()
[ "${DEBUG:-0}" = 1 ] && slow=(--slow "$HARNESS_DIR/expectations.debug")
python3 "$HARNESS_DIR/results.py" "$HARNESS_DIR/expectations" "$vmres" --static "$static" --after "$after" "${slow[@]}"
