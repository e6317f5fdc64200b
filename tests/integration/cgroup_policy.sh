#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Per-cgroup policy on the real kernel: two hot workloads, one in a cgroup
# whose cgroup.d file says enable = yes, one in a cgroup whose file says
# enable = no. `--once --dry-run --json` reports the second as disabled and
# offers none of its blocks; a real `--once` collapses only the first.
# The cgroups are made directly under the cgroup2 mount and removed by an
# EXIT trap, even on failure. Needs root and cgroup2; exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_root
require_cmd jq
require_exec "$HC_BIN" "$HC_WORKLOAD"

CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [[ -z $CG_ROOT || ! -w $CG_ROOT/cgroup.procs ]]; then
	hc_skip "no writable cgroup2 mount in /proc/mounts"
fi
ON=hc-test-on-$$
OFF=hc-test-off-$$

# Before the library's own cleanup (which kills the workloads): move our
# processes out of the test cgroups, then remove them.
remove_cgroups()
{
	local cg pid
	for cg in "$ON" "$OFF"; do
		[[ -d $CG_ROOT/$cg ]] || continue
		while read -r pid; do
			echo "$pid" >"$CG_ROOT/cgroup.procs" 2>/dev/null
		done <"$CG_ROOT/$cg/cgroup.procs"
		rmdir "$CG_ROOT/$cg" || echo "# WARNING: cannot remove $CG_ROOT/$cg"
	done
}
trap 'remove_cgroups; hc_cleanup' EXIT

# cgroup_of PID: its cgroup v2 path, relative to the mount root.
cgroup_of()
{
	sed -n 's/^0:://p' "/proc/$1/cgroup"
}

# Another daemon collapsing everything (someone else's test) would make
# the PMD checks below meaningless: say so, to explain a failure.
others=$(pgrep -x hugecollapsed | tr '\n' ' ')
[[ -n $others ]] && hc_log "WARNING: other hugecollapsed processes are running: $others"

mkdir "$CG_ROOT/$ON" "$CG_ROOT/$OFF" || {
	hc_not_ok "create cgroups under $CG_ROOT"
	hc_summary
	exit 1
}

ETC=$HC_TMP/etc
CONF=$ETC/hugecollapsed.conf
mkdir -m 0755 "$ETC" "$ETC/cgroup.d"
cat >"$CONF" <<'EOF'
[daemon]
metrics_file =
[collapse]
enable = yes
max_ptes_none = 255
min_referenced_pct = 50
EOF
printf '[cgroup]\npath = /%s\nenable = yes\n' "$ON" >"$ETC/cgroup.d/on.conf"
printf '[cgroup]\npath = /%s\nenable = no\n' "$OFF" >"$ETC/cgroup.d/off.conf"
chmod 0644 "$CONF" "$ETC"/cgroup.d/*.conf
# shellcheck disable=SC2016 # $0 and $1 are the inner shell's
assert_cmd "--check-config reads both policies" \
	bash -c '"$0" --check-config --config "$1" | grep -q "(2 cgroup policies)"' "$HC_BIN" "$CONF"

# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
for w in on off; do
	if ! start_workload hot 32 "$w"; then
		hc_not_ok "start workload $w"
		hc_summary
		exit 1
	fi
done
echo "${WL_PID[on]}" >"$CG_ROOT/$ON/cgroup.procs"
echo "${WL_PID[off]}" >"$CG_ROOT/$OFF/cgroup.procs"
assert_eq "workload on is in /$ON" "$(cgroup_of "${WL_PID[on]}")" "/$ON"
assert_eq "workload off is in /$OFF" "$(cgroup_of "${WL_PID[off]}")" "/$OFF"
PIDARGS=(--pid "${WL_PID[on]}" --pid "${WL_PID[off]}")

### Dry run: the policy as the daemon sees it.
DRY=$HC_TMP/dry.json
timeout 300 "$HC_BIN" --once --dry-run --json --config "$CONF" "${PIDARGS[@]}" >"$DRY" 2>"$HC_TMP/dry.err"
assert_eq "dry: exit status" "$?" 0
proc_field() # NAME JQ-EXPR: of that workload's entry in processes[]
{
	jq -c --argjson pid "${WL_PID[$1]}" ".processes[]? | select(.pid == \$pid) | $2" "$DRY"
}
assert_eq "dry: on is enabled" "$(proc_field on .enabled)" true
assert_eq "dry: off is listed with \"enabled\": false" "$(proc_field off .enabled)" false
assert_eq "dry: on's cgroup" "$(proc_field on .cgroup)" "\"/$ON\""
assert_eq "dry: off's cgroup" "$(proc_field off .cgroup)" "\"/$OFF\""
assert_eq "dry: every block of on is a candidate" "$(json_candidates_in "$DRY" on)" "$(wl_blocks on)"
assert_eq "dry: no block of off is a candidate" "$(json_candidates_in "$DRY" off)" 0
assert_eq "dry: one process disabled" "$(jq .processes_disabled "$DRY")" 1

### Real pass.
timeout 300 "$HC_BIN" --once --json --config "$CONF" "${PIDARGS[@]}" >"$HC_TMP/real.json" 2>"$HC_TMP/real.err"
assert_eq "real: exit status" "$?" 0
assert_ge "real: on is PMD-mapped (percent)" "$(wl_pmd_pct on)" 90
assert_eq "real: off has no PMD-mapped bytes" "$(wl_pmd_bytes off)" 0
# Bounds that hold even if someone else collapsed blocks meanwhile: the
# pass tried no more blocks than the enabled workload has.
# The bound is on's candidates in the dry run, not its buffer: its own heap
# may hold a collapsible block too (an ASan build's allocator does).
on_cands=$(jq --argjson pid "${WL_PID[on]}" '[.processes[]? | select(.pid == $pid) | .candidates | length] | add // 0' "$DRY")
assert_le "real: blocks collapsed, at most on's dry-run candidates" "$(jq .outcomes.collapsed "$HC_TMP/real.json")" "$on_cands"
assert_le "real: collapsed_bytes, at most on's dry-run candidates" "$(jq .collapsed_bytes "$HC_TMP/real.json")" $((on_cands << 21))

for w in on off; do
	stop_workload "$w"
	assert_eq "$w pattern intact at exit" "$?" 0
done
if ((HC_FAIL)); then
	hc_log "dry-run stderr: $(cat "$HC_TMP/dry.err")"
	hc_log "real stderr: $(cat "$HC_TMP/real.err")"
	hc_log "dry-run JSON: $(jq -c '.processes' "$DRY")"
fi
hc_summary
