#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: build the kernel with the benchmarks on, in a build directory
# of its own (seeded from the main one the first time, so it builds
# incrementally), boot it for the receive benchmarks; then boot it and the
# C-core kernel (CONFIG_NET_DEVMEM_RUST=n, built the same way) in turn for
# the transmit benchmark, and print the lines. Every figure but
# devmem-alloc's is the median over the rounds with the lowest and the highest in
# brackets, "M [lo-hi]"; a ratio is taken round by round, then its median
# and spread. CPU time is the host's: the on-CPU time of the vCPU thread
# the work ran on (harness/hostcpu.sh), which, unlike the guest's own busy
# time, leaves out the time the vCPU waited for a host CPU under TCG.
#
#   devmem-alloc: rust <ns> ns/niov, c <ns> ns/niov, ratio <r>, system-page floor <ns> ns/page
#   driver-tcp-stream: rust <Mbit/s>, c <Mbit/s>, ratio <r>
#   devmem-rx-cpu: devmem <ns/KiB>, copy <ns/KiB>, trunc <ns/KiB>, ratio copy/devmem <r>, devmem/trunc <t>
#   devmem-rx-trunc: devmem-trunc <ns/KiB>, trunc <ns/KiB>, ratio devmem-trunc/trunc <r>
#   devmem-rx-peer: devmem <ns/KiB> (busy <p>%), copy ..., trunc ...; other QEMU threads: ...
#   devmem-rx-zcrx: zcrx <ns/KiB> (peer busy <p>%), zcrx-dmabuf <ns/KiB> (...), devmem <ns/KiB>, ratio zcrx/devmem <r>, zcrx-dmabuf/devmem <s>, copy/zcrx <t>
#   devmem-rx-rate: offered <Mbit/s>, received devmem <Mbit/s>, copy <Mbit/s>, ...
#   (the five devmem-rx lines again for 4 flows, "(4 flows)")
#   devmem-rx-jumbo: devmem <ns/KiB>, copy <ns/KiB>, trunc <ns/KiB>, ratio copy/devmem <r>, devmem/trunc <t>
#   devmem-rx-jumbo-peer: devmem <ns/KiB> (busy <p>%), copy ..., trunc ...; other QEMU threads: ...
#   devmem-rx-jumbo-zcrx: zcrx <ns/KiB> ..., as devmem-rx-zcrx
#   devmem-rx-jumbo-rate: offered <Mbit/s>, received devmem <Mbit/s>, copy <Mbit/s>, ...
#   (the four jumbo lines again for 4 flows)
#   driver-rx-cpu: rust <ns/KiB>, c <ns/KiB>, ratio rust/c <r>
#   driver-rx: offered <Mbit/s>, received rust <Mbit/s>, c <Mbit/s>; interrupts rust <n>, c <n> a MiB
#   driver-rx-peer: rust <ns/KiB> (busy <p>%), c <ns/KiB> (busy <q>%); other QEMU threads: ...
#   (the three driver-rx lines again for 4 flows, "(4 flows)")
#   devmem-tx-send: rust <calls/s>, c <calls/s>, ratio rust/c <r> (<N> threads)
#   devmem-tx-send: rust <calls/s>, c <calls/s>, ratio rust/c <r> (1 thread)
#   devmem-tx-cpu: <mode> rust <ns/KiB>, c <ns/KiB>, ratio rust/c <r>; sink busy rust <p>%, c <q>%; sent rust <Mbit/s>, c <Mbit/s> (MTU <m>, <n> flows)
#   devmem-tx-cpu-modes: rust core devmem/send <r>, devmem/zerocopy <r> (MTU <m>, <n> flows)
#   devmem-tx-cpu-boots: c <r>, rust <r> (MTU <m>, <n> flows)
#   goal: <what> (<where>): met|NOT met (<each round's figure>)[; <control>: <lo>-<hi>]
#
# The first from the in-kernel benchmark at boot; driver-tcp-stream from
# the guest's bench-net suite (harness/guest/bench_net.sh); the devmem-rx
# and driver-rx lines from its bench-rx suite (harness/guest/bench_rx.sh:
# the receiver's CPU per KiB, and the peer's, for devmem, copy, trunc and
# io_uring zero-copy receive at MTU 1500, then at MTU 9000 with 16 KiB
# net_iovs, then through igb_rs and the C igb without devmem, the peer
# paced in each; BENCH_VERBOSE=1 adds the guest's busy time, as -guest
# lines);
# the devmem-tx lines from its bench-tx suite (harness/guest/bench_tx.sh:
# devmem sendmsg() calls a second, and the sender's CPU per KiB for a
# plain send, MSG_ZEROCOPY and devmem at MTU 1500 and 9000) in boots of
# their own, C core and Rust core alternating (BENCH_TX_BOOTS pairs, 2),
# put together by harness/benchtx.py; the boots line is each core's later
# boot over its earlier one, round by round: how far two boots of one
# kernel differ, the yardstick for the ratios between the cores. The
# goals come last, each met only when every round meets it; a TX goal
# between the cores ends with its control's lowest and highest round
# (benchtx.py).
#
# PROFILE=1 adds a boot of the same kernel whose QEMU counts the guest's
# instructions (harness/insncount.c, a TCG plugin built here) for the
# bench-profile suite (bench_rx.sh profile: each receive mode once, then
# trunc through igb_rs and through the C igb; the receiver's CPU's
# instructions per KiB, by function), and its lines:
#
#   devmem-rx-profile: <mode> <n> insns/KiB, <b> blocks/KiB: <func> <p>%, ...
#   devmem-rx-profile-extra: devmem over trunc +<n> insns/KiB: <func> +<n>, ...
#   devmem-rx-profile-extra: devmem over zcrx +<n> insns/KiB: <func> +<n>, ...
#   driver-rx-profile: <driver> <n> insns/KiB, <b> blocks/KiB: <func> <p>%, ...
#   driver-rx-profile-extra: igb_rs over igb +<n> insns/KiB: <func> +<n>, ...
#
# (each driver's line the mean of two runs, in the order igb_rs, igb, igb,
# igb_rs), and keeps every function's count of each profiled run in the
# boot's results directory, hostcpu/<mode, driver or driver.run>.per
# (~/.cache/devmem-rs/bench-profile, bench-profile-c), with the run's raw
# counts for harness/annotate.py (a function, instruction by instruction).
#
# and, last, the same receive modes on the C core's kernel (its boot of
# bench-profile-devmem, with the counter), with what both cores' devmem
# runs take:
#
#   devmem-rx-profile: <mode> ... (c core)
#   devmem-rx-profile-extra: devmem over trunc ... (c core)
#   devmem-rx-profile-cores: devmem rust core <n> insns/KiB, c core <n> insns/KiB, ratio <r>; over trunc: rust core +<n>, c core +<n>
#   devmem-rx-profile-core: devmem rust core <n> insns/KiB, c core <n> insns/KiB, ratio rust/c <r>: <func> <rust>/<c>, ... rust/c insns/call
#
# (the cores line the whole path, which the core shares with the driver,
# TCP and the page pool, whose counts vary from boot to boot with batching
# and lock contention by more than the core's own share; the core line
# the core's own code alone, as harness/coreprof.py says: its object, the
# allocator library either core runs and the page pool's provider
# helpers; a goal judges each)
#
# and the transmit profile, a boot of each core with the counter for
# bench-tx-profile (bench_tx.sh's profile pass: send, MSG_ZEROCOPY and
# devmem TX, 1 flow, at MTU 1500 and 9000; the sender's CPU's
# instructions per KiB sent, by function), put together by
# harness/benchtx.py --profile:
#
#   devmem-tx-profile: <mode> rust core <n> insns/KiB, c core <n> insns/KiB, ratio rust/c <r> (MTU <m>, 1 flow)
#   devmem-tx-profile-funcs: devmem <n> insns/KiB: <func> <p>%, ... (MTU <m>, <core> core)
#   devmem-tx-profile-extra: devmem rust core over c core +<n> insns/KiB (MTU <m>): <func> +<n>, ...; <func> -<n>, ...
#   devmem-tx-profile-core: devmem rust core <n> insns/KiB, c core <n> insns/KiB, ratio rust/c <r> (MTU <m>): <func> <rust>/<c>, ... rust/c insns/call
#
# (the last counts the core's own code, as devmem-rx-profile-core does:
# the rest of the path is TCP's, whose count varies between boots by as
# much as the whole path's ratio, as the send mode, which never reaches
# the core, shows; the goal judges the core's line).
#
# The first line says how the benchmark kernels were built:
#
#   bench-kernel: clang <v>, rustc <v> (LLVM <v>), C helpers inlined into Rust (CONFIG_RUST_INLINE_HELPERS=y)
#
# (INLINE_HELPERS=0: make check's clang and the helpers as calls; below).
#
# Benchmarks report; they pass or fail only on correctness.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

