#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The shipped unit, with the shipped default configuration, under a real
# systemd: a Debian container booted with systemd-nspawn (the host need not
# run systemd). Checks start (READY), the per-pass STATUS= line, collapsing a
# hot workload, the BPF programs loading in its sandbox, the watchdog,
# reload, structured journal fields, a clean stop, Restart=on-failure after a crash, and the one clear message when
# khugepaged = idle meets a read-only /sys.
#
# The rootfs is built once with debootstrap and cached in
# /var/cache/hugecollapsed-test; each run boots a copy of it.
. "$(dirname "$0")/../lib/hc_test_lib.sh"
. "$(dirname "$0")/../lib/nspawn.sh"

require_root
require_cmd debootstrap systemd-nspawn nsenter cmake
require_exec "$HC_WORKLOAD"

THP=/sys/kernel/mm/transparent_hugepage
read_knob() # FILE under $THP: its value, or the [selected] word
{
	local v
	v=$(cat "$THP/$1" 2>/dev/null) || return 1
	[[ $v == *\[*\]* ]] && v=${v#*[} && v=${v%%]*}
	echo "$v"
}

# The container's /sys is its own read-only sysfs instance (private
# network), but the THP knobs are the kernel's: the host side sets the
# policy the test is written for (hc_thp_madvise), and cleanup writes the
# host's own back.
cleanup()
{
	nspawn_poweroff
	if [[ -n $CONTAINER_ROOT ]] && (($(nspawn_leftover_mounts "$CONTAINER_ROOT") > 0)); then
		hc_log "mounts left under $CONTAINER_ROOT: not removing $HC_TMP"
		HC_TMP=
	fi
	hc_cleanup
}
trap cleanup EXIT
hc_thp_madvise || exit 1

# --- 1. the rootfs, from the cache ----------------------------------------
CACHE=$(nspawn_rootfs_cache) || exit $?
ROOT=$HC_TMP/root
cp -a --reflink=auto "$CACHE" "$ROOT" || exit 1

# --- 2. the project, installed as a package would be ----------------------
build=$HC_BUILD
if ! grep -qx 'CMAKE_INSTALL_PREFIX:PATH=/usr' "$build/CMakeCache.txt" 2>/dev/null; then
	build=$HC_TMP/build
	hc_log "configuring a /usr-prefix build of $HC_SRC in $build"
	if ! { cmake -S "$HC_SRC" -B "$build" -DCMAKE_INSTALL_PREFIX=/usr -DHC_TESTS=OFF &&
		cmake --build "$build" -j2; } >"$HC_TMP/build.log" 2>&1; then
		echo "FAIL: cannot build $HC_SRC: $(tail -n5 "$HC_TMP/build.log")"
		exit 1
	fi
fi
if ! DESTDIR=$ROOT cmake --install "$build" >"$HC_TMP/install.log" 2>&1; then
	echo "FAIL: cmake --install: $(tail -n5 "$HC_TMP/install.log")"
	exit 1
fi
install -m 0755 "$HC_WORKLOAD" "$ROOT/usr/local/bin/hc_workload"
# What a package's Depends would bring: shared libraries of the daemon the
# cached rootfs lacks (libbpf1 and libelf1 for the prctl iterator).
while read -r lib; do
	[[ -e $ROOT$lib ]] || install -D -m 0644 "$lib" "$ROOT$lib"
done < <(ldd "$ROOT/usr/sbin/hugecollapsed" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
# A short watchdog and restart delay keep the test fast; no core files.
mkdir -p "$ROOT/etc/systemd/system/hugecollapsed.service.d"
cat >"$ROOT/etc/systemd/system/hugecollapsed.service.d/test.conf" <<'EOF'
[Service]
WatchdogSec=3s
RestartSec=1s
LimitCORE=0
EOF
assert_cmd "the unit is installed" test -f "$ROOT/lib/systemd/system/hugecollapsed.service"
assert_cmd "the default configuration is installed" test -f "$ROOT/etc/hugecollapsed/hugecollapsed.conf"

# --- 3. boot ---------------------------------------------------------------
if ! nspawn_boot "$ROOT"; then
	hc_not_ok "the container boots"
	hc_summary
	exit
fi
hc_ok "the container boots (PID 1 is $CONTAINER_PID on the host)"

show() # PROPERTY [UNIT]
{
	inc systemctl show -p "$1" --value "${2:-hugecollapsed}"
}
wait_for() # TIMEOUT_S CMD…: polls CMD every 0.2 s
{
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS >= deadline)) && return 1
		sleep 0.2
	done
}
journal_lines()
{
	inc journalctl -q -u hugecollapsed -o cat --no-pager | wc -l
}
journal_since() # N: hugecollapsed's journal after its first N lines
{
	inc journalctl -q -u hugecollapsed -o cat --no-pager | tail -n +$(($1 + 1))
}

