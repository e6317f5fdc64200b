#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Lazy-free blocks of every kind in one VMA (hc_workload --role lazymix, one
# 8 MiB MADV_HUGEPAGE VMA): block 0 clean lazy-free, block 1 written again
# after MADV_FREE, block 2 never freed, block 3 freed and three quarters
# written again. kpageflags reads blocks 0, 1 and 3 alike.
#  - --dry-run may not probe: only block 2 is a candidate, nothing changes;
#  - a real pass (no swap here) probes with MADV_PAGEOUT and collapses
#    blocks 1, 2 and 3, not block 0, and the written data stays intact;
#  - the workload then reads block 0's discarded pages back. Where a read
#    fault maps the shared zero page, that block holds nothing (none and
#    zero-page entries) and is no candidate; where it maps real pages
#    (kernels booted with pvm_no_zero_page=1, this one), they are 512
#    exclusive pages the process holds like any other, and the block is a
#    candidate again, as khugepaged would count it. The test reads block
#    0's pagemap entries to know which, and asserts the daemon's answer.
# khugepaged is kept asleep meanwhile (scan_sleep_millisecs, restored on
# exit), or it would collapse all four blocks itself. Needs root and no swap;
# exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_root
require_cmd jq
require_exec "$HC_BIN" "$HC_WORKLOAD"
if [[ $(awk '/^SwapTotal:/ {print $2}' /proc/meminfo) != 0 ]]; then
	hc_skip "swap is configured; the probe is never used then"
fi

SLEEP_KNOB=/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs
SLEEP_SAVED=$(cat "$SLEEP_KNOB")
restore_and_cleanup()
{
	hc_cleanup
	[[ $(cat "$SLEEP_KNOB") == "$SLEEP_SAVED" ]] || echo "$SLEEP_SAVED" >"$SLEEP_KNOB"
}
trap restore_and_cleanup EXIT
hc_thp_madvise || exit 1
# khugepaged scans a new MADV_HUGEPAGE process at once when it has no other
# (it waits for one), and on 6.18 it collapses all four blocks, the clean
# lazy-free one too. So: give it another process first (an anchor, already
# huge), then set a long sleep, whose write wakes it for one scan now; after
# that scan our workload is not looked at before this test ends.
if ! start_workload huge 2 anchor; then
	hc_not_ok "start the khugepaged anchor"
	hc_summary
	exit 1
fi
echo 600000 >"$SLEEP_KNOB"
sleep 1

CONF=$HC_TMP/hugecollapsed.conf
cat >"$CONF" <<'EOF2'
[collapse]
max_ptes_none = 255
min_referenced_pct = 50
EOF2
chmod 0644 "$CONF"

if ! start_workload lazymix 8; then
	hc_not_ok "start workload lazymix"
	hc_summary
	exit 1
fi
ADDR=${WL_ADDR[lazymix]}
ADDR=$((ADDR))
assert_eq "before: no PMD-mapped bytes" "$(wl_pmd_bytes lazymix)" 0
# Block 0 and a quarter of block 3: 2560 kB, a few pages less while the
# kernel's per-CPU lazy-free batch has not been drained yet.
LAZY0=$(wl_field lazymix LazyFree)
assert_ge "before: LazyFree (kB)" "$LAZY0" 2048
assert_le "before: LazyFree (kB)" "$LAZY0" 2560

# run NAME ARGS…: one pass, JSON to $HC_TMP/NAME.json.
run()
{
	local name=$1
	shift
	hc_log "$HC_BIN $*"
	timeout 300 "$HC_BIN" --config "$CONF" "$@" --pid "${WL_PID[lazymix]}" >"$HC_TMP/$name.json" \
		2>"$HC_TMP/$name.err"
	assert_eq "$name: hugecollapsed exits 0" "$?" 0
	hc_log "$name: results $(jq -c '.results' "$HC_TMP/$name.json") outcomes $(jq -c '.outcomes' "$HC_TMP/$name.json")"
}

# candidate_blocks FILE: the buffer's candidate block numbers, sorted (the
# process may have candidates elsewhere, e.g. an ASan build's own memory).
candidate_blocks()
{
	jq -r --argjson pid "${WL_PID[lazymix]}" '.processes[]? | select(.pid == $pid) | .candidates[]?.addr' "$1" |
		while read -r a; do
			((a >= ADDR && a < ADDR + (4 << 21))) && echo $(((a - ADDR) >> 21))
		done | sort -n | tr '\n' ' '
}

