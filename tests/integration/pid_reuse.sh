#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Real PID reuse (issue 11, defect 2; issue 17). A PID namespace with a
# pool of 200 PIDs (pid_max is per namespace since 6.14; after the first
# wrap the kernel allocates from 300 up), the daemon inside it (so its /proc
# is the namespace's and it can only act on this test's processes) with
# scan_interval_ms = 10 and full_rescan_s = 1, perf_event_open denied (so
# every pass is a full sample, below), and hc_pid_recycler, which
# reuses PIDs on purpose: every STEP_MS it kills 3 of its long-lived
# children and at once forks 4, the first 3 getting exactly the killed PIDs
# back and 1 new, so its count grows from 16 to 140, crossing the table
# sizes 32, 64 and 128; at a count of SIZE - 1 the step brings 2 new ones.
#
# engine_sample() once reserved table slots for new PIDs only, not for
# recycled ones, and wrote past the table when two or more PIDs were
# recycled with the table at capacity. A quiet pass asks for count + 1
# slots, so the table (doubling from 16) always has one spare: the old code
# wrote past it only in a pass that saw >= 2 recycled PIDs and >= 2 new
# ones with the count one below a size (31, 63, 127 processes before it).
# The recycler counts the namespace's processes as the daemon's sample
# does and brings exactly that at each size ("landed"); a pass that splits
# a step (it takes well under a millisecond) misses one, so 3 rounds. The test used to find that with a
# fork storm (68 shell loops of fork+exec), which on a 2-vCPU machine took
# 157 s for a nominal 8 s round and found the bug only by starving the
# daemon: deliberate reuse costs a few forks per step and no load.
# Each of ROUNDS rounds starts a new daemon (a new table). Asserts:
#  - pid_max can be set in the namespace, and the recycler got the killed
#    PIDs back in most steps;
#  - the daemon is alive after each round, made many passes, and exits 0 on
#    SIGTERM;
#  - no failed pass and no sanitizer report in its log (in the sanitize
#    stage reports go to files and abort the daemon: it is then not alive).
# Needs root; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

ROUNDS=3
POOL=200 # PIDs 300..499 after the first wrap
FROM=16 TO=140 STEP_MS=25 SIZES="32 64 128"

require_root
require_exec "$HC_BIN"
require_exec "$HC_PID_RECYCLER"
require_exec "$HC_NO_PERF"
require_cmd unshare

CONF=$HC_TMP/hugecollapsed.conf
printf '[daemon]\nscan_interval_ms = 10\nfull_rescan_s = 1\nmetrics_file =\n' >"$CONF"
chmod 0644 "$CONF"
LOG=$HC_TMP/daemon.log
RESULT=$HC_TMP/result

# Runs as PID 1 of the new namespace: when it exits, the kernel kills every
# process left in the namespace, so nothing outlives the test.
# shellcheck disable=SC2016 # expanded by the inner shell
INNER='
bin=$1 conf=$2 log=$3 result=$4 recycler=$5 pool=$6 rounds=$7 from=$8 to=$9 step=${10} noperf=${11} sizes=${12}
# A /proc of this namespace. Private first, so the new mount does not
# propagate out (unshare --mount-proc would make / private, which fails
# where / is no mount point, as in a chroot).
if ! mount --make-rprivate /proc || ! mount -t proc proc /proc; then
	echo "proc=fail" >"$result"
	exit 1
fi
if ! echo $((300 + pool)) >/proc/sys/kernel/pid_max; then
	echo "pid_max=fail" >"$result"
	exit 1
