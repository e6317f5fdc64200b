#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# News runs a pass at once (issue 19): with a timer of 60 s, a process that
# fills 64 MiB and then opts in with MADV_HUGEPAGE (hc_workload's hot role)
# is collapsed long before the first tick: the fault doorbell's poll (a
# process with NEWS_FAULT_SAMPLES records) and the MADV_COLD observer's (a
# MADV_HUGEPAGE call) wake the daemon for a pass (news_gate.h).
# Asserts, with the daemon confined to this test's cgroup:
#  - the workload is >= 90% PMD-mapped within 20 s, and intact;
#  - every pass so far was a news pass (hugecollapsed_news_passes_total
#    equals hugecollapsed_passes_total: the timer has not fired);
#  - news passes are bounded: in 5 s at most 5 / NEWS_GAP_S + 1 of them,
#    whatever else on the machine faults meanwhile;
#  - a new process that fills 64 MiB without a fault (--populate:
#    MADV_POPULATE_WRITE) and then opts in is >= 90% PMD-mapped within
#    20 s: its MADV_HUGEPAGE call's pass reads it first;
#  - a process that clears prctl(PR_SET_THP_DISABLE) after the daemon read
#    it (matrix role, --prctl completely, then SIGRTMIN+2) is news too: its
#    MADV_HUGEPAGE VMA, 4 KiB until then, is >= 90% PMD-mapped within 20 s,
#    though no counter of it moves, the timer is 60 s and full_rescan_s 300.
# Needs root and cgroup v2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_cgroup2
require_no_other_daemon

metric()
{
	awk -v m="$1" '$1 == m {print $2}' "$METRICS" 2>/dev/null
}

passes_above() # N: more than N passes in the metrics file
{
	(($(metric hugecollapsed_passes_total) > $1))
}

hc_cgroup_create news || {
	hc_not_ok "create a cgroup"
	hc_summary
	exit 1
}
CONF_DIR=$HC_TMP/conf
mkdir -p "$CONF_DIR/cgroup.d"
chmod 0755 "$CONF_DIR" "$CONF_DIR/cgroup.d"
METRICS=$HC_TMP/metrics.prom
printf '[daemon]\nscan_interval_ms = 60000\nmetrics_file = %s\nmetrics_interval_s = 1\ncgroup_dir = %s\n[collapse]\nenable = no\n' \
	"$METRICS" "$CONF_DIR/cgroup.d" >"$CONF_DIR/hugecollapsed.conf"
printf '[cgroup]\npath = %s\nenable = yes\n' "${CG_PATH[news]}" >"$CONF_DIR/cgroup.d/news.conf"
chmod 0644 "$CONF_DIR/hugecollapsed.conf" "$CONF_DIR/cgroup.d/news.conf"

# The workload opts in with MADV_HUGEPAGE: keep khugepaged from collapsing it.
hc_khugepaged_quiet || exit 1
if ! hc_daemon_start "$CONF_DIR/hugecollapsed.conf"; then
	hc_not_ok "daemon starts"
	hc_summary
	exit 1
fi
# The workload is born in the cgroup (this shell moves there and back), so
# that its first faults are judged under the policy.
hc_cgroup_add news "$BASHPID" || {
	hc_not_ok "move the test into its cgroup"
	hc_summary
	exit 1
}
started=1
start_workload hot 64 hot --advise-huge || started=0
echo "$BASHPID" >"$HC_CG_ROOT/cgroup.procs"
if ((!started)); then
	hc_not_ok "start the workload"
	hc_summary
	exit 1
fi
t0=$SECONDS
while (($(wl_pmd_pct hot) < 90 && SECONDS - t0 < 20)); do
	sleep 0.1
done
assert_ge "workload PMD-mapped (percent) within 20 s, with a 60 s timer" "$(wl_pmd_pct hot)" 90
hc_log "workload collapsed after $((SECONDS - t0)) s"
# The metrics file follows each pass within metrics_interval_s.
sleep 1.5
passes=$(metric hugecollapsed_passes_total)
news=$(metric hugecollapsed_news_passes_total)
hc_log "passes ${passes:-?}, news passes ${news:-?}"
assert_ge "news passes" "${news:-0}" 1
assert_eq "every pass so far was a news pass (the timer has not fired)" "${news:-x}" "${passes:-y}"
# The workload touches its pages without faulting now; what else runs here
# may fault (a build): news passes stay within the gate.
sleep 5
more=$(($(metric hugecollapsed_news_passes_total) - news))
hc_log "news passes in the next 5 s: $more"
assert_le "news passes in 5 s, at most one per NEWS_GAP_S (0.1 s)" "$more" 51

# Memory filled without a fault (MADV_POPULATE_WRITE, as MAP_POPULATE or
# mlock() fill it), then the opt-in: no doorbell record names the new
# process, only its MADV_HUGEPAGE (and prctl) calls do. The pass they start
# must read the newcomer first; it used to scan nothing (the PID was not in
# the table yet), and the process waited for the timer.
hc_cgroup_add news "$BASHPID" || hc_not_ok "move the test into its cgroup"
started=1
start_workload hot 64 pop --advise-huge --populate || started=0
echo "$BASHPID" >"$HC_CG_ROOT/cgroup.procs"
((started)) || hc_not_ok "start the populating workload"
t0=$SECONDS
while (($(wl_pmd_pct pop) < 90 && SECONDS - t0 < 20)); do
	sleep 0.1
done
assert_ge "populated without faults, then MADV_HUGEPAGE: PMD-mapped (percent) within 20 s, with a 60 s timer" \
	"$(wl_pmd_pct pop)" 90
hc_log "populated workload collapsed after $((SECONDS - t0)) s"

# A prctl clear changes no counter: only the observer's record says so.
hc_cgroup_add news "$BASHPID" || hc_not_ok "move the test into its cgroup"
passes=$(metric hugecollapsed_passes_total)
started=1
start_workload matrix 8 clears --prctl completely || started=0
echo "$BASHPID" >"$HC_CG_ROOT/cgroup.procs"
((started)) || hc_not_ok "start the prctl workload"
# Its faults are news: a pass reads it while its prctl holds.
hc_wait_until 20 passes_above "${passes:-0}" || hc_not_ok "a pass after the prctl workload started"
sleep 1
assert_eq "prctl completely: its MADV_HUGEPAGE VMA stays 4 KiB" "$(wl_vma_pct clears anon-hg)" 0
kill -s RTMIN+2 "${WL_PID[clears]}"
hc_wait_until 10 grep -q 'prctl cleared' "${WL_OUT[clears]}" || hc_not_ok "the workload cleared its prctl"
t0=$SECONDS
while (($(wl_vma_pct clears anon-hg) < 90 && SECONDS - t0 < 20)); do
	sleep 0.1
done
assert_ge "after prctl(PR_SET_THP_DISABLE, 0): MADV_HUGEPAGE VMA PMD-mapped (percent) within 20 s" \
	"$(wl_vma_pct clears anon-hg)" 90
hc_log "collapsed $((SECONDS - t0)) s after the clear"

hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
stop_workload hot
assert_eq "workload exits cleanly (pattern intact)" "$?" 0
stop_workload clears
assert_eq "prctl workload exits cleanly (pattern intact)" "$?" 0
stop_workload pop
assert_eq "populated workload exits cleanly (pattern intact)" "$?" 0
hc_summary
