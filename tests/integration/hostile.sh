#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Hostile input: each case ends in a clear error or a skip, never a crash or
# a hang, and a running daemon keeps its last good state.
#  1. --check-config on 10,000-line files, NUL bytes, invalid UTF-8, a 2 MB
#     line, symlinks (good, dangling, looping, to a 0666 file), a FIFO, a
#     directory and /dev/zero: exit 1 with one line saying why (or 0 when
#     the file is valid), within 10 s.
#  2. A running daemon: metrics_file under directories that do not exist yet
#     (like a missing /run/hugecollapsed), then exist, then are not writable,
#     then are again: one log line per failure episode, one per recovery, no
#     exit. A FIFO and a symlink (to a file elsewhere) planted at the
#     temporary name: the file is still written, the planted entry is
#     gone, the link's target untouched. Then each bad config above given by SIGHUP: "reload failed,
#     keeping the previous configuration", passes go on, the old metrics
#     file keeps being written; a good config after them takes effect.
#     The daemon runs without CAP_DAC_OVERRIDE (capsh), or root could write
#     into a 0555 directory, and with [collapse] enable = no: it touches
#     no process.
#  3. smaps with a mapped file whose path is ~2900 bytes over 15 directories
#     and whose name holds a newline, quotes and a backslash, in a process
#     whose comm holds a quote, backslash, newline and control bytes:
#     --once (dry run, JSON and real) exits 0, valid JSON, no "malformed
#     smaps" warning, the file's bytes unchanged.
#  4. /proc entries vanishing mid-read: --once --pid of a process that exits
#     during the sample, and full-system dry runs while 150 processes churn.
# smaps unknown fields and escapes are covered by tests/unit/test_smaps_scan.
# Needs root and capsh; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

HC_CHURN_WORKER=${HC_CHURN_WORKER:-$HC_BUILD/tests/hc_churn_worker}
require_root
require_cmd capsh jq md5sum
require_exec "$HC_BIN" "$HC_CHURN_WORKER"

H=$HC_TMP/conf
mkdir -p "$H"
chmod 0755 "$H"

