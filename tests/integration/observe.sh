#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# mode = observe, the first rollout (issue 20): the daemon scans, classifies
# and reports, and changes nothing.
#  - a hot MADV_HUGEPAGE workload (64 MiB, filled as 4 KiB pages) stays
#    4 KiB: its AnonHugePages is 0 after many passes (this fails the moment
#    the daemon collapses; tests/integration/observe.sh was checked against
#    a daemon in mode = collapse, where it does fail);
#  - the metrics report it: hugecollapsed_observe_only 1, the workload's
#    64 MiB in hugecollapsed_would_collapse_bytes, no collapse outcome
#    counted, khugepaged mode keep although the file says khugepaged = off;
#  - `--status` and `--status --json` name it as the top pending process
#    and say observe only;
#  - every writable THP/khugepaged knob (every file below
#    /sys/kernel/mm/transparent_hugepage that is writable, per-size ones
#    included) is byte for byte what it was before the daemon started, while
#    it runs and after it stops; no state file is written;
#  - the daemon holds no /proc/vmstat (collapse accounting) and no pidfd.
# Needs root; khugepaged is quieted first (hc_khugepaged_quiet), as in every
# test whose workloads opt in with MADV_HUGEPAGE, and the snapshot is taken
# after that.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_root
require_cmd jq
require_exec "$HC_BIN" "$HC_WORKLOAD"

THP=/sys/kernel/mm/transparent_hugepage
DPIDS=()
cleanup()
{
	local pid
	for pid in "${DPIDS[@]}"; do
		hc_stop_pid "$pid"
	done
	hc_cleanup
}
trap cleanup EXIT

# snapshot FILE: every writable knob below $THP, "path<TAB>contents" (a
# read of a knob never changes it).
snapshot()
{
	local f
	find "$THP" -type f -perm -u+w | sort | while read -r f; do
		printf '%s\t%s\n' "$f" "$(cat "$f" 2>&1)"
	done >"$1"
}

ETC=$HC_TMP/etc
RUN=$HC_TMP/run
CONF=$ETC/hugecollapsed.conf
PROM=$RUN/metrics.prom
mkdir -m 0755 "$ETC" "$RUN"
# khugepaged = off would write enabled=never in mode = collapse: observe
# must not apply it.
printf '[daemon]\nmode = observe\nkhugepaged = off\nscan_interval_ms = 200\nmetrics_file = %s\nmetrics_interval_s = 1\nstate_file = %s\n[collapse]\nmax_ptes_none = 255\nmin_referenced_pct = 50\n' \
	"$PROM" "$RUN/khugepaged.state" >"$CONF"
chmod 0644 "$CONF"

assert_cmd "--check-config says observe" bash -c "'$HC_BIN' --check-config --config '$CONF' | grep -q 'mode = observe'"

hc_khugepaged_quiet || exit 1
if ! start_workload hot 64; then
	hc_not_ok "start the hot workload"
	hc_summary
	exit 1
fi
HOT=${WL_PID[hot]}
assert_eq "the hot workload starts as 4 KiB pages" "$(wl_field hot AnonHugePages)" 0
snapshot "$HC_TMP/knobs.before"
assert_ge "knobs found to compare" "$(wc -l <"$HC_TMP/knobs.before")" 5

env -u NOTIFY_SOCKET -u WATCHDOG_USEC -u WATCHDOG_PID "$HC_BIN" --config "$CONF" 2>"$HC_TMP/daemon.err" &
DPID=$!
DPIDS+=("$DPID")

value()
{
	S=$1 awk 'BEGIN { s = ENVIRON["S"] } index($0, s " ") == 1 { print substr($0, length(s) + 2); exit }' "$PROM"
}
would_ge_64m()
{
	[[ -r $PROM ]] && (($(value hugecollapsed_would_collapse_bytes) >= 64 << 20))
}
assert_cmd "metrics report the 64 MiB as would-collapse" hc_wait_until 60 would_ge_64m
p0=$(value hugecollapsed_passes_total)
# Many more passes, each of which would have collapsed it in mode = collapse.
passes_ge()
{
	(($(value hugecollapsed_passes_total) >= p0 + 10))
}
assert_cmd "ten more passes" hc_wait_until 60 passes_ge
sed 's/^/#   /' "$HC_TMP/daemon.err"

