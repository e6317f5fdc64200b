#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Memory-limit-aware collapse on the real kernel (cgroup v1 memory here).
# A cgroup of our own holds a hot workload (64 MiB, 3 of every 4 pages
# filled as 4 KiB pages, then MADV_HUGEPAGE) and 64 MiB of its own page
# cache, and is limited to its usage + 4 MiB (and a bit). `--once --pid`
# must then collapse exactly the blocks the room it read allows (each
# peaks at + 2 MiB and keeps + 512 KiB), hold back the rest as memcg_limit,
# never hit the limit (memory.failcnt) and not evict the cgroup's page
# cache. Then the daemon
# (confined by a cgroup v2 rule) keeps those blocks waiting, pass after
# pass, and collapses them once the limit is raised.
# The cgroups are made under the v1 memory and v2 mounts and removed by an
# EXIT trap.
# shellcheck source=tests/lib/hc_test_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/hc_test_lib.sh"

require_root
require_cmd jq
require_exec "$HC_BIN" "$HC_WORKLOAD"

MEM=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/mounts)
if [[ -z $MEM ]]; then
	# Not this machine's layout (FACTS: memory is on v1 here): a broken
	# set-up, not a reason to skip.
	hc_not_ok "find the cgroup v1 memory mount in /proc/mounts"
	hc_summary
	exit 1
fi
CG=$MEM/hc-test-memcg-$$
MIB=$((1 << 20))

remove_cgroup()
{
	local pid
	[[ -d $CG ]] || return 0
	while read -r pid; do
		kill -TERM "$pid" 2>/dev/null
	done <"$CG/cgroup.procs"
	for _ in $(seq 50); do
		[[ -s $CG/cgroup.procs ]] || break
		sleep 0.1
	done
	rmdir "$CG" || echo "# WARNING: cannot remove $CG"
}
# khugepaged would collapse the MADV_HUGEPAGE buffer on its own at any
# moment, charging the cgroup behind our back: it is kept from scanning
# (restored on exit). Not by max_ptes_none = 0: the kernel's THP shrinker
# (shrink_underused) then counts each collapsed 3/4-full block as underused
# and splits it at the next reclaim anywhere, giving back its 512 KiB.
trap 'hc_cleanup; remove_cgroup' EXIT
if ! hc_khugepaged_quiet; then
	hc_not_ok "quiet khugepaged"
	hc_summary
	exit 1
fi

mkdir "$CG" || {
	hc_not_ok "create $CG"
	hc_summary
	exit 1
}
stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$CG/memory.stat"; }

# Everything below starts inside the cgroup, so its memory is charged there.
IN_CG=$HC_TMP/in_cg.sh
printf '#!/bin/bash\necho $$ >%q/cgroup.procs || exit 2\nexec "$@"\n' "$CG" >"$IN_CG"
chmod 0755 "$IN_CG"

# The page cache: written (and synced) from inside, so it is ours and clean.
"$IN_CG" dd if=/dev/urandom of="$HC_TMP/cache" bs=1M count=64 status=none conv=fsync
"$IN_CG" cat "$HC_TMP/cache" >/dev/null

REAL_WORKLOAD=$HC_WORKLOAD
WRAP=$HC_TMP/wl.sh
printf '#!/bin/bash\nexec %q %q "$@"\n' "$IN_CG" "$REAL_WORKLOAD" >"$WRAP"
chmod 0755 "$WRAP"
HC_WORKLOAD=$WRAP
if ! start_workload partial 64 wl; then
	hc_summary
	exit 1
fi
HC_WORKLOAD=$REAL_WORKLOAD
PID=${WL_PID[wl]}
assert_eq "nothing of the workload is huge yet" "$(wl_pmd_bytes wl)" 0
assert_eq "the workload runs in the test cgroup" "$(sed -n 's/^[0-9]*:memory://p' "/proc/$PID/cgroup")" \
	"/${CG#"$MEM"/}"

CONF=$HC_TMP/hugecollapsed.conf
cat >"$CONF" <<'EOF'
[daemon]
metrics_file =
khugepaged = keep
[collapse]
max_ptes_none = 255
min_referenced_pct = 0
memcg_headroom_mb = 0
EOF
chmod 0644 "$CONF"

