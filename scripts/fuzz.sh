#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the fuzz targets (fuzz/build.sh) and runs each for FUZZ_SECONDS
# (default 60) from its seeds in fuzz/corpus/<target>/. A crash, a sanitizer
# report, a leak (-detect_leaks=1), more than 512 MB (-rss_limit_mb), an
# input that runs over 10 s (-timeout) fails the run; the input that did it
# is kept in $FUZZ_BUILD_DIR/artifacts/<target>/ and the script exits 1.
# New inputs go to $FUZZ_BUILD_DIR/corpus/<target>/, never into the repo.
# FUZZ_JOBS targets (default: the online CPUs) run at a time.
# Usage: scripts/fuzz.sh [target...]   (default: all; e.g. "smaps config")
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
export FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-$src/build-fuzz}
seconds=${FUZZ_SECONDS:-60}
bash "$src/fuzz/build.sh"

targets=("$@")
if ((${#targets[@]} == 0)); then
	for f in "$src"/fuzz/fuzz_*.c; do
		f=${f##*/fuzz_}
		targets+=("${f%.c}")
	done
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

parallel=${FUZZ_JOBS:-$(nproc)}

# run_one TARGET: fuzzes it; its verdict goes to $FUZZ_BUILD_DIR/fuzz_TARGET.rc.
run_one()
{
	local t=$1 bin corpus artifacts log start runs
	bin=$FUZZ_BUILD_DIR/fuzz_$t
	corpus=$FUZZ_BUILD_DIR/corpus/$t
	artifacts=$FUZZ_BUILD_DIR/artifacts/$t
	log=$FUZZ_BUILD_DIR/fuzz_$t.log
	mkdir -p "$corpus" "$artifacts"
	opts=(-max_total_time="$seconds" -rss_limit_mb=512 -detect_leaks=1 -timeout=10
		-print_final_stats=1 -artifact_prefix="$artifacts/")
	[[ -f $src/fuzz/$t.dict ]] && opts+=(-dict="$src/fuzz/$t.dict")
	start=$SECONDS
	if "$bin" "${opts[@]}" "$corpus" "$src/fuzz/corpus/$t" >"$log" 2>&1; then
		runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")
		echo "fuzz: $t: ok, ${runs:-?} runs in $((SECONDS - start)) s"
		echo 0 >"$FUZZ_BUILD_DIR/fuzz_$t.rc"
	else
		{
			echo "fuzz: $t: FAILED (log $log, input in $artifacts/):"
			grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -n 20 | sed 's/^/  /'
		}
		echo 1 >"$FUZZ_BUILD_DIR/fuzz_$t.rc"
	fi
}

for t in "${targets[@]}"; do
	rm -f "$FUZZ_BUILD_DIR/fuzz_$t.rc"
	while (($(jobs -rp | wc -l) >= parallel)); do
		wait -n || true
	done
	run_one "$t" &
done
wait
failed=()
for t in "${targets[@]}"; do
	[[ $(cat "$FUZZ_BUILD_DIR/fuzz_$t.rc" 2>/dev/null) == 0 ]] || failed+=("$t")
done
if ((${#failed[@]})); then
	echo "fuzz: failed: ${failed[*]}"
	exit 1
fi
