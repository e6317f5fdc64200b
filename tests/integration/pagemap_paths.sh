#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The two page-table readers agree: `--once --dry-run` over one workload per
# role gives the same per-process results and the same candidates with
# PAGEMAP_SCAN (6.7+) and with the pre-6.7 pread path, forced here with
# --pagemap-read. strace shows that the forced run makes no
# PAGEMAP_SCAN ioctl and the default one does. Needs root, jq and strace;
# exits 77 otherwise.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_root
require_cmd jq
require_cmd strace
require_exec "$HC_BIN" "$HC_WORKLOAD"

ROLES=(hot huge sparse cold lazyfree lazymix nohuge shmem)
CONF=$HC_TMP/hugecollapsed.conf
cat >"$CONF" <<'EOF2'
[collapse]
max_ptes_none = 255
min_referenced_pct = 50
EOF2
chmod 0644 "$CONF"

# Workloads opt in with MADV_HUGEPAGE: keep khugepaged from collapsing them too.
hc_khugepaged_quiet || exit 1
for r in "${ROLES[@]}"; do
	if ! start_workload "$r" 16; then
		hc_not_ok "start workload $r"
		hc_summary
		exit 1
	fi
done
PIDARGS=()
for r in "${ROLES[@]}"; do
	PIDARGS+=(--pid "${WL_PID[$r]}")
done

# run NAME [OPTION...]: one dry pass, JSON to $HC_TMP/NAME.json; then the
# same under strace (ioctls only) to $HC_TMP/NAME.strace. LeakSanitizer
# cannot run under ptrace: off for the traced run of a sanitizer build.
run()
{
	local name=$1
	shift
	timeout 300 "$HC_BIN" --config "$CONF" --once --dry-run --json "${PIDARGS[@]}" "$@" \
		>"$HC_TMP/$name.json" 2>"$HC_TMP/$name.err"
	assert_eq "$name: hugecollapsed exits 0" "$?" 0
	hc_log "$name: results $(jq -c '.results' "$HC_TMP/$name.json")"
	env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 300 \
		strace -f -e trace=ioctl -e raw=ioctl -o "$HC_TMP/$name.strace" \
		"$HC_BIN" --config "$CONF" --once --dry-run --json "${PIDARGS[@]}" "$@" >/dev/null 2>&1
	assert_eq "$name: hugecollapsed exits 0 under strace" "$?" 0
}

# The per-process results and candidate addresses, sorted by PID.
per_process()
{
	jq -c '[.processes[]? | {pid, results, candidates: [.candidates[]?.addr] | sort}] | sort_by(.pid)' "$1"
}

# The workloads hold still (only their access bits move), so a lazy-free
# page the kernel drains into its lazy-free state between the two runs is
# the only thing that could differ; the dry runs discard nothing.
run ioctl
run pread --pagemap-read
# PAGEMAP_SCAN is _IOWR('f', 16, struct pm_scan_arg): 0xc0606610.
assert_ge "default run uses PAGEMAP_SCAN (beyond the probe at start)" "$(grep -c 0xc0606610 "$HC_TMP/ioctl.strace")" 2
# The start-up feature probe (kernel_features.c) asks with no argument
# (NULL: EFAULT where the ioctl exists); a walk passes its pm_scan_arg.
assert_eq "forced run makes the feature probe only (no argument)" \
	"$(grep -c '0xc0606610, 0)' "$HC_TMP/pread.strace")" 1
assert_eq "forced run makes no PAGEMAP_SCAN walk" "$(grep -c '0xc0606610, 0x' "$HC_TMP/pread.strace")" 0
assert_eq "same results in total" "$(jq -c '.results' "$HC_TMP/pread.json")" "$(jq -c '.results' "$HC_TMP/ioctl.json")"
assert_eq "same results and candidates per process" "$(per_process "$HC_TMP/pread.json")" \
	"$(per_process "$HC_TMP/ioctl.json")"
assert_ge "processes compared" "$(jq '.processes | length' "$HC_TMP/ioctl.json")" "${#ROLES[@]}"
assert_ge "some candidates found" "$(jq '.results.candidate // 0' "$HC_TMP/ioctl.json")" 1
assert_ge "some blocks PMD-mapped" "$(jq '.results.pmd_mapped // 0' "$HC_TMP/ioctl.json")" 1

for r in "${ROLES[@]}"; do
	stop_workload "$r"
	assert_eq "$r pattern intact at exit" "$?" 0
done
hc_summary
