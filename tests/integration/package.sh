#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package (built by tests/package_build.sh, its fixture): its
# life cycle under a real systemd in a booted Debian container
# (tests/lib/nspawn.sh): `apt install ./….deb` enables and starts the unit
# and `hugecollapsed --status` answers; a failed reload shows in STATUS=
# and the metrics; an upgrade to a newer version keeps the changed
# configuration and restarts the daemon; a bad configuration exits 78 and
# is not restarted; a purge leaves no file. The container's THP knobs are read-only, so the knob
# hand-over is checked on this host: the package installed with
# khugepaged = idle, the daemon started as the unit starts it (this host
# runs no systemd) and killed, then remove and purge: every THP and
# khugepaged knob is as it was before, and no file is left.
. "$(dirname "$0")/../lib/hc_test_lib.sh"
. "$(dirname "$0")/../lib/nspawn.sh"

require_root
require_cmd dpkg-deb debootstrap systemd-nspawn nsenter

THP=/sys/kernel/mm/transparent_hugepage
declare -A KNOBS=() # every writable THP/khugepaged knob -> its value before
HOST_INSTALLED=     # the package is installed on this host by this test
HOST_DAEMON=        # the daemon this test started on the host
HOST_RUN_DIR=       # /run/hugecollapsed, made by this test
snapshot_knobs() # prints "path=value" for every writable knob, sorted
{
	local f
	find "$THP" -type f -perm -u+w | sort | while read -r f; do
		printf '%s=%s\n' "$f" "$(cat "$f" 2>/dev/null)"
	done
}
not_grep() { ! grep -q "$@"; }
selected() # "always [madvise] never" -> madvise; other values as they are
{
	local v=$1
	[[ $v == *\[*\]* ]] && v=${v#*[} && v=${v%%]*}
	echo "$v"
}
restore_knobs()
{
	local f now
	for f in "${!KNOBS[@]}"; do
		now=$(cat "$f" 2>/dev/null)
		[[ $now == "${KNOBS[$f]}" ]] && continue
		selected "${KNOBS[$f]}" >"$f" 2>/dev/null
	done
}
cleanup()
{
	if [[ -n $HOST_DAEMON ]]; then
		kill -TERM "$HOST_DAEMON" 2>/dev/null
		wait "$HOST_DAEMON" 2>/dev/null
	fi
	if [[ -n $HOST_INSTALLED ]]; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -q hugecollapsed >/dev/null 2>&1
	fi
	[[ -n $HOST_RUN_DIR ]] && rm -rf /run/hugecollapsed # only what this test made
	((${#KNOBS[@]})) && restore_knobs
	nspawn_poweroff
	if [[ -n $CONTAINER_ROOT ]] && (($(nspawn_leftover_mounts "$CONTAINER_ROOT") > 0)); then
		hc_log "mounts left under $CONTAINER_ROOT: not removing $HC_TMP"
		HC_TMP=
	fi
	hc_cleanup
}
trap cleanup EXIT

# --- 1. two packages: this version, and the next one ----------------------
# tests/package_build.sh (ctest: package/build, a fixture of this test)
# builds them into HC_PACKAGE_DEBS, outside the kernel lock: a build takes
# minutes and touches nothing of the kernel's.
V1=$(dpkg-parsechangelog -l "$HC_SRC/debian/changelog" -S Version)
V2=${V1%.*}.$((${V1##*.} + 1))
ARCH=$(dpkg --print-architecture)
DEBS=${HC_PACKAGE_DEBS:-$HC_BUILD/package-debs}
DEB1=$DEBS/v1/hugecollapsed_${V1}_$ARCH.deb
DEB2=$DEBS/v2/hugecollapsed_${V2}_$ARCH.deb
if [[ ! -f $DEB1 || ! -f $DEB2 ]]; then
	echo "FAIL: no $DEB1 or $DEB2: run package/build first (ctest runs it as this test's fixture)"
	exit 1
fi
hc_ok "the packages: ${DEB1##*/} and ${DEB2##*/}"

# --- 2. the life cycle under systemd, in a container -----------------------
CACHE=$(nspawn_rootfs_cache) || exit $?
ROOT=$HC_TMP/root
cp -a --reflink=auto "$CACHE" "$ROOT" || exit 1
mkdir -p "$ROOT/root/debs"
cp "$DEB1" "$DEB2" "$ROOT/root/debs/" 2>/dev/null
# The life cycle in the booted container. A chroot cannot boot one (it
# fails in nspawn's first mount): that is reported, and the host's part
# below still runs.
container_life_cycle()
{
	show() { inc systemctl show -p "$1" --value hugecollapsed; }
	is_active() { [[ $(show ActiveState) == active ]]; } # asked again at each poll
	capt() { inc env DEBIAN_FRONTEND=noninteractive apt-get "$@" -y -q -o Dpkg::Use-Pty=0; }
	status_answers() { inc /usr/sbin/hugecollapsed --status >/dev/null 2>&1; }
	# A file list of the container's root file system and /run, for the purge.
	files_now()
	{
		inc find / /run -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /root/debs \
			-o -path /var/log/journal -o -path /run/systemd -o -path /run/udev \) -prune -o -print 2>/dev/null | sort -u
	}
	files_now >"$HC_TMP/files.before"

	if capt install "/root/debs/${DEB1##*/}" >"$HC_TMP/apt1.log" 2>&1; then
		hc_ok "apt install ./${DEB1##*/} (no network in the container: dependencies from the system)"
	else
		hc_not_ok "apt install ./${DEB1##*/}: $(tail -n5 "$HC_TMP/apt1.log")"
	fi
	assert_eq "the unit is enabled on install" "$(inc systemctl is-enabled hugecollapsed 2>&1)" enabled
	if hc_wait_until 30 is_active; then
		hc_ok "and started: active"
	else
		hc_not_ok "and started: $(show ActiveState) $(inc journalctl -u hugecollapsed -o cat --no-pager | tail -n3)"
	fi
	if hc_wait_until 30 status_answers; then
		hc_ok "hugecollapsed --status answers: $(inc /usr/sbin/hugecollapsed --status 2>&1 | head -n1)"
	else
		hc_not_ok "hugecollapsed --status answers: $(inc /usr/sbin/hugecollapsed --status 2>&1 | tail -n2)"
	fi
	assert_cmd "the examples are in /usr/share/doc/hugecollapsed/examples" \
		inc test -f /usr/share/doc/hugecollapsed/examples/hugecollapsed.rules.yml
	assert_eq "and not in /etc" "$(inc find /etc/hugecollapsed -type f | sort | tr '\n' ' ')" \
		"/etc/hugecollapsed/hugecollapsed.conf "
	assert_cmd "the drop-in directory is there" inc test -d /etc/hugecollapsed/hugecollapsed.conf.d

	# What config management does: a changed main file and a policy file.
	inc sed -i 's/^#scan_interval_ms = 1000$/scan_interval_ms = 700/' /etc/hugecollapsed/hugecollapsed.conf
	inc sh -c 'printf "[cgroup]\npath = /system.slice\nweight = 150\n" >/etc/hugecollapsed/cgroup.d/fleet.conf'
	assert_cmd "the configuration is changed" inc grep -qx 'scan_interval_ms = 700' /etc/hugecollapsed/hugecollapsed.conf
	inc systemctl reload hugecollapsed
	# A SIGHUP that finds a bad file (here sent directly, past ExecReload='s
	# --check-config): systemctl status and the metrics say so until a good one.
	METRICS=/run/hugecollapsed/metrics.prom
	has_metric() { inc grep -qx "$1" "$METRICS"; }
	inc sh -c "echo 'no_such_key = 1' >>/etc/hugecollapsed/hugecollapsed.conf"
	inc kill -HUP "$(show MainPID)"
	if hc_wait_until 15 has_metric 'hugecollapsed_last_reload_success 0'; then
		hc_ok "a failed reload: hugecollapsed_last_reload_success 0 in the metrics"
	else
		hc_not_ok "a failed reload in the metrics: $(inc grep reload "$METRICS" 2>&1 | tr '\n' ' ')"
	fi
	assert_cmd "and hugecollapsed_reload_failures_total 1" has_metric 'hugecollapsed_reload_failures_total 1'
	assert_cmd "and STATUS= says so (systemctl status)" grep -q 'RELOAD FAILED.*no_such_key' <<<"$(show StatusText)"
	assert_eq "the daemon keeps running" "$(show ActiveState)" active
	inc sed -i '/^no_such_key = 1$/d' /etc/hugecollapsed/hugecollapsed.conf
	inc systemctl reload hugecollapsed
	assert_cmd "a good reload: success 1 again" hc_wait_until 15 has_metric 'hugecollapsed_last_reload_success 1'
	assert_cmd "and STATUS= is clean" not_grep 'RELOAD FAILED' <<<"$(show StatusText)"
	pid1=$(show MainPID)
	inv1=$(show InvocationID)

	if capt install "/root/debs/${DEB2##*/}" >"$HC_TMP/apt2.log" 2>&1; then
		hc_ok "upgrade: apt install ./${DEB2##*/}"
	else
		hc_not_ok "upgrade: apt install ./${DEB2##*/}: $(tail -n5 "$HC_TMP/apt2.log")"
	fi
	assert_cmd "no conffile prompt (the shipped file did not change)" \
		not_grep "Configuration file '/etc/hugecollapsed" "$HC_TMP/apt2.log"
	assert_eq "the package is $V2" "$(inc dpkg-query -W -f='${Version}' hugecollapsed)" "$V2"
	assert_cmd "the changed main file survives" inc grep -qx 'scan_interval_ms = 700' /etc/hugecollapsed/hugecollapsed.conf
	assert_cmd "the policy file survives" inc test -f /etc/hugecollapsed/cgroup.d/fleet.conf
	hc_wait_until 30 is_active
	assert_eq "the daemon is active after the upgrade" "$(show ActiveState)" active
	pid2=$(show MainPID)
	if [[ $(show InvocationID) != "$inv1" && $pid2 != "$pid1" && $pid2 != 0 ]]; then
		hc_ok "and was restarted (PID $pid1 -> $pid2)"
	else
		hc_not_ok "and was restarted: PID $pid1 -> $pid2, invocation $inv1 -> $(show InvocationID)"
	fi
	assert_eq "the running binary is the new one" "$(inc /usr/sbin/hugecollapsed --version)" "hugecollapsed $V2"
	build_info_v2() { inc grep -qF "hugecollapsed_build_info{version=\"$V2\"} 1" /run/hugecollapsed/metrics.prom; }
	assert_cmd "its metrics say $V2 (hugecollapsed_build_info)" hc_wait_until 30 build_info_v2
	assert_eq "the restarts were clean (NRestarts)" "$(show NRestarts)" 0

	# A bad configuration: exit status 78 (EX_CONFIG), and no restart loop
	# (RestartPreventExitStatus=78; RestartSec=5s, so 8 s would show one).
	CONF=/etc/hugecollapsed/hugecollapsed.conf
	inc cp -p "$CONF" /root/conf.good
	inc sh -c "echo 'no_such_key = 1' >>$CONF"
	inc /usr/sbin/hugecollapsed --check-config >/dev/null 2>&1
	assert_eq "--check-config on a bad file exits 78" "$?" 78
	inc systemctl restart hugecollapsed 2>/dev/null
	sleep 8
	assert_eq "a bad configuration: the unit is failed" "$(show ActiveState)" failed
	assert_eq "with exit status 78" "$(show ExecMainStatus)" 78
	assert_eq "and not restarted (RestartPreventExitStatus=78)" "$(show NRestarts)" 0
	inc mv /root/conf.good "$CONF"
	inc mv "$CONF" /root/conf.moved
	inc /usr/sbin/hugecollapsed --check-config >/dev/null 2>&1
	assert_eq "--check-config without the default file exits 78" "$?" 78
	inc mv /root/conf.moved "$CONF"
	inc /usr/sbin/hugecollapsed --check-config >/dev/null 2>&1
	assert_eq "and 0 with it back" "$?" 0
	inc systemctl reset-failed hugecollapsed
	inc systemctl start hugecollapsed
	assert_eq "the daemon starts again" "$(show ActiveState)" active

	# --autoremove: the libraries apt installed for it (libbpf1, libelf1) are
	# not the package's files, and go with it as an admin's purge takes them.
	if capt purge --autoremove hugecollapsed >"$HC_TMP/apt3.log" 2>&1; then
		hc_ok "apt purge hugecollapsed"
	else
		hc_not_ok "apt purge hugecollapsed: $(tail -n5 "$HC_TMP/apt3.log")"
	fi
	assert_cmd "the unit is gone" not_grep -x active <(inc systemctl is-active hugecollapsed 2>&1)
	files_now >"$HC_TMP/files.after"
	left=$(comm -13 "$HC_TMP/files.before" "$HC_TMP/files.after" | grep -vE '^/var/(log|cache|lib/apt|lib/dpkg/(status|available|lock|triggers|diversions|statoverride))' |
		grep -vxE '/var/lib/dpkg/(status|available|diversions|statoverride)-old|/etc/ld.so.cache')
	assert_eq "purge leaves no file the package or its daemon made" "$(echo "$left" | grep . | tr '\n' ' ')" ""
	assert_eq "nothing named hugecollapsed is left" \
		"$(comm -13 "$HC_TMP/files.before" "$HC_TMP/files.after" | grep -i hugecollapsed | tr '\n' ' ')" ""
	nspawn_poweroff
	assert_eq "no cgroup left by nspawn (hc-nspawn-PID, payload, supervisor; cgroup2 and name=systemd)" \
		"$(nspawn_leftover_cgroups)" 0
}

if nspawn_boot "$ROOT"; then
	hc_ok "the container boots (PID 1 is $CONTAINER_PID on the host)"
	container_life_cycle
else
	hc_not_ok "the container boots"
fi

# --- 3. the knobs, on this host --------------------------------------------
if dpkg-query -W -f='${Status}' hugecollapsed 2>/dev/null | grep -q installed; then
	hc_not_ok "this host has a hugecollapsed package installed already: not touching it"
	hc_summary
	exit
fi
if [[ -e /etc/hugecollapsed || -e /run/hugecollapsed ]]; then
	hc_not_ok "/etc/hugecollapsed or /run/hugecollapsed exists on this host: not touching it ($(ls -la /run/hugecollapsed /etc/hugecollapsed 2>&1 | tr '\n' ' '))"
	hc_summary
	exit
fi
while IFS= read -r line; do
	KNOBS[${line%%=*}]=${line#*=}
done < <(snapshot_knobs)
assert_ge "writable THP/khugepaged knobs on the host" "${#KNOBS[@]}" 5
# khugepaged = idle changes these two; they must differ from its values
# first (another test's quiet khugepaged leaves them so), or idle changes
# nothing to check. The trap puts the originals back.
echo 10000 >"$THP/khugepaged/scan_sleep_millisecs"
echo 4096 >"$THP/khugepaged/pages_to_scan"
snapshot_knobs >"$HC_TMP/knobs.before"
# Preseeded as config management would, before the package arrives.
mkdir -p /etc/hugecollapsed
sed 's/^#khugepaged = keep$/khugepaged = idle/' "$HC_SRC/conf/hugecollapsed.conf" >/etc/hugecollapsed/hugecollapsed.conf
chmod 0644 /etc/hugecollapsed/hugecollapsed.conf
HOST_INSTALLED=1
if DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Options::=--force-confold "$DEB1" \
	>"$HC_TMP/apt-host.log" 2>&1; then
	hc_ok "apt install ${DEB1##*/} on the host, with khugepaged = idle preseeded"
else
	hc_not_ok "apt install on the host: $(tail -n5 "$HC_TMP/apt-host.log")"
fi
assert_cmd "the preseeded khugepaged = idle is kept" grep -qx 'khugepaged = idle' /etc/hugecollapsed/hugecollapsed.conf
# No systemd here: start it as the installed unit does (its ExecStart=
# and RuntimeDirectory=).
exec_start=$(sed -n 's/^ExecStart=//p' "$(dpkg -L hugecollapsed | grep 'systemd/system/hugecollapsed.service$')")
assert_eq "the unit's ExecStart" "$exec_start" "/usr/sbin/hugecollapsed --config /etc/hugecollapsed/hugecollapsed.conf"
mkdir -m 0755 /run/hugecollapsed && HOST_RUN_DIR=1
# shellcheck disable=SC2086 # ExecStart= is a command line
$exec_start >"$HC_TMP/host-daemon.log" 2>&1 &
HOST_DAEMON=$!
idle() { [[ $(cat "$THP/khugepaged/scan_sleep_millisecs") == 4294967295 && $(cat "$THP/khugepaged/pages_to_scan") == 1 ]]; }
if hc_wait_until 20 idle; then
	hc_ok "the daemon idled khugepaged (scan_sleep_millisecs, pages_to_scan)"
else
	hc_not_ok "the daemon idled khugepaged: $(tail -n3 "$HC_TMP/host-daemon.log")"
fi
assert_cmd "its state file records the originals" grep -q 10000 /run/hugecollapsed/khugepaged.state
# A crash, or a stop without systemd: nothing put the knobs back.
kill -KILL "$HOST_DAEMON"
wait "$HOST_DAEMON" 2>/dev/null
HOST_DAEMON=
assert_cmd "after a SIGKILL the knobs are still changed" idle
if DEBIAN_FRONTEND=noninteractive apt-get remove -y -q hugecollapsed >"$HC_TMP/apt-rm.log" 2>&1; then
	hc_ok "apt remove hugecollapsed"
else
	hc_not_ok "apt remove hugecollapsed: $(tail -n5 "$HC_TMP/apt-rm.log")"
fi
snapshot_knobs >"$HC_TMP/knobs.removed"
assert_eq "after remove every THP/khugepaged knob is as before the install" \
	"$(diff "$HC_TMP/knobs.before" "$HC_TMP/knobs.removed" | grep '^[<>]' | tr '\n' ' ')" ""
assert_cmd "the state file is gone" test ! -e /run/hugecollapsed/khugepaged.state
assert_cmd "the configuration stays after remove" test -f /etc/hugecollapsed/hugecollapsed.conf
if DEBIAN_FRONTEND=noninteractive apt-get purge -y -q hugecollapsed >"$HC_TMP/apt-purge.log" 2>&1; then
	hc_ok "apt purge hugecollapsed"
	HOST_INSTALLED=
else
	hc_not_ok "apt purge hugecollapsed: $(tail -n5 "$HC_TMP/apt-purge.log")"
fi
snapshot_knobs >"$HC_TMP/knobs.purged"
assert_eq "after purge every THP/khugepaged knob is as before the install" \
	"$(diff "$HC_TMP/knobs.before" "$HC_TMP/knobs.purged" | grep '^[<>]' | tr '\n' ' ')" ""
left=$(ls -d /etc/hugecollapsed /run/hugecollapsed /usr/sbin/hugecollapsed /lib/systemd/system/hugecollapsed.service \
	/usr/lib/systemd/system/hugecollapsed.service /etc/systemd/system/multi-user.target.wants/hugecollapsed.service \
	/usr/share/doc/hugecollapsed /var/lib/dpkg/info/hugecollapsed.* \
	/var/lib/prometheus/node-exporter/hugecollapsed.prom 2>/dev/null | tr '\n' ' ')
assert_eq "purge leaves none of the package's files on the host" "$left" ""
restore_knobs
hc_summary
