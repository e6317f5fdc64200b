#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `hugecollapsed --once --dry-run` reads like a report:
#  - one table row per process with candidates (the hot workload, with its
#    RSS, 0% before and about 100% after), none for a cold one that has
#    nothing to do, which is counted in the summary line instead;
#  - the hot workload's 64 MiB buffer (32 candidate blocks) is one merged
#    address range covering the buffer's 2 MiB blocks, not 32 lines;
#  - the per-block listing appears only with -v, one line per candidate;
#  - --json keeps the full data: every candidate, the merged ranges (same
#    blocks as the candidates) and the anon/shmem byte counts.
# Nothing is collapsed. Needs root.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_root
require_cmd jq
require_exec "$HC_BIN" "$HC_WORKLOAD"

CONF=$HC_TMP/hugecollapsed.conf
printf '[daemon]\nmetrics_file =\n[collapse]\nmax_ptes_none = 255\nmin_referenced_pct = 50\n' >"$CONF"
chmod 0644 "$CONF"
# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
for r in hot cold; do
	if ! start_workload "$r" 64; then
		hc_not_ok "start workload $r"
		hc_summary
		exit 1
	fi
done
HOT=${WL_PID[hot]}
COLD=${WL_PID[cold]}
PMD0=$(wl_pmd_bytes hot)
dry()
{
	timeout 120 "$HC_BIN" --config "$CONF" --once --dry-run --sample-ms 200 --pid "$HOT" --pid "$COLD" "$@"
}
dry >"$HC_TMP/text.out" 2>"$HC_TMP/text.err"
assert_eq "--dry-run exits 0" "$?" 0
dry -v >"$HC_TMP/verbose.out" 2>"$HC_TMP/verbose.err"
assert_eq "--dry-run -v exits 0" "$?" 0
dry --json >"$HC_TMP/dry.json" 2>"$HC_TMP/json.err"
assert_eq "--dry-run --json exits 0" "$?" 0
sed 's/^/#   /' "$HC_TMP/text.out"

assert_cmd "the table header" grep -Eq '^PID +COMMAND +RSS MiB +HUGE MiB +CAND MiB +BEFORE +AFTER +CGROUP$' \
	"$HC_TMP/text.out"
row=$(awk -v p="$HOT" '$1 == p && NF >= 8' "$HC_TMP/text.out")
assert_cmd "a row for the hot workload" test -n "$row"
read -r _ _ rss _ cand before after _ <<<"$row"
assert_cmd "its RSS column holds the 64 MiB buffer ($rss)" awk -v v="$rss" 'BEGIN { exit !(v >= 64) }'
assert_eq "its candidates: the 64 MiB buffer" "$cand" 64.0
assert_eq "coverage before: 0%" "$before" 0.0%
assert_cmd "coverage after: at least 90% ($after)" awk -v v="${after%\%}" 'BEGIN { exit !(v >= 90) }'
assert_eq "no row for the cold workload" "$(awk -v p="$COLD" '$1 == p' "$HC_TMP/text.out" | wc -l)" 0
assert_cmd "the summary counts both processes" grep -q '^1 of 2 processes looked at have candidates' "$HC_TMP/text.out"

# The buffer's 2 MiB blocks, one range.
start=$(((WL_ADDR[hot] + (2 << 20) - 1) / (2 << 20) * (2 << 20)))
end=$(((WL_ADDR[hot] + WL_LEN[hot]) / (2 << 20) * (2 << 20)))
want=$(printf '    0x%012x-0x%012x' "$start" "$end")
assert_cmd "the buffer is one merged range ${want# *}" grep -qF -- "$want" "$HC_TMP/text.out"
assert_eq "$HOT: one range" "$(grep -c "^  $HOT (.*): 1 range\$" "$HC_TMP/text.out")" 1
assert_le "the report is short (lines)" "$(wc -l <"$HC_TMP/text.out")" 20
assert_eq "no per-block lines without -v" "$(grep -cE '^ +#[0-9]+ +0x' "$HC_TMP/text.out")" 0

assert_cmd "JSON: schema_version 1" jq -e '.schema_version == 1' "$HC_TMP/dry.json"
assert_cmd "JSON: would_collapse_bytes counts the buffer" jq -e '.would_collapse_bytes >= 67108864' "$HC_TMP/dry.json"
njson=$(jq --argjson p "$HOT" '[.processes[] | select(.pid == $p) | .candidates[]] | length' "$HC_TMP/dry.json")
assert_eq "JSON: 32 candidates" "$njson" 32
assert_eq "-v: one line per candidate" "$(grep -cE '^ +#[0-9]+ +0x' "$HC_TMP/verbose.out")" "$njson"
assert_eq "JSON: the ranges hold the same blocks" \
	"$(jq --argjson p "$HOT" '[.processes[] | select(.pid == $p) | .ranges[].blocks] | add' "$HC_TMP/dry.json")" "$njson"
assert_eq "JSON: one range from the buffer's first block" \
	"$(jq -r --argjson p "$HOT" '.processes[] | select(.pid == $p) | .ranges[0].start' "$HC_TMP/dry.json")" \
	"$(printf '0x%x' "$start")"
# shellcheck disable=SC2016 # $p is jq's
assert_cmd "JSON: anon bytes cover the buffer" \
	jq -e --argjson p "$HOT" '.processes[] | select(.pid == $p) | .anon_bytes >= 67108864' "$HC_TMP/dry.json"
assert_eq "nothing collapsed" "$(wl_pmd_bytes hot)" "$PMD0"
hc_summary
