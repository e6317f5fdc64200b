#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A MADV_COLD range inside a mostly hot VMA (issue 16, defect 4). The
# workload fills 8 MiB as 4 KiB pages, gives its first 2 MiB block
# MADV_COLD, then MADV_HUGEPAGE: Referenced 6 of 8 MiB, so the per-VMA rule
# (min_referenced_pct 50) passes the whole VMA, yet khugepaged would refuse
# the cold block (no referenced PTE). The daemon, started first, observes
# the call (syscall tracepoints). Asserts:
#  - the daemon says it observes MADV_COLD/MADV_PAGEOUT ranges;
#  - the three hot blocks are collapsed and the cold one is not, for
#    several passes (the old code collapsed all four);
#  - the metrics count it as lack_referenced_page;
#  - after the workload reads the cold block again (no fault, no counter
#    moves) it is collapsed too, within the 5 s re-look;
#  - a --once --dry-run, which sees no advice given before it, says that
#    coldness is judged per VMA only;
#  - patterns intact, daemon exits 0.
# Needs root and cgroup v2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_cgroup2
require_exec "$HC_BIN" "$HC_WORKLOAD"
hc_daemon_prepare

MB=8
BLOCK=$((2 << 20))
hc_cgroup_create pc || exit 1
CONF=$HC_TMP/conf/hugecollapsed.conf
METRICS=$HC_TMP/metrics.prom
mkdir -p "$HC_TMP/conf/cgroup.d"
chmod 0755 "$HC_TMP/conf" "$HC_TMP/conf/cgroup.d"
printf '[daemon]\nscan_interval_ms = 500\nmetrics_file = %s\nmetrics_interval_s = 1\nstate_file = %s\ncgroup_dir = %s\n[collapse]\nenable = no\n' \
	"$METRICS" "$HC_TMP/conf/run/khugepaged.state" "$HC_TMP/conf/cgroup.d" >"$CONF"
chmod 0644 "$CONF"
hc_write_rule "$CONF" pc ""

# The workload opts in with MADV_HUGEPAGE: keep khugepaged out of it.
hc_khugepaged_quiet || exit 1
hc_daemon_start "$CONF" || {
	hc_not_ok "daemon starts"
	hc_summary
	exit 1
}
assert_cmd "daemon observes MADV_COLD/MADV_PAGEOUT ranges" \
	grep -q 'MADV_COLD/MADV_PAGEOUT ranges: observed by syscall tracepoints' "$HC_DAEMON_LOG"

# Started inside its cgroup: the daemon, already running, must find it
# under its rule at its first look, as it gives the advice during set-up.
printf '#!/bin/sh\necho $$ >"%s/cgroup.procs" && exec "%s" "$@"\n' "${CG_DIR[pc]}" "$HC_WORKLOAD" >"$HC_TMP/in_cgroup.sh"
chmod 0755 "$HC_TMP/in_cgroup.sh"
HC_WORKLOAD=$HC_TMP/in_cgroup.sh start_workload partcold "$MB" pc || exit 1
assert_eq "workload in its cgroup" "$(awk -F: '$1 == 0 {print $3}' "/proc/${WL_PID[pc]}/cgroup")" "${CG_PATH[pc]}"
hc_log "Referenced $(wl_field pc Referenced) kB of Rss $(wl_field pc Rss) kB"

# The hot blocks are collapsed...
for ((i = 0; i < $(hc_scaled 20) * 10; i++)); do
	(($(wl_pmd_bytes pc) >= 3 * BLOCK)) && break
	sleep 0.1
done
assert_ge "hot blocks collapsed (bytes)" "$(wl_pmd_bytes pc)" $((3 * BLOCK))
# ... and the cold one stays 4 KiB, pass after pass.
hc_wait_passes 6 20 || hc_not_ok "6 more passes"
assert_eq "cold block not collapsed (PMD-mapped bytes)" "$(wl_pmd_bytes pc)" $((3 * BLOCK))
# The metrics file follows within metrics_interval_s (1 s), not within a
# number of passes: news passes (others' faults) may run ten a second.
lack_metric()
{
	awk '$1 == "hugecollapsed_scan_ranges_total{result=\"lack_referenced_page\"}" {v = $2} END {print v + 0}' "$METRICS"
}
lack_counted() { (($(lack_metric) >= 1)); }
hc_wait_until 5 lack_counted
assert_ge "metrics: lack_referenced_page" "$(lack_metric)" 1

# A dry run of its own sees no advice given before it: it says so.
"$HC_BIN" --once --dry-run --pid "${WL_PID[pc]}" >"$HC_TMP/dry.txt" 2>"$HC_TMP/dry.err"
assert_cmd "dry run says coldness is per VMA only" grep -q '^coldness: per VMA only' "$HC_TMP/dry.txt"

# Read again: referenced, so collapsed at the next look (COLD_RECHECK_S 5 s).
kill -s RTMIN+4 "${WL_PID[pc]}"
for ((i = 0; i < 50; i++)); do
	grep -qx rewarmed "${WL_OUT[pc]}" && break
	sleep 0.1
done
assert_cmd "workload read the cold block again" grep -qx rewarmed "${WL_OUT[pc]}"
for ((i = 0; i < $(hc_scaled 20) * 10; i++)); do
	(($(wl_pmd_bytes pc) >= 4 * BLOCK)) && break
	sleep 0.1
done
assert_eq "read again: collapsed too (PMD-mapped bytes)" "$(wl_pmd_bytes pc)" $((4 * BLOCK))

hc_daemon_stop
assert_eq "daemon exits 0 on SIGTERM" "$?" 0
stop_workload pc
assert_eq "pattern intact at exit" "$?" 0
hc_summary
