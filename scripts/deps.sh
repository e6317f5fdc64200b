#!/usr/bin/env bash
# Installs the Debian 12 packages hugecollapsed needs to build, run and test.
# Only missing packages are installed, so a prepared machine pays nothing.
set -euo pipefail

packages=(
	build-essential cmake pkg-config clang clang-format clang-tidy cppcheck shellcheck
	libclang-rt-14-dev # clang's ASan, UBSan and libFuzzer runtimes (only recommended by clang)
	libproc2-dev libinih-dev libsystemd-dev libcmocka-dev
	libbpf-dev bpftool # the prctl-mode task iterator (src/prctl_iter.h)
	jq man-db procps libcap2-bin strace util-linux
	gnuplot-nox # bench/plot.sh: the benchmark plots
	debootstrap systemd-container
	prometheus # only for promtool (tests/integration/metrics.sh, alerts.sh): 19 MB, 96 MB installed
	prometheus-node-exporter curl # the exporter binary and a client, for tests/integration/coverage.sh
)
# Both prometheus packages start a system service on install (and enable it
# on systemd). The tests run their own instance by PID and need no service:
# a policy-rc.d that says 101 (action forbidden) keeps invoke-rc.d and
# deb-systemd-invoke from starting anything, and the units are disabled
# after; a policy-rc.d already there (containers) is left as it is.
services=(prometheus.service prometheus-node-exporter.service)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	policy=/usr/sbin/policy-rc.d
	ours=
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\n# hugecollapsed scripts/deps.sh: no service starts while it installs\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
		ours=1
	fi
	rc=0
	apt-get install -y -q --no-install-recommends "${missing[@]}" || rc=$?
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
