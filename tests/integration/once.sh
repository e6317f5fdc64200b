#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `hugecollapsed --once` against one workload per role:
#  - --dry-run changes nothing and lists the hot and shmem blocks as candidates;
#  - a real pass makes hot and shmem PMD-mapped, leaves cold, lazy-free,
#    sparse, nohugepage and THP-disabled memory alone (no RSS growth), keeps
#    the huge workload huge, and corrupts no one's data;
#  - memory without MADV_HUGEPAGE (plain) is left alone under scope = madvise
#    and counted as thp_policy, not ineligible.
# Every workload but plain opts in with MADV_HUGEPAGE after its 4 KiB fill;
# khugepaged is kept from scanning meanwhile (it would collapse them too).
# Needs root; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_root
require_cmd jq
require_exec "$HC_BIN" "$HC_WORKLOAD"

ROLES=(hot shmem huge cold lazyfree sparse nohuge thpoff plain)
# Memory the daemon must leave as it is.
LEAVE_ALONE=(cold lazyfree sparse nohuge thpoff plain)
declare -A MB=([hot]=64 [shmem]=64)

# A private config with the documented defaults, so a file in /etc cannot
# change what this test sees. config_load insists on root-owned, 0644.
# scope = madvise for the advised anonymous memory; shmem follows
# shmem_enabled in every scope, as the kernel's own policy does: advise for
# this test (written back at exit), so the advised shmem is collapsed.
CONF=$HC_TMP/hugecollapsed.conf
cat >"$CONF" <<'EOF'
[collapse]
max_ptes_none = 255
min_referenced_pct = 50
scope = madvise
EOF
chmod 0644 "$CONF"
hc_khugepaged_quiet || exit 1
hc_thp_set shmem_enabled advise || exit 1

for r in "${ROLES[@]}"; do
	role=$r args=()
	[[ $r == plain ]] && role=hot args=(--advise none)
	if ! start_workload "$role" "${MB[$r]:-32}" "$r" "${args[@]}"; then
		hc_not_ok "start workload $r"
		hc_summary
		exit 1
	fi
done
PIDARGS=()
for r in "${ROLES[@]}"; do
	PIDARGS+=(--pid "${WL_PID[$r]}")
done

declare -A RSS0 PMD0
for r in "${ROLES[@]}"; do
	RSS0[$r]=$(wl_field "$r" Rss)
	PMD0[$r]=$(wl_pmd_bytes "$r")
done

# run_daemon NAME ARGS…: runs one pass, JSON to $HC_TMP/NAME.json.
run_daemon()
{
	local name=$1
	shift
	hc_log "$HC_BIN $*"
	# A hung pass fails here (status 124) rather than at ctest's timeout.
	timeout 300 "$HC_BIN" --config "$CONF" "$@" >"$HC_TMP/$name.json" 2>"$HC_TMP/$name.err"
	local rc=$?
	assert_eq "$name: hugecollapsed exits 0" "$rc" 0
	((rc != 0)) && hc_log "stderr: $(cat "$HC_TMP/$name.err")"
	assert_cmd "$name: JSON has collapsed_bytes, results, outcomes" \
		jq -e 'has("collapsed_bytes") and has("results") and has("outcomes")' "$HC_TMP/$name.json"
}

### Dry run: looks, reports, touches nothing.
run_daemon dry --once --dry-run --json "${PIDARGS[@]}"
DRY=$HC_TMP/dry.json
for r in "${ROLES[@]}"; do
	assert_eq "dry: $r PMD-mapped bytes unchanged" "$(wl_pmd_bytes "$r")" "${PMD0[$r]}"
	assert_eq "dry: $r Rss unchanged (kB)" "$(wl_field "$r" Rss)" "${RSS0[$r]}"
done
assert_eq "dry: collapsed_bytes is 0" "$(jq '.collapsed_bytes' "$DRY")" 0
assert_eq "dry: outcomes.collapsed is 0" "$(jq '.outcomes.collapsed // 0' "$DRY")" 0
for r in hot shmem; do
	assert_eq "dry: every $r block is a candidate" "$(json_candidates_in "$DRY" "$r")" "$(wl_blocks "$r")"
done
for r in huge "${LEAVE_ALONE[@]}"; do
	assert_eq "dry: no $r block is a candidate" "$(json_candidates_in "$DRY" "$r")" 0
done
assert_ge "dry: huge blocks counted pmd_mapped" "$(json_proc_result "$DRY" huge pmd_mapped)" "$(wl_blocks huge)"
assert_ge "dry: cold blocks counted cold" "$(json_proc_result "$DRY" cold cold)" "$(wl_blocks cold)"
assert_ge "dry: lazyfree blocks counted page_lazyfree" "$(json_proc_result "$DRY" lazyfree page_lazyfree)" \
	"$(wl_blocks lazyfree)"
assert_ge "dry: sparse blocks counted exceed_none_pte" "$(json_proc_result "$DRY" sparse exceed_none_pte)" \
	"$(wl_blocks sparse)"
assert_ge "dry: plain blocks counted thp_policy" "$(json_proc_result "$DRY" plain thp_policy)" "$(wl_blocks plain)"
# Its other VMAs (libraries, stack) are ineligible as the hot twin's are,
# give or take a partial block where ASLR put them; its 16 blocks are not.
d=$(($(json_proc_result "$DRY" plain ineligible) - $(json_proc_result "$DRY" hot ineligible)))
assert_lt "dry: plain blocks not counted ineligible (|plain - hot| ineligible)" "${d#-}" "$(($(wl_blocks plain) / 2))"
assert_ge "dry: thpoff blocks counted ineligible" "$(json_proc_result "$DRY" thpoff ineligible)" "$(wl_blocks thpoff)"

### Real pass.
run_daemon real --once --json "${PIDARGS[@]}"
REAL=$HC_TMP/real.json
for r in hot shmem huge; do
	assert_ge "real: $r PMD-mapped percent" "$(wl_pmd_pct "$r")" 90
done
for r in "${LEAVE_ALONE[@]}"; do
	assert_eq "real: $r has no PMD-mapped bytes" "$(wl_pmd_bytes "$r")" 0
	assert_lt "real: $r Rss growth (kB)" $(($(wl_field "$r" Rss) - RSS0[$r])) 1024
done
assert_ge "real: results.pmd_mapped covers the huge workload" "$(jq '.results.pmd_mapped // 0' "$REAL")" \
	"$(wl_blocks huge)"
# Relative to what this pass found, so a THP made meanwhile by someone else
# (khugepaged, another daemon) is not blamed on it.
candidates=$(jq '.results.candidate // 0' "$REAL")
collapsed=$(jq '.outcomes.collapsed // 0' "$REAL")
assert_ge "real: candidates found (hot + shmem blocks not yet huge)" "$candidates" 1
assert_ge "real: outcomes.collapsed is >= 90% of candidates" "$((collapsed * 10))" "$((candidates * 9))"
assert_eq "real: collapsed_bytes is 2 MiB per collapse" "$(jq '.collapsed_bytes' "$REAL")" "$((collapsed << 21))"
hc_log "real: results $(jq -c '.results' "$REAL") outcomes $(jq -c '.outcomes' "$REAL")"

### Nobody's data was damaged.
for r in "${ROLES[@]}"; do
	stop_workload "$r"
	assert_eq "$r pattern intact at exit" "$?" 0
done
hc_summary
