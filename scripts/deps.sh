#!/usr/bin/env bash
# Installs the Debian 12 packages hugecollapsed needs to build, run and test.
# Only missing packages are installed, so a prepared machine pays nothing.
set -euo pipefail

packages=(
	build-essential cmake pkg-config clang clang-format clang-tidy cppcheck shellcheck
	libclang-rt-14-dev # clang's ASan, UBSan and libFuzzer runtimes (only recommended by clang)
	libproc2-dev libinih-dev libsystemd-dev libcmocka-dev
	jq man-db procps libcap2-bin strace util-linux
	gnuplot-nox # bench/plot.sh: the benchmark plots
	debootstrap systemd-container
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
