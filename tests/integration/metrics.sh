#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's metrics file:
#  - hc_prom_check rejects malformed text (so its OK below means something);
#  - after a few passes the file is valid Prometheus text (hc_prom_check and
#    `promtool check metrics`, which lints names and HELP too), mode 0644, with
#    no temporary file beside it; it holds every required metric, a
#    hugecollapsed_scan_ranges_total{result=…} for every scan result and
#    hugecollapsed_collapse_ranges_total{outcome=…} for every collapse
#    outcome the binary knows, and collapsed bytes under the cgroup label of
#    the one workload collapsing is enabled for; counters never go down;
#  - a second hot workload, in a cgroup named with a byte that is not UTF-8
#    below a child cgroup named with a quote and a backslash that has a
#    policy file of its own, counts for that policy group: one series,
#    escaped; the 0xff byte is nowhere in the file, which stays valid for
#    both checkers; once those cgroups and the policy file are removed (and
#    the daemon reloaded) the series is gone. (cgroupfs refuses a newline in
#    a name, and a policy path must be UTF-8, so the unit tests cover
#    those.)
#  - no top-process series is labelled with a pid or a comm (the pid is a
#    value), and the scan results and collapse outcomes are two families;
#  - `hugecollapsed --status` summarizes it: the daemon is running (its pid),
#    the age of the last pass, the scan results and collapse outcomes; once
#    the daemon stopped, the file left behind reads as stopped; it fails on a
#    missing file;
#  - a missing metrics directory, or a regular file where the directory
#    should be, is logged once and does not stop the daemon; once the
#    directory exists the file is written again.
# Collapsing is enabled only in a test cgroup, so the daemon leaves the rest
# of the machine alone. Needs root and cgroup2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

HC_PROM_CHECK=${HC_PROM_CHECK:-$HC_BUILD/tests/hc_prom_check}

require_root
require_cmd jq promtool
require_exec "$HC_BIN" "$HC_WORKLOAD" "$HC_PROM_CHECK"

CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [[ -z $CG_ROOT || ! -w $CG_ROOT/cgroup.procs ]]; then
	hc_skip "no writable cgroup2 mount in /proc/mounts"
fi
CG=hc-test-metrics-$$
# A child cgroup whose name needs escaping (quote, backslash), with a policy
# file of its own (policy paths must be UTF-8), and below it the workload's
# cgroup, named with 0xff, which starts no UTF-8 sequence: it counts for its
# policy group, so that byte never reaches a label.
WEIRD=$(printf 'q"b\\z')
BAD=$(printf 'x\xffy')
WEIRD_LABEL=$(printf '/%s/q\\"b\\\\z' "$CG")
DPIDS=() # daemons we started

# Stop our daemons (SIGKILL if one hangs), remove the test cgroups, then
# let the library kill the workloads and remove $HC_TMP.
cleanup()
{
	local pid
	for pid in "${DPIDS[@]}"; do
		hc_stop_pid "$pid"
	done
	hc_cgroup_remove "$CG_ROOT" "$CG_ROOT/$CG/$WEIRD/$BAD"
	hc_cgroup_remove "$CG_ROOT" "$CG_ROOT/$CG/$WEIRD"
	hc_cgroup_remove "$CG_ROOT" "$CG_ROOT/$CG"
	hc_cleanup
}
trap cleanup EXIT

ETC=$HC_TMP/etc
CONF=$ETC/hugecollapsed.conf
RUN=$HC_TMP/run
PROM=$RUN/metrics.prom
mkdir -m 0755 "$ETC" "$ETC/cgroup.d" "$RUN"

