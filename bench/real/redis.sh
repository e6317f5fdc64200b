# bench/real/redis.sh: redis-server from Debian's archive, for bench/real/real.sh.
# Variants: redis (disable-thp no: THP as the system allows) and redis-nothp
# (disable-thp yes, redis' default, which calls prctl(PR_SET_THP_DISABLE)).
# The data set: DEBUG POPULATE $REDIS_POP keys "pop:N" (the bulk of the
# heap), plus $REDIS_KEYS keys "key:%012d" holding the very value that
# redis-benchmark writes (its -d data is the same in every run), so that its
# random GET/SETs all hit and leave DEBUG DIGEST unchanged: a digest taken
# before the collapse must equal the one after.
# shellcheck shell=bash

rcli() { redis-cli -s "$TMP/redis.sock" "$@"; }

redis_start() # VARIANT: sets PROG_PID
{
	local thp=no i
	[[ $1 == redis-nothp ]] && thp=yes
	rm -f "$TMP/redis.sock"
	redis-server --port 0 --unixsocket "$TMP/redis.sock" --unixsocketperm 700 --save '' --appendonly no \
		--disable-thp "$thp" --enable-debug-command local --dir "$TMP" --logfile "$TMP/redis.log" \
		--daemonize no >/dev/null 2>&1 &
	PROG_PID=$!
	MY_PIDS+=("$PROG_PID")
	for ((i = 0; i < 200; i++)); do
		[[ $(rcli PING 2>/dev/null) == PONG ]] && break
		kill -0 "$PROG_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	[[ $(rcli DEBUG POPULATE "$REDIS_POP" pop "$REDIS_D") == OK ]] || return 1
	redis-benchmark -s "$TMP/redis.sock" -t set -r 1 -n 1 -d "$REDIS_D" -q >/dev/null 2>&1
	local v
	v=$(rcli GET key:000000000000)
	((${#v} == REDIS_D)) || return 1
	# ENVIRON, not -v: awk would read backslashes in the value as escapes.
	V=$v awk -v n="$REDIS_KEYS" 'BEGIN { v = ENVIRON["V"]; d = length(v)
		for (i = 0; i < n; i++) printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n", i, d, v }' |
		rcli --pipe >"$TMP/redis.pipe" 2>&1 || return 1
	[[ $(rcli DBSIZE) == $((REDIS_POP + REDIS_KEYS)) ]]
}

# redis_load VARIANT SECONDS: one redis-benchmark run of SET then GET,
# $REDIS_N requests each (SECONDS is not used: redis-benchmark counts).
# Prints "ops/s p99_us max_us errors": ops/s over both tests together.
redis_load()
{
	redis-benchmark -s "$TMP/redis.sock" -t set,get -r "$REDIS_KEYS" -d "$REDIS_D" -n "$REDIS_N" -c 8 --csv -q 2>/dev/null |
		awk -F'","' '/^"(SET|GET)"/ { gsub(/"/, ""); split($0, f, ","); n++; inv += 1 / f[2]
			if (f[7] * 1000 > p) p = f[7] * 1000; if (f[8] * 1000 > m) m = f[8] * 1000 }
			END { if (n == 2) printf "%.0f %.0f %.0f 0\n", 2 / inv, p, m }'
}

redis_check_begin() { REDIS_DIGEST=$(rcli DEBUG DIGEST); }

redis_check_end()
{
	local d
	d=$(rcli DEBUG DIGEST)
	if [[ -n $d && $d == "$REDIS_DIGEST" ]]; then echo "DEBUG DIGEST equal"; else echo "**DEBUG DIGEST differs** ($REDIS_DIGEST / $d)"; fi
}

redis_stop() { stop_task "$PROG_PID"; }
