#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Includes that point one way: every *.c/*.h of src/ is in the folder of
# its layer, src/<layer>/, and scripts/layers.txt orders the layers bottom to
# top. A module is foo.c and foo.h (a bpf/ folder, src/scan/bpf/, is one). A
# file's #include "..." of another module names one of its own layer or of a
# lower one, and the modules' include graph has no cycle. An include that
# names no file of src/ (a generated header: thp_prctl.skel.h) is not
# checked. tests/, bench/ and fuzz/ may include anything. Any finding fails.
set -euo pipefail
cd "$(dirname "$0")/.."
layers=scripts/layers.txt
mapfile -t files < <(find src -name '*.[ch]' | sort)
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

fail=0
awk -v edges="$edges" '
# A path'"'"'s module: its basename without .c/.h, or its bpf/ folder.
function module(p) {
	if (p ~ /(^|\/)bpf\//) {
		sub(/\/bpf\/.*/, "/bpf", p)
		return p
	}
	sub(/.*\//, "", p)
	sub(/\.[ch]$/, "", p)
	return p
}
FILENAME == ARGV[1] {
	sub(/#.*/, "")
	if (NF)
		rank[$1] = ++nlayers
	next
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
	split($0, q, "\"")
	inc[++ninc] = FILENAME SUBSEP FNR SUBSEP q[2]
}
END {
	for (k = 2; k < ARGC; k++) {
		split(ARGV[k], d, "/")
		mod = module(ARGV[k])
		if (!(d[2] in rank) || d[3] == "") {
			printf "%s: not in the folder of a layer of %s\n", ARGV[k], ARGV[1]
			bad = 1
		} else if (mod in layer && layer[mod] != d[2]) {
			printf "%s: module %s is in two layers, %s and %s\n", ARGV[k], mod, layer[mod], d[2]
			bad = 1
		}
		layer[mod] = d[2]
		name = ARGV[k]
		sub(/.*\//, "", name)
		in_src[name] = 1
	}
	# Each include, once every file of src/ is known.
	for (k = 1; k <= ninc; k++) {
		split(inc[k], f, SUBSEP)
		name = f[3]
		sub(/.*\//, "", name)
		from = module(f[1])
		to = module(f[3])
		if (!(name in in_src) || to == from)
			continue
		print from, to > edges
		if (rank[layer[to]] > rank[layer[from]]) {
			printf "%s:%d: includes \"%s\": %s (%s) is above %s (%s)\n",
			       f[1], f[2], f[3], to, layer[to], from, layer[from]
			bad = 1
		}
	}
	exit bad
}' "$layers" "${files[@]}" || fail=1

# tsort names the modules of each cycle on stderr, one a line after
# "input contains a loop:".
if ! cycles=$(tsort "$edges" 2>&1 >/dev/null); then
	awk '/loop/ { if (c) print c; c = "check_includes: an include cycle:"; next }
	     { sub(/^tsort: /, ""); c = c " " $0 } END { if (c) print c }' <<<"$cycles" | sort -u
	fail=1
fi
if ((fail)); then
	echo "check_includes: failed (layers: $layers)"
	exit 1
fi
echo "check_includes: ${#files[@]} files, no include upwards, no cycle"
