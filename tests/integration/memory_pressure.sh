#!/bin/bash
# Host memory pressure pauses collapsing (issue 16, "also required").
# A real pressure source: a cgroup v1 memory group of our own with a 32 MiB
# limit, in which two readers loop over a 64 MiB file written with O_DIRECT
# (so none of it is cached yet): every read reclaims the group's page cache
# and refaults it, which the kernel counts as memory stalls in
# /proc/pressure/memory (measured here: some avg10 from 0 to 10-15% in
# 8 s). A hot workload with MADV_HUGEPAGE waits in the daemon's cgroup.
# Asserts:
#  - the daemon logs "host memory pressure (psi_some ...): collapsing
#    paused", the metrics say paused 1, and the workload stays small;
#  - once the readers are stopped and PSI decays below pressure_some_pct,
#    "collapsing resumes" is logged and the workload is >= 90% PMD-mapped.
# The memory v1 group, its processes and the file are removed by the EXIT
# trap (the memory v1 subtree process_api is not ours and is never touched).
# Needs root, cgroup v2 and the v1 memory controller; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_cgroup2
require_no_other_daemon
V1=/sys/fs/cgroup/memory
[[ -w $V1/cgroup.procs && -f /proc/pressure/memory ]] || hc_skip "needs the cgroup v1 memory controller at $V1 and PSI"

PSI_CG=$V1/hc-test-$$-psi
PSI_FILE=/var/tmp/hc-test-$$-psi.dat
READERS=()
SOME_PCT=3

some_avg10()
{
	awk '$1 == "some" {sub("avg10=", "", $2); print int($2)}' /proc/pressure/memory
}

# Stops the readers (ours: each is a child of this shell, the cats in our
# own group), empties and removes the group, removes the file.
psi_stop()
{
	local pid
	for pid in "${READERS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	READERS=()
	if [[ -d $PSI_CG ]]; then
		for pid in $(cat "$PSI_CG/cgroup.procs"); do
			kill -TERM "$pid" 2>/dev/null
		done
		hc_wait_until 10 bash -c "[[ -z \$(cat '$PSI_CG/cgroup.procs') ]]"
		rmdir "$PSI_CG"
	fi
	rm -f "$PSI_FILE"
}
trap 'psi_stop; hc_policy_cleanup' EXIT

hc_cgroup_create hot || {
	hc_not_ok "create a cgroup"
	hc_summary
	exit 1
}
CONF=$HC_TMP/conf/hugecollapsed.conf
METRICS=$HC_TMP/metrics.prom
mkdir -p "$HC_TMP/conf/cgroup.d"
chmod 0755 "$HC_TMP/conf" "$HC_TMP/conf/cgroup.d"
printf '[daemon]\nscan_interval_ms = 200\nmetrics_file = %s\nmetrics_interval_s = 1\nstate_file = %s\ncgroup_dir = %s\npressure_some_pct = %d\npressure_full_pct = 0\n[collapse]\nenable = no\n' \
	"$METRICS" "$HC_TMP/conf/khugepaged.state" "$HC_TMP/conf/cgroup.d" "$SOME_PCT" >"$CONF"
printf '[cgroup]\npath = %s\nenable = yes\nbudget_mb_per_s = 1024\n' "${CG_PATH[hot]}" >"$HC_TMP/conf/cgroup.d/hot.conf"
chmod 0644 "$CONF" "$HC_TMP/conf/cgroup.d/hot.conf"

# The pressure first: the daemon must find it there.
dd if=/dev/zero of="$PSI_FILE" bs=1M count=64 oflag=direct status=none || {
	hc_not_ok "write the pressure file"
	hc_summary
	exit 1
}
mkdir "$PSI_CG" && echo $((32 << 20)) >"$PSI_CG/memory.limit_in_bytes" || {
	hc_not_ok "create memory cgroup $PSI_CG"
	hc_summary
	exit 1
}
for k in 1 2; do
	(
		echo "$BASHPID" >"$PSI_CG/cgroup.procs" || exit 1
		while :; do cat "$PSI_FILE" >/dev/null; done
	) &
	READERS+=($!)
done
hc_wait_until 60 bash -c "(( \$(awk '\$1 == \"some\" {sub(\"avg10=\", \"\", \$2); print int(\$2)}' /proc/pressure/memory) >= $((SOME_PCT + 2)) ))"
assert_ge "PSI memory some avg10 (percent) from the pressure source" "$(some_avg10)" $((SOME_PCT + 2))

hc_khugepaged_quiet || exit 1
MY_CG=$(sed -n 's/^0:://p' /proc/$$/cgroup)
hc_cgroup_add hot $$
start_workload hot 16 hot --advise-huge
rc=$?
echo $$ >"$HC_CG_ROOT$MY_CG/cgroup.procs"
if ((rc)); then
	hc_not_ok "start the hot workload"
	hc_summary
	exit 1
fi
if ! hc_daemon_start "$CONF"; then
	hc_not_ok "daemon starts"
	hc_summary
	exit 1
fi

hc_wait_until 20 grep -q 'host memory pressure (psi_some' "$HC_DAEMON_LOG"
assert_cmd "paused for PSI (log line)" grep -q 'host memory pressure (psi_some.*collapsing paused' "$HC_DAEMON_LOG"
hc_wait_until 10 grep -q '^hugecollapsed_memory_pressure_paused 1' "$METRICS"
assert_cmd "paused (metric)" grep -q '^hugecollapsed_memory_pressure_paused 1' "$METRICS"
sleep 2
assert_lt "hot workload PMD-mapped (percent) while paused" "$(wl_pmd_pct hot)" 10

t0=$SECONDS
psi_stop
hc_wait_until 120 grep -q 'host memory pressure over after' "$HC_DAEMON_LOG"
assert_cmd "resumed (log line)" grep -q 'host memory pressure over after .* collapsing resumes' "$HC_DAEMON_LOG"
hc_log "resumed $((SECONDS - t0)) s after the pressure stopped (PSI some avg10 now $(some_avg10)%)"
t1=$SECONDS
while (($(wl_pmd_pct hot) < 90 && SECONDS - t1 < 20)); do
	sleep 0.2
done
assert_ge "hot workload PMD-mapped (percent) after the pressure" "$(wl_pmd_pct hot)" 90
hc_wait_until 10 grep -q '^hugecollapsed_memory_pressure_paused 0' "$METRICS"
assert_cmd "not paused (metric)" grep -q '^hugecollapsed_memory_pressure_paused 0' "$METRICS"
pauses=$(awk '$1 == "hugecollapsed_memory_pressure_pauses_total" {print $2}' "$METRICS")
assert_ge "pauses counted" "${pauses:-0}" 1
cost=$(awk '$1 == "hugecollapsed_memory_pressure_check_seconds_total" {print $2}' "$METRICS")
hc_log "pressure checks cost ${cost:-?} s in total"

hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
stop_workload hot
assert_eq "hot pattern intact at exit" "$?" 0
((HC_FAIL)) && sed 's/^/# daemon: /' "$HC_DAEMON_LOG" | grep -v 'pass [0-9]*: collapsed' | tail -20
hc_summary
