#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's sd_notify protocol, against a real NOTIFY_SOCKET listener
# (hc_notify_listen), in order:
#  a) READY=1, then "STATUS=pass N: …" with N rising, then WATCHDOG=1 at
#     least every WATCHDOG_USEC (2 s), every message from the daemon's pid;
#  b) SIGHUP: RELOADING=1 with MONOTONIC_USEC (the same datagram, a current
#     CLOCK_MONOTONIC), then READY=1;
#  c) SIGHUP with a broken file (unknown key): the old configuration stays
#     (passes keep coming every 200 ms although the broken file says 5000),
#     the log names FILE:LINE and the key; fixing it and SIGHUP works again;
#  d) SIGTERM: STOPPING=1 and exit status 0 within 2 s.
# The configuration disables collapsing ([collapse] enable = no): the daemon
# runs over the whole machine and must not change other tests' processes.
# Needs root; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

HC_NOTIFY_LISTEN=${HC_NOTIFY_LISTEN:-$HC_BUILD/tests/hc_notify_listen}

require_root
require_exec "$HC_BIN" "$HC_NOTIFY_LISTEN"

ETC=$HC_TMP/etc
CONF=$ETC/hugecollapsed.conf
SOCK=$HC_TMP/notify.sock
NLOG=$HC_TMP/notify.log
DERR=$HC_TMP/daemon.err
mkdir -m 0755 "$ETC"

# write_config INTERVAL_MS METRICS_FILE [EXTRA_DAEMON_LINE]: rewrites the
# file in place (root-owned, 0644, as the daemon insists).
write_config()
{
	{
		echo "[daemon]"
		echo "scan_interval_ms = $1"
		echo "metrics_file = $2"
		[[ -n ${3:-} ]] && echo "$3"
		echo "metrics_interval_s = 1"
		echo "[collapse]"
		echo "enable = no"
	} >"$CONF"
	chmod 0644 "$CONF"
}

# A process that has exited but is not reaped yet still answers kill -0.
alive()
{
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)
	[[ -n $state && $state != Z ]]
}

# The listener's lines are "TIME PID FIELD=VALUE".
# first_after FROM ERE: number of the first line after line FROM whose
# FIELD=VALUE matches ERE; empty if none.
first_after()
{
	awk -v from="$1" -v re="$2" '
		NR > from { f = $0; sub(/^[^ ]+ [^ ]+ /, "", f); if (f ~ re) { print NR; exit } }' "$NLOG"
}

# wait_after FROM ERE [SECONDS]: first_after, waiting up to SECONDS (10).
wait_after()
{
	local i n
	for ((i = 0; i < $(hc_scaled "${3:-10}") * 20; i++)); do
		n=$(first_after "$1" "$2")
		[[ -n $n ]] && echo "$n" && return 0
		sleep 0.05
	done
	return 1
}

count_after() # FROM ERE
{
	awk -v from="$1" -v re="$2" '
		NR > from { f = $0; sub(/^[^ ]+ [^ ]+ /, "", f); if (f ~ re) n++ } END { print n + 0 }' "$NLOG"
}

line_field() # LINE N: the Nth space-separated word of that line
{
	awk -v l="$1" -v n="$2" 'NR == l { print $n; exit }' "$NLOG"
}

lines() { wc -l <"$NLOG"; }

# Fails the remaining steps at once when a wait timed out.
need()
{
	if [[ -z $2 ]]; then
		hc_not_ok "$1: timed out"
		hc_log "notify log:"
		sed 's/^/#   /' "$NLOG" | tail -n 20
		hc_log "daemon stderr:"
		sed 's/^/#   /' "$DERR" | tail -n 20
		hc_summary
		exit 1
	fi
	hc_ok "$1 (line $2)"
}

### Start the listener, then the daemon with it as NOTIFY_SOCKET.
"$HC_NOTIFY_LISTEN" "$SOCK" >"$NLOG" 2>"$HC_TMP/listen.err" &
LPID=$!
HC_PIDS+=("$LPID")
for ((i = 0; i < 100; i++)); do [[ -S $SOCK ]] && break; sleep 0.05; done
if [[ ! -S $SOCK ]]; then
	hc_not_ok "hc_notify_listen bound $SOCK: $(cat "$HC_TMP/listen.err")"
	hc_summary
	exit 1
fi

