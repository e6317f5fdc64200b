#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# THP coverage an operator can see, on the real kernel:
#  - a daemon confined to one test cgroup (its policy file sets
#    coverage_target_pct = 90) collapses a hot anonymous and a shmem
#    workload there; its metrics file then shows that cgroup's anon and shmem
#    bytes (summed from smaps: this machine's cgroup v2 has no memory
#    controller) and a coverage ratio that agrees with the workloads' own
#    smaps, its target 0.9, and nothing pending; with four more cgroups and
#    coverage_top_cgroups = 3 there are 5 groups, one of them "other";
#    hugecollapsed_collapsed_bytes_total has the same 5 groups; a few passes
#    later the groups are the same (nothing changed); the file passes
#    promtool;
#  - `--status` prints the cgroup's row (coverage, target) and the process
#    table header; `--status --json` carries the same numbers;
#  - Debian's prometheus-node-exporter, run by PID with only the textfile
#    collector on the metrics directory, on 127.0.0.1 and a free port,
#    serves the hugecollapsed_* series with node_textfile_scrape_error 0.
# Needs root and a writable cgroup2 mount; the daemon and the exporter are
# ours and stopped by PID.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}
require_root
require_cmd jq promtool curl perl "$NODE_EXPORTER"
require_exec "$HC_BIN" "$HC_WORKLOAD"

CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [[ -z $CG_ROOT || ! -w $CG_ROOT/cgroup.procs ]]; then
	hc_skip "no writable cgroup2 mount in /proc/mounts"
fi
CG=hc-test-coverage-$$
DPID=
XPID=

cleanup()
{
	local k
	hc_stop_pid "$XPID"
	hc_stop_pid "$DPID"
	for k in 1 2 3 4; do
		hc_cgroup_remove "$CG_ROOT" "$CG_ROOT/$CG-x$k"
	done
	hc_cgroup_remove "$CG_ROOT" "$CG_ROOT/$CG"
	hc_cleanup
}
trap cleanup EXIT

# Shmem follows shmem_enabled in every scope, as the kernel's policy does:
# advise, so that the workload's advised shmem counts (written back at exit).
hc_thp_set shmem_enabled advise || exit 1
ETC=$HC_TMP/etc
RUN=$HC_TMP/run
PROM=$RUN/hugecollapsed.prom
CONF=$ETC/hugecollapsed.conf
mkdir -m 0755 "$ETC" "$ETC/cgroup.d" "$RUN"
printf '[daemon]\nscan_interval_ms = 200\nmetrics_file = %s\nmetrics_interval_s = 1\ncoverage_top_cgroups = 3\n[collapse]\nenable = no\n' \
	"$PROM" >"$CONF"
printf '[cgroup]\npath = /%s\nenable = yes\nmin_referenced_pct = 0\nscope = madvise\ncoverage_target_pct = 90\n' "$CG" \
	>"$ETC/cgroup.d/test.conf"
chmod 0644 "$CONF" "$ETC/cgroup.d/test.conf"
assert_cmd "the config with coverage keys is valid" "$HC_BIN" --check-config --config "$CONF"

if ! mkdir "$CG_ROOT/$CG"; then
	hc_not_ok "create $CG_ROOT/$CG"
	hc_summary
	exit 1
fi
# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
if ! start_workload hot 32 hot || ! start_workload shmem 16 shm; then
	hc_not_ok "start the workloads"
	hc_summary
	exit 1
fi
echo "${WL_PID[hot]}" >"$CG_ROOT/$CG/cgroup.procs"
echo "${WL_PID[shm]}" >"$CG_ROOT/$CG/cgroup.procs"
# Four more cgroups without a policy file, a sleeping process in each: with
# coverage_top_cgroups = 3, at most 3 of them and "/" get their own series,
# the rest is "other". Each sleeper holds 3 MB of heap: a process under
# 2 MiB of RSS gets no look at all (it cannot fill a block), so its cgroup
# would never be known.
for k in 1 2 3 4; do
	mkdir "$CG_ROOT/$CG-x$k" || hc_not_ok "create $CG_ROOT/$CG-x$k"
	perl -e 'my $heap = "x" x 3000000; sleep 600' &
	HC_PIDS+=("$!")
	echo "$!" >"$CG_ROOT/$CG-x$k/cgroup.procs"
