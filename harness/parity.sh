#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Parity of the Rust devmem core with the C one: build the kernel again with
# CONFIG_NET_DEVMEM_RUST=n (in a build directory of its own, seeded from the
# main one the first time so that it builds incrementally), run the
# devmem-bind scenarios on it, and compare what each kernel answered, case
# by case, with the run of the main kernel in RUST_RESULTS. The data-path
# suites given after it (devmem.py) run on the C core too and are judged
# against the same expectations.
#
# Usage: parity.sh RUST_RESULTS [SUITE...]
# Prints result lines for results.py (name, pass or fail, detail; tabs).

set -euo pipefail
. "$(dirname "$0")/lib.sh"

rust_res=$1
shift
# Beside the Rust core's results: check/vm-c, check-debug/vm-c for DEBUG=1.
res=${rust_res%/*}/vm-c

t0=$(date +%s)
if ! build_c_kernel "$KBUILD_OUT"; then
	printf 'kernel-build (C core)\tfail\tsee %s/build.log\n' "$C_KBUILD_OUT"
	exit 0
fi
printf 'kernel-build (C core)\tpass\t%s s\n' "$(($(date +%s) - t0))"

# The C core makes a gen_pool chunk and a net_iov array per scatterlist
# entry of the dma-buf, and ncdevmem's udmabuf of 16000 pages of a memfd
# has about as many entries: under TCG its bind-rx takes about a second,
# on a busy host its listener comes up past the 5 s devmem.py waits for
# it. This VM backs memfds with 2 MiB folios, so the udmabuf has some 32
# entries. The Rust core's run keeps the 4 KiB pages.
t0=$(date +%s)
# A boot that fails still leaves what the guest wrote, judged below.
boot=pass
VM_APPEND="kmemleak=on transparent_hugepage_shmem=always" \
	KERNEL_IMAGE=$C_KBUILD_OUT/arch/x86/boot/bzImage "$HARNESS_DIR/vm.sh" "$res" devmem-bind "$@" >&2 ||
	boot=fail
printf 'vm-boot (C core)\t%s\t%s s\n' "$boot" "$(($(date +%s) - t0))"
python3 "$HARNESS_DIR/parity.py" "$res/devmem-bind.tap" "$rust_res/devmem-bind.tap"
# The other suites, the kernel log and kmemleak of the C core's run.
echo "$*" >"$res/suites"
# The debug kernel's run must show its checkers on (results.py --debug).
debug=()
[ "${DEBUG:-0}" = 1 ] && debug=(--debug)
# Its flaky cases, kept from run to run as the Rust core's are.
python3 "$HARNESS_DIR/results.py" "$HARNESS_DIR/expectations" "$res" --tsv ' (C core)' "${debug[@]}" \
	--flaky-history "${rust_res%/*}/flaky-c.txt"
