/* SPDX-License-Identifier: GPL-2.0-or-later */
/* khugepaged: hand over from the kernel's khugepaged, and give it back.
 *
 *   keep: touch nothing.
 *   idle: scan_sleep_millisecs = UINT_MAX, pages_to_scan = 1 — khugepaged
 *         stops scanning; THP at page-fault time is unchanged.
 *   off:  idle's two knobs, and PMD-size THP "never":
 *         hugepages-2048kB/enabled where per-size controls exist, and the
 *         top-level enabled (which sizes set to "inherit" follow). Page
 *         faults get no PMD-size anonymous THPs; the khugepaged thread exits
 *         unless shmem_enabled allows PMD pages, and is parked if it does.
 *         MADV_COLLAPSE still works, so hugecollapsed is the only source of
 *         PMD THPs for anonymous memory.
 *
 * The record. Before the first write, the original value of every knob the
 * mode changes is written to the state file (khugepaged_state.h), so that a
 * daemon killed by SIGKILL, a watchdog abort or a crash leaves a record that
 * outlives it: the next daemon, or `hugecollapsed --restore`, takes the
 * originals from there instead of adopting the dead daemon's own values.
 * When a record exists (in memory after a reload, or in the file at start),
 * khugepaged_apply() reconciles it with the live values, knob by knob:
 *   - live value = the original: nothing to undo; dropped from the record;
 *   - live value = the daemon's own (never, 1, 4294967295): kept, with the
 *     recorded original, if the new mode sets that knob; otherwise written
 *     back to the original (a restart or reload into another mode);
 *   - any other live value: someone changed the knob since the daemon did;
 *     their value wins. It is dropped from the record and left alone; if the
 *     new mode sets that knob, their value is the original recorded now.
 * khugepaged_restore() (clean exit, SIGTERM, failed start, --restore) writes
 * back each original where the knob still holds the daemon's value, and
 * removes the state file once everything is back.
 *
 * The sysfs directory is the one given to khugepaged_init() (struct
 * hc_paths: /sys/kernel/mm/transparent_hugepage, or --sysfs-thp for tests). */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "khugepaged_knobs.h" /* struct khugepaged_saved, khugepaged_original() */

/* Zeroes s and sets the state file (NULL or "" = memory only) and the THP
 * sysfs directory (which must outlive s). Returns 0 or -ENAMETOOLONG. */
int khugepaged_init(struct khugepaged_saved *s, const char *state_file, const char *sysfs_dir);

/* Applies mode. s is the current record: empty after khugepaged_init(), in
 * which case the state file's record (if any, and trusted) is adopted; after
 * an earlier apply, the knobs the daemon holds (a reload). The record is
 * reconciled as described above, the state file written before any knob is
 * changed, then the mode's knobs written. On failure restores every knob in
 * the record, and returns -errno with err saying which file failed and why;
 * s is then empty (keep). */
int khugepaged_apply(enum khugepaged_mode mode, struct khugepaged_saved *s, char *err, size_t errlen);

/* Writes back every recorded original where the knob still holds the
 * daemon's value, logging each; leaves s empty (keep). Removes the state
 * file when all went back. Returns 0 or the first -errno. */
int khugepaged_restore(struct khugepaged_saved *s);

/* `hugecollapsed --restore`: restores from the state file and removes it.
 * Returns 0 (also when there is no record), or -errno, logged. Never while
 * a daemon runs: it would give the knobs back under it. */
int khugepaged_restore_from_file(const char *state_file, const char *sysfs_dir);

/* Logs khugepaged's state (enabled, scan knobs, full_scans, pages_collapsed)
 * and warns when it is still actively collapsing alongside us. */
void khugepaged_log_state(const char *sysfs_dir, enum khugepaged_mode mode);