write_config() # METRICS_FILE
{
	printf '[daemon]\nscan_interval_ms = 200\nmetrics_file = %s\nmetrics_interval_s = 1\n[collapse]\nenable = no\n' "$1" >"$CONF"
	chmod 0644 "$CONF"
}
printf '[cgroup]\npath = /%s\nenable = yes\n' "$CG" >"$ETC/cgroup.d/test.conf"
# Its own policy file: a group (and series) of its own, not part of /$CG's.
printf '[cgroup]\npath = /%s/%s\nenable = yes\n' "$CG" "$WEIRD" >"$ETC/cgroup.d/weird.conf"
chmod 0644 "$ETC/cgroup.d/test.conf" "$ETC/cgroup.d/weird.conf"

# start_daemon ERRFILE: in the background, without any NOTIFY_SOCKET we
# might have inherited, with the unit's UMask=0077. Sets DPID.
start_daemon()
{
	# shellcheck disable=SC2016 # $0 and $1 are the inner shell's
	env -u NOTIFY_SOCKET -u WATCHDOG_USEC -u WATCHDOG_PID \
		bash -c 'umask 077; exec "$0" --config "$1"' "$HC_BIN" "$CONF" 2>"$1" &
	DPID=$!
	DPIDS+=("$DPID")
}

stop_daemon()
{
	kill -TERM "$DPID"
	wait "$DPID"
	assert_eq "daemon exits 0 on SIGTERM" "$?" 0
	DPIDS=()
}

alive()
{
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)
	[[ -n $state && $state != Z ]]
}

# value FILE SERIES: the value of the sample "SERIES VALUE", or empty.
value()
{
	# Through ENVIRON, not -v: awk -v would undo the label escapes.
	S=$2 awk 'BEGIN { s = ENVIRON["S"] } index($0, s " ") == 1 { print substr($0, length(s) + 2); exit }' "$1"
}

### The checker itself rejects what it should.
bad_case()
{
	printf '%b' "$2" >"$HC_TMP/bad.prom"
	if "$HC_PROM_CHECK" "$HC_TMP/bad.prom" >"$HC_TMP/bad.out"; then
		hc_not_ok "hc_prom_check rejects $1"
	else
		hc_ok "hc_prom_check rejects $1: $(head -n1 "$HC_TMP/bad.out")"
	fi
}
H='# HELP a_total A.\n# TYPE a_total counter\n'
bad_case "a sample before HELP/TYPE" 'a_total 1\n'
bad_case "a bad metric name" "${H}a-total 1\n"
bad_case "a counter not named _total" '# HELP a A.\n# TYPE a counter\na 1\n'
bad_case "a second TYPE" "${H}# TYPE a_total counter\na_total 1\n"
bad_case "TYPE after samples" '# HELP g G.\n# TYPE g gauge\ng 1\n# TYPE g gauge\n'
bad_case "a bad label escape" "${H}a_total{x=\"a\\\\tb\"} 1\n"
bad_case "an unquoted label value" "${H}a_total{x=a} 1\n"
bad_case "a value that is not a float" "${H}a_total 1,5\n"
bad_case "a series twice" "${H}a_total 1\na_total 2\n"
bad_case "a negative counter" "${H}a_total -1\n"
bad_case "a missing final newline" "${H}a_total 1"
bad_case "a label value that is not UTF-8" "${H}a_total{x=\"a\\xffb\"} 1\n"
bad_case "an overlong UTF-8 form" "${H}a_total{x=\"\\xc0\\xaf\"} 1\n"
bad_case "a UTF-8 sequence cut short" "${H}a_total{x=\"\\xe2\\x82\"} 1\n"
printf '%b' "${H}"'a_total{x="q\\"b\\\\c\\nd"} 1.5e3\na_total 2 1700000000000\n# HELP g G.\n# TYPE g gauge\ng NaN\n' \
	>"$HC_TMP/good.prom"
assert_cmd "hc_prom_check accepts escapes, exponents, timestamps, NaN" "$HC_PROM_CHECK" "$HC_TMP/good.prom"