# thp_blocks: the buffer's blocks whose first page is part of a THP
# (pagemap gives the PFN, kpageflags bit 22 says THP).
thp_blocks()
{
	local b e pfn f
	for b in 0 1 2 3; do
		e=$(dd if="/proc/${WL_PID[lazymix]}/pagemap" bs=8 skip=$(((ADDR >> 12) + b * 512)) count=1 2>/dev/null |
			od -An -tx8 | tr -d ' ')
		[[ -n $e ]] || continue
		(((0x$e >> 63) & 1)) || continue
		pfn=$((0x$e & ((1 << 55) - 1)))
		f=$(dd if=/proc/kpageflags bs=8 skip="$pfn" count=1 2>/dev/null | od -An -tx8 | tr -d ' ')
		[[ -n $f ]] && (((0x$f >> 22) & 1)) && printf '%s ' "$b"
	done
}

### Dry run: the VMA is mixed and no probe may run, so only block 2.
run dry --once --dry-run --json
assert_eq "dry: only block 2 is a candidate" "$(candidate_blocks "$HC_TMP/dry.json")" "2 "
assert_ge "dry: blocks 0, 1, 3 counted page_lazyfree" \
	"$(json_proc_result "$HC_TMP/dry.json" lazymix page_lazyfree)" 3
assert_ge "dry: no lazy-free page discarded (LazyFree kB)" "$(wl_field lazymix LazyFree)" "$LAZY0"
assert_eq "dry: Rss unchanged (kB)" "$(wl_field lazymix Rss)" 8192

### Real pass: probe, then collapse the written blocks.
run real --once --json
assert_ge "real: at least three blocks collapsed" "$(jq '.outcomes.collapsed // 0' "$HC_TMP/real.json")" 3
assert_eq "real: 6 MiB PMD-mapped" "$(wl_pmd_bytes lazymix)" $((6 << 20))
assert_eq "real: blocks 1, 2, 3 are THPs, block 0 is not" "$(thp_blocks)" "1 2 3 "
assert_eq "real: no clean lazy-free page left (kB)" "$(wl_field lazymix LazyFree)" 0

# block_map B: "PRESENT EXCLUSIVE", the counts of the buffer's block B's 512
# pagemap entries (bit 63 present, bit 56 exclusively mapped; the workload
# never forks, so a present page that is not exclusive is the zero page).
block_map()
{
	local e present=0 excl=0
	for e in $(dd if="/proc/${WL_PID[lazymix]}/pagemap" bs=4096 skip=$(((ADDR >> 21) + $1)) count=1 \
		2>/dev/null | od -An -v -tx8); do
		((0x${e:0:1} & 8)) || continue
		present=$((present + 1))
		excl=$((excl + (0x${e:1:1} & 1)))
	done
	echo "$present $excl"
}
block0_read_back()
{
	[[ $(block_map 0) == 512\ * ]]
}

### Which ones: a dry run after it, once the workload has read block 0 back.
hc_wait_until 10 block0_read_back
read -r present0 excl0 <<<"$(block_map 0)"
hc_log "block 0 read back: $present0 present, $excl0 exclusive"
assert_eq "after: the workload read block 0 back (present pages)" "$present0" 512
run after --once --dry-run --json
assert_ge "after: blocks 1, 2, 3 counted pmd_mapped" "$(json_proc_result "$HC_TMP/after.json" lazymix pmd_mapped)" 3
if ((excl0 == 0)); then
	assert_eq "after: block 0 (zero-page entries) is not a candidate" "$(candidate_blocks "$HC_TMP/after.json")" ""
else
	assert_eq "after: block 0 read back as real pages (no zero page here): all exclusive" "$excl0" 512
	assert_eq "after: block 0 (512 real pages) is a candidate again" "$(candidate_blocks "$HC_TMP/after.json")" "0 "
	assert_eq "after: block 0's candidate has 512 present pages" "$(jq -r --argjson pid "${WL_PID[lazymix]}" \
		--arg a "$(printf '0x%x' "$ADDR")" '.processes[] | select(.pid == $pid) | .candidates[] |
		select(.addr == $a) | .present' "$HC_TMP/after.json")" 512
fi
assert_eq "after: pattern intact while running" "$(workload_verify lazymix)" "pattern ok"

stop_workload lazymix
assert_eq "pattern intact at exit" "$?" 0
hc_summary
