#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The man pages render without a single groff or man warning (the check
# Debian's lintian runs), and document every option, key and result name
# that the sources define.
. "$(dirname "$0")/../lib/hc_test_lib.sh"

if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
	hc_skip "needs man and groff (apt-get install man-db groff-base)"
fi

MAN8=$HC_SRC/man/hugecollapsed.8
MAN5=$HC_SRC/man/hugecollapsed.conf.5

for page in "$MAN8" "$MAN5"; do
	# man --warnings reports on stderr and still exits 0: any output fails.
	out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
		man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
	assert_eq "$(basename "$page") renders without warnings" "$out" ""
done

# The rendered text, hyphenation and adjustment off, for word lookups.
render()
{
	MANWIDTH=200 man -l -Tutf8 "$1" 2>/dev/null | col -bx
}
R8=$(render "$MAN8")
R5=$(render "$MAN5")

documented() # DESC TEXT WORD…
{
	local desc=$1 text=$2 missing=() w
	shift 2
	for w in "$@"; do
		grep -qwF -- "$w" <<<"$text" || missing+=("$w")
	done
	if ((${#missing[@]} == 0)); then
		hc_ok "$desc ($# names)"
	else
		hc_not_ok "$desc: missing ${missing[*]}"
	fi
}

# Keys: every "/* key = default" comment in config.h names one.
mapfile -t keys < <(grep -oE '/\* [a-z_]+ = ' "$HC_SRC/src/util/config.h" | awk '{print $2}' | sort -u)
# The limits live in scan_result.h, and [daemon] keys are commented by default only.
keys+=(scan_interval_ms metrics_file metrics_interval_s state_file cgroup_dir khugepaged full_rescan_s alloc_backoff_ms coverage_top_cgroups path
	pressure_some_pct pressure_full_pct pressure_free_margin_mb cold_watch
	max_ptes_none max_ptes_swap max_ptes_shared min_referenced_pct)
documented "hugecollapsed.conf(5) documents every key" "$R5" "${keys[@]}"

# Result names: the string literals of scan_result.c and collapse.c.
names_in() # FILE ARRAY-MARKER
{
	grep -oE '\] = "[a-z_]+"' "$1" | sed -E 's/.*"([a-z_]+)"/\1/'
}
mapfile -t scans < <(names_in "$HC_SRC/src/util/scan_result.c")
mapfile -t outcomes < <(names_in "$HC_SRC/src/collapse/collapse.c")
assert_ge "scan result names found in scan_result.c" "${#scans[@]}" 9
assert_ge "collapse outcome names found in collapse.c" "${#outcomes[@]}" 9
documented "hugecollapsed(8) lists every scan result" "$R8" "${scans[@]}"
documented "hugecollapsed(8) lists every collapse outcome" "$R8" "${outcomes[@]}"
documented "hugecollapsed(8) documents every option" "$R8" \
	--config -v --check-config --once --dry-run --pid --json --sample-ms --status --restore --version --help \
	SIGTERM SIGINT SIGHUP keep idle off
for sec in OPTIONS SIGNALS "EXIT STATUS" FILES EXAMPLES "SEE ALSO"; do
	assert_cmd "hugecollapsed(8) has a $sec section" grep -q "^$sec" <<<"$R8"
done
for sec in SCORING EXAMPLES "SEE ALSO"; do
	assert_cmd "hugecollapsed.conf(5) has a $sec section" grep -q "^$sec" <<<"$R5"
done

hc_summary
