#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# scan_interval_ms = 0 never spins: passes run when the fault doorbell's
# poll wakes (after 8 samples of 64 faults on one CPU), on a 0.5 s tick, or
# right after a pass that collapsed something; never in a loop over nothing.
#
# Over 10 s the daemon (collapsing disabled everywhere, so it only samples)
# must run at most 24 ticks plus one pass per doorbell wake-up plus a slack
# of 5, and its CPU time (from /proc/PID/schedstat) must stay within 0.1%
# of a CPU (10 ms) plus 1 ms per pass that did work (not idle: someone
# faulted). On a quiet machine that is the 0.1% of the issue; other
# processes' faults (a busy machine, other tests) give it work, and each
# such pass is allowed its cost, so the test holds either way. The CPU
# bounds are multiplied by HC_TIME_SCALE (3 for the sanitized daemon) and
# by the machine's slowness over the same 10 s: hc_cpu_probe does a fixed
# amount of idle-pass work beside the daemon, and its CPU time over
# PROBE_QUIET_US (what it costs on a quiet machine of the CI kind) is the
# factor, never below 1. The CI guests count a contended host's delays as
# CPU time (no steal accounting): there the same passes cost 4 to 8 times
# as much as on a quiet one, and fixed bounds failed. The old back-to-back
# loop ran millions of passes a second at 100% of a CPU and fails both
# bounds by orders of magnitude, whatever the factor.
#
# Then the same without perf events (hc_no_perf: a seccomp filter denies
# perf_event_open, as Docker's default profile does). There is no doorbell,
# and every pass samples every process, so the tick is 1 s: at most 12
# passes plus the slack, and 10 ms plus, per pass, 1 ms and 20 us per
# process. Before (issue 16) it ran a pass every 10 ms: about 1,000 in the
# window, 60% of a CPU at 1,000 processes.
# Needs root; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN"
require_exec "$HC_NO_PERF"
require_exec "$HC_CPU_PROBE"
require_no_other_daemon

CONF=$HC_TMP/conf/hugecollapsed.conf
METRICS=$HC_TMP/metrics.prom
hc_write_config "$CONF" "scan_interval_ms = 0
khugepaged = keep" ""
hc_config_metrics "$CONF" "$METRICS"
# metric NAME: its value in the metrics file (0 before the first write).
# hc_cpu_probe's CPU time over 10 s on a quiet 2-vCPU CI guest: 12-15 ms.
PROBE_QUIET_US=15000
metric()
{
	hc_metric "$METRICS" "$1"
}

# measure MODE: starts the daemon (doorbell: as it is; no_perf: under
# hc_no_perf) and checks its passes and CPU over 10 s.
measure()
{
	local mode=$1 cpu0 cpu1 passes0 wake0 idle0 passes wakes working cpu_us nprocs scale
	local probe_pid probe_out probe_us slow
	# A sanitized daemon (HC_TIME_SCALE, scripts/test.sh) costs a few times
	# the CPU; the spinning this catches costs orders of magnitude more.
	scale=$(hc_scaled 1)
	HC_DAEMON_WRAP=()
	[[ $mode == no_perf ]] && HC_DAEMON_WRAP=("$HC_NO_PERF")
	rm -f "$METRICS"
	hc_daemon_start "$CONF" || return 1
	# The metrics file is rewritten at most once a second back to back: wait
	# for it, let the start settle, then measure over 10 s.
	hc_wait_until 5 test -s "$METRICS"
	sleep 2
	probe_out=$HC_TMP/probe.$mode
	"$HC_CPU_PROBE" 10 >"$probe_out" &
	probe_pid=$!
	HC_EXTRA_PIDS+=("$probe_pid")
	cpu0=$(cut -d' ' -f1 "/proc/$HC_DAEMON_PID/schedstat")
	passes0=$(metric hugecollapsed_passes_total)
	wake0=$(metric hugecollapsed_doorbell_wakeups_total)
	idle0=$(metric hugecollapsed_passes_idle_total)
	sleep 10
	cpu1=$(cut -d' ' -f1 "/proc/$HC_DAEMON_PID/schedstat")
	sleep 1.2 # one more metrics write, covering the whole window
	passes=$(($(metric hugecollapsed_passes_total) - passes0))
	wakes=$(($(metric hugecollapsed_doorbell_wakeups_total) - wake0))
	working=$((passes - ($(metric hugecollapsed_passes_idle_total) - idle0)))
	cpu_us=$(((cpu1 - cpu0) / 1000))
	wait "$probe_pid"
	probe_us=$(cat "$probe_out")
	[[ $probe_us =~ ^[0-9]+$ ]] || probe_us=0
	assert_ge "$mode: hc_cpu_probe reports its CPU time" "$probe_us" 1
	# The slowness factor in tenths, at least 1.0.
	slow=$(((probe_us * 10 + PROBE_QUIET_US - 1) / PROBE_QUIET_US))
	((slow >= 10)) || slow=10
	hc_log "$mode: 10 s back to back: $passes passes ($working did work), $wakes doorbell wake-ups, ${cpu_us} us of CPU" \
		"($(metric hugecollapsed_samples_partial_total) partial and $(metric hugecollapsed_samples_full_total) full samples," \
		"$(metric hugecollapsed_stat_reads_total) stat reads since start); hc_cpu_probe ${probe_us} us (x$((slow / 10)).$((slow % 10)))"

	assert_ge "$mode: the metrics file counts passes" "$passes" 1
	# The counters come from metrics writes up to a second old at either end:
	# the window may be 12 s, 24 ticks (12 without a doorbell).
	if [[ $mode == doorbell ]]; then
		assert_le "$mode: passes over 10 s: ticks + doorbell wake-ups + 5" "$passes" $((24 + wakes + 5))
		assert_le "$mode: CPU over 10 s (us): 0.1% + 1 ms per pass that did work (x$scale, x$((slow / 10)).$((slow % 10)) slowness)" "$cpu_us" \
			$(((10000 + 1000 * working) * scale * slow / 10))
	else
		nprocs=$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)
		assert_eq "$mode: the daemon says it has no doorbell" "$(grep -c 'no page-fault doorbell' "$HC_DAEMON_LOG")" 1
		assert_eq "$mode: no doorbell wake-ups" "$wakes" 0
		assert_le "$mode: passes over 10 s: 1 s ticks + 5" "$passes" $((12 + 5))
		assert_le "$mode: CPU over 10 s (us): 10 ms + (1 ms + 20 us x $nprocs processes) per pass (x$scale, x$((slow / 10)).$((slow % 10)) slowness)" "$cpu_us" \
			$(((10000 + passes * (1000 + 20 * nprocs)) * scale * slow / 10))
	fi
	hc_daemon_stop
	assert_eq "$mode: daemon exits 0 on SIGTERM" "$?" 0
}

measure doorbell
measure no_perf
hc_summary
