#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The THP policy, cell by cell, on the real kernel: THP enabled
# madvise/always/never (with shmem_enabled advise/never/deny) × prctl
# none/completely/except-advised × [collapse] scope kernel/madvise/always,
# each on one workload holding six 4 MiB VMAs filled as 4 KiB pages:
# anonymous plain, hg (MADV_HUGEPAGE) and nh (MADV_NOHUGEPAGE), and the same
# three as shared anonymous memory (shmem). After `hugecollapsed --once --pid`
# each VMA must be huge (AnonHugePages/ShmemPmdMapped) exactly where the
# rules of src/scan/thp_policy.h say (shmem: by shmem_enabled in every scope).
#
# Then khugepaged = off: the daemon sets enabled=never, yet keeps applying
# the policy from before (enabled=madvise): the hg VMA is collapsed, the
# plain one stays 4 KiB; and so does a daemon restarted after a SIGKILL,
# from the record its predecessor left. The EXIT trap restores every knob it touched, and
# khugepaged is kept from scanning meanwhile (it would collapse hg memory
# on its own).
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_cgroup2
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_no_other_daemon

SHMEM0=$(thp_knob shmem_enabled)
matrix_cleanup()
{
	[[ $(thp_knob shmem_enabled) != "$SHMEM0" ]] && echo "$SHMEM0" >"$HC_THP/shmem_enabled"
	hc_policy_cleanup # enabled and the khugepaged knobs, workloads, cgroups
}
trap matrix_cleanup EXIT
hc_khugepaged_quiet || exit 1

# The daemon reads prctl modes exactly where it was built with the BPF
# iterator and the kernel has BTF (src/scan/prctl_iter.h; integration/prctl_modes
# checks that it does).
PRCTL_EXACT=0
[[ -r /sys/kernel/btf/vmlinux && -e $HC_BUILD/bpf/thp_prctl.bpf.o ]] && PRCTL_EXACT=1
hc_log "prctl modes exact (BPF iterator): $PRCTL_EXACT"
VMAS=(anon-plain anon-hg anon-nh shmem-plain shmem-hg shmem-nh)
for scope in kernel madvise always; do
	printf '[collapse]\nscope = %s\n' "$scope" >"$HC_TMP/$scope.conf"
	chmod 0644 "$HC_TMP/$scope.conf"
	assert_cmd "--check-config accepts scope = $scope" "$HC_BIN" --check-config --config "$HC_TMP/$scope.conf"
done
printf '[collapse]\n\nscope = sometimes\n' >"$HC_TMP/bad.conf"
chmod 0644 "$HC_TMP/bad.conf"
out=$("$HC_BIN" --check-config --config "$HC_TMP/bad.conf" 2>&1)
assert_eq "--check-config rejects scope = sometimes (exit status 78)" "$?" 78
assert_cmd "--check-config names file, line, key and why" grep -qF \
	"$HC_TMP/bad.conf:3: key 'scope': 'sometimes' is not one of kernel, madvise, always" <<<"$out"

# expect KIND ADVICE PRCTL SCOPE ENABLED SHMEM: 1 if the rules allow it.
expect()
{
	local kind=$1 adv=$2 prctl=$3 scope=$4 en=$5 sh=$6 known_none=0
	[[ $adv == nh || $prctl == completely ]] && { echo 0; return; }
	[[ $kind == shmem && $sh == deny ]] && { echo 0; return; }
	# Shmem follows shmem_enabled in every scope (scopes stand in for
	# enabled only); THPeligible shows except-advised.
	if [[ $kind == shmem ]]; then
		[[ $prctl == except && $adv != hg ]] && { echo 0; return; }
		[[ $sh == always || $sh == within_size || $sh == force || ($sh == advise && $adv == hg) ]] &&
			echo 1 || echo 0
		return
	fi
	# The BPF task iterator reads the mode exactly (PRCTL_EXACT); without
	# it only a THPeligible 1 on memory without MADV_HUGEPAGE shows that a
	# process did not set except-advised: here, plain anon under always.
	[[ $prctl == none && ($en == always || $PRCTL_EXACT == 1) ]] && known_none=1
	[[ $adv != hg ]] && ((!known_none)) && { echo 0; return; }
	case $scope in
	madvise) [[ $adv == hg ]] && echo 1 || echo 0 ;;
	always) echo 1 ;;
	kernel)
		if [[ $kind == anon ]]; then
			[[ $en == always || ($en == madvise && $adv == hg) ]] && echo 1 || echo 0
		else
			[[ $sh == always || $sh == within_size || $sh == force || ($sh == advise && $adv == hg) ]] &&
				echo 1 || echo 0
		fi
		;;
	esac
}

# vma_huge WL NAME: 1 if workload WL's VMA NAME has any PMD-mapped memory.
vma_huge()
{
	local addr len
	read -r _ _ addr len < <(grep "^vma $2 " "${WL_OUT[$1]}")
	(($(pmd_bytes "${WL_PID[$1]}" "$addr" "$len") > 0)) && echo 1 || echo 0
}

