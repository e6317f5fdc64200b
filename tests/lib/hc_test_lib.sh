# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Shared helpers for tests/integration/*.sh. Source it, do not run it:
#   . "$(dirname "$0")/../lib/hc_test_lib.sh"
#
# It owns a temp dir ($HC_TMP) and the workloads it starts; an EXIT trap kills
# exactly those PIDs (never by name) and removes the temp dir. Tests print
# TAP-ish "ok N - …" / "not ok N - …" lines and end with hc_summary, whose
# last line is "N passed, N failed" and whose status is the test's exit code.
# Do not use set -e: assertions report failures and carry on.

HC_SRC=${HC_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
HC_BUILD=${HC_BUILD:-$HC_SRC/build}
HC_BIN=${HC_BIN:-$HC_BUILD/hugecollapsed}
HC_WORKLOAD=${HC_WORKLOAD:-$HC_BUILD/tests/hc_workload}

HC_PASS=0
HC_FAIL=0
HC_PIDS=()             # workloads we started and have not reaped yet
declare -A WL_PID=()   # name -> pid
declare -A WL_ADDR=()  # name -> "0x…" start of its buffer
declare -A WL_LEN=()   # name -> buffer length in bytes
declare -A WL_OUT=()   # name -> file holding its stdout
declare -A HC_KHP_SAVED=() # khugepaged knob -> value before hc_khugepaged_quiet
HC_KHP_DIR=/sys/kernel/mm/transparent_hugepage/khugepaged
declare -A HC_THP_SET_SAVED=() # THP knob (below transparent_hugepage/) -> value before hc_thp_set
HC_TMP=$(mktemp -d /tmp/hc-test.XXXXXX) || exit 1

hc_log()
{
	echo "# $*"
}

# Kill only children of this shell that we recorded: a PID whose parent is
# not us has been reaped and possibly reused by someone else.
hc_cleanup()
{
	local pid k
	for pid in "${HC_PIDS[@]}"; do
		if [[ -r /proc/$pid/stat ]] && [[ $(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) == "$$" ]]; then
			kill -TERM "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	HC_PIDS=()
	for k in "${!HC_KHP_SAVED[@]}"; do
		echo "${HC_KHP_SAVED[$k]}" >"$HC_KHP_DIR/$k"
	done
	HC_KHP_SAVED=()
	for k in "${!HC_THP_SET_SAVED[@]}"; do
		echo "${HC_THP_SET_SAVED[$k]}" >"$HC_KHP_DIR/../$k"
	done
	HC_THP_SET_SAVED=()
	[[ -n $HC_TMP && -d $HC_TMP ]] && rm -rf "$HC_TMP"
}

# hc_thp_set KNOB VALUE: writes a THP knob (a file below
# /sys/kernel/mm/transparent_hugepage, e.g. shmem_enabled) until the test
# exits; the EXIT trap writes the old value back.
hc_thp_set()
{
	local v
	if [[ -z ${HC_THP_SET_SAVED[$1]} ]]; then
		v=$(cat "$HC_KHP_DIR/../$1") || return 1
		[[ $v == *[* ]] && v=${v#*[} && v=${v%%]*}
		HC_THP_SET_SAVED[$1]=$v
	fi
	echo "$2" >"$HC_KHP_DIR/../$1" || return 1
	# hc_policy_lib.sh's saved knobs (hc_thp_save), which its checks and
	# its EXIT trap compare with: the test's value is the one a daemon
	# must leave in place.
	if declare -p HC_THP_SAVED &>/dev/null && [[ -n ${HC_THP_SAVED[$1]:-} ]]; then
		HC_THP_SAVED[$1]=$2
	fi
}

# hc_thp_madvise: the THP policy the tests are written for, until the test
# exits (hc_thp_set): enabled=madvise, with the PMD size inheriting it where
# the kernel has per-size files (6.8+). Workloads opt in with MADV_HUGEPAGE.
# Hosts boot with other policies: under "never" nothing may be collapsed, by
# khugepaged or by the daemon (THPeligible reads 0 everywhere); under
# "always" faults map THPs at once, so nothing starts small.
hc_thp_madvise()
{
	hc_thp_set enabled madvise || return 1
	if [[ -e $HC_KHP_DIR/../hugepages-2048kB/enabled ]]; then
		hc_thp_set hugepages-2048kB/enabled inherit || return 1
	fi
}

# hc_khugepaged_quiet: stop the kernel's khugepaged from scanning until the
# test exits (the EXIT trap writes the old values back). Workloads opt in to
# THP with MADV_HUGEPAGE, as khugepaged's default policy asks, so khugepaged
# could otherwise collapse their memory behind the daemon's back: cold,
# sparse or lazy-free blocks a test expects to stay small included.
# Idle khugepaged still scans one PMD when its list of processes goes from
# empty to not empty: a decoy (2 MiB, already huge) registered first takes
# that scan and keeps the list from emptying until the test ends.
hc_khugepaged_quiet()
{
	local k
	hc_thp_madvise || return 1
	for k in scan_sleep_millisecs pages_to_scan; do
		[[ -n ${HC_KHP_SAVED[$k]} ]] || HC_KHP_SAVED[$k]=$(cat "$HC_KHP_DIR/$k") || return 1
	done
	echo 4294967295 >"$HC_KHP_DIR/scan_sleep_millisecs" && echo 1 >"$HC_KHP_DIR/pages_to_scan" || return 1
	start_workload huge 2 hc-khugepaged-decoy >/dev/null || return 1
	sleep 0.2 # its one scan
}
trap hc_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# hc_skip WHY: the test cannot run here. Exit 77 (ctest: skipped), except in
# CI (CI=true, or HC_CI=ON from the configure step), where a skip means the
# machine does not check what the suite promises: exit 1, a failure.
hc_skip()
{
	if [[ ${CI:-} == true || ${HC_CI:-} == ON ]]; then
		echo "FAIL: would skip, and in CI a skip is a failure: $*"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}

# hc_scaled SECONDS: a deadline stretched by HC_TIME_SCALE (an integer, 1 by
# default; scripts/test.sh sets 3 for the 2-3x slower sanitizer build). For
# waits, and for bounds on the build's own speed; never for a bound on what
# the kernel or a contract requires (a watchdog interval, a ratio).
hc_scaled()
{
	echo $(($1 * ${HC_TIME_SCALE:-1}))
}

# hc_wait_until SECONDS CMD…: polls CMD every 0.1 s until it succeeds or the
# (scaled) deadline passes; returns CMD's last status.
hc_wait_until()
{
	local limit _hc_i
	limit=$(($(hc_scaled "$1") * 10))
	shift
	for ((_hc_i = 0; _hc_i < limit; _hc_i++)); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

# Skip unless we can do real kernel work.
require_root()
{
	if [[ $(uname -s) != Linux ]]; then
		hc_skip "needs Linux (this is $(uname -s))"
	fi
	if [[ $EUID -ne 0 ]]; then
		hc_skip "needs root (process_madvise on other processes, /proc/PID/pagemap PFNs)"
	fi
}

require_cmd()
{
	local c
	for c in "$@"; do
		if ! command -v "$c" >/dev/null; then
			hc_skip "needs '$c' (bash scripts/deps.sh installs it)"
		fi
	done
}

# A missing binary is a broken build, not a reason to skip.
require_exec()
{
	local f
	for f in "$@"; do
		if [[ ! -x $f ]]; then
			echo "FAIL: $f is not an executable (set HC_BIN/HC_WORKLOAD or HC_BUILD)"
			exit 1
		fi
	done
}

# start_workload ROLE MB [NAME [extra hc_workload args…]]
# Starts hc_workload in the background and waits for its ready line. Sets
# WL_PID/WL_ADDR/WL_LEN/WL_OUT[NAME] (NAME defaults to ROLE). Must run in
# this shell, not in $(…), or the child would belong to a subshell.
start_workload()
{
	local role=$1 mb=$2 name=${3:-$1}
	shift 3 2>/dev/null || shift $#
	local out="$HC_TMP/wl.$name.out"
	: >"$out" # now: a name used before must not show the old ready line
	"$HC_WORKLOAD" --role "$role" --mb "$mb" "$@" >"$out" 2>"$out.err" &
	local pid=$!
	HC_PIDS+=("$pid")
	local i line
	for ((i = 0; i < 600; i++)); do
		line=$(head -n1 "$out")
		[[ $line == ready* ]] && break
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "FAIL: workload $name ($role) died during set-up: $(cat "$out.err")"
			return 1
		fi
		sleep 0.1
	done
	if [[ $line != ready* ]]; then
		echo "FAIL: workload $name ($role) not ready after 60 s"
		return 1
	fi
	local _ready rpid addr len
	read -r _ready rpid addr len <<<"$line"
	WL_PID[$name]=$rpid
	WL_ADDR[$name]=$addr
	WL_LEN[$name]=$len
	WL_OUT[$name]=$out
	hc_log "workload $name: role $role pid $rpid buffer $addr +$len"
}

# stop_workload NAME: SIGTERM, reap, return its exit status (0 = pattern
# intact, 3 = corrupt; its stderr says where).
stop_workload()
{
	local name=$1 pid=${WL_PID[$1]} rc
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	local keep=() p
	for p in "${HC_PIDS[@]}"; do
		[[ $p != "$pid" ]] && keep+=("$p")
	done
	HC_PIDS=("${keep[@]}")
	if ((rc != 0)) && [[ -s ${WL_OUT[$name]}.err ]]; then
		hc_log "workload $name stderr: $(cat "${WL_OUT[$name]}.err")"
	fi
	return "$rc"
}

# workload_verify NAME: ask a running workload to check its pattern; prints
# its answer ("pattern ok" / "pattern bad at OFF").
workload_verify()
{
	local name=$1 out=${WL_OUT[$1]} before i
	before=$(wc -l <"$out")
	kill -USR1 "${WL_PID[$name]}"
	for ((i = 0; i < 100; i++)); do
		if (($(wc -l <"$out") > before)); then
			tail -n1 "$out"
			return 0
		fi
		sleep 0.1
	done
	echo "no answer"
	return 1
}

# An awk fragment for smaps: on each VMA header line it sets `inside` to
# whether the VMA intersects [lo, hi) (awk variables the caller sets) and goes
# to the next line. mawk has no strtonum, hence hex2num (exact: user addresses
# fit in a double's 53 bits).
# shellcheck disable=SC2016,SC2034 # awk code, used by the scripts that source this file
HC_AWK_INSIDE='
	function hex2num(s,    i, n) {
		n = 0
		s = tolower(s)
		for (i = 1; i <= length(s); i++)
			n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return n
	}
	/^[0-9a-f]+-[0-9a-f]+ / { split($1, r, "-"); inside = hex2num(r[1]) < hi + 0 && hex2num(r[2]) > lo + 0; next }
'

# smaps_field PID ADDR LEN FIELD: sum of "FIELD: N kB" over every VMA of PID
# that intersects [ADDR, ADDR+LEN). The buffer may have been split into
# several VMAs, so sum them all.
smaps_field()
{
	local pid=$1 addr=$2 len=$3 field=$4
	awk -v lo="$((addr))" -v hi="$((addr + len))" -v field="$field:" "$HC_AWK_INSIDE"'
		inside && $1 == field { sum += $2 }
		END { printf "%.0f\n", sum }
	' "/proc/$pid/smaps"
}

# PMD-mapped bytes in [ADDR, ADDR+LEN): anon THPs plus shmem/file PMD maps.
pmd_bytes()
{
	local pid=$1 addr=$2 len=$3 f kb=0
	for f in AnonHugePages ShmemPmdMapped FilePmdMapped; do
		kb=$((kb + $(smaps_field "$pid" "$addr" "$len" "$f")))
	done
	echo $((kb * 1024))
}

# pmd_pct PID ADDR LEN: PMD-mapped share of the range, integer percent.
pmd_pct()
{
	local pid=$1 addr=$2 len=$3
	echo $(($(pmd_bytes "$pid" "$addr" "$len") * 100 / len))
}

# Shorthands over a named workload.
wl_field()
{
	smaps_field "${WL_PID[$1]}" "${WL_ADDR[$1]}" "${WL_LEN[$1]}" "$2"
}
wl_pmd_bytes()
{
	pmd_bytes "${WL_PID[$1]}" "${WL_ADDR[$1]}" "${WL_LEN[$1]}"
}
wl_pmd_pct()
{
	pmd_pct "${WL_PID[$1]}" "${WL_ADDR[$1]}" "${WL_LEN[$1]}"
}
# wl_vma_pct WL NAME: PMD-mapped percent of VMA NAME of a matrix-role
# workload (its "vma NAME ADDR LEN" lines).
wl_vma_pct()
{
	local addr len
	read -r _ _ addr len < <(grep "^vma $2 " "${WL_OUT[$1]}")
	pmd_pct "${WL_PID[$1]}" "$addr" "$len"
}

# hc_stop_pid PID: SIGTERM to a child of this shell, SIGKILL if it is still
# there after 10 s; reaps it. An empty PID does nothing.
hc_stop_pid()
{
	local i
	[[ -n $1 ]] || return 0
	kill -TERM "$1" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# hc_cgroup_remove ROOT DIR: moves what is left in cgroup DIR to ROOT (the
# cgroup2 mount), then removes DIR; tries for 5 s. Returns 1 if it could not.
hc_cgroup_remove()
{
	local pid i
	[[ -d $2 ]] || return 0
	for ((i = 0; i < 50; i++)); do
		while read -r pid; do
			echo "$pid" >"$1/cgroup.procs" 2>/dev/null
		done <"$2/cgroup.procs"
		rmdir "$2" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "# WARNING: cannot remove $2"
	return 1
}

# Assertions: DESC first, then values. Each prints one ok/not ok line.
hc_ok()
{
	HC_PASS=$((HC_PASS + 1))
	echo "ok $((HC_PASS + HC_FAIL)) - $1"
}
hc_not_ok()
{
	HC_FAIL=$((HC_FAIL + 1))
	echo "not ok $((HC_PASS + HC_FAIL)) - $1"
}

assert_eq() # DESC ACTUAL EXPECTED
{
	if [[ $2 == "$3" ]]; then hc_ok "$1"; else hc_not_ok "$1: got '$2', expected '$3'"; fi
}
assert_ge() # DESC ACTUAL MIN
{
	if (($2 >= $3)); then hc_ok "$1 ($2 >= $3)"; else hc_not_ok "$1: got $2, expected >= $3"; fi
}
assert_le() # DESC ACTUAL MAX
{
	if (($2 <= $3)); then hc_ok "$1 ($2 <= $3)"; else hc_not_ok "$1: got $2, expected <= $3"; fi
}
assert_lt() # DESC ACTUAL LIMIT
{
	if (($2 < $3)); then hc_ok "$1 ($2 < $3)"; else hc_not_ok "$1: got $2, expected < $3"; fi
}
assert_cmd() # DESC CMD…: passes if CMD exits 0 (its stdout is dropped)
{
	local desc=$1
	shift
	if "$@" >/dev/null; then hc_ok "$desc"; else hc_not_ok "$desc: '$*' failed with status $?"; fi
}

# The last line of every test; its status is the test's exit status. A test
# that checked nothing has failed.
hc_summary()
{
	echo "1..$((HC_PASS + HC_FAIL))"
	echo "$HC_PASS passed, $HC_FAIL failed"
	((HC_FAIL == 0 && HC_PASS > 0))
}

# Readers of `hugecollapsed --once --json` output (FILE); per-process data
# exists with --dry-run only.

# json_proc_result FILE NAME RESULT: that workload process's count of RESULT.
json_proc_result()
{
	jq --argjson pid "${WL_PID[$2]}" --arg r "$3" \
		'[.processes[]? | select(.pid == $pid) | .results[$r] // 0] | add // 0' "$1"
}

# json_candidates_in FILE NAME: candidates listed inside the workload's buffer.
json_candidates_in()
{
	local pid=${WL_PID[$2]} lo=$((WL_ADDR[$2])) hi=$((WL_ADDR[$2] + WL_LEN[$2])) n=0 a
	while read -r a; do
		[[ $a =~ ^0x[0-9a-fA-F]+$ ]] && ((a >= lo && a < hi)) && n=$((n + 1))
	done < <(jq -r --argjson pid "$pid" '.processes[]? | select(.pid == $pid) | .candidates[]?.addr' "$1")
	echo "$n"
}

# wl_blocks NAME: 2 MiB blocks in the workload's buffer.
wl_blocks()
{
	echo $((WL_LEN[$1] / (2 << 20)))
}