# promtool is strict too: it rejects what our files must never hold.
printf '# HELP a_total A.\n# TYPE a_total counter\na_total{c="x\xffy"} 1\n' >"$HC_TMP/bad_utf8.prom"
if promtool check metrics <"$HC_TMP/bad_utf8.prom" >/dev/null 2>&1; then
	hc_not_ok "promtool rejects a label value that is not UTF-8"
else
	hc_ok "promtool rejects a label value that is not UTF-8"
fi
assert_cmd "promtool accepts escapes" promtool check metrics <"$HC_TMP/good.prom"

# A daemon collapsing everything (not a test's: those are confined to their
# own cgroups) would leave ours nothing to do: say so, to explain a failure.
others=$(pgrep -x hugecollapsed | tr '\n' ' ')
[[ -n $others ]] && hc_log "WARNING: other hugecollapsed processes are running: $others"

### Hot workloads in the one cgroup collapsing is enabled for, and in its
### oddly named child.
if ! mkdir "$CG_ROOT/$CG" || ! mkdir "$CG_ROOT/$CG/$WEIRD" || ! mkdir "$CG_ROOT/$CG/$WEIRD/$BAD"; then
	hc_not_ok "create $CG_ROOT/$CG and its child"
	hc_summary
	exit 1
fi
# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
if ! start_workload hot 16 hot || ! start_workload hot 8 weird; then
	hc_not_ok "start the workloads"
	hc_summary
	exit 1
fi
echo "${WL_PID[hot]}" >"$CG_ROOT/$CG/cgroup.procs"
echo "${WL_PID[weird]}" >"$CG_ROOT/$CG/$WEIRD/$BAD/cgroup.procs"
assert_eq "the kernel shows the odd cgroup name as is" \
	"$(sed -n 's/^0:://p' "/proc/${WL_PID[weird]}/cgroup")" "/$CG/$WEIRD/$BAD"

# The result and outcome names the binary knows, from its JSON output.
write_config "$PROM"
"$HC_BIN" --once --dry-run --json --config "$CONF" --pid "${WL_PID[hot]}" >"$HC_TMP/names.json"
mapfile -t RESULTS < <(jq -r '.results | keys[]' "$HC_TMP/names.json")
mapfile -t OUTCOMES < <(jq -r '.outcomes | keys[]' "$HC_TMP/names.json")
assert_ge "scan results named by --json" "${#RESULTS[@]}" 8
assert_ge "collapse outcomes named by --json" "${#OUTCOMES[@]}" 8

### The daemon writes the file.
start_daemon "$HC_TMP/daemon.err"
series="hugecollapsed_collapsed_bytes_total{cgroup=\"/$CG\"}"
weird_series="hugecollapsed_collapsed_bytes_total{cgroup=\"$WEIRD_LABEL\"}"
for ((i = 0; i < $(hc_scaled 20) * 10; i++)); do
	if [[ -s $PROM ]] && (($(value "$PROM" hugecollapsed_passes_total) >= 5)) &&
		(($(value "$PROM" "$series" || true) + 0 > 0)) && (($(value "$PROM" "$weird_series" || true) + 0 > 0)); then
		break
	fi
	sleep 0.1
done
cp "$PROM" "$HC_TMP/snap1.prom"
hc_log "$(grep -c . "$HC_TMP/snap1.prom") lines after $(value "$HC_TMP/snap1.prom" hugecollapsed_passes_total) passes"
if "$HC_PROM_CHECK" "$HC_TMP/snap1.prom" >"$HC_TMP/check.out"; then
	hc_ok "the metrics file is valid Prometheus text: $(tail -n1 "$HC_TMP/check.out")"
else
	hc_not_ok "the metrics file is valid Prometheus text"
	sed 's/^/#   /' "$HC_TMP/check.out"
fi
if promtool check metrics <"$HC_TMP/snap1.prom" >"$HC_TMP/promtool.out" 2>&1; then
	hc_ok "promtool check metrics: no error, no lint"
else
	hc_not_ok "promtool check metrics"
	sed 's/^/#   /' "$HC_TMP/promtool.out"
