#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Churn on the real kernel: while the daemon runs with scan_interval_ms = 100,
# hc_churn_worker spawns and reaps 600 short-lived processes (random lifetimes
# 50..500 ms, 10 at a time): candidates with a few MiB of 4 KiB pages that
# exit while being scanned or collapsed, processes that execve (/bin/true or
# themselves), processes that munmap/mprotect/MADV_DONTNEED/mmap in a loop,
# and sparse processes that must never be collapsed. A long-lived hot
# workload runs alongside. Asserts:
#  - the daemon never dies, logs no failed pass, exits 0 on SIGTERM;
#  - its RSS stays <= 16 MiB and does not grow after warm-up; its open fds
#    do not grow;
#  - the hot workload still ends up >= 90% PMD-mapped;
#  - every churn worker exits 0: its pattern held (else 3) and, for the
#    sparse ones, no PMD-mapped memory (else 4).
#
# Recycled PIDs. The daemon remembers candidate blocks by (PID, address) and
# collapses them later, so a PID reused by another process between scan and
# collapse would get someone else's decision. Two guards: engine_sample()
# drops the memory of a PID whose start time changed, and
# open_verified_pidfd() opens a pidfd and only then re-reads /proc/PID/stat:
# if the start time still matches, the pidfd (which pins that one process,
# never a later holder of the PID) refers to the process that was scanned;
# process_madvise on it fails with ESRCH once it exits. Forcing PID reuse
# would mean lowering kernel.pid_max, which is global state, so instead every
# worker maps its buffer at the SAME fixed address: a stale (PID, address)
# decision applied to the wrong process lands on a sparse worker's buffer and
# shows as AnonHugePages there (the worker exits 4). The exec role checks the
# case pidfd and start time cannot tell apart: execve keeps both, and the new
# image maps sparse memory where the old one had a candidate (this caught a
# real bug, about one run in two; the engine now also compares an exec
# fingerprint from /proc/PID/stat). ESRCH outcomes in the metrics count the
# collapses refused because the process exited or exec'd. A self-check
# proves the detector fires when a sparse worker is collapsed on purpose.
# Needs root and cgroup v2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

HC_CHURN_WORKER=${HC_CHURN_WORKER:-$HC_BUILD/tests/hc_churn_worker}
COUNT=${HC_CHURN_COUNT:-600}
RSS_LIMIT_KB=$((16 * 1024))
RSS_GROWTH_KB=1024

require_root
require_exec "$HC_BIN" "$HC_WORKLOAD" "$HC_CHURN_WORKER"
require_cgroup2
hc_daemon_prepare

hc_cgroup_create churn || {
	hc_not_ok "create a cgroup"
	hc_summary
	exit 1
}

### Self-check: the "sparse" detector fires when a sparse worker is collapsed
### (max_ptes_none = 511 makes it a candidate for one --once pass).
DET=$HC_TMP/detector.conf
printf '[daemon]\nmetrics_file =\n[collapse]\nmax_ptes_none = 511\nmin_referenced_pct = 0\n' >"$DET"
chmod 0644 "$DET"
"$HC_CHURN_WORKER" sparse --ms $((1500 * ${HC_TIME_SCALE:-1})) 2>"$HC_TMP/detector.err" &
det=$!
HC_EXTRA_PIDS+=("$det")
# Until its buffer at the fixed address is filled (the 64 pages it touches:
# 256 kB of Rss), not a fixed sleep.
for ((i = 0; i < $(hc_scaled 5) * 20; i++)); do
	(($(awk '/^200000000000-/ { v = 1; next } /^[0-9a-f]+-/ { v = 0 } v && $1 == "Rss:" { print $2; exit }' \
		"/proc/$det/smaps" 2>/dev/null) + 0 >= 256)) && break
	sleep 0.05
done
timeout 30 "$HC_BIN" --config "$DET" --once --pid "$det" --sample-ms 100 >/dev/null 2>&1
wait "$det"
assert_eq "self-check: a collapsed sparse worker reports it (exit 4)" "$?" 4

