#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Static checks, one result line each, tab-separated (name, pass|fail,
# detail), on stdout:
#   harness-tests  the harness's own unit tests (harness/tests)
#   shell lint  shellcheck on the harness scripts
#   rustfmt     every .rs file of the overlay, with the kernel's rustfmt.toml
#   rustfmt-patched  the upstream .rs files the patches change, as patched
#   igb-layers  igb_rs's modules import each other in layers, with no
#               circle (modcycles.py)
#   checkpatch  scripts/checkpatch.pl --strict on every patch of the series
#   series      the series of patches/series (make patches), each with its
#               cover letter, apply with git am in order on the pristine
#               base and end at the tree built
# Clippy runs as part of the kernel build (CLIPPY=1 with -Dwarnings, see
# kernel.sh), so a clippy warning fails 'kernel-build'.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

KERNEL_TREE=$("$HARNESS_DIR/tree.sh")
work=$CACHE_DIR/static
rm -rf "$work"
mkdir -p "$work"

emit() { printf '%s\t%s\t%s\n' "$1" "$2" "$3"; }

# the harness's own tests and shell lint
if python3 -m unittest discover -s "$HARNESS_DIR/tests" -p 'test_*.py' >"$work/unittest.log" 2>&1; then
	emit harness-tests pass "$(grep -o 'Ran [0-9]* tests' "$work/unittest.log")"
else
	sed 's/^/    /' "$work/unittest.log" | tail -n 30 >&2
	emit harness-tests fail "unittest output above"
fi
mapfile -t sh < <(cd "$TOP_DIR" && git ls-files -co --exclude-standard -- 'harness/*.sh' 'harness/guest/*.sh' .ci/run)
if (cd "$TOP_DIR" && shellcheck -x -S warning "${sh[@]}") >"$work/shellcheck.log" 2>&1; then
	emit shellcheck pass "${#sh[@]} scripts"
else
	sed 's/^/    /' "$work/shellcheck.log" | head -n 40 >&2
	emit shellcheck fail "${#sh[@]} scripts; messages above"
fi