# The lines, also in results/bench.txt (with the commit, the date, the
# machine and the time) once the run has ended well; the README points
# there. The file has the result lines alone (<name>: ...): whatever else
# reaches stdout (a tool's chatter) stays in the terminal's copy.
if [ -z "${SUMMARY_LINES:-}" ]; then
	title="make bench"
	[ -z "${PROFILE:-}" ] || title="make bench PROFILE=$PROFILE"
	summarised_run --grep '^[a-z][a-z0-9-]*: ' --if-passed "$TOP_DIR/results/bench.txt" "$title" "$@"
	exit
fi

# The benchmark kernels time the code, not the checkers: make check's
# kernels run with lockdep, atomic-sleep and DMA-API debugging, DEBUG_NET
# and kmemleak, whose bookkeeping on every lock, mapping and allocation
# costs more under TCG than a driver's receive path and weighs on
# whichever side takes more locks (devmem's token handling does). Both
# benchmark kernels (Rust core and C core) leave them out; each builds in
# a directory of its own, so that neither undoes make check's.
BENCH_CONFIG=$NO_CHECKERS_CONFIG
# Rust calls the C kernel's static inline functions and macros through
# exported helpers (rust/helpers/); C inlines them. Both benchmark kernels
# inline the helpers into the Rust code (CONFIG_RUST_INLINE_HELPERS), as
# a kernel built for speed would: their bitcode is linked into each Rust
# object, which needs clang on rustc's LLVM (22 for rustc 1.95; setup.sh
# bench-toolchain installs it). C code then comes from that clang too, on
# both sides of every comparison. INLINE_HELPERS=0: make check's clang 19
# and the helpers as calls, as most kernels that build Rust have them.
INLINE_HELPERS=${INLINE_HELPERS:-1}
main_out=$KBUILD_OUT
export KBUILD_OUT=$CACHE_DIR/build-bench
if [ "$INLINE_HELPERS" = 1 ]; then
	# Its package installs print to stdout: to stderr with the other logs.
	"$HARNESS_DIR/setup.sh" bench-toolchain >&2
	llvm=$(rustc_llvm_major)
	export KBUILD_LLVM=-$llvm
	export LATE_CONFIG="CONFIG_EXPERT=y CONFIG_RUST_INLINE_HELPERS=y"
	toolchain="clang $(clang-"$llvm" -dumpversion), rustc $(rustc -vV | sed -n 's/^release: //p') (LLVM $(rustc -vV | sed -n 's/^LLVM version: //p')), C helpers inlined into Rust (CONFIG_RUST_INLINE_HELPERS=y)"
