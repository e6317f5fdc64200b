#!/bin/bash
# An unprivileged process cannot make one scan last: a 64 TiB MAP_NORESERVE
# MADV_HUGEPAGE reservation with two blocks filled (the first with 64 pages
# MADV_FREEd, the other 100 GiB further) costs well under a second of scan
# per `--once --dry-run` pass on both page-table readers (issue 16, defect
# 1: 31-37 s with PAGEMAP_SCAN, 36.7-60.9 s on the read path). With
# PAGEMAP_SCAN both blocks are found in the one pass; the read path
# (--pagemap-read) stops at its bound of 64 GiB per process and
# pass and finds the first block (the far one waits for later passes: the
# unit test test_range_scan resumes there). Needs root and jq; exits 77
# otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_root
require_cmd jq
require_exec "$HC_BIN" "$HC_WORKLOAD"

CONF=$HC_TMP/hugecollapsed.conf
cat >"$CONF" <<'EOF'
[collapse]
scope = madvise
EOF
chmod 0644 "$CONF"

hc_khugepaged_quiet || exit 1
if ! start_workload reserve $((64 << 20)); then
	hc_not_ok "start workload reserve"
	hc_summary
	exit 1
fi
PID=${WL_PID[reserve]}
FAR=$(awk '/^far / {print $2}' "${WL_OUT[reserve]}")
assert_eq "the far block's address is known" "${FAR:+yes}" yes

for mode in 0 1; do
	name=$([[ $mode == 0 ]] && echo ioctl || echo pread)
	start=$(date +%s.%N)
	read_path=()
	if [[ $mode == 1 ]]; then read_path=(--pagemap-read); fi
	timeout 300 "$HC_BIN" --config "$CONF" --once --dry-run --json -v --pid "$PID" "${read_path[@]}" \
		>"$HC_TMP/$name.json" 2>"$HC_TMP/$name.err"
	assert_eq "$name: hugecollapsed exits 0" "$?" 0
	wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
	scan=$(jq '.scan_seconds' "$HC_TMP/$name.json")
	hc_log "$name: scan ${scan} s, wall ${wall} s, results $(jq -c '.results' "$HC_TMP/$name.json")"
	assert_eq "$name: the scan took under a second" "$(awk -v s="$scan" 'BEGIN { print (s != "" && s + 0 < 1.0) ? 1 : 0 }')" 1
	assert_eq "$name: the freed block was found (page_lazyfree)" \
		"$(jq '.results.page_lazyfree // 0' "$HC_TMP/$name.json")" 1
done
far_found=$(jq --arg a "$FAR" '[.processes[]?.candidates[]?.addr | select(. == $a)] | length' "$HC_TMP/ioctl.json")
assert_eq "ioctl: the far block is a candidate in the first pass" "$far_found" 1
assert_eq "pread: the far block waits for a later pass" "$(jq '.results.candidate // 0' "$HC_TMP/pread.json")" 0

stop_workload reserve
hc_summary
