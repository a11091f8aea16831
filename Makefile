# SPDX-License-Identifier: GPL-2.0
#
# devmem-rs: Rust devmem TCP core and a Rust Intel 82576 driver, as an
# overlay of a Linux 7.3 tree. See README.md.
#
#   make setup     install the toolchain and tools (idempotent)
#   make kernel    apply the overlay and patches, build the kernel (LLVM=1)
#   make kselftests  build the selftests and benchmark programs the VM runs
#   make demo      build, boot QEMU, run the devmem demo
#   make check     static checks, build, KUnit and kselftests in QEMU
#   make bench     build with the benchmarks on, boot, print their lines
#   make check-configs  build each configuration the series must build in
#                  (PAGE_POOL, NET_DEVMEM, NET_DEVMEM_RUST, IGB_RS n/m/y,
#                  RUST off, the checkers off), one line each
#   make check-series   build each commit of the series in turn, boot
#                  each that changes the kernel for its KUnit suites,
#                  name the first that fails
#   make patches   write the git format-patch series to series/
#   make clean     drop every build and run directory (keeps the pristine
#                  tree, its worktrees and the tool venv)
#   make distclean drop the whole cache
#
# Variables, for every target: KERNEL_SRC=<dir> (your own 7.3 tree),
# ALLOW_KERNEL_VERSION=<v> (a tree of another version), CACHE_DIR (default
# ~/.cache/devmem-rs), JOBS, STRICT=0 (no clippy or -Werror, for other
# trees), EXTRA_CONFIG="CONFIG_X=y ...", KVM=auto|0|1, VM_TIMEOUT,
# TEST_TIMEOUT, NIC_DRIVER=igb (the C driver binds the 82576), VM_CPUS,
# VM_MEMORY. The races suite: RACES_SEED=N (repeat a run's random
# choices, printed in its output), RACES_ITERATIONS, RACES_SECS.
# make check: DEBUG=1 (the debug kernel), CHECK_SUITES="suite ...",
# WIDE_SUITES (the suites of the second boot; "" skips it), WIDE_VM_TIMEOUT
# (that boot's), CHECK_PARITY (1 or 0: the C core's kernel and the parity
# run), SLOW_WAITS=N (the factor upstream's fixed waits are stretched by
# with DEBUG=1, 6).
# make bench: PROFILE=1 (instruction profiles of the receive and transmit
# paths), INLINE_HELPERS=0 (clang 19, the C helpers called, not inlined),
# BENCH_TX_BOOTS=N (pairs of transmit boots, C then Rust, 2),
# BENCH_VERBOSE=1 (the guest's own busy time too, as -guest lines).
# make check-configs: CHECK_CONFIGS="name ...", CONFIG_ONLY=1 (resolve
# the configurations, build nothing).
# make check-series: SERIES_KUNIT=0 (build only), SERIES_FROM=NNNN (start
# at that commit), SERIES_REBUILD=1 (build and boot even what passed
# before), CONFIG_ONLY=1, TYPECHECK=1 (type-check the Rust of each commit
# against the main build with rustc and clippy: minutes, not an hour).

SHELL := /bin/bash
H := harness

.PHONY: all setup kernel kselftests demo check check-configs check-series bench patches clean distclean

all: check

setup:
	@$(H)/setup.sh

kernel: setup
	@$(H)/kernel.sh

kselftests: setup
	@$(H)/kselftest.sh

demo: setup
	@$(H)/demo.sh

check: setup
	@$(H)/check.sh

check-configs: setup
	@$(H)/check-configs.sh

check-series: setup
	@$(H)/check-series.sh

bench: setup
	@$(H)/bench.sh

patches:
	@$(H)/patches.sh >/dev/null

clean:
	@. $(H)/lib.sh && rm -rf "$$KBUILD_OUT" "$$CACHE_DIR/build-bench" "$$CACHE_DIR/build-bench-c" "$$CACHE_DIR/check" "$$CACHE_DIR/demo" "$$CACHE_DIR/bench" "$$CACHE_DIR"/bench-tx-* "$$CACHE_DIR/kselftest" \
		"$$CACHE_DIR"/build-cfg-* "$$CACHE_DIR/check-configs" "$$CACHE_DIR/build-series" "$$CACHE_DIR/check-series" \
		"$$CACHE_DIR/build-debug" "$$CACHE_DIR/check-debug" "$$C_KBUILD_OUT" "$$CACHE_DIR/build-debug-c" "$$CACHE_DIR"/bench-profile* "$$CACHE_DIR/static" "$$CACHE_DIR/am-check"

distclean:
	@. $(H)/lib.sh && rm -rf "$$CACHE_DIR"
