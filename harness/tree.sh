#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Turn the pristine base into the project's tree: one commit per entry of
# patches/series, then check that commit out in $KERNEL_TREE.
#
# An entry of patches/series is a patch file name, NNNN-slug.patch. The
# patch carries the commit message (git format-patch form) and the edits to
# upstream files; NNNN-slug.files, when present, lists the new files at
# kernel paths (files of this repository, the overlay) that the same commit
# adds. Every overlay file is claimed by exactly one entry.
#
# The overlay holds each file's final content. A later entry's patch may
# edit an overlay file an earlier entry added (a driver grows in steps):
# the earlier commit then adds the file as it was before those edits, the
# overlay's content with the later patches' hunks for it undone (git apply
# -R, the last entry first), and each later commit applies its own. So a
# change to such a file in the overlay lands in the entry that adds it,
# and the later patches must still apply around it; at the end the tree
# must hold the overlay's content, or the series is refused.
#
# The commits are built with git plumbing on a private index, so the work
# tree is only touched by the final checkout, which rewrites just the files
# whose content changed: the kernel build stays incremental.
#
# Prints the kernel tree path on stdout. With SERIES_ONLY=1 it only makes
# the commits and prints the last one's id: the kernel tree's checkout and
# refs are left as they are (check-series.sh builds them elsewhere).

set -euo pipefail
. "$(dirname "$0")/lib.sh"

KERNEL_TREE=$("$HARNESS_DIR/fetch-kernel.sh")
PATCH_DIR=$TOP_DIR/patches
SERIES=$PATCH_DIR/series

git_k() { git -C "$KERNEL_TREE" "$@"; }

# Top-level directories of the repository that are kernel paths.
OVERLAY_DIRS=(Documentation drivers include net rust samples tools lib)

