#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The khugepaged hand-over survives a daemon that dies without restoring, on
# the real sysfs, with state_file in this test's temp dir:
#  - for khugepaged = off and = idle: start, SIGKILL, start again (the new
#    daemon takes the originals from state_file, not the knobs' current
#    values), SIGTERM: every knob is back at its value from before the first
#    start, and state_file is gone;
#  - SIGKILL (and SIGABRT, as a watchdog abort sends), then
#    `hugecollapsed --restore` alone restores and removes the file; a second
#    --restore has nothing to do and exits 0;
#  - killed in off, started in idle: off's knobs go back at once, idle's at
#    exit; killed in idle, started in keep: everything back at once;
#  - a reload (SIGHUP) from off to idle moves the record along, and a crash
#    after it is undone by --restore;
#  - a knob an administrator changed while no daemon ran keeps their value;
#  - while a daemon runs, --restore and a second daemon with the same
#    state_file are refused and change nothing;
#  - the shipped unit runs --restore as ExecStopPost=.
# The daemons collapse nothing (enable = no everywhere, no cgroup rule). The
# EXIT trap writes back any knob still changed. Needs root.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN"
require_no_other_daemon
ulimit -c 0 # the SIGABRT case must not leave a core file

SLEEP=khugepaged/scan_sleep_millisecs
PAGES=khugepaged/pages_to_scan
PMD=hugepages-2048kB/enabled
[[ -e $HC_THP/$PMD ]] || PMD=

BEFORE=$(thp_knobs)
hc_log "before: $BEFORE"

# conf MODE: a config that changes khugepaged only; prints its path.
conf()
{
	local f=$HC_TMP/$1/hugecollapsed.conf
	hc_write_config "$f" "scan_interval_ms = 1000
khugepaged = $1" ""
	echo "$f"
}
state_of() # CONF: its state_file
{
	echo "$(dirname "$1")/run/khugepaged.state"
}

# kill_daemon SIGNAL: the crash; reaps it.
kill_daemon()
{
	kill "-$1" "$HC_DAEMON_PID"
	wait "$HC_DAEMON_PID" 2>/dev/null
	HC_DAEMON_PID=
}

# changed_as MODE DESC: asserts the knobs are what MODE sets.
changed_as()
{
	case $1 in
	off)
		assert_eq "$2: enabled is never" "$(thp_knob enabled)" never
		[[ -n $PMD ]] && assert_eq "$2: $PMD is never" "$(thp_knob "$PMD")" never
		;;
	idle)
		assert_eq "$2: idle knobs set" "$(thp_knob $SLEEP) $(thp_knob $PAGES)" "4294967295 1"
		;;
	esac
}