cells=0 wrong=0 n=0
for pair in madvise/advise always/never never/deny; do
	en=${pair%/*} sh=${pair#*/}
	echo "$en" >"$HC_THP/enabled" && echo "$sh" >"$HC_THP/shmem_enabled" || exit 1
	for prctl in none completely except; do
		for scope in kernel madvise always; do
			n=$((n + 1)) m=m$n # a fresh name: its output file is new too
			start_workload matrix 4 "$m" --prctl "$prctl" >/dev/null || exit 1
			timeout 60 "$HC_BIN" --once --pid "${WL_PID[$m]}" --config "$HC_TMP/$scope.conf" \
				--sample-ms 50 >/dev/null 2>"$HC_TMP/once.err"
			rc=$?
			((rc == 0)) || hc_not_ok "enabled=$en prctl=$prctl scope=$scope: --once exit $rc: $(cat "$HC_TMP/once.err")"
			line=
			for v in "${VMAS[@]}"; do
				kind=${v%-*} adv=${v#*-}
				want=$(expect "$kind" "$adv" "$prctl" "$scope" "$en" "$sh")
				got=$(vma_huge "$m" "$v")
				cells=$((cells + 1))
				if [[ $got != "$want" ]]; then
					wrong=$((wrong + 1))
					hc_not_ok "enabled=$en shmem_enabled=$sh prctl=$prctl scope=$scope $v: huge=$got, want $want"
				fi
				line+="$v=$got "
			done
			hc_log "enabled=$en shmem_enabled=$sh prctl=$prctl scope=$scope: $line"
			stop_workload "$m" || hc_not_ok "workload pattern intact (enabled=$en prctl=$prctl scope=$scope)"
		done
	done
done
assert_eq "every one of $cells cells as the rules say" "$wrong" 0
echo madvise >"$HC_THP/enabled" && echo "$SHMEM0" >"$HC_THP/shmem_enabled"

# khugepaged = off applies the policy recorded before it set enabled=never.
hc_cgroup_create off || exit 1
start_workload matrix 4 off || exit 1
hc_cgroup_add off "${WL_PID[off]}" || exit 1
CONF=$HC_TMP/off/hugecollapsed.conf
hc_write_config "$CONF" $'khugepaged = off\nscan_interval_ms = 200' ""
hc_write_rule "$CONF" off ""
hc_daemon_start "$CONF" || exit 1
assert_eq "khugepaged = off: enabled reads never while the daemon runs" "$(thp_knob enabled)" never
assert_cmd "the start-up line names the recorded policy" \
	grep -q 'THP enabled=madvise, shmem_enabled=.*(as before the daemon changed them), scope=kernel: collapsing MADV_HUGEPAGE memory only' \
	"$HC_DAEMON_LOG"
for ((i = 0; i < 300; i++)); do
	[[ $(vma_huge off anon-hg) == 1 ]] && break
	sleep 0.1
done
hc_wait_passes 2 20 || hc_not_ok "two more passes within 20 s"
assert_eq "off: the MADV_HUGEPAGE VMA is collapsed (enabled was madvise)" "$(vma_huge off anon-hg)" 1
assert_eq "off: the plain VMA stays 4 KiB" "$(vma_huge off anon-plain)" 0
assert_eq "off: the nh VMA stays 4 KiB" "$(vma_huge off anon-nh)" 0
assert_eq "off: shmem stays 4 KiB (shmem_enabled=$SHMEM0)" "$(vma_huge off shmem-hg)" "$(expect shmem hg none kernel madvise "$SHMEM0")"
stop_workload off || hc_not_ok "workload pattern intact after off"

# After a crash, the next daemon takes the policy from the record, not from
# the enabled=never its predecessor left behind.
kill -KILL "$HC_DAEMON_PID"
wait "$HC_DAEMON_PID" 2>/dev/null
HC_DAEMON_PID=
assert_eq "off, after SIGKILL: enabled still never" "$(thp_knob enabled)" never
start_workload matrix 4 off2 || exit 1
hc_cgroup_add off "${WL_PID[off2]}" || exit 1
hc_daemon_start "$CONF" || exit 1
assert_cmd "restarted: the start-up line names the recorded madvise policy" \
	grep -q 'THP enabled=madvise, shmem_enabled=.*(as before the daemon changed them), scope=kernel: collapsing MADV_HUGEPAGE memory only' \
	"$HC_DAEMON_LOG"
for ((i = 0; i < 300; i++)); do
	[[ $(vma_huge off2 anon-hg) == 1 ]] && break
	sleep 0.1
done
hc_wait_passes 2 20 || hc_not_ok "restarted: two more passes within 20 s"
assert_eq "restarted: the MADV_HUGEPAGE VMA is collapsed" "$(vma_huge off2 anon-hg)" 1
assert_eq "restarted: the plain VMA stays 4 KiB" "$(vma_huge off2 anon-plain)" 0
hc_daemon_stop
assert_eq "daemon exit status" "$?" 0
assert_eq "enabled is madvise again after the daemon" "$(thp_knob enabled)" madvise
stop_workload off2 || hc_not_ok "workload pattern intact after the restart"

hc_summary
