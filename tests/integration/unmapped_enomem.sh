#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ENOMEM for an unmapped range is not "no huge page" (defect: issue 11, 1).
# MADV_COLLAPSE answers ENOMEM for a range that was unmapped since the
# daemon last looked at it, too; only a move of /proc/vmstat
# thp_collapse_alloc_failed says the kernel had no huge page. The race (an
# allocator unmapping between the re-check right before a call and the call)
# is made to happen every time: the daemon runs with tests/unmap_shim.c
# preloaded, which has the victim workload unmap its buffer right before the
# daemon's first call on it. An idle workload sits beside it.
# Asserts, with the daemon confined to this test's cgroup:
#  - the victim's buffer was unmapped before the call, and the daemon
#    counted the outcome "unmapped" (not "enomem");
#  - no "backing off" line while thp_collapse_alloc_failed did not move
#    (when it did move, no more back-offs than its moves);
#  - the idle workload is >= 90% PMD-mapped within 20 s (a back-off of
#    alloc_backoff_ms = 60 s would hold it), and its data is intact.
# Needs root and cgroup v2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
HC_UNMAP_SHIM=${HC_UNMAP_SHIM:-$HC_BUILD/tests/libhc_unmap_shim.so}
require_exec "$HC_BIN" "$HC_WORKLOAD"
[[ -r $HC_UNMAP_SHIM ]] || {
	echo "FAIL: $HC_UNMAP_SHIM is missing (set HC_UNMAP_SHIM or HC_BUILD)"
	exit 1
}
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
printf '[daemon]\nscan_interval_ms = 50\nalloc_backoff_ms = 60000\nmetrics_file = %s\nmetrics_interval_s = 1\ncgroup_dir = %s\n[collapse]\nenable = no\n' \
	"$METRICS" "$CONF_DIR/cgroup.d" >"$CONF_DIR/hugecollapsed.conf"
printf '[cgroup]\npath = %s\nenable = yes\nbudget_mb_per_s = 1024\n' "${CG_PATH[unmap]}" \
	>"$CONF_DIR/cgroup.d/unmap.conf"
chmod 0644 "$CONF_DIR/hugecollapsed.conf" "$CONF_DIR/cgroup.d/unmap.conf"

# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
for w in victim idle; do
	if ! start_workload hot 16 "$w" --advise-huge; then
		hc_not_ok "start workload $w"
		hc_summary
		exit 1
	fi
	hc_cgroup_add unmap "${WL_PID[$w]}"
done

FAILED0=$(alloc_failed)
export LD_PRELOAD=$HC_UNMAP_SHIM HC_UNMAP_SHIM_PID=${WL_PID[victim]}
hc_daemon_start "$CONF_DIR/hugecollapsed.conf"
rc=$?
unset LD_PRELOAD HC_UNMAP_SHIM_PID
if ((rc)); then
	hc_not_ok "daemon starts"
	hc_summary
	exit 1
fi

t0=$SECONDS
while (($(wl_pmd_pct idle) < 90 && SECONDS - t0 < 20)); do
	sleep 0.2
done
assert_ge "idle workload PMD-mapped (percent) within 20 s" "$(wl_pmd_pct idle)" 90
hc_log "idle workload collapsed after $((SECONDS - t0)) s"
assert_cmd "the victim unmapped its buffer right before the daemon's call" \
	grep -qx unmapped "$HC_TMP/wl.victim.out"
assert_cmd "the shim ran in the daemon" grep -q "unmap_shim: pid ${WL_PID[victim]} unmapped" "$HC_DAEMON_LOG"
# The metrics file is written after the pass that made the call.
unmapped=0
for ((i = 0; i < $(hc_scaled 50) && unmapped < 1; i++)); do
	sleep 0.1
	unmapped=$(awk '/^hugecollapsed_collapse_ranges_total\{outcome="unmapped"\}/ {print $2}' "$METRICS" 2>/dev/null)
	unmapped=${unmapped:-0}
done
FAILED1=$(alloc_failed)
backoffs=$(grep -c 'backing off' "$HC_DAEMON_LOG")
enomem=$(awk '/^hugecollapsed_collapse_ranges_total\{outcome="enomem"\}/ {print $2}' "$METRICS")
hc_log "thp_collapse_alloc_failed $FAILED0 -> $FAILED1; back-offs $backoffs; outcomes unmapped $unmapped enomem ${enomem:-?}"
assert_ge "the unmapped block was told apart (outcome unmapped)" "$unmapped" 1
if ((FAILED1 == FAILED0)); then
	assert_eq "no back-off while thp_collapse_alloc_failed did not move" "$backoffs" 0
	assert_eq "no enomem outcome while thp_collapse_alloc_failed did not move" "${enomem:-x}" 0
else
	assert_le "back-offs, at most the allocation failures" "$backoffs" $((FAILED1 - FAILED0))
fi

hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
for w in victim idle; do
	stop_workload "$w"
	assert_eq "$w exits cleanly (idle: pattern intact)" "$?" 0
done
((HC_FAIL)) && sed 's/^/# daemon: /' "$HC_DAEMON_LOG" | grep -v 'pass [0-9]*: collapsed' | tail -20
hc_summary
