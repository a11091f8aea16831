#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-series: build every commit of the series in turn, from the
# pristine base to the last patch, incrementally, and name the first that
# does not build, as netdev's CI does patch by patch. A series must build
# at every commit (git bisect lands on any of them).
#
# The commits are the ones make kernel makes (tree.sh, from patches/ and
# the overlay), made without checking them out: the cached kernel tree and
# its build are not touched. They are checked out one after the other in a
# worktree of the cached tree, ~/.cache/devmem-rs/series-wt (a scratch
# tree: edits there are lost), and built by kernel.sh as the main kernel
# is (LLVM=1, clippy and -Werror, bzImage and the modules) in
# ~/.cache/devmem-rs/build-series. A checkout rewrites only the files the
# commit changes, so each build is incremental over the one before.
#
# build-series is not seeded from the main build: every command line kbuild
# records holds the source tree's absolute path (-I<srctree>/include,
# --remap-path-prefix=<srctree>/), so with another source tree every
# object would be rebuilt anyway. The first run builds the base from
# scratch, like a fresh make kernel.
#
# The configuration is resolved again at every commit, from allnoconfig
# and the full fragments (and EXTRA_CONFIG): an option appears when the
# commit that adds its Kconfig entry does (NET_DEVMEM_RUST with the first
# patch, IGB_RS with the driver's) and is then as the fragments ask.
# Before that, an option no Kconfig file defines is skipped, not an error.
#
# One line per commit, the base first:
#
#   ok   series NNNN <subject> (<seconds> s)
#   FAIL series NNNN <subject>: <first error line> (log: <path>)
#
# It stops at the first failure and exits non-zero; the worktree stays at
# that commit. A commit that built before with the same configuration is
# not built again ("built before"; its id fixes its contents):
# SERIES_REBUILD=1 builds them all. CONFIG_ONLY=1 walks the series
# resolving and checking each commit's configuration, building nothing.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

KERNEL_TREE=$("$HARNESS_DIR/fetch-kernel.sh")
git_k() { git -C "$KERNEL_TREE" "$@"; }

wt=$CACHE_DIR/series-wt
out=$CACHE_DIR/check-series
build=$CACHE_DIR/build-series
[ "${CONFIG_ONLY:-0}" = 1 ] && build=$out/config
mkdir -p "$out" "$build"
EXTRA_CONFIG=${EXTRA_CONFIG:-}

base=$(git_k rev-parse "$BASE_REF^{commit}")
tip=$(SERIES_ONLY=1 "$HARNESS_DIR/tree.sh")
mapfile -t commits < <(git_k rev-list --reverse "$base..$tip")
mapfile -t entries < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$TOP_DIR/patches/series")
[ ${#commits[@]} -eq ${#entries[@]} ] ||
	die "$base..$tip has ${#commits[@]} commits, patches/series ${#entries[@]} entries"

if ! git -C "$wt" rev-parse --git-dir >/dev/null 2>&1; then
	rm -rf "$wt"
	info "adding a worktree of $KERNEL_TREE at $wt"
	# -f: the worktree of a deleted directory is still registered.
	git_k worktree add -f -q --detach "$wt" "$base"
fi

# What a build's result depends on besides the commit.
# shellcheck disable=SC2086 # lists of words
inputs=$({
	cat "$HARNESS_DIR/kernel.sh" $FRAGMENTS
	echo $EXTRA_CONFIG
	echo "STRICT=${STRICT:-1}"
	clang --version | head -n 1
	rustc --version
} | sha1sum | cut -d' ' -f1)
built=$build/built-ok

n=0
for i in $(seq 0 ${#commits[@]}); do
	if [ "$i" -eq 0 ]; then
		c=$base
		num=0000
	else
		c=${commits[$((i - 1))]}
		num=${entries[$((i - 1))]%%-*}
	fi
	subject=$(git_k log -1 --format=%s "$c")
	if [ "${CONFIG_ONLY:-0}" != 1 ] && [ "${SERIES_REBUILD:-0}" != 1 ] &&
		grep -qxF "$c $inputs" "$built" 2>/dev/null; then
		printf 'ok   series %s %s (built before)\n' "$num" "$subject"
		n=$((n + 1))
		continue
	fi
	git -C "$wt" checkout -q -f --detach "$c"
	log=$out/$num.log
	info "$num $subject"
	t0=$(date +%s)
	if BUILD_TREE=$wt KBUILD_OUT=$build RECONFIGURE=1 UNDEFINED_CONFIG_OK=1 \
		"$HARNESS_DIR/kernel.sh" >"$log" 2>&1; then
		[ "${CONFIG_ONLY:-0}" = 1 ] || echo "$c $inputs" >>"$built"
		sed -n "s/^\[kernel\] not in this tree's Kconfig/    &/p" "$log" >&2
		printf 'ok   series %s %s (%s s)\n' "$num" "$subject" "$(($(date +%s) - t0))"
		n=$((n + 1))
	else
		printf 'FAIL series %s %s: %s\n' "$num" "$subject" "$(kernel_error "$log")"
		info "the worktree is left at that commit: $wt (build: $build)"
		echo "$n passed, 1 failed"
		exit 1
	fi
done
echo "$n passed, 0 failed"
