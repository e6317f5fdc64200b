#!/bin/bash
# Issue 17 part 2: the daemon knows each process's prctl(PR_SET_THP_DISABLE)
# mode exactly (the BPF task iterator, src/scan/prctl_iter.h), so that where the
# policy allows plain memory but THPeligible cannot show it, plain memory is
# collapsed for processes that did not opt out, and only for those.
#   1. khugepaged = off on an enabled=always host (THPeligible reads 0
#      everywhere once the daemon sets enabled=never);
#   2. scope = always on an enabled=madvise host.
# In each, workloads started after the daemon (matrix role, 8 MiB VMAs):
# a plain program's plain VMA is >= 90% huge; an except-advised one keeps
# its plain memory at 4 KiB (its MADV_HUGEPAGE VMA is collapsed); a
# completely disabled one and MADV_NOHUGEPAGE memory stay 4 KiB; a program
# whose launcher set except-advised and then forked and exec'd it stays
# 4 KiB too; and a process that clears its prctl again is collapsed after.
# Today's code (no iterator) leaves the plain program's plain memory at 0%.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_cgroup2
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_no_other_daemon
[[ -r /sys/kernel/btf/vmlinux ]] || hc_skip "no kernel BTF: no BPF task iterator"

trap hc_policy_cleanup EXIT
hc_khugepaged_quiet || exit 1

# wait_pct WL NAME MIN: polls up to 30 s for VMA NAME to reach MIN percent.
wait_pct()
{
	local i
	for ((i = 0; i < $(hc_scaled 30) * 10; i++)); do
		(($(wl_vma_pct "$1" "$2") >= $3)) && return 0
		sleep 0.1
	done
	return 1
}

# round LABEL: the five workloads against a running daemon.
round()
{
	local t=$1 pid
	start_workload matrix 8 "$t-plain" || exit 1
	start_workload matrix 8 "$t-except" --prctl except || exit 1
	start_workload matrix 8 "$t-off" --prctl completely || exit 1
	start_workload matrix 8 "$t-launched" --launch except || exit 1
	start_workload matrix 8 "$t-clears" --prctl except || exit 1
	for w in plain except off launched clears; do
		hc_cgroup_add cg "${WL_PID[$t-$w]}" || exit 1
	done
	wait_pct "$t-plain" anon-plain 90
	assert_ge "$t: a plain program's plain memory is huge" "$(wl_vma_pct "$t-plain" anon-plain)" 90
	wait_pct "$t-except" anon-hg 90
	assert_ge "$t: except-advised: its MADV_HUGEPAGE memory is huge" "$(wl_vma_pct "$t-except" anon-hg)" 90
	wait_pct "$t-launched" anon-hg 90
	assert_ge "$t: launched except-advised: its MADV_HUGEPAGE memory is huge" \
		"$(wl_vma_pct "$t-launched" anon-hg)" 90
	hc_wait_passes 3 30 || hc_not_ok "$t: three more passes within 30 s"
	assert_eq "$t: except-advised: plain memory stays 4 KiB" "$(wl_vma_pct "$t-except" anon-plain)" 0
	assert_eq "$t: launched except-advised (fork + exec): plain stays 4 KiB" "$(wl_vma_pct "$t-launched" anon-plain)" 0
	assert_eq "$t: prctl completely: plain stays 4 KiB" "$(wl_vma_pct "$t-off" anon-plain)" 0
	assert_eq "$t: prctl completely: MADV_HUGEPAGE stays 4 KiB" "$(wl_vma_pct "$t-off" anon-hg)" 0
	assert_eq "$t: MADV_NOHUGEPAGE stays 4 KiB" "$(wl_vma_pct "$t-plain" anon-nh)" 0
	assert_eq "$t: not cleared yet: plain stays 4 KiB" "$(wl_vma_pct "$t-clears" anon-plain)" 0
	kill -s RTMIN+2 "${WL_PID[$t-clears]}"
	hc_wait_until 10 grep -q 'prctl cleared' "${WL_OUT[$t-clears]}" || hc_not_ok "$t: the workload cleared its prctl"
	wait_pct "$t-clears" anon-plain 90 # full_rescan_s = 2 finds the change
	assert_ge "$t: after clearing its prctl: plain memory is huge" "$(wl_vma_pct "$t-clears" anon-plain)" 90
	for w in plain except off clears; do
		stop_workload "$t-$w" || hc_not_ok "$t-$w: pattern intact"
	done
	pid=${WL_PID[$t-launched]}
	kill -TERM "$pid" # the launcher's child: the launcher (ours) exits with it
	hc_wait_until 10 bash -c "! kill -0 $pid 2>/dev/null" || hc_not_ok "$t-launched: exited"
}

hc_cgroup_create cg || exit 1
CONF=$HC_TMP/a/hugecollapsed.conf

# 1. khugepaged = off on an enabled=always host.
echo always >"$HC_THP/enabled" || exit 1
hc_write_config "$CONF" $'khugepaged = off\nscan_interval_ms = 200\nfull_rescan_s = 2' ""
hc_write_rule "$CONF" cg ""
hc_daemon_start "$CONF" || exit 1
assert_eq "off: enabled reads never while the daemon runs" "$(thp_knob enabled)" never
assert_cmd "off: the start line says prctl modes come from the iterator" \
	grep -q 'prctl(PR_SET_THP_DISABLE) modes: read from each process.s mm by a BPF task iterator' "$HC_DAEMON_LOG"
assert_cmd "off: the start line says all memory is collapsed, without a caveat" \
	grep -q 'THP enabled=always, .*(as before the daemon changed them), scope=kernel: collapsing all memory but MADV_NOHUGEPAGE$' \
	"$HC_DAEMON_LOG"
round off
hc_daemon_stop
assert_eq "off: daemon exit status" "$?" 0
assert_eq "off: enabled is always again after the daemon" "$(thp_knob enabled)" always

# 2. scope = always on an enabled=madvise host.
echo madvise >"$HC_THP/enabled" || exit 1
CONF=$HC_TMP/b/hugecollapsed.conf
hc_write_config "$CONF" $'khugepaged = keep\nscan_interval_ms = 200\nfull_rescan_s = 2' ""
hc_write_rule "$CONF" cg "scope = always"
hc_daemon_start "$CONF" || exit 1
round always
# The dry run, every process older than it: exact there too, so the
# except-advised plain VMA is thp_policy (not prctl_unknown, the safe
# rule's name where nothing is exact).
start_workload matrix 4 dry --prctl except || exit 1
hc_cgroup_add cg "${WL_PID[dry]}" || exit 1
"$HC_BIN" --once --dry-run --json --pid "${WL_PID[dry]}" --config "$CONF" >"$HC_TMP/dry.json" 2>"$HC_TMP/dry.err"
assert_eq "dry run: no prctl_unknown" "$(json_proc_result "$HC_TMP/dry.json" dry prctl_unknown)" 0
assert_ge "dry run: except-advised plain memory is thp_policy" "$(json_proc_result "$HC_TMP/dry.json" dry thp_policy)" 2
stop_workload dry || hc_not_ok "dry: pattern intact"
hc_daemon_stop
assert_eq "always: daemon exit status" "$?" 0

hc_summary
