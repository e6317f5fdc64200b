/* SPDX-License-Identifier: GPL-2.0-or-later */
/* producer: which process wrote a metrics file, and whether it still runs.
 * A pid alone is not enough (pids are reused, and a file outlives its
 * daemon: it survives a stop so that staleness shows), so the identity is
 * (boot_id, pid, start_ticks): the kernel's random id of this boot, and the
 * process's start time in clock ticks since boot (/proc/PID/stat field
 * 22). A live process with the same pid and start time in the same boot is
 * the same process. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PRODUCER_BOOT_ID_LEN 36 /* 8-4-4-4-12 hex digits and dashes */

struct producer {
	pid_t pid;
	uint64_t start_ticks;
	char boot_id[PRODUCER_BOOT_ID_LEN + 1];
};

/* Parses the text of /proc/sys/kernel/random/boot_id ("UUID\n") into out
 * (PRODUCER_BOOT_ID_LEN + 1 bytes). Returns 0 or -EINVAL. Pure.
 *   6f1c5c33-5b5e-4c32-9d6b-3f1f0a8fbc0e */
int parse_boot_id_buf(const char *buf, size_t len, char *out);

/* The identity of the calling process, from proc_root ("/proc"). Returns 0
 * or -errno. */
int producer_self(const char *proc_root, struct producer *out);

enum producer_state {
	PRODUCER_UNKNOWN,    /* no identity in the file (an older daemon), or /proc cannot say */
	PRODUCER_RUNNING,    /* the process that wrote the file still runs */
	PRODUCER_GONE,       /* no process with that pid and start time: it stopped or crashed */
	PRODUCER_OTHER_BOOT, /* the file was written before the last boot */
};

/* Whether p (read from a metrics file) still runs, as proc_root sees it (a
 * daemon in another pid namespace, or hidden by hidepid=, reads as gone). */
enum producer_state producer_check(const char *proc_root, const struct producer *p);

/* "running", "stopped" (gone, or another boot), "unknown". */
const char *producer_state_name(enum producer_state s);