### SIGKILL, restart, SIGTERM.
for mode in off idle; do
	CONF=$(conf $mode)
	STATE=$(state_of "$CONF")
	hc_daemon_start "$CONF" || {
		hc_not_ok "$mode: daemon starts"
		continue
	}
	changed_as $mode "$mode, first daemon"
	assert_cmd "$mode: state_file written" test -f "$STATE"
	assert_eq "$mode: state_file is root's, 0600" "$(stat -c '%u %a' "$STATE")" "0 600"
	assert_cmd "$mode: state_file records mode=$mode" grep -qx "mode=$mode" "$STATE"
	record=$(cat "$STATE")
	hc_log "$mode: state_file: $(grep -v '^#' "$STATE" | tr '\n' ' ')"

	# One owner per state_file: neither --restore nor a second daemon may
	# put the knobs back under the running one.
	out=$("$HC_BIN" --restore --config "$CONF" 2>&1)
	assert_eq "$mode: --restore while the daemon runs exits 1" "$?" 1
	assert_cmd "$mode: ... naming the daemon that owns state_file" \
		grep -q "in use by another hugecollapsed (pid $HC_DAEMON_PID)" <<<"$out"
	out=$(timeout "$(hc_scaled 20)" env -u NOTIFY_SOCKET "$HC_BIN" --config "$CONF" 2>&1)
	assert_eq "$mode: a second daemon with the same state_file exits 1" "$?" 1
	assert_cmd "$mode: ... naming the first" grep -q "in use by another hugecollapsed (pid $HC_DAEMON_PID)" <<<"$out"
	changed_as $mode "$mode, after both were refused"
	assert_eq "$mode: state_file unchanged by them" "$(cat "$STATE")" "$record"

	kill_daemon KILL
	changed_as $mode "$mode, after SIGKILL (nothing restored, as in a crash)"
	assert_cmd "$mode: state_file left by the killed daemon" test -f "$STATE"

	hc_daemon_start "$CONF" || {
		hc_not_ok "$mode: second daemon starts"
		continue
	}
	changed_as $mode "$mode, second daemon"
	assert_cmd "$mode: second daemon says it took the originals from state_file" \
		grep -q "did not exit cleanly (khugepaged = $mode)" "$HC_DAEMON_LOG"
	assert_eq "$mode: second daemon kept the first one's originals" "$(cat "$STATE")" "$record"

	hc_daemon_stop
	assert_eq "$mode: second daemon exits 0 on SIGTERM" "$?" 0
	assert_eq "$mode: every knob back at its value from before the first start" "$(thp_knobs)" "$BEFORE"
	assert_cmd "$mode: state_file removed" test ! -e "$STATE"
	hc_thp_restore
done

### A crash, then --restore alone.
for sig in KILL ABRT; do
	mode=off
	[[ $sig == ABRT ]] && mode=idle
	CONF=$(conf $mode)
	STATE=$(state_of "$CONF")
	hc_daemon_start "$CONF" || {
		hc_not_ok "SIG$sig: daemon starts"
		continue
	}
	kill_daemon $sig
	changed_as $mode "$mode, after SIG$sig"
	out=$("$HC_BIN" --restore --config "$CONF" 2>&1)
	assert_eq "--restore after SIG$sig exits 0" "$?" 0
	assert_eq "--restore after SIG$sig: every knob back" "$(thp_knobs)" "$BEFORE"
	assert_cmd "--restore after SIG$sig: state_file removed" test ! -e "$STATE"
	grep -q 'restored' <<<"$out" || hc_log "--restore said: $out"
	out=$("$HC_BIN" --restore --config "$CONF" 2>&1)
	assert_eq "a second --restore exits 0" "$?" 0
	assert_cmd "a second --restore has nothing to do" grep -q "nothing to restore" <<<"$out"
	hc_thp_restore
done

### Killed in off, started in idle; killed in idle, started in keep.
OFF_CONF=$(conf off)
IDLE_CONF=$(conf idle)
KEEP_CONF=$(conf keep)
# One state_file for the three configs, as one installed daemon has.
sed -i "s|^state_file = .*|state_file = $HC_TMP/run/khugepaged.state|" "$OFF_CONF" "$IDLE_CONF" "$KEEP_CONF"
STATE=$HC_TMP/run/khugepaged.state
if hc_daemon_start "$OFF_CONF"; then
	kill_daemon KILL
	if hc_daemon_start "$IDLE_CONF"; then
		assert_eq "off -> idle: enabled back at once" "$(thp_knob enabled)" "${HC_THP_SAVED[enabled]}"
		[[ -n $PMD ]] && assert_eq "off -> idle: $PMD back at once" "$(thp_knob "$PMD")" "${HC_THP_SAVED[$PMD]}"
		changed_as idle "off -> idle"
		assert_cmd "off -> idle: state_file now records idle" grep -qx "mode=idle" "$STATE"
		kill_daemon KILL
		if hc_daemon_start "$KEEP_CONF"; then
			assert_eq "idle -> keep: every knob back at once" "$(thp_knobs)" "$BEFORE"
			assert_cmd "idle -> keep: state_file removed" test ! -e "$STATE"
			hc_daemon_stop
			assert_eq "idle -> keep: exits 0" "$?" 0
		else
			hc_not_ok "keep daemon starts"
		fi
	else
		hc_not_ok "idle daemon starts"
	fi
