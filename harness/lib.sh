# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2034 # the variables are for the scripts that source this
# Shared helpers for the harness scripts. Sourced, not run.

HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP_DIR=$(cd "$HARNESS_DIR/.." && pwd)

# The build cache lives outside the clone so a fresh clone reuses it and
# incremental builds stay incremental.
CACHE_DIR=${CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/devmem-rs}
# Kernel tree: the project's own (unpacked from linux-source-7.3) unless the
# user passes KERNEL_SRC.
KERNEL_TREE=${KERNEL_SRC:-$CACHE_DIR/linux}
# A user tree builds apart from ours, so switching between them rebuilds
# neither from scratch.
if [ -n "${KERNEL_SRC:-}" ]; then
	KBUILD_OUT=${KBUILD_OUT:-$CACHE_DIR/build-user}
else
	KBUILD_OUT=${KBUILD_OUT:-$CACHE_DIR/build}
fi
KERNEL_VERSION_WANT=7.3
# virtme-ng lives in a venv of its own, so it does not depend on which
# python3 or pip PATH finds.
VENV_DIR=$CACHE_DIR/venv
VNG=$VENV_DIR/bin/vng
# The kernel config: allnoconfig plus these fragments (kernel.sh), then
# EXTRA_CONFIG.
FRAGMENTS=${FRAGMENTS:-"$HARNESS_DIR/config/vm.config $HARNESS_DIR/config/devmem.config"}
# Our refs in the kernel repository, outside its branch and tag namespaces
# (a user tree's worktree shares refs with the user's repository).
BASE_REF=refs/devmem-rs/base
SERIES_REF=refs/devmem-rs/series

# LLVM 19 first on PATH, as the kernel's LLVM=1 build expects.
if [ -d /usr/lib/llvm-19/bin ]; then
	case ":$PATH:" in
	*:/usr/lib/llvm-19/bin:*) ;;
	*) PATH=/usr/lib/llvm-19/bin:$PATH ;;
	esac
fi
case ":$PATH:" in
*:$HOME/.cargo/bin:*) ;;
*) PATH=$HOME/.cargo/bin:$PATH ;;
esac
# vng runs its helpers (virtme-run) from PATH. Last, so that python3 stays
# the one the caller's PATH finds (the venv's has no PyYAML).
case ":$PATH:" in
*:$VENV_DIR/bin:*) ;;
*) PATH=$PATH:$VENV_DIR/bin ;;
esac
export PATH

# The major version of the LLVM rustc is built on ("LLVM version: 22.1.2").
rustc_llvm_major() {
	rustc -vV | sed -n 's/^LLVM version: \([0-9]*\)\..*/\1/p' | grep .
}

info() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*" >&2; }
die() {
	printf '[%s] error: %s\n' "$(basename "$0" .sh)" "$*" >&2
	exit 1
}

# Seeds build directory $1 from the main one, $2, the first time, so that
# a kernel of another config builds incrementally from it.
seed_build_dir() { # dir main-dir
	if [ ! -d "$1" ] && [ -f "$2/.config" ]; then
		info "seeding $1 from $2"
		cp -a "$2" "$1"
	fi
}

# The C-core kernel: the main config with CONFIG_NET_DEVMEM_RUST=n, built
# (incrementally) in a directory of its own, C_KBUILD_OUT, seeded from the
# main build directory $1 the first time. It is named after the build
# directory it pairs with (build-c, build-debug-c, build-user-c), so that
# the debug kernel's parity run and a user tree's leave make check's alone.
# kernel.sh's messages go to stderr; fails as it does.
C_KBUILD_OUT=$KBUILD_OUT-c
C_CORE_CONFIG="CONFIG_NET_DEVMEM_RUST=n"

# make check's checkers off: make bench's kernels (whose times they would
# weigh on) and make check-configs' debug-off build. Without them nothing
# selects TRACEPOINTS.
NO_CHECKERS_CONFIG="CONFIG_PROVE_LOCKING=n CONFIG_DEBUG_ATOMIC_SLEEP=n CONFIG_DMA_API_DEBUG=n
	CONFIG_DEBUG_NET=n CONFIG_DEBUG_KMEMLEAK=n"
build_c_kernel() { # main-dir
	seed_build_dir "$C_KBUILD_OUT" "$1"
	KBUILD_OUT=$C_KBUILD_OUT EXTRA_CONFIG="${EXTRA_CONFIG:-} $C_CORE_CONFIG" \
		"$HARNESS_DIR/kernel.sh" >&2
}

