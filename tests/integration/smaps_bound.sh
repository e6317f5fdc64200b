#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's memory after one process with 64000 VMAs exits (issue 11,
# defect 8). Reading that process's smaps needs a buffer of ~50 MiB and a
# VMA list of ~5 MiB; they used to be kept for the daemon's lifetime. The
# daemon, confined to this test's cgroup, scans the workload (hc_workload's
# manyvmas role: 250 MiB filled, then every other page read-only), which
# then exits.
# Asserts that its VmHWM shows the large read happened (>= 40 MiB above the
# start) and that its VmRSS afterwards is within 16 MiB of the start.
# Needs root and cgroup v2.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_cgroup2
require_no_other_daemon

status_kb() # FIELD
{
	awk -v f="$1:" '$1 == f {print $2}' "/proc/$HC_DAEMON_PID/status"
}

hc_cgroup_create vmas || exit 1
CONF=$HC_TMP/conf/hugecollapsed.conf
# full_rescan_s: the workload faults while it fills, then makes its 64000
# VMAs with mprotect(), which moves neither faults, RSS nor vsize; a scan
# that met the loop halfway (seen: 38 of 40 MiB) is followed by one of the
# final layout only at the full rescan (300 s by default).
hc_write_config "$CONF" "scan_interval_ms = 200
full_rescan_s = 2" ""
hc_write_rule "$CONF" vmas ""
hc_daemon_start "$CONF" || exit 1
hc_wait_passes 3 20
RSS0=$(status_kb VmRSS)
hc_log "daemon VmRSS at rest: $RSS0 kB"

# Born in the cgroup, so that the daemon's first look at it is enabled.
MY_CG=$(sed -n 's/^0:://p' /proc/$$/cgroup)
hc_cgroup_add vmas $$
# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
start_workload manyvmas 250 many
rc=$?
echo $$ >"$HC_CG_ROOT$MY_CG/cgroup.procs"
((rc == 0)) || exit 1
nvma=$(wc -l <"/proc/${WL_PID[many]}/maps")
assert_ge "the workload has 64000 VMAs" "$nvma" 64000
# Let the daemon scan it: its VmHWM jumps while it reads that smaps.
t0=$SECONDS
while (($(status_kb VmHWM) - RSS0 < 40 * 1024 && SECONDS - t0 < 60)); do
	sleep 0.2
done
HWM=$(status_kb VmHWM)
hc_log "daemon VmHWM after scanning it: $HWM kB"
assert_ge "the daemon read the large smaps (VmHWM growth, kB)" $((HWM - RSS0)) $((40 * 1024))
hc_wait_passes 3 20
stop_workload many
assert_eq "manyvmas workload exits cleanly" "$?" 0
hc_wait_passes 3 20
RSS1=$(status_kb VmRSS)
hc_log "daemon VmRSS after the workload exited: $RSS1 kB"
assert_le "VmRSS back within 16 MiB of the start (kB)" "$RSS1" $((RSS0 + 16 * 1024))
if ((RSS1 > RSS0 + 16 * 1024)); then # where it is, for whoever reads the failure
	awk '/^[0-9a-f]+-/ {m = $1 " " $6} $1 == "Rss:" && $2 > 1024 {print "#   " $2 " kB in " m}' \
		"/proc/$HC_DAEMON_PID/smaps"
fi
hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
hc_summary
