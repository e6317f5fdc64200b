#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Change detection: a process that did not fault since its last scan is
# neither scanned again nor even sampled (no /proc/PID/stat read).
#
# The daemon runs under `strace -f -y -e trace=openat`, so every open of
# /proc/PID/smaps, /proc/PID/pagemap and /proc/PID/stat is counted per
# process. Three idle workloads (filled, then asleep) are scanned once; over
# the next passes none of their files is opened again. Then one takes a
# burst of page faults (SIGUSR2: 128 pages of a spare mapping; no maps
# change): the fault doorbell names it, and it alone is scanned again,
# exactly once. Another maps a new page without faulting (SIGHUP): nothing
# names it, so it waits for the rolling rescan (full_rescan_s, an hour
# here), until it faults too; then its new address space is scanned once.
# A full sample (hugecollapsed_samples_full_total) reads every process's
# stat, by design: memory mapped elsewhere on the machine without faults, or
# doorbell samples lost on a busy one, ask for it. The stat reads of a
# process that did not fault are bounded by the full samples since, which is
# none on a quiet machine.
# Needs root, cgroup v2 and strace; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_cgroup2
require_cmd strace pgrep
require_exec "$HC_BIN" "$HC_WORKLOAD"
hc_daemon_prepare

W=(idle1 idle2 idle3)
hc_cgroup_create unchanged || exit 1
CONF=$HC_TMP/conf/hugecollapsed.conf
hc_write_config "$CONF" "scan_interval_ms = 300
full_rescan_s = 3600" ""
METRICS=$HC_TMP/metrics.prom
hc_config_metrics "$CONF" "$METRICS"
hc_write_rule "$CONF" unchanged ""
# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
for w in "${W[@]}"; do
	start_workload idle 8 "$w" || exit 1
	hc_cgroup_add unchanged "${WL_PID[$w]}" || exit 1
done

TRACE=$HC_TMP/openat.trace
HC_DAEMON_LOG=$HC_TMP/daemon.log
env -u NOTIFY_SOCKET -u JOURNAL_STREAM strace -f -y -qq -e trace=openat -o "$TRACE" \
	"$HC_BIN" --config "$CONF" -v >"$HC_DAEMON_LOG" 2>&1 &
STRACE_PID=$!
HC_EXTRA_PIDS+=("$STRACE_PID")
for ((i = 0; i < 100; i++)); do
	grep -q 'started:' "$HC_DAEMON_LOG" && break
	sleep 0.1
done
DAEMON=$(pgrep -P "$STRACE_PID")
if [[ -z $DAEMON ]] || ! grep -q 'started:' "$HC_DAEMON_LOG"; then
	hc_not_ok "daemon starts under strace: $(cat "$HC_DAEMON_LOG")"
	hc_summary
	exit 1
fi

# opens NAME FILE: successful opens of /proc/PID/FILE of that workload.
opens()
{
	grep -c "= [0-9]*</proc/${WL_PID[$1]}/$2>\$" "$TRACE"
}

# Full samples so far (the metrics file is written after every pass).
full_samples()
{
	awk '$1 == "hugecollapsed_samples_full_total" { print $2; found = 1 } END { if (!found) print 0 }' \
		"$METRICS" 2>/dev/null || echo 0
}

# stat_unread PHASE NAME: NAME's stat was opened no more often since STAT0
# than the full samples since FULL0 (one open each).
stat_unread()
{
	local full=$(($(full_samples) - FULL0))
	assert_le "$1: $2's stat not read but by the $full full sample(s) since" "$(opens "$2" stat)" \
		$((STAT0[$2] + full))
}

# wait_opens NAME FILE N: up to 10 s for N opens.
wait_opens()
{
	local i
	for ((i = 0; i < 100; i++)); do
		(($(opens "$1" "$2") >= $3)) && return 0
		sleep 0.1
	done
	return 1
}