fi
echo "pid_max=ok" >"$result"
: >>"$log"
# Wraps the PID cursor once, so that PIDs come from 300..pid_max-1.
for ((i = 0; i < 300; i++)); do /bin/true; done
# The daemon, behind a wrapper that stays alive as long as it runs, passes on
# SIGTERM and writes its exit status to $result.rc.
run_daemon()
{
	local d rc termed=0
	env -u NOTIFY_SOCKET -u JOURNAL_STREAM -u WATCHDOG_USEC "$noperf" "$bin" --config "$conf" -v >>"$log" 2>&1 &
	d=$!
	trap "termed=1; kill -TERM $d" TERM
	wait "$d"
	rc=$?
	if ((termed && rc > 128)); then # wait was interrupted by the trap
		wait "$d"
		rc=$?
	fi
	echo "$rc" >"$result.rc"
}
alive=1 bad_exit=0
for ((round = 0; round < rounds; round++)); do
	rm -f "$result.rc"
	run_daemon &
	daemon=$!
	for ((i = 0; i < 100; i++)); do
		(($(grep -c "started:" "$log") > round)) && break
		sleep 0.1
	done
	sleep 0.2 # a few passes with the table as it starts
	# shellcheck disable=SC2086 # sizes is a list
	"$recycler" "$from" "$to" "$step" $sizes >>"$result.recycler" || echo "recycler=fail" >>"$result"
	sleep 0.2
	echo "round$round=${SECONDS}s" >>"$result"
	# Not kill -0: in this small pool, the PID of a daemon that died
	# soon belongs to another process. Its wrapper says.
	if [[ -e $result.rc ]]; then
		alive=0
		wait "$daemon"
		continue
	fi
	kill -TERM "$daemon"
	wait "$daemon"
	rc=$(cat "$result.rc" 2>/dev/null)
	[[ $rc == 0 ]] || bad_exit=${rc:-unknown}
done
echo "alive=$alive" >>"$result"
echo "exit=$bad_exit" >>"$result"'
DEADLINE=$(hc_scaled 90)
start=$SECONDS
timeout "$DEADLINE" unshare --pid --fork --mount --propagation unchanged --kill-child \
	bash -c "$INNER" inner "$HC_BIN" "$CONF" "$LOG" "$RESULT" "$HC_PID_RECYCLER" "$POOL" "$ROUNDS" "$FROM" "$TO" "$STEP_MS" "$HC_NO_PERF" "$SIZES"
rc=$?
hc_log "namespace: $(tr '\n' ' ' <"$RESULT" 2>/dev/null)exit $rc after $((SECONDS - start)) s"
hc_log "recycler: $(tr '\n' ' ' <"$RESULT.recycler" 2>/dev/null)"
res() { sed -n "s/^$1=//p" "$RESULT" 2>/dev/null; }
# Sums one field of the recycler's lines over the rounds.
rsum() { grep -o "$1=[0-9]*" "$RESULT.recycler" 2>/dev/null | awk -F= '{ s += $2 } END { print s + 0 }'; }

# timeout's SIGTERM reaches the whole process group, the daemon too: a
# namespace that overran would show as a daemon that died.
assert_eq "the namespace ran all $ROUNDS rounds within ${DEADLINE} s" "$rc" 0
assert_eq "the namespace mounted its own /proc" "$(res proc)" ""
assert_eq "pid_max set inside the PID namespace" "$(res pid_max)" ok
assert_eq "the recycler ran every round" "$(res recycler)" ""
steps=$(rsum steps)
landed=$(rsum landed)
nsizes=$(wc -w <<<"$SIZES")
assert_eq "steps of 2 new processes at a count of SIZE - 1 ($SIZES)" "$landed" $((ROUNDS * nsizes))
want=$((ROUNDS * (TO - FROM) - landed))
assert_eq "recycler steps" "$steps" "$want"
# A miss is a step where another process (the shell, the daemon's wrapper)
# took one of the PIDs: rare, the namespace forks nothing else meanwhile.
assert_ge "steps that got the killed PIDs back (of $steps)" "$(rsum hits)" $((steps * 9 / 10))
# hc_no_perf denies perf_event_open: without the page-fault doorbell every
# pass takes a full sample (engine_sample), so every pass compares the
# whole table with the new PIDs; with it, idle processes would be sampled
# only every few seconds and seldom at a crossing.
assert_eq "every daemon had no doorbell (every pass a full sample)" "$(grep -c 'no page-fault doorbell' "$LOG")" "$ROUNDS"
assert_eq "daemon alive after every round of recycling" "$(res alive)" 1
assert_eq "daemon exits 0 on SIGTERM after every round" "$(res exit)" 0
passes=$(grep -c 'pass [0-9]*: collapsed' "$LOG")
hc_log "daemon passes: $passes"
# Each step sleeps STEP_MS: at least 2 passes per step (one per 10 ms).
assert_ge "daemon passes while PIDs were recycled" "$passes" $((2 * want))
assert_eq "no failed pass in the log" "$(grep -c 'pass [0-9]* failed' "$LOG")" 0
assert_eq "no sanitizer report in the log" "$(grep -c -E 'ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:' "$LOG")" 0
if [[ $(res alive) != 1 ]]; then
	hc_log "daemon log (tail):"
	tail -n 30 "$LOG" | sed 's/^/#   /'
fi
hc_summary