# Limit = usage + 4 MiB, as in the issue's measurement, plus half a block's
# kept charge: the room sits mid-way between two block counts, not on the
# edge where one page of usage changes the count.
usage=$(cat "$CG/memory.usage_in_bytes")
echo $((usage + 4 * MIB + MIB / 4)) >"$CG/memory.limit_in_bytes"
limit=$(cat "$CG/memory.limit_in_bytes")
usage=$(cat "$CG/memory.usage_in_bytes")
room=$((limit - usage))
cache0=$(stat_of cache)
fail0=$(cat "$CG/memory.failcnt")
hc_log "limit $limit usage $usage room $((room / 1024)) KiB cache $((cache0 / 1024)) KiB failcnt $fail0"

# fits ROOM: how many blocks the room allows. Headroom = 0 MiB + one
# 64-page charge batch per CPU; a block needs 2 MiB above it (its peak)
# and keeps 512 KiB.
headroom=$(($(nproc) * 64 * 4096))
fits()
{
	local left=$1 n=0
	while ((left - headroom >= 2 * MIB && n < 32)); do
		left=$((left - MIB / 2))
		n=$((n + 1))
	done
	echo "$n"
}
# The rooms a run read (its debug log: once per pass, before collapsing),
# in bytes, one per line.
rooms_read() { sed -n "s|.*memory cgroup /${CG#"$MEM"/}: room \([0-9]*\) KiB.*|\1|p" "$1" | awk '{ print $1 * 1024 }'; }
expect=$(fits "$room")

# Nothing in the cgroup charges memory while this runs but the collapses
# (the workload faults nothing more), yet its usage can fall on its own:
# page cache folios leave it on a loaded machine with no reclaim counted
# (seen here: 4 MiB between our read above and the daemon's). So the
# daemon is held to the room it read itself (-v logs it), and that room to
# what the cgroup shows before and after.
out=$("$HC_BIN" --once --json -v --pid "$PID" --config "$CONF" 2>"$HC_TMP/run1.err")
collapsed=$(jq '.outcomes.collapsed' <<<"$out")
held=$(jq '.results.memcg_limit' <<<"$out")
usage1=$(cat "$CG/memory.usage_in_bytes")
groom=$(rooms_read "$HC_TMP/run1.err" | head -n1)
groom=${groom:-0}
hc_log "run 1: read room $((groom / 1024)) KiB, collapsed $collapsed (from our room: $expect), memcg_limit $held; usage $usage1"
assert_ge "run 1 logged the room it read" "$groom" 1
assert_ge "the room read is no more than the cgroup's after the run (256 KiB of noise)" \
	$((limit - usage1 + collapsed * MIB / 2 + MIB / 4)) "$groom"
assert_ge "the room read is no less than ours before (256 KiB of noise)" "$groom" $((room - MIB / 4))
assert_ge "some blocks that fit were collapsed" "$collapsed" 1
assert_eq "collapsed exactly what the room it read allows" "$collapsed" "$(fits "$groom")"
assert_eq "every other block waits as memcg_limit" "$held" $((32 - collapsed))
assert_eq "memory.failcnt did not move" "$(cat "$CG/memory.failcnt")" "$fail0"
cache1=$(stat_of cache)
# Cache that left before the daemon read the room is in that room, not the
# daemon's doing (it had collapsed nothing yet); what leaves after it does
# is, if more than noise.
before=$((groom > room ? groom - room : 0))
hc_log "cache before $((cache0 / 1024)) KiB, after $((cache1 / 1024)) KiB; $((before / 1024)) KiB left before the daemon looked"
assert_ge "the cgroup's page cache was not evicted (1 MiB of noise)" "$cache1" $((cache0 - before - MIB))
assert_eq "PMD-mapped bytes are the collapsed blocks" "$(wl_pmd_bytes wl)" $((collapsed * 2 * MIB))

