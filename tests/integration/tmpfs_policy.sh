#!/bin/bash
# Issue 16 defect 5: a MADV_HUGEPAGE file on a tmpfs mounted with
# huge=never outside /dev/shm (here a private mount in $HC_TMP, as a tmpfs
# /tmp is on Debian 13) reads THPeligible 0. The daemon used to take it for
# an ordinary file, which scope = madvise (and, after khugepaged = off, the
# recorded enabled) allowed, and MADV_COLLAPSE collapses shmem whatever the
# mount says. Now it tells tmpfs by device (mountinfo) and follows the
# mount's huge=: not a candidate and never collapsed under huge=never; a
# candidate and collapsed once the mount is huge=advise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"
# shellcheck source=tests/lib/hc_policy_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_policy_lib.sh"

require_root
require_exec "$HC_BIN" "$HC_WORKLOAD"
require_cmd jq mount umount
require_no_other_daemon

MNT=$HC_TMP/mnt
tmpfs_cleanup()
{
	# Detached first (a workload may still hold the file), so that
	# hc_cleanup's rm -rf of $HC_TMP finds an empty directory.
	mountpoint -q "$MNT" && umount -l "$MNT"
	hc_cleanup
}
trap tmpfs_cleanup EXIT
mkdir -p "$MNT"
mount -t tmpfs -o size=64m,huge=never hc-test "$MNT" || hc_not_ok "mount a tmpfs"
hc_khugepaged_quiet || exit 1

CONF=$HC_TMP/madvise.conf
printf '[daemon]\nmetrics_file =\n[collapse]\nscope = madvise\n' >"$CONF"
chmod 0644 "$CONF"
start_workload shmem 8 t --file "$MNT/data" || exit 1
BLOCKS=$(wl_blocks t)

# thp_eligible NAME: the THPeligible of the workload's buffer VMA.
thp_eligible()
{
	awk -v a="$(printf '%x' "${WL_ADDR[$1]}")" '
		/^[0-9a-f]+-/ { split($1, r, "-"); in_vma = (r[1] == a) }
		in_vma && /^THPeligible:/ { print $2; exit }' "/proc/${WL_PID[$1]}/smaps"
}
# dry NAME: candidates in its buffer after a dry run.
dry()
{
	timeout 120 "$HC_BIN" --once --dry-run --json --config "$CONF" --pid "${WL_PID[$1]}" \
		>"$HC_TMP/dry.json" 2>"$HC_TMP/dry.err" || hc_not_ok "dry run: $(cat "$HC_TMP/dry.err")"
	json_candidates_in "$HC_TMP/dry.json" "$1"
}

assert_eq "huge=never: the kernel says THPeligible 0" "$(thp_eligible t)" 0
assert_eq "huge=never: no candidate under scope = madvise" "$(dry t)" 0
timeout 120 "$HC_BIN" --once --json --config "$CONF" --pid "${WL_PID[t]}" >"$HC_TMP/real.json" 2>&1
assert_eq "huge=never: --once exit status" "$?" 0
assert_eq "huge=never: nothing collapsed" "$(wl_pmd_bytes t)" 0

mount -o remount,huge=advise "$MNT" || hc_not_ok "remount huge=advise"
assert_eq "huge=advise: THPeligible 1 for the MADV_HUGEPAGE file" "$(thp_eligible t)" 1
assert_eq "huge=advise: every block a candidate" "$(dry t)" "$BLOCKS"
timeout 120 "$HC_BIN" --once --json --config "$CONF" --pid "${WL_PID[t]}" >"$HC_TMP/real.json" 2>&1
assert_eq "huge=advise: --once exit status" "$?" 0
assert_eq "huge=advise: all of it collapsed" "$(wl_pmd_bytes t)" $((BLOCKS << 21))
stop_workload t
assert_eq "pattern intact" "$?" 0
hc_summary
