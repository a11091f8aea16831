#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the project's kernel: tree (patches + overlay), config (allnoconfig
# plus the fragments in harness/config), then bzImage and the modules with
# LLVM=1 into $KBUILD_OUT, outside the kernel tree.
#
# Warnings are errors: Rust is built through clippy (CLIPPY=1) with
# -Dwarnings, C with -Werror. A warning therefore fails the build on every
# run until it is fixed, instead of scrolling by once and hiding behind the
# next incremental build. Upstream 7.3 builds clean this way with clang 19
# and rustc 1.95; STRICT=0 turns it off for other trees.
#
# For the scripts that build other trees or configurations (check-configs.sh,
# check-series.sh):
#   BUILD_TREE=<dir>       build that tree as it is, instead of running
#                          tree.sh on the cached one
#   RECONFIGURE=1          start from allnoconfig and the fragments even when
#                          they did not change (the tree's Kconfig did)
#   UNDEFINED_CONFIG_OK=1  an option of the fragments that no Kconfig file of
#                          the tree defines is not an error (a commit before
#                          the one that adds it)
#   CONFIG_ONLY=1          resolve and check the configuration, build nothing
#
# For make bench (bench.sh):
#   KBUILD_LLVM=-22        make's LLVM= (default 1): clang-22, ld.lld-22, ...
#   LATE_CONFIG="..."      options set on the resolved configuration (then
#                          olddefconfig), not through allnoconfig: options
#                          such as CONFIG_EXPERT=y, which under allnoconfig
#                          would turn off everything they make visible

set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -n "${BUILD_TREE:-}" ]; then
	KERNEL_TREE=$BUILD_TREE
else
	KERNEL_TREE=$("$HARNESS_DIR/tree.sh")
fi
JOBS=${JOBS:-$(nproc)}
EXTRA_CONFIG=${EXTRA_CONFIG:-}
KBUILD_LLVM=${KBUILD_LLVM:-1}
LATE_CONFIG=${LATE_CONFIG:-}

# DEBUG= : make check DEBUG=1 passes DEBUG=1 down (the environment and
# MAKEFLAGS), and tools/lib/subcmd reads it: objtool built -O0 there and
# -O3 by a direct kernel.sh, and every object, which depends on objtool,
# rebuilt at each switch. It is the harness's variable, not kbuild's.
kmake() { make -s -C "$KERNEL_TREE" O="$KBUILD_OUT" LLVM="$KBUILD_LLVM" DEBUG= "$@"; }

mkdir -p "$KBUILD_OUT"

if ! kmake rustavailable >"$KBUILD_OUT/rustavailable.log" 2>&1; then
	cat "$KBUILD_OUT/rustavailable.log" >&2
	die "the Rust toolchain is not usable for this kernel (above); run 'make setup'"
fi

# One fragment for Kconfig; EXTRA_CONFIG (e.g. "CONFIG_FOO=y CONFIG_BAR=n")
# comes last and wins.
want=$KBUILD_OUT/devmem-rs.config
new=$(mktemp "$KBUILD_OUT/config.XXXXXX")
# shellcheck disable=SC2086
cat $FRAGMENTS >"$new"
for item in $EXTRA_CONFIG; do echo "$item" >>"$new"; done
# A change of compiler or of the late options configures afresh too.
if [ "$KBUILD_LLVM" != 1 ] || [ -n "$LATE_CONFIG" ]; then
	printf '# LLVM=%s LATE_CONFIG=%s\n' "$KBUILD_LLVM" "$(xargs <<<"$LATE_CONFIG")" >>"$new"
fi
if [ "${RECONFIGURE:-0}" = 1 ] || ! cmp -s "$new" "$want" || [ ! -f "$KBUILD_OUT/.config" ]; then
	mv "$new" "$want"
	info "configuring (allnoconfig + $(grep -c '^CONFIG_' "$want") options)"
	kmake KCONFIG_ALLCONFIG="$want" allnoconfig >/dev/null
else
	rm -f "$new"
	kmake olddefconfig >/dev/null
fi
if [ -n "$LATE_CONFIG" ]; then
	late=()
	for item in $LATE_CONFIG; do
		case "${item#*=}" in
		y) late+=(--enable "${item%%=*}") ;;
		n) late+=(--disable "${item%%=*}") ;;
		*) late+=(--set-val "${item%%=*}" "${item#*=}") ;;
		esac
	done
	"$KERNEL_TREE/scripts/config" --file "$KBUILD_OUT/.config" "${late[@]}"
	kmake olddefconfig >/dev/null
fi

# Every option we ask for must be in the result; Kconfig drops an option
# whose dependencies are not met without a word.
missing=()
while IFS='=' read -r sym val; do
	case "$sym" in CONFIG_*) ;; *) continue ;; esac
	if [ "$val" = n ]; then
		grep -qx "$sym=[ym]" "$KBUILD_OUT/.config" && missing+=("$sym=$val")
	else
		grep -qx "$sym=$val" "$KBUILD_OUT/.config" || missing+=("$sym=$val")
	fi
done < <(sed -e 's/#.*//' "$want" | awk -F= '{ v[$1] = $0 } END { for (s in v) print v[s] }'
	xargs -n 1 <<<"$LATE_CONFIG")
if [ ${#missing[@]} -gt 0 ] && [ "${UNDEFINED_CONFIG_OK:-0}" = 1 ]; then
	defined=$(find "$KERNEL_TREE" -name .git -prune -o -name 'Kconfig*' -type f -print0 |
		xargs -0 sed -n -E 's/^[[:space:]]*(menu)?config[[:space:]]+([A-Za-z0-9_]+).*/CONFIG_\2/p' | sort -u)
	still=()
	undefined=()
	for m in "${missing[@]}"; do
		if grep -qxF "${m%%=*}" <<<"$defined"; then
			still+=("$m")
		else
			undefined+=("${m%%=*}")
		fi
	done
	[ ${#undefined[@]} -eq 0 ] || info "not in this tree's Kconfig (yet): ${undefined[*]}"
	missing=("${still[@]}")
fi
if [ ${#missing[@]} -gt 0 ]; then
	die "Kconfig did not take: ${missing[*]} (unmet dependencies, or selected by another option; see 'make O=$KBUILD_OUT menuconfig')"
fi
if [ "${CONFIG_ONLY:-0}" = 1 ]; then
	info "configured, nothing built (CONFIG_ONLY=1): $KBUILD_OUT/.config"
	exit 0
fi

# The modules too when the config has them (igb_rs is one in ours); the
# guest loads them from the build directory through virtme-ng.
targets=(bzImage)
grep -qx CONFIG_MODULES=y "$KBUILD_OUT/.config" && targets+=(modules)

info "building ${targets[*]} with LLVM=$KBUILD_LLVM -j$JOBS in $KBUILD_OUT"
start=$(date +%s)
strict=(CLIPPY=1 KRUSTFLAGS=-Dwarnings KCFLAGS=-Werror)
[ "${STRICT:-1}" = 0 ] && strict=()
if ! kmake -j"$JOBS" "${strict[@]}" "${targets[@]}" >"$KBUILD_OUT/build.log" 2>&1; then
	# The first error with its context, then how make gave up.
	grep -m 1 -A 30 -E '(^|: )(error|fatal error)(\[E[0-9]+\])?:' "$KBUILD_OUT/build.log" >&2 ||
		tail -n 40 "$KBUILD_OUT/build.log" >&2
	die "kernel build failed; full log: $KBUILD_OUT/build.log"
fi
info "kernel built in $(($(date +%s) - start)) s: $KBUILD_OUT/arch/x86/boot/bzImage"
