#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer targets (fuzz/fuzz_*.c) with clang, ASan and UBSan
# into FUZZ_BUILD_DIR (default build-fuzz/). Needs clang and libclang-rt-14-dev
# (scripts/deps.sh installs both).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}
CC=clang cmake -S "$src/fuzz" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
