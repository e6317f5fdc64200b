#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs the Debian 12 packages hugecollapsed needs to build, run and test.
# Only missing packages are installed, so a prepared machine pays nothing.
#   scripts/deps.sh          build, run, test, bench/run
#   scripts/deps.sh real     and the real programs of bench/run --real
set -euo pipefail

packages=(
	build-essential cmake pkg-config clang clang-format clang-tidy cppcheck shellcheck
	libclang-rt-14-dev # clang's ASan, UBSan and libFuzzer runtimes (only recommended by clang)
	libproc2-dev libinih-dev libsystemd-dev libcmocka-dev
	libbpf-dev bpftool # the prctl-mode task iterator (src/scan/prctl_iter.h)
	jq man-db procps libcap2-bin strace util-linux
	gnuplot-nox # bench/plot.sh: the benchmark plots
	debootstrap systemd-container
	debhelper dpkg-dev lintian # the .deb (scripts/deb.sh) and tests/integration/package.sh
	prometheus # only for promtool (tests/integration/metrics.sh, alerts.sh): 19 MB, 96 MB installed
	prometheus-node-exporter curl # the exporter binary and a client, for tests/integration/coverage.sh
)
services=(prometheus.service prometheus-node-exporter.service)
case "${1:-}" in
"") ;;
real)
	# bench/real: programs from Debian's archive, their load generators,
	# and a JDK (the workload is a single-file Java source program).
	packages+=(redis-server redis-tools memcached openjdk-17-jdk-headless python3)
	services+=(redis-server.service memcached.service)
	;;
*)
	echo "usage: scripts/deps.sh [real]" >&2
	exit 2
	;;
esac
# Both prometheus packages start a system service on install (and enable it
# on systemd). The tests run their own instance by PID and need no service:
# a policy-rc.d that says 101 (action forbidden) keeps invoke-rc.d and
# deb-systemd-invoke from starting anything, and the units are disabled
# after; a policy-rc.d already there (containers) is left as it is.
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Another apt may hold the dpkg lock (a parallel install): wait for it.
	apt-get -o DPkg::Lock::Timeout=300 update -q
	policy=/usr/sbin/policy-rc.d
	ours=
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\n# hugecollapsed scripts/deps.sh: no service starts while it installs\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
		ours=1
	fi
	rc=0
	apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}" || rc=$?
	[[ -n $ours ]] && rm -f "$policy"
	((rc == 0)) || exit "$rc"
	# Enabled units (and SysV links) would start at the next boot: disable
	# them (systemctl does that without a running systemd too), and stop one
	# that still runs (someone else's policy-rc.d allowed it).
	for u in "${services[@]}"; do
		[[ " ${missing[*]} " == *" ${u%.service} "* ]] || continue
		if command -v systemctl >/dev/null; then
			systemctl disable "$u" >/dev/null 2>&1 || true
		fi
		if [[ -d /run/systemd/system ]]; then
			systemctl stop "$u" >/dev/null 2>&1 || true
		fi
	done
fi
