#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Writes audit: under strace, over a few passes in each relevant config, the
# daemon opens for writing (O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, creat),
# renames, unlinks or truncates only:
#  - metrics_file and its temporary file beside it (metrics_file.tmp.PID),
#    renamed or exchanged with it;
#  - the khugepaged sysfs knobs, and only with khugepaged = idle;
#  - state_file, its temporary file (state_file.tmp) and its lock
#    (state_file.lock), and only with khugepaged = idle, which records the
#    original values there first;
#  - /proc/PID/clear_refs, and only with access_sampling = yes;
# and `--once` writes nothing at all. Failed attempts count too.
# The daemon is confined to this test's cgroup (enable = no elsewhere), so
# other people's processes are never touched. khugepaged = off is left out:
# it switches THP enabled to never for the whole machine while it runs.
# Needs root, strace and cgroup v2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_cmd strace
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_cgroup2
hc_daemon_prepare

THP=/sys/kernel/mm/transparent_hugepage
# strace run with -o FILE PROG blocks fatal signals, so it cannot be stopped
# itself: stop its child, the daemon, by PID, and strace follows.
STRACE_PID=
audit_cleanup()
{
	local child
	if [[ -n $STRACE_PID ]]; then
		for child in $(cat "/proc/$STRACE_PID/task/$STRACE_PID/children" 2>/dev/null); do
			kill -TERM "$child" 2>/dev/null
		done
		wait "$STRACE_PID" 2>/dev/null
	fi
	hc_policy_cleanup
}
trap audit_cleanup EXIT

hc_cgroup_create audit || {
	hc_not_ok "create a cgroup"
	hc_summary
	exit 1
}
if ! start_workload hot 16; then
	hc_not_ok "start the hot workload"
	hc_summary
	exit 1
fi
hc_cgroup_add audit "${WL_PID[hot]}"

METRICS=$HC_TMP/run/metrics.prom
STATE=$HC_TMP/run/khugepaged.state
mkdir -p "$HC_TMP/run"

# write_conf NAME DAEMON_KEYS COLLAPSE_KEYS: $HC_TMP/NAME/hugecollapsed.conf
# enabling only this test's cgroup.
write_conf()
{
	local dir=$HC_TMP/$1
	mkdir -p "$dir/cgroup.d"
	chmod 0755 "$dir" "$dir/cgroup.d"
	printf '[daemon]\nscan_interval_ms = 100\nmetrics_file = %s\nmetrics_interval_s = 1\nstate_file = %s\ncgroup_dir = %s\n%s\n' \
		"$METRICS" "$STATE" "$dir/cgroup.d" "$2" >"$dir/hugecollapsed.conf"
	printf '[collapse]\nenable = no\n' >>"$dir/hugecollapsed.conf"
	printf '[cgroup]\npath = %s\nenable = yes\nmin_referenced_pct = 0\n%s\n' "${CG_PATH[audit]}" "$3" \
		>"$dir/cgroup.d/audit.conf"
	chmod 0644 "$dir/hugecollapsed.conf" "$dir/cgroup.d/audit.conf"
}

TRACED='openat,open,creat,rename,renameat,renameat2,unlink,unlinkat,truncate,ftruncate,mkdir,mkdirat,link,linkat,symlink,symlinkat'

# writes_of LOG: one line per write-like call: "SYSCALL PATH [-> PATH2]".
# strace -y prints a dirfd as N</its/path>; a relative path is joined to it.
writes_of()
{
	perl -ne '
		next unless /^\d+\s+(\w+)\((.*)$/;
		my ($sc, $args) = ($1, $2);
		my @s;
		while ($args =~ /(?:\d+<([^>]*)>,\s*)?"((?:[^"\\]|\\.)*)"/g) {
			my ($dir, $p) = (defined $1 ? $1 : "", $2);
			$p = "$dir/$p" if $dir ne "" && $p !~ m{^/};
			push @s, $p;
		}
		if ($sc =~ /^(open|openat|creat)$/) {
			my ($flags) = $args =~ /"\s*,\s*([A-Z_|]+)/;
			next unless $sc eq "creat" || ($flags // "") =~ /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/;
			print "open $s[0]\n";
		} elsif ($sc =~ /^rename/ || $sc =~ /^(sym)?link/) {
			print "$sc $s[0] -> $s[1]\n";
		} else {
			print "$sc $s[0]\n";
		}
	' "$1"
}

