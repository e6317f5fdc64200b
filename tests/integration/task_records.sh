#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Process births and exits come from perf task records (issue 19): the
# fault doorbell's dummy event per CPU writes every fork and exit to a ring
# the sampler drains, so /proc is no longer listed every 5 s
# (LISTING_PERIOD_S) but once per full_rescan_s and after lost records.
# Asserts, with the daemon confined to this test's cgroup:
#  - the start line says births and exits come from perf task records;
#  - a process started after the daemon that faults too little for the
#    doorbell (sleep) is learned from its fork record within 15 s
#    (hugecollapsed_task_births_total moves);
#  - over 12 s /proc is listed at most once (the 5 s period would list it
#    twice or more);
#  - a workload started meanwhile is still collapsed (>= 90% in 20 s).
# Needs root, perf events and cgroup v2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_cgroup2
require_no_other_daemon

METRICS=$HC_TMP/metrics.prom
metric()
{
	awk -v m="$1" '$1 == m {print $2}' "$METRICS" 2>/dev/null
}
metric_above() # NAME N
{
	(($(metric "$1") > $2))
}

hc_cgroup_create tasks || exit 1
CONF=$HC_TMP/conf/hugecollapsed.conf
hc_write_config "$CONF" "scan_interval_ms = 200
metrics_interval_s = 1" ""
sed -i "s|^metrics_file =\$|metrics_file = $METRICS|" "$CONF"
hc_write_rule "$CONF" tasks ""
hc_khugepaged_quiet || exit 1
hc_daemon_start "$CONF" || exit 1
assert_cmd "births and exits come from perf task records" \
	grep -q 'process births and exits from perf task records' "$HC_DAEMON_LOG"
hc_wait_until 20 metric_above hugecollapsed_passes_total 2 || hc_not_ok "two passes"
sleep 1.5 # the metrics file follows within metrics_interval_s
listings=$(metric hugecollapsed_proc_listings_total)
births=$(metric hugecollapsed_task_births_total)
t_listed=$SECONDS
hc_log "at start: ${listings:-?} listings, ${births:-?} births from task records"

sleep 30 &
SLEEPER=$!
HC_EXTRA_PIDS+=("$SLEEPER")
hc_wait_until 15 metric_above hugecollapsed_task_births_total "${births:-0}" ||
	hc_not_ok "a new process is learned from its fork record within 15 s"
assert_ge "task births" "$(metric hugecollapsed_task_births_total)" $((${births:-0} + 1))

MY_CG=$(sed -n 's/^0:://p' /proc/$$/cgroup)
hc_cgroup_add tasks $$
start_workload hot 16 hot
rc=$?
echo $$ >"$HC_CG_ROOT$MY_CG/cgroup.procs"
((rc == 0)) || exit 1
t0=$SECONDS
while (($(wl_pmd_pct hot) < 90 && SECONDS - t0 < 20)); do
	sleep 0.2
done
assert_ge "the workload is PMD-mapped (percent)" "$(wl_pmd_pct hot)" 90
# 12 s after the first figures, at least.
while ((SECONDS - t_listed < 12)); do
	sleep 0.5
done
sleep 1.5 # the metrics file follows within metrics_interval_s
more=$(($(metric hugecollapsed_proc_listings_total) - ${listings:-0}))
hc_log "listings of /proc in $((SECONDS - t_listed)) s: $more"
assert_le "listings of /proc in 12 s or more (every 5 s without task records)" "$more" 1

hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
kill "$SLEEPER" 2>/dev/null
wait "$SLEEPER" 2>/dev/null
stop_workload hot
assert_eq "workload exits cleanly (pattern intact)" "$?" 0
hc_summary