# --- 4. a hot workload -----------------------------------------------------
# hc_workload refuses (status 2) a buffer already huge after its fill, which
# another THP user on the host (a hugecollapsed of its own) can cause: retry.
wl_ready()
{
	inc grep -q '^ready' /run/hc-hot.out 2>/dev/null
}
wl_failed()
{
	[[ $(show ActiveState hc-hot) == failed ]]
}
wl_settled()
{
	wl_ready || wl_failed
}
for try in 1 2 3; do
	inc systemctl reset-failed hc-hot 2>/dev/null
	inc systemd-run -q --unit=hc-hot -p StandardOutput=file:/run/hc-hot.out \
		/usr/local/bin/hc_workload --role hot --mb 64
	wait_for 30 wl_settled
	wl_ready && break
	hc_log "workload attempt $try failed: $(inc cat /run/hc-hot.out 2>&1 | tail -n1)"
done
if wl_ready; then
	read -r _ WPID WADDR WLEN < <(inc head -n1 /run/hc-hot.out)
	hc_ok "workload ready: pid $WPID (in the container), $WADDR +$WLEN"
else
	hc_not_ok "workload ready: $(inc cat /run/hc-hot.out 2>&1 | tail -n3) $(inc systemctl status hc-hot 2>&1 | tail -n2)"
	WPID=1 WADDR=0 WLEN=1
fi
# PMD-mapped percentage of the workload's buffer, from its smaps inside.
wl_pmd_pct_inside()
{
	inc cat "/proc/$WPID/smaps" 2>/dev/null | awk -v lo="$((WADDR))" -v hi="$((WADDR + WLEN))" -v len="$WLEN" "$HC_AWK_INSIDE"'
		inside && ($1 == "AnonHugePages:" || $1 == "ShmemPmdMapped:" || $1 == "FilePmdMapped:") { kb += $2 }
		END { printf "%d\n", kb * 1024 * 100 / len }'
}
before=$(wl_pmd_pct_inside)
assert_lt "the workload starts mostly not PMD-mapped" "$before" 90

# --- 5. the shipped unit with the shipped configuration --------------------
# Enabled, the unit stays loaded while inactive, so Result= and
# ExecMainStatus= still tell how the last run ended.
assert_cmd "systemctl enable hugecollapsed ([Install] section)" inc systemctl enable -q hugecollapsed
jstart=$(journal_lines)
if inc_timeout 90 systemctl start hugecollapsed; then
	hc_ok "systemctl start hugecollapsed (READY=1 before the start timeout)"
else
	hc_not_ok "systemctl start hugecollapsed: $(journal_since "$jstart" | tail -n5)"
fi
assert_eq "hugecollapsed is active" "$(show ActiveState)" active
assert_eq "Type=notify" "$(show Type)" notify
# The sandbox lets bpf() through for the prctl iterator (SystemCallFilter=bpf).
prctl_line=$(journal_since "$jstart" | grep -m1 'prctl(PR_SET_THP_DISABLE) modes:')
assert_cmd "under the shipped unit the prctl iterator loads: '$prctl_line'" \
	grep -q 'read from each process.s mm by a BPF task iterator' <<<"$prctl_line"
# ... and for the doorbell's filter (the shipped timer: counted per process).
news_line=$(journal_since "$jstart" | grep -m1 'page-fault doorbell: news counted')
assert_cmd "under the shipped unit the doorbell's BPF filter loads: '$news_line'" \
	grep -q 'news counted per process (BPF filter)' <<<"$news_line"