write_config 200 "$HC_TMP/metrics.prom"
# sd_watchdog_enabled() only believes WATCHDOG_PID if it is our own pid:
# export the shell's $$ and exec, so it is the daemon's.
NOTIFY_SOCKET=$SOCK WATCHDOG_USEC=2000000 \
	bash -c 'export WATCHDOG_PID=$$; exec "$0" --config "$1"' "$HC_BIN" "$CONF" 2>"$DERR" &
DPID=$!
HC_PIDS+=("$DPID")
hc_log "daemon pid $DPID, listener pid $LPID"

### a) READY=1, STATUS=pass N:, WATCHDOG=1.
ready=$(wait_after 0 '^READY=1$' 20)
need "a: READY=1" "$ready"
first_pass=$(first_after 0 '^STATUS=pass [0-9]+:')
if [[ -n $first_pass ]]; then
	assert_ge "a: no STATUS=pass before READY=1" "$first_pass" "$ready"
fi
status=$(wait_after "$ready" '^STATUS=pass [0-9]+:')
need "a: STATUS=pass N: after READY=1" "$status"
# Three watchdog pings: at 1, 2, 3 s (half of WATCHDOG_USEC).
for ((i = 0; i < $(hc_scaled 10) * 10 && $(count_after "$ready" '^WATCHDOG=1$') < 3; i++)); do sleep 0.1; done
assert_ge "a: WATCHDOG=1 repeatedly after READY=1" "$(count_after "$ready" '^WATCHDOG=1$')" 3
assert_eq "a: no WATCHDOG=1 before READY=1" "$(awk -v r="$ready" 'NR < r && / WATCHDOG=1$/' "$NLOG" | wc -l)" 0
# The daemon must ping within WATCHDOG_USEC, from READY=1 to the last
# message so far (passes send STATUS every second: they mark the time).
max_gap_ms=$(awk -v r="$ready" '
	NR == r { last = $1 }
	NR > r && $3 == "WATCHDOG=1" { g = ($1 - last) * 1000; if (g > max) max = g; last = $1 }
	NR > r { now = $1 }
	END { g = (now - last) * 1000; if (g > max) max = g; printf "%.0f\n", max }' "$NLOG")
assert_lt "a: longest wait for WATCHDOG=1 (ms) is under WATCHDOG_USEC" "$max_gap_ms" 2000
assert_eq "a: pass numbers rise" "$(awk '$3 == "STATUS=pass" { n = $4 + 0; if (n <= prev) bad++; prev = n } END { print bad + 0 }' "$NLOG")" 0
# STATUS= follows the metrics file's schedule (at most once a second here,
# metrics_schedule.h), so its pass number, not its count, shows the rate.
assert_ge "a: at least 5 passes in the first 3 s at 200 ms (the last STATUS's pass number)" \
	"$(awk '$3 == "STATUS=pass" { n = $4 + 0 } END { print n + 0 }' "$NLOG")" 5
assert_eq "a: every message comes from the daemon's pid" \
	"$(awk -v p="$DPID" '$2 != p' "$NLOG" | wc -l)" 0

### b) SIGHUP: RELOADING=1 + MONOTONIC_USEC, then READY=1.
from=$(lines)
kill -HUP "$DPID"
reloading=$(wait_after "$from" '^RELOADING=1$')
need "b: RELOADING=1 after SIGHUP" "$reloading"
mono=$(first_after "$from" '^MONOTONIC_USEC=[0-9]+$')
need "b: MONOTONIC_USEC= after SIGHUP" "$mono"
assert_eq "b: RELOADING=1 and MONOTONIC_USEC in one datagram" \
	"$(line_field "$mono" 1)" "$(line_field "$reloading" 1)"
# MONOTONIC_USEC is CLOCK_MONOTONIC, like the listener's timestamps.
skew_ms=$(awk -v l="$mono" 'NR == l { split($3, kv, "="); d = $1 * 1e6 - kv[2]; if (d < 0) d = -d; printf "%.0f\n", d / 1000 }' "$NLOG")
assert_lt "b: MONOTONIC_USEC is now (ms off)" "$skew_ms" 1000
ready2=$(wait_after "$reloading" '^READY=1$')
need "b: READY=1 after RELOADING=1" "$ready2"
hc_wait_until 5 grep -q reloaded "$DERR"
assert_cmd "b: the log says reloaded" grep -q "reloaded $CONF" "$DERR"

### c) A broken file on reload keeps the old configuration.
# Line 4 is the unknown key; line 2 would slow passes down to 5 s if the
# broken file were applied even in part.
write_config 5000 "$HC_TMP/metrics.prom" "no_such_key = 1"
from=$(lines)
kill -HUP "$DPID"
reloading=$(wait_after "$from" '^RELOADING=1$')
need "c: RELOADING=1 for the broken file" "$reloading"
ready3=$(wait_after "$reloading" '^READY=1$')
need "c: READY=1 after the failed reload" "$ready3"
hc_wait_until 5 grep -q 'reload failed' "$DERR"
assert_cmd "c: the log says the reload failed and the old config is kept" \
	grep -q 'reload failed, keeping the previous configuration' "$DERR"
assert_cmd "c: the log names FILE:LINE" grep -qF "$CONF:4: key 'no_such_key'" "$DERR"
assert_cmd "c: the log names the key" grep -q "no_such_key" "$DERR"
hc_log "$(grep 'reload failed' "$DERR")"
# Five STATUS lines after the failed reload, then their spacing: at 200 ms
# intervals STATUS= comes every metrics_interval_s (1 s) plus up to a pass
# (more on a loaded or sanitizer build), at 5000 ms it would be over 5 s. The median gap tells
# them apart whatever the load; counting passes in a fixed time did not.
for ((i = 0; i < $(hc_scaled 20) * 10; i++)); do
	(($(count_after "$ready3" '^STATUS=pass [0-9]+:') >= 5)) && break
	alive "$DPID" || break
	sleep 0.1
done
if alive "$DPID"; then hc_ok "c: the daemon still runs"; else hc_not_ok "c: the daemon died"; fi
assert_ge "c: passes go on after the failed reload" "$(count_after "$ready3" '^STATUS=pass [0-9]+:')" 5
median_gap_ms=$(awk -v from="$ready3" '
	NR > from && $3 == "STATUS=pass" { if (n) g[n] = ($1 - last) * 1000; last = $1; n++ }
	END { m = n - 1; if (m < 1) { print 99999; exit }
	      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (g[j] < g[i]) { t = g[i]; g[i] = g[j]; g[j] = t }
	      printf "%.0f\n", g[int((m + 1) / 2)] }' "$NLOG")
assert_lt "c: passes still every 200 ms, not 5000 (median gap, ms)" "$median_gap_ms" 2500

# Fixed again: a new metrics file proves the new configuration took.
write_config 200 "$HC_TMP/metrics2.prom"
from=$(lines)
kill -HUP "$DPID"
ready4=$(wait_after "$from" '^READY=1$')
need "c: READY=1 after the fixed reload" "$ready4"
hc_wait_until 5 test -s "$HC_TMP/metrics2.prom"
assert_eq "c: reloaded twice in the log" "$(grep -c "reloaded $CONF" "$DERR")" 2
assert_cmd "c: the fixed file's metrics_file is written" test -s "$HC_TMP/metrics2.prom"

### d) SIGTERM: STOPPING=1, exit 0 within 2 s.
from=$(lines)
start=$(date +%s%N)
kill -TERM "$DPID"
# 2 s for a normal build; a sanitizer build (HC_TIME_SCALE) is slower at
# everything, its exit-time leak check included.
stop_ms=$(($(hc_scaled 2) * 1000))
for ((i = 0; i < stop_ms / 50; i++)); do alive "$DPID" || break; sleep 0.05; done
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
if alive "$DPID"; then
	hc_not_ok "d: the daemon still runs $((stop_ms / 1000)) s after SIGTERM"
	kill -KILL "$DPID"
fi
wait "$DPID"
rc=$?
assert_eq "d: exit status after SIGTERM" "$rc" 0
assert_lt "d: exited within $((stop_ms / 1000)) s (ms)" "$elapsed_ms" "$stop_ms"
stopping=$(wait_after "$from" '^STOPPING=1$' 1)
need "d: STOPPING=1" "$stopping"

kill -TERM "$LPID"
wait "$LPID"
assert_eq "listener exits 0 on SIGTERM" "$?" 0
assert_cmd "listener removed its socket" test ! -e "$SOCK"
if ((HC_FAIL)); then
	hc_log "daemon stderr:"
	sed 's/^/#   /' "$DERR"
fi
hc_summary