else
	# make check's objects are this compiler's: build from them.
	seed_build_dir "$KBUILD_OUT" "$main_out"
	toolchain="clang $(clang -dumpversion), rustc $(rustc -vV | sed -n 's/^release: //p'), C helpers called from Rust"
fi
EXTRA_CONFIG="${EXTRA_CONFIG:-} $BENCH_CONFIG CONFIG_NET_DEVMEM_RUST_BENCH=y" "$HARNESS_DIR/kernel.sh"
"$HARNESS_DIR/kselftest.sh" >/dev/null
res=$CACHE_DIR/bench
append=${VM_APPEND:-}
# bench-rx (about 110 runs of 256 MiB and 20 of 1 GiB in its three
# passes, six driver rebinds) needs more than vm.sh's default time.
# HOST_CPU=1: the host reads the vCPU threads' on-CPU time around each
# run (harness/hostcpu.sh): the figure of every receive and transmit line.
HOST_CPU=1 KERNEL_IMAGE=$KBUILD_OUT/arch/x86/boot/bzImage VM_APPEND=$append \
	VM_TIMEOUT=${VM_TIMEOUT:-5400} \
	"$HARNESS_DIR/vm.sh" "$res" kunit bench-rx bench-net
lines=$(sed -n 's/^.*\(devmem-alloc: .*\)$/\1/p' "$res/dmesg.txt")
[ -n "$lines" ] || die "the benchmark printed nothing; see $res/kunit.tap and $res/console.log"
grep -q ', system-page floor [0-9]* ns/page$' <<<"$lines" ||
	die "the devmem-alloc line has no system-page floor (an old kernel?); see $res/dmesg.txt"
