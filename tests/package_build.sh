#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package, built as a fleet's builder would: scripts/deb.sh
# (dpkg-buildpackage -us -uc -b in a clean copy) builds this version, whose
# dh_auto_test runs the unit tests not labelled "kernel" and passes, and
# lintian finds no error or warning in it; then the next version (a bumped
# changelog and project(VERSION) in the copy, without tests) for the
# upgrade in tests/integration/package.sh. Both go to HC_PACKAGE_DEBS
# (default: BUILD/package-debs/v1 and v2). Touches no kernel state: ctest
# runs it as the fixture of integration/package, and it needs no lock.
. "$(dirname "$0")/lib/hc_test_lib.sh"

require_root
require_cmd dpkg-buildpackage dh lintian

V1=$(dpkg-parsechangelog -l "$HC_SRC/debian/changelog" -S Version)
V2=${V1%.*}.$((${V1##*.} + 1))
ARCH=$(dpkg --print-architecture)
DEBS=${HC_PACKAGE_DEBS:-$HC_BUILD/package-debs}
rm -rf "$DEBS/v1" "$DEBS/v2"
DEB1=$DEBS/v1/hugecollapsed_${V1}_$ARCH.deb
DEB2=$DEBS/v2/hugecollapsed_${V2}_$ARCH.deb

t0=$SECONDS
if bash "$HC_SRC/scripts/deb.sh" "$DEBS/v1" >"$HC_TMP/deb1.log" 2>&1 && [[ -f $DEB1 ]]; then
	hc_ok "scripts/deb.sh builds ${DEB1##*/} ($((SECONDS - t0)) s)"
else
	hc_not_ok "scripts/deb.sh builds ${DEB1##*/}: $(tail -n5 "$HC_TMP/deb1.log")"
	hc_summary
	exit
fi
log=$DEBS/v1/build.log
ran=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: unit/' "$log")
assert_ge "dh_auto_test ran the unit tests" "$ran" 10
assert_cmd "and all of them passed" grep -q '100% tests passed' "$log"
# The names in HC_KERNEL_UNIT_TESTS (tests/CMakeLists.txt), as a regex.
kernel_tests=$(sed -n '/^set(HC_KERNEL_UNIT_TESTS/,/)/p' "$HC_SRC/tests/CMakeLists.txt" |
	grep -oE 'test_[a-z0-9_]+' | paste -sd'|')
assert_cmd "tests/CMakeLists.txt labels some unit tests kernel" test -n "$kernel_tests"
assert_eq "none of them is labelled kernel (root, the real kernel) or integration" \
	"$(grep -cE "Test +#[0-9]+: (unit/($kernel_tests) |integration/)" "$log")" 0
lint=$(lintian "$DEBS/v1/hugecollapsed_${V1}_$ARCH.changes" 2>&1 | grep -E '^[EW]: ')
assert_eq "lintian: no errors or warnings" "$lint" ""
assert_eq "the package says the version of the changelog" "$(dpkg-deb -f "$DEB1" Version)" "$V1"
t0=$SECONDS
if HC_DEB_VERSION=$V2 DEB_BUILD_OPTIONS="nocheck parallel=2" bash "$HC_SRC/scripts/deb.sh" "$DEBS/v2" \
	>"$HC_TMP/deb2.log" 2>&1 && [[ -f $DEB2 ]]; then
	hc_ok "a newer package ${DEB2##*/} for the upgrade ($((SECONDS - t0)) s)"
else
	hc_not_ok "a newer package ${DEB2##*/}: $(tail -n5 "$HC_TMP/deb2.log")"
fi
hc_summary
