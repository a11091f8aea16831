#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Provide the pristine Linux 7.3 base as a git repository in the cache:
# $KERNEL_TREE with $BASE_REF on the untouched sources.
#
# Sources, in order:
#   KERNEL_SRC=<dir>     the user's own tree; a git tree gets a detached
#                        worktree in the cache (the user's checkout is never
#                        touched), anything else is copied.
#   ../shared/kernel/    the exact linux-source-7.3 .deb, verified by SHA256.
#   apt                  linux-source-7.3 from trixie-backports.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

SHARED_KERNEL_DIR=${SHARED_KERNEL_DIR:-$TOP_DIR/../shared/kernel}

check_version() { # tree
	local v
	v=$(make -s -C "$1" kernelversion 2>/dev/null) ||
		die "$1 does not look like a kernel tree (make kernelversion failed)"
	case "$v" in
	"$KERNEL_VERSION_WANT" | "$KERNEL_VERSION_WANT".* | "$KERNEL_VERSION_WANT"-*) ;;
	*)
		if [ "${ALLOW_KERNEL_VERSION:-}" = "$v" ]; then
			info "kernel version $v accepted by ALLOW_KERNEL_VERSION"
		else
			die "kernel version $v in $1, the project is for $KERNEL_VERSION_WANT (set ALLOW_KERNEL_VERSION=$v to try anyway)"
		fi
		;;
	esac
	echo "$v"
}

git_k() { git -C "$KERNEL_TREE" "$@"; }

commit_base() { # message
	info "recording the pristine base (one-time, takes a minute)"
	git_k init -q
	git_k config core.autocrlf false
	git_k config gc.auto 0
	git_k add -A -f .
	GIT_AUTHOR_NAME="Linux 7.3 base" GIT_AUTHOR_EMAIL=base@localhost \
		GIT_COMMITTER_NAME="Linux 7.3 base" GIT_COMMITTER_EMAIL=base@localhost \
		git_k commit -q --no-verify -m "$1"
	git_k update-ref "$BASE_REF" HEAD
}

# The user's own tree.
from_user_tree() {
	local src
	src=$(cd "$KERNEL_SRC" && pwd) || die "KERNEL_SRC=$KERNEL_SRC is not a directory"
	check_version "$src" >/dev/null
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		local wt=$CACHE_DIR/user-tree
		if ! git -C "$wt" rev-parse --git-dir >/dev/null 2>&1; then
			info "adding a worktree of $src at $wt"
			git -C "$src" worktree add -q --detach "$wt" HEAD
		fi
		KERNEL_TREE=$wt
		git_k update-ref "$BASE_REF" "$(git -C "$src" rev-parse HEAD)"
	else
		KERNEL_TREE=$CACHE_DIR/user-tree
		mkdir -p "$KERNEL_TREE"
		rsync -a --delete --exclude=.git "$src"/ "$KERNEL_TREE"/
		[ -d "$KERNEL_TREE/.git" ] || commit_base "base: $src"
	fi
	echo "$KERNEL_TREE"
}

find_deb() {
	local d=$SHARED_KERNEL_DIR deb
	if [ -f "$d/SHA256SUMS" ]; then
		deb=$(find "$d" -maxdepth 1 -name 'linux-source-7.3_*_all.deb' | sort | tail -n 1)
		if [ -n "$deb" ]; then
			(cd "$d" && sha256sum --quiet -c SHA256SUMS) >&2 ||
				die "$deb does not match $d/SHA256SUMS"
			echo "$deb"
			return
		fi
	fi
	local dl=$CACHE_DIR/deb
	mkdir -p "$dl"
	deb=$(find "$dl" -maxdepth 1 -name 'linux-source-7.3_*_all.deb' | sort | tail -n 1)
	if [ -z "$deb" ]; then
		info "downloading linux-source-7.3 with apt"
		(cd "$dl" && apt-get download -q -o APT::Sandbox::User=root linux-source-7.3 >&2) ||
			die "apt offers no linux-source-7.3 (is trixie-backports in the sources? run 'make setup'); or put the .deb in $SHARED_KERNEL_DIR with a SHA256SUMS file, or pass KERNEL_SRC=<tree>"
		deb=$(find "$dl" -maxdepth 1 -name 'linux-source-7.3_*_all.deb' | sort | tail -n 1)
	fi
	echo "$deb"
}

from_deb() {
	if git_k rev-parse -q --verify "$BASE_REF" >/dev/null 2>&1; then
		echo "$KERNEL_TREE"
		return
	fi
	local deb tmp tarball
	deb=$(find_deb)
	info "unpacking $(basename "$deb")"
	tmp=$CACHE_DIR/unpack
	rm -rf "$tmp" "$KERNEL_TREE"
	mkdir -p "$tmp"
	dpkg-deb -x "$deb" "$tmp"
	tarball=$(find "$tmp/usr/src" -maxdepth 1 -name 'linux-source-7.3*.tar.*' | head -n 1)
	[ -n "$tarball" ] || die "no kernel tarball inside $deb"
	mkdir -p "$KERNEL_TREE"
	tar -xf "$tarball" -C "$KERNEL_TREE" --strip-components=1
	rm -rf "$tmp"
	local v
	v=$(check_version "$KERNEL_TREE")
	commit_base "Linux $v (Debian $(basename "$deb" .deb))"
	echo "$KERNEL_TREE"
}

mkdir -p "$CACHE_DIR"
if [ -n "${KERNEL_SRC:-}" ]; then
	from_user_tree
else
	from_deb
fi
