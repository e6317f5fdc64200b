# bench/real/real.sh: section 7 of bench/run, real programs from Debian's
# archive (sourced by bench/run, which provides knob_set, make_conf,
# start_daemon, stop_task, spread, calc, now, log, $TMP, $BENCH_OUT ...).
#
# A case is VARIANT:MODE:SETUP:
#   VARIANT  redis redis-nothp memcached jvm jvm-thp python (bench/real/*.sh)
#   MODE     THP enabled while collapsing: always or madvise
#   SETUP    kdef   khugepaged at its defaults (4096 pages every 10 s)
#            kbud   khugepaged given the daemon's budget (budget_mb_per_s
#                   of 4 KiB pages every 1000 ms)
#            idle   hugecollapsed, shipped config, khugepaged = idle
#            off    hugecollapsed, shipped config, khugepaged = off
#            paced  as idle, blocks_per_call = 16, pause_ms = 5 (the setting
#                   for a latency-sensitive service)
# Sizes and lists can be set from the environment (REAL_CASES, REAL_CAP,
# REAL_RUNS, REAL_TP_SETUPS, REDIS_POP, MEMC_KEYS, JVM_HEAP, PY_N, ...), so
# that a full run can be split into parts that each hold the machine's
# kernel lock for a short time.
# REAL_FILL=mode fills under MODE instead (fault-time huge pages).
# One case: THP enabled=never while the program starts and fills its data
# (all of it 4 KiB pages, as after a switch to THP at run time or when
# fault-time huge pages could not be had; jvm-thp starts under MODE itself,
# since JDK 17 drops -XX:+UseTransparentHugePages when enabled=never, and so
# does redis-nothp, whose prctl depends on enabled=always at start), then
# REAL_RUNS load runs at 4 KiB, the check's "before", then enabled=MODE and
# the setup's collapser at t0, with the load generator running in chunks
# meanwhile; percent huge (AnonHugePages / Anonymous of smaps_rollup)
# every 0.5 s until >= 90% or REAL_CAP s; REAL_RUNS load runs again, the
# check's "after", RSS, and the CPU of the daemon or of the khugepaged
# thread (utime + stime of /proc/PID/stat) from t0 to the end of the wait.
# shellcheck shell=bash

REAL_DIR=$SRC/bench/real
# shellcheck source=bench/real/redis.sh
. "$REAL_DIR/redis.sh"
# shellcheck source=bench/real/memcached.sh
. "$REAL_DIR/memcached.sh"
# shellcheck source=bench/real/internal.sh
. "$REAL_DIR/internal.sh"

if ((QUICK)); then
	REAL_CAP=${REAL_CAP:-15} REAL_RUNS=${REAL_RUNS:-3} REAL_CHUNK=2
	REDIS_POP=${REDIS_POP:-500000} REDIS_KEYS=${REDIS_KEYS:-100000} REDIS_D=${REDIS_D:-128} REDIS_N=${REDIS_N:-20000}
	MEMC_MB=${MEMC_MB:-1024} MEMC_KEYS=${MEMC_KEYS:-600000} MEMC_VS=${MEMC_VS:-256}
	JVM_HEAP=${JVM_HEAP:-1g} JVM_N=${JVM_N:-3000000} PY_N=${PY_N:-2000000}
	# Throughput runs only where something collapses within the cap.
	REAL_TP_SETUPS=${REAL_TP_SETUPS:-idle}
	# On this loaded 2-vCPU guest a redis case takes 1-5 minutes (DEBUG
	# DIGEST of 2.3 M keys took 90 s): --quick keeps redis small and runs
	# one or two cases per program and every setup once.
	REAL_CASES=${REAL_CASES:-redis:always:idle redis:always:off redis:always:paced redis-nothp:always:idle
		memcached:always:idle memcached:always:kbud jvm:always:idle jvm-thp:madvise:kdef python:always:idle}
else
	# About 1 GiB of data per program and a cap of 90 s: the 28 cases take
	# half an hour on a quiet 2-vCPU guest (30 min on 2026-12-07; a capped
	# case ~2.3 min, one that reaches 90% under a minute). khugepaged at its defaults needs minutes
	# per GiB, so a longer cap shows only a slope the plot already shows.
	REAL_CAP=${REAL_CAP:-90} REAL_RUNS=${REAL_RUNS:-3} REAL_CHUNK=3
	REDIS_POP=${REDIS_POP:-3000000} REDIS_KEYS=${REDIS_KEYS:-500000} REDIS_D=${REDIS_D:-128} REDIS_N=${REDIS_N:-50000}
	MEMC_MB=${MEMC_MB:-3072} MEMC_KEYS=${MEMC_KEYS:-2500000} MEMC_VS=${MEMC_VS:-256}
	JVM_HEAP=${JVM_HEAP:-3g} JVM_N=${JVM_N:-8000000} PY_N=${PY_N:-5000000}
	REAL_TP_SETUPS=${REAL_TP_SETUPS:-kdef kbud idle off paced}
	if [[ -z ${REAL_CASES:-} ]]; then
		REAL_CASES=
		for v in redis memcached jvm jvm-thp python; do
			for s in kdef kbud idle off; do REAL_CASES+=" $v:always:$s"; done
		done
		for s in kdef kbud idle off; do REAL_CASES+=" jvm-thp:madvise:$s"; done
		REAL_CASES+=" redis:always:paced memcached:always:paced redis-nothp:always:kdef redis-nothp:always:idle"
	fi