else
	hc_not_ok "off daemon starts"
fi
assert_eq "after the mode changes: every knob back" "$(thp_knobs)" "$BEFORE"
hc_thp_restore

### A reload from off to idle (SIGHUP), then a crash: the record follows the
### reload, and --restore puts back idle's knobs.
RELOAD_CONF=$(conf reload)
sed -i 's/^khugepaged = .*/khugepaged = off/' "$RELOAD_CONF"
STATE=$(state_of "$RELOAD_CONF")
if hc_daemon_start "$RELOAD_CONF"; then
	changed_as off "reload: before"
	sed -i 's/^khugepaged = .*/khugepaged = idle/' "$RELOAD_CONF"
	kill -HUP "$HC_DAEMON_PID"
	for ((i = 0; i < 50; i++)); do
		grep -q 'reloaded' "$HC_DAEMON_LOG" && break
		sleep 0.1
	done
	assert_cmd "reload: the daemon reloaded" grep -q 'reloaded' "$HC_DAEMON_LOG"
	assert_eq "reload: enabled back" "$(thp_knob enabled)" "${HC_THP_SAVED[enabled]}"
	changed_as idle "reload: after"
	assert_cmd "reload: state_file records idle" grep -qx "mode=idle" "$STATE"
	assert_cmd "reload: state_file has idle's original pages_to_scan" \
		grep -qx "$PAGES=${HC_THP_SAVED[$PAGES]}" "$STATE"
	assert_eq "reload: state_file no longer lists enabled" "$(grep -c '^enabled=' "$STATE")" 0
	kill_daemon KILL
	"$HC_BIN" --restore --config "$RELOAD_CONF" >/dev/null 2>&1
	assert_eq "reload, SIGKILL, --restore: exits 0" "$?" 0
	assert_eq "reload, SIGKILL, --restore: every knob back" "$(thp_knobs)" "$BEFORE"
else
	hc_not_ok "reload: daemon starts"
fi
hc_thp_restore

### An administrator sets pages_to_scan while no daemon runs: theirs wins.
ADMIN=2048
[[ ${HC_THP_SAVED[$PAGES]} == "$ADMIN" ]] && ADMIN=1024
if hc_daemon_start "$IDLE_CONF"; then
	kill_daemon KILL
	echo "$ADMIN" >"$HC_THP/$PAGES"
	if hc_daemon_start "$IDLE_CONF"; then
		changed_as idle "after the administrator's change"
		assert_cmd "the daemon names the knob someone else set" grep -q "$PAGES is $ADMIN, set by someone else" \
			"$HC_DAEMON_LOG"
		hc_daemon_stop
		assert_eq "administrator's pages_to_scan is what comes back" "$(thp_knob $PAGES)" "$ADMIN"
		assert_eq "scan_sleep_millisecs back at its original" "$(thp_knob $SLEEP)" "${HC_THP_SAVED[$SLEEP]}"
		assert_cmd "state_file removed" test ! -e "$STATE"
	else
		hc_not_ok "idle daemon starts again"
	fi
else
	hc_not_ok "idle daemon starts"
fi
echo "${HC_THP_SAVED[$PAGES]}" >"$HC_THP/$PAGES" # the test's own change, undone

### The unit restores after any end of the daemon.
assert_cmd "the unit runs --restore as ExecStopPost=" \
	grep -qE '^ExecStopPost=/usr/sbin/hugecollapsed --restore( |$)' "$HC_SRC/systemd/hugecollapsed.service"
assert_cmd "the unit keeps its runtime directory across restarts" \
	grep -qx 'RuntimeDirectoryPreserve=restart' "$HC_SRC/systemd/hugecollapsed.service"

assert_eq "all knobs as they were at the start" "$(thp_knobs)" "$BEFORE"
hc_summary
