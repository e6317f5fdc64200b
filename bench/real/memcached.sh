# bench/real/memcached.sh: memcached from Debian's archive, for bench/real/real.sh.
# -m $MEMC_MB, filled with $MEMC_KEYS values of $MEMC_VS bytes by
# bench_memc_load (each value a function of its key), loaded with random
# GET/SETs that check every value, and read back in full before and after.
# shellcheck shell=bash

memc() { "$MEMC_LOAD" --socket "$TMP/memc.sock" --keys "$MEMC_KEYS" --value-size "$MEMC_VS" "$@"; }

memcached_start() # VARIANT: sets PROG_PID
{
	local i
	rm -f "$TMP/memc.sock"
	# -u root: memcached refuses to run as root without it.
	memcached -s "$TMP/memc.sock" -a 0700 -m "$MEMC_MB" -t 2 -c 64 -u root >"$TMP/memcached.log" 2>&1 &
	PROG_PID=$!
	MY_PIDS+=("$PROG_PID")
	for ((i = 0; i < 200; i++)); do
		[[ -S $TMP/memc.sock ]] && break
		kill -0 "$PROG_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	memc --fill >/dev/null
}

memcached_load() # VARIANT SECONDS: "ops/s p99_us max_us errors"
{
	memc --seconds "$2" | awk '{ print $2, $4, $6, $8 }'
}

memcached_check_begin() { MEMC_VERIFY0=$(memc --verify); }

memcached_check_end()
{
	local v
	v=$(memc --verify)
	if [[ $MEMC_VERIFY0 == *" errors 0" && $v == *" errors 0" ]]; then
		echo "all $MEMC_KEYS values read back equal"
	else
		echo "**values differ**: before [$MEMC_VERIFY0] after [$v]"
	fi
}

memcached_stop() { stop_task "$PROG_PID"; }
