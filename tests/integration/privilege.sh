#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Least privilege: with one of CAP_SYS_ADMIN, CAP_SYS_NICE or CAP_SYS_PTRACE
# dropped (capsh --drop, which removes it from the bounding set, so the exec'd
# daemon never has it), the daemon and --once stop up front with exit 4 and
# one error line naming the missing capability; nothing is collapsed and the
# khugepaged knobs are not touched. --dry-run works without CAP_SYS_NICE,
# and --check-config needs none of them.
# Needs root and capsh (libcap2-bin); exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_root
require_cmd capsh jq
require_exec "$HC_BIN" "$HC_WORKLOAD"

KHP=/sys/kernel/mm/transparent_hugepage/khugepaged
KNOBS=(scan_sleep_millisecs pages_to_scan)
declare -A KNOB0=()
for k in "${KNOBS[@]}"; do
	KNOB0[$k]=$(cat "$KHP/$k")
done
# The daemon must not get as far as khugepaged = idle; if it did, undo it.
restore_knobs()
{
	local k
	for k in "${KNOBS[@]}"; do
		[[ $(cat "$KHP/$k") != "${KNOB0[$k]}" ]] && echo "${KNOB0[$k]}" >"$KHP/$k"
	done
}
trap 'restore_knobs; hc_cleanup' EXIT

CONF=$HC_TMP/hugecollapsed.conf
cat >"$CONF" <<EOF
[daemon]
scan_interval_ms = 100
metrics_file = $HC_TMP/metrics.prom
metrics_interval_s = 1
state_file = $HC_TMP/khugepaged.state
khugepaged = idle
[collapse]
min_referenced_pct = 0
EOF
chmod 0644 "$CONF"

# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
if ! start_workload hot 16; then
	hc_not_ok "start the hot workload"
	hc_summary
	exit 1
fi
PMD0=$(wl_pmd_bytes hot)

# without CAPS CMD…: runs CMD with CAPS (comma-separated) dropped; stdout
# to $HC_TMP/out, stderr to $HC_TMP/err; returns CMD's status.
without()
{
	local caps=$1
	shift
	timeout 20 capsh --drop="$caps" -- -c 'exec "$@"' sh "$@" >"$HC_TMP/out" 2>"$HC_TMP/err"
}

# check_refusal DESC NAME…: exit 4 was seen by the caller; stderr is one line
# naming exactly the capabilities NAME… and no other.
check_refusal()
{
	local desc=$1 name other
	shift
	assert_eq "$desc: one line on stderr" "$(wc -l <"$HC_TMP/err")" 1
	for name in "$@"; do
		if grep -q "missing $name" "$HC_TMP/err"; then
			hc_ok "$desc: names $name"
		else
			hc_not_ok "$desc: does not name $name: $(cat "$HC_TMP/err")"
		fi
	done
	for other in CAP_SYS_ADMIN CAP_SYS_NICE CAP_SYS_PTRACE; do
		[[ " $* " == *" $other "* ]] && continue
		if grep -q "$other" "$HC_TMP/err"; then
			hc_not_ok "$desc: also names $other, which it has: $(cat "$HC_TMP/err")"
		fi
	done
}

knobs_now()
{
	local k s=
	for k in "${KNOBS[@]}"; do
		s+="$k=$(cat "$KHP/$k") "
	done
	echo "$s"
}
KNOBS_BEFORE=$(knobs_now)

for cap in CAP_SYS_ADMIN CAP_SYS_NICE CAP_SYS_PTRACE; do
	lc=${cap,,}
	without "$lc" "$HC_BIN" --config "$CONF" --once --pid "${WL_PID[hot]}" --sample-ms 50
	assert_eq "--once without $cap exits 4" "$?" 4
	check_refusal "--once without $cap" "$cap"

	without "$lc" "$HC_BIN" --config "$CONF"
	rc=$?
	assert_eq "daemon without $cap exits 4 at once" "$rc" 4
	check_refusal "daemon without $cap" "$cap"
	assert_eq "daemon without $cap left khugepaged alone" "$(knobs_now)" "$KNOBS_BEFORE"
	if [[ -e $HC_TMP/metrics.prom ]]; then
		hc_not_ok "daemon without $cap wrote a metrics file"
	else
		hc_ok "daemon without $cap wrote no metrics file"
	fi

	without "$lc" "$HC_BIN" --config "$CONF" --check-config
	assert_eq "--check-config without $cap exits 0" "$?" 0
done

# --dry-run only reads: CAP_SYS_NICE (process_madvise) is not needed.
without cap_sys_nice "$HC_BIN" --config "$CONF" --once --dry-run --json --pid "${WL_PID[hot]}" --sample-ms 50
rc=$?
assert_eq "--once --dry-run without CAP_SYS_NICE exits 0" "$rc" 0
((rc != 0)) && hc_log "stderr: $(cat "$HC_TMP/err")"
cp "$HC_TMP/out" "$HC_TMP/dry.json"
assert_eq "--dry-run without CAP_SYS_NICE lists every hot block" "$(json_candidates_in "$HC_TMP/dry.json" hot)" \
	"$(wl_blocks hot)"
# But it still needs what reading takes.
for cap in CAP_SYS_ADMIN CAP_SYS_PTRACE; do
	without "${cap,,}" "$HC_BIN" --config "$CONF" --once --dry-run --pid "${WL_PID[hot]}" --sample-ms 50
	assert_eq "--once --dry-run without $cap exits 4" "$?" 4
	check_refusal "--once --dry-run without $cap" "$cap"
done

# All three missing: still one line, naming all three.
without cap_sys_admin,cap_sys_nice,cap_sys_ptrace "$HC_BIN" --config "$CONF" --once --pid "${WL_PID[hot]}"
assert_eq "--once without all three exits 4" "$?" 4
check_refusal "--once without all three" CAP_SYS_ADMIN CAP_SYS_NICE CAP_SYS_PTRACE

assert_eq "no refused run collapsed anything (hot PMD bytes)" "$(wl_pmd_bytes hot)" "$PMD0"

# Control: with every capability the same command does collapse, so the
# refusals above were about the capabilities and nothing else.
timeout 60 "$HC_BIN" --config "$CONF" --once --pid "${WL_PID[hot]}" --sample-ms 50 >"$HC_TMP/out" 2>"$HC_TMP/err"
assert_eq "--once with every capability exits 0" "$?" 0
assert_ge "--once with every capability collapses the hot workload (PMD %)" "$(wl_pmd_pct hot)" 90

stop_workload hot
assert_eq "hot pattern intact at exit" "$?" 0
hc_summary