overlay_files() {
	local d have=()
	for d in "${OVERLAY_DIRS[@]}"; do
		[ -e "$TOP_DIR/$d" ] && have+=("$d")
	done
	[ ${#have[@]} -gt 0 ] || return 0
	git -C "$TOP_DIR" ls-files -co --exclude-standard -- "${have[@]}" |
		while read -r f; do [ -f "$TOP_DIR/$f" ] && echo "$f"; done |
		sort
}

series_entries() {
	[ -f "$SERIES" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$SERIES"
}

# Refuse to build on top of hand edits in the kernel tree: they would be
# lost on the next checkout, or silently built into a test run.
if [ "${SERIES_ONLY:-0}" != 1 ] && [ -n "$(git_k status --porcelain --untracked-files=no)" ]; then
	git_k status --short --untracked-files=no | head -n 20 >&2
	die "$KERNEL_TREE has local changes (above); edit the files in $TOP_DIR instead, then 'git -C $KERNEL_TREE checkout -f HEAD'"
fi

index=$(mktemp "$CACHE_DIR/index.XXXXXX")
msgdir=$(mktemp -d "$CACHE_DIR/msg.XXXXXX")
trap 'rm -rf "$index" "$msgdir"' EXIT
export GIT_INDEX_FILE=$index

parent=$(git_k rev-parse "$BASE_REF^{commit}")
git_k read-tree "$parent"

mapfile -t entries < <(series_entries)
declare -A is_overlay=()
while read -r f; do
	[ -n "$f" ] && is_overlay[$f]=1
done < <(overlay_files)

# The overlay files later patches edit, as each commit that adds one has
# it: undo the edits in $stage, the last entry first.
stage=$msgdir/stage
mkdir -p "$stage"
declare -A staged=()
for ((i = ${#entries[@]} - 1; i >= 0; i--)); do
	entry=${entries[i]}
	patch=$PATCH_DIR/$entry
	[ -f "$patch" ] || die "patches/series names $entry, which does not exist"
	git_k mailinfo "$msgdir/msg" "$msgdir/diff" <"$patch" >/dev/null ||
		die "$entry is not in git format-patch form"
	inc=()
	while read -r f; do
		[ -n "${is_overlay[$f]:-}" ] || continue
		if [ -z "${staged[$f]:-}" ]; then
			mkdir -p "$stage/${f%/*}"
			cp "$TOP_DIR/$f" "$stage/$f"
			staged[$f]=$entry
		fi
		inc+=("--include=$f")
	done < <(sed -n 's|^diff --git a/\([^ ]*\) b/.*|\1|p' "$msgdir/diff")
	[ ${#inc[@]} -gt 0 ] || continue
	# Outside any repository (the cache may be in one): paths are the
	# stage's.
	if ! out=$(cd "$stage" && unset GIT_INDEX_FILE &&
		GIT_CEILING_DIRECTORIES=${stage%/*} git apply -R "${inc[@]}" "$msgdir/diff" 2>&1); then
		printf '%s\n' "$out" >&2
		die "patches/$entry's edits of overlay files do not undo from the overlay's content: the overlay changed where $entry edits; refresh its hunks (above)"
	fi
done

declare -A claimed=()
while read -r entry; do
	[ -n "$entry" ] || continue
	patch=$PATCH_DIR/$entry
	git_k mailinfo "$msgdir/msg" "$msgdir/diff" <"$patch" >"$msgdir/info" ||
		die "$entry is not in git format-patch form"
	subject=$(sed -n 's/^Subject: //p' "$msgdir/info")
	author=$(sed -n 's/^Author: //p' "$msgdir/info")
	email=$(sed -n 's/^Email: //p' "$msgdir/info")
	date=$(sed -n 's/^Date: //p' "$msgdir/info")
	[ -n "$subject" ] || die "$entry has no Subject"

	if [ -s "$msgdir/diff" ]; then
		if ! out=$(git_k apply --cached --whitespace=nowarn "$msgdir/diff" 2>&1); then
			printf '%s\n' "$out" >&2
			files=$(sed -n 's|^+++ b/||p' "$msgdir/diff" | tr '\n' ' ')
			die "patch patches/$entry no longer applies (files: $files); see the git apply errors above"
		fi
	fi

	list=$PATCH_DIR/${entry%.patch}.files
	if [ -f "$list" ]; then
		while read -r f; do
			f=${f%%#*}
			f=${f%"${f##*[![:space:]]}"}
			[ -n "$f" ] || continue
			[ -f "$TOP_DIR/$f" ] || die "${list#"$TOP_DIR"/} lists $f, which does not exist"
			[ -z "${claimed[$f]:-}" ] || die "$f is claimed by ${claimed[$f]} and $entry"
			claimed[$f]=$entry
			mode=100644
			[ -x "$TOP_DIR/$f" ] && mode=100755
			src=$TOP_DIR/$f
			[ -z "${staged[$f]:-}" ] || src=$stage/$f
			blob=$(git_k hash-object -w --path="$f" "$src")
			git_k update-index --add --cacheinfo "$mode,$blob,$f"
		done <"$list"
	fi

	tree=$(git_k write-tree)
	{
		echo "$subject"
		echo
		cat "$msgdir/msg"
	} >"$msgdir/commit"
	# Author and committer come from the patch, so the same inputs give the
	# same commit ids on every machine.
	parent=$(GIT_AUTHOR_NAME=${author:-devmem-rs} GIT_AUTHOR_EMAIL=${email:-devmem-rs@localhost} \
		GIT_COMMITTER_NAME=${author:-devmem-rs} GIT_COMMITTER_EMAIL=${email:-devmem-rs@localhost} \
		GIT_AUTHOR_DATE=${date:-} GIT_COMMITTER_DATE=${date:-} \
		git_k commit-tree "$tree" -p "$parent" -F "$msgdir/commit")
done < <(printf '%s\n' "${entries[@]}")

for f in "${!staged[@]}"; do
	[ "$(git_k rev-parse -q --verify ":$f")" = "$(git_k hash-object --path="$f" "$TOP_DIR/$f")" ] ||
		die "the series ends with $f other than the overlay's (edited last by ${staged[$f]})"
done

unclaimed=()
while read -r f; do
	[ -n "$f" ] || continue
	[ -n "${claimed[$f]:-}" ] || unclaimed+=("$f")
done < <(overlay_files)
if [ ${#unclaimed[@]} -gt 0 ]; then
	printf '  %s\n' "${unclaimed[@]}" >&2
	die "the files above are in no patches/*.files list: add each to the commit that introduces it"
fi

unset GIT_INDEX_FILE
if [ "${SERIES_ONLY:-0}" = 1 ]; then
	echo "$parent"
	exit 0
fi
old=$(git_k rev-parse HEAD)
if [ "$old" != "$parent" ]; then
	git_k checkout -q --detach "$parent"
	changed=$(git_k diff --name-only "$old" "$parent" | wc -l)
	info "kernel tree at $(git_k rev-parse --short HEAD): $changed files rewritten"
fi
git_k update-ref "$SERIES_REF" "$parent"
echo "$KERNEL_TREE"
