# bench/real/internal.sh: programs that are their own load generator (the
# JVM and CPython workloads): they print, once a second,
#   stat EPOCH_S OPS P99_US MAX_US ERRORS
# to $TMP/VARIANT.out, and "verify N errors E" when they get SIGTERM.
# shellcheck shell=bash

# internal_start VARIANT TIMEOUT_S CMD...: sets PROG_PID once "ready".
internal_start()
{
	local var=$1 limit=$(($2 * 10)) i
	shift 2
	"$@" >"$TMP/$var.out" 2>"$TMP/$var.err" &
	PROG_PID=$!
	MY_PIDS+=("$PROG_PID")
	for ((i = 0; i < limit; i++)); do
		grep -q '^ready' "$TMP/$var.out" 2>/dev/null && return 0
		kill -0 "$PROG_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# internal_load VARIANT SECONDS: the stat lines of the next SECONDS, as
# "ops/s p99_us max_us errors" (mean of the per-second rates; the worst
# second's p99; the max; errors so far).
internal_load()
{
	local n0
	n0=$(grep -c '^stat' "$TMP/$1.out")
	sleep "$2"
	awk -v n0="$n0" '/^stat/ && ++i > n0 { s += $3; k++; if ($4 > p) p = $4; if ($5 > m) m = $5; e = $6 }
		END { if (k) printf "%.0f %.0f %.0f %d\n", s / k, p, m, e }' "$TMP/$1.out"
}

internal_check_begin() { :; }

# SIGTERM makes the program check every entry and exit.
internal_check_end()
{
	local var=$1 i errs v
	errs=$(awk '/^stat/ { e = $6 } END { print e + 0 }' "$TMP/$var.out")
	kill -TERM "$PROG_PID" 2>/dev/null
	for ((i = 0; i < 600; i++)); do
		v=$(grep '^verify' "$TMP/$var.out")
		[[ -n $v ]] && break
		sleep 0.1
	done
	if [[ $v == *" errors 0" && $errs == 0 ]]; then
		echo "every entry checked: 0 errors"
	else
		echo "**errors**: $errs during the run, [${v:-no verify line}] at the end"
	fi
}

internal_stop() { stop_task "$PROG_PID"; }

# The JVM: variants jvm (THP as the system gives it) and jvm-thp
# (-XX:+UseTransparentHugePages: it madvises its heap).
jvm_start()
{
	local flags=()
	[[ $1 == jvm-thp ]] && flags+=(-XX:+UseTransparentHugePages)
	internal_start "$1" 180 java -Xms"$JVM_HEAP" -Xmx"$JVM_HEAP" -XX:+UseG1GC "${flags[@]}" \
		-cp "$TMP/java" HeapLookup "$JVM_N"
}
jvm_load() { internal_load "$@"; }
jvm_check_begin() { :; }
jvm_check_end() { internal_check_end "$@"; }
jvm_stop() { internal_stop; }

python_start() { internal_start "$1" 300 python3 "$REAL_DIR/heap_dict.py" "$PY_N"; }
python_load() { internal_load "$@"; }
python_check_begin() { :; }
python_check_end() { internal_check_end "$@"; }
python_stop() { internal_stop; }