net=$(grep -E '^driver-tcp-stream: ' "$res/bench-net.tap" || true)
[ -n "$net" ] || die "bench-net printed nothing; see $res/bench-net.tap"
rx=$(grep -E '^((devmem|driver)-rx(-[a-z]+)*|goal): ' "$res/bench-rx.tap" || true)
[ -n "$rx" ] || die "bench-rx printed nothing; see $res/bench-rx.tap"
# Each of bench-rx's passes prints its lines at its end: a pass that
# stopped early leaves its lines out.
for l in devmem-rx-cpu devmem-rx-jumbo driver-rx-cpu; do
	grep -q "^$l: " <<<"$rx" || die "bench-rx printed no $l line; see $res/bench-rx.tap"
done
if grep -E '^(devmem-rx-cpu|devmem-rx-jumbo|driver-rx-cpu): .* n/a ns/KiB' <<<"$rx" >&2; then
	die "the host's readings of the vCPU threads are missing (harness/hostcpu.sh); see $res/bench-rx.tap and $res/hostcpu"
fi
prof=
if [ -n "${PROFILE:-}" ]; then
	# Counting slows every guest instruction: never under the timed runs.
	plugin=$CACHE_DIR/insncount.so
	clang -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -o "$plugin" \
		"$HARNESS_DIR/insncount.c" -lpthread || die "could not build harness/insncount.c"
	res_p=$CACHE_DIR/bench-profile
	HOST_CPU=1 INSN_PLUGIN=$plugin KERNEL_IMAGE=$KBUILD_OUT/arch/x86/boot/bzImage \
		VM_APPEND=$append "$HARNESS_DIR/vm.sh" "$res_p" bench-profile
	prof=$(grep -E '^(devmem|driver)-rx-profile(-extra)?: ' "$res_p/bench-profile.tap" || true)
	[ -n "$prof" ] || die "bench-profile printed nothing; see $res_p/bench-profile.tap"
	[ "$(cat "$res_p/bench-profile.rc")" = 0 ] || die "bench-profile: a run failed; see $res_p/bench-profile.tap"
	grep '^# ' "$res_p/bench-profile.tap" >&2 || true
fi
grep '^# ' "$res/bench-net.tap" >&2 || true
grep '^# ' "$res/bench-rx.tap" >&2 || true
python3 "$HARNESS_DIR/results.py" "$HARNESS_DIR/expectations" "$res" | grep -E '^(ok|FAIL) +(kunit|kernel-log):' >&2 || true
# The goals last, all together: bench-rx's, then the allocator's (its
# one figure, the in-kernel benchmark's), then the TX boots'.
goals=$(grep '^goal: ' <<<"$rx" || true)
rx=$(grep -v '^goal: ' <<<"$rx")
goals+=$'\n'$(awk '{ for (i = 1; i < NF; i++) { if ($i == "rust") r = $(i + 1); if ($i == "floor") f = $(i + 1) }
	if (f > 0) printf "goal: rust allocator at most the system-page floor: %s (%.2f)\n", (r <= f) ? "met" : "NOT met", r / f
	else print "goal: rust allocator at most the system-page floor: NOT met (no floor)" }' <<<"$lines")
