#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build and install the upstream kselftests the harness runs (ncdevmem,
# the drv-net Python library with YNL, and devmem_rx_bench from the
# series' selftests) from the same kernel tree, and our devmem_send and
# tcp_sink (the TX benchmark's sender and receiver), tcp_sendfile (the RX
# benchmark's sender) and zcrx_rx_bench (its io_uring receiver), into
# $KSFT_DIR, which the guest sees at the same path.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

KERNEL_TREE=$("$HARNESS_DIR/tree.sh")
KSFT_DIR=${KSFT_DIR:-$CACHE_DIR/kselftest}
KSFT_TARGETS=${KSFT_TARGETS:-drivers/net/hw drivers/net}
log=$KBUILD_OUT/kselftest.log

# The YNL code generator runs as "python3" from PATH and needs PyYAML:
# use Debian's python3, which make setup gives python3-yaml, whatever
# python3 comes first on the caller's PATH (a venv, pyenv).
pybin=$CACHE_DIR/python-bin
mkdir -p "$pybin"
ln -sf /usr/bin/python3 "$pybin/python3"
/usr/bin/python3 -c 'import yaml' 2>/dev/null ||
	die "/usr/bin/python3 has no PyYAML (python3-yaml): run 'make setup'"

# make does not see a change of flags: a program built before the
# Makefile last changed (devmem_rx_bench's -O2) is built again.
hw=$KERNEL_TREE/tools/testing/selftests/drivers/net/hw
bench=$KBUILD_OUT/kselftest/drivers/net/hw/devmem_rx_bench
[ ! -e "$bench" ] || [ "$bench" -nt "$hw/Makefile" ] || rm -f "$bench"

# DEBUG=1 (make check DEBUG=1's, in the environment and in MAKEFLAGS) is
# YNL's switch too: its library would be built with AddressSanitizer,
# which the tests' link with clang then lacks (psp_responder), and
# kselftest-install leaves out every target. The tests are the same for
# either kernel: the makes below get DEBUG= on their command line.
unset DEBUG
# YNL builds its objects in the source tree and archives them into each
# target's output, and make does not see a change of flags: objects built
# with AddressSanitizer are built again.
mapfile -t ynl < <(find "$KERNEL_TREE/tools/net/ynl/lib/ynl.o" "$KBUILD_OUT/kselftest" \
	-name 'ynl.o' -o -name 'libynl.a' 2>/dev/null)
if [ ${#ynl[@]} -gt 0 ] && nm "${ynl[@]}" 2>/dev/null | grep __asan_init >/dev/null; then
	make -C "$KERNEL_TREE/tools/net/ynl" clean >>"$log" 2>&1
	rm -f "${ynl[@]}"
fi
info "building kselftests: $KSFT_TARGETS"
if ! PATH=$pybin:$PATH make -C "$KERNEL_TREE" O="$KBUILD_OUT" LLVM=1 DEBUG= -j"$(nproc)" \
	TARGETS="$KSFT_TARGETS" KSFT_INSTALL_PATH="$KSFT_DIR" \
	kselftest-install >"$log" 2>&1; then
	grep -E 'error|Error' "$log" | head -n 30 >&2
	die "kselftest build failed; full log: $log"
fi
# kselftest-install goes on past a target that failed to build, and
# installs none of it.
for t in $KSFT_TARGETS; do
	[ -d "$KSFT_DIR/$t" ] || {
		grep -E 'error|Error' "$log" | head -n 30 >&2
		die "kselftest install has no $t (a target failed to build); log: $log"
	}
done

# iou-zcrx, which the build above leaves out on Debian: the Makefile's
# liburing probe uses "echo -e", which /bin/sh (dash) prints, and runs
# before LLVM=1 picks the compiler (gcc's --as-needed then drops the
# -luring placed before the source). Build it alone, with bash, clang and
# the kernel's UAPI headers ahead of bookworm's, which liburing >= 2.10's
# headers need.
zcrx=$KBUILD_OUT/kselftest/drivers/net/hw/iou-zcrx
if ! C_INCLUDE_PATH=$KBUILD_OUT/usr/include make -C "$hw" LLVM=1 DEBUG= CC=clang SHELL=/bin/bash \
	OUTPUT="$(dirname "$zcrx")" "$zcrx" >>"$log" 2>&1; then
	tail -n 20 "$log" >&2
	die "iou-zcrx did not build (liburing with zero-copy receive: run 'make setup'); log: $log"
fi
cp "$zcrx" "$KSFT_DIR/drivers/net/hw/"
# Our devmem TX sender for make bench (harness/guest/bench_tx.sh), next to
# ncdevmem: a plain host build (the guest runs the host's userspace), with
# the clang make setup installs, as for the kselftests. The source has
# fallbacks for the UAPI constants the host's headers may lack.
if ! clang -O2 -Wall -Werror -pthread -o "$KSFT_DIR/drivers/net/hw/devmem_send" \
	"$HARNESS_DIR/guest/devmem_send.c" >>"$log" 2>&1; then
	tail -n 20 "$log" >&2
	die "devmem_send did not build; log: $log"
fi
# Its receiver, and the RX benchmark's sender (harness/guest/bench_rx.sh),
# the same way.
for prog in tcp_sink tcp_sendfile; do
	if ! clang -O2 -Wall -Werror -o "$KSFT_DIR/drivers/net/hw/$prog" \
		"$HARNESS_DIR/guest/$prog.c" >>"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "$prog did not build; log: $log"
	fi
done
# The RX benchmark's io_uring zero-copy receiver, with liburing, as
# iou-zcrx above.
if ! C_INCLUDE_PATH=$KBUILD_OUT/usr/include clang -O2 -Wall -Werror \
	-o "$KSFT_DIR/drivers/net/hw/zcrx_rx_bench" "$HARNESS_DIR/guest/zcrx_rx_bench.c" \
	-luring >>"$log" 2>&1; then
	tail -n 20 "$log" >&2
	die "zcrx_rx_bench did not build; log: $log"
fi
for f in drivers/net/hw/ncdevmem drivers/net/hw/iou-zcrx drivers/net/hw/devmem_send \
	drivers/net/hw/devmem_rx_bench drivers/net/hw/zcrx_rx_bench \
	drivers/net/hw/tcp_sendfile drivers/net/hw/tcp_sink \
	drivers/net/hw/devmem.py drivers/net/ping.py; do
	[ -x "$KSFT_DIR/$f" ] || die "kselftest install has no $f; log: $log"
done
info "kselftests installed in $KSFT_DIR"