# The first error of a failed kernel.sh run whose messages are in $1, and
# the log to read (the build's own when it got that far), on one line:
# "<error> [at <file:line:col>] (log: <path>)".
kernel_error() { # kernel.sh-log
	local blog line loc=
	blog=$(sed -n 's/.*kernel build failed; full log: //p' "$1" | tail -n 1)
	if [ -n "$blog" ] && [ -f "$blog" ]; then
		line=$(grep -m 1 -n -E '(^|: )(error|fatal error|ERROR)(\[E[0-9]+\])?:' "$blog" || true)
		if [ -n "$line" ]; then
			# rustc names the place on the next line ("  --> file:line:col").
			loc=$(sed -n "$((${line%%:*} + 1))s/^ *--> //p" "$blog")
			line=${line#*:}
		else
			line=$(grep -v '^[[:space:]]*$' "$blog" | tail -n 1)
		fi
	else
		blog=$1
		line=$(grep -m 1 -E '(^|: |\] )error:' "$1" || grep -v '^[[:space:]]*$' "$1" | tail -n 1 || true)
		line=${line#\[*\] error: }
	fi
	printf '%s%s (log: %s)\n' "$line" "${loc:+ at $loc}" "$blog"
}

# The series patches/series is cut into, in order, one line each:
# "NN-NAME COUNT", NN its place (01, 02, ...), NAME from its "# series
# NAME: TITLE" line and COUNT the patches up to the next such line.
series_groups() {
	awk '
		/^# series [a-z0-9-]+: / { name = $3; sub(/:$/, "", name); n++; order[n] = name; next }
		/^#/ || /^[[:space:]]*$/ { next }
		!n { print "patches/series: " $0 " comes before any \"# series\" line" > "/dev/stderr"; err = 1; exit 1 }
		{ count[n]++ }
		END { if (err) exit 1; for (i = 1; i <= n; i++) printf "%02d-%s %d\n", i, order[i], count[i] }
	' "$TOP_DIR/patches/series"
}

# The commit a run starts from, for its summary: taken at the start, as
# the tree may move on while the run goes.
run_commit() {
	local commit
	commit=$(git -C "$TOP_DIR" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
	[ -z "$(git -C "$TOP_DIR" status --porcelain --untracked-files=no -- . ':!results' 2>/dev/null)" ] ||
		commit="$commit, with local changes"
	echo "$commit"
}

# Writes the summary of a whole run to FILE (a results/ file the README
# points at, replaced by each run): what ran (TITLE), the commit it
# started from (run_commit), the date, the machine, the time since
# STARTED (seconds since the epoch), and the result lines in LINES.
write_summary() { # file title started commit lines
	local accel=TCG
	# As vm.sh's use_kvm chooses: never for KVM=0 or without /dev/kvm,
	# always for KVM=1, else as its probe found in this host boot.
	if [ "${KVM:-auto}" != 0 ] && [ -w /dev/kvm ]; then
		if [ "${KVM:-auto}" = 1 ] ||
			[ "$(cat "$CACHE_DIR/kvm-probe.$(cat /proc/sys/kernel/random/boot_id)" 2>/dev/null)" = yes ]; then
			accel=KVM
		fi
	fi
	mkdir -p "${1%/*}"
	{
		echo "# $2: written by harness/ at the end of each whole run"
		echo "commit:   $4"
		echo "date:     $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "machine:  $(nproc) CPUs, $(awk '/MemTotal/ { printf "%d GiB", $2 / 1048576 }' /proc/meminfo), $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), QEMU under $accel"
		echo "duration: $((($(date +%s) - $3) / 60)) min"
		echo
		cat "$5"
	} >"$1"
}

# A whole run of the calling script: runs "$0" ARGS again, with
# SUMMARY_LINES naming where its standard output (its result lines; the
# rest goes to stderr) is kept, shows that output, and writes it to FILE
# with write_summary under TITLE. --grep ERE keeps only the lines that
# match; --if-passed writes only when the run passed. Returns the run's
# status. The script calls it first when SUMMARY_LINES is unset and exits
# with what it returns.
summarised_run() { # [--grep ERE] [--if-passed] file title args...
	local ere='' if_passed=0 file title started commit rc lines
	while :; do
		case $1 in
		--grep) ere=$2 && shift 2 ;;
		--if-passed) if_passed=1 && shift ;;
		*) break ;;
		esac
	done
	file=$1 title=$2
	shift 2
	started=$(date +%s) commit=$(run_commit)
	SUMMARY_LINES=$(mktemp)
	export SUMMARY_LINES
	set +e
	"$0" "$@" | tee "$SUMMARY_LINES"
	rc=${PIPESTATUS[0]}
	set -e
	lines=$SUMMARY_LINES
	if [ -n "$ere" ]; then
		lines=$SUMMARY_LINES.lines
		grep -E "$ere" "$SUMMARY_LINES" >"$lines" || true
	fi
	if [ "$rc" -eq 0 ] || [ "$if_passed" = 0 ]; then
		write_summary "$file" "$title" "$started" "$commit" "$lines"
		info "summary in ${file#"$TOP_DIR"/}"
	fi
	rm -f "$SUMMARY_LINES" "$SUMMARY_LINES.lines"
	return "$rc"
}
