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
# commit that adds its Kconfig entry does (NET_DEVMEM_RUST with the
# devmem core's first patch, IGB_RS with the driver's) and is then as
# the fragments ask.
# Before that, an option no Kconfig file defines is skipped, not an error.
#
# One line per commit, the base first:
#
#   ok   series NNNN <subject> (<seconds> s)
#   FAIL series NNNN <subject>: <first error line> (log: <path>)
#
# Each commit that changes the kernel (a file outside Documentation/,
# tools/ and MAINTAINERS), and the base, is then booted (vm.sh, the kunit
# suite alone) and judged by results.py as make check judges its
# boots: every KUnit case that ran passes, the kernel log holds no report
# of a checker, kmemleak finds nothing. The suites the commit must run are
# those of harness/kunit-suites its tree already has (the name in a
# #[kunit_tests(NAME)] or a string of rust/, net/, drivers/ or scripts/),
# so a suite a commit adds runs from that commit on, and one that goes
# missing fails. The line then reads
#
#   ok   series NNNN <subject> (<build> s, kunit <N> suites <boot> s)
#   FAIL series NNNN <subject>: kunit: <first failure> (results: <dir>)
#
# The boot's results stay in ~/.cache/devmem-rs/check-series/kunit/NNNN.
# The boot wires no network (GUEST_NET=0, guest/run.sh): it loads igb_rs
# for its suites and brings no interface up, as the commits of a driver
# may not receive yet.
# SERIES_KUNIT=0 builds only. A booted commit that passed is not booted
# again for the same inputs (like "built before"): its line says "kunit
# passed before".
#
# It stops at the first failure and exits non-zero; the worktree stays at
# that commit. A commit that built before with the same configuration is
# not built again ("built before"; its id fixes its contents), unless it
# still has to boot and the build directory holds another commit:
# SERIES_REBUILD=1 builds and boots them all. SERIES_FROM=NNNN starts at
# commit NNNN (after a change to a later patch): the commits before are
# listed as skipped, neither built nor booted. CONFIG_ONLY=1 walks the
# series resolving and checking each commit's configuration, building
# nothing.
#
# TYPECHECK=1 is the quick pass (a few minutes instead of about an hour):
# no worktree, no build. For each commit it extracts the commit's rust/,
# net/core/devmem_rs/, drivers/net/ethernet/intel/igb_rs/ and .clippy.toml
# (git archive) into $CACHE_DIR/check-series/typecheck/src and reruns on
# them the rustc commands the main build ($KBUILD_OUT, make kernel)
# recorded for the kernel crate, devmem_rs and igb_rs (the .cmd files), as
# recorded (clippy-driver, -Dwarnings, the build's cfgs, CLIPPY_CONF_DIR
# at the extracted tree as kbuild sets it at the source tree), but with
# --emit=metadata only, written to $CACHE_DIR/check-series/typecheck/meta:
# the commit's kernel crate metadata is what its devmem_rs and igb_rs are
# checked against. A crate the commit does not have yet is skipped. Same
# output, one line per commit, stopping at the first failure (the error's
# log: typecheck/NNNN.log); nothing is cached, every commit is checked.
# The cached kernel tree's checkout and the main build are only read.
# It finds what rustc and clippy find before code generation: a name used
# before the patch that adds it, a type or borrow error, a lint. It cannot
# see the rest, which comes from the main build as it is at the tip:
#   - the other crates (bindings and uapi with bindgen's output, macros,
#     pin_init, ffi) and the generated files, so an early commit that uses
#     a binding, helper or #include a later patch adds passes;
#   - the configuration (include/generated/rustc_cfg): each commit is seen
#     with the final cfgs, and code a config leaves out is not checked (in
#     the default one, bench.rs under CONFIG_NET_DEVMEM_RUST_BENCH);
#   - code generation and linking: post-monomorphization errors, a
#     build_assert! that does not fold, an undefined symbol, objtool;
#   - C, Kconfig, Makefiles and the patches to upstream files outside
#     rust/ (the full mode builds them).
# So the main build must be of the current tip: after a change to a patch
# of bindings_helper.h, a helper or a Kconfig entry, make kernel first.
#
# A whole run (every commit built and booted: no TYPECHECK, SERIES_FROM,
# SERIES_KUNIT=0 or CONFIG_ONLY) writes its lines to
# results/check-series.txt, with the commit, date, machine and time.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -z "${SUMMARY_LINES:-}" ] && [ "${TYPECHECK:-0}" != 1 ] && [ -z "${SERIES_FROM:-}" ] &&
	[ "${SERIES_KUNIT:-1}" = 1 ] && [ "${CONFIG_ONLY:-0}" != 1 ]; then
	summarised_run "$TOP_DIR/results/check-series.txt" "make check-series" "$@"
	exit