# rustfmt
mapfile -t rs < <(cd "$TOP_DIR" && git ls-files -co --exclude-standard -- '*.rs')
if [ ${#rs[@]} -eq 0 ]; then
	emit rustfmt pass "no Rust files yet"
elif (cd "$TOP_DIR" && rustfmt --check --edition 2021 \
	--config-path "$KERNEL_TREE/.rustfmt.toml" "${rs[@]}") >"$work/rustfmt.log" 2>&1; then
	emit rustfmt pass "${#rs[@]} files"
else
	sed 's/^/    /' "$work/rustfmt.log" | head -n 40 >&2
	emit rustfmt fail "${#rs[@]} files; diff above"
fi

# rustfmt of the upstream Rust files the patches change (rust/kernel/lib.rs,
# ...), as the tree holds them with the series applied; the overlay's are
# checked above.
mapfile -t prs < <(cd "$TOP_DIR" && sed -n 's|^+++ b/\(.*\.rs\)$|\1|p' patches/*.patch | sort -u |
	while read -r f; do [ -e "$f" ] || echo "$f"; done)
if [ ${#prs[@]} -eq 0 ]; then
	emit rustfmt-patched pass "no upstream Rust file patched"
elif (cd "$KERNEL_TREE" && for f in "${prs[@]}"; do
	# From stdin, rustfmt formats the file alone, not the modules it
	# declares (the whole kernel crate for lib.rs).
	rustfmt --edition 2021 --config-path .rustfmt.toml --emit stdout <"$f" |
		diff -u --label "$f" --label "$f (rustfmt)" "$f" - || exit 1
done) >"$work/rustfmt-patched.log" 2>&1; then
	emit rustfmt-patched pass "${#prs[@]} files"
else
	sed 's/^/    /' "$work/rustfmt-patched.log" | head -n 40 >&2
	emit rustfmt-patched fail "${#prs[@]} files; diff above"
fi

# igb_rs's layers: a module that a lower one imports imports none of those
# above it
if python3 "$HARNESS_DIR/modcycles.py" "$KERNEL_TREE/drivers/net/ethernet/intel/igb_rs" \
	>"$work/modcycles.log" 2>&1; then
	emit igb-layers pass "$(cat "$work/modcycles.log")"
else
	sed 's/^/    /' "$work/modcycles.log" >&2
	emit igb-layers fail "import circles above"
fi

# the series: format-patch, checkpatch, git am onto a pristine tree
series=$("$HARNESS_DIR/patches.sh" "$work/series")
mapfile -t patches < <(find "$series" -name '*.patch' ! -name '0000-cover-letter.patch' | sort)
if [ ${#patches[@]} -eq 0 ]; then
	emit checkpatch pass "no patches yet"
else
	# FILE_PATH_CHANGES fires on every added file unless the same patch
	# touches MAINTAINERS; the 'maintainers' check below answers its
	# question for real instead. UNKNOWN_COMMIT_ID: the base tree is
	# 7.3's source release, without upstream's history, so a Fixes: tag
	# naming an upstream commit cannot be looked up in it.
	# And what git leaves in a message that a rebase or a merge stopped
	# in (its list of conflicts, markers), which checkpatch lets through.
	bad=0
	for p in "${patches[@]}"; do
		if ! (cd "$KERNEL_TREE" && ./scripts/checkpatch.pl --strict --quiet \
			--no-tree --show-types --ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID "$p") \
			>"$work/checkpatch.log" 2>&1 ||
			! awk '/^---$/ { exit } /^# Conflicts:|^(<<<<<<<|>>>>>>>|=======)( |$)/ {
				print "a rebase left this in the message: " $0; found = 1 }
				END { exit found }' "$p" >>"$work/checkpatch.log"; then
			bad=$((bad + 1))
			echo "    $(basename "$p"):" >&2
			sed 's/^/      /' "$work/checkpatch.log" | head -n 30 >&2
		fi
	done
	if [ $bad -eq 0 ]; then
		emit checkpatch pass "${#patches[@]} patches, --strict"
	else
		emit checkpatch fail "$bad of ${#patches[@]} patches; messages above"
	fi

	# Every file the series adds has a MAINTAINERS entry of its own, not
	# just the catch-all ones.
	mapfile -t added < <(git -C "$KERNEL_TREE" diff --name-only --diff-filter=A \
		"$BASE_REF" "$SERIES_REF")
	orphans=()
	for f in "${added[@]}"; do
		sections=$(cd "$KERNEL_TREE" && ./scripts/get_maintainer.pl --no-git \
			--no-git-fallback --sections -f "$f" 2>/dev/null |
			grep -vE '^([A-Z]:|THE REST$|$)' || true)
		[ -n "$sections" ] || orphans+=("$f")
	done
	if [ ${#orphans[@]} -eq 0 ]; then
		emit maintainers pass "${#added[@]} added files have an entry"
	else
		printf '    no MAINTAINERS entry: %s\n' "${orphans[@]}" >&2
		emit maintainers fail "${#orphans[@]} of ${#added[@]} added files"
	fi

	# A worktree kept between runs: resetting it to the base rewrites only
	# the files the last series touched.
	am=$CACHE_DIR/am-check
	if ! git -C "$am" rev-parse --git-dir >/dev/null 2>&1; then
		rm -rf "$am"
		git -C "$KERNEL_TREE" worktree prune
		git -C "$KERNEL_TREE" worktree add -q --detach "$am" "$BASE_REF"
	fi
	git -C "$am" am --abort >/dev/null 2>&1 || true
	git -C "$am" checkout -q -f --detach "$BASE_REF"
	git -C "$am" clean -q -fd
	# patches.sh made each series on its own base (the pristine one and
	# the series its cover's Depends: names) and stopped if one did not
	# apply there. Now series by series, in order, each on the one before
	# (the first on the base), as a maintainer applies them all: each must
	# end at the tree the commits of patches/series build at that point,
	# and have a cover letter that names its base.
	mapfile -t commits < <(git -C "$KERNEL_TREE" rev-list --reverse "$BASE_REF..$SERIES_REF")
	fail='' n=0 sets=0
	: >"$work/am.log"
	while read -r dir count; do
		sets=$((sets + 1))
		cover=$series/$dir/0000-cover-letter.patch
		if [ ! -f "$cover" ] || grep -q '^\*\*\* .* HERE \*\*\*$' "$cover" ||
			! grep -q '^base-commit: ' "$cover"; then
			fail="$dir: no cover letter, a placeholder left in it, or no base-commit"
			break
		fi
		mapfile -t set < <(find "$series/$dir" -name '*.patch' ! -name '0000-cover-letter.patch' | sort)
		n=$((n + ${#set[@]}))
		if [ "${#set[@]}" != "$count" ] || ! git -C "$am" am -q "${set[@]}" >>"$work/am.log" 2>&1; then
			fail="$dir: git am failed"
			break
		fi
		if [ -n "$(git -C "$am" diff "${commits[$((n - 1))]}")" ]; then
			fail="$dir: applied, it differs from the tree built"
			break
		fi
	done < <(series_groups)
	if [ -z "$fail" ] && [ "$n" = "${#commits[@]}" ] && [ -z "$(git -C "$am" diff "$SERIES_REF")" ]; then
		emit series pass "$sets series, $n patches: each applies with git am on its own base (the series it depends on), and in order on the one before, ending at the tree built"
	else
		sed 's/^/    /' "$work/am.log" | head -n 20 >&2
		emit series fail "${fail:-the series end elsewhere than the tree built}"
	fi
fi
