#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# khugepaged = keep | idle | off, on the real sysfs:
#  - before, while the daemon runs (after its "started" line) and after it
#    exits on SIGTERM, the THP knobs are what each mode promises, and the
#    end state equals the start state exactly;
#  - off: the khugepaged kernel thread exits (and comes back afterwards),
#    and MADV_COLLAPSE still works: a hot workload is collapsed while
#    enabled=never;
#  - idle, with stdout and stderr a pipe whose reader has gone: the daemon
#    lives on (no SIGPIPE) and restores at SIGTERM;
#  - a start-up failure after the knobs were written (the daemon runs out of
#    file descriptors: RLIMIT_NOFILE) leaves them restored;
#  - a failure of the apply itself (--sysfs-thp pointing at a fake tree
#    whose second knob is a link to the read-only hpage_pmd_size, so opening
#    it for writing fails with EACCES even for root) puts the first knob back
#    and leaves the real sysfs alone.
# The EXIT trap writes back any knob still changed. Needs root; exits 77
# otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_cgroup2
require_cmd prlimit timeout
require_exec "$HC_BIN" "$HC_WORKLOAD"
hc_daemon_prepare

SLEEP=khugepaged/scan_sleep_millisecs
PAGES=khugepaged/pages_to_scan
PMD=hugepages-2048kB/enabled
[[ -e $HC_THP/$PMD ]] || PMD=

khugepaged_threads()
{
	ps -eo ppid=,comm= | awk '$1 == 2 && $2 == "khugepaged"' | wc -l
}

# wait_threads N: up to 5 s for N khugepaged kernel threads.
wait_threads()
{
	local i
	for ((i = 0; i < 50; i++)); do
		(($(khugepaged_threads) == $1)) && return 0
		sleep 0.1
	done
	return 1
}

BEFORE=$(thp_knobs)
declare -A KNOB0=()
for k in "${HC_THP_KNOBS[@]}"; do
	KNOB0[$k]=$(thp_knob "$k")
done
hc_log "before: $BEFORE"
[[ ${KNOB0[enabled]} == madvise && ${KNOB0[$PAGES]} == 4096 && ${KNOB0[$SLEEP]} == 10000 ]] ||
	hc_log "note: not the expected start state (enabled=madvise, pages_to_scan=4096, scan_sleep_millisecs=10000)"
THREADS0=$(khugepaged_threads)

hc_cgroup_create modes || exit 1
start_workload hot 32 hot --hot-interval-ms 10 || exit 1
hc_cgroup_add modes "${WL_PID[hot]}" || exit 1

for mode in keep idle off; do
	CONF=$HC_TMP/$mode/hugecollapsed.conf
	hc_write_config "$CONF" "scan_interval_ms = 500
khugepaged = $mode" "max_ptes_none = 255"
	hc_write_rule "$CONF" modes ""
	if ! hc_daemon_start "$CONF"; then
		hc_not_ok "$mode: daemon starts"
		continue
	fi
	during=$(thp_knobs)
	hc_log "$mode: during: $during"
	case $mode in
	keep)
		assert_eq "keep: nothing changed while running" "$during" "$BEFORE"
		;;
	idle)
		assert_eq "idle: scan_sleep_millisecs is the maximum" "$(thp_knob $SLEEP)" 4294967295
		assert_eq "idle: pages_to_scan is 1" "$(thp_knob $PAGES)" 1
		assert_eq "idle: enabled unchanged" "$(thp_knob enabled)" "${KNOB0[enabled]}"
		;;
	off)
		assert_eq "off: enabled is never" "$(thp_knob enabled)" never
		[[ -n $PMD ]] && assert_eq "off: $PMD is never" "$(thp_knob "$PMD")" never
		assert_eq "off: scan knobs untouched" "$(thp_knob $PAGES) $(thp_knob $SLEEP)" \
			"${KNOB0[$PAGES]} ${KNOB0[$SLEEP]}"
		wait_threads 0
		assert_eq "off: no khugepaged kernel thread (ppid 2) left" "$(khugepaged_threads)" 0
		# MADV_COLLAPSE ignores enabled=never: the hot workload is collapsed.
		for ((i = 0; i < 100; i++)); do
			(($(wl_pmd_pct hot) >= 90)) && break
			sleep 0.1
		done
		assert_ge "off: hot workload collapsed while enabled=never (%)" "$(wl_pmd_pct hot)" 90
		;;
	esac
	hc_daemon_stop
	assert_eq "$mode: daemon exits 0 on SIGTERM" "$?" 0
	assert_eq "$mode: every knob restored exactly after SIGTERM" "$(thp_knobs)" "$BEFORE"
	if [[ $mode == off ]]; then
		wait_threads "$THREADS0"
		assert_eq "off: khugepaged thread count back after exit" "$(khugepaged_threads)" "$THREADS0"
	fi
	grep -q 'khugepaged: restore' "$HC_DAEMON_LOG" && hc_log "$mode: $(grep -c 'khugepaged: restored' "$HC_DAEMON_LOG") knob(s) restored"
