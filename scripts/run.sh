#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs the hugecollapsed daemon on this machine, in the foreground, with the
# repository's default configuration (conf/hugecollapsed.conf). Ctrl-C stops
# it and restores anything it changed. Needs root.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
[[ $(id -u) == 0 ]] || { echo "run.sh: needs root (sudo bash scripts/run.sh)" >&2; exit 1; }
bash "$src/scripts/deps.sh"
bash "$src/scripts/build.sh"
mkdir -p /run/hugecollapsed
# The daemon refuses config files writable by group or others (like sshd).
chmod go-w "$src/conf" "$src/conf/hugecollapsed.conf"
[[ -d $src/conf/cgroup.d ]] && chmod go-w "$src/conf/cgroup.d"
exec "${BUILD_DIR:-$src/build}/hugecollapsed" --config "$src/conf/hugecollapsed.conf" "$@"