fi
REAL_ROWS=()
REAL_TP_ROWS=()
REAL_LAT_ROWS=()

real_family() # VARIANT: the adapter that runs it
{
	case $1 in
	redis | redis-nothp) echo redis ;;
	jvm | jvm-thp) echo jvm ;;
	memcached | python) echo "$1" ;;
	*) return 1 ;;
	esac
}

real_deps()
{
	local c
	bash "$SRC/scripts/deps.sh" real >&2 || die "scripts/deps.sh real failed"
	for c in redis-server redis-benchmark redis-cli memcached java javac python3; do
		command -v "$c" >/dev/null || die "no $c after scripts/deps.sh real"
	done
	mkdir -p "$TMP/java"
	javac -d "$TMP/java" "$REAL_DIR/HeapLookup.java" || die "javac HeapLookup.java failed"
	MEMC_LOAD=$BUILD_DIR/bench/bench_memc_load
}

# anon bytes, AnonHugePages bytes of PID (smaps_rollup)
real_anon() { awk '/^Anonymous:/ { a = $2 } /^AnonHugePages:/ { h = $2 } END { printf "%.0f %.0f\n", a * 1024, h * 1024 }' "/proc/$1/smaps_rollup" 2>/dev/null; }
real_pct() { real_anon "$1" | awk '{ if ($1 > 0) printf "%.1f\n", $2 * 100 / $1; else print 0 }'; }
# utime + stime of /proc/PID/stat, in seconds
stat_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null; }

