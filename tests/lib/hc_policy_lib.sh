# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Helpers for the integration tests that run the daemon itself (policy_*.sh,
# khugepaged_modes.sh). Source it after hc_test_lib.sh:
#   . "$(dirname "$0")/../lib/hc_test_lib.sh"
#   . "$(dirname "$0")/../lib/hc_policy_lib.sh"
#
# What it adds, all undone by one EXIT trap even when a test fails:
#  - the THP sysfs knobs the daemon may write are saved by
#    hc_daemon_prepare and written back at exit if they differ (so a
#    daemon that forgot to restore them cannot leave the machine changed);
#  - cgroup v2 groups made with hc_cgroup_create are removed (after the
#    workloads in them were killed);
#  - the daemon and helper processes we started are killed by PID.
#
# The daemon collapses every process on the machine unless told otherwise,
# so test configs disable the [collapse] defaults and enable collapsing only
# for the test's own cgroups: other people's processes are left alone and
# cannot compete for the budget.

HC_THP=/sys/kernel/mm/transparent_hugepage
HC_THP_KNOBS=(enabled hugepages-2048kB/enabled khugepaged/pages_to_scan khugepaged/scan_sleep_millisecs)
declare -A HC_THP_SAVED=()
HC_CGROUPS=()     # directories we made, removed in reverse order
HC_EXTRA_PIDS=()  # other children to kill at exit (daemon, strace, …)
HC_DAEMON_PID=
HC_DAEMON_LOG=