done
### stdout and stderr a pipe whose reader has gone (a pager that quit):
### each later write fails with EPIPE and must not kill the daemon
### (SIGPIPE) with the knobs changed. SIGHUP makes it write a line.
CONF=$HC_TMP/idle/hugecollapsed.conf
mkfifo "$HC_TMP/pipe"
head -c 1 <"$HC_TMP/pipe" >/dev/null &
reader=$!
env -u NOTIFY_SOCKET -u JOURNAL_STREAM "$HC_BIN" --config "$CONF" -v >"$HC_TMP/pipe" 2>&1 &
dpid=$!
HC_EXTRA_PIDS+=("$dpid")
wait "$reader"
idle_knobs_set() { [[ $(thp_knob $PAGES) == 1 ]]; }
hc_wait_until 10 idle_knobs_set
assert_eq "closed pipe: idle knobs set" "$(thp_knob $PAGES)" 1
kill -HUP "$dpid"
sleep 1
assert_cmd "closed pipe: the daemon lives on after writing to it" kill -0 "$dpid"
kill -TERM "$dpid"
wait "$dpid"
assert_eq "closed pipe: exits 0 on SIGTERM" "$?" 0
assert_eq "closed pipe: every knob restored" "$(thp_knobs)" "$BEFORE"
hc_thp_restore

stop_workload hot
assert_eq "hot pattern intact at exit" "$?" 0

### A start-up failure after khugepaged_apply: too few file descriptors for
### the engine or the event loop. Which limit fails where depends on the
### libraries; try a few and require at least one failure after the apply.
after_apply=0
for mode in idle off; do
	CONF=$HC_TMP/$mode/hugecollapsed.conf
	for n in 4 5 6 7; do
		log=$HC_TMP/nofile.$mode.$n.log
		# A daemon that does start is stopped after 2 s (SIGTERM).
		env -u NOTIFY_SOCKET -u JOURNAL_STREAM timeout -s TERM 2 \
			prlimit --nofile=$n:$n "$HC_BIN" --config "$CONF" >"$log" 2>&1
		rc=$?
		if grep -q 'khugepaged: set' "$log" && grep -q 'cannot start' "$log"; then
			after_apply=$((after_apply + 1))
			assert_eq "$mode, nofile $n: start-up failure exits 1" "$rc" 1
			assert_eq "$mode, nofile $n: knobs restored after a start-up failure" "$(thp_knobs)" "$BEFORE"
			if grep -q 'cannot restore' "$log"; then
				hc_log "$(grep 'cannot restore' "$log")"
			fi
		else
			assert_eq "$mode, nofile $n (rc $rc): knobs restored" "$(thp_knobs)" "$BEFORE"
		fi
		hc_thp_restore # so one failure does not cascade into the next case
	done
done
assert_ge "a start-up failure after khugepaged_apply was provoked" "$after_apply" 1

### A failed apply, on a fake sysfs tree: the second knob cannot be written.
FAKE=$HC_TMP/fake-thp
mkdir -p "$FAKE/khugepaged" "$FAKE/hugepages-2048kB"
for mode in idle off; do
	rm -f "$FAKE/khugepaged/"* "$FAKE/enabled" "$FAKE/hugepages-2048kB/enabled"
	echo 10000 >"$FAKE/$SLEEP"
	echo "always [inherit] madvise never" >"$FAKE/hugepages-2048kB/enabled"
	if [[ $mode == idle ]]; then
		ln -s "$HC_THP/hpage_pmd_size" "$FAKE/$PAGES" # written second
		echo "always [madvise] never" >"$FAKE/enabled"
		first=$SLEEP
	else
		echo 4096 >"$FAKE/$PAGES"
		ln -s "$HC_THP/hpage_pmd_size" "$FAKE/enabled" # written second
		first=hugepages-2048kB/enabled
	fi
	first_before=$(cat "$FAKE/$first")
	CONF=$HC_TMP/$mode/hugecollapsed.conf
	log=$HC_TMP/fake.$mode.log
	env -u NOTIFY_SOCKET -u JOURNAL_STREAM timeout -s TERM 5 \
		"$HC_BIN" --config "$CONF" --sysfs-thp "$FAKE" >"$log" 2>&1
	rc=$?
	assert_eq "fake $mode: a failed apply exits 1" "$rc" 1
	assert_cmd "fake $mode: the failure names the file" grep -q "cannot set $FAKE/.*Permission denied" "$log"
	assert_cmd "fake $mode: the first knob was written, then restored" grep -q "khugepaged: restored $first" "$log"
	# sysfs replaces the whole value on write; a regular file must too.
	got=$(cat "$FAKE/$first")
	if [[ $got == *[* ]]; then got=${got#*[}; got=${got%%]*}; fi
	want=$first_before
	if [[ $want == *[* ]]; then want=${want#*[}; want=${want%%]*}; fi
	assert_eq "fake $mode: $first holds its old value again" "$got" "$want"
	assert_eq "fake $mode: real sysfs untouched" "$(thp_knobs)" "$BEFORE"
	if ((rc != 1)); then
		sed 's/^/#   /' "$log"
	fi
done

assert_eq "all knobs as they were at the start" "$(thp_knobs)" "$BEFORE"
hc_summary