# The dry run decides by the same rule on the room it reads now.
dry=$("$HC_BIN" --once --dry-run --json -v --pid "$PID" --config "$CONF" 2>"$HC_TMP/dry.err")
dheld=$(jq '.results.memcg_limit' <<<"$dry")
dcand=$(jq '.results.candidate' <<<"$dry")
droom=$(rooms_read "$HC_TMP/dry.err" | head -n1)
hc_log "dry run: read room $((${droom:-0} / 1024)) KiB, memcg_limit $dheld, candidate $dcand; usage $(cat "$CG/memory.usage_in_bytes")"
assert_eq "dry run: every remaining block is a candidate or memcg_limit" $((dheld + dcand)) $((32 - collapsed))
assert_eq "dry run: the candidates are what the room it read allows" "$dcand" "$(fits "${droom:-0}")"
assert_ge "dry run: blocks wait as memcg_limit" "$dheld" 1

# The daemon: the waiting blocks stay remembered, pass after pass, and are
# collapsed once there is room. It is confined by a cgroup v2 rule (policy
# paths are v2 paths; memory is on v1 here), which also sets the headroom.
V2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
V2CG=hc-test-memcg-$$
DPID=
cleanup_all()
{
	[[ -n $DPID ]] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID"
	hc_cleanup
	remove_cgroup
	[[ -d $V2/$V2CG ]] && rmdir "$V2/$V2CG"
}
trap cleanup_all EXIT
if ! mkdir "$V2/$V2CG" || ! echo "$PID" >"$V2/$V2CG/cgroup.procs"; then
	hc_not_ok "create $V2/$V2CG"
fi
DCONF=$HC_TMP/etc/hugecollapsed.conf
PROM=$HC_TMP/metrics.prom
mkdir -m 0755 "$HC_TMP/etc" "$HC_TMP/etc/cgroup.d"
printf '[daemon]\nscan_interval_ms = 200\nmetrics_file = %s\nmetrics_interval_s = 1\nkhugepaged = keep\n[collapse]\nenable = no\n' "$PROM" >"$DCONF"
printf '[cgroup]\npath = /%s\nenable = yes\nmin_referenced_pct = 0\nmemcg_headroom_mb = 0\n' "$V2CG" \
	>"$HC_TMP/etc/cgroup.d/test.conf"
chmod 0644 "$DCONF" "$HC_TMP/etc/cgroup.d/test.conf"
value() { awk -v n="$1" '$1 == n { print $2; exit }' "$PROM" 2>/dev/null; }
huge1=$(wl_pmd_bytes wl)
"$HC_BIN" --config "$DCONF" -v 2>"$HC_TMP/daemon.err" &
DPID=$!
for ((i = 0; i < 100; i++)); do
	(($(value hugecollapsed_passes_total || echo 0) + 0 >= 5)) && break
	sleep 0.1
done
waited=$(value 'hugecollapsed_scan_ranges_total{result="memcg_limit"}')
huge2=$(wl_pmd_bytes wl)
# Each pass collapses at most what the room it read allows.
allowed=0
while read -r r; do
	allowed=$((allowed + $(fits "$r")))
done < <(rooms_read "$HC_TMP/daemon.err")
hc_log "daemon: $(value hugecollapsed_passes_total) passes, memcg_limit $waited, PMD $((huge2 >> 20)) MiB, rooms read $(rooms_read "$HC_TMP/daemon.err" | awk '{ printf "%d ", $1 / 1024 }')KiB"
assert_ge "daemon: blocks wait as memcg_limit pass after pass" "${waited:-0}" $((2 * (32 - collapsed - allowed)))
assert_le "daemon: nothing more collapsed than the rooms it read allow" "$huge2" $((huge1 + allowed * 2 * MIB))
assert_eq "daemon: memory.failcnt did not move" "$(cat "$CG/memory.failcnt")" "$fail0"

# Room enough: the blocks that waited are collapsed.
echo $((limit + 64 * MIB)) >"$CG/memory.limit_in_bytes"
for ((i = 0; i < 200; i++)); do
	(($(wl_pmd_bytes wl) >= 64 * MIB)) && break
	sleep 0.1
done
assert_eq "with room, the whole buffer is PMD-mapped" "$(wl_pmd_bytes wl)" $((64 * MIB))
kill -TERM "$DPID"
wait "$DPID"
assert_eq "daemon exits 0 on SIGTERM" "$?" 0
DPID=
assert_eq "memory.failcnt still did not move" "$(cat "$CG/memory.failcnt")" "$fail0"
assert_eq "the workload's memory is intact" "$(workload_verify wl)" "pattern ok"

hc_summary