# thp_knob FILE: the selected word of a choice file, or the number.
thp_knob()
{
	local v
	v=$(cat "$HC_THP/$1" 2>/dev/null) || return 1
	if [[ $v == *[* ]]; then
		v=${v#*[}
		v=${v%%]*}
	fi
	echo "$v"
}

# "enabled=madvise …": the knobs the khugepaged modes write (HC_THP_KNOBS
# that exist here) as one comparable string.
thp_knobs()
{
	local k out=
	for k in "${HC_THP_KNOBS[@]}"; do
		[[ -e $HC_THP/$k ]] && out+="$k=$(thp_knob "$k") "
	done
	echo "${out% }"
}

hc_thp_save()
{
	local k
	for k in "${HC_THP_KNOBS[@]}"; do
		[[ -e $HC_THP/$k ]] && HC_THP_SAVED[$k]=$(thp_knob "$k")
	done
}

# Writes back what differs; says so, since a difference is a daemon bug.
hc_thp_restore()
{
	local k now
	for k in "${!HC_THP_SAVED[@]}"; do
		now=$(thp_knob "$k")
		if [[ $now != "${HC_THP_SAVED[$k]}" ]]; then
			echo "# cleanup: $k is '$now', writing back '${HC_THP_SAVED[$k]}'"
			echo "${HC_THP_SAVED[$k]}" >"$HC_THP/$k"
		fi
	done
}

# The cgroup v2 hierarchy: /sys/fs/cgroup itself, or the "unified" mount of
# a hybrid setup.
hc_cgroup2_root()
{
	local d
	for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		if [[ $(stat -f -c %T "$d" 2>/dev/null) == cgroup2fs ]]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

require_cgroup2()
{
	HC_CG_ROOT=$(hc_cgroup2_root) || {
		hc_skip "needs a cgroup v2 hierarchy (to confine the daemon to the test's processes)"
	}
}

# PIDs of hugecollapsed processes this shell did not start (found by name,
# only to wait for them or warn; never to signal them).
hc_foreign_daemons()
{
	local pid
	for pid in $(pgrep -x hugecollapsed); do
		[[ $(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) == "$$" ]] && continue
		echo "$pid"
	done
}

# Remembers foreign daemons seen while the test ran; the EXIT trap names
# them, since they can collapse our workloads or write sysfs behind our back.
declare -A HC_FOREIGN_SEEN=()
hc_note_foreign()
{
	local pid
	for pid in $(hc_foreign_daemons); do
		HC_FOREIGN_SEEN[$pid]=1
	done
}

# Every test that runs the daemon calls this first: it sets the THP policy
# the tests are written for (hc_thp_madvise) and saves the knobs for the
# EXIT trap. It neither waits for nor skips because of another
# hugecollapsed: the test's own daemon is confined to the test's cgroups
# (hc_write_config disables collapsing everywhere else) or to --pid, so other
# tests' daemons never touch its workloads, and it never touches theirs.
# A foreign daemon that collapses everything (a system service) is named at
# exit (hc_note_foreign), as the likely cause of any failure.
hc_daemon_prepare()
{
	hc_thp_madvise || exit 1
	hc_thp_save
	hc_note_foreign
}
# The old name, for tests written against it.
require_no_other_daemon()
{
	hc_daemon_prepare
}

# hc_cgroup_create NAME: makes a cgroup; sets CG_DIR[NAME] (its directory)
# and CG_PATH[NAME] (its path as /proc/PID/cgroup shows it).
declare -A CG_DIR=() CG_PATH=()
hc_cgroup_create()
{
	local name=$1 dir="$HC_CG_ROOT/hc-test-$$-$1"
	mkdir "$dir" || return 1
	HC_CGROUPS+=("$dir")
	CG_DIR[$name]=$dir
	CG_PATH[$name]=/hc-test-$$-$name
}

# hc_cgroup_add NAME PID…
hc_cgroup_add()
{
	local name=$1 pid
	shift
	for pid in "$@"; do
		echo "$pid" >"${CG_DIR[$name]}/cgroup.procs" || return 1
	done
}

# hc_write_config FILE DAEMON_KEYS COLLAPSE_KEYS: a main file whose [collapse]
# defaults are disabled, with cgroup_dir = FILE's directory/cgroup.d and
# state_file = FILE's directory/run/khugepaged.state (never the system's).
# DAEMON_KEYS and COLLAPSE_KEYS are newline-separated "key = value" lines.
hc_write_config()
{
	local file=$1 dir
	dir=$(dirname "$file")
	mkdir -p "$dir/cgroup.d"
	chmod 0755 "$dir/cgroup.d"
	printf '[daemon]\nmetrics_file =\nstate_file = %s\ncgroup_dir = %s\n%s\n[collapse]\nenable = no\n%s\n' \
		"$dir/run/khugepaged.state" "$dir/cgroup.d" "$2" "$3" >"$file"
	chmod 0644 "$file"
}

# hc_config_metrics FILE METRICS: a hc_write_config file writes its metrics
# to METRICS, rewritten at least every second.
hc_config_metrics()
{
	sed -i "s|^metrics_file =.*|metrics_file = $2\nmetrics_interval_s = 1|" "$1"
}

# hc_metric METRICS NAME: NAME's value in the metrics file METRICS; 0 when
# the file or the series is not there (yet).
hc_metric()
{
	awk -v n="$2" '$1 == n { print $2; found = 1 } END { if (!found) print 0 }' "$1" 2>/dev/null || echo 0
}

# hc_write_rule FILE NAME KEYS: a policy file enabling cgroup NAME.
hc_write_rule()
{
	local dir
	dir=$(dirname "$1")/cgroup.d
	printf '[cgroup]\npath = %s\nenable = yes\n%s\n' "${CG_PATH[$2]}" "$3" >"$dir/$2.conf"
	chmod 0644 "$dir/$2.conf"
}

# hc_daemon_start CONF [ARGS…]: runs the daemon with -v, log in
# $HC_DAEMON_LOG; waits for its "started" line. Without NOTIFY_SOCKET or
# JOURNAL_STREAM, so its log stays on stderr. HC_DAEMON_WRAP (an array, for
# example ("$HC_NO_PERF")) names a command that execs the daemon, so that
# HC_DAEMON_PID is still the daemon's.
hc_daemon_start()
{
	local conf=$1 i
	shift
	HC_DAEMON_LOG=$HC_TMP/daemon.$((${#HC_EXTRA_PIDS[@]})).log
	env -u NOTIFY_SOCKET -u JOURNAL_STREAM -u WATCHDOG_USEC "${HC_DAEMON_WRAP[@]}" "$HC_BIN" --config "$conf" -v "$@" \
		>"$HC_DAEMON_LOG" 2>&1 &
	HC_DAEMON_PID=$!
	HC_EXTRA_PIDS+=("$HC_DAEMON_PID")
	hc_note_foreign
	for ((i = 0; i < $(hc_scaled 10) * 10; i++)); do
		grep -q 'started:' "$HC_DAEMON_LOG" && return 0
		kill -0 "$HC_DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "# daemon did not start; its log:"
	sed 's/^/#   /' "$HC_DAEMON_LOG"
	return 1
}

# hc_stop_child PID: SIGTERM to a child of this shell, then SIGKILL if it
# has not exited within 10 s (scaled): a daemon stuck in a blocking call
# must fail its test, not hang it. Returns the child's exit status.
hc_stop_child()
{
	local pid=$1 i limit
	limit=$(($(hc_scaled 10) * 10))
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < limit; i++)); do
		[[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) =~ ^(Z|)$ ]] && break
		sleep 0.1
	done
	if ((i == limit)); then
		echo "# PID $pid did not exit within $(hc_scaled 10) s of SIGTERM: killing it"
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid"
}

# hc_daemon_stop: SIGTERM, wait; returns its exit status.
hc_daemon_stop()
{
	local rc
	[[ -n $HC_DAEMON_PID ]] || return 0
	hc_note_foreign
	hc_stop_child "$HC_DAEMON_PID"
	rc=$?
	HC_DAEMON_PID=
	return "$rc"
}

# Passes the daemon has logged (it logs every pass with -v).
hc_daemon_passes()
{
	grep -c 'pass [0-9]*: collapsed' "$HC_DAEMON_LOG"
}

# hc_wait_passes N [TIMEOUT_S]: waits until N more passes were logged, up
# to TIMEOUT_S (20) seconds, scaled by HC_TIME_SCALE.
hc_wait_passes()
{
	local want=$(($(hc_daemon_passes) + $1)) limit=$(($(hc_scaled "${2:-20}") * 10)) i
	for ((i = 0; i < limit; i++)); do
		(($(hc_daemon_passes) >= want)) && return 0
		sleep 0.1
	done
	return 1
}

# After a failed assertion, the end of each daemon log this test wrote:
# CI keeps only the test's output, and the temp dir goes at exit.
hc_show_daemon_logs()
{
	local log
	((HC_FAIL > 0)) || return 0
	for log in "$HC_TMP"/daemon.*.log; do
		[[ -f $log ]] || continue
		echo "# last lines of $(basename "$log"):"
		tail -n 60 "$log" | sed 's/^/#   /'
	done
}

# Kill what we started, by PID, children of this shell only; then the
# workloads (hc_cleanup), then the cgroups they were in; then sysfs.
hc_policy_cleanup()
{
	local pid i
	for pid in "${HC_EXTRA_PIDS[@]}"; do
		if [[ $(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) == "$$" ]]; then
			hc_stop_child "$pid" 2>/dev/null
		fi
	done
	HC_EXTRA_PIDS=()
	hc_show_daemon_logs
	# Before hc_cleanup, which writes back what hc_thp_set changed: the
	# values saved when the daemon started are the ones it must leave.
	hc_thp_restore
	hc_cleanup
	for ((i = ${#HC_CGROUPS[@]} - 1; i >= 0; i--)); do
		# A killed member may take a moment to leave the group.
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			rmdir "${HC_CGROUPS[i]}" 2>/dev/null && break
			sleep 0.2
		done
		[[ -d ${HC_CGROUPS[i]} ]] && echo "# cleanup: cannot remove ${HC_CGROUPS[i]}"
	done
	HC_CGROUPS=()
	if ((${#HC_FOREIGN_SEEN[@]})); then
		echo "# WARNING: other hugecollapsed processes ran during this test (PIDs ${!HC_FOREIGN_SEEN[*]});"
		echo "#          they collapse and write sysfs too: failures may be theirs"
	fi
}
trap hc_policy_cleanup EXIT