fi
bytes_weird=$(value "$HC_TMP/snap1.prom" "$weird_series")
assert_ge "collapsed bytes under the odd policy group's escaped label" "${bytes_weird:-0}" $((2 << 20))
assert_eq "the odd name's raw 0xff is not in the file" "$(LC_ALL=C grep -c $'\xff' "$HC_TMP/snap1.prom")" 0
assert_eq "the metrics file is mode 0644 despite umask 077" "$(stat -c %a "$PROM")" 644
assert_ge "passes_total >= 5" "$(value "$HC_TMP/snap1.prom" hugecollapsed_passes_total)" 5
for m in hugecollapsed_passes_total hugecollapsed_scan_seconds_total hugecollapsed_collapse_seconds_total \
	hugecollapsed_processes_scanned_total hugecollapsed_processes_unchanged_total; do
	assert_cmd "$m present" grep -Eq "^$m [0-9.e+]+$" "$HC_TMP/snap1.prom"
done
for r in "${RESULTS[@]}"; do
	assert_cmd "scan_ranges_total{result=\"$r\"} present" \
		grep -Eq "^hugecollapsed_scan_ranges_total\{result=\"$r\"\} [0-9]+$" "$HC_TMP/snap1.prom"
done
for o in "${OUTCOMES[@]}"; do
	assert_cmd "collapse_ranges_total{outcome=\"$o\"} present" \
		grep -Eq "^hugecollapsed_collapse_ranges_total\{outcome=\"$o\"\} [0-9]+$" "$HC_TMP/snap1.prom"
done
assert_eq "no series of the old mixed family" "$(grep -c '^hugecollapsed_ranges_total' "$HC_TMP/snap1.prom")" 0
assert_eq "no top-process series labelled by pid or comm" \
	"$(grep -cE '^hugecollapsed_top_process_[a-z_]+\{[^}]*(pid|comm)=' "$HC_TMP/snap1.prom")" 0
assert_eq "the file names its writer" \
	"$(grep -cE "^hugecollapsed_daemon_info\{boot_id=\"$(cat /proc/sys/kernel/random/boot_id)\",pid=\"$DPID\",start_ticks=\"[0-9]+\"\} 1$" \
		"$HC_TMP/snap1.prom")" 1
assert_eq "khugepaged_mode{mode=\"keep\"} is 1" \
	"$(value "$HC_TMP/snap1.prom" 'hugecollapsed_khugepaged_mode{mode="keep"}')" 1
assert_eq "exactly one khugepaged mode is 1" \
	"$(grep -c '^hugecollapsed_khugepaged_mode{mode="[a-z]*"} 1$' "$HC_TMP/snap1.prom")" 1
bytes=$(value "$HC_TMP/snap1.prom" "$series")
assert_ge "collapsed bytes under cgroup=\"/$CG\"" "${bytes:-0}" $((2 << 20))
assert_eq "collapsed bytes in whole 2 MiB blocks" $((${bytes:-1} % (2 << 20))) 0
# Each candidate block collapses once; a block counted again (already
# PMD-mapped, or collapsed by someone else) would show up as more. The bound
# is the dry run's candidates, not the buffer: the workload's own heap may
# hold a collapsible block too (an ASan build's allocator does).
cands=$(jq '[.processes[]?.candidates | length] | add // 0' "$HC_TMP/names.json")
assert_ge "the dry run found the buffer's blocks" "$cands" $((WL_LEN[hot] >> 21))
assert_le "collapsed bytes are at most the dry run's candidates" "${bytes:-0}" $((cands << 21))
assert_eq "collapsed bytes for no other cgroup (collapsing is off there)" \
	"$(grep '^hugecollapsed_collapsed_bytes_total{' "$HC_TMP/snap1.prom" | grep -vF -e "$series" -e "$weird_series" |
		grep -vc ' 0$')" 0