# The load in the background while the program is collapsed: chunks of
# REAL_CHUNK s, "T0 T1 ops/s p99 max errors" each, until $TMP/real.stop.
real_bg_load()
{
	local fam=$1 var=$2 t0 r
	while [[ ! -e $TMP/real.stop ]]; do
		t0=$(now)
		r=$("${fam}_load" "$var" "$REAL_CHUNK")
		[[ -n $r ]] && echo "$t0 $(now) $r"
	done >"$TMP/real.during"
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
fmt_list() { tr ' ' '\n' <<<"$1" | awk 'NF' | tr '\n' ' ' | sed 's/ $//'; }

# real_case VARIANT MODE SETUP: one row.
real_case()
{
	local var=$1 mode=$2 setup=$3 fam fillmode=never
	fam=$(real_family "$var") || die "unknown real variant $var"
	log "real: $var, enabled=$mode, setup $setup"
	khugepaged_defaults
	# Both decide at start: JDK 17 drops -XX:+UseTransparentHugePages, and
	# redis calls prctl(PR_SET_THP_DISABLE) only if enabled reads [always].
	[[ $var == jvm-thp || $var == redis-nothp || ${REAL_FILL:-never} == mode ]] && fillmode=$mode
	knob_set enabled "$fillmode"
	local t_fill0 t_fill
	t_fill0=$(now)
	if ! "${fam}_start" "$var"; then
		log "real: $var failed to start or fill"
		REAL_ROWS+=("| $var | $mode | $setup | start or fill failed | | | | | | |")
		"${fam}_stop"
		return
	fi
	t_fill=$(calc %.0f "$(now) - $t_fill0")
	local pid=$PROG_PID rss0 anon0 pct0 i r_ops r_p99 r_max
	read -r anon0 _ < <(real_anon "$pid")
	rss0=$(vm_kb "$pid" VmRSS)
	pct0=$(real_pct "$pid")

	local tp=0 b_ops='' b_p99='' b_max='' a_ops='' a_p99='' a_max='' runs=1
	[[ " $REAL_TP_SETUPS " == *" $setup "* ]] && tp=1 runs=$REAL_RUNS
	# One run at least: the latency at 4 KiB with nothing collapsing.
	for ((i = 0; i < runs; i++)); do
		read -r r_ops r_p99 r_max _ < <("${fam}_load" "$var" "$REAL_CHUNK")
		b_ops+=" ${r_ops:-}" b_p99+=" ${r_p99:-}" b_max+=" ${r_max:-}"
	done
	"${fam}_check_begin" "$var"

	# t0: the collapser starts.
	local pages kp0 kcpu0=0 t0 hc=0 kc0
	kp0=$(khugepaged_pid)
	[[ -n $kp0 ]] && kcpu0=$(stat_cpu "$kp0")
	kc0=$(cat "$THP/khugepaged/pages_collapsed")
	case $setup in
	kbud)
		pages=$(($(sed -n 's/^#budget_mb_per_s = //p' "$SRC/conf/hugecollapsed.conf") * 256))
		knob_set khugepaged/pages_to_scan "$pages"
		knob_set khugepaged/scan_sleep_millisecs 1000
		;;
	idle) make_conf khugepaged=idle ;;
	off) make_conf khugepaged=off ;;
	paced) make_conf khugepaged=idle blocks_per_call=16 pause_ms=5 ;;
	esac
	rm -f "$TMP/real.stop" "$TMP/real.during"
	real_bg_load "$fam" "$var" &
	local bg=$!
	MY_PIDS+=("$bg")
	t0=$(now)
	knob_set enabled "$mode"
	[[ $setup == idle || $setup == off || $setup == paced ]] && hc=1 && start_daemon

	local dat=$BENCH_OUT/real_${var}_${mode}_${setup}.dat t pct reach='' pmax=0
	mkdir -p "$BENCH_OUT"
	echo "# seconds percent_huge ($var, enabled=$mode, $setup; $(date -u '+%F %R UTC'), load average $(loadavg))" >"$dat"
	while :; do
		t=$(calc %.2f "$(now) - $t0")
		pct=$(real_pct "$pid")
		[[ -n $pct ]] || break
		echo "$t $pct" >>"$dat"
		awk -v p="$pct" -v m="$pmax" 'BEGIN { exit !(p > m) }' && pmax=$pct
		if awk -v p="$pct" 'BEGIN { exit !(p >= 90) }'; then
			reach=$t
			break
		fi
		awk -v t="$t" -v c="$REAL_CAP" 'BEGIN { exit !(t >= c) }' && break
		sleep 0.5
	done
	local t_end cpu=off kp1
	t_end=$(now)
	kp1=$(khugepaged_pid)
	if ((hc)); then
		cpu="$(stat_cpu "$DAEMON_PID") (daemon)"
	elif [[ -n $kp1 ]]; then
		# enabled=never stops the thread: a new one started at 0.
		[[ $kp1 == "$kp0" ]] || kcpu0=0
		cpu="$(calc %.2f "$(stat_cpu "$kp1") - $kcpu0") (khugepaged)"
	fi
	local kcol=$(($(cat "$THP/khugepaged/pages_collapsed") - kc0))
	touch "$TMP/real.stop"
	wait "$bg" 2>/dev/null
	forget "$bg"
	check_foreign "real $var $mode $setup"

	local pct_end huge1
	pct_end=$(real_pct "$pid")
	read -r _ huge1 < <(real_anon "$pid")
	if ((tp)); then
		for ((i = 0; i < REAL_RUNS; i++)); do
			read -r r_ops r_p99 r_max _ < <("${fam}_load" "$var" "$REAL_CHUNK")
			a_ops+=" ${r_ops:-}" a_p99+=" ${r_p99:-}" a_max+=" ${r_max:-}"
		done
	fi
	local rss1 check
	rss1=$(vm_kb "$pid" VmRSS)
	check=$("${fam}_check_end" "$var")
	((hc)) && stop_daemon
	"${fam}_stop"
	khugepaged_defaults
	knob_set enabled "${SAVED[enabled]}"

	# During the collapse: the chunks that overlap [t0, t_end].
	local d_p99 d_max d_n
	read -r d_n d_p99 d_max < <(awk -v a="$t0" -v b="$t_end" '$2 >= a && $1 <= b { n++; if ($4 > p) p = $4; if ($5 > m) m = $5 }
		END { printf "%d %s %s\n", n, n ? p : "-", n ? m : "-" }' "$TMP/real.during" 2>/dev/null)

	local label=$setup
	case $setup in
	kdef) label="khugepaged defaults" ;;
	kbud) label="khugepaged ${pages} pages/1000 ms" ;;
	idle) label="hugecollapsed, khugepaged=idle" ;;
	off) label="hugecollapsed, khugepaged=off" ;;
	paced) label="hugecollapsed idle, blocks_per_call 16, pause_ms 5" ;;
	esac
	((DISTURBED)) && label+=" †"
	local reach_s=">$REAL_CAP (max $pmax%)"
	[[ -n $reach ]] && reach_s="$reach s"
	REAL_ROWS+=("| $var | $mode | $label | $((anon0 >> 20)) MiB (filled in $t_fill s) | ${pct0}% | $reach_s | ${pct_end}% ($((huge1 >> 20)) MiB) | $((rss0 >> 10)) → $((rss1 >> 10)) MiB | $cpu | $kcol | $check |")
	REAL_LAT_ROWS+=("| $var | $mode | $label | $(spread "$b_p99") / $(spread "$b_max") ($runs) | ${d_p99} / ${d_max} (${d_n} chunks) |")
	# On stderr as well: a run cut short keeps the rows it finished.
	log "row: ${REAL_ROWS[-1]}"
	log "latency: ${REAL_LAT_ROWS[-1]}"
	if ((tp)); then
		local mb ma verdict
		mb=$(spread "$b_ops") ma=$(spread "$a_ops")
		verdict=$(awk -v b="$b_ops" -v a="$a_ops" 'BEGIN { nb = split(b, x, " "); na = split(a, y, " ")
			if (!nb || !na) { print "-"; exit }
			bmin = bmax = x[1]; for (i = 2; i <= nb; i++) { if (x[i] < bmin) bmin = x[i]; if (x[i] > bmax) bmax = x[i] }
			amin = amax = y[1]; for (i = 2; i <= na; i++) { if (y[i] < amin) amin = y[i]; if (y[i] > amax) amax = y[i] }
			if (amin > bmax) print "faster: the ranges do not overlap"
			else if (amax < bmin) print "slower: the ranges do not overlap"
			else print "within the spread (ranges overlap)" }')
		REAL_TP_ROWS+=("| $var | $mode | $label | $mb | $ma (at ${pct_end}% huge) | $(fmt_list "$b_ops") → $(fmt_list "$a_ops") | $verdict |")
		log "throughput: ${REAL_TP_ROWS[-1]}"
	fi
}

