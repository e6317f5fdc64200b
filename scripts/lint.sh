#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Static checks; any finding fails. Run by scripts/test.sh, or alone after
# scripts/deps.sh. Builds go to LINT_BUILD_DIR (default build-lint/).
#
# 1. clang-format --dry-run --Werror on every *.c/*.h in src/ tests/ fuzz/
#    bench/ (style in .clang-format).
# 2. A -Werror build with gcc and one with clang (CMake adds -Wall -Wextra
#    -Wshadow -Wstrict-prototypes -Wmissing-prototypes). The clang build
#    writes compile_commands.json for the two analyzers.
# 3. cppcheck on the same files as compiled (src/ tests/ bench/) and fuzz/,
#    checks warning, performance, portability (style is off: it is taste,
#    and clang-tidy covers the bug-prone part of it). Suppressed, each a
#    false positive or a known item, see cppcheck_suppressions below.
# 4. clang-tidy on src/ (the daemon) and fuzz/ with the rules in .clang-tidy:
#    bugprone, cert, clang-analyzer, misc, performance, portability on;
#    off, with reasons there: easily-swappable-parameters, cert-err33-c,
#    insecureAPI.DeprecatedOrUnsafeBufferHandling, implicit-widening-of-
#    multiplication-result, no-int-to-ptr. tests/ and bench/ are not run
#    through clang-tidy: test code parses fixed inputs with sscanf and
#    strcpy by design, which cert-err34-c and insecureAPI.strcpy reject.
#    Single findings in src/ are suppressed inline with NOLINT and a reason.
# 5. shellcheck (severity warning and up) on every script in scripts/
#    tests/ bench/ .ci/ and the maintainer scripts in debian/, following
#    the files they source.
# 6. One version: CMake's project(VERSION) (which --version and the
#    hugecollapsed_build_info metric print) is the upstream part of the
#    newest debian/changelog entry.
# 7. Includes that point one way: scripts/check_includes.sh checks that
#    every file of src/ is in the folder of a layer, src/<layer>/, that no
#    file includes a header of a higher layer (scripts/layers.txt orders
#    them) and that no two modules include each other, even through others.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LINT_BUILD_DIR:-$src/build-lint}
cd "$src"
fail=0
step() { printf 'lint: %s\n' "$*"; }

mapfile -t files < <(find src tests fuzz bench -name '*.[ch]' 2>/dev/null | sort)
step "clang-format (${#files[@]} files)"
clang-format --dry-run --Werror "${files[@]}" || fail=1

for cc in gcc clang; do
	step "-Werror build with $cc"
	CC=$cc cmake -S "$src" -B "$build/$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-Werror \
		-DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
	cmake --build "$build/$cc" -j"$(nproc)" >"$build/$cc.log" 2>&1 || {
		grep -E 'error|warning' "$build/$cc.log" | head -n 40
		fail=1
	}
done

# id:*/file (cppcheck reports absolute paths), each with why
cppcheck_suppressions=(
	# list_conf_files(): names is non-NULL inside the loop (its condition).
	nullPointerRedundantCheck:*/src/util/config.c
	# read_small_file_at(): &extra is where read() writes, not a read of it.
	uninitvar:*/src/util/procfs.c
	# Arrays filled by the loop just before the qsort() that is flagged.
	uninitvar:*/tests/prom_check.c
	uninitvar:*/bench/collapse_throughput.c
	missingIncludeSystem
)
# shellcheck disable=SC2054 # the commas are in the template, not separators
cppcheck_args=(-q --std=c11 --enable=warning,performance,portability --inline-suppr --error-exitcode=1
	--template='{file}:{line}: {severity} {id}: {message}')
for s in "${cppcheck_suppressions[@]}"; do
	cppcheck_args+=("--suppress=$s")
done
# The fuzzers, outside the compile database, see every layer of src/.
src_includes=()
for d in src/*/; do
	src_includes+=("-I${d%/}")
done
step "cppcheck"
cppcheck "${cppcheck_args[@]}" --project="$build/clang/compile_commands.json" || fail=1
cppcheck "${cppcheck_args[@]}" -D_GNU_SOURCE "${src_includes[@]}" fuzz || fail=1

step "clang-tidy"
run-clang-tidy -quiet -j "$(nproc)" -p "$build/clang" "^$src/src/.*\.c\$" >"$build/clang-tidy.log" 2>&1 || {
	grep -E 'error:|warning:' "$build/clang-tidy.log" | sort -u
	fail=1
}
for f in fuzz/*.c; do
	out=$(clang-tidy --quiet "$f" -- -std=c11 -D_GNU_SOURCE "${src_includes[@]}" 2>&1) || {
		grep -v 'warnings generated' <<<"$out"
		fail=1
	}
done

# Every shell script the project runs: the suite is mostly shell.
mapfile -t scripts < <({
	find scripts tests bench .ci -type f \( -name '*.sh' -o -name run \)
	find debian -maxdepth 1 -type f \( -name '*.postinst' -o -name '*.prerm' -o -name '*.postrm' -o -name '*.preinst' \)
} 2>/dev/null | sort)
step "shellcheck (${#scripts[@]} scripts)"
shellcheck -x -S warning "${scripts[@]}" || fail=1

step "version: CMakeLists.txt and debian/changelog"
cmake_version=$(sed -nE 's/^project\(hugecollapsed VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
deb_version=$(dpkg-parsechangelog -l debian/changelog -S Version)
deb_upstream=${deb_version#*:}  # no epoch
deb_upstream=${deb_upstream%-*} # no Debian revision (none for a native package)
if [[ -z $cmake_version || $cmake_version != "$deb_upstream" ]]; then
	echo "version: CMakeLists.txt says '$cmake_version', debian/changelog '$deb_version'"
	fail=1
fi

step "includes: the layers of scripts/layers.txt"
bash scripts/check_includes.sh || fail=1

((fail == 0)) && step "clean" || step "FAILED"
exit "$fail"