### The daemon, confined to this test's cgroup.
CONF_DIR=$HC_TMP/conf
mkdir -p "$CONF_DIR/cgroup.d"
chmod 0755 "$CONF_DIR" "$CONF_DIR/cgroup.d"
METRICS=$HC_TMP/metrics.prom
printf '[daemon]\nscan_interval_ms = 100\nmetrics_file = %s\nmetrics_interval_s = 1\ncgroup_dir = %s\n[collapse]\nenable = no\n' \
	"$METRICS" "$CONF_DIR/cgroup.d" >"$CONF_DIR/hugecollapsed.conf"
printf '[cgroup]\npath = %s\nenable = yes\nbudget_mb_per_s = 512\n' "${CG_PATH[churn]}" >"$CONF_DIR/cgroup.d/churn.conf"
chmod 0644 "$CONF_DIR/hugecollapsed.conf" "$CONF_DIR/cgroup.d/churn.conf"

# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
if ! start_workload hot 64; then
	hc_not_ok "start the hot workload"
	hc_summary
	exit 1
fi
hc_cgroup_add churn "${WL_PID[hot]}"

if ! hc_daemon_start "$CONF_DIR/hugecollapsed.conf"; then
	hc_not_ok "daemon starts"
	hc_summary
	exit 1
fi
DPID=$HC_DAEMON_PID