# allowed MODE LINE: is this write allowed in MODE (keep/idle/sampling)?
allowed()
{
	local mode=$1 line=$2 m=${METRICS//./\\.}
	[[ $line =~ ^open\ $m(\.tmp\.[0-9]+)?$ ]] && return 0
	# rename() the first time, then an exchange of the names (renameat2
	# RENAME_EXCHANGE) and an unlink of the old file at the temporary name.
	[[ $line =~ ^rename(at2)?\ $m\.tmp\.[0-9]+\ -\>\ $m$ ]] && return 0
	[[ $line =~ ^unlink\ $m\.tmp\.[0-9]+$ ]] && return 0
	[[ $mode == idle && $line =~ ^open\ $THP/khugepaged/(scan_sleep_millisecs|pages_to_scan)$ ]] && return 0
	# idle records the original values first: state_file, through its
	# temporary file, removed at exit; and state_file.lock says who owns it.
	local st=${STATE//./\\.}
	[[ $mode == idle && $line =~ ^(open|unlink)\ $st(\.tmp)?$ ]] && return 0
	[[ $mode == idle && $line =~ ^open\ $st\.lock$ ]] && return 0
	[[ $mode == idle && $line =~ ^rename\ $st\.tmp\ -\>\ $st$ ]] && return 0
	[[ $mode == sampling && $line =~ ^open\ /proc/[0-9]+/clear_refs$ ]] && return 0
	return 1
}

# audit MODE ARGS…: runs the daemon under strace for ~2 s (or --once), then
# checks every write-like call against MODE's allowed set.
audit()
{
	local mode=$1 log=$HC_TMP/strace.$1.log i daemon=
	shift
	rm -f "$METRICS"
	strace -f -y -qq -s 8192 -e trace="$TRACED" -o "$log" env -u NOTIFY_SOCKET -u JOURNAL_STREAM \
		-u WATCHDOG_USEC "$HC_BIN" "$@" >"$HC_TMP/$mode.out" 2>&1 &
	STRACE_PID=$!
	if [[ " $* " != *" --once "* ]]; then
		for ((i = 0; i < 100; i++)); do
			daemon=$(cat "/proc/$STRACE_PID/task/$STRACE_PID/children" 2>/dev/null)
			[[ -n $daemon ]] && grep -q 'started:' "$HC_TMP/$mode.out" && break
			sleep 0.1
		done
		sleep 2
		kill -TERM "$daemon" 2>/dev/null
	fi
	wait "$STRACE_PID"
	local rc=$?
	STRACE_PID=
	assert_eq "$mode: exits 0" "$rc" 0
	((rc != 0)) && sed 's/^/#   /' "$HC_TMP/$mode.out" | tail -n 20

	writes_of "$log" >"$HC_TMP/writes.$mode"
	local bad
	bad=$(while read -r line; do allowed "$mode" "$line" || echo "$line"; done <"$HC_TMP/writes.$mode" | sort -u)
	if [[ -z $bad ]]; then
		hc_ok "$mode: every write is allowed ($(wc -l <"$HC_TMP/writes.$mode") write-like calls)"
	else
		hc_not_ok "$mode: writes outside the allowed set:"
		echo "$bad" | sed 's/^/#   /'
	fi
	# The parse saw the calls at all: count opens traced.
	assert_ge "$mode: strace saw opens" "$(grep -c 'open' "$log")" 1
}

count_of() # MODE REGEX: write-like calls of MODE matching REGEX
{
	grep -cE "$2" "$HC_TMP/writes.$1"
}

KNOBS0="$(thp_knob khugepaged/scan_sleep_millisecs) $(thp_knob khugepaged/pages_to_scan)"

write_conf keep 'khugepaged = keep' ''
audit keep --config "$HC_TMP/keep/hugecollapsed.conf" -v
assert_ge "keep: metrics written (opens of the temp file)" "$(count_of keep "^open $METRICS\.tmp")" 2
assert_ge "keep: metrics renamed into place" "$(count_of keep '^rename')" 2
assert_eq "keep: no sysfs write" "$(count_of keep '^open /sys/')" 0
assert_eq "keep: no clear_refs write" "$(count_of keep 'clear_refs')" 0
assert_eq "keep: no state_file write" "$(count_of keep 'khugepaged\.state')" 0

write_conf idle 'khugepaged = idle' ''
audit idle --config "$HC_TMP/idle/hugecollapsed.conf" -v
# Two knobs set at start and two restored at exit, unless one already held
# the value idle wants.
assert_ge "idle: khugepaged knobs written" "$(count_of idle "^open $THP/khugepaged/")" 2
assert_eq "idle: knobs restored by the daemon" \
	"$(thp_knob khugepaged/scan_sleep_millisecs) $(thp_knob khugepaged/pages_to_scan)" "$KNOBS0"
assert_ge "idle: the originals were recorded in state_file" "$(count_of idle "^rename .* -> $STATE\$")" 1
assert_cmd "idle: state_file removed at exit" test ! -e "$STATE"
assert_eq "idle: no clear_refs write" "$(count_of idle 'clear_refs')" 0

write_conf sampling 'khugepaged = keep' $'access_sampling = yes\naccess_sample_s = 1'
audit sampling --config "$HC_TMP/sampling/hugecollapsed.conf" -v
assert_ge "sampling: clear_refs written" "$(count_of sampling 'clear_refs')" 1
assert_eq "sampling: clear_refs only of the workload in our cgroup" \
	"$(grep -E 'clear_refs' "$HC_TMP/writes.sampling" | grep -vc "^open /proc/${WL_PID[hot]}/clear_refs$")" 0
assert_eq "sampling: no sysfs write" "$(count_of sampling '^open /sys/')" 0

# --once collapses but writes no file, not even metrics; with access
# sampling it may clear the referenced bits (allowed as in the daemon).
audit once --config "$HC_TMP/keep/hugecollapsed.conf" --once --pid "${WL_PID[hot]}" --sample-ms 100
assert_eq "once: no write-like call at all" "$(wc -l <"$HC_TMP/writes.once")" 0
audit sampling --config "$HC_TMP/sampling/hugecollapsed.conf" --once --pid "${WL_PID[hot]}" --sample-ms 100
# A dry run changes nothing: not even the referenced bits.
audit dryrun --config "$HC_TMP/sampling/hugecollapsed.conf" --once --dry-run --pid "${WL_PID[hot]}" --sample-ms 100
assert_eq "dry run with access_sampling: no write-like call at all" "$(wc -l <"$HC_TMP/writes.dryrun")" 0

# Self-check of the audit: a write it must flag is flagged.
if allowed keep "open /etc/passwd" || allowed keep "open /proc/1/clear_refs" || allowed sampling "open $THP/enabled"; then
	hc_not_ok "the audit would let a forbidden write through"
else
	hc_ok "the audit flags writes outside the allowed set"
fi

assert_eq "THP enabled is still madvise" "$(thp_knob enabled)" madvise
stop_workload hot
assert_eq "hot pattern intact at exit" "$?" 0
hc_summary
