#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The example rules in monitoring/ (hugecollapsed.rules.yml):
#  - promtool accepts them (check rules) and their unit tests pass (test
#    rules: no pass for 10 minutes, backing off for 30 minutes, coverage of a
#    cgroup with a policy file below its coverage_target_pct for 30 minutes);
#  - promtool test rules fails on a broken expectation, so its OK means
#    something;
#  - every hugecollapsed_* series the rules read is one the daemon writes
#    (its name is in the sources), so a rename breaks this test, not the
#    alerts of whoever copied the file.
# Reads files only: no root, no kernel state.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_cmd promtool

RULES=$HC_SRC/monitoring/hugecollapsed.rules.yml
TESTS=$HC_SRC/monitoring/hugecollapsed.rules.test.yml

assert_cmd "promtool check rules" promtool check rules "$RULES"
promtool test rules "$TESTS" >"$HC_TMP/test.out" 2>&1
rc=$?
assert_eq "promtool test rules passes" "$rc" 0
((rc == 0)) || cat "$HC_TMP/test.out"
assert_cmd "promtool ran the unit tests" grep -q SUCCESS "$HC_TMP/test.out"

# The same tests with the coverage alert's expected value changed must fail.
cp "$RULES" "$HC_TMP/"
sed 's/is 25% below its target/is 26% below its target/' "$TESTS" >"$HC_TMP/broken.test.yml"
assert_cmd "the broken copy has the changed value" grep -q 'is 26% below' "$HC_TMP/broken.test.yml"
(cd "$HC_TMP" && promtool test rules broken.test.yml >broken.out 2>&1)
assert_eq "promtool test rules fails on a wrong expectation" "$?" 1

mapfile -t series < <(grep -oE 'hugecollapsed_[a-z_]+' "$RULES" | sort -u)
assert_ge "series read by the rules" "${#series[@]}" 6
missing=()
for s in "${series[@]}"; do
	grep -rqE "\"${s}[\"{ ]" "$HC_SRC/src" || missing+=("$s")
done
assert_eq "every series the rules read is written by src/" "${missing[*]}" ""
hc_summary
