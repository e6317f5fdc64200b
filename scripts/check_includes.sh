#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Includes that point one way (scripts/layers.txt): every *.c/*.h in src/
# belongs to a module (foo.c and foo.h; src/bpf/ is bpf) listed there; a
# file's #include "..." of another module of src/ names one of its own layer
# or a lower one; the modules' include graph has no cycle. An include that
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
# A path'"'"'s module: its basename without .c/.h, or bpf under src/bpf/.
function module(p) {
	if (p ~ /(^|\/)bpf\//)
		return "bpf"
	sub(/.*\//, "", p)
	sub(/\.[ch]$/, "", p)
	return p
}
FILENAME == ARGV[1] {
	sub(/#.*/, "")
	if (NF < 2)
		next
	if (!($1 in rank))
		rank[$1] = ++nlayers
	for (i = 2; i <= NF; i++) {
		if ($i in layer) {
			printf "%s:%d: module %s listed twice\n", FILENAME, FNR, $i
			bad = 1
		}
		layer[$i] = $1
	}
	next
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
	split($0, q, "\"")
	inc[++ninc] = FILENAME SUBSEP FNR SUBSEP q[2]
}
END {
	for (k = 2; k < ARGC; k++) {
		mod = module(ARGV[k])
		present[mod] = 1
		if (!(mod in layer)) {
			printf "%s: module %s is in no layer of %s\n", ARGV[k], mod, ARGV[1]
			bad = 1
		}
		name = ARGV[k]
		sub(/.*\//, "", name)
		in_src[name] = 1
	}
	for (m in layer)
		if (!(m in present)) {
			printf "%s: module %s has no file in src/\n", ARGV[1], m
			bad = 1
		}
	# Each include, once every file of src/ is known.
	for (k = 1; k <= ninc; k++) {
		split(inc[k], f, SUBSEP)
		name = f[3]
		sub(/.*\//, "", name)
		from = module(f[1])
		to = module(f[3])
		if (!(name in in_src) || !(from in layer) || to == from)
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