assert_ge "collapse_ranges_total{outcome=\"collapsed\"} counts them" \
	"$(value "$HC_TMP/snap1.prom" 'hugecollapsed_collapse_ranges_total{outcome="collapsed"}')" $((${bytes:-0} >> 21))
assert_ge "processes_scanned_total >= 1" "$(value "$HC_TMP/snap1.prom" hugecollapsed_processes_scanned_total)" 1

# Counters never go down from one write to the next: a later write.
p1=$(value "$HC_TMP/snap1.prom" hugecollapsed_passes_total)
for ((i = 0; i < $(hc_scaled 10) * 10; i++)); do
	(($(value "$PROM" hugecollapsed_passes_total) > p1)) && break
	sleep 0.1
done
cp "$PROM" "$HC_TMP/snap2.prom"
assert_lt "passes_total grew" "$(value "$HC_TMP/snap1.prom" hugecollapsed_passes_total)" \
	"$(value "$HC_TMP/snap2.prom" hugecollapsed_passes_total)"
decreased=$(awk '
	FNR == NR && /^hugecollapsed_[a-z_]*_total[{ ]/ { v[$1] = $2; next }
	/^hugecollapsed_[a-z_]*_total[{ ]/ && ($1 in v) && $2 + 0 < v[$1] + 0 { print $1 }' \
	"$HC_TMP/snap1.prom" "$HC_TMP/snap2.prom")
assert_eq "no counter decreased" "$decreased" ""

### A removed cgroup's series goes (with its policy file: a policy group
### has series while its file is there); the others stay.
stop_workload weird
assert_eq "weird pattern intact at exit" "$?" 0
hc_cgroup_remove "$CG_ROOT" "$CG_ROOT/$CG/$WEIRD/$BAD"
hc_cgroup_remove "$CG_ROOT" "$CG_ROOT/$CG/$WEIRD"
assert_cmd "the odd cgroups are removed" test ! -d "$CG_ROOT/$CG/$WEIRD"
rm -f "$ETC/cgroup.d/weird.conf"
kill -HUP "$DPID"
gone=
for ((i = 0; i < $(hc_scaled 10) * 10; i++)); do
	if [[ -z $(value "$PROM" "$weird_series") && -n $(value "$PROM" hugecollapsed_passes_total) ]]; then
		gone=yes
		break
	fi
	sleep 0.1
done
cp "$PROM" "$HC_TMP/snap3.prom"
assert_eq "the removed cgroup's series is gone" "${gone:-no}" yes
assert_ge "the live cgroup's series stays" "$(value "$HC_TMP/snap3.prom" "$series")" "${bytes:-1}"
assert_cmd "still valid for promtool" promtool check metrics <"$HC_TMP/snap3.prom"
assert_cmd "still valid for hc_prom_check" "$HC_PROM_CHECK" "$HC_TMP/snap3.prom"

### --status
"$HC_BIN" --status --config "$CONF" >"$HC_TMP/status.out" 2>&1
assert_eq "--status exits 0" "$?" 0
hc_log "$(sed -n 1p "$HC_TMP/status.out")"
assert_cmd "--status: passes, MiB collapsed, khugepaged mode" \
	grep -Eq '^hugecollapsed: [0-9]+ passes, [0-9.]+ MiB collapsed, khugepaged keep$' "$HC_TMP/status.out"
assert_cmd "--status: names the file" grep -qF "metrics file $PROM" "$HC_TMP/status.out"
assert_cmd "--status: processes line" grep -Eq '^  processes: [0-9]+ scans' "$HC_TMP/status.out"
assert_cmd "--status: collapse outcomes with collapsed" \
	grep -Eq '^  collapse outcomes \(2 MiB ranges\):.* collapsed [1-9]' "$HC_TMP/status.out"
assert_cmd "--status: scan results with candidate" \
	grep -Eq '^  scan results \(2 MiB ranges\): candidate [0-9]+ .*thp_policy [0-9]+' "$HC_TMP/status.out"
assert_cmd "--status: the daemon runs, with its pid" grep -qxF "  daemon: running (pid $DPID)" "$HC_TMP/status.out"
assert_cmd "--status: the age of the last pass" grep -Eq 'last pass ended [0-9]+ s ago$' "$HC_TMP/status.out"
# -1 as a value of its own, not inside a name (user-1000.slice, a pid range).
minus_one=$(grep -E -- '(^|[[:space:]:=(])-1([[:space:],)]|$)' "$HC_TMP/status.out")
[[ -z $minus_one ]] || hc_log "lines with -1: $minus_one"
assert_eq "--status: no -1 for a missing value" "$(grep -c . <<<"$minus_one")" 0
"$HC_BIN" --status --json --config "$CONF" >"$HC_TMP/status.json"
assert_eq "--status --json: running" "$(jq -r .daemon "$HC_TMP/status.json")" running
stop_daemon
# The file stays behind (staleness shows): its writer is gone.
"$HC_BIN" --status --config "$CONF" >"$HC_TMP/status.out" 2>&1
assert_eq "--status on the file left behind exits 0" "$?" 0
assert_cmd "--status: the daemon that wrote it is stopped" \
	grep -qxF "  daemon: stopped (pid $DPID wrote the file)" "$HC_TMP/status.out"
# Only now: while the daemon runs, a write may be between open and rename.
assert_eq "no temporary file left beside it" "$(ls -A "$RUN")" metrics.prom

write_config "$RUN/none/metrics.prom"
"$HC_BIN" --status --config "$CONF" >"$HC_TMP/status2.out" 2>&1
rc=$?
assert_cmd "--status fails on a missing file" test "$rc" -ne 0
assert_cmd "--status says why" grep -q 'is the daemon running' "$HC_TMP/status2.out"

### A missing metrics directory: logged once, the daemon runs on.
MISSING=$RUN/missing
write_config "$MISSING/metrics.prom"
ERR=$HC_TMP/daemon2.err
start_daemon "$ERR"
# The first failure, then about 10 passes more (200 ms each).
hc_wait_until 10 grep -q 'cannot write metrics file' "$ERR"
sleep 2
if alive "$DPID"; then hc_ok "runs on without its metrics directory"; else hc_not_ok "died without its metrics directory"; fi
assert_eq "the error is logged once in 10 passes" "$(grep -c 'cannot write metrics file' "$ERR")" 1
assert_cmd "the error names the file and the reason" \
	grep -qF "cannot write metrics file $MISSING/metrics.prom: No such file or directory" "$ERR"
mkdir -m 0755 "$MISSING"
hc_wait_until 10 test -s "$MISSING/metrics.prom"
assert_cmd "written once the directory exists" test -s "$MISSING/metrics.prom"
assert_cmd "and the log says so" grep -q 'written again' "$ERR"

# A regular file where the directory should be, through a reload.
: >"$RUN/notadir"
write_config "$RUN/notadir/metrics.prom"
kill -HUP "$DPID"
errors_at_least() { (($(grep -c 'cannot write metrics file' "$ERR") >= $1)); }
hc_wait_until 10 errors_at_least 2
sleep 2 # about 10 passes more
if alive "$DPID"; then hc_ok "runs on with a file for a metrics directory"; else hc_not_ok "died with a file for a metrics directory"; fi
assert_eq "that error is logged once too" "$(grep -c 'cannot write metrics file' "$ERR")" 2
assert_cmd "it names ENOTDIR" grep -q 'Not a directory' "$ERR"
stop_daemon

stop_workload hot
assert_eq "workload pattern intact at exit" "$?" 0
if ((HC_FAIL)); then
	hc_log "first snapshot:"
	grep -v '^#' "$HC_TMP/snap1.prom" | sed 's/^/#   /'
	hc_log "daemon stderr:"
	sed 's/^/#   /' "$HC_TMP/daemon.err" "$ERR"
fi
hc_summary
