#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Pacing and the latency histograms, with the daemon on the real kernel:
# a hot 32 MiB workload (16 blocks) in a test cgroup whose policy says
# blocks_per_call = 4 and pause_ms = 100. The daemon must collapse all of it,
# in at least 4 calls with 100 ms between them (its collapse time is at
# least the 3 pauses), and its metrics file must carry both histograms as
# valid Prometheus text: cumulative buckets, +Inf equal to _count, one
# observation per block collapsed and one per pass.
# Collapsing is enabled only in the test cgroup (cgroup v2, like metrics.sh).
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

HC_PROM_CHECK=${HC_PROM_CHECK:-$HC_BUILD/tests/hc_prom_check}

require_root
require_exec "$HC_BIN" "$HC_WORKLOAD" "$HC_PROM_CHECK"

CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [[ -z $CG_ROOT || ! -w $CG_ROOT/cgroup.procs ]]; then
	hc_skip "no writable cgroup2 mount in /proc/mounts"
fi
CG=hc-test-pacing-$$
DPID=

cleanup()
{
	local pid
	[[ -n $DPID ]] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	if [[ -d $CG_ROOT/$CG ]]; then
		while read -r pid; do
			echo "$pid" >"$CG_ROOT/cgroup.procs" 2>/dev/null
		done <"$CG_ROOT/$CG/cgroup.procs"
		rmdir "$CG_ROOT/$CG" || echo "# WARNING: cannot remove $CG_ROOT/$CG"
	fi
	hc_cleanup
}
trap cleanup EXIT
# The workload opts in with MADV_HUGEPAGE: khugepaged would collapse half
# of it on its own (its 4096 pages a scan are 8 blocks), unpaced, unobserved.
hc_khugepaged_quiet || exit 1

ETC=$HC_TMP/etc
CONF=$ETC/hugecollapsed.conf
PROM=$HC_TMP/metrics.prom
mkdir -m 0755 "$ETC" "$ETC/cgroup.d"
# The budget (the global one is the main file's) is no limit here: all 16
# blocks go in one pass.
printf '[daemon]\nscan_interval_ms = 200\nmetrics_file = %s\nmetrics_interval_s = 1\n[collapse]\nenable = no\nbudget_mb_per_s = 100000\n' \
	"$PROM" >"$CONF"
printf '[cgroup]\npath = /%s\nenable = yes\nbudget_mb_per_s = 100000\nblocks_per_call = 4\npause_ms = 100\n' \
	"$CG" >"$ETC/cgroup.d/test.conf"
chmod 0644 "$CONF" "$ETC/cgroup.d/test.conf"

mkdir "$CG_ROOT/$CG" || {
	hc_not_ok "create $CG_ROOT/$CG"
	hc_summary
	exit 1
}
if ! start_workload hot 32 hot; then
	hc_summary
	exit 1
fi
echo "${WL_PID[hot]}" >"$CG_ROOT/$CG/cgroup.procs"

value() { awk -v n="$2" '$1 == n { print $2; exit }' "$1"; }

"$HC_BIN" --config "$CONF" 2>"$HC_TMP/daemon.err" &
DPID=$!
for ((i = 0; i < 300; i++)); do
	(($(wl_pmd_bytes hot) >= 32 << 20)) && [[ -s $PROM ]] &&
		(($(value "$PROM" hugecollapsed_block_collapse_seconds_count) >= 16)) && break
	sleep 0.1
done
sleep 0.5 # one more pass writes the file
cp "$PROM" "$HC_TMP/snap.prom"
kill -TERM "$DPID"
wait "$DPID"
assert_eq "daemon exits 0 on SIGTERM" "$?" 0
DPID=

assert_eq "the whole workload is PMD-mapped" "$(wl_pmd_bytes hot)" $((32 << 20))
if "$HC_PROM_CHECK" "$HC_TMP/snap.prom" >"$HC_TMP/check.out"; then
	hc_ok "the metrics file is valid Prometheus text"
else
	hc_not_ok "hc_prom_check: $(cat "$HC_TMP/check.out")"
fi

S=$HC_TMP/snap.prom
count=$(value "$S" hugecollapsed_block_collapse_seconds_count)
collapsed=$(value "$S" 'hugecollapsed_collapse_ranges_total{outcome="collapsed"}')
hc_log "blocks observed $count, collapsed $collapsed, collapse seconds $(value "$S" hugecollapsed_collapse_seconds_total)"
assert_ge "every collapsed block is observed" "$count" "$collapsed"
assert_ge "16 blocks collapsed" "$collapsed" 16
assert_eq "+Inf bucket equals _count" "$(value "$S" 'hugecollapsed_block_collapse_seconds_bucket{le="+Inf"}')" "$count"
# Cumulative: each bucket at least the one before it, in order.
# shellcheck disable=SC2016 # awk code
assert_cmd "block buckets are cumulative" awk '/^hugecollapsed_block_collapse_seconds_bucket/ {
	if ($2 < last) bad = 1; last = $2; n++ } END { exit bad || n == 0 }' "$S"
# shellcheck disable=SC2016 # awk code
assert_cmd "pass buckets are cumulative" awk '/^hugecollapsed_pass_seconds_bucket/ {
	if ($2 < last) bad = 1; last = $2; n++ } END { exit bad || n == 0 }' "$S"
assert_eq "one pass observation per pass" "$(value "$S" hugecollapsed_pass_seconds_count)" \
	"$(value "$S" hugecollapsed_passes_total)"
# 16 blocks at 4 per call: at least 3 pauses of 100 ms inside collapsing.
assert_cmd "the pauses between calls were taken (collapse time >= 0.3 s)" \
	awk -v t="$(value "$S" hugecollapsed_collapse_seconds_total)" 'BEGIN { exit !(t >= 0.3) }'
assert_eq "the workload's memory is intact" "$(workload_verify hot)" "pattern ok"

hc_summary
