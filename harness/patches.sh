#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the project as the git format-patch series a maintainer takes, one
# directory per series of patches/series ("# series NAME: TITLE" lines),
# in the order they would be sent, into OUT_DIR (default: series/ in the
# repository):
#
#   OUT_DIR/NN-NAME/0000-cover-letter.patch, 0001-....patch, ...
#
# Each series' cover letter takes its subject and text from
# patches/covers/NAME.txt: a first line "Subject: ..." (the series'
# title), then optionally "Prefix: ..." (the subject prefix, "PATCH"
# unless given, e.g. "RFC PATCH net-next") and "Depends: NAME ..." (the
# series it needs, all of them, each before it in patches/series; none
# unless given), then a blank line and the text.
#
# A series is made against its own base: the pristine base (7.3) with the
# series it depends on applied, and nothing else. Its commits are applied
# there with git am, in a scratch worktree of the kernel tree
# ($CACHE_DIR/patches-wt), and formatted from there; a series that does
# not apply on its base stops the run, naming it. Every patch and cover
# letter ends with base-commit: the pristine base, and lists the patches
# of the series it depends on as prerequisite-patch-id: lines, as git
# format-patch --base writes them; one that depends on none lists none.
# Prints the directory.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

OUT_DIR=${1:-$TOP_DIR/series}
KERNEL_TREE=$("$HARNESS_DIR/tree.sh")
COVERS=$TOP_DIR/patches/covers

groups=$(series_groups)
mapfile -t commits < <(git -C "$KERNEL_TREE" rev-list --reverse "$BASE_REF..$SERIES_REF")
total=$(awk '{ n += $2 } END { print n + 0 }' <<<"$groups")
[ "$total" = "${#commits[@]}" ] ||
	die "patches/series has $total patches, the tree ${#commits[@]} commits"

rm -rf "$OUT_DIR"
mkdir -p "$OUT_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A worktree kept between runs: resetting it to the base rewrites only the
# files the last series touched.
wt=$CACHE_DIR/patches-wt
if ! git -C "$wt" rev-parse --git-dir >/dev/null 2>&1; then
	rm -rf "$wt"
	git -C "$KERNEL_TREE" worktree prune
	git -C "$KERNEL_TREE" worktree add -q --detach "$wt" "$BASE_REF"
fi
git_w() {
	GIT_COMMITTER_NAME=devmem-rs GIT_COMMITTER_EMAIL=devmem-rs@localhost \
		git -C "$wt" "$@"
}
# The header field FIELD of cover file $2, or nothing.
cover_field() { # field file
	sed -n "1,/^\$/s/^$1: //p" "$2"
}
declare -A dir_of
prev=$BASE_REF i=0
while read -r dir count; do
	name=${dir#*-}
	cover=$COVERS/$name.txt
	[ -f "$cover" ] || die "series $name has no cover letter: $cover"
	subject=$(sed -n '1s/^Subject: //p' "$cover")
	[ -n "$subject" ] || die "$cover does not start with 'Subject: '"
	prefix=$(cover_field Prefix "$cover")
	deps=$(cover_field Depends "$cover")
	end=${commits[$((i + count - 1))]}

	# Its base: the pristine one, then each series it depends on, as
	# written to OUT_DIR.
	git_w am --abort >/dev/null 2>&1 || true
	git_w checkout -q -f --detach "$BASE_REF"
	git_w clean -q -fd
	for dep in $deps; do
		[ -n "${dir_of[$dep]:-}" ] ||
			die "$cover: Depends: $dep is no series before $name in patches/series"
		mapfile -t set < <(find "$OUT_DIR/${dir_of[$dep]}" -name '*.patch' \
			! -name '0000-cover-letter.patch' | sort)
		git_w am -q "${set[@]}" >"$tmp/am.log" 2>&1 ||
			die "series $dep does not apply where series $name needs it (Depends: $deps): $(head -n 3 "$tmp/am.log")"
	done
	rm -rf "$tmp/chain"
	git -C "$KERNEL_TREE" format-patch -q --no-signature --zero-commit -o "$tmp/chain" "$prev..$end"
	git_w am -q "$tmp"/chain/*.patch >"$tmp/am.log" 2>&1 ||
		die "series $name does not apply on the base with ${deps:-no other series}: $(head -n 3 "$tmp/am.log")"
	git_w format-patch -q --no-signature --zero-commit --cover-letter \
		--subject-prefix="${prefix:-PATCH}" --base="$BASE_REF" -o "$OUT_DIR/$dir" "HEAD~$count..HEAD"
	# The text: what follows the first blank line of the cover file.
	SUBJECT=$subject BLURB=$(sed '1,/^$/d' "$cover") python3 - "$OUT_DIR/$dir/0000-cover-letter.patch" <<-'PY'
		import os, sys
		p = sys.argv[1]
		s = open(p).read()
		for k, v in (('*** SUBJECT HERE ***', 'SUBJECT'), ('*** BLURB HERE ***', 'BLURB')):
		    assert s.count(k) == 1, k
		    s = s.replace(k, os.environ[v])
		open(p, 'w').write(s)
	PY
	dir_of[$name]=$dir
	prev=$end i=$((i + count))
done <<<"$groups"
info "$i patches in $(wc -l <<<"$groups") series in $OUT_DIR"
echo "$OUT_DIR"
