#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-configs: build the kernel in every configuration the series
# must build in, not only the one make check tests. Each is the main
# configuration (the same fragments and EXTRA_CONFIG) with an override,
# built by kernel.sh as the main kernel is (LLVM=1, clippy and -Werror,
# bzImage and the modules) in a build directory of its own,
# ~/.cache/devmem-rs/build-cfg-<name>, seeded from the main build the first
# time so that it builds incrementally. kernel.sh checks, before building,
# that every option of the fragments and of the override is in the
# resolved .config: an override that Kconfig undoes (an option another
# selects) fails the configuration instead of testing the main one again.
#
# One line per configuration, then the count; exits non-zero if any
# failed, after trying all:
#
#   ok   config <name> (<seconds> s)
#   FAIL config <name>: <first error line> (log: <path>)
#
# CHECK_CONFIGS="name ..." builds some of them. CONFIG_ONLY=1 resolves and
# checks each configuration without building (in scratch directories under
# ~/.cache/devmem-rs/check-configs/), and, like a build, lists on stderr
# how each differs from the main configuration.
#
# A whole run (all of them, built) writes its lines to
# results/check-configs.txt, with the commit, date, machine and time.
#
# bzImage rather than vmlinux: the main build's targets exactly, so "builds"
# means what make check builds. The difference is the compressed image and
# its setup code, seconds next to the compile, and c-core's directory is
# make check's build-c, whose bzImage the parity run boots.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -z "${SUMMARY_LINES:-}" ] && [ -z "${CHECK_CONFIGS:-}" ] && [ "${CONFIG_ONLY:-0}" != 1 ]; then
	summarised_run "$TOP_DIR/results/check-configs.txt" "make check-configs" "$@"
	exit
fi

out=$CACHE_DIR/check-configs
mkdir -p "$out"
EXTRA_CONFIG=${EXTRA_CONFIG:-}

# The main configuration's value of option $1 (the last one the fragments
# and EXTRA_CONFIG give; n when none does).
main_value() { # CONFIG_X
	local v
	# shellcheck disable=SC2086 # lists of words
	v=$({
		cat $FRAGMENTS
		printf '%s\n' $EXTRA_CONFIG
	} | sed -n "s/^$1=//p" | tail -n 1)
	echo "${v:-n}"
}

# The configurations and what each adds to the main one. An override names
# every option of the fragments that goes with the one it is about, so that
# kernel.sh's check (each option as asked, or the configuration fails)
# holds; the ones that only Kconfig sets (PAGE_POOL, NET_DEVMEM,
# DMA_SHARED_BUFFER have no prompt) are there to be checked.
declare -A override=(
	# PAGE_POOL has no prompt: it is on when anything selects it, and in
	# our config BPF_SYSCALL (select PAGE_POOL if NET), VETH, VIRTIO_NET
	# and NETDEVSIM do, as IGB_RS does. Those go, with NETKIT (it depends
	# on BPF_SYSCALL). NET_DEVMEM depends on PAGE_POOL, so it and the Rust
	# core go too (and, without a fragment line, IO_URING_ZCRX). What is
	# left of ours: the kernel crate's net abstractions without
	# kernel::net::page_pool, and the Rust helpers.
	[page-pool-off]="CONFIG_PAGE_POOL=n CONFIG_BPF_SYSCALL=n CONFIG_VETH=n CONFIG_VIRTIO_NET=n
		CONFIG_NETDEVSIM=n CONFIG_NETKIT=n CONFIG_IGB_RS=n CONFIG_IGB_RS_KUNIT_TEST=n
		CONFIG_NET_DEVMEM=n CONFIG_NET_DEVMEM_RUST=n"
	# NET_DEVMEM has no prompt either (def_bool y, on DMA_SHARED_BUFFER and
	# PAGE_POOL). Page pools stay, the dma-buf framework goes: SYNC_FILE
	# selects it, UDMABUF depends on it. igb_rs builds without devmem,
	# the kernel crate without kernel::dma_buf.
	[devmem-off]="CONFIG_SYNC_FILE=n CONFIG_UDMABUF=n CONFIG_DMA_SHARED_BUFFER=n
		CONFIG_NET_DEVMEM=n CONFIG_NET_DEVMEM_RUST=n"
	# The C core: make check's parity kernel, in its directory (build-c).
	[c-core]=$C_CORE_CONFIG
	[igb-rs-off]="CONFIG_IGB_RS=n CONFIG_IGB_RS_KUNIT_TEST=n"
	[igb-rs-m]="CONFIG_IGB_RS=m"
	[igb-rs-y]="CONFIG_IGB_RS=y"
	# igb_rs without its KUnit suite and the model it runs on, as a
	# kernel without KUnit builds it: nothing of the driver may be there
	# for the suite alone.
	[igb-rs-no-kunit]="CONFIG_IGB_RS_KUNIT_TEST=n"
	# Rust off: the options that need it go (RUST_KERNEL_DOCTESTS, the Rust
	# core, igb_rs); devmem stays on (NET_DEVMEM=y in the fragments, checked),
	# so the C core is built.
	[rust-off]="CONFIG_RUST=n CONFIG_RUST_KERNEL_DOCTESTS=n CONFIG_NET_DEVMEM_RUST=n CONFIG_IGB_RS=n
		CONFIG_IGB_RS_KUNIT_TEST=n"
	# make check's checkers off, as make bench builds: with them goes
	# TRACEPOINTS, and with it the exported forms of what tracing kernels
	# alone export (consume_skb is an inline function without it).
	[debug-off]=$NO_CHECKERS_CONFIG
)
all="igb-rs-off igb-rs-m igb-rs-y igb-rs-no-kunit c-core devmem-off page-pool-off rust-off debug-off"

