#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the project as a git format-patch series against the pristine base
# into OUT_DIR (default: series/ in the repository), the form the netdev
# list takes. Prints the directory.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

OUT_DIR=${1:-$TOP_DIR/series}
KERNEL_TREE=$("$HARNESS_DIR/tree.sh")

rm -rf "$OUT_DIR"
mkdir -p "$OUT_DIR"
n=$(git -C "$KERNEL_TREE" rev-list --count "$BASE_REF..$SERIES_REF")
if [ "$n" -gt 0 ]; then
	git -C "$KERNEL_TREE" format-patch -q --no-signature --zero-commit \
		--base="$BASE_REF" -o "$OUT_DIR" "$BASE_REF..$SERIES_REF"
fi
info "$n patches in $OUT_DIR"
echo "$OUT_DIR"
