#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# With a timer, a doorbell wake-up only asks whether news came, and only
# one process's faults are news (16 MiB: news_gate.h). The doorbell's BPF
# filter (fault_news.h) counts samples per process, so short commands that
# each fault less never wake the daemon, however many there are; counted
# per CPU, as without BPF, they do. Under a storm of short processes
# (hc_fault_storm: 20 a second, 8 MiB each, about 40,000 faults a second),
# the daemon at scan_interval_ms = 1000 with collapsing disabled:
#  - with BPF, it says it counts per process, and over 10 s it sleeps and
#    wakes (voluntary context switches) at most once per pass plus 5;
#  - under hc_no_perf --bpf (bpf() denied), it says it counts per CPU, and
#    wakes at least 4 times as often over the same 10 s: the storm is real,
#    and the filter is what keeps the daemon asleep;
#  - a process that faults in 64 MiB is still news with the filter: a news
#    pass follows within 5 s (integration/news_pass covers the collapse).
# Needs root and a build with BPF; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN" "$HC_NO_PERF" "$HC_FAULT_STORM" "$HC_WORKLOAD"
require_no_other_daemon
[[ -f $HC_BUILD/bpf/fault_news.skel.h ]] || hc_skip "built without BPF (no fault_news skeleton)"

CONF=$HC_TMP/conf/hugecollapsed.conf
METRICS=$HC_TMP/metrics.prom
hc_write_config "$CONF" "scan_interval_ms = 1000
khugepaged = keep" ""
hc_config_metrics "$CONF" "$METRICS"
# The metrics file on its own schedule would add wake-ups: only every 10 s.
sed -i 's|^metrics_interval_s = 1$|metrics_interval_s = 10|' "$CONF"

"$HC_FAULT_STORM" --per-s 20 --mb 8 >"$HC_TMP/storm.out" &
STORM=$!
HC_PIDS+=("$STORM")
hc_wait_until 10 grep -q '^ready' "$HC_TMP/storm.out"

vcs() # the daemon's voluntary context switches: each a sleep and a wake-up
{
	awk '$1 == "voluntary_ctxt_switches:" {print $2}' "/proc/$HC_DAEMON_PID/status"
}

# measure MODE: runs the daemon (bpf: as it is; no_bpf: under hc_no_perf
# --bpf) for 10 s after it settles; sets WAKES and PASSES.
measure()
{
	local mode=$1 v0 p0
	HC_DAEMON_WRAP=()
	[[ $mode == no_bpf ]] && HC_DAEMON_WRAP=("$HC_NO_PERF" --bpf)
	hc_daemon_start "$CONF" || return 1
	# Let the start settle and the back-off reach its cap: 1 + 2 + 4 s.
	sleep 8
	v0=$(vcs) p0=$(hc_daemon_passes)
	sleep 10
	WAKES=$(($(vcs) - v0)) PASSES=$(($(hc_daemon_passes) - p0))
	hc_log "$mode: 10 s under the storm: $WAKES wake-ups, $PASSES passes"
}

if measure bpf; then
	assert_eq "bpf: the daemon counts news per process" \
		"$(grep -c 'news counted per process (BPF filter)' "$HC_DAEMON_LOG")" 1
	assert_le "bpf: wake-ups in 10 s: one per pass plus 5" "$WAKES" $((PASSES + 5))
	BPF_WAKES=$WAKES
	# News still wakes it: a process that faults in 64 MiB.
	p0=$(hc_metric "$METRICS" hugecollapsed_news_passes_total)
	start_workload hot 64 hot --hot-interval-ms 100
	news_after() { (($(hc_metric "$METRICS" hugecollapsed_news_passes_total) > p0)); }
	assert_cmd "bpf: a process that faults in 64 MiB brings a news pass within 5 s" hc_wait_until 5 news_after
	stop_workload hot
	hc_daemon_stop
	assert_eq "bpf: daemon exits 0 on SIGTERM" "$?" 0
else
	hc_not_ok "bpf: daemon starts"
fi

if measure no_bpf; then
	assert_eq "no_bpf: the daemon counts news per CPU" \
		"$(grep -c 'news counted per CPU, not per process' "$HC_DAEMON_LOG")" 1
	assert_ge "no_bpf: wakes at least 4 times as often as with the filter" "$WAKES" $((4 * ${BPF_WAKES:-1}))
	hc_daemon_stop
	assert_eq "no_bpf: daemon exits 0 on SIGTERM" "$?" 0
else
	hc_not_ok "no_bpf: daemon starts"
fi
hc_stop_pid "$STORM"
hc_summary
