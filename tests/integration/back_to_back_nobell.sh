#!/bin/bash
# scan_interval_ms = 0 without perf events does not spin (issue 16): with
# no fault doorbell, a pass samples every process, and the old 10 ms tick
# cost about 60% of a CPU at 1,000 processes. The daemon runs without
# CAP_SYS_ADMIN and CAP_PERFMON (setpriv), so with perf_event_paranoid >= 1
# its per-CPU events cannot be opened. Over 10 s it must log that it has no
# doorbell and run at most 10 ticks plus one pass per pass that did work
# plus a slack of 5 (the old tick: about 1,000), and its CPU time must stay
# within 1% of a CPU plus 5 ms per pass.
# Needs root and setpriv; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN"
require_cmd setpriv
require_no_other_daemon
(($(cat /proc/sys/kernel/perf_event_paranoid) >= 1)) || hc_skip "perf_event_paranoid < 1: perf events open without privilege"

CONF=$HC_TMP/conf/hugecollapsed.conf
hc_write_config "$CONF" "scan_interval_ms = 0
khugepaged = keep" ""
# The daemon, without the capabilities that open system-wide perf events.
REAL_BIN=$HC_BIN
HC_BIN=$HC_TMP/nobell
printf '#!/bin/sh\nexec setpriv --inh-caps=-sys_admin,-perfmon --bounding-set=-sys_admin,-perfmon %s "$@"\n' \
	"$REAL_BIN" >"$HC_BIN"
chmod 0755 "$HC_BIN"
hc_daemon_start "$CONF" || exit 1
assert_cmd "no doorbell (log line)" grep -q 'no page-fault doorbell' "$HC_DAEMON_LOG"
assert_cmd "the slow tick (log line)" grep -q 'scan_interval_ms = 0 without a page-fault doorbell: a pass every 1000 ms' "$HC_DAEMON_LOG"

cpu_ns()
{
	awk '{print $1}' "/proc/$HC_DAEMON_PID/schedstat"
}
p0=$(hc_daemon_passes)
c0=$(cpu_ns)
sleep 10
p1=$(hc_daemon_passes)
c1=$(cpu_ns)
passes=$((p1 - p0))
cpu_ms=$(((c1 - c0) / 1000000))
hc_log "10 s without a doorbell: $passes passes, $cpu_ms ms of CPU"
assert_le "passes in 10 s" "$passes" 15
assert_le "CPU time in 10 s (ms)" "$cpu_ms" $((100 + 5 * passes))

hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
hc_summary
