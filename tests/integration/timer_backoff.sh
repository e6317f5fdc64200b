#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Quiet timer passes back off (issue 19, pass_backoff.h): with the fault
# doorbell, news runs a pass at once, so after each timer pass that found
# nothing to do the next waits twice as long, up to four intervals (4 s at
# the default 1 s). Collapsing is disabled everywhere, so every pass is
# quiet unless something else on the machine faults in enough to be news.
# Asserts:
#  - over 20 s at scan_interval_ms = 1000, at most 10 timer passes (about 6
#    when backed off, 20 before) plus 3 per news pass (each one brings the
#    timer back to one interval, and it backs off again in three passes),
#    and at least 3 (the timer still runs);
#  - without perf events (hc_no_perf: no doorbell, nothing is news) there is
#    no back-off: at least 15 passes in 20 s.
# The counters come from metrics writes, each after a pass: up to 4 s old
# at either end of the window, which the bounds allow.
# Needs root; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN"
require_exec "$HC_NO_PERF"
require_no_other_daemon

CONF=$HC_TMP/conf/hugecollapsed.conf
METRICS=$HC_TMP/metrics.prom
hc_write_config "$CONF" "scan_interval_ms = 1000
khugepaged = keep" ""
hc_config_metrics "$CONF" "$METRICS"

metric()
{
	hc_metric "$METRICS" "$1"
}

# measure MODE: starts the daemon (doorbell: as it is; no_perf: under
# hc_no_perf) and counts its passes over 20 s.
measure()
{
	local mode=$1 passes0 news0 passes news timer
	HC_DAEMON_WRAP=()
	[[ $mode == no_perf ]] && HC_DAEMON_WRAP=("$HC_NO_PERF")
	rm -f "$METRICS"
	hc_daemon_start "$CONF" || return 1
	hc_wait_until 5 test -s "$METRICS"
	# Let the start settle and the back-off reach its cap: 1 + 2 + 4 s.
	sleep 8
	passes0=$(metric hugecollapsed_passes_total)
	news0=$(metric hugecollapsed_news_passes_total)
	sleep 20
	passes=$(($(metric hugecollapsed_passes_total) - passes0))
	news=$(($(metric hugecollapsed_news_passes_total) - news0))
	timer=$((passes - news))
	hc_log "$mode: 20 s at scan_interval_ms = 1000: $timer timer passes, $news news passes"
	if [[ $mode == doorbell ]]; then
		assert_eq "$mode: the daemon has a doorbell" "$(grep -c 'no page-fault doorbell' "$HC_DAEMON_LOG")" 0
		assert_le "$mode: timer passes in 20 s: 10 + 3 per news pass" "$timer" $((10 + 3 * news))
		assert_ge "$mode: the timer still runs: at least 3 passes in 20 s" "$timer" 3
	else
		assert_eq "$mode: the daemon says it has no doorbell" "$(grep -c 'no page-fault doorbell' "$HC_DAEMON_LOG")" 1
		assert_ge "$mode: no back-off without a doorbell: at least 15 passes in 20 s" "$timer" 15
	fi
	hc_daemon_stop
	assert_eq "$mode: daemon exits 0 on SIGTERM" "$?" 0
}

measure doorbell
measure no_perf
hc_summary