# One of igb-rs-* is the main configuration: that one is the main build
# (make kernel's, in KBUILD_OUT, with no override), and it goes first, so
# that the others are seeded from it.
main=igb-rs-$(main_value CONFIG_IGB_RS)
case " $all " in
*" $main "*) ;;
*) die "the main configuration has CONFIG_IGB_RS=$(main_value CONFIG_IGB_RS), not n, m or y" ;;
esac

declare -A chosen=()
for name in ${CHECK_CONFIGS:-$all}; do
	[ -n "${override[$name]+set}" ] || die "no configuration '$name' (there are: $all)"
	chosen[$name]=1
done
ordered=()
for name in $main $all; do
	if [ -n "${chosen[$name]:-}" ]; then
		ordered+=("$name")
		unset "chosen[$name]"
	fi
done

# Where configuration $1 builds.
build_dir() { # name
	if [ "${CONFIG_ONLY:-0}" = 1 ]; then
		echo "$out/config/$1"
	elif [ "$1" = "$main" ]; then
		echo "$KBUILD_OUT"
	elif [ "$1" = c-core ]; then
		echo "$C_KBUILD_OUT"
	else
		echo "$CACHE_DIR/build-cfg-$1"
	fi
}

# How .config $2 differs from .config $1, as "-X" (off), "+X=v" (on),
# "X=v (was w)", one line.
config_diff() { # main-config config
	join -t= -a 1 -a 2 -e '' -o 0,1.2,2.2 \
		<(grep '^CONFIG_' "$1" | sed 's/^CONFIG_//' | sort -t= -k1,1) \
		<(grep '^CONFIG_' "$2" | sed 's/^CONFIG_//' | sort -t= -k1,1) |
		awk -F= '$2 != $3 {
			if ($3 == "") printf " -%s", $1
			else if ($2 == "") printf " +%s=%s", $1, $3
			else printf " %s=%s (was %s)", $1, $3, $2
		}'
}

tree=$("$HARNESS_DIR/tree.sh")
export BUILD_TREE=$tree

ref=
[ -f "$KBUILD_OUT/.config" ] && ref=$KBUILD_OUT/.config
passed=0
failed=0
for name in "${ordered[@]}"; do
	dir=$(build_dir "$name")
	if [ "$name" = "$main" ]; then
		extra=$EXTRA_CONFIG
		what="the main configuration"
	else
		extra="$EXTRA_CONFIG ${override[$name]}"
		# shellcheck disable=SC2086,SC2116 # one space between options
		what=$(echo ${override[$name]})
	fi
	[ "${CONFIG_ONLY:-0}" = 1 ] || [ "$dir" = "$KBUILD_OUT" ] || seed_build_dir "$dir" "$KBUILD_OUT"
	log=$out/$name.log
	info "$name ($what) in $dir"
	t0=$(date +%s)
	# shellcheck disable=SC2086,SC2116 # one space between options
	if KBUILD_OUT=$dir EXTRA_CONFIG=$(echo $extra) "$HARNESS_DIR/kernel.sh" >"$log" 2>&1; then
		secs=$(($(date +%s) - t0))
		passed=$((passed + 1))
		# The main configuration in this run is the one to compare with.
		[ "$name" = "$main" ] && ref=$dir/.config
		if [ -n "$ref" ] && [ "$ref" != "$dir/.config" ]; then
			info "$name vs the main configuration:$(config_diff "$ref" "$dir/.config")"
		fi
		if [ "${CONFIG_ONLY:-0}" = 1 ]; then
			printf 'ok   config %s (resolved, %s s)\n' "$name" "$secs"
		else
			printf 'ok   config %s (%s s)\n' "$name" "$secs"
		fi
	else
		failed=$((failed + 1))
		printf 'FAIL config %s: %s\n' "$name" "$(kernel_error "$log")"
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