### 1. Hostile config files.
{
	for ((i = 0; i < 10000; i++)); do echo "# comment line $i"; done
	printf '[daemon]\nscan_interval_ms = 100\n'
} >"$H/many_lines.conf"
{
	echo '[daemon]'
	for ((i = 0; i < 10000; i++)); do echo "scan_interval_ms = $i"; done
} >"$H/dup_10000.conf"
printf '[daemon]\nscan_interval_ms = 1\0000\n' >"$H/nul.conf"
printf '[daemon]\n# caf\xe9\nscan_interval_ms = 100\n' >"$H/latin1.conf"
printf '[daemon]\nmetrics_file = /tmp/\xff\xfe\n' >"$H/bad_utf8_value.conf"
head -c 2000000 /dev/zero | tr '\0' a >"$H/long_line.conf"
printf '[daemon]\nscan_interval_ms = 100\n' >"$H/good.conf"
cp "$H/good.conf" "$H/world_writable.conf"
chmod 0644 "$H"/*.conf
chmod 0666 "$H/world_writable.conf"
ln -s good.conf "$H/link_good.conf"
ln -s missing.conf "$H/dangling.conf"
ln -s loop_b.conf "$H/loop_a.conf"
ln -s loop_a.conf "$H/loop_b.conf"
ln -s world_writable.conf "$H/link_world_writable.conf"
mkfifo -m 0644 "$H/fifo.conf"
mkdir "$H/dir.conf"

# BAD NAME REGEX: --check-config exits 78 and its one line matches REGEX.
declare -A BAD=(
	[dup_10000.conf]="set twice"
	[nul.conf]="NUL byte"
	[latin1.conf]="invalid UTF-8"
	[bad_utf8_value.conf]="invalid UTF-8"
	[long_line.conf]="larger than|too long"
	[world_writable.conf]="writable by"
	[dangling.conf]="No such file"
	[loop_a.conf]="symbolic links"
	[link_world_writable.conf]="symlink.*writable by|writable by.*symlink"
	[fifo.conf]="not a regular file"
	[dir.conf]="directory"
)
check_config()
{
	timeout 10 "$HC_BIN" --check-config --config "$1" >"$HC_TMP/cc.out" 2>"$HC_TMP/cc.err"
}
for name in "${!BAD[@]}"; do
	check_config "$H/$name"
	rc=$?
	assert_eq "--check-config $name exits 78 (124: hung; >128: crashed)" "$rc" 78
	if [[ $(wc -l <"$HC_TMP/cc.err") == 1 ]] && grep -Eq "${BAD[$name]}" "$HC_TMP/cc.err"; then
		hc_ok "--check-config $name: one line saying why"
	else
		hc_not_ok "--check-config $name: expected one line matching '${BAD[$name]}', got: $(head -c 300 "$HC_TMP/cc.err")"
	fi
done
for f in /dev/zero /dev/urandom; do
	check_config "$f"
	assert_eq "--check-config $f exits 78 at once" "$?" 78
done
for name in many_lines.conf link_good.conf; do
	check_config "$H/$name"
	assert_eq "--check-config $name (valid) exits 0" "$?" 0
done

### 2. A running daemon: the metrics directory, then reloads.
METRICS_DIR=$HC_TMP/run/hugecollapsed
METRICS=$METRICS_DIR/metrics.prom
CONF=$H/daemon.conf
write_daemon_conf() # METRICS_FILE
{
	printf '[daemon]\nscan_interval_ms = 100\nmetrics_file = %s\nmetrics_interval_s = 1\ncgroup_dir = %s\n[collapse]\nenable = no\n' \
		"$1" "$H/cgroup.d" >"$CONF.new"
	chmod 0644 "$CONF.new"
	mv -f "$CONF.new" "$CONF"
}
mkdir -p "$H/cgroup.d"
chmod 0755 "$H/cgroup.d"
write_daemon_conf "$METRICS"

HC_DAEMON_LOG=$HC_TMP/daemon.log
env -u NOTIFY_SOCKET -u JOURNAL_STREAM -u WATCHDOG_USEC \
	capsh --drop=cap_dac_override -- -c 'exec "$@"' sh "$HC_BIN" --config "$CONF" -v >"$HC_DAEMON_LOG" 2>&1 &
HC_DAEMON_PID=$!
HC_EXTRA_PIDS+=("$HC_DAEMON_PID")
DPID=$HC_DAEMON_PID

alive()
{
	kill -0 "$DPID" 2>/dev/null
}
log_count()
{
	grep -c "$1" "$HC_DAEMON_LOG"
}
# wait_log REGEX N: until REGEX has N lines in the log (10 s at most).
wait_log()
{
	local i
	for ((i = 0; i < 100; i++)); do
		(($(log_count "$1") >= $2)) && return 0
		alive || return 1
		sleep 0.1
	done
	return 1
}
passes_in()
{
	awk '$1 == "hugecollapsed_passes_total" {print $2}' "$1" 2>/dev/null || echo 0
}
# metrics_moved N: the metrics file counts more than N passes.
metrics_moved()
{
	(($(passes_in "$METRICS") + 0 > $1))
}

wait_log 'started:' 1
hc_wait_passes 10 10
if alive; then hc_ok "daemon runs with its metrics directory missing"; else hc_not_ok "daemon died: $(tail -n 3 "$HC_DAEMON_LOG")"; fi
assert_eq "missing directory: logged once over 10 passes" "$(log_count 'cannot write metrics file')" 1

mkdir -p "$METRICS_DIR"
wait_log 'written again' 1
assert_eq "directory appears: recovery logged once" "$(log_count 'written again')" 1
if [[ -s $METRICS ]]; then hc_ok "metrics file written once the directory exists"; else hc_not_ok "no metrics file in $METRICS_DIR"; fi

chmod 0555 "$METRICS_DIR"
wait_log 'cannot write metrics file' 2
hc_wait_passes 10 10
assert_eq "directory not writable: logged once more over 10 passes" "$(log_count 'cannot write metrics file')" 2
if alive; then hc_ok "daemon runs on with an unwritable metrics directory"; else hc_not_ok "daemon died"; fi
chmod 0755 "$METRICS_DIR"
wait_log 'written again' 2
assert_eq "directory writable again: recovery logged" "$(log_count 'written again')" 2

# Something planted at the daemon's temporary name (PATH.tmp.PID): a FIFO
# would block an open for writing until someone reads; a symlink to a file
# elsewhere would redirect the write. The name exists only while a write is
# under way, so plant between two writes.
TEMP=$METRICS.tmp.$DPID
VICTIM=$HC_TMP/victim
echo "not metrics" >"$VICTIM"
VICTIM_SUM=$(md5sum <"$VICTIM")
plant() # fifo|link
{
	local i
	for ((i = 0; i < 200; i++)); do
		if [[ $1 == fifo ]]; then
			mkfifo "$TEMP" 2>/dev/null && return 0
		else
			ln -s "$VICTIM" "$TEMP" 2>/dev/null && return 0
		fi
		sleep 0.01
	done
	return 1
}
for kind in fifo link; do
	errors=$(log_count 'cannot write metrics file')
	if plant "$kind"; then hc_ok "planted a $kind at $TEMP"; else hc_not_ok "cannot plant a $kind at $TEMP"; fi
	before=$(passes_in "$METRICS")
	# 15 passes, then a write is due within metrics_interval_s (1 s): at
	# 100 ms a pass that is past it, but news passes may run faster.
	hc_wait_passes 15 "$(hc_scaled 10)"
	hc_wait_until 5 metrics_moved "$before"
	after=$(passes_in "$METRICS")
	if alive && ((after > before)); then
		hc_ok "$kind at the temporary name: the file is still written ($before -> $after passes)"
	else
		hc_not_ok "$kind at the temporary name: alive=$(alive && echo yes || echo no), passes $before -> $after"
	fi
	assert_eq "$kind at the temporary name: no write error logged" "$(log_count 'cannot write metrics file')" "$errors"
	if [[ -p $TEMP || -L $TEMP ]]; then hc_not_ok "the planted $kind is still there"; else hc_ok "the planted $kind is gone"; fi
	if [[ -f $METRICS && ! -L $METRICS ]]; then hc_ok "$kind: metrics file is a regular file"; else hc_not_ok "$kind: metrics file is not a regular file"; fi
done
assert_eq "the symlink's target is untouched" "$(md5sum <"$VICTIM")" "$VICTIM_SUM"

# SIGHUP with each bad file at the config path: as a copy or as a symlink.
n=0
for name in nul.conf latin1.conf dup_10000.conf long_line.conf world_writable.conf dangling.conf \
	link_world_writable.conf loop_a.conf fifo.conf dir.conf; do
	rm -f "$CONF"
	if [[ -L $H/$name || -p $H/$name || -d $H/$name ]]; then
		ln -s "$H/$name" "$CONF"
	else
		cp -p "$H/$name" "$CONF"
	fi
	before=$(passes_in "$METRICS")
	n=$((n + 1))
	kill -HUP "$DPID"
	if wait_log 'reload failed, keeping the previous configuration' "$n"; then
		hc_ok "SIGHUP with $name: reload refused"
	else
		hc_not_ok "SIGHUP with $name: no 'reload failed' line; log tail: $(tail -n 2 "$HC_DAEMON_LOG")"
	fi
	hc_wait_passes 15 10
	hc_wait_until 5 metrics_moved "$before"
	after=$(passes_in "$METRICS")
	if alive && ((after > before)); then
		hc_ok "after SIGHUP with $name: still running, old metrics file still written ($before -> $after passes)"
	else
		hc_not_ok "after SIGHUP with $name: alive=$(alive && echo yes || echo no) passes $before -> $after"
	fi
done
rm -f "$CONF"
NEW_METRICS=$HC_TMP/metrics-after-reload.prom
write_daemon_conf "$NEW_METRICS"
kill -HUP "$DPID"
wait_log '^hugecollapsed: reloaded' 1
for ((i = 0; i < 50; i++)); do
	[[ -s $NEW_METRICS ]] && break
	sleep 0.1
done
if [[ -s $NEW_METRICS ]]; then hc_ok "a good config after the bad ones takes effect"; else hc_not_ok "no $NEW_METRICS after a good reload"; fi
assert_eq "no failed pass in the log" "$(log_count 'pass [0-9]* failed')" 0
hc_daemon_stop
assert_eq "daemon exits 0 on SIGTERM" "$?" 0
# Only now: while it runs, a pass may be between writing its temporary
# file and renaming it (a CI run under ASan caught one).
assert_eq "no temporary metrics file left behind" \
	"$(find "$METRICS_DIR" "$(dirname "$NEW_METRICS")" -maxdepth 1 -name '*.tmp.*' | wc -l)" 0

### 3. smaps: a ~2900-byte path with a newline, in a process with a wild comm.
# On the build's filesystem, not in $HC_TMP: /tmp is a tmpfs on many hosts
# (Debian 13, Fedora), where the file would be shmem, which shmem_enabled
# refuses, not file text (seen in a root whose /tmp was a tmpfs).
LONG_DIR=$(mktemp -d "$HC_BUILD/hc-longpath.XXXXXX") || exit 1
trap 'rm -rf "$LONG_DIR"; hc_policy_cleanup' EXIT
dir=$LONG_DIR
seg=$(printf 'd%.0s' {1..200})
for ((i = 0; i < 14; i++)); do dir+=/$seg; done
mkdir -p "$dir"
FILE="$dir/map"$'\n''with "quotes" and \back slash'
head -c $((4 << 20)) /dev/urandom >"$FILE"
SUM0=$(md5sum <"$FILE")
hc_log "mapped file path: ${#FILE} bytes"
# The mapper opts in with MADV_HUGEPAGE: keep khugepaged from collapsing it.
hc_khugepaged_quiet || exit 1
"$HC_CHURN_WORKER" mapfile "$FILE" $'c"o\\m\nm\t\x01' >"$HC_TMP/mapfile.out" 2>&1 &
MAPPER=$!
HC_EXTRA_PIDS+=("$MAPPER")
for ((i = 0; i < 50; i++)); do
	grep -q '^ready' "$HC_TMP/mapfile.out" && break
	sleep 0.1
done
if grep -q 'map\\012with' "/proc/$MAPPER/maps"; then
	hc_ok "the kernel shows the newline in smaps as \\012"
else
	hc_not_ok "mapping with a newline not found in /proc/$MAPPER/maps"
fi
ONCE_CONF=$H/once.conf
# scope = madvise: this kernel may lack CONFIG_READ_ONLY_THP_FOR_FS, and then
# the policy khugepaged obeys (scope = kernel) leaves file text alone.
printf '[daemon]\nmetrics_file =\n[collapse]\nmin_referenced_pct = 0\nscope = madvise\n' >"$ONCE_CONF"
chmod 0644 "$ONCE_CONF"
for mode in "--dry-run --json" "--json" "--dry-run"; do
	# shellcheck disable=SC2086
	timeout 60 "$HC_BIN" --config "$ONCE_CONF" --once $mode --pid "$MAPPER" --sample-ms 50 \
		>"$HC_TMP/once.out" 2>"$HC_TMP/once.err"
	assert_eq "--once $mode over the long newline path exits 0" "$?" 0
	assert_eq "--once $mode: no malformed smaps warning" "$(grep -c malformed "$HC_TMP/once.err")" 0
	if [[ $mode == *json* ]]; then
		assert_cmd "--once $mode: output is valid JSON" jq -e . "$HC_TMP/once.out"
	fi
	[[ $mode == "--dry-run --json" ]] && cp "$HC_TMP/once.out" "$HC_TMP/dry.json"
done
# The file's two 2 MiB blocks are listed as candidates (file_backed = yes,
# read-only exec text), so its VMA was parsed, name and all.
read -r _ "WL_PID[mapper]" "WL_ADDR[mapper]" "WL_LEN[mapper]" <"$HC_TMP/mapfile.out"
if ((WL_ADDR[mapper] % (2 << 20) == 0)); then
	n=$(json_candidates_in "$HC_TMP/dry.json" mapper)
	assert_eq "dry run lists both 2 MiB blocks of the long-named file" "$n" 2
	# Why not, when not:
	[[ $n == 2 ]] || hc_log "the mapper in the dry run: $(jq -c --argjson pid "$MAPPER" \
		'.processes[]? | select(.pid == $pid) | del(.comm)' "$HC_TMP/dry.json" | head -c 2000)"
else
	hc_log "the file mapping at ${WL_ADDR[mapper]} is not 2 MiB aligned: its blocks cannot be candidates"
fi
assert_eq "comm with control bytes comes out as one JSON string" \
	"$(jq -r --argjson pid "$MAPPER" '.processes[] | select(.pid == $pid) | .comm | length > 0' "$HC_TMP/dry.json")" true
assert_eq "the mapped file's bytes are unchanged" "$(md5sum <"$FILE")" "$SUM0"
kill -TERM "$MAPPER"
wait "$MAPPER"
assert_eq "mapper exits 0" "$?" 0

### 4. Processes that vanish while they are read.
sleep 0.3 &
short=$!
timeout 30 "$HC_BIN" --config "$ONCE_CONF" --once --pid "$short" --sample-ms 600 >/dev/null 2>"$HC_TMP/vanish.err"
assert_eq "--once --pid of a process that exits during the sample exits 0" "$?" 0
wait "$short"
"$HC_CHURN_WORKER" driver --count 150 --parallel 10 --max-ms 300 >"$HC_TMP/churn.out" 2>&1 &
DRIVER=$!
HC_EXTRA_PIDS+=("$DRIVER")
runs=0
bad=0
while kill -0 "$DRIVER" 2>/dev/null; do
	timeout 60 "$HC_BIN" --config "$ONCE_CONF" --once --dry-run --sample-ms 20 >/dev/null 2>"$HC_TMP/dry.err"
	rc=$?
	runs=$((runs + 1))
	if ((rc != 0)); then
		bad=$((bad + 1))
		hc_log "dry run $runs exited $rc: $(head -c 300 "$HC_TMP/dry.err")"
	fi
done
wait "$DRIVER"
assert_ge "full-system dry runs during churn" "$runs" 3
assert_eq "dry runs during churn that failed" "$bad" 0
assert_eq "churn workers all intact" "$(grep -c '^summary.* ok=150 ' "$HC_TMP/churn.out")" 1

hc_summary
