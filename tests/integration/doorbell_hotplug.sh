#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The page-fault doorbell and the MADV_COLD/MADV_HUGEPAGE/prctl observer
# watch CPUs that come online after the daemon started (issue 11, defect 8).
# On 6.18 an event cannot be opened on an offline CPU (ENODEV), and one
# opened before its CPU went offline stays silent after it comes back, so
# the daemon must open events again.
# With cpu1 offline (put back online by the EXIT trap, even on failure), the
# daemon starts with both on one CPU; cpu1 comes online; a workload pinned
# to cpu1 starts. Asserts the daemon logs a doorbell and an observer on both
# CPUs within 20 s, and that the workload is collapsed: its opt-in (prctl
# cleared, MADV_HUGEPAGE) ran on either CPU, before or after the observer
# was there, and no counter shows it. Needs root, a cpu1 that can go
# offline, cgroup v2, tracefs syscall events and taskset; exits 77 on a
# single-CPU machine.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

CPU1=/sys/devices/system/cpu/cpu1/online
require_root
require_cmd taskset
require_exec "$HC_BIN" "$HC_WORKLOAD"
if [[ ! -w $CPU1 ]]; then
	hc_skip "no cpu1 that can go offline"
fi
require_cgroup2
require_no_other_daemon

cpu1_online()
{
	[[ $(cat "$CPU1") == 1 ]] || echo 1 >"$CPU1"
}
trap 'cpu1_online; hc_policy_cleanup' EXIT

hc_cgroup_create hotplug || exit 1
CONF=$HC_TMP/conf/hugecollapsed.conf
hc_write_config "$CONF" "scan_interval_ms = 200" ""
hc_write_rule "$CONF" hotplug ""

echo 0 >"$CPU1" || exit 1
assert_eq "cpu1 is offline" "$(cat "$CPU1")" 0
hc_daemon_start "$CONF" || exit 1
assert_cmd "the daemon starts with a doorbell on one CPU" grep -q 'page-fault doorbell on 1 CPUs' "$HC_DAEMON_LOG"
assert_cmd "the daemon starts with an observer on one CPU" grep -q 'ranges: observed by syscall tracepoints on 1 CPUs' "$HC_DAEMON_LOG"

echo 1 >"$CPU1"
assert_eq "cpu1 is online again" "$(cat "$CPU1")" 1
MY_CG=$(sed -n 's/^0:://p' /proc/$$/cgroup)
hc_cgroup_add hotplug $$
# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
start_workload hot 16 pinned
rc=$?
echo $$ >"$HC_CG_ROOT$MY_CG/cgroup.procs"
((rc == 0)) || exit 1
taskset -pc 1 "${WL_PID[pinned]}" >/dev/null
assert_eq "the workload runs on cpu1 only" "$(taskset -pc "${WL_PID[pinned]}" | awk '{print $NF}')" 1

t0=$SECONDS
until grep -q 'page-fault doorbell on 2 CPUs' "$HC_DAEMON_LOG" && grep -q 'ranges: observed on 2 CPUs' "$HC_DAEMON_LOG" ||
	((SECONDS - t0 >= 20)); do
	sleep 0.2
done
assert_cmd "the daemon opened a doorbell on both CPUs" grep -q 'page-fault doorbell on 2 CPUs' "$HC_DAEMON_LOG"
assert_cmd "the daemon opened the observer on both CPUs" grep -q 'ranges: observed on 2 CPUs' "$HC_DAEMON_LOG"
hc_log "noticed after $((SECONDS - t0)) s"
t0=$SECONDS
while (($(wl_pmd_pct pinned) < 90 && SECONDS - t0 < 20)); do
	sleep 0.2
done
assert_ge "the workload on cpu1 is PMD-mapped (percent)" "$(wl_pmd_pct pinned)" 90
hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
stop_workload pinned
assert_eq "pinned pattern intact" "$?" 0
hc_summary
