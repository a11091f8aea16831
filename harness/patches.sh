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
# title), optionally "Prefix: ..." (the subject prefix, "PATCH" unless
# given, e.g. "RFC PATCH net-next"), then a blank line and the text. Every
# patch and cover letter ends with base-commit: the pristine base (7.3),
# and a series that needs the ones before it lists their patches as
# prerequisite-patch-id: lines, as git format-patch --base writes them.
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
prev=$BASE_REF i=0
while read -r dir count; do
	name=${dir#*-}
	cover=$COVERS/$name.txt
	[ -f "$cover" ] || die "series $name has no cover letter: $cover"
	subject=$(sed -n '1s/^Subject: //p' "$cover")
	[ -n "$subject" ] || die "$cover does not start with 'Subject: '"
	prefix=$(sed -n '2s/^Prefix: //p' "$cover")
	end=${commits[$((i + count - 1))]}
	git -C "$KERNEL_TREE" format-patch -q --no-signature --zero-commit --cover-letter \
		--subject-prefix="${prefix:-PATCH}" --base="$BASE_REF" -o "$OUT_DIR/$dir" "$prev..$end"
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
	prev=$end i=$((i + count))
done <<<"$groups"
info "$i patches in $(wc -l <<<"$groups") series in $OUT_DIR"
echo "$OUT_DIR"
