#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A process's cgroup decides its policy; when the daemon cannot know the
# cgroup, or the process moved since its scan, the policy must not be a
# guess (issue 11, defect 4).
#  (a) A workload in a cgroup v2 path longer than the kernel prints whole
#      (21 levels of 200-byte names under a test cgroup: 4236 bytes; 6.18
#      prints the first 4095 and the read succeeds). The config's "/" policy
#      says enable = yes. --dry-run must list it as cgroup_unknown, disabled,
#      with no candidates; a real --once must leave it without huge pages.
#  (b) The daemon runs with a budget of 4 MiB/s (two blocks a second) over a
#      64 MiB hot workload born in a cgroup whose policy enables collapsing.
#      Once some of it is huge, it moves to a cgroup whose policy says
#      enable = no; it is not rescanned (nothing in it changes), yet from
#      then on at most one more block (a pass under way) may collapse, and
#      the daemon says it skipped it.
# Every cgroup is made under the cgroup v2 mount and removed by the EXIT
# trap, workloads moved out first. Needs root, cgroup v2 and jq.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_cmd jq
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_cgroup2
require_no_other_daemon

BLOCK=$((2 << 20))
LONG=$(printf 'd%.0s' {1..200})
DEPTH=21
DEEP_BASE=
# The chain is longer than PATH_MAX: walk it with relative names only.
deep_remove()
{
	[[ -n $DEEP_BASE && -d $DEEP_BASE ]] || return 0
	local i pid=${WL_PID[deep]:-}
	[[ -n $pid ]] && echo "$pid" >"$HC_CG_ROOT/cgroup.procs" 2>/dev/null
	(
		cd "$DEEP_BASE" || exit 1
		for ((i = 0; i < DEPTH; i++)); do
			cd "$LONG" 2>/dev/null || break
		done
		for (( ; i > 0; i--)); do
			cd .. && rmdir "$LONG"
		done
	)
	rmdir "$DEEP_BASE" || echo "# cleanup: cannot remove $DEEP_BASE"
}
trap 'deep_remove; hc_policy_cleanup' EXIT

### (a) a cgroup path the kernel cuts
DEEP_BASE=$HC_CG_ROOT/hc-test-$$-deep
mkdir "$DEEP_BASE" || exit 1
made=$(
	cd "$DEEP_BASE" || exit 1
	for ((i = 0; i < DEPTH; i++)); do
		if ! mkdir "$LONG" || ! cd "$LONG"; then break; fi
	done
	echo "$i"
)
assert_eq "made $DEPTH levels of 200-byte names" "$made" "$DEPTH"
# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
start_workload hot 16 deep || exit 1
(
	cd "$DEEP_BASE" || exit 1
	for ((i = 0; i < DEPTH; i++)); do cd "$LONG" || exit 1; done
	echo "${WL_PID[deep]}" >cgroup.procs
) 2>/dev/null
v2=$(sed -n 's/^0:://p' "/proc/${WL_PID[deep]}/cgroup")
assert_eq "the kernel prints the path cut at 4095 bytes" "${#v2}" 4095

CONF_A=$HC_TMP/a/hugecollapsed.conf
mkdir -p "$HC_TMP/a"
printf '[daemon]\nmetrics_file =\n[collapse]\nenable = yes\n' >"$CONF_A"
chmod 0644 "$CONF_A"
DRY=$HC_TMP/dry.json
timeout 120 "$HC_BIN" --once --dry-run --json --config "$CONF_A" --pid "${WL_PID[deep]}" >"$DRY" 2>"$HC_TMP/dry.err"
assert_eq "dry: exit status" "$?" 0
entry()
{
	jq -c --argjson pid "${WL_PID[deep]}" ".processes[]? | select(.pid == \$pid) | $1" "$DRY"
}
assert_eq "dry: the deep workload's cgroup is unknown" "$(entry .cgroup_unknown)" true
assert_eq "dry: and it is not enabled" "$(entry .enabled)" false
assert_eq "dry: no candidate in its buffer" "$(json_candidates_in "$DRY" deep)" 0
assert_eq "dry: counted as cgroup unknown" "$(jq .processes_cgroup_unknown "$DRY")" 1
assert_cmd "dry: the daemon says why" grep -q "cannot read its cgroup" "$HC_TMP/dry.err"
timeout 120 "$HC_BIN" --once --json --config "$CONF_A" --pid "${WL_PID[deep]}" >"$HC_TMP/real.json" 2>&1
assert_eq "real: exit status" "$?" 0
assert_eq "real: the deep workload has no PMD-mapped bytes" "$(wl_pmd_bytes deep)" 0
stop_workload deep
assert_eq "deep pattern intact" "$?" 0
deep_remove
DEEP_BASE=

### (b) moved to a cgroup whose policy disables collapsing
hc_cgroup_create on || exit 1
hc_cgroup_create off || exit 1
CONF=$HC_TMP/b/hugecollapsed.conf
hc_write_config "$CONF" "scan_interval_ms = 1000
full_rescan_s = 3600" ""
hc_write_rule "$CONF" on "budget_mb_per_s = 4
min_referenced_pct = 0"
printf '[cgroup]\npath = %s\nenable = no\n' "${CG_PATH[off]}" >"$(dirname "$CONF")/cgroup.d/off.conf"
chmod 0644 "$(dirname "$CONF")/cgroup.d/off.conf"

# Born in "on" (the shell moves itself there for the fork, then back).
MY_CG=$(sed -n 's/^0:://p' /proc/$$/cgroup)
hc_cgroup_add on $$
start_workload hot 64 hot
rc=$?
echo $$ >"$HC_CG_ROOT$MY_CG/cgroup.procs"
((rc == 0)) || exit 1
hc_daemon_start "$CONF" || exit 1
t0=$SECONDS
while (($(wl_pmd_bytes hot) == 0 && SECONDS - t0 < 30)); do
	sleep 0.1
done
assert_ge "some of the workload is huge before the move" "$(wl_pmd_bytes hot)" "$BLOCK"
hc_cgroup_add off "${WL_PID[hot]}"
before=$(wl_pmd_bytes hot)
hc_log "PMD-mapped at the move: $((before >> 20)) MiB of 64"
assert_lt "the budget left most of it for later" "$before" $((48 << 20))
hc_wait_passes 6 30
after=$(wl_pmd_bytes hot)
hc_log "PMD-mapped 6 passes later: $((after >> 20)) MiB"
assert_le "at most one more block after the move" "$after" $((before + BLOCK))
assert_cmd "the daemon says it skipped the moved process" grep -q "whose policy disables collapsing" "$HC_DAEMON_LOG"
hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
stop_workload hot
assert_eq "hot pattern intact" "$?" 0
hc_summary