fi

KERNEL_TREE=$("$HARNESS_DIR/fetch-kernel.sh")
git_k() { git -C "$KERNEL_TREE" "$@"; }

wt=$CACHE_DIR/series-wt
out=$CACHE_DIR/check-series
build=$CACHE_DIR/build-series
[ "${CONFIG_ONLY:-0}" = 1 ] && build=$out/config
mkdir -p "$out"
EXTRA_CONFIG=${EXTRA_CONFIG:-}

base=$(git_k rev-parse "$BASE_REF^{commit}")
tip=$(SERIES_ONLY=1 "$HARNESS_DIR/tree.sh")
mapfile -t commits < <(git_k rev-list --reverse "$base..$tip")
mapfile -t entries < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$TOP_DIR/patches/series")
[ ${#commits[@]} -eq ${#entries[@]} ] ||
	die "$base..$tip has ${#commits[@]} commits, patches/series ${#entries[@]} entries"

# TYPECHECK=1: the quick pass (header).
tc=$out/typecheck
tc_src=$tc/src
tc_meta=$tc/meta

# The rustc command kbuild recorded in $KBUILD_OUT/$2 for crate $1, made to
# read the extracted tree and the metadata directory and to write the
# crate's metadata there, and nothing else.
typecheck_cmd() { # crate cmd-file
	local f=$KBUILD_OUT/$2 cmd src meta
	[ -f "$f" ] || die "no $f: TYPECHECK=1 reruns the main build's rustc commands; build it first with 'make kernel'"
	cmd=$(sed -n 's/^savedcmd_[^ ]* := *//p' "$f")
	cmd=${cmd%%;*} # "; objtool ..."
	case "$cmd" in
	*"$KERNEL_TREE/"*) ;;
	*) die "$f is not a build of $KERNEL_TREE; run 'make kernel'" ;;
	esac
	src=$(printf %q "$tc_src")
	meta=$(printf %q "$tc_meta")
	cmd=${cmd//"$KERNEL_TREE/"/"$src/"}
	cmd=$(sed -E -e 's/(^| )--emit=[^ ]+/ /g' \
		-e 's/(^| )(--out-dir|-o)[ =][^ ]+/ /g' \
		-e "s#(^| )-L ?\./rust/?( |\$)# -L $meta #g" \
		-e "s#--extern ([a-z_]+)=\./rust/#--extern \1=$meta/#g" <<<"$cmd")
	printf '%s --emit=metadata=%s/lib%s.rmeta\n' "$cmd" "$meta" "$1"
}

# The first error in log $1, where it is, and the log, on one line.
typecheck_error() { # log
	local line loc=
	line=$(grep -m 1 -n -E '^error(\[E[0-9]+\])?:' "$1" || true)
	if [ -n "$line" ]; then
		loc=$(sed -n "$((${line%%:*} + 1))s/^ *--> //p" "$1")
		loc=${loc#"$tc_src/"}
		line=${line#*:}
	else
		line=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1 || true)
	fi
	printf '%s%s (log: %s)\n' "$line" "${loc:+ at $loc}" "$1"
}

# Type-checks the crates of commit $1, the diagnostics to log $2.
typecheck_commit() { # commit log
	local p paths=() crate root cmd
	rm -rf "$tc_src" "$tc_meta"/lib{kernel,devmem_rs,igb_rs}.rmeta
	mkdir -p "$tc_src"
	for p in .clippy.toml rust net/core/devmem_rs drivers/net/ethernet/intel/igb_rs; do
		[ -z "$(git_k ls-tree "$1" -- "$p")" ] || paths+=("$p")
	done
	git_k archive "$1" -- "${paths[@]}" | tar -x -C "$tc_src" || return 1
	for crate in kernel devmem_rs igb_rs; do
		root=${tc_roots[$crate]}
		if [ ! -f "$tc_src/$root" ]; then
			echo "== $crate: not in this commit" >>"$2"
			continue
		fi
		echo "== $crate ($root)" >>"$2"
		cmd=${tc_cmds[$crate]}
		# kbuild exports both to rustc (CLIPPY_CONF_DIR=$(srctree)).
		(cd "$KBUILD_OUT" && export CLIPPY_CONF_DIR=$tc_src RUSTC_BOOTSTRAP=1 &&
			eval "$cmd") >>"$2" 2>&1 || return 1
	done
}

if [ "${TYPECHECK:-0}" = 1 ]; then
	declare -A tc_roots=(
		[kernel]=rust/kernel/lib.rs
		[devmem_rs]=net/core/devmem_rs/devmem_rs.rs
		[igb_rs]=drivers/net/ethernet/intel/igb_rs/igb_rs.rs
	) tc_cmds=()
	tc_cmds[kernel]=$(typecheck_cmd kernel rust/.kernel.o.cmd)
	tc_cmds[devmem_rs]=$(typecheck_cmd devmem_rs net/core/devmem_rs/.devmem_rs.o.cmd)
	tc_cmds[igb_rs]=$(typecheck_cmd igb_rs drivers/net/ethernet/intel/igb_rs/.igb_rs.o.cmd)
	[ -f "$KBUILD_OUT/rust/libkernel.rmeta" ] ||
		die "no $KBUILD_OUT/rust/libkernel.rmeta: build the main kernel first with 'make kernel'"
	# The other crates' metadata and proc macros, the main build's.
	rm -rf "$tc_meta"
	mkdir -p "$tc_meta"
	for p in "$KBUILD_OUT"/rust/*.rmeta "$KBUILD_OUT"/rust/*.so; do
		[ "${p##*/}" = libkernel.rmeta ] || ln -s "$p" "$tc_meta/"
	done
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
		log=$tc/$num.log
		: >"$log"
		t0=$(date +%s)
		if typecheck_commit "$c" "$log"; then
			printf 'ok   series %s %s (%s s)\n' "$num" "$subject" "$(($(date +%s) - t0))"
			n=$((n + 1))
		else
			printf 'FAIL series %s %s: %s\n' "$num" "$subject" "$(typecheck_error "$log")"
			info "the commit's files are left in $tc_src"
			echo "$n passed, 1 failed"
			exit 1
		fi
	done
	echo "$n passed, 0 failed"
	exit 0
fi

mkdir -p "$build"
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
# The commit the build directory holds now.
holds=$build/holds
SERIES_KUNIT=${SERIES_KUNIT:-1}
[ "${CONFIG_ONLY:-0}" = 1 ] && SERIES_KUNIT=0
kunit_dir=$out/kunit
# What a boot's verdict depends on besides the build.
kunit_inputs=$(cat "$HARNESS_DIR/vm.sh" "$HARNESS_DIR/guest/run.sh" "$HARNESS_DIR/results.py" \
	"$HARNESS_DIR/kunit-suites" "$HARNESS_DIR/expectations" | sha1sum | cut -d' ' -f1)
booted=$kunit_dir/passed

# Whether commit $1 changes what is built into the kernel or its modules.
changes_kernel() { # commit
	[ "$1" = "$base" ] && return 0
	git_k diff --name-only "$1^" "$1" |
		grep -qvE '^(Documentation/|tools/|MAINTAINERS$)'
}

# The suites of harness/kunit-suites that commit $1 has, into file $2.
kunit_list() { # commit file
	local name
	: >"$2"
	while read -r name; do
		git_k grep -q -F -e "kunit_tests($name)" -e "\"$name\"" "$1" -- \
			rust net drivers scripts && echo "$name" >>"$2"
	done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HARNESS_DIR/kunit-suites" | awk '{ print $1 }')
}

# Boots the build of commit $1 (numbered $2) with the kunit suite and
# judges it; the results in $kunit_dir/$2, results.py's verdict in
# verdict.txt there. Prints "<suites> <seconds>".
kunit_boot() { # commit num
	local res=$kunit_dir/$2 t0 n
	mkdir -p "$kunit_dir"
	kunit_list "$1" "$kunit_dir/$2.suites"
	n=$(wc -l <"$kunit_dir/$2.suites")
	t0=$(date +%s)
	local boot=0
	KERNEL_IMAGE=$build/arch/x86/boot/bzImage VM_TIMEOUT=${VM_TIMEOUT:-900} GUEST_NET=0 \
		"$HARNESS_DIR/vm.sh" "$res" kunit >"$kunit_dir/$2.vm.log" 2>&1 || boot=$?
	# vm.sh may stop before it makes the directory (no kernel image).
	mkdir -p "$res"
	python3 "$HARNESS_DIR/results.py" "$HARNESS_DIR/expectations" "$res" \
		--kunit-suites "$kunit_dir/$2.suites" >"$res/verdict.txt" 2>&1 || return 1
	# What results.py cannot see: a boot that failed after the suites ran
	# (a panic or a reset as the guest powered off, vm.sh says which).
	if [ "$boot" -ne 0 ]; then
		echo "FAIL vm-boot: vm.sh failed ($boot): $(grep -m 1 "^\[vm\] error: " "$kunit_dir/$2.vm.log" | cut -c 1-300)" >>"$res/verdict.txt"
		return 1
	fi
	# results.py judges the suites the VM says it ran: with none, it has
	# nothing to fail. The kunit suite must be among them.
	grep -q '^ok   kunit: ' "$res/verdict.txt" || {
		echo "FAIL kunit: no result; the VM did not run the suite (see $kunit_dir/$2.vm.log)" >>"$res/verdict.txt"
		return 1
	}
	echo "$n $(($(date +%s) - t0))"
}

# The first failure of a verdict, on one line: the first FAIL line with
# the first line of its detail.
kunit_error() { # verdict
	awk '/^FAIL / && !f { f = $0; next }
		f && /^ / { sub(/^ +/, ""); print f ": " $0; done = 1; exit }
		f { print f; done = 1; exit }
		{ last = $0 }
		END { if (!done) print (f ? f : last ? last : "no verdict") }' "$1"
}

n=0
skipped=0
for i in $(seq 0 ${#commits[@]}); do
	if [ "$i" -eq 0 ]; then
		c=$base
		num=0000
	else
		c=${commits[$((i - 1))]}
		num=${entries[$((i - 1))]%%-*}
	fi
	subject=$(git_k log -1 --format=%s "$c")
	if [ "$((10#$num))" -lt "$((10#${SERIES_FROM:-0}))" ]; then
		printf 'skip series %s %s (before SERIES_FROM=%s)\n' "$num" "$subject" "$SERIES_FROM"
		skipped=$((skipped + 1))
		continue
	fi
	boot=no
	if [ "$SERIES_KUNIT" = 1 ] && changes_kernel "$c" && { [ "${SERIES_REBUILD:-0}" = 1 ] ||
		! grep -qxF "$c $inputs $kunit_inputs" "$booted" 2>/dev/null; }; then
		boot=yes
	fi
	if [ "${CONFIG_ONLY:-0}" != 1 ] && [ "${SERIES_REBUILD:-0}" != 1 ] &&
		grep -qxF "$c $inputs" "$built" 2>/dev/null &&
		{ [ $boot = no ] || [ "$(cat "$holds" 2>/dev/null)" = "$c $inputs" ]; }; then
		what="built before"
	else
		git -C "$wt" checkout -q -f --detach "$c"
		log=$out/$num.log
		info "$num $subject"
		t0=$(date +%s)
		rm -f "$holds"
		if ! BUILD_TREE=$wt KBUILD_OUT=$build RECONFIGURE=1 UNDEFINED_CONFIG_OK=1 \
			"$HARNESS_DIR/kernel.sh" >"$log" 2>&1; then
			printf 'FAIL series %s %s: %s\n' "$num" "$subject" "$(kernel_error "$log")"
			info "the worktree is left at that commit: $wt (build: $build)"
			echo "$n passed, 1 failed"
			exit 1
		fi
		what="$(($(date +%s) - t0)) s"
		if [ "${CONFIG_ONLY:-0}" != 1 ]; then
			echo "$c $inputs" >>"$built"
			echo "$c $inputs" >"$holds"
		fi
		sed -n "s/^\[kernel\] not in this tree's Kconfig/    &/p" "$log" >&2
	fi
	if [ $boot = yes ]; then
		info "$num: booting it for its KUnit suites"
		if ! k=$(kunit_boot "$c" "$num"); then
			printf 'FAIL series %s %s: kunit: %s (results: %s)\n' "$num" "$subject" \
				"$(kunit_error "$kunit_dir/$num/verdict.txt")" "$kunit_dir/$num"
			info "the worktree is left at that commit: $wt (build: $build)"
			echo "$n passed, 1 failed"
			exit 1
		fi
		echo "$c $inputs $kunit_inputs" >>"$booted"
		what="$what, kunit ${k% *} suites ${k#* } s"
	elif [ "$SERIES_KUNIT" = 1 ] && changes_kernel "$c"; then
		# Its boot passed in an earlier run, with the same inputs.
		what="$what, kunit passed before"
	fi
	printf 'ok   series %s %s (%s)\n' "$num" "$subject" "$what"
	n=$((n + 1))
done
if [ "$skipped" -gt 0 ]; then
	echo "$n passed, 0 failed, $skipped skipped"
else
	echo "$n passed, 0 failed"
fi
