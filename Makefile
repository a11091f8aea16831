# SPDX-License-Identifier: GPL-2.0
#
# devmem-rs: Rust devmem TCP core and a Rust Intel 82576 driver, as an
# overlay of a Linux 7.3 tree. See README.md.
#
#   make setup     install the toolchain and tools (idempotent)
#   make kernel    apply the overlay and patches, build the kernel (LLVM=1)
#   make demo      build, boot QEMU, run the devmem demo
#   make check     static checks, build, KUnit and kselftests in QEMU
#   make bench     build with the benchmarks on, boot, print their lines
#   make check-configs  build each configuration the series must build in
#                  (PAGE_POOL, NET_DEVMEM, NET_DEVMEM_RUST, IGB_RS n/m/y,
#                  RUST off, the checkers off), one line each;
#                  CHECK_CONFIGS="name ..."
#   make check-series   build each commit of the series in turn and boot
#                  each that changes the kernel for its KUnit suites
#                  (SERIES_KUNIT=0: build only), name the first that
#                  fails; TYPECHECK=1: only type-check (rustc
#                  metadata + clippy) each commit's kernel crate, devmem_rs
#                  and igb_rs against the main build (minutes, not an hour)
#   make patches   write the git format-patch series to series/
#   make clean     drop the kernel build output (keeps the pristine tree)
#   make distclean drop the whole cache
#
# Variables: KERNEL_SRC=<dir> (your own 7.3 tree), CACHE_DIR (default
# ~/.cache/devmem-rs), JOBS, VM_TIMEOUT, KVM=auto|0|1, CHECK_SUITES, PROFILE=1
# (make bench: instruction profiles of the receive and transmit paths), INLINE_HELPERS=0
# (make bench: clang 19 and the C helpers called, not inlined into Rust),
# EXTRA_CONFIG="CONFIG_X=y ...", CHECK_CONFIGS, CONFIG_ONLY=1 (check-configs
# and check-series: resolve the configurations, build nothing), TYPECHECK=1
# (check-series: type-check the Rust of each commit, build nothing).

SHELL := /bin/bash
H := harness

.PHONY: all setup kernel kselftests demo check check-configs check-series bench patches vm clean distclean

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
		"$$CACHE_DIR"/build-cfg-* "$$CACHE_DIR/check-configs" "$$CACHE_DIR/build-series" "$$CACHE_DIR/check-series"

distclean:
	@. $(H)/lib.sh && rm -rf "$$CACHE_DIR"