status_is_pass()
{
	[[ $(show StatusText) =~ ^pass\ [0-9]+: ]]
}
if wait_for 10 status_is_pass; then
	hc_ok "STATUS= holds the per-pass line: $(show StatusText)"
else
	hc_not_ok "STATUS= holds the per-pass line: got '$(show StatusText)'"
fi
pmd_done()
{
	(($(wl_pmd_pct_inside) >= 90))
}
t0=$SECONDS
wait_for 30 pmd_done
assert_ge "the hot workload is PMD-mapped (percent, after $((SECONDS - t0)) s)" "$(wl_pmd_pct_inside)" 90
assert_cmd "the metrics file is written" inc test -s /run/hugecollapsed/metrics.prom
# The sandbox lets process_madvise() through: this daemon collapsed memory
# itself. (A hugecollapsed running on the host sees the container's
# processes too, and may get there first: not so in CI.)
mib=$(show StatusText | sed -nE 's/^pass [0-9]+: ([0-9]+) MiB collapsed.*/\1/p')
if ((${mib:-0} >= 1)); then
	hc_ok "the service collapsed $mib MiB (from STATUS=)"
else
	hc_not_ok "the service collapsed memory itself: STATUS= says '$(show StatusText)'"
	inc grep -E 'collapse|scan_blocks' /run/hugecollapsed/metrics.prom | grep -v '^#' | sed 's/^/# metrics: /'
	journal_since "$jstart" | tail -n5 | sed 's/^/# journal: /'
fi
assert_eq "no eperm result in the journal" \
	"$(inc journalctl -q -u hugecollapsed -o json --no-pager | grep -c '"HUGECOLLAPSED_RESULT":"eperm"')" 0

# The watchdog is on, and is fed: over twice its interval the service stays
# active with the same main process and no restart.
wd=$(show WatchdogUSec)
assert_eq "WatchdogUSec (3s from the test drop-in)" "$wd" 3s
pid0=$(show MainPID)
bad=0
for ((i = 0; i < 7; i++)); do
	[[ $(show ActiveState) == active && $(show MainPID) == "$pid0" ]] || bad=$((bad + 1))
	sleep 1
done
assert_eq "active with the same MainPID for 7 s (watchdog 3 s)" "$bad" 0
assert_eq "NRestarts after 7 s" "$(show NRestarts)" 0
assert_eq "no watchdog timeout in the journal" \
	"$(inc journalctl -q -u hugecollapsed --no-pager | grep -c -i 'watchdog timeout')" 0

# Reload: ExecReload checks the file, then SIGHUP; RELOADING=1 … READY=1.
jreload=$(journal_lines)
if inc_timeout 30 systemctl reload hugecollapsed; then
	hc_ok "systemctl reload hugecollapsed"
else
	hc_not_ok "systemctl reload hugecollapsed: $(journal_since "$jreload" | tail -n3)"
fi
assert_eq "active after reload" "$(show ActiveState)" active
assert_eq "same MainPID after reload" "$(show MainPID)" "$pid0"
reloaded()
{
	journal_since "$jreload" | grep -q '^reloaded /'
}
assert_cmd "the journal says it reloaded" wait_for 5 reloaded

# Native journal entries: with the structured fields.
fields=$(inc journalctl -q -u hugecollapsed -o json --no-pager | grep -oE '"HUGECOLLAPSED_[A-Z]+"' | sort -u | tr -d '"' | tr '\n' ' ')
if [[ -n $fields ]]; then
	hc_ok "journal entries carry fields: $fields"
else
	hc_not_ok "journal entries carry HUGECOLLAPSED_* fields: none in $(journal_lines) lines"
fi

# The caller's location and the life-cycle MESSAGE_IDs (log.h), not log.c's.
start_json=$(inc journalctl -q -u hugecollapsed -o json --no-pager MESSAGE_ID=2090787b62c44c32868819164d1098bf | tail -n1)
if [[ $start_json == *'"CODE_FILE":"src/service/service.c"'* && $start_json == *'"CODE_FUNC":"service_run"'* ]]; then
	hc_ok "the start entry has its MESSAGE_ID and the caller's CODE_FILE/CODE_FUNC"
else
	hc_not_ok "the start entry has its MESSAGE_ID and the caller's CODE_FILE/CODE_FUNC: ${start_json:0:300}"
