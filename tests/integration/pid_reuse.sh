#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Real PID reuse (issue 11, defect 2). A PID namespace whose pid_max leaves a
# pool of 200 PIDs (pid_max is per namespace since 6.14; after the first
# wrap the kernel allocates from 300 up), and a fork storm in it: shell loops
# that each run one short sleep (10-50 ms) after another, so every sample
# the daemon takes finds PIDs that a different process holds now. The daemon
# runs inside the namespace too, so its /proc is that of the namespace (and
# it can only ever act on this test's own processes), with
# scan_interval_ms = 10 and full_rescan_s = 1.
#
# On a small machine the storm overloads the CPUs (68 loops of fork and
# exec every 10-50 ms; on this 2-vCPU machine a nominal 8 s round took 157 s
# with no daemon at all, 205 s with it, the daemon using 0.7% of a CPU), and
# the namespace overran its deadline: timeout's SIGTERM to the process group
# then stopped the daemon (reported as "not alive") and killed an awk
# mid-step ("sleep: invalid time interval ''"). The deadline is now its own
# assertion, the ramp forks nothing but the loops, and each round's end time
# is logged. The storm is not made gentler: at nice 19 the test passed here
# but so did the old code, ASan silent. A PID comes back only after the ~60
# free ones were handed out, so one sample must span that many forks: the
# storm finds the bug by starving the daemon, and needs a redesign to do so
# in bounded time on a small machine (issue 17, not done).
#
# engine_sample() once reserved table slots for new PIDs only, not for
# recycled ones, and wrote past the table when two or more PIDs were
# recycled with the table at capacity. Each of ROUNDS rounds starts a new
# daemon (a new table) and adds loops one by one, so that the table's size
# crosses 32, 64 and 128 entries while PIDs are recycled all around it; the
# old code was caught by ASan in every round. Asserts:
#  - pid_max can be set in the namespace, and PIDs really were reused;
#  - the daemon is alive after each round, made many passes, and exits 0 on
#    SIGTERM;
#  - no failed pass and no sanitizer report in its log (in the sanitize
#    stage reports go to files and abort the daemon: it is then not alive).
# Needs root; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

STORM_S=${HC_PID_REUSE_SECONDS:-24}
ROUNDS=3
POOL=200 # PIDs 300..499 after the first wrap: room for the largest phase

require_root
require_exec "$HC_BIN"
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
bin=$1 conf=$2 log=$3 result=$4 step=$5 pool=$6 rounds=$7
if ! echo $((300 + pool)) >/proc/sys/kernel/pid_max; then
	echo "pid_max=fail" >"$result"
	exit 1
fi
echo "pid_max=ok" >"$result"
# The ramp waits with read -t on a FIFO it holds open for writing itself
# (so it never reads EOF): a fork per step would wait behind the storm.
mkfifo "$result.tick" && exec {tick}<>"$result.tick"
# The daemon, behind a wrapper that stays alive as long as it runs, passes on
# SIGTERM and writes its exit status to $result.rc.
run_daemon()
{
	local d rc termed=0
	env -u NOTIFY_SOCKET -u JOURNAL_STREAM -u WATCHDOG_USEC "$bin" --config "$conf" -v >>"$log" 2>&1 &
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
storm()
{
	while :; do
		sleep "0.0$((1 + RANDOM % 5))"
	done
}
# Each round: a new daemon (a new table, which only ever grows), then loops
# added one by one so that its size crosses 32, 64 and 128 entries while
# PIDs are being recycled all around it.
alive=1 bad_exit=0
for ((round = 0; round < rounds; round++)); do
	rm -f "$result.rc"
	run_daemon &
	daemon=$!
	for ((i = 0; i < 100; i++)); do
		(($(grep -c "started:" "$log") > round)) && break
		sleep 0.1
	done
	loops=()
	for ((i = 0; i < 68; i++)); do
		storm &
		loops+=($!)
		read -r -t "$step" -u "$tick" _
	done
	kill "${loops[@]}" 2>/dev/null
	wait "${loops[@]}" 2>/dev/null
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
# Pigeonhole: 2 x pool + 1 processes in a row in a pool of pool PIDs.
declare -A seen=()
reused=0
for ((i = 0; i < 2 * pool + 1; i++)); do
	p=$(sh -c "echo \$\$")
	[[ -n ${seen[$p]} ]] && reused=1
	seen[$p]=1
done
echo "reused=$reused" >>"$result"
echo "alive=$alive" >>"$result"
echo "exit=$bad_exit" >>"$result"'
# Each round adds 68 loops, one every STEP seconds.
STEP=$(awk -v s="$STORM_S" -v r="$ROUNDS" 'BEGIN { printf "%.3f", s / r / 68 }')
DEADLINE=$(hc_scaled $((STORM_S + 60)))
start=$SECONDS
timeout "$DEADLINE" unshare --pid --fork --mount-proc --kill-child \
	bash -c "$INNER" inner "$HC_BIN" "$CONF" "$LOG" "$RESULT" "$STEP" "$POOL" "$ROUNDS"
rc=$?
hc_log "namespace: $(tr '\n' ' ' <"$RESULT" 2>/dev/null)exit $rc after $((SECONDS - start)) s"
res() { sed -n "s/^$1=//p" "$RESULT" 2>/dev/null; }

# timeout's SIGTERM reaches the whole process group, the daemon too: a
# namespace that overran would show as a daemon that died.
assert_eq "the namespace ran all $ROUNDS rounds within ${DEADLINE} s" "$rc" 0
assert_eq "pid_max set inside the PID namespace" "$(res pid_max)" ok
assert_eq "PIDs were reused in the namespace" "$(res reused)" 1
assert_eq "daemon alive after every round of the fork storm" "$(res alive)" 1
assert_eq "daemon exits 0 on SIGTERM after every round" "$(res exit)" 0
passes=$(grep -c 'pass [0-9]*: collapsed' "$LOG")
hc_log "daemon passes: $passes"
assert_ge "daemon passes during the storm" "$passes" $((STORM_S * 5))
assert_eq "no failed pass in the log" "$(grep -c 'pass [0-9]* failed' "$LOG")" 0
assert_eq "no sanitizer report in the log" "$(grep -c -E 'ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:' "$LOG")" 0
if [[ $(res alive) != 1 ]]; then
	hc_log "daemon log (tail):"
	tail -n 30 "$LOG" | sed 's/^/#   /'
fi
hc_summary
