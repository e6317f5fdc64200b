#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's own memory stays small with many processes: 2000 sleeping
# processes (HC_SCALE_PROCS) in an enabled cgroup (so each one is sampled, scanned and
# remembered), a few passes, then its VmHWM (peak RSS) must be <= 8 MiB.
# Prints VmHWM and VmRSS. Needs root and cgroup v2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_cgroup2
require_cmd perl ps
require_exec "$HC_BIN"
hc_daemon_prepare

NPROC=${HC_SCALE_PROCS:-2000}
LIMIT_KB=8192

# The sleepers are forked by one perl process (a bash loop of fork + exec
# takes tens of seconds on a loaded machine), which joins the cgroup first so
# that they are born in it, and reaps them. At exit we kill its children by
# PID (those still its children, so no reused PID), then it.
SPAWNER=
kill_sleepers()
{
	local live
	[[ -n $SPAWNER ]] || return 0
	live=$(ps -o pid= --ppid "$SPAWNER")
	# shellcheck disable=SC2086 # one PID per word
	[[ -n $live ]] && kill -TERM $live 2>/dev/null
	kill -TERM "$SPAWNER" 2>/dev/null
	wait "$SPAWNER" 2>/dev/null
	SPAWNER=
}
trap 'kill_sleepers; hc_policy_cleanup' EXIT

hc_cgroup_create scale || exit 1
CONF=$HC_TMP/conf/hugecollapsed.conf
hc_write_config "$CONF" "scan_interval_ms = 500" ""
hc_write_rule "$CONF" scale ""

t0=$SECONDS
READY=$HC_TMP/spawner.ready
perl -e '
	my ($n, $procs, $ready) = @ARGV;
	open(my $cg, ">", $procs) or die "join cgroup: $!";
	print $cg "$$\n";
	close($cg) or die "join cgroup: $!";
	# 1 MB of heap, shared with every sleeper from its birth: well over the
	# 2 MiB of RSS under which a process gets no look at all (it cannot
	# fill a block).
	my $heap = "x" x 1000000;
	for (1 .. $n) {
		my $pid = fork;
		die "fork: $!" unless defined $pid;
		if (!$pid) { sleep 120; exit 0 }
	}
	open(my $r, ">", $ready) or die; close($r);
	1 while wait != -1;
' "$NPROC" "${CG_DIR[scale]}/cgroup.procs" "$READY" &
SPAWNER=$!
for ((i = 0; i < 600; i++)); do
	[[ -e $READY ]] && break
	kill -0 "$SPAWNER" 2>/dev/null || break
	sleep 0.1
done
# The spawner itself is in the cgroup too.
assert_eq "sleepers in the cgroup" "$(($(wc -l <"${CG_DIR[scale]}/cgroup.procs") - 1))" "$NPROC"
hc_log "$NPROC sleepers started in $((SECONDS - t0)) s"

hc_daemon_start "$CONF" || {
	hc_not_ok "daemon starts"
	hc_summary
	exit 1
}
hc_wait_passes 4 30 || hc_log "fewer than 4 passes logged in 30 s"
status=/proc/$HC_DAEMON_PID/status
hwm=$(awk '$1 == "VmHWM:" {print $2}' "$status")
rss=$(awk '$1 == "VmRSS:" {print $2}' "$status")
hc_daemon_stop
assert_eq "daemon exits 0 on SIGTERM" "$?" 0

grep 'pass [0-9]*: collapsed' "$HC_DAEMON_LOG" | sed -n '1,4s/^/#   /p'
scanned=$(sed -n 's/.*pass [0-9]*: collapsed .*; scanned \([0-9]*\) of.*/\1/p' "$HC_DAEMON_LOG" | sort -n | tail -n1)
total=$(sed -n 's/.*scanned [0-9]* of \([0-9]*\) processes.*/\1/p' "$HC_DAEMON_LOG" | sort -n | tail -n1)
assert_ge "one pass saw every sleeper (processes)" "${total:-0}" "$NPROC"
assert_ge "one pass scanned every sleeper (smaps + pagemap)" "${scanned:-0}" "$NPROC"
hc_log "daemon with $NPROC more processes: VmHWM ${hwm} kB, VmRSS ${rss} kB"
assert_le "daemon peak RSS (VmHWM, kB)" "${hwm:-999999}" "$LIMIT_KB"
assert_le "daemon RSS (VmRSS, kB)" "${rss:-999999}" "$LIMIT_KB"
kill_sleepers
hc_summary