assert_eq "the hot workload is still 4 KiB (AnonHugePages)" "$(wl_field hot AnonHugePages)" 0
assert_eq "hugecollapsed_observe_only" "$(value hugecollapsed_observe_only)" 1
assert_ge "hugecollapsed_would_collapse_processes" "$(value hugecollapsed_would_collapse_processes)" 1
assert_eq "no collapse counted" "$(value 'hugecollapsed_collapse_ranges_total{outcome="collapsed"}')" 0
assert_eq "no collapse attempted (enomem)" "$(value 'hugecollapsed_collapse_ranges_total{outcome="enomem"}')" 0
assert_eq "khugepaged mode in force: keep" "$(value 'hugecollapsed_khugepaged_mode{mode="keep"}')" 1
assert_cmd "the start line says observe" grep -q 'mode = observe: .*khugepaged = off is not applied' "$HC_TMP/daemon.err"

"$HC_BIN" --status --config "$CONF" >"$HC_TMP/status.out" 2>&1
assert_eq "--status exits 0" "$?" 0
sed 's/^/#   /' "$HC_TMP/status.out"
assert_cmd "--status says observe only" grep -q 'observe only: would collapse' "$HC_TMP/status.out"
assert_cmd "--status lists the workload as pending" awk -v p="$HOT" '$1 == p { f = 1 } END { exit !f }' \
	"$HC_TMP/status.out"
"$HC_BIN" --status --json --config "$CONF" >"$HC_TMP/status.json" 2>"$HC_TMP/status.err"
assert_eq "--status --json exits 0" "$?" 0
assert_cmd "JSON: observe_only" jq -e '.observe_only == true' "$HC_TMP/status.json"
assert_cmd "JSON: would_collapse_bytes >= 64 MiB" jq -e '.would_collapse_bytes >= 67108864' "$HC_TMP/status.json"
# shellcheck disable=SC2016 # $p is jq's
assert_cmd "JSON: the workload pends 64 MiB" \
	jq -e --argjson p "$HOT" '[.processes[] | select(.pid == $p) | .pending_bytes >= 67108864] | any' \
	"$HC_TMP/status.json"

# What it holds: no vmstat reader, no pidfd (collapsing needs both).
fds=$(ls -l "/proc/$DPID/fd" 2>/dev/null)
assert_cmd "the daemon has open descriptors to look at" test -n "$fds"
assert_eq "no /proc/vmstat open" "$(grep -c '/proc/vmstat' <<<"$fds")" 0
assert_eq "no pidfd open" "$(grep -c 'pidfd' <<<"$fds")" 0

snapshot "$HC_TMP/knobs.during"
assert_cmd "every THP knob unchanged while it runs" cmp "$HC_TMP/knobs.before" "$HC_TMP/knobs.during"
assert_cmd "no state file written" test ! -e "$RUN/khugepaged.state"

kill -TERM "$DPID"
wait "$DPID"
assert_eq "the daemon exits 0 on SIGTERM" "$?" 0
DPIDS=()
snapshot "$HC_TMP/knobs.after"
if ! cmp -s "$HC_TMP/knobs.before" "$HC_TMP/knobs.after"; then
	diff "$HC_TMP/knobs.before" "$HC_TMP/knobs.after" | sed 's/^/#   /'
	hc_not_ok "every THP knob unchanged after it stops"
else
	hc_ok "every THP knob unchanged after it stops"
fi
assert_eq "still 4 KiB after the stop" "$(wl_field hot AnonHugePages)" 0
hc_summary
