#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what building and testing the tree needs on a Debian bookworm
# machine. Idempotent: every step checks first and does nothing when the
# tool is already there, so a second run takes a few seconds.
#
# Apt sources added here are pinned to priority 1: nothing already on the
# machine is upgraded from them, only the packages named with -t below.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

BINDGEN_VERSION=0.72.1
VIRTME_NG_VERSION=1.42

need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null; then
			sudo "$@"
		else
			die "need root for: $*"
		fi
	else
		"$@"
	fi
}

# --- apt sources --------------------------------------------------------

add_source() { # name suite
	local f=/etc/apt/sources.list.d/devmem-rs-$1.sources
	local p=/etc/apt/preferences.d/devmem-rs-$1.pref
	if [ ! -f "$f" ]; then
		info "adding apt source $2 (pinned to priority 1)"
		need_root tee "$f" >/dev/null <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $2
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
		APT_UPDATED=
	fi
	if [ ! -f "$p" ]; then
		need_root tee "$p" >/dev/null <<EOF
Package: *
Pin: release n=$2
Pin-Priority: 1
EOF
	fi
}

APT_UPDATED=no
apt_update() {
	if [ "$APT_UPDATED" != yes ]; then
		info "apt-get update"
		need_root apt-get update -qq ||
			die "apt-get update failed: check the package sources in /etc/apt/sources.list.d/"
		APT_UPDATED=yes
	fi
}

# Packages from bookworm proper.
BASE_PKGS=(
	clang-19 lld-19 llvm-19 libclang-19-dev
	flex bison bc libelf-dev libssl-dev cpio make git rsync
	python3-yaml python3-jsonschema python3-venv ethtool socat iproute2 iputils-ping
	busybox-static zstd xz-utils kmod pahole shellcheck udev bpftool
	iperf3
)

missing_pkgs() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -qx 'install ok installed' || echo "$p"
	done
}

install_apt() {
	local missing
	missing=$(missing_pkgs "${BASE_PKGS[@]}")
	if [ -n "$missing" ]; then
		apt_update
		info "installing:" $missing
		# shellcheck disable=SC2086
		need_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends $missing ||
			die "apt-get install failed for: $missing"
	fi

	# QEMU's igb model needs QEMU >= 8.0; bookworm has 7.2.
	if ! qemu_ok; then
		add_source bookworm-backports bookworm-backports
		apt_update
		case "$(apt-cache policy qemu-system-x86)" in
		*bpo12*) ;;
		*)
			die "bookworm-backports offers no qemu-system-x86: is deb.debian.org reachable?"
			;;
		esac
		info "installing qemu-system-x86 from bookworm-backports"
		need_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends \
			-t bookworm-backports qemu-system-x86 ||
			die "could not install qemu-system-x86 from bookworm-backports"
		qemu_ok || die "qemu-system-x86_64 still lacks -device igb"
	fi
	# Debian testing's liburing needs nothing newer than bookworm has
	# (libc6 >= 2.4, linux-libc-dev >= 5.1); only these two come from it.
	if ! liburing_ok; then
		add_source forky forky
		apt_update
		info "installing liburing-dev from forky (for iou-zcrx and zcrx_rx_bench)"
		need_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends \
			liburing-dev/forky liburing2/forky ||
			die "could not install liburing-dev from forky"
		liburing_ok || die "liburing from forky still has no io_uring_register_ifq with rx_buf_len"
	fi
	# ethtool: the drivers/net tests use --json for -k and -l and
	# --disable-netlink, which bookworm's 6.1 lacks; forky's needs only
	# libc6 >= 2.34 and libmnl0.
	if ! ethtool_ok; then
		add_source forky forky
		apt_update
		info "installing ethtool from forky (for the drivers/net kselftests)"
		need_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends ethtool/forky ||
			die "could not install ethtool from forky"
		ethtool_ok || die "ethtool from forky is still older than 6.10"
	fi
	# The trixie-backports source is only read for linux-source-7.3
	# (fetch-kernel.sh); add it so apt-get download can find it.
	add_source trixie-backports trixie-backports
	if ! apt-cache show linux-source-7.3 >/dev/null 2>&1; then
		APT_UPDATED=
		apt_update
		apt-cache show linux-source-7.3 >/dev/null 2>&1 ||
			info "note: apt offers no linux-source-7.3 (Debian may have dropped it); the kernel then comes from ../shared/kernel or KERNEL_SRC"
	fi
}

