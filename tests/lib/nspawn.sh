# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Booting a throwaway Debian container with systemd-nspawn, for tests of the
# shipped unit under a real service manager. Source it after hc_test_lib.sh.
#
#   nspawn_rootfs_cache          build (or reuse) the cached minbase rootfs
#   nspawn_boot ROOT             boot a copy, wait until it is "running"
#   inc CMD…                     run CMD inside (mount, pid, uts, ipc ns)
#   nspawn_poweroff              power off, wait, kill if it hangs
#
# The cache is never booted itself: tests boot a copy, so it stays clean.

HC_NSPAWN_CACHE=${HC_NSPAWN_CACHE:-/var/cache/hugecollapsed-test}
# Bump when the package set changes, so old caches are rebuilt.
HC_NSPAWN_STAMP_VERSION=1
HC_NSPAWN_PACKAGES=systemd,systemd-sysv,dbus,libproc2-0,libinih1,libsystemd0,procps
NSPAWN_PID=    # systemd-nspawn itself
CONTAINER_PID= # the container's PID 1 (nspawn's child)
CONTAINER_ROOT=

# The host's release and Debian mirror: the daemon is built against the
# host's libraries, so the container runs the same release, from the mirror
# the host's apt already uses. The project names no archive host of its own.
host_codename()
{
	(. /etc/os-release && echo "${VERSION_CODENAME:-}")
}

# apt_sources_mirror CODENAME [FILE…]: the first URI of an enabled "deb"
# source for suite CODENAME itself (not -security, -updates, …), from
# one-line (.list) and deb822 (.sources) files. Prints nothing if none.
apt_sources_mirror()
{
	local codename=$1 f
	shift
	for f in "$@"; do
		[[ -r $f ]] || continue
		case $f in
		*.sources)
			# deb822: paragraphs of "Field: value", separated by blank lines.
			awk -v want="$codename" '
				function flush() {
					if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no" && (" " suites " ") ~ (" " want " ") && uri != "")
						{ print uri; found = 1; exit }
					types = suites = uri = enabled = ""
				}
				/^[ \t]*#/ { next }
				/^[ \t]*$/ { flush(); next }
				tolower($1) == "types:" { $1 = ""; types = $0 }
				tolower($1) == "uris:" { uri = $2 }
				tolower($1) == "suites:" { $1 = ""; suites = $0 }
				tolower($1) == "enabled:" { enabled = $2 }
				END { if (!found) flush() }
			' "$f"
			;;
		*.list)
			# deb [option=value …] URI SUITE COMPONENT…
			awk -v want="$codename" '
				$1 != "deb" { next }
				{
					i = 2
					if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
					if ($(i + 1) == want) { print $i; exit }
				}
			' "$f"
			;;
		esac
	done | head -n1
}

host_mirror()
{
	local files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources)
	apt_sources_mirror "$(host_codename)" "${files[@]}"
}

rootfs_is_good() # DIR: the stamp matches and the essentials are there
{
	[[ -f $1/.hc-rootfs-stamp && $(cat "$1/.hc-rootfs-stamp") == "$(rootfs_stamp)" ]] &&
		[[ -x $1/usr/lib/systemd/systemd && -x $1/usr/bin/systemctl && -x $1/usr/bin/nsenter ]] &&
		[[ -n $(find "$1/usr/lib" -maxdepth 2 -name 'libinih.so.1' -print -quit) ]]
}
rootfs_stamp()
{
	echo "v$HC_NSPAWN_STAMP_VERSION $(host_codename) $HC_NSPAWN_PACKAGES"
}