done

env -u NOTIFY_SOCKET -u WATCHDOG_USEC -u WATCHDOG_PID "$HC_BIN" --config "$CONF" 2>"$HC_TMP/daemon.err" &
DPID=$!

# value SERIES: its value in the metrics file, or empty.
value()
{
	S=$1 awk 'BEGIN { s = ENVIRON["S"] } index($0, s " ") == 1 { print substr($0, length(s) + 2); exit }' "$PROM"
}
ratio_series="hugecollapsed_cgroup_thp_coverage_ratio{cgroup=\"/$CG\"}"
covered()
{
	local v
	v=$(value "$ratio_series")
	[[ -n $v ]] && awk -v v="$v" 'BEGIN { exit !(v >= 0.9) }'
}
hc_wait_until 60 test -s "$PROM"
hc_wait_until 60 covered
assert_cmd "the cgroup's coverage reaches its 90% target in the metrics file" covered
hc_log "coverage of /$CG: $(value "$ratio_series"); hot $(wl_pmd_pct hot)%, shmem $(wl_pmd_pct shm)% PMD-mapped"
assert_cmd "daemon still running" kill -0 "$DPID"

# What smaps of the two processes says, summed: the metric must agree.
smaps_sum() # FIELD
{
	awk -v f="$1:" '$1 == f { s += $2 } END { print s * 1024 }' "/proc/${WL_PID[hot]}/smaps" "/proc/${WL_PID[shm]}/smaps"
}
anon=$(value "hugecollapsed_cgroup_anon_bytes{cgroup=\"/$CG\"}")
shmem=$(value "hugecollapsed_cgroup_shmem_bytes{cgroup=\"/$CG\"}")
assert_ge "anon bytes of the cgroup cover the 32 MiB buffer" "${anon:-0}" $((32 << 20))
assert_le "anon bytes within 4 MiB of the workloads' smaps Anonymous" "$(( ${anon:-0} - $(smaps_sum Anonymous) ))" $((4 << 20))
assert_ge "shmem bytes of the cgroup cover the 16 MiB buffer" "${shmem:-0}" $((16 << 20))
assert_eq "anon huge bytes equal the workloads' AnonHugePages" \
	"$(value "hugecollapsed_cgroup_anon_huge_bytes{cgroup=\"/$CG\"}")" "$(smaps_sum AnonHugePages)"
assert_eq "shmem huge bytes equal the workloads' ShmemPmdMapped" \
	"$(value "hugecollapsed_cgroup_shmem_huge_bytes{cgroup=\"/$CG\"}")" "$(smaps_sum ShmemPmdMapped)"
assert_eq "the policy's target is exported" "$(value "hugecollapsed_cgroup_coverage_target_ratio{cgroup=\"/$CG\"}")" 0.90
assert_eq "nothing pending once collapsed" "$(value "hugecollapsed_cgroup_pending_bytes{cgroup=\"/$CG\"}")" 0
assert_ge "collapsed bytes of the group" "$(value "hugecollapsed_cgroup_collapsed_bytes{cgroup=\"/$CG\"}")" $((32 << 20))
ngroups=$(grep -c '^hugecollapsed_cgroup_thp_coverage_ratio{' "$PROM")
assert_eq "groups bounded: policy + coverage_top_cgroups (3) + other" "$ngroups" 5
assert_cmd "the rest is summed as other" grep -q '^hugecollapsed_cgroup_thp_coverage_ratio{cgroup="other"} ' "$PROM"
cp "$PROM" "$HC_TMP/snapshot.prom"
assert_cmd "promtool check metrics accepts the file" promtool check metrics <"$HC_TMP/snapshot.prom"
# The collapsed bytes counter has the same groups (labels) as coverage.
labels() # FILE FAMILY: its cgroup labels, sorted
{
	grep "^$2{" "$1" | sed 's/^[^{]*{cgroup="\(.*\)"} .*/\1/' | sort
}
assert_eq "collapsed_bytes_total has the coverage groups" \
	"$(labels "$HC_TMP/snapshot.prom" hugecollapsed_collapsed_bytes_total)" \
	"$(labels "$HC_TMP/snapshot.prom" hugecollapsed_cgroup_thp_coverage_ratio)"
