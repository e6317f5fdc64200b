#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Aging bounds starvation: a candidate that has waited max_wait_s goes to the
# front, however low its score.
#
# A "churn" workload in a weight-10000 cgroup maps a fresh 32 MiB buffer of
# 4 KiB pages every second and unmaps the old one: it is always active and
# always has 16 new candidates, none older than about a second. An idle
# 4 MiB workload sits in a weight-1 cgroup (idle tier, lowest score). The
# budget is 5 MB/s with a pass every 500 ms: one 2 MiB block per pass, so
# by score alone the low one would never get a block. With max_wait_s = 3:
#  - the low workload gets nothing for the first ~3 s, while hot blocks are
#    being collapsed (so the budget really was contended);
#  - then it is collapsed completely within max_wait_s + 3 s of the first
#    pass (its two blocks age together and take one pass each).
# If aging were broken it would never be collapsed while the churn runs.
# Needs root and cgroup v2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_cgroup2
require_exec "$HC_BIN" "$HC_WORKLOAD"
hc_daemon_prepare

MAX_WAIT=3
hc_cgroup_create hot || exit 1
hc_cgroup_create low || exit 1
CONF=$HC_TMP/conf/hugecollapsed.conf
hc_write_config "$CONF" "scan_interval_ms = 500" "budget_mb_per_s = 5
max_wait_s = $MAX_WAIT
max_ptes_none = 255"
hc_write_rule "$CONF" hot "weight = 10000"
hc_write_rule "$CONF" low "weight = 1"

# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
start_workload idle 4 low || exit 1
start_workload churn 32 churn --hot-interval-ms 1000 || exit 1
hc_cgroup_add low "${WL_PID[low]}" || exit 1
hc_cgroup_add hot "${WL_PID[churn]}" || exit 1

# Sum of "collapsed X MiB" over the passes logged so far.
collapsed_mib()
{
	sed -n 's/.*pass [0-9]*: collapsed \([0-9.]*\) MiB.*/\1/p' "$HC_DAEMON_LOG" | awk '{s += $1} END {printf "%d\n", s}'
}

hc_daemon_start "$CONF" || {
	hc_not_ok "daemon starts"
	hc_summary
	exit 1
}
# Time from the first pass, which is when the low blocks are first seen.
hc_wait_passes 1 5
t0=$(date +%s%N)
first_ms=-1 done_ms=-1 hot_mib_before=-1
while :; do
	now_ms=$((($(date +%s%N) - t0) / 1000000))
	pct=$(wl_pmd_pct low)
	if ((first_ms < 0 && pct > 0)); then
		first_ms=$now_ms
		hot_mib_before=$(collapsed_mib)
	fi
	if ((pct >= 100)); then
		done_ms=$now_ms
		break
	fi
	# Stop looking well after the bound asserted below (a wait, scaled).
	((now_ms > (MAX_WAIT + $(hc_scaled 8)) * 1000)) && break
	sleep 0.1
done
hc_daemon_stop
assert_eq "daemon exits 0 on SIGTERM" "$?" 0
hc_log "low workload: first PMD byte after ${first_ms} ms, complete after ${done_ms} ms;" \
	"$hot_mib_before MiB collapsed before it, $(collapsed_mib) MiB in all"
grep 'pass [0-9]*: collapsed' "$HC_DAEMON_LOG" | sed -n '1,16s/^/#   /p'

assert_ge "low workload starved at first: nothing before max_wait_s - 0.5 s (ms)" "$first_ms" $((MAX_WAIT * 1000 - 500))
assert_ge "hot blocks were collapsed meanwhile (MiB)" "$hot_mib_before" 4
assert_ge "low workload completely collapsed (ms, -1 = never)" "$done_ms" 0
((done_ms < 0)) && done_ms=999999 # never
assert_le "... within max_wait_s + 3 s of the first pass (ms)" "$done_ms" $(((MAX_WAIT + 3) * 1000))
for w in low churn; do
	stop_workload "$w"
	assert_eq "$w pattern intact at exit" "$?" 0
done
hc_summary