# Prints the cached rootfs directory, building it first if it is missing
# or damaged. Exits 77 if the archive cannot be reached.
nspawn_rootfs_cache()
{
	local dir mirror log
	dir=$HC_NSPAWN_CACHE/rootfs-$(host_codename)
	mkdir -p "$HC_NSPAWN_CACHE" || exit 1
	# One builder at a time; others wait for it.
	exec {lockfd}>"$HC_NSPAWN_CACHE/lock"
	flock "$lockfd"
	if ! rootfs_is_good "$dir"; then
		mirror=$(host_mirror)
		if [[ -z $(host_codename) || -z $mirror ]]; then
			echo "FAIL: no apt source for this release ('$(host_codename)') in /etc/apt/sources.list or" \
				"/etc/apt/sources.list.d/*.{list,sources}: the container rootfs is built from the" \
				"mirror this machine's apt uses, and there is none" >&2
			exit 1
		fi
		log=$HC_NSPAWN_CACHE/debootstrap.log
		hc_log "building the container rootfs in $dir from $mirror (about a minute)" >&2
		rm -rf "$dir" "$dir.new"
		if ! debootstrap --variant=minbase --include="$HC_NSPAWN_PACKAGES" "$(host_codename)" "$dir.new" "$mirror" \
			>"$log" 2>&1; then
			rm -rf "$dir.new"
			if grep -qE "Failed getting release file|Couldn't download|Failure trying to run|couldn't resolve|unable to resolve" "$log"; then
				hc_skip "debootstrap cannot reach $mirror: $(grep -m1 -E "^E:" "$log")" >&2
			fi
			echo "FAIL: debootstrap failed, see $log: $(tail -n2 "$log")" >&2
			exit 1
		fi
		rm -rf "$dir.new/var/cache/apt/archives/"*.deb
		rootfs_stamp >"$dir.new/.hc-rootfs-stamp"
		mv "$dir.new" "$dir"
	fi
	exec {lockfd}>&-
	echo "$dir"
}

# A command in the container: its namespaces, and its root and working
# directory too. Where nspawn cannot pivot_root (started from a chroot, as
# in a debootstrapped CI root), the mount namespace's root is the host's
# and the container is only chroot()ed into: --mount alone lands outside.
# inc_timeout SECONDS CMD...: killed after SECONDS (0: never).
inc_timeout()
{
	timeout "$1" nsenter --target "$CONTAINER_PID" --mount --pid --uts --ipc --root --wd -- "${@:2}"
}

inc() { inc_timeout 0 "$@"; }

# nspawn splits the cgroup it runs in into "payload" (the container) and
# "supervisor" (itself), in the cgroup2 hierarchy and, on a hybrid host, in
# the name=systemd one too. Where PID 1 is not systemd nobody removes them,
# and a pair left at a shared place by an earlier run would be nobody's. So
# nspawn runs in a cgroup of this test's own (hc-nspawn-PID) in each
# hierarchy, and nspawn_poweroff removes those subtrees; the pair next to
# them is counted and removed too, should nspawn ever put it there.
NSPAWN_CGROUPS=() NSPAWN_CREATED_CGROUPS=()

# The test's own cgroup in each hierarchy nspawn uses (mount point + path).
nspawn_hierarchies()
{
	local mnt rel
	mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
	rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
	[[ -n $mnt && -n $rel ]] && echo "$mnt${rel%/}"
	mnt=$(awk '$3 == "cgroup" && $4 ~ /(^|,)name=systemd(,|$)/ { print $2; exit }' /proc/self/mounts)
	rel=$(sed -n 's/^[0-9]*:name=systemd://p' /proc/self/cgroup)
	[[ -n $mnt && -n $rel ]] && echo "$mnt${rel%/}"
}

# Removes NSPAWN_CGROUPS, depth first. The container's last processes may
# take a moment to leave after nspawn exits: tries for up to 10 s.
nspawn_remove_cgroups()
{
	local d i left
	for ((i = 0; i < 100; i++)); do
		left=0
		for d in "${NSPAWN_CGROUPS[@]}"; do
			[[ -d $d ]] || continue
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
			[[ -d $d ]] && left=1
		done
		((left)) || break
		sleep 0.1
	done
	((left)) && hc_log "cgroups still busy after 10 s: $(for d in "${NSPAWN_CGROUPS[@]}"; do [[ -d $d ]] && echo "$d"; done)"
	NSPAWN_CGROUPS=()
}

# Cgroups of this test's boot that are still there (none expected after
# poweroff).
nspawn_leftover_cgroups()
{
	local d n=0
	for d in "${NSPAWN_CREATED_CGROUPS[@]}"; do
		[[ -d $d ]] && n=$((n + 1))
	done
	echo "$n"
}