# Nothing changed (the sleepers sleep): a few passes later, the same series.
passes=$(value hugecollapsed_passes_total)
more_passes() { (($(value hugecollapsed_passes_total) >= passes + 3)); }
hc_wait_until 30 more_passes
cp "$PROM" "$HC_TMP/snapshot2.prom"
for fam in hugecollapsed_collapsed_bytes_total hugecollapsed_cgroup_thp_coverage_ratio; do
	assert_eq "$fam: the same series $(($(value hugecollapsed_passes_total) - passes)) passes later" \
		"$(labels "$HC_TMP/snapshot2.prom" $fam)" "$(labels "$HC_TMP/snapshot.prom" $fam)"
done

### --status and --status --json
"$HC_BIN" --status --config "$CONF" >"$HC_TMP/status.out" 2>&1
assert_eq "--status exits 0" "$?" 0
sed 's/^/#   /' "$HC_TMP/status.out"
assert_cmd "--status: the cgroup's row with coverage and its 90% target" \
	grep -Eq "^ +(9[0-9]|100)\.[0-9]% +90% .* /$CG\$" "$HC_TMP/status.out"
assert_cmd "--status: the process table" grep -q '^top processes by pending bytes' "$HC_TMP/status.out"
assert_cmd "--status: the summary line stays" grep -Eq '^hugecollapsed: [0-9]+ passes' "$HC_TMP/status.out"
"$HC_BIN" --status --json --config "$CONF" >"$HC_TMP/status.json" 2>&1
assert_eq "--status --json exits 0" "$?" 0
assert_eq "--status --json: the cgroup's target" \
	"$(jq -r --arg cg "/$CG" '.cgroups[] | select(.cgroup == $cg) | .target' "$HC_TMP/status.json")" 0.9
# shellcheck disable=SC2016 # $cg is jq's
assert_cmd "--status --json: coverage >= 0.9" \
	jq -e --arg cg "/$CG" '.cgroups[] | select(.cgroup == $cg) | .coverage >= 0.9' "$HC_TMP/status.json"
assert_cmd "--status --json: passes counted" jq -e '.passes >= 1 and (.processes | type == "array")' \
	"$HC_TMP/status.json"

### node_exporter's textfile collector on the metrics directory.
# A free port: one no socket listens on (/proc/net/tcp{,6} state 0A).
listening=$(awk '$4 == "0A" { split($2, a, ":"); print strtonum("0x" a[2]) }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
port=
for ((p = 20000 + $$ % 20000; p < 65000; p += 7)); do
	grep -qx "$p" <<<"$listening" || {
		port=$p
		break
	}
done
"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults --collector.textfile \
	--collector.textfile.directory="$RUN" >"$HC_TMP/ne.out" 2>&1 &
XPID=$!
scrape()
{
	curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" >"$HC_TMP/scrape.txt"
}
hc_wait_until 30 scrape
assert_cmd "node_exporter serves /metrics on 127.0.0.1:$port" scrape
assert_eq "node_textfile_scrape_error is 0" \
	"$(awk '$1 == "node_textfile_scrape_error" { print $2 }' "$HC_TMP/scrape.txt")" 0
assert_cmd "the metrics file's mtime is exported" grep -q "^node_textfile_mtime_seconds{file=\"$PROM\"}" \
	"$HC_TMP/scrape.txt"
for s in hugecollapsed_passes_total hugecollapsed_last_pass_timestamp_seconds hugecollapsed_backing_off \
	"$ratio_series" "hugecollapsed_cgroup_coverage_target_ratio{cgroup=\"/$CG\"}"; do
	assert_cmd "node_exporter serves $s" grep -qF "$s " "$HC_TMP/scrape.txt"
done
assert_cmd "node_exporter still running" kill -0 "$XPID"
hc_stop_pid "$XPID"
XPID=
hc_stop_pid "$DPID"
DPID=
assert_eq "no daemon errors" "$(grep -c 'error' "$HC_TMP/daemon.err")" 0
stop_workload hot
assert_eq "hot workload exits 0 (its pattern intact after collapse)" "$?" 0
stop_workload shm
assert_eq "shmem workload exits 0 (its pattern intact after collapse)" "$?" 0
hc_summary
