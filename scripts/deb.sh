#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the Debian package from a clean copy of the tree and leaves the
# .deb (hugecollapsed_VERSION_ARCH.deb) and .buildinfo/.changes in OUTDIR
# (default: build-deb/ here). The same as `dpkg-buildpackage -us -uc -b`
# in the tree, but it writes nothing beside the tree (dpkg-buildpackage
# puts its results in ..) and never builds from stale build directories.
#   HC_DEB_VERSION=0.1.1  build that version instead: a changelog entry and
#                         CMake's project(VERSION) in the copy only (the
#                         upgrade test builds a newer package this way)
#   DEB_BUILD_OPTIONS     as for dpkg-buildpackage (nocheck, parallel=N)
# Needs the Build-Depends of debian/control (scripts/deps.sh installs them).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$src/build-deb}" && cd "${1:-$src/build-deb}" && pwd)
work=$(mktemp -d /tmp/hc-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The files git knows, as they are in the work tree (uncommitted edits
# included); a tree that is not a git checkout is copied whole.
mkdir "$work/hugecollapsed"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		tar -C "$src" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$work/hugecollapsed" -xf -
else
	tar -C "$src" --exclude='./build*' -cf - . | tar -C "$work/hugecollapsed" -xf -
fi
cd "$work/hugecollapsed"
if [[ -n ${HC_DEB_VERSION:-} ]]; then
	sed -i -E "s/^(project\\(hugecollapsed VERSION )[0-9.]+/\\1$HC_DEB_VERSION/" CMakeLists.txt
	{
		printf 'hugecollapsed (%s) unstable; urgency=medium\n\n  * Rebuilt as %s (scripts/deb.sh).\n\n' \
			"$HC_DEB_VERSION" "$HC_DEB_VERSION"
		printf ' -- %s  %s\n\n' "$(dpkg-parsechangelog -S Maintainer)" "$(date -R)"
		cat debian/changelog
	} >debian/changelog.new
	mv debian/changelog.new debian/changelog
fi
# The daemon refuses configuration files that group or others can write.
chmod go-w conf conf/hugecollapsed.conf
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=2}
dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1 || {
	tail -n 40 "$work/build.log"
	exit 1
}
cp "$work/build.log" "$out/build.log"
for f in "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes; do
	cp "$f" "$out/"
	echo "$out/$(basename "$f")"
done
