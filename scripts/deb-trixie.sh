#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds and installs the Debian package in a Debian 13 (trixie) root: a
# debootstrap'ed minbase root (cached in HC_TRIXIE_ROOT, default
# /var/cache/hugecollapsed-test/rootfs-trixie-build), the Build-Depends
# from debian/control installed there with apt, scripts/deb.sh run inside
# with chroot, then `apt-get install ./hugecollapsed_*.deb`, `--version`
# and `--check-config` inside. Needs the network (deb.debian.org or
# HC_TRIXIE_MIRROR); exits 77 when the archive cannot be reached. Not part
# of the ctest suite: it downloads about 150 MB the first time.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
root=${HC_TRIXIE_ROOT:-/var/cache/hugecollapsed-test/rootfs-trixie-build}
mirror=${HC_TRIXIE_MIRROR:-http://deb.debian.org/debian}
log=$(mktemp /tmp/hc-trixie.XXXXXX.log)
mounted=()
cleanup()
{
	local m
	for m in "${mounted[@]}"; do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$root/src"
}
trap cleanup EXIT

if [[ ! -x $root/usr/bin/apt-get || ! -f $root/.hc-trixie-build ]]; then
	echo "deb-trixie: debootstrap trixie into $root from $mirror (log: $log)"
	rm -rf "$root"
	mkdir -p "$(dirname "$root")"
	if ! debootstrap --variant=minbase trixie "$root" "$mirror" >"$log" 2>&1; then
		if grep -qE "Failed getting release file|Couldn't download|couldn't resolve|unable to resolve" "$log"; then
			echo "deb-trixie: the archive $mirror does not offer trixie here: $(grep -m1 -E '^E:' "$log")"
			exit 77
		fi
		tail -n 5 "$log"
		exit 1
	fi
	touch "$root/.hc-trixie-build"
fi
for m in proc sys dev; do
	mount --bind "/$m" "$root/$m"
	mounted=("$root/$m" "${mounted[@]}")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"

# The Build-Depends (apt reads debian/control; build-essential comes with them).
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
mkdir -p "$root/src"
git -C "$src" ls-files -z --cached --others --exclude-standard |
	tar -C "$src" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$root/src" -xf -
in_root apt-get update -q >"$log" 2>&1 || {
	tail -n 5 "$log"
	exit 1
}
in_root env DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q ./src >>"$log" 2>&1 || {
	tail -n 20 "$log"
	exit 1
}
echo "deb-trixie: building in $root ($(in_root dpkg-query -W -f='${Version}' dpkg) dpkg, $(in_root dpkg-query -W -f='${Version}' debhelper) debhelper)"
in_root env DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=2}" bash /src/scripts/deb.sh /out
deb=$(find "$root/out" -name 'hugecollapsed_*.deb' | head -n1)
[[ -n $deb ]] || {
	echo "deb-trixie: no .deb in $root/out"
	exit 1
}
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "/out/${deb##*/}" >>"$log" 2>&1 || {
	tail -n 20 "$log"
	exit 1
}
in_root /usr/sbin/hugecollapsed --version
in_root /usr/sbin/hugecollapsed --check-config
in_root dpkg -L hugecollapsed | grep -E 'systemd/system/|examples/'
echo "deb-trixie: built and installed ${deb##*/} in trixie"
