#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Candidates that go stale while they wait for budget. The daemon finds the
# blocks of two hot workloads, but a budget of one 2 MiB block per 0.5 s
# pass per workload lets it collapse only a few at a time. Then one workload
# gives its buffer MADV_COLD and the other MADV_FREE (and keeps reading it):
# neither faults nor changes RSS or the maps, so only the rescan before
# collapse can tell the daemon. Asserts:
#  - both were partly collapsed first (their other blocks really waited);
#  - over the next 10 passes, at most one more block each (a collapse may be
#    in flight when the advice lands); without the rescan it would be ~10;
#  - the metrics count the dropped candidates (stale_candidates_total);
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

MB=32
BLOCK=$((2 << 20))
hc_cgroup_create cold || exit 1
hc_cgroup_create freed || exit 1
CONF=$HC_TMP/conf/hugecollapsed.conf
METRICS=$HC_TMP/metrics.prom
mkdir -p "$HC_TMP/conf/cgroup.d"
chmod 0755 "$HC_TMP/conf" "$HC_TMP/conf/cgroup.d"
# The global budget leaves room for both; each rule caps its workload at one
# block per pass. max_wait_s is an hour so aging cannot reorder anything.
printf '[daemon]\nscan_interval_ms = 500\nmetrics_file = %s\nmetrics_interval_s = 1\ncgroup_dir = %s\n[collapse]\nenable = no\nbudget_mb_per_s = 16\nmax_wait_s = 3600\n' \
	"$METRICS" "$HC_TMP/conf/cgroup.d" >"$CONF"
chmod 0644 "$CONF"
hc_write_rule "$CONF" cold "budget_mb_per_s = 4"
hc_write_rule "$CONF" freed "budget_mb_per_s = 4"

# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
start_workload hot "$MB" cold || exit 1
start_workload hot "$MB" freed || exit 1
hc_cgroup_add cold "${WL_PID[cold]}" || exit 1
hc_cgroup_add freed "${WL_PID[freed]}" || exit 1

hc_daemon_start "$CONF" || {
	hc_not_ok "daemon starts"
	hc_summary
	exit 1
}

# Until each has two blocks collapsed: the rest are remembered, waiting.
for ((i = 0; i < $(hc_scaled 10) * 10; i++)); do
	(($(wl_pmd_bytes cold) >= 2 * BLOCK && $(wl_pmd_bytes freed) >= 2 * BLOCK)) && break
	sleep 0.1
done
declare -A BEFORE=()
for w in cold freed; do
	BEFORE[$w]=$(wl_pmd_bytes "$w")
	assert_ge "$w: partly collapsed while hot (bytes)" "${BEFORE[$w]}" $((2 * BLOCK))
	assert_lt "$w: ... and blocks still waiting (bytes)" "${BEFORE[$w]}" $((MB << 20))
done

kill -s RTMIN "${WL_PID[cold]}"
kill -s RTMIN+1 "${WL_PID[freed]}"
for ((i = 0; i < 50; i++)); do
	grep -qx cold "${WL_OUT[cold]}" && grep -qx freed "${WL_OUT[freed]}" && break
	sleep 0.1
done
assert_cmd "cold workload gave MADV_COLD" grep -qx cold "${WL_OUT[cold]}"
assert_cmd "freed workload gave MADV_FREE" grep -qx freed "${WL_OUT[freed]}"
# What a pass collapsing while the advice landed may have added.
for w in cold freed; do
	BEFORE[$w]=$(wl_pmd_bytes "$w")
done
hc_wait_passes 10 20 || hc_not_ok "10 passes after the advice"
for w in cold freed; do
	after=$(wl_pmd_bytes "$w")
	hc_log "$w: $((BEFORE[$w] >> 20)) MiB PMD-mapped at the advice, $((after >> 20)) MiB 10 passes later"
	assert_le "$w: at most one block collapsed after the advice (bytes)" "$after" $((BEFORE[$w] + BLOCK))
done
stale=$(awk '$1 == "hugecollapsed_stale_candidates_total" {print $2}' "$METRICS")
assert_ge "metrics: stale_candidates_total" "${stale:-0}" 2

hc_daemon_stop
assert_eq "daemon exits 0 on SIGTERM" "$?" 0
for w in cold freed; do
	stop_workload "$w"
	assert_eq "$w pattern intact at exit" "$?" 0
done
hc_summary
