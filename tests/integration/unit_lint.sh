#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The shipped unit is clean for `systemd-analyze verify` and its exposure
# score stays at or below 2.5, both as written in systemd/ and as installed.
. "$(dirname "$0")/../lib/hc_test_lib.sh"

if ! command -v systemd-analyze >/dev/null; then
	hc_skip "needs systemd-analyze (apt-get install systemd)"
fi
if [[ ! -f $HC_BUILD/CMakeCache.txt ]]; then
	echo "FAIL: $HC_BUILD is not a configured build directory (set HC_BUILD)"
	exit 1
fi
MAX_EXPOSURE=2.5

# Install into a staging root: this also checks the install rules.
STAGE=$HC_TMP/stage
if DESTDIR=$STAGE cmake --install "$HC_BUILD" >"$HC_TMP/install.log" 2>&1; then
	hc_ok "cmake --install into a staging root"
else
	hc_not_ok "cmake --install into a staging root: $(tail -n3 "$HC_TMP/install.log")"
fi
UNIT=$(find "$STAGE" -name hugecollapsed.service -path '*/systemd/system/*' | head -n1)
assert_cmd "the unit is installed into the systemd unit directory" test -f "$UNIT"
[[ -f $UNIT ]] || UNIT=$HC_SRC/systemd/hugecollapsed.service

exposure() # UNIT: prints the overall exposure, e.g. 1.9
{
	systemd-analyze security --offline=true "$1" 2>&1 |
		sed -nE 's/.*Overall exposure level for [^:]*: ([0-9.]+).*/\1/p'
}
for u in "$HC_SRC/systemd/hugecollapsed.service" "$UNIT"; do
	e=$(exposure "$u")
	if [[ -n $e ]] && awk -v e="$e" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e <= m) }'; then
		hc_ok "exposure of ${u#"$HC_TMP"/} is $e <= $MAX_EXPOSURE"
	else
		hc_not_ok "exposure of ${u#"$HC_TMP"/} is '${e:-unknown}', expected <= $MAX_EXPOSURE"
		systemd-analyze security --offline=true "$u" 2>&1 | grep '✗' | sed 's/^/# /'
	fi
done

# verify insists that every Exec binary exists and that every man: page in
# Documentation= opens: point the installed paths into the staging root and
# MANPATH at the staged pages.
exe=$(sed -nE 's/^ExecStart=[-@:+!]*([^ ]+).*/\1/p' "$UNIT")
assert_cmd "ExecStart names the installed daemon ($exe)" test -x "$STAGE$exe"
mkdir -p "$HC_TMP/verify"
sed "s#$exe#$STAGE$exe#g" "$UNIT" >"$HC_TMP/verify/hugecollapsed.service"
mandir=$(dirname "$(dirname "$(find "$STAGE" -name hugecollapsed.8 | head -n1)")")
out=$(MANPATH=$mandir systemd-analyze verify "$HC_TMP/verify/hugecollapsed.service" 2>&1)
rc=$?
assert_eq "systemd-analyze verify exits 0" "$rc" 0
assert_eq "systemd-analyze verify prints nothing" "$out" ""

hc_summary