rss_kb()
{
	awk '/^VmRSS:/ {print $2}' "/proc/$DPID/status" 2>/dev/null || echo 0
}
# What each fd is, one line per fd, leaving out the kept /proc/PID/stat
# fds (src/sample/stat_fds.h): which processes they name changes with the
# churn, and stat_fds_bounded checks their number.
fd_targets()
{
	local f
	for f in "/proc/$DPID/fd"/*; do
		readlink "$f"
	done 2>/dev/null | sed 's/:\[[0-9]*\]$//' | grep -Ev '^/proc/[0-9]+/stat$' | sort
}
# The kept /proc/PID/stat fds: at most STAT_FDS_MAX, however many
# processes came and went.
STAT_FDS_MAX=$(sed -n 's/^#define STAT_FDS_MAX \([0-9]*\).*/\1/p' "$HC_SRC/src/sample/stat_fds.h")
stat_fd_count()
{
	local f
	for f in "/proc/$DPID/fd"/*; do
		readlink "$f"
	done 2>/dev/null | grep -Ec '^/proc/[0-9]+/stat$'
}
# The daemon's fds at rest: a pass holds a pidfd and a few /proc files open
# for moments, so one snapshot may catch them (a CI run failed on exactly
# that). Take the smallest of 20 snapshots over a second; a leaked fd is in
# every one of them. Writes the targets to $1, prints their count.
steady_fds()
{
	local i n best=-1
	for ((i = 0; i < 20; i++)); do
		fd_targets >"$1.try"
		n=$(wc -l <"$1.try")
		if ((best < 0 || n < best)); then
			best=$n
			mv "$1.try" "$1"
		fi
		sleep 0.05
	done
	rm -f "$1.try"
	echo "$best"
}

hc_wait_passes 3 10
FD0=$(steady_fds "$HC_TMP/fds.before")

# The driver moves itself into the cgroup before it forks, so every worker
# (and every image it execs) is in it from birth.
DRIVER_OUT=$HC_TMP/driver.out
bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "${CG_DIR[churn]}" \
	"$HC_CHURN_WORKER" driver --count "$COUNT" --parallel 10 --max-ms 500 --seed "$$" >"$DRIVER_OUT" 2>&1 &
DRIVER=$!
HC_EXTRA_PIDS+=("$DRIVER")
t0=$SECONDS
RSS=()
while kill -0 "$DRIVER" 2>/dev/null && ((SECONDS - t0 < 80)); do
	RSS+=("$(rss_kb)")
	sleep 0.5
done
wait "$DRIVER"
drc=$?
hc_log "churn took $((SECONDS - t0)) s; driver: $(tail -n1 "$DRIVER_OUT")"
grep -E '^(role|worker)' "$DRIVER_OUT" | sed 's/^/#   /'

### The workers: all spawned, all intact, no sparse one collapsed.
summary=$(grep '^summary' "$DRIVER_OUT")
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$summary"; }
assert_eq "driver finished every worker and all exited 0" "$drc" 0
assert_ge "processes spawned and reaped" "$(field spawned)" 500
assert_eq "workers with an intact pattern" "$(field ok)" "$(field spawned)"
assert_eq "workers whose pattern was corrupt" "$(field corrupt)" 0
assert_eq "sparse workers (incl. after execve) with PMD-mapped memory" "$(field pmd)" 0
assert_eq "workers that failed to set up" "$(field setup)" 0
assert_eq "workers killed by a signal" "$(field signalled)" 0

### The daemon survived and stayed small.
if kill -0 "$DPID" 2>/dev/null; then hc_ok "daemon still running"; else hc_not_ok "daemon died during churn"; fi
passes=$(hc_daemon_passes)
assert_ge "daemon passes during the run" "$passes" 50
assert_eq "no failed pass in the log" "$(grep -c 'pass [0-9]* failed' "$HC_DAEMON_LOG")" 0
n=${#RSS[@]}
max=0
for r in "${RSS[@]}"; do ((r > max)) && max=$r; done
warm=${RSS[$((n / 4))]:-0}
last=${RSS[$((n - 1))]:-0}
hc_log "daemon VmRSS kB: warm-up ${warm}, max ${max}, last ${last} over ${n} samples"
assert_le "daemon VmRSS max (kB)" "$max" "$RSS_LIMIT_KB"
assert_le "daemon VmRSS growth after warm-up (kB)" "$((last - warm))" "$RSS_GROWTH_KB"
assert_le "daemon open fds at rest after churn (before: $FD0)" "$(steady_fds "$HC_TMP/fds.after")" "$FD0"
assert_le "daemon's kept /proc/PID/stat fds after churn (STAT_FDS_MAX)" "$(stat_fd_count)" "${STAT_FDS_MAX:-0}"
if ! cmp -s "$HC_TMP/fds.before" "$HC_TMP/fds.after"; then
	hc_log "daemon fds before and after differ:"
	diff "$HC_TMP/fds.before" "$HC_TMP/fds.after" | sed 's/^/#   /'
fi

### The hot workload was still collapsed, and the churn workers were seen.
for ((i = 0; i < 50; i++)); do
	(($(wl_pmd_pct hot) >= 90)) && break
	sleep 0.2
done
assert_ge "hot workload PMD-mapped percent" "$(wl_pmd_pct hot)" 90
metric() { awk -v s="$1" '$1 == s {print $2}' "$METRICS"; }
collapsed=$(metric 'hugecollapsed_collapse_ranges_total{outcome="collapsed"}')
esrch=$(metric 'hugecollapsed_collapse_ranges_total{outcome="esrch"}')
hc_log "metrics: collapsed ${collapsed:-?} esrch ${esrch:-?} einval $(metric 'hugecollapsed_collapse_ranges_total{outcome="einval"}')" \
	"eagain $(metric 'hugecollapsed_collapse_ranges_total{outcome="eagain"}') other $(metric 'hugecollapsed_collapse_ranges_total{outcome="other"}')"
# More than the hot workload's 32 blocks: churn workers were collapsed too,
# so the races above really happened under collapse, not beside it.
assert_ge "blocks collapsed (hot + churn workers)" "${collapsed:-0}" $(($(wl_blocks hot) + 10))

hc_daemon_stop
assert_eq "daemon exits 0 on SIGTERM" "$?" 0
stop_workload hot
assert_eq "hot pattern intact at exit" "$?" 0
hc_summary
