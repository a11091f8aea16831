#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build everything, boot the VM and run the devmem demo in it.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$HARNESS_DIR/kernel.sh"
"$HARNESS_DIR/kselftest.sh"
res=$CACHE_DIR/demo
"$HARNESS_DIR/vm.sh" "$res" demo
echo
cat "$res/demo.tap"
rc=$(cat "$res/demo.rc")
exit "$rc"