echo "bench-kernel: $toolchain"
printf '%s\n%s\n%s\n' "$lines" "$net" "$rx"
[ -z "$prof" ] || printf '%s\n' "$prof"

# The TX benchmark (bench-tx) on both cores, in boots that alternate: C,
# Rust, C, Rust, ... (BENCH_TX_BOOTS pairs), so that the host's drift over
# the run falls on both alike. Every TX boot has the same command line and
# runs bench-tx alone, KUnit off (kunit.enable=0: the Rust kernel's
# allocation benchmark does not run before it); the two kernels differ
# only in CONFIG_NET_DEVMEM_RUST and what depends on it.
# make check's C-core build seeds the C core's when there is one (and its
# compiler is the benchmark's).
seed=$main_out
[ -f "$C_KBUILD_OUT/.config" ] && seed=$C_KBUILD_OUT
[ "$INLINE_HELPERS" = 1 ] && seed=/nonexistent
C_KBUILD_OUT=$CACHE_DIR/build-bench-c
EXTRA_CONFIG="${EXTRA_CONFIG:-} $BENCH_CONFIG" build_c_kernel "$seed"
ratio() {
	echo "$1 $2" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else printf "n/a" }'
}
tx_boots=()
for i in $(seq 1 "${BENCH_TX_BOOTS:-2}"); do
	for core in c rust; do
		image=$KBUILD_OUT/arch/x86/boot/bzImage
		[ "$core" = c ] && image=$C_KBUILD_OUT/arch/x86/boot/bzImage
		r=$CACHE_DIR/bench-tx-$core$i
		HOST_CPU=1 KERNEL_IMAGE=$image VM_APPEND="$append kunit.enable=0" \
			"$HARNESS_DIR/vm.sh" "$r" bench-tx
		echo "# bench-tx, $core core, boot $i:" >&2
		grep '^# ' "$r/bench-tx.tap" >&2 || true
		[ "$(cat "$r/bench-tx.rc" 2>/dev/null)" = 0 ] || die "bench-tx: a run failed; see $r/bench-tx.tap"
		tx_boots+=("$core:$r/bench-tx.tap")
	done
done
tx=$(python3 "$HARNESS_DIR/benchtx.py" "${tx_boots[@]}") ||
	die "bench-tx: no lines; see $CACHE_DIR/bench-tx-*/bench-tx.tap"
grep -v '^goal: ' <<<"$tx"
goals+=$'\n'$(grep '^goal: ' <<<"$tx")
[ "$(cat "$res/bench-net.rc")" = 0 ] || die "bench-net: a transfer failed; see $res/bench-net.tap"
[ "$(cat "$res/bench-rx.rc")" = 0 ] || die "bench-rx: a run or a check failed; see $res/bench-rx.tap"
if [ -z "${PROFILE:-}" ]; then
	printf '%s\n' "$goals"
	exit 0
fi

# The receive modes' profile on the C core: the same driver, pages and
# token path, the C core's dma-buf provider (gen_pool) in place of the
# Rust core's.
res_pc=$CACHE_DIR/bench-profile-c
HOST_CPU=1 INSN_PLUGIN=$plugin KERNEL_IMAGE=$C_KBUILD_OUT/arch/x86/boot/bzImage \
	VM_APPEND=$append "$HARNESS_DIR/vm.sh" "$res_pc" bench-profile-devmem
[ "$(cat "$res_pc/bench-profile-devmem.rc")" = 0 ] ||
	die "bench-profile-devmem (C core): a run failed; see $res_pc/bench-profile-devmem.tap"
