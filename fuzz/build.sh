#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer targets (fuzz/fuzz_*.c) with clang, ASan and UBSan
# into FUZZ_BUILD_DIR (default build-fuzz/): the root project with
# -DHC_FUZZ=ON, without the tests, benchmarks and BPF iterator, which the
# targets do not use. Needs clang and libclang-rt-14-dev (scripts/deps.sh
# installs both).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}
# A build directory of the old separate fuzz/ project cannot be configured
# from the root: start it again.
if [[ -f $build/CMakeCache.txt ]] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$build/CMakeCache.txt"; then
	rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
CC=clang cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHC_FUZZ=ON -DHC_TESTS=OFF -DHC_BENCH=OFF \
	-DHC_BPF=OFF >/dev/null
cmake --build "$build" -j"$(nproc)"