# nspawn_boot ROOT: boots ROOT (a private copy) in the background. A private
# network gives the container its own, read-only sysfs instance as well.
nspawn_boot()
{
	local i state
	CONTAINER_ROOT=$1
	local h d own=()
	NSPAWN_CGROUPS=() NSPAWN_CREATED_CGROUPS=()
	while read -r h; do
		for d in payload supervisor; do
			[[ -e $h/$d ]] || NSPAWN_CGROUPS+=("$h/$d")
		done
		d=$h/hc-nspawn-$$
		mkdir "$d" || return 1
		own+=("$d") NSPAWN_CGROUPS+=("$d")
	done < <(nspawn_hierarchies)
	NSPAWN_CREATED_CGROUPS=("${NSPAWN_CGROUPS[@]}")
	# bpf() and perf_event_open() are outside nspawn's own system call
	# filter: let them in, so that the unit's sandbox is what decides about
	# the daemon's prctl iterator, its page-fault doorbell and the
	# doorbell's BPF filter, as on a host.
	(
		for d in "${own[@]}"; do
			echo "$BASHPID" >"$d/cgroup.procs" || exit 1
		done
		exec systemd-nspawn -q -D "$CONTAINER_ROOT" --system-call-filter='bpf perf_event_open' --boot --register=no --keep-unit \
			--console=pipe --private-network --machine=hc-test
	) >"$HC_TMP/console.log" 2>&1 </dev/null &
	NSPAWN_PID=$!
	for ((i = 0; i < 100; i++)); do
		CONTAINER_PID=$(awk '{ print $1 }' /proc/"$NSPAWN_PID"/task/*/children 2>/dev/null | head -n1)
		[[ -n $CONTAINER_PID ]] && [[ $(readlink "/proc/$CONTAINER_PID/exe" 2>/dev/null) == */systemd ]] && break
		CONTAINER_PID=
		kill -0 "$NSPAWN_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [[ -z $CONTAINER_PID ]]; then
		hc_log "console: $(tail -n5 "$HC_TMP/console.log")"
		return 1
	fi
	# Until its PID 1 has made /run/systemd/system, systemctl says
	# "offline"; until it listens, it cannot connect; then --wait blocks
	# until boot is done. How soon each comes differs from host to host.
	for ((i = 0; i < 900; i++)); do
		state=$(inc_timeout 90 systemctl is-system-running --wait 2>&1)
		[[ $state == *"Failed to connect"* || $state == offline* ]] || break
		kill -0 "$NSPAWN_PID" 2>/dev/null || break
		sleep 0.1
	done
	[[ $state == running ]] || hc_log "container state: $state; failed units: $(inc systemctl --failed --no-legend 2>&1)"
	[[ $state == running || $state == degraded ]]
}

# Powers the container off (SIGRTMIN+4 to its PID 1 if systemctl cannot),
# waits up to 30 s, then kills nspawn. Leaves no process and no mount.
nspawn_poweroff()
{
	local i
	if [[ -z $NSPAWN_PID ]]; then # a boot that failed before nspawn ran
		nspawn_remove_cgroups
		return 0
	fi
	if kill -0 "$NSPAWN_PID" 2>/dev/null; then
		inc_timeout 10 systemctl poweroff --no-block >/dev/null 2>&1 ||
			kill -s RTMIN+4 "$CONTAINER_PID" 2>/dev/null
		for ((i = 0; i < 300; i++)); do
			kill -0 "$NSPAWN_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$NSPAWN_PID" 2>/dev/null; then
			hc_log "container did not power off in 30 s: killing it"
			kill -KILL "$NSPAWN_PID" 2>/dev/null
			[[ -n $CONTAINER_PID ]] && kill -KILL "$CONTAINER_PID" 2>/dev/null
		fi
	fi
	wait "$NSPAWN_PID" 2>/dev/null
	NSPAWN_PID=
	nspawn_remove_cgroups
	# nspawn unmounts on exit; a killed one may leave mounts under the root.
	if [[ -n $CONTAINER_ROOT ]]; then
		local m
		while read -r m; do
			umount -l "$m" 2>/dev/null
		done < <(awk -v r="$CONTAINER_ROOT" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r)
	fi
}

# Mounts below ROOT that are still there (none expected after poweroff).
nspawn_leftover_mounts()
{
	awk -v r="$1" 'index($2, r) == 1' /proc/self/mounts | wc -l
}