real_bench()
{
	local c var mode setup
	real_deps
	REAL_SHA=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
	REAL_RUN="$(date -u '+%F %R UTC'), $(uname -r), load average at the start $(loadavg)"
	for c in $REAL_CASES; do
		IFS=: read -r var mode setup <<<"$c"
		DISTURBED=0
		real_case "$var" "$mode" "$setup"
	done
}

real_report()
{
	cat <<EOF
### 7. Real programs from Debian's archive (bench/real)

Sizes: redis DEBUG POPULATE $REDIS_POP keys of $REDIS_D bytes + $REDIS_KEYS benchmark keys, redis-benchmark -t set,get -r $REDIS_KEYS -n $REDIS_N -c 8; memcached -m $MEMC_MB, $MEMC_KEYS values of $MEMC_VS bytes, bench_memc_load (90% GET, 10% SET, one request at a time, every value checked); JVM (OpenJDK $(java -version 2>&1 | awk -F'"' 'NR == 1 { print $2 }'), G1) -Xms/-Xmx $JVM_HEAP, HeapLookup of $JVM_N entries; CPython $(python3 -c 'import platform; print(platform.python_version())') dict of $PY_N entries. THP enabled=never while each program fills (jvm-thp and redis-nothp: MODE), then MODE and the collapser at t0; % huge = AnonHugePages / Anonymous (smaps_rollup), cap $REAL_CAP s. Code: $REAL_SHA. Run: $REAL_RUN, at the end $(loadavg). † another hugecollapsed ran meanwhile.

| program | THP enabled | setup | anon at t0 | huge at t0 | time to ≥ 90% huge | huge at end | RSS before → after | CPU s (stat) | khugepaged collapsed pages (system-wide) | check |
| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
$(printf '%s\n' "${REAL_ROWS[@]}")

Throughput, $REAL_RUNS runs each before (4 KiB) and after the wait (redis, memcached: ops/s of one load-generator run; JVM, CPython: mean lookups/s over $REAL_CHUNK s of their own per-second counts), median (min..max):

| program | THP enabled | setup | ops/s at 4 KiB | ops/s after | runs | difference |
| --- | --- | --- | ---: | ---: | --- | --- |
$(printf '%s\n' "${REAL_TP_ROWS[@]}")

Latency as the load generator reports it, µs (redis-benchmark: its p99 and max of SET and GET, the worse; memcached: per request; JVM, CPython: one lookup, per-second histogram, worst second's p99): at 4 KiB before t0 (median (min..max) of the runs) and during the wait for 90% (the worst of the load chunks that overlapped it):

| program | THP enabled | setup | p99 / max at 4 KiB, no collapse (runs) | p99 / max while collapsed |
| --- | --- | --- | ---: | ---: |
$(printf '%s\n' "${REAL_LAT_ROWS[@]}")
EOF
}
