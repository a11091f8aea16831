#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: build the kernel with the benchmarks on, in a build directory
# of its own (seeded from the main one the first time, so it builds
# incrementally), boot it and print the benchmark lines, all from one boot:
#
#   devmem-alloc: rust <ns> ns/niov, c <ns> ns/niov, ratio <r>
#   driver-tcp-stream: rust <Mbit/s>, c <Mbit/s>, ratio <r>
#   devmem-rx: devmem <Mbit/s>, copy <Mbit/s>, ratio <r>
#
# (the first from the in-kernel benchmark at boot, the others from the
# guest's bench-net suite, harness/guest/bench_net.sh).
#
# Benchmarks report; they pass or fail only on correctness.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

main_out=$KBUILD_OUT
export KBUILD_OUT=$CACHE_DIR/build-bench
if [ ! -d "$KBUILD_OUT" ] && [ -f "$main_out/.config" ]; then
	info "seeding $KBUILD_OUT from $main_out"
	cp -a "$main_out" "$KBUILD_OUT"
fi
EXTRA_CONFIG="${EXTRA_CONFIG:-} CONFIG_NET_DEVMEM_RUST_BENCH=y" "$HARNESS_DIR/kernel.sh"
"$HARNESS_DIR/kselftest.sh" >/dev/null
res=$CACHE_DIR/bench
# kmemleak off: under TCG, the stack it records on every allocation costs
# more than a driver's receive path and would weigh on whichever side
# allocates more. make check runs with it.
KERNEL_IMAGE=$KBUILD_OUT/arch/x86/boot/bzImage VM_APPEND=${VM_APPEND:-kmemleak=off} \
	"$HARNESS_DIR/vm.sh" "$res" kunit bench-net
lines=$(sed -n 's/^.*\(devmem-alloc: .*\)$/\1/p' "$res/dmesg.txt")
[ -n "$lines" ] || die "the benchmark printed nothing; see $res/kunit.tap and $res/console.log"
net=$(grep -E '^(driver-tcp-stream|devmem-rx): ' "$res/bench-net.tap" || true)
[ -n "$net" ] || die "bench-net printed nothing; see $res/bench-net.tap"
grep '^# ' "$res/bench-net.tap" >&2 || true
python3 "$HARNESS_DIR/results.py" "$HARNESS_DIR/expectations" "$res" | grep -E '^(ok|FAIL) +(kunit|kernel-log):' >&2 || true
printf '%s\n%s\n' "$lines" "$net"
[ "$(cat "$res/bench-net.rc")" = 0 ] || die "bench-net: a transfer failed; see $res/bench-net.tap"
