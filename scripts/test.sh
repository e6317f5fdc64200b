#!/usr/bin/env bash
# Runs the whole test suite: unit tests, integration tests on the real
# kernel (as root), the systemd container test, lint, and the suite again
# under clang with ASan and UBSan. Installs what it needs first.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bash "$src/scripts/deps.sh"
chmod go-w "$src/conf" "$src/conf/hugecollapsed.conf" 2>/dev/null || true

BUILD_DIR=${BUILD_DIR:-$src/build} bash "$src/scripts/build.sh"
cd "${BUILD_DIR:-$src/build}"
ctest --output-on-failure --timeout 900
