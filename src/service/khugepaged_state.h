/* SPDX-License-Identifier: GPL-2.0-or-later */
/* khugepaged_state: the record of the THP knobs the daemon changed, kept in
 * a file so that it outlives the daemon (state_file, by default
 * /run/hugecollapsed/khugepaged.state: on tmpfs, so it dies with the boot,
 * as the knobs do). khugepaged.c decides what goes in it; this file only
 * reads and writes it.
 *
 * The format, written whole and atomically (temporary file, fsync, rename,
 * fsync of the directory), mode 0600:
 *
 *   # hugecollapsed: original values of the THP knobs it changed
 *   version=1
 *   mode=off
 *   hugepages-2048kB/enabled=inherit
 *   enabled=madvise
 *   end
 *
 * "version=1" comes first (after comments), then "mode=idle|off" (the mode
 * of the daemon that wrote it), then one "file=original" line per knob, each
 * a knob the daemon writes (khugepaged_knob_target()) at most once, with a
 * value of 1..31 characters of [A-Za-z0-9_+-] that differs from the
 * daemon's own; "end" closes it, so a cut file is refused. Lines starting
 * with '#' are comments; anything else makes the whole file invalid. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

#include "khugepaged_knobs.h"

#define KHUGEPAGED_STATE_MAX 4096 /* bytes; a valid file is under 300 */

/* Parses a record into out->mode, out->n and out->saved (nothing else is
 * touched). Pure; never reads past len. Returns 0, or -EINVAL (-EFBIG if len
 * is over KHUGEPAGED_STATE_MAX) with err saying which line and why. */
int parse_khugepaged_state_buf(const char *buf, size_t len, struct khugepaged_saved *out, char *err, size_t errlen);

/* Formats s's record into buf (NUL-terminated). Returns the length, or
 * -ENOSPC. Pure. */
int khugepaged_state_format(const struct khugepaged_saved *s, char *buf, size_t buflen);

/* Reads and parses path into s (mode, n, saved). Returns 0; -ENOENT if
 * there is no file; or another -errno with err saying why: a symlink
 * (-ELOOP), not a regular file, not owned by our effective uid (root) or
 * writable by group or others (-EPERM), too big, or invalid. */
int khugepaged_state_load(const char *path, struct khugepaged_saved *s, char *err, size_t errlen);

/* Writes s's record to path atomically, mode 0600, creating path's
 * directory (0700) if it is missing. Returns 0 or -errno. */
int khugepaged_state_save(const char *path, const struct khugepaged_saved *s);

/* Takes the lock that makes one process the owner of path's record: an
 * exclusive flock on "path.lock" (created 0600, with path's directory if
 * missing), with our pid written in it. Returns the fd that holds the lock
 * (closing it, or dying, releases it); -EBUSY with *holder set to the
 * holder's pid (0 if unknown) if another process holds it; or -errno. */
int khugepaged_state_lock(const char *path, pid_t *holder);

/* Removes path (a missing file is fine). Returns 0 or -errno. */
int khugepaged_state_remove(const char *path);