# liburing with zero-copy receive (io_uring_register_ifq, liburing 2.10),
# which iou-zcrx needs, and the registration's rx_buf_len, which
# zcrx_rx_bench sets: bookworm has 2.3, trixie 2.9. (Its headers want
# newer kernel headers than bookworm's; kselftest.sh gives it the tree's.)
liburing_ok() {
	grep -qs io_uring_register_ifq /usr/include/liburing.h &&
		grep -qs rx_buf_len /usr/include/liburing/io_uring.h
}

ethtool_ok() {
	local v
	v=$(ethtool --version 2>/dev/null | awk '{ print $3 }')
	[ -n "$v" ] && dpkg --compare-versions "$v" ge 6.10
}

qemu_ok() {
	command -v qemu-system-x86_64 >/dev/null || return 1
	case "$(qemu-system-x86_64 -device help 2>/dev/null)" in
	*'"igb"'*) return 0 ;;
	*) return 1 ;;
	esac
}

# --- Rust ---------------------------------------------------------------

install_rust() {
	command -v rustc >/dev/null || die "no rustc on PATH: install Rust with rustup first"
	local sysroot
	sysroot=$(rustc --print sysroot)
	if [ ! -d "$sysroot/lib/rustlib/src/rust/library" ]; then
		info "rustup component add rust-src"
		rustup component add rust-src ||
			die "rustup could not fetch rust-src; install Debian's rust-src matching $(rustc --version) and set RUST_LIB_SRC"
	fi
	case "$(bindgen --version 2>/dev/null)" in
	*" $BINDGEN_VERSION") ;;
	*)
		info "cargo install bindgen-cli $BINDGEN_VERSION"
		cargo install --locked --quiet bindgen-cli --version "$BINDGEN_VERSION" ||
			die "cargo install bindgen-cli failed"
		;;
	esac
}

# --- make bench's compiler -----------------------------------------------

# make bench builds its kernels with CONFIG_RUST_INLINE_HELPERS, which
# links the C helpers' bitcode into the Rust code: clang must be on the
# LLVM major rustc is on (22 for rustc 1.95), not the 19 of LLVM=1. Debian
# ships clang-22 for bookworm in bookworm-security (a default source).
install_bench_toolchain() {
	local major missing
	major=$(rustc_llvm_major) || die "could not read rustc's LLVM version (rustc -vV)"
	missing=$(missing_pkgs "clang-$major" "lld-$major" "llvm-$major")
	[ -n "$missing" ] || return 0
	apt_update
	case "$(apt-cache policy "clang-$major" 2>/dev/null)" in
	*'Candidate: (none)'* | '')
		die "apt offers no clang-$major (rustc's LLVM); 'make bench INLINE_HELPERS=0' builds with clang 19 and the C helpers as calls"
		;;
	esac
	info "installing" $missing "(make bench: clang on rustc's LLVM)"
	# shellcheck disable=SC2086
	need_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends $missing ||
		die "apt-get install failed for: $missing"
}

# --- virtme-ng ----------------------------------------------------------

install_vng() {
	case "$("$VNG" --version 2>/dev/null)" in
	*"$VIRTME_NG_VERSION"*) ;;
	*)
		info "virtme-ng $VIRTME_NG_VERSION into $VENV_DIR"
		rm -rf "$VENV_DIR"
		mkdir -p "$CACHE_DIR"
		/usr/bin/python3 -m venv "$VENV_DIR" ||
			die "could not create a venv with /usr/bin/python3 (python3-venv)"
		"$VENV_DIR/bin/pip" install --quiet --disable-pip-version-check \
			"virtme-ng==$VIRTME_NG_VERSION" ||
			die "pip install virtme-ng failed"
		;;
	esac
	[ -x "$VNG" ] || die "no $VNG after pip install"
}

case "${1:-}" in
bench-toolchain)
	# make bench, after make setup.
	install_bench_toolchain
	exit 0
	;;
'') ;;
*) die "usage: setup.sh [bench-toolchain]" ;;
esac
install_apt
install_rust
install_vng
info "setup complete"