fi
assert_eq "no entry names log.c as its CODE_FILE" \
	"$(inc journalctl -q -u hugecollapsed -o json --no-pager | grep -c '"CODE_FILE":"[^"]*log\.c"')" 0
reload_entry()
{
	inc journalctl -q -u hugecollapsed -o json --no-pager MESSAGE_ID=b95f8208538340599384bdb6f237473d \
		HUGECOLLAPSED_RELOAD=ok | grep -q reloaded
}
assert_cmd "the reload entry has its MESSAGE_ID and HUGECOLLAPSED_RELOAD=ok" reload_entry

# A clean stop.
if inc_timeout 60 systemctl stop hugecollapsed; then
	hc_ok "systemctl stop hugecollapsed"
else
	hc_not_ok "systemctl stop hugecollapsed"
fi
assert_eq "Result after stop" "$(show Result)" success
assert_eq "ExecMainStatus after stop" "$(show ExecMainStatus)" 0
assert_eq "ExecMainCode after stop (1 = exited)" "$(show ExecMainCode)" 1

# A crash: Restart=on-failure brings it back.
inc_timeout 90 systemctl start hugecollapsed
pid1=$(show MainPID)
n0=$(show NRestarts)
inc systemctl kill -s SEGV hugecollapsed
restarted()
{
	[[ $(show NRestarts) == $((n0 + 1)) && $(show ActiveState) == active && $(show MainPID) != "$pid1" ]]
}
if wait_for 20 restarted; then
	hc_ok "restarted after SIGSEGV (NRestarts $n0 -> $(show NRestarts), MainPID $pid1 -> $(show MainPID))"
else
	hc_not_ok "restarted after SIGSEGV: NRestarts $(show NRestarts), $(show ActiveState), MainPID $(show MainPID)"
fi

# khugepaged = idle/off needs a writable /sys; the container's is read-only,
# so the start fails with one message naming the knob and the reason. Pick
# the mode that has something to write (another test may have set idle).
assert_eq "the container's THP knobs are read-only" \
	"$(inc findmnt -no OPTIONS -T $THP/khugepaged | cut -d, -f1)" ro
mode=idle
[[ $(read_knob khugepaged/scan_sleep_millisecs) == 4294967295 && $(read_knob khugepaged/pages_to_scan) == 1 ]] && mode=off
inc systemctl stop hugecollapsed
inc sed -i "s/^#\\?khugepaged *=.*/khugepaged = $mode/" /etc/hugecollapsed/hugecollapsed.conf
jidle=$(journal_lines)
if inc_timeout 60 systemctl start hugecollapsed 2>/dev/null; then
	hc_not_ok "khugepaged = $mode with a read-only /sys fails to start"
else
	hc_ok "khugepaged = $mode with a read-only /sys fails to start"
fi
assert_eq "ExecMainStatus with khugepaged = $mode" "$(show ExecMainStatus)" 1
assert_eq "Result with khugepaged = $mode" "$(show Result)" exit-code
inc systemctl stop hugecollapsed 2>/dev/null # no restart loop
msgs=$(journal_since "$jidle" | grep -i 'khugepaged' | grep -iE 'read-only|EROFS|permission' | sort -u)
if [[ -n $msgs && $(wc -l <<<"$msgs") -eq 1 ]]; then
	hc_ok "one clear message: $msgs"
else
	hc_not_ok "one clear message about the read-only knob; got: $(journal_since "$jidle" | head -n5)"
fi

# --- 6. power off, leave nothing behind -------------------------------------
cpid=$CONTAINER_PID
nspawn_poweroff
assert_cmd "systemd-nspawn has exited" bash -c "! kill -0 $cpid 2>/dev/null"
left=0
for p in /proc/[0-9]*; do
	[[ $(readlink "$p/root" 2>/dev/null) == "$ROOT" ]] && left=$((left + 1))
done
assert_eq "no process left in the container root" "$left" 0
assert_eq "no mount left under the container root" "$(nspawn_leftover_mounts "$ROOT")" 0
assert_eq "no cgroup left by nspawn (hc-nspawn-PID, payload, supervisor; cgroup2 and name=systemd)" "$(nspawn_leftover_cgroups)" 0

hc_summary