prof_c=$(grep -E '^devmem-rx-profile(-extra)?: ' "$res_pc/bench-profile-devmem.tap" || true)
[ -n "$prof_c" ] || die "bench-profile-devmem (C core) printed nothing; see $res_pc/bench-profile-devmem.tap"
echo "# C core:" >&2
grep '^# ' "$res_pc/bench-profile-devmem.tap" >&2 || true
sed 's/$/ (c core)/' <<<"$prof_c"
# "<insns/KiB of devmem> <devmem over trunc>" from profile lines $1.
devmem_insns() {
	awk '$1 == "devmem-rx-profile:" && $2 == "devmem" { n = $3 }
		$1 == "devmem-rx-profile-extra:" && $4 == "trunc" { x = $5 }
		END { print n + 0, x }' <<<"$1"
}
read -r rust_n rust_x < <(devmem_insns "$prof")
read -r c_n c_x < <(devmem_insns "$prof_c")
echo "devmem-rx-profile-cores: devmem rust core $rust_n insns/KiB, c core $c_n insns/KiB, ratio $(ratio "$rust_n" "$c_n"); over trunc: rust core $rust_x, c core $c_x"
r=$(ratio "$rust_n" "$c_n")
verdict="NOT met"
[ "$r" != n/a ] && awk -v r="$r" 'BEGIN { exit !(r <= 1.0) }' && verdict=met
goals+=$'\n'"goal: rust core at most c on devmem-rx-profile-cores: $verdict ($r)"
# The core's own code (harness/coreprof.py): each core's object and the
# allocator library objects, the same ones for both; with the C helpers
# called from Rust (INLINE_HELPERS=0), their object too, for both, as
# the Rust core's calls into them are its code (the driver's calls count
# on both sides alike).
core_objs=(--object "rust:$KBUILD_OUT/net/core/devmem_rs/devmem_rs.o"
	--object "c:$C_KBUILD_OUT/net/core/devmem.o")
lib_objs=(lib/genalloc.o lib/bitmap.o lib/find_bit.o)
[ "$INLINE_HELPERS" = 1 ] || lib_objs+=(rust/helpers/helpers.o)
for o in "${lib_objs[@]}"; do
	core_objs+=(--object "rust:$KBUILD_OUT/$o" --object "c:$C_KBUILD_OUT/$o")
done
rxc=$(python3 "$HARNESS_DIR/coreprof.py" rx "$res_p" "$res_pc" "${core_objs[@]}") ||
	die "devmem-rx-profile-core: no line; see $res_p/hostcpu and $res_pc/hostcpu"
grep -v '^goal: ' <<<"$rxc"
goals+=$'\n'$(grep '^goal: ' <<<"$rxc")

# The transmit profile: each core's kernel booted once more, with the
# counter, for bench-tx-profile, as the timed TX boots are
# (kunit.enable=0).
txp_args=()
for core in c rust; do
	image=$KBUILD_OUT/arch/x86/boot/bzImage
	[ "$core" = c ] && image=$C_KBUILD_OUT/arch/x86/boot/bzImage
	r=$CACHE_DIR/bench-tx-profile-$core
	HOST_CPU=1 INSN_PLUGIN=$plugin KERNEL_IMAGE=$image VM_APPEND="$append kunit.enable=0" \
		"$HARNESS_DIR/vm.sh" "$r" bench-tx-profile
	echo "# bench-tx-profile, $core core:" >&2
	grep '^# ' "$r/bench-tx-profile.tap" >&2 || true
	[ "$(cat "$r/bench-tx-profile.rc" 2>/dev/null)" = 0 ] ||
		die "bench-tx-profile ($core core): a run failed; see $r/bench-tx-profile.tap"
	txp_args+=("$core:$r")
done
# The core's own code, for its line and goal, as on receive.
txp_args+=("${core_objs[@]}")
txp=$(python3 "$HARNESS_DIR/benchtx.py" --profile "${txp_args[@]}") ||
	die "bench-tx-profile: no lines; see $CACHE_DIR/bench-tx-profile-*/bench-tx-profile.tap"
grep -v '^goal: ' <<<"$txp"
goals+=$'\n'$(grep '^goal: ' <<<"$txp")
printf '%s\n' "$goals"