# expect PHASE SCANS… : each workload's scans, as smaps and pagemap opens:
# one per scan, and one more of each for the first pass's collapse (it reads
# smaps again for the coverage numbers, coverage.h, and the page tables of
# the call's blocks right before the call, dispatch.c).
expect()
{
	local phase=$1 i=0 w
	shift
	for w in "${W[@]}"; do
		assert_eq "$phase: $w smaps opened $(($1 + 1)) time(s)" "$(opens "$w" smaps)" "$(($1 + 1))"
		assert_eq "$phase: $w pagemap opened $(($1 + 1)) time(s)" "$(opens "$w" pagemap)" "$(($1 + 1))"
		shift
		i=$((i + 1))
	done
}

### Scanned once, then left alone.
for w in "${W[@]}"; do
	wait_opens "$w" smaps 2 || hc_log "$w: never scanned and collapsed"
	assert_cmd "the first pass collapsed $w" grep -q "pid ${WL_PID[$w]} (.*): collapsed" "$HC_DAEMON_LOG"
done
hc_wait_passes 4 10 || hc_log "fewer than 4 passes logged"
expect "4 passes after the first scan" 1 1 1
assert_cmd "the log shows passes with unchanged processes" grep -q 'processes ([1-9][0-9]* unchanged)' "$HC_DAEMON_LOG"
declare -A STAT0
FULL0=$(full_samples)
for w in "${W[@]}"; do
	STAT0[$w]=$(opens "$w" stat)
done
hc_wait_passes 4 10 || hc_log "fewer than 4 passes logged"
for w in "${W[@]}"; do
	stat_unread "4 more passes" "$w"
done

### A fault in idle2: only idle2 is scanned again.
kill -USR2 "${WL_PID[idle2]}"
wait_opens idle2 smaps 3 || hc_log "idle2 not scanned again after its fault"
hc_wait_passes 3 10 || hc_log "fewer than 3 passes logged"
expect "after a fault in idle2" 1 2 1

stat_unread "after a fault in idle2" idle1
stat_unread "after a fault in idle2" idle3

### A new mapping in idle3 (no fault): not even sampled, until it faults.
minflt0=$(awk '{print $10}' "/proc/${WL_PID[idle3]}/stat")
kill -HUP "${WL_PID[idle3]}"
for ((i = 0; i < 50; i++)); do
	grep -q grew "${WL_OUT[idle3]}" && break
	sleep 0.1
done
assert_eq "idle3's SIGHUP changed its address space only (minflt)" \
	"$(awk '{print $10}' "/proc/${WL_PID[idle3]}/stat")" "$minflt0"
hc_wait_passes 3 10 || hc_log "fewer than 3 passes logged"
expect "after an mmap in idle3" 1 2 1
stat_unread "after an mmap in idle3" idle3
kill -USR2 "${WL_PID[idle3]}"
wait_opens idle3 smaps 3 || hc_log "idle3 not scanned again after its faults"
hc_wait_passes 3 10 || hc_log "fewer than 3 passes logged"
expect "after idle3 faulted too" 1 2 2
stat_unread "after its first look" idle1
hc_log "full samples while measured: $(($(full_samples) - FULL0))"

assert_eq "idle2 answered SIGUSR2 by touching pages" "$(grep -c touched "${WL_OUT[idle2]}")" 1
assert_eq "idle3 answered SIGHUP by mapping a page" "$(grep -c grew "${WL_OUT[idle3]}")" 1
assert_eq "idle3 answered SIGUSR2 by touching pages" "$(grep -c touched "${WL_OUT[idle3]}")" 1

kill -TERM "$DAEMON"
wait "$STRACE_PID"
assert_eq "daemon exits 0 on SIGTERM (through strace)" "$?" 0
hc_log "passes logged: $(hc_daemon_passes); last: $(grep 'pass [0-9]*:' "$HC_DAEMON_LOG" | tail -n1)"
for w in "${W[@]}"; do
	stop_workload "$w"
	assert_eq "$w pattern intact at exit" "$?" 0
done
hc_summary
