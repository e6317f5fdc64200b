#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ENOMEM for an unmapped range is not "no huge page" (defect: issue 11, 1).
# MADV_COLLAPSE answers ENOMEM for a range that was unmapped since the scan,
# too. Three churning workloads map 16 MiB, fill it as 4 KiB pages, give it
# MADV_HUGEPAGE and unmap it every ~30 ms (what allocators do), so the daemon
# often collapses a block that is gone. An idle workload sits beside them.
# Asserts, with the daemon confined to this test's cgroup:
#  - no "backing off" line while /proc/vmstat thp_collapse_alloc_failed did
#    not move (when it did move, no more back-offs than its moves);
#  - the idle workload, started after 15 s of churn, is >= 90% PMD-mapped
#    within 20 s (max_wait_s = 2 lifts it above the busy churners; a
#    back-off of alloc_backoff_ms = 60 s would hold it);
#  - the unmapped blocks were seen (the "unmapped" outcome in the metrics).
# Needs root and cgroup v2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_cgroup2
require_no_other_daemon

alloc_failed()
{
	awk '$1 == "thp_collapse_alloc_failed" {print $2}' /proc/vmstat
}

hc_cgroup_create unmap || {
	hc_not_ok "create a cgroup"
	hc_summary
	exit 1
}
CONF_DIR=$HC_TMP/conf
mkdir -p "$CONF_DIR/cgroup.d"
chmod 0755 "$CONF_DIR" "$CONF_DIR/cgroup.d"
METRICS=$HC_TMP/metrics.prom
printf '[daemon]\nscan_interval_ms = 50\nalloc_backoff_ms = 60000\nmetrics_file = %s\ncgroup_dir = %s\n[collapse]\nenable = no\n' \
	"$METRICS" "$CONF_DIR/cgroup.d" >"$CONF_DIR/hugecollapsed.conf"
printf '[cgroup]\npath = %s\nenable = yes\nbudget_mb_per_s = 1024\nmax_wait_s = 2\n' "${CG_PATH[unmap]}" \
	>"$CONF_DIR/cgroup.d/unmap.conf"
chmod 0644 "$CONF_DIR/hugecollapsed.conf" "$CONF_DIR/cgroup.d/unmap.conf"

for i in 1 2 3; do
	# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
	hc_khugepaged_quiet || exit 1
	if ! start_workload churn 16 "churn$i" --hot-interval-ms 30 --advise-huge; then
		hc_not_ok "start churn workload $i"
		hc_summary
		exit 1
	fi
	hc_cgroup_add unmap "${WL_PID[churn$i]}"
done

FAILED0=$(alloc_failed)
if ! hc_daemon_start "$CONF_DIR/hugecollapsed.conf"; then
	hc_not_ok "daemon starts"
	hc_summary
	exit 1
fi
sleep 15

# Born in the cgroup: a process the daemon first sees elsewhere (disabled)
# and that then sits idle is not looked at again until full_rescan_s.
MY_CG=$(sed -n 's/^0:://p' /proc/$$/cgroup)
hc_cgroup_add unmap $$
start_workload idle 16 idle
rc=$?
echo $$ >"$HC_CG_ROOT$MY_CG/cgroup.procs"
if ((rc)); then
	hc_not_ok "start the idle workload"
	hc_summary
	exit 1
fi
t0=$SECONDS
while (($(wl_pmd_pct idle) < 90 && SECONDS - t0 < 20)); do
	sleep 0.2
done
assert_ge "idle workload PMD-mapped (percent) within 20 s of churn" "$(wl_pmd_pct idle)" 90
hc_log "idle workload collapsed after $((SECONDS - t0)) s"
sleep 10 # more churn with the idle one done: only churners compete now

FAILED1=$(alloc_failed)
backoffs=$(grep -c 'backing off' "$HC_DAEMON_LOG")
unmapped=$(awk -F' ' '/^hugecollapsed_ranges_total\{result="unmapped"\}/ {print $2}' "$METRICS")
enomem=$(awk -F' ' '/^hugecollapsed_ranges_total\{result="enomem"\}/ {print $2}' "$METRICS")
hc_log "thp_collapse_alloc_failed $FAILED0 -> $FAILED1; back-offs $backoffs; outcomes unmapped ${unmapped:-?} enomem ${enomem:-?}"
if ((FAILED1 == FAILED0)); then
	assert_eq "no back-off while thp_collapse_alloc_failed did not move" "$backoffs" 0
	assert_eq "no enomem outcome while thp_collapse_alloc_failed did not move" "${enomem:-x}" 0
else
	assert_le "back-offs, at most the allocation failures" "$backoffs" $((FAILED1 - FAILED0))
fi
assert_ge "unmapped blocks were tried and told apart" "${unmapped:-0}" 1

hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
for w in churn1 churn2 churn3 idle; do
	stop_workload "$w"
	assert_eq "$w pattern intact at exit" "$?" 0
done
((HC_FAIL)) && sed 's/^/# daemon: /' "$HC_DAEMON_LOG" | grep -v 'pass [0-9]*: collapsed' | tail -20
hc_summary
