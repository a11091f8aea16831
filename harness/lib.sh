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
# main build directory $1 the first time. make check's parity run and make
# bench share it. kernel.sh's messages go to stderr; fails as it does.
C_KBUILD_OUT=$CACHE_DIR/build-c
build_c_kernel() { # main-dir
	seed_build_dir "$C_KBUILD_OUT" "$1"
	KBUILD_OUT=$C_KBUILD_OUT EXTRA_CONFIG="${EXTRA_CONFIG:-} CONFIG_NET_DEVMEM_RUST=n" \
		"$HARNESS_DIR/kernel.sh" >&2
}
